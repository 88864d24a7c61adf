"""Recipe: fine-tune Whisper tiny.en (full or LoRA) on real transcribed speech and measure WER before and after.

Data (tests/data, see its PROVENANCE.md; the real English speech with reference transcripts that
ASSETS.md lists): the 5 LibriVox clips of *Sense and Sensibility* chapter 1 (one reader, 25.7 s,
each already one utterance with its reference line in ``librivox/transcription``) and
``goforward.raw`` ("go forward ten meters", another speaker; headerless 16 kHz s16le, written out
as a WAV file). There is no longer recording with a reference transcript to cut into utterances.

Split: ``split_records`` (no recording and no speaker in two splits). The LibriVox clips are
one reader, so splitting by speaker would leave one group of five clips and one of one; the
recipe therefore splits by recording (each clip is its own recording, the reader's label is left
off the records): the held-out clips have other sentences, but the same voice as the training
clips.

Training: the Trainer, ``--mode full`` (every parameter, encoder included) or ``--mode lora``
(the training-mode ``lora`` optimization pass; the encoder stays frozen as the spec declares).
Before and after, the held-out and training splits are transcribed greedily (no timestamps) and
scored with jiwer after the English normaliser of ``voicehub evaluate asr``. For LoRA the adapters
are saved alone, reloaded onto a fresh base model and compared (identical logits), and the merged
weights are exported with ``save_pretrained`` and reloaded as a plain checkpoint.

Usage: ``HF_HUB_OFFLINE=1 uv run python recipes/whisper_finetune.py --mode lora [--steps 24] [--out runs/whisper_lora]``
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jiwer
import numpy as np
import soundfile
import torch

from voicehub import AutoModel
from voicehub.architectures.whisper.decoding import DecodingOptions
from voicehub.cli.evaluate import normalise_text
from voicehub.core.audio import load_audio
from voicehub.training import (
    AutoTrainingAdapter,
    ManifestRecord,
    Trainer,
    TrainerCallback,
    TrainerConfig,
    get_training_spec,
    split_records,
    write_manifest,
)
from voicehub.training.adapters.sequence_to_sequence import SequenceToSequenceAdapter

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
SAMPLE_RATE = 16000
MODEL_TYPE = "asr_whisper"
GREEDY = DecodingOptions(temperatures=(0.0,), without_timestamps=True, language="en")
LORA_KEYS = ("lora_a", "lora_b")


def real_utterances(work: Path) -> list[ManifestRecord]:
    """The real transcribed utterances (LibriVox clips and ``goforward``), one recording each.

    Args:
        work: folder where ``goforward.raw`` is written out as ``goforward.wav``.
    """
    records = []
    for line in (DATA / "librivox" / "transcription").read_text(encoding="utf-8").splitlines():
        match = re.fullmatch(r"<s> (.*) </s> \((.*)\)", line.strip())
        if match is None:
            continue
        path = DATA / "librivox" / f"{match.group(2)}.wav"
        duration_s = soundfile.info(path).frames / SAMPLE_RATE
        records.append(ManifestRecord(audio_path=path, duration_s=round(duration_s, 4), text=match.group(1)))
    samples = np.fromfile(DATA / "goforward.raw", dtype="<i2")
    work.mkdir(parents=True, exist_ok=True)
    target = work / "goforward.wav"
    soundfile.write(target, samples, SAMPLE_RATE, subtype="PCM_16")
    records.append(
        ManifestRecord(
            audio_path=target,
            duration_s=round(len(samples) / SAMPLE_RATE, 4),
            text="go forward ten meters",
            speaker="goforward",
        )
    )
    return records


def load_whisper(mode: str) -> tuple[Any, Any]:
    """Whisper tiny.en loaded for training, with the ``lora`` plan applied in ``lora`` mode (else ``None``)."""
    model = AutoModel.from_pretrained(model_type=MODEL_TYPE, device="cpu")
    if mode == "lora":
        return model, model.apply_optimization_plan(("lora",), mode="training")
    return model.load_for_training(), None


def build_adapter(model: Any, mode: str, records: Sequence[ManifestRecord]) -> SequenceToSequenceAdapter:
    """The sequence-to-sequence adapter; ``full`` unfreezes the encoder too."""
    frozen = () if mode == "full" else None
    adapter = AutoTrainingAdapter.from_host(model, get_training_spec(MODEL_TYPE), records=records, frozen_parts=frozen)
    assert isinstance(adapter, SequenceToSequenceAdapter)
    return adapter


def transcribe(adapter: SequenceToSequenceAdapter, records: Sequence[ManifestRecord]) -> list[str]:
    """Greedy transcripts of ``records`` with the adapter's current graph (eval mode, no gradients)."""
    runtime = adapter.host.runtime
    was_training = adapter.module.training
    adapter.module.eval()
    try:
        with torch.no_grad():
            waveforms = [load_audio(record.audio_path).samples for record in records]
            transcripts = runtime.transcriber().transcribe_windows(waveforms, options=GREEDY)
    finally:
        adapter.module.train(was_training)
    return [transcript.text for transcript in transcripts]


def word_error_rate(records: Sequence[ManifestRecord], hypotheses: Sequence[str]) -> float:
    """Corpus WER (jiwer) after ``voicehub evaluate asr``'s normaliser."""
    references = [normalise_text(record.text or "") for record in records]
    return float(jiwer.wer(references, [normalise_text(text) for text in hypotheses]))


def teacher_forced_loss(adapter: SequenceToSequenceAdapter, records: Sequence[ManifestRecord]) -> float:
    """Mean teacher-forced token cross-entropy (nats/token, averaged over utterances) of ``records``."""
    was_training = adapter.module.training
    adapter.module.eval()
    try:
        with torch.no_grad():
            return float(adapter.module(adapter.collate(records))["loss"])
    finally:
        adapter.module.train(was_training)


class LossCurve(TrainerCallback):
    """Records the training loss of every step."""

    def __init__(self) -> None:
        self.losses: list[float] = []

    def on_step_end(self, trainer: Trainer, metrics: dict[str, float]) -> None:
        """Append the step's loss."""
        self.losses.append(float(metrics["loss"]))


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class SplitScores:
    """WER and teacher-forced loss of one split at one point."""

    wer: float
    loss: float
    hypotheses: tuple[str, ...]


def score(adapter: SequenceToSequenceAdapter, records: Sequence[ManifestRecord]) -> SplitScores:
    """WER and loss of ``records``."""
    hypotheses = transcribe(adapter, records)
    return SplitScores(
        wer=word_error_rate(records, hypotheses),
        loss=teacher_forced_loss(adapter, records),
        hypotheses=tuple(hypotheses),
    )


def fine_tune(
    mode: str,
    train: Sequence[ManifestRecord],
    held_out: Sequence[ManifestRecord],
    *,
    steps: int,
    learning_rate: float,
    batch_size: int,
    out: Path,
) -> dict[str, Any]:
    """Score, train, score again; for LoRA also check the adapter round trip and the merged export.

    Returns:
        The measurements (WER and loss per split before/after, loss curve, steps, wall time,
        trainable parameters, and for LoRA the round-trip results).
    """
    model, plan = load_whisper(mode)
    adapter = build_adapter(model, mode, train)
    config = TrainerConfig(
        max_steps=steps,
        batch_size=batch_size,
        learning_rate=learning_rate,
        scheduler="constant",
        warmup_steps=0,
        checkpoint_at_end=False,
    )
    curve = LossCurve()
    trainer = Trainer(adapter, config, train_records=train, output_dir=out, callbacks=(curve,), optimization=plan)
    trainable = sum(p.numel() for p in trainer.parameters)
    before = {"train": score(adapter, train), "held_out": score(adapter, held_out) if held_out else None}
    started = time.perf_counter()
    trainer.fit(resume=False)
    wall_s = time.perf_counter() - started
    after = {"train": score(adapter, train), "held_out": score(adapter, held_out) if held_out else None}
    report: dict[str, Any] = {
        "mode": mode,
        "steps": steps,
        "trainable_parameters": trainable,
        "total_parameters": sum(p.numel() for p in adapter.module.parameters()),
        "wall_s": wall_s,
        "losses": curve.losses,
        "before": before,
        "after": after,
    }
    if plan is not None:
        report["lora"] = lora_round_trip(adapter, plan, train, held_out, out)
    return report


def lora_round_trip(
    adapter: SequenceToSequenceAdapter,
    plan: Any,
    train: Sequence[ManifestRecord],
    held_out: Sequence[ManifestRecord],
    out: Path,
) -> dict[str, Any]:
    """Save the adapters alone, reload them onto a fresh base; export the merged weights and reload them.

    Returns:
        ``adapter_tensors``, ``reload_max_abs_diff`` (logits of the reloaded adapters against the
        trained model: 0 when identical), ``merged_dir``, ``merged_max_abs_diff`` (logits of the
        merged plain checkpoint) and ``merged_transcripts_equal`` (greedy transcripts of every clip).
    """
    records = [*train, *held_out]
    batch = adapter.collate(records)
    features = adapter.hooks.features(batch.audio.waveform, batch.audio.lengths)
    adapter.module.eval()
    with torch.no_grad():
        reference = adapter.graph(features, batch.tokens)
    state = {k: v for k, v in adapter.graph.state_dict().items() if k.rsplit(".", 1)[-1] in LORA_KEYS}
    torch.save(state, out / "lora_adapters.pt")

    fresh, _ = load_whisper("lora")
    missing, unexpected = fresh.runtime.module.load_state_dict(
        torch.load(out / "lora_adapters.pt", weights_only=True), strict=False
    )
    if unexpected or any(k.rsplit(".", 1)[-1] in LORA_KEYS for k in missing):
        raise RuntimeError(f"adapter reload mismatch: unexpected {unexpected[:3]}, missing adapters")
    fresh.runtime.module.eval()
    with torch.no_grad():
        reloaded = fresh.runtime.module(features, batch.tokens)

    plain = AutoModel.from_pretrained(model_type=MODEL_TYPE, device="cpu").load_for_training()
    plain.runtime.module.load_state_dict(plan.portable_state_dict(), strict=True)
    merged_dir = plain.save_pretrained(out / "merged")
    exported = AutoModel.from_pretrained(merged_dir, device="cpu").load()
    exported.runtime.module.eval()
    with torch.no_grad():
        merged_logits = exported.runtime.module(features, batch.tokens)
        merged_text = [
            t.text
            for t in exported.runtime.transcriber().transcribe_windows(
                [load_audio(r.audio_path).samples for r in records], options=GREEDY
            )
        ]
    return {
        "adapter_tensors": len(state),
        "reload_max_abs_diff": float((reloaded - reference).abs().max()),
        "merged_dir": str(merged_dir),
        "merged_max_abs_diff": float((merged_logits - reference).abs().max()),
        "merged_transcripts_equal": merged_text == transcribe(adapter, records),
    }


def print_table(report: dict[str, Any]) -> None:
    """The measurements as a small table."""
    losses = report["losses"]
    print(
        f"mode {report['mode']}: {report['steps']} steps in {report['wall_s']:.1f} s, "
        f"{report['trainable_parameters']:,} of {report['total_parameters']:,} parameters trained"
    )
    print(f"training loss per step: {losses[0]:.4f} (step 1) -> {losses[-1]:.4f} (step {len(losses)})")
    print(f"{'split':10} {'WER before':>11} {'WER after':>10} {'loss before':>12} {'loss after':>11}")
    for split in ("train", "held_out"):
        before, after = report["before"][split], report["after"][split]
        if before is None:
            continue
        print(f"{split:10} {100 * before.wer:10.2f}% {100 * after.wer:9.2f}% {before.loss:12.4f} {after.loss:11.4f}")
    for split in ("train", "held_out"):
        if report["after"][split] is not None:
            for text in report["after"][split].hypotheses:
                print(f"  {split} after: {text.strip()}")
    if "lora" in report:
        lora = report["lora"]
        print(
            f"LoRA: {lora['adapter_tensors']} adapter tensors saved; reloaded onto a fresh base: max |logit diff| "
            f"{lora['reload_max_abs_diff']:.3g}; merged export {lora['merged_dir']}: max |logit diff| "
            f"{lora['merged_max_abs_diff']:.3g}, same transcripts: {lora['merged_transcripts_equal']}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--mode", choices=("full", "lora"), default="lora")
    parser.add_argument("--steps", type=int, default=24)
    parser.add_argument("--batch-size", type=int, default=2)
    parser.add_argument("--learning-rate", type=float, default=None, help="default 1e-5 (full), 1e-3 (lora)")
    parser.add_argument("--held-out", type=float, default=0.4, help="share of the audio held out")
    parser.add_argument("--out", type=Path, default=None, help="default runs/whisper_<mode>")
    args = parser.parse_args()
    out = args.out or Path(f"runs/whisper_{args.mode}")
    learning_rate = args.learning_rate or (1e-5 if args.mode == "full" else 1e-3)
    torch.manual_seed(0)
    records = real_utterances(out / "audio")
    splits = split_records(records, {"train": 1 - args.held_out, "held_out": args.held_out}, seed=0)
    write_manifest(splits["train"], out / "train.jsonl")
    write_manifest(splits["held_out"], out / "held_out.jsonl")
    print(f"train: {[r.audio_path.stem for r in splits['train']]}")
    print(f"held out: {[r.audio_path.stem for r in splits['held_out']]}")
    report = fine_tune(
        args.mode,
        splits["train"],
        splits["held_out"],
        steps=args.steps,
        learning_rate=learning_rate,
        batch_size=args.batch_size,
        out=out,
    )
    print_table(report)


if __name__ == "__main__":
    main()

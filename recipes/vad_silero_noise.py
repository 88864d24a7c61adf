"""Recipe: fine-tune Silero VAD on real speech mixed with real noise, and measure it before and after.

Data (all from tests/data, see its PROVENANCE.md): the 48 synthetic multi-speaker clips (12 voices)
and the 5 LibriVox clips (one reader) are each placed 1 s into a stretch of the Silero test noise
(``silero/test.opus``, 8 s of mostly noise, looped), 1 s of noise after, at ``--snr-db`` (speech
power over noise power during the clip). Frame labels come from the *clean* clip: Silero's own
probabilities on the clean speech, thresholded at 0.5 (speech where the clean model hears speech),
so the model learns to keep those decisions under noise.

The clips are split by speaker (``split_records``: no voice in both parts), the model is trained
with the Trainer on the training voices, and the frame F1 and accuracy (threshold 0.5, 32 ms
frames) on the held-out voices' noisy mixtures are printed before and after.

Usage: ``HF_HUB_OFFLINE=1 uv run python recipes/vad_silero_noise.py [--steps 30] [--snr-db 0] [--out runs/vad_noise]``
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np
import soundfile
import torch

from voicehub import AutoModel
from voicehub.core.audio import load_audio
from voicehub.training import (
    AutoTrainingAdapter,
    ManifestRecord,
    Segment,
    Trainer,
    TrainerConfig,
    get_training_spec,
    split_records,
    write_manifest,
)
from voicehub.training.adapters.frame_classification import FrameClassificationAdapter

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
SAMPLE_RATE = 16000
FRAME_NUM_SAMPLES = 512  # 32 ms at 16 kHz, Silero's chunk
PAD_S = 1.0


def speech_regions(probabilities: np.ndarray, offset_s: float) -> tuple[Segment, ...]:
    """Runs of frames with probability >= 0.5, as segments in seconds (shifted by ``offset_s``)."""
    segments, start = [], None
    frame_s = FRAME_NUM_SAMPLES / SAMPLE_RATE
    for index, speech in enumerate([*(probabilities >= 0.5), False]):
        if speech and start is None:
            start = index
        elif not speech and start is not None:
            segments.append(
                Segment(start_s=round(offset_s + start * frame_s, 4), end_s=round(offset_s + index * frame_s, 4))
            )
            start = None
    return tuple(segments)


def build_mixtures(out: Path, snr_db: float, graph: torch.nn.Module) -> list[ManifestRecord]:
    """Write the noisy mixtures and return their records (labels from the clean clips)."""
    noise = load_audio(DATA / "silero" / "test.opus").samples
    clips = [(p, p.stem.rsplit("_", 1)[0]) for p in sorted((DATA / "synthetic").glob("*.flac"))]
    clips += [(p, "librivox_reader") for p in sorted((DATA / "librivox").glob("*.wav"))]
    rng = np.random.default_rng(0)
    records = []
    (out / "audio").mkdir(parents=True, exist_ok=True)
    for path, speaker in clips:
        clean = load_audio(path).samples
        with torch.no_grad():
            probabilities = graph(torch.from_numpy(clean)[None], SAMPLE_RATE)[0].numpy()
        pad = int(PAD_S * SAMPLE_RATE)
        total = len(clean) + 2 * pad
        start = int(rng.integers(0, len(noise)))
        background = np.resize(np.roll(noise, -start), total).astype(np.float32)
        speech_power = float(np.mean(clean**2))
        noise_power = float(np.mean(background[pad : pad + len(clean)] ** 2)) or 1e-12
        gain = math.sqrt(speech_power / (noise_power * 10 ** (snr_db / 10)))
        mixture = background * gain
        mixture[pad : pad + len(clean)] += clean
        mixture /= max(1.0, float(np.abs(mixture).max()))
        target = out / "audio" / f"{path.stem}.wav"
        soundfile.write(target, mixture, SAMPLE_RATE, subtype="PCM_16")
        records.append(
            ManifestRecord(
                audio_path=target,
                duration_s=round(total / SAMPLE_RATE, 4),
                speaker=speaker,
                segments=speech_regions(probabilities, PAD_S),
            )
        )
    return records


def frame_scores(adapter: FrameClassificationAdapter, records: list[ManifestRecord]) -> dict[str, float]:
    """Frame F1 and accuracy at threshold 0.5 over ``records``."""
    true_positive = false_positive = false_negative = correct = count = 0
    with torch.no_grad():
        for record in records:
            batch = adapter.collate([record])
            probabilities = adapter.hooks.frame_probabilities(adapter.graph, batch.audio.waveform, SAMPLE_RATE)
            predicted = probabilities[0, : batch.targets.shape[1]] >= 0.5
            target = batch.targets[0, : predicted.shape[0]] >= 0.5
            true_positive += int((predicted & target).sum())
            false_positive += int((predicted & ~target).sum())
            false_negative += int((~predicted & target).sum())
            correct += int((predicted == target).sum())
            count += int(target.numel())
    f1 = 2 * true_positive / max(2 * true_positive + false_positive + false_negative, 1)
    return {"f1": f1, "accuracy": correct / count}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--snr-db", type=float, default=0.0)
    parser.add_argument("--learning-rate", type=float, default=3e-4)
    parser.add_argument("--out", type=Path, default=Path("runs/vad_noise"))
    args = parser.parse_args()
    torch.manual_seed(0)

    model = AutoModel.from_pretrained(model_type="vad_silero", device="cpu")
    spec = get_training_spec("vad_silero")
    model.load_for_training()
    assert model.runtime is not None
    records = build_mixtures(args.out, args.snr_db, model.runtime.module)
    splits = split_records(records, {"train": 0.75, "test": 0.25}, seed=0)
    write_manifest(splits["train"], args.out / "train.jsonl")
    write_manifest(splits["test"], args.out / "test.jsonl")
    adapter = AutoTrainingAdapter.from_host(model, spec, records=splits["train"])
    assert isinstance(adapter, FrameClassificationAdapter)
    before = frame_scores(adapter, list(splits["test"]))
    config = TrainerConfig(
        max_steps=args.steps, batch_size=4, learning_rate=args.learning_rate, scheduler="cosine", warmup_steps=3
    )
    Trainer(adapter, config, train_records=splits["train"], output_dir=args.out, callbacks=()).fit(resume=False)
    after = frame_scores(adapter, list(splits["test"]))
    speakers = sorted({r.speaker or "" for r in splits["test"]})
    print(f"held-out voices {speakers} at {args.snr_db:+.0f} dB SNR, {len(splits['test'])} clips")
    print(f"frame F1: {before['f1']:.3f} -> {after['f1']:.3f}")
    print(f"frame accuracy: {before['accuracy']:.3f} -> {after['accuracy']:.3f}")


if __name__ == "__main__":
    main()

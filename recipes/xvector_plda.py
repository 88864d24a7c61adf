"""Recipe: train the x-vector (``sv_xvector``) from scratch, fit its PLDA back-end, report EER before and after.

Speakers (15; files from tests/data, see its PROVENANCE.md):

* real: the LibriVox reader (5 utterances, 25.7 s) and the reader of the Silero test file (60 s,
  cut into six 10 s recordings);
* synthetic: the 12 voices of ``tests/data/synthetic`` (8 espeak-ng and 4 flite voices, 4 sentences
  each), and the one voice of ``tts_vits`` (Piper's ``en_US-joe-medium``: a single-speaker VITS
  voice), reading ``--tts-utterances`` sentences. Its length and noise scales vary per sentence
  (0.9-1.15 and 0.5-0.8): that is session variability of one speaker, not extra speakers.

Every utterance is cut into ``--crop-s`` crops (hop half a crop, at most ``--max-crops`` per
speaker, in equal shares of the speaker's recordings); a crop keeps its utterance as ``recording``.
The reader of the Silero file is held out (the one real speaker among the test speakers);
``split_records`` splits the other speakers' crops by speaker (no speaker in both parts, fixed
seed; left to the duration shares alone, the default crop counts put both real readers in training). The x-vector
is trained with the Trainer (additive-margin softmax over the training speakers), and the PLDA
back-end (``voicehub.plda_backend.PLDABackend``: centring + length normalisation, SPLDA,
held-out calibration) is fitted on the training speakers' embeddings. The trials are every pair
of held-out crops from different recordings (target: same speaker); EER and minDCF
(P_target = ``MIN_DCF_PRIOR``) are printed for cosine and PLDA scoring, with the initial weights
and after training, over all held-out trials and over those with the real held-out reader on a side.

Usage: ``HF_HUB_OFFLINE=1 uv run python recipes/xvector_plda.py [--steps 60] [--out runs/xvector_plda]``
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
import soundfile
import torch

from voicehub import AutoModel
from voicehub.core.audio import load_audio, resample
from voicehub.hyperion.metrics import compute_eer, compute_min_dcf
from voicehub.plda_backend import PLDABackend
from voicehub.training import (
    AutoTrainingAdapter,
    ManifestRecord,
    Trainer,
    TrainerCallback,
    TrainerConfig,
    collate_audio,
    get_training_spec,
    split_records,
    write_manifest,
)
from voicehub.training.adapters.speaker_classification import SpeakerClassificationAdapter
from voicehub.training.callbacks import Metrics

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
SAMPLE_RATE = 16000
MIN_DCF_PRIOR = 0.05
"""Target prior of the reported minDCF (few trials: the SRE prior 0.01 would rest on a handful of false accepts)."""
SILERO_PIECE_S = 10.0
HELD_OUT_REAL = "real_silero"
TTS_SENTENCES = (
    "The old mill stood by the river for a hundred years.",
    "Please send the report to the office before noon.",
    "A cold wind came down from the hills last night.",
    "She counted the boxes twice and found one missing.",
    "We will meet at the station at half past seven.",
    "The garden was full of roses and tall green grass.",
)


@dataclass(frozen=True, slots=True)
class Utterance:
    """One source utterance: 16 kHz mono samples, its speaker and its recording id."""

    samples: npt.NDArray[np.float32]
    speaker: str
    recording: str


def real_utterances() -> list[Utterance]:
    """The LibriVox clips, and the Silero test file cut into 10 s recordings."""
    utterances = [
        Utterance(load_audio(path).samples, "real_librivox", path.stem[-4:])
        for path in sorted((DATA / "librivox").glob("*.wav"))
    ]
    silero = load_audio(DATA / "silero" / "test.wav").samples
    piece = int(SILERO_PIECE_S * SAMPLE_RATE)
    for index in range(len(silero) // piece):
        utterances.append(Utterance(silero[index * piece : (index + 1) * piece], "real_silero", f"silero{index}"))
    return utterances


def synthetic_utterances(voices: int | None = None) -> list[Utterance]:
    """The espeak-ng / flite clips of tests/data/synthetic (``voices``: only the first N voices)."""
    paths = sorted((DATA / "synthetic").glob("*.flac"))
    names = sorted({path.stem.rsplit("_", 1)[0] for path in paths})[:voices]
    return [
        Utterance(load_audio(path).samples, path.stem.rsplit("_", 1)[0], path.stem)
        for path in paths
        if path.stem.rsplit("_", 1)[0] in names
    ]


def tts_utterances(count: int) -> list[Utterance]:
    """``count`` sentences of the ``tts_vits`` voice, resampled to 16 kHz, scales varied per sentence."""
    if count <= 0:
        return []
    tts = AutoModel.from_pretrained(model_type="tts_vits", device="cpu")
    utterances = []
    for index in range(count):
        sentence = TTS_SENTENCES[index % len(TTS_SENTENCES)]
        out = tts.generate(
            sentence, seed=index, length_scale=0.9 + 0.05 * (index % 6), noise_scale=0.5 + 0.06 * (index % 6)
        )
        samples = resample(np.asarray(out.audio, dtype=np.float32), out.sample_rate, SAMPLE_RATE)
        utterances.append(Utterance(samples.astype(np.float32), "tts_vits_joe", f"vits{index}"))
    return utterances


def crop_records(utterances: Sequence[Utterance], out: Path, *, crop_s: float, max_crops: int) -> list[ManifestRecord]:
    """Write ``crop_s`` crops (hop ``crop_s / 2``) of every utterance; at most ``max_crops`` per speaker.

    Each speaker's quota is shared evenly among its recordings, so that every recording contributes.
    """
    crop, hop = int(crop_s * SAMPLE_RATE), int(crop_s * SAMPLE_RATE / 2)
    by_speaker: dict[str, list[Utterance]] = {}
    for utterance in utterances:
        by_speaker.setdefault(utterance.speaker, []).append(utterance)
    (out / "audio").mkdir(parents=True, exist_ok=True)
    records = []
    for speaker, items in sorted(by_speaker.items()):
        starts = [list(range(0, max(len(u.samples) - crop, 0) + 1, hop)) for u in items]
        share = [0] * len(items)
        for _ in range(max_crops):  # round robin over the recordings until the quota or the audio runs out
            open_items = [i for i in range(len(items)) if share[i] < len(starts[i])]
            if not open_items:
                break
            pick = min(open_items, key=lambda i: share[i])
            share[pick] += 1
        for utterance, begins, taken in zip(items, starts, share, strict=True):
            for start in begins[:taken]:
                samples = utterance.samples[start : start + crop]
                if len(samples) < crop // 2:
                    continue
                target = out / "audio" / f"{speaker}-{utterance.recording}-{start // hop:03d}.wav"
                soundfile.write(target, samples, SAMPLE_RATE, subtype="PCM_16")
                records.append(
                    ManifestRecord(
                        audio_path=target,
                        duration_s=round(len(samples) / SAMPLE_RATE, 4),
                        speaker=speaker,
                        recording=f"{speaker}/{utterance.recording}",
                    )
                )
    return records


def split_speakers(
    records: Sequence[ManifestRecord], *, test_share: float, held_out: Sequence[str] = (HELD_OUT_REAL,), seed: int = 0
) -> tuple[list[ManifestRecord], list[ManifestRecord]]:
    """Speaker-disjoint (train, test): the ``held_out`` speakers plus a ``split_records`` share of the others."""
    rest = [r for r in records if r.speaker not in held_out]
    splits = split_records(rest, {"train": 1 - test_share, "test": test_share}, seed=seed)
    return list(splits["train"]), [r for r in records if r.speaker in held_out] + list(splits["test"])


def embed(adapter: SpeakerClassificationAdapter, records: Sequence[ManifestRecord], batch_size: int = 16) -> np.ndarray:
    """float64 (len(records), embedding_dim) embeddings, graph in eval mode (its previous mode restored)."""
    graph = adapter.graph
    was_training = graph.training
    graph.eval()
    chunks = []
    with torch.no_grad():
        for first in range(0, len(records), batch_size):
            batch = collate_audio(records[first : first + batch_size], sample_rate=SAMPLE_RATE)
            chunks.append(adapter.hooks.embed(graph, batch.waveform, batch.lengths).double().numpy())
    graph.train(was_training)
    return np.concatenate(chunks)


def trial_scores(
    scores: np.ndarray, records: Sequence[ManifestRecord], *, involving: str | None = None
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Target and non-target scores of every pair i < j of ``records`` from different recordings.

    ``involving``: only the pairs with that speaker on at least one side.
    """
    speakers = np.asarray([r.speaker for r in records])
    recordings = np.asarray([r.recording for r in records])
    upper = np.triu_indices(len(records), 1)
    keep = (recordings[:, None] != recordings[None, :])[upper]
    if involving is not None:
        keep &= ((speakers[:, None] == involving) | (speakers[None, :] == involving))[upper]
    same = (speakers[:, None] == speakers[None, :])[upper][keep]
    values = scores[upper][keep]
    return values[same], values[~same]


def evaluate(
    train_embeddings: np.ndarray,
    train_records: Sequence[ManifestRecord],
    test_embeddings: np.ndarray,
    test_records: Sequence[ManifestRecord],
    *,
    involving: str | None = None,
) -> tuple[dict[str, dict[str, float]], PLDABackend]:
    """EER and minDCF of cosine and PLDA scoring on the held-out trials; the PLDA fitted on the training speakers.

    ``involving``: also score the trials with that speaker on a side, under the keys ``cosine:<speaker>``
    and ``plda:<speaker>``.
    """
    unit = test_embeddings / np.linalg.norm(test_embeddings, axis=1, keepdims=True)
    backend = PLDABackend.fit(
        train_embeddings,
        [r.speaker for r in train_records],
        sessions=[r.recording for r in train_records],
    )
    results = {}
    for name, scores in (("cosine", unit @ unit.T), ("plda", backend.score(test_embeddings, test_embeddings))):
        for speaker in (None, involving) if involving is not None else (None,):
            target, nontarget = trial_scores(scores, test_records, involving=speaker)
            results[name if speaker is None else f"{name}:{speaker}"] = {
                "eer": compute_eer(target, nontarget),
                "min_dcf": compute_min_dcf(target, nontarget, MIN_DCF_PRIOR),
                "targets": float(len(target)),
                "nontargets": float(len(nontarget)),
            }
    return results, backend


class LossLog(TrainerCallback):
    """Keeps the training loss of every step."""

    def __init__(self) -> None:
        self.losses: list[float] = []

    def on_step_end(self, trainer: Trainer, metrics: Metrics) -> None:
        """Record the step's loss."""
        self.losses.append(float(metrics["loss"]))


def train(
    adapter: SpeakerClassificationAdapter, records: Sequence[ManifestRecord], config: TrainerConfig, out: Path
) -> list[float]:
    """Train in place with the Trainer; returns the per-step losses."""
    log = LossLog()
    Trainer(adapter, config, train_records=records, output_dir=out, callbacks=(log,)).fit(resume=False)
    return log.losses


def build_adapter(records: Sequence[ManifestRecord]) -> SpeakerClassificationAdapter:
    """``sv_xvector`` built from its initialisation (the seeded torch stream) with its training head."""
    model = AutoModel.from_pretrained(model_type="sv_xvector", device="cpu")
    adapter = AutoTrainingAdapter.from_host(model, get_training_spec("sv_xvector"), records=records)
    assert isinstance(adapter, SpeakerClassificationAdapter)
    return adapter


def print_table(before: dict[str, dict[str, float]], after: dict[str, dict[str, float]]) -> None:
    """The before/after table (EER in percent, minDCF as a cost), all trials, then any per-speaker subset."""
    subsets = sorted({key.split(":", 1)[1] for key in before if ":" in key})
    for subset in [None, *subsets]:
        rows = [("cosine", "plda")] if subset is None else [(f"cosine:{subset}", f"plda:{subset}")]
        first = before[rows[0][0]]
        title = "all held-out trials" if subset is None else f"trials with {subset} on a side"
        print(f"{title}: {first['targets']:.0f} target, {first['nontargets']:.0f} non-target")
        print(f"  {'scoring':<26} {'EER %':>7} {'minDCF':>7}")
        for label, results in (("initial weights", before), ("trained", after)):
            for key in rows[0]:
                row = results[key]
                name = f"{label}, {key.split(':')[0]}"
                print(f"  {name:<26} {100 * row['eer']:7.2f} {row['min_dcf']:7.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument("--crop-s", type=float, default=2.0)
    parser.add_argument("--max-crops", type=int, default=24)
    parser.add_argument("--tts-utterances", type=int, default=6)
    parser.add_argument("--test-share", type=float, default=0.25)
    parser.add_argument("--out", type=Path, default=Path("runs/xvector_plda"))
    args = parser.parse_args()
    torch.manual_seed(0)

    utterances = real_utterances() + synthetic_utterances() + tts_utterances(args.tts_utterances)
    records = crop_records(utterances, args.out, crop_s=args.crop_s, max_crops=args.max_crops)
    train_records, test_records = split_speakers(records, test_share=args.test_share)
    write_manifest(train_records, args.out / "train.jsonl")
    write_manifest(test_records, args.out / "test.jsonl")
    adapter = build_adapter(train_records)
    involving = HELD_OUT_REAL
    before, _ = evaluate(
        embed(adapter, train_records), train_records, embed(adapter, test_records), test_records, involving=involving
    )
    config = TrainerConfig(
        max_steps=args.steps,
        batch_size=args.batch_size,
        learning_rate=args.learning_rate,
        scheduler="cosine",
        warmup_steps=max(1, args.steps // 10),
        checkpoint_at_end=False,
    )
    losses = train(adapter, train_records, config, args.out)
    after, backend = evaluate(
        embed(adapter, train_records), train_records, embed(adapter, test_records), test_records, involving=involving
    )
    backend.save(args.out / "backend")

    held_out = sorted({str(r.speaker) for r in test_records})
    trained_on = sorted({str(r.speaker) for r in train_records})
    print(f"training speakers ({len(trained_on)}, {len(train_records)} crops): {trained_on}")
    print(f"held-out speakers ({len(held_out)}, {len(test_records)} crops): {held_out}")
    print("trials: every pair of held-out crops from different recordings")
    first, last = np.mean(losses[: max(1, len(losses) // 10)]), np.mean(losses[-max(1, len(losses) // 10) :])
    print(f"training loss: {first:.3f} (first steps) -> {last:.3f} (last steps), {len(losses)} steps")
    if not all(math.isfinite(loss) for loss in losses):
        print("warning: a non-finite training loss")
    print_table(before, after)


if __name__ == "__main__":
    main()

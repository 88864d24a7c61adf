"""One training step of every trainable integration on its real weights and real audio.

The loss is finite, every trainable tensor changes and every frozen one does not. The records
come from the family the integration declares (no model names here): segment-labelled clips
for frame classification, several voices for speaker classification, transcribed LibriVox
clips for sequence to sequence.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from voicehub import AutoModel
from voicehub.models import load_builtin_models
from voicehub.training import AutoTrainingAdapter, ManifestRecord, Trainer, TrainerConfig, get_training_spec
from voicehub_training_data import librivox_records, speaker_records, vad_records

RECORDS: dict[str, Callable[[], list[ManifestRecord]]] = {
    "frame_classification": lambda: vad_records(2),
    "speaker_classification": lambda: speaker_records(2, 1),
    "sequence_to_sequence": lambda: librivox_records(("0880", "0930")),
}
TRAINABLE = tuple(
    spec.model_type for spec in load_builtin_models().list() if get_training_spec(spec.model_type).trainable
)
SLOW = {"asr_whisper_base"}  # 72.6 M parameters: a few seconds more


def _parameters(module: torch.nn.Module) -> dict[str, tuple[torch.Tensor, bool]]:
    return {name: (p.detach().clone(), p.requires_grad) for name, p in module.named_parameters()}


@pytest.mark.parametrize("model_type", [pytest.param(m, marks=pytest.mark.slow) if m in SLOW else m for m in TRAINABLE])
def test_one_step_changes_trainable_and_keeps_frozen_parameters(model_type: str, tmp_path: Path) -> None:
    spec = get_training_spec(model_type)
    records = RECORDS[str(spec.family)]()
    model = AutoModel.from_pretrained(model_type=model_type)
    adapter = AutoTrainingAdapter.from_host(model, spec, records=records)
    before = _parameters(adapter.module)
    config = TrainerConfig(max_steps=1, batch_size=len(records), learning_rate=1e-3, checkpoint_at_end=False)
    result = Trainer(adapter, config, train_records=records, output_dir=tmp_path).fit()
    assert math.isfinite(result.metrics["loss"]) and result.metrics["loss"] > 0
    after = dict(adapter.module.named_parameters())
    trainable = [name for name, (_, grad) in before.items() if grad]
    frozen = [name for name, (_, grad) in before.items() if not grad]
    assert trainable, "nothing was trained"
    unchanged = [name for name in trainable if torch.equal(before[name][0], after[name].detach())]
    assert not unchanged, f"trainable tensors that did not change: {unchanged[:5]}"
    assert all(torch.equal(before[name][0], after[name].detach()) for name in frozen)
    assert len(frozen) == len(adapter.frozen_names)
    assert model.runtime is not None and model.runtime.module is adapter.graph  # trained in place, ready to export


def test_whisper_teacher_forced_loss_on_its_own_reference_transcripts_is_low(tmp_path: Path) -> None:
    """Correctly aligned labels: tiny.en already transcribes these clips, so the token loss is small."""
    records = librivox_records(("0880", "0930"))
    model = AutoModel.from_pretrained(model_type="asr_whisper")
    adapter = AutoTrainingAdapter.from_host(model, get_training_spec("asr_whisper"), records=records)
    batch = adapter.collate(records)
    with torch.no_grad():
        loss = float(adapter.module(batch)["loss"])
    shuffled = [
        ManifestRecord(audio_path=a.audio_path, duration_s=a.duration_s, text=b.text)
        for a, b in zip(records, reversed(records), strict=True)
    ]
    with torch.no_grad():
        wrong = float(adapter.module(adapter.collate(shuffled))["loss"])
    # Measured: 0.62 nats per token (the references are lower case without punctuation, which
    # Whisper writes), 5.86 with the transcripts swapped between the clips.
    assert loss < 1.0 and wrong > 4.0, (loss, wrong)

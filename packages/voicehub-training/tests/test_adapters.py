"""AutoTrainingAdapter's choice of family and the frame targets of the frame-classification family."""

from __future__ import annotations

from pathlib import Path

import pytest

from voicehub.core.errors import UnknownModelError
from voicehub.registry.errors import DuplicateRegistrationError
from voicehub.training import (
    AutoTrainingAdapter,
    DataContract,
    ManifestRecord,
    ModelTrainingSpec,
    Segment,
    TrainingNotSupportedError,
    register_family_adapter,
)
from voicehub.training.adapters.frame_classification import FrameClassificationAdapter, frame_targets

DATA = DataContract(required_fields=(), sample_rate=16000, frame_num_samples=512)


def _spec(family: str) -> ModelTrainingSpec:
    return ModelTrainingSpec(
        model_type="toy", support="native", reason="r", family=family, objective="o", data=DATA, hooks="a:b"
    )


def test_auto_adapter_picks_the_declared_family() -> None:
    assert AutoTrainingAdapter.adapter_class(_spec("frame_classification")) is FrameClassificationAdapter
    with pytest.raises(UnknownModelError, match="unknown training family 'clustering'; available: frame_class"):
        AutoTrainingAdapter.adapter_class(_spec("clustering"))
    with pytest.raises(TrainingNotSupportedError, match="toy cannot be trained: C code"):
        AutoTrainingAdapter.adapter_class(ModelTrainingSpec(model_type="toy", support="none", reason="C code"))


def test_family_registration_refuses_a_taken_name() -> None:
    with pytest.raises(DuplicateRegistrationError, match="already registered"):
        register_family_adapter("frame_classification", "somewhere.else:Adapter")


def test_frame_targets_mark_frames_at_least_half_inside_a_segment() -> None:
    record = ManifestRecord(
        audio_path=Path("x.wav"), duration_s=0.2, segments=(Segment(start_s=0.032, end_s=0.08),)
    )  # speech on samples [512, 1280): frame 1 fully, frame 2 for 256 of 512 samples
    targets = frame_targets(record, num_samples=3200, sample_rate=16000, frame_num_samples=512)
    assert targets.tolist() == [0.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0]  # ceil(3200 / 512) = 7 frames

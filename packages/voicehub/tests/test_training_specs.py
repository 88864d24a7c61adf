"""Every registered model declares a training spec through its own registration (no central table)."""

from __future__ import annotations

import pytest

from voicehub.core.lazy import resolve_reference
from voicehub.models import load_builtin_models
from voicehub.training import ModelTrainingSpec, SupportLevel, TrainingNotSupportedError, get_training_spec

REGISTERED = tuple(spec.model_type for spec in load_builtin_models().list())


@pytest.mark.parametrize("model_type", REGISTERED)
def test_every_registered_model_declares_a_training_spec(model_type: str) -> None:
    spec = get_training_spec(model_type)
    assert isinstance(spec, ModelTrainingSpec) and spec.model_type == model_type
    if spec.trainable:
        assert spec.data is not None and spec.data.sample_rate > 0
        assert spec.hooks is not None and callable(resolve_reference(spec.hooks))


def test_training_spec_levels_of_the_builtin_models() -> None:
    levels = {model_type: get_training_spec(model_type).support for model_type in REGISTERED}
    assert levels["vad_webrtc"] is SupportLevel.NONE
    assert levels["vad_silero"] is SupportLevel.NATIVE
    assert levels["sv_xvector"] is SupportLevel.NATIVE
    assert levels["asr_whisper"] is SupportLevel.NATIVE
    assert get_training_spec("silero").model_type == "vad_silero"  # aliases resolve
    with pytest.raises(TrainingNotSupportedError, match="vad_webrtc cannot be trained: the WebRTC detector"):
        get_training_spec("vad_webrtc").require_trainable()

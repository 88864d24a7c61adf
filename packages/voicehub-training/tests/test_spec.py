"""ModelTrainingSpec validation and get_training_spec on an isolated registry."""

from __future__ import annotations

import pytest

from voicehub.core.errors import UnknownModelError
from voicehub.core.tasks import SpeechTask
from voicehub.registry import ModelRegistry, ModelSpec
from voicehub.training import (
    DataContract,
    ManifestField,
    ModelTrainingSpec,
    SupportLevel,
    TrainingNotSupportedError,
    TrainingSpecError,
    get_training_spec,
)

NATIVE = ModelTrainingSpec(
    model_type="toy_vad",
    support=SupportLevel.NATIVE,
    reason="a differentiable frame scorer",
    family="frame_classification",
    objective="binary_cross_entropy",
    data=DataContract(required_fields=(ManifestField.SEGMENTS,), sample_rate=16000, frame_num_samples=512),
    hooks="voicehub.training.spec:ModelTrainingSpec",
)
NONE = ModelTrainingSpec(model_type="toy_gmm", support="none", reason="a C extension without tensors")
NOT_A_SPEC = "not a spec"


def _registry(*entries: tuple[str, str | None]) -> ModelRegistry:
    registry = ModelRegistry(name="test")
    for model_type, training_spec in entries:
        registry.register(
            ModelSpec(
                model_type=model_type,
                task=SpeechTask.VOICE_ACTIVITY_DETECTION,
                config="voicehub.core.config:Config",
                wrapper="voicehub.core.config:Config",
                training_spec=training_spec,
            )
        )
    return registry


def test_data_contract_always_requires_audio_path_and_duration() -> None:
    contract = DataContract(required_fields=("text",), sample_rate=16000)  # type: ignore[arg-type]
    assert contract.required_fields == (ManifestField.AUDIO_PATH, ManifestField.DURATION_S, ManifestField.TEXT)


def test_data_contract_rejects_unknown_field_and_bad_rate() -> None:
    with pytest.raises(TrainingSpecError, match="unknown field"):
        DataContract(required_fields=("transcript",), sample_rate=16000)  # type: ignore[arg-type]
    with pytest.raises(TrainingSpecError, match="sample_rate must be a positive int"):
        DataContract(required_fields=(), sample_rate=0)


def test_support_none_carries_only_its_reason() -> None:
    assert NONE.support is SupportLevel.NONE and not NONE.trainable
    with pytest.raises(TrainingNotSupportedError, match="toy_gmm cannot be trained: a C extension without tensors"):
        NONE.require_trainable()
    with pytest.raises(TrainingSpecError, match="declares no family"):
        ModelTrainingSpec(model_type="x", support=SupportLevel.NONE, reason="r", family="frame_classification")


def test_trainable_spec_needs_family_objective_data_and_hooks() -> None:
    with pytest.raises(TrainingSpecError, match="needs data=DataContract"):
        ModelTrainingSpec(model_type="x", support="native", reason="r", family="f", objective="o", hooks="a:b")
    with pytest.raises(TrainingSpecError, match="needs hooks="):
        ModelTrainingSpec(model_type="x", support="native", reason="r", family="f", objective="o", data=NATIVE.data)
    with pytest.raises(TrainingSpecError, match="support 'sometimes' is not one of"):
        ModelTrainingSpec(model_type="x", support="sometimes", reason="r")  # type: ignore[arg-type]
    with pytest.raises(TrainingSpecError, match="reason must be a non-empty sentence"):
        ModelTrainingSpec(model_type="x", support="none", reason=" ")


def test_get_training_spec_follows_the_model_spec_reference_and_aliases() -> None:
    registry = _registry(("toy_vad", "voicehub.training_tests_specs:NATIVE"))
    registry.register(
        ModelSpec(
            model_type="toy_gmm",
            task=SpeechTask.VOICE_ACTIVITY_DETECTION,
            config="voicehub.core.config:Config",
            wrapper="voicehub.core.config:Config",
            aliases=("gmm",),
            training_spec=f"{__name__}:NONE",
        )
    )
    assert get_training_spec("gmm", registry=registry) is NONE
    with pytest.raises(TrainingSpecError, match="cannot import its training spec"):
        get_training_spec("toy_vad", registry=registry)
    with pytest.raises(UnknownModelError, match="toy_gmm, toy_vad"):
        get_training_spec("nothing", registry=registry)


def test_get_training_spec_refuses_missing_foreign_or_mismatched_declarations() -> None:
    registry = _registry(
        ("undeclared", None), ("foreign", f"{__name__}:NOT_A_SPEC"), ("toy_other", f"{__name__}:NATIVE")
    )
    with pytest.raises(TrainingSpecError, match="undeclared declares no training spec; its integration must add"):
        get_training_spec("undeclared", registry=registry)
    with pytest.raises(TrainingSpecError, match="is a str, expected a ModelTrainingSpec"):
        get_training_spec("foreign", registry=registry)
    with pytest.raises(TrainingSpecError, match="declares model_type 'toy_vad'"):
        get_training_spec("toy_other", registry=registry)


def test_spec_to_dict_is_strict_json() -> None:
    from voicehub.core import strict_json

    document = strict_json.loads(strict_json.dumps(NATIVE.to_dict()))  # type: ignore[arg-type]
    assert document["data"] == {  # type: ignore[index]
        "required_fields": ["audio_path", "duration_s", "segments"],
        "sample_rate": 16000,
        "frame_num_samples": 512,
        "max_duration_s": None,
    }

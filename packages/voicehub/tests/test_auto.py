"""Auto factories: registration, dispatch, task separation before import, closed signatures."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import voicehub
from conftest import SPEECH_WAV
from voicehub import (
    AutoConfig,
    AutoModel,
    AutoModelForSpeakerVerification,
    AutoModelForSpeechRecognition,
    AutoModelForTextToSpeech,
    AutoModelForVoiceActivityDetection,
    list_model_specs,
)
from voicehub.core import ConfigError, RegistryError, SpeechTask, TaskMismatchError, UnknownModelError
from voicehub.core.errors import DeviceError, UnknownConfigKeyError
from voicehub.registry import MODEL_CATALOG, LocalSource, ModelRegistry, ModelSpec
from voicehub_test_extension import EnergyVAD, EnergyVADConfig, EnergyVADOptions

ASR_MODULE = "voicehub_test_asr_extension"
SHADOW_ASR = ModelSpec(
    model_type="test_shadow_asr",
    task=SpeechTask.AUTOMATIC_SPEECH_RECOGNITION,
    config=f"{ASR_MODULE}:ShadowASRConfig",
    wrapper=f"{ASR_MODULE}:ShadowASR",
)

pytestmark = pytest.mark.usefixtures("isolated_catalog")


def _register_energy(kernel: Path | None = None) -> ModelSpec:
    return AutoModelForVoiceActivityDetection.register(
        EnergyVADConfig,
        EnergyVAD,
        default_model_path=str(kernel) if kernel else None,
        aliases=("Energy-Test",),
    )


def test_register_stores_import_paths_and_makes_the_model_discoverable(mean_square_kernel: Path) -> None:
    spec = _register_energy(mean_square_kernel)
    assert spec.config == "voicehub_test_extension:EnergyVADConfig"
    assert spec.wrapper == "voicehub_test_extension:EnergyVAD"
    assert spec.task is SpeechTask.VOICE_ACTIVITY_DETECTION
    assert spec.default_source == LocalSource(path=str(mean_square_kernel))
    assert spec in list_model_specs("vad")
    assert spec not in list_model_specs("asr")
    assert voicehub.get_model_spec("ENERGY-test") is spec
    assert spec in AutoModelForVoiceActivityDetection.available_models()
    model = AutoModel.from_pretrained(model_type="energy-test", device="cpu")
    assert type(model) is EnergyVAD
    assert model.source == LocalSource(path=str(mean_square_kernel))
    assert model.detect(SPEECH_WAV).segments


def test_task_factory_refuses_a_model_of_another_task_before_importing_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, ASR_MODULE, raising=False)
    MODEL_CATALOG.register(SHADOW_ASR)
    for factory in (AutoModelForVoiceActivityDetection, AutoModelForTextToSpeech, AutoModelForSpeakerVerification):
        with pytest.raises(TaskMismatchError) as info:
            factory.from_pretrained(model_type="test_shadow_asr")
        message = str(info.value)
        assert "use AutoModelForSpeechRecognition" in message
        assert factory.__name__ in message
    assert ASR_MODULE not in sys.modules
    # The right factory and AutoModel do import and build it.
    model = AutoModelForSpeechRecognition.from_pretrained(model_type="test_shadow_asr")
    assert type(model).__name__ == "ShadowASR" and ASR_MODULE in sys.modules
    assert type(AutoModel.from_pretrained(model_type="test_shadow_asr")).__name__ == "ShadowASR"


def test_registering_through_the_wrong_factory_is_refused() -> None:
    with pytest.raises(TaskMismatchError, match="register it with AutoModelForVoiceActivityDetection"):
        AutoModelForSpeechRecognition.register(EnergyVADConfig, EnergyVAD)
    with pytest.raises(RegistryError, match="not a PreTrainedSpeechModel subclass"):
        AutoModel.register(EnergyVADConfig, dict)  # type: ignore[arg-type]
    spec = AutoModel.register(EnergyVADConfig, EnergyVAD)  # AutoModel takes the wrapper's task
    assert spec.task is SpeechTask.VOICE_ACTIVITY_DETECTION
    with pytest.raises(TaskMismatchError):
        AutoModelForTextToSpeech.unregister("test_energy_vad")
    AutoModelForVoiceActivityDetection.unregister("test_energy_vad")
    assert "test_energy_vad" not in MODEL_CATALOG


def test_unknown_model_type_lists_the_valid_ones() -> None:
    _register_energy()
    with pytest.raises(UnknownModelError) as info:
        AutoModel.from_pretrained(model_type="test_energy_vda")
    assert "test_energy_vad" in info.value.available
    assert "test_energy_vad" in str(info.value)


def test_unknown_keyword_is_a_type_error_naming_it(mean_square_kernel: Path) -> None:
    _register_energy()
    with pytest.raises(TypeError, match="reviison"):
        AutoModel.from_pretrained(mean_square_kernel, model_type="test_energy_vad", reviison="main")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="trust_remote_code"):
        AutoModelForVoiceActivityDetection.from_pretrained(model_type="test_energy_vad", trust_remote_code=True)  # type: ignore[call-arg]
    # torch_dtype is a declared alias of dtype (issue 28), so a bad value is a dtype error, not silence
    with pytest.raises(DeviceError, match="int8"):
        AutoModelForVoiceActivityDetection.from_pretrained(model_type="test_energy_vad", torch_dtype="int8")


def test_source_without_model_type_is_not_guessed(mean_square_kernel: Path) -> None:
    _register_energy()
    with pytest.raises(ConfigError, match="pass model_type="):
        AutoModel.from_pretrained(mean_square_kernel)
    with pytest.raises(UnknownModelError, match="energy-test-missing"):
        AutoModel.from_pretrained(config=EnergyVADConfig(), model_type="energy-test-missing")
    MODEL_CATALOG.register(SHADOW_ASR)
    with pytest.raises(ConfigError, match=r"disagrees with config\.model_type 'test_energy_vad'"):
        AutoModel.from_pretrained(config=EnergyVADConfig(), model_type="test_shadow_asr")


def test_saved_directory_dispatches_on_its_config_json(mean_square_kernel: Path, tmp_path: Path) -> None:
    _register_energy()
    model = AutoModelForVoiceActivityDetection.from_pretrained(
        mean_square_kernel, model_type="test_energy_vad", config=EnergyVADConfig(frame_samples=400), device="cpu"
    )
    expected = model.detect(SPEECH_WAV, threshold=2e-3)
    saved = model.save_pretrained(tmp_path / "saved")
    reloaded = AutoModel.from_pretrained(saved, device="cpu", lazy_load=False)
    assert type(reloaded) is EnergyVAD and reloaded.is_loaded
    got = reloaded.detect(SPEECH_WAV, threshold=2e-3)
    assert [s.start_sample for s in got.segments] == [s.start_sample for s in expected.segments]
    config = AutoConfig.from_pretrained(saved)
    assert config == EnergyVADConfig(frame_samples=400)
    with pytest.raises(TaskMismatchError, match="use AutoModelForVoiceActivityDetection"):
        AutoModelForSpeechRecognition.from_pretrained(saved)


def test_auto_config_for_model_builds_and_validates_fields() -> None:
    _register_energy()
    config = AutoConfig.for_model("Energy-Test", frame_samples=320)
    assert config == EnergyVADConfig(frame_samples=320)
    with pytest.raises(
        UnknownConfigKeyError, match=r"\['frame_size'\]; known keys are \['frame_samples', 'sample_rate'\]"
    ):
        AutoConfig.for_model("test_energy_vad", frame_size=320)
    with pytest.raises(ConfigError, match="frame_samples must be > 0"):
        AutoConfig.for_model("test_energy_vad", frame_samples=0)


def test_auto_config_from_pretrained_refuses_files_without_model_type(tmp_path: Path, mean_square_kernel: Path) -> None:
    _register_energy()
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "config.json").write_text(json.dumps({"sample_rate": 16000}))
    with pytest.raises(ConfigError, match="has no 'model_type'; pass model_type="):
        AutoConfig.from_pretrained(bare)
    assert AutoConfig.from_pretrained(bare, model_type="test_energy_vad") == EnergyVADConfig()
    with pytest.raises(ConfigError, match="is a weight file, not a config"):
        AutoConfig.from_pretrained(mean_square_kernel)
    (bare / "config.json").write_text(json.dumps({"model_type": "test_energy_vad", "frame": 1}))
    with pytest.raises(UnknownConfigKeyError, match="unknown key"):
        AutoConfig.from_pretrained(bare)


def test_task_default_is_used_without_source_or_type(mean_square_kernel: Path) -> None:
    spec = AutoModelForVoiceActivityDetection.resolve_spec(
        registry=_isolated_with_default(mean_square_kernel), model_type=None
    )
    assert spec.model_type == "test_energy_vad"


def _isolated_with_default(kernel: Path) -> ModelRegistry:
    registry = ModelRegistry()
    AutoModelForVoiceActivityDetection.register(
        EnergyVADConfig, EnergyVAD, default_model_path=str(kernel), default_for_task=True, registry=registry
    )
    return registry


def test_options_class_round_trip_is_closed() -> None:
    with pytest.raises(UnknownConfigKeyError, match="known keys are \\['min_gap_frames', 'threshold'\\]"):
        EnergyVADOptions.from_dict({"treshold": 0.1})


def test_malformed_device_or_dtype_fails_before_the_wrapper_is_imported(monkeypatch: pytest.MonkeyPatch) -> None:
    from voicehub.core import DeviceError

    monkeypatch.delitem(sys.modules, ASR_MODULE, raising=False)
    MODEL_CATALOG.register(SHADOW_ASR)
    with pytest.raises(DeviceError, match="unknown device 'gpu'"):
        AutoModel.from_pretrained(model_type="test_shadow_asr", device="gpu")
    with pytest.raises(DeviceError, match="unsupported dtype 'int3'"):
        AutoModel.from_pretrained(model_type="test_shadow_asr", dtype="int3")
    assert ASR_MODULE not in sys.modules


def test_task_factory_lists_only_its_own_task_for_an_unknown_model_type() -> None:
    from voicehub import AutoModelForSpeakerVerification, AutoModelForVoiceActivityDetection

    with pytest.raises(UnknownModelError) as info:
        AutoModelForVoiceActivityDetection.from_pretrained(model_type="nope")
    assert str(info.value) == "unknown vad model 'nope'; available: vad_silero, vad_webrtc"
    with pytest.raises(UnknownModelError, match=r"unknown sv model 'nope'; available: sv_ge2e, sv_xvector$"):
        AutoModelForSpeakerVerification.from_pretrained(model_type="nope")
    with pytest.raises(TaskMismatchError, match="use AutoModelForSpeakerVerification"):
        AutoModelForVoiceActivityDetection.from_pretrained(model_type="sv_ge2e")


def test_a_task_without_models_says_so_and_lists_the_tasks_that_have_some() -> None:
    from voicehub import pipeline
    from voicehub.errors import NoModelForTaskError
    from voicehub.registry import MODEL_CATALOG

    # Every task has a model now: take the only TTS model out for the duration of the test.
    assert [s.model_type for s in voicehub.list_model_specs("tts")] == ["tts_vits"]
    spec = MODEL_CATALOG.unregister("tts_vits")
    try:
        assert not voicehub.list_model_specs("tts")
        with pytest.raises(NoModelForTaskError) as info:
            pipeline("tts")
    finally:
        MODEL_CATALOG.register(spec)
    assert str(info.value).startswith("no text-to-speech model is registered yet; tasks with models: asr, sv, vad")
    assert isinstance(info.value, UnknownModelError) and info.value.tasks_with_models == ("asr", "sv", "vad")
    assert voicehub.get_model_spec("piper").model_type == "tts_vits"

"""Loading from foreign checkpoint directories, and errors that name the method called."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from voicehub.auto import AutoModelForSpeakerVerification
from voicehub.core.errors import ConfigError

DATA = Path(__file__).resolve().parents[3] / "tests" / "data"
WAV = DATA / "librivox" / "sense_and_sensibility_01_austen_64kb-0880.wav"


@pytest.mark.slow
def test_a_hyperion_encoder_directory_loads_as_sv_ge2e_with_the_same_embeddings(tmp_path: Path) -> None:
    default = AutoModelForSpeakerVerification.from_pretrained()
    default.load()
    default.runtime.module.save(
        tmp_path / "ge2e_dir"
    )  # Hyperion directory: config.json (class_name) + model.safetensors
    reloaded = AutoModelForSpeakerVerification.from_pretrained(tmp_path / "ge2e_dir", model_type="sv_ge2e")
    np.testing.assert_array_equal(reloaded.embed(WAV).embedding, default.embed(WAV).embedding)
    with pytest.raises(ConfigError, match="has no 'model_type'; pass model_type="):
        AutoModelForSpeakerVerification.from_pretrained(tmp_path / "ge2e_dir")


def test_verify_option_errors_name_verify() -> None:
    model = AutoModelForSpeakerVerification.from_pretrained()
    with pytest.raises(TypeError, match=r"verify\(\)"):
        model.verify(WAV, WAV, threshhold=0.5)


# --------------------------------------------------------------------------- upstream configs and hub ids
CLIP_0930 = DATA / "librivox" / "sense_and_sensibility_01_austen_64kb-0930.wav"
TEXT_0930 = "He might even have been made amiable himself."


def test_a_hub_id_of_shipped_weights_loads_them_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    from voicehub.auto import AutoModel
    from voicehub.models.asr_whisper.registration import BASE_SOURCE, DEFAULT_SOURCE

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # no network: the id must resolve to the wheel, not the Hub
    model = AutoModel.from_pretrained("openai/whisper-tiny.en", device="cpu", torch_dtype=torch.float32)
    assert (model.model_type, model.source) == ("asr_whisper", DEFAULT_SOURCE)
    assert model.transcribe(str(CLIP_0930)).text == TEXT_0930  # type: ignore[attr-defined]
    base = AutoModel.from_pretrained("hf:openai/whisper-base")
    assert (base.model_type, base.source) == ("asr_whisper_base", BASE_SOURCE)
    # asked for another revision or model: not the shipped weights, so not redirected
    assert AutoModel.resolve_spec("openai/whisper-tiny.en", model_type="asr_whisper_base").model_type == (
        "asr_whisper_base"
    )


def test_an_upstream_config_directory_picks_the_model_by_its_model_type_and_architectures(tmp_path: Path) -> None:
    import json

    from voicehub.auto import AutoModel, AutoModelForSpeechRecognition

    hf = tmp_path / "whisper-small"
    hf.mkdir()
    (hf / "config.json").write_text(json.dumps({"architectures": ["WhisperForConditionalGeneration"], "d_model": 768}))
    assert AutoModelForSpeechRecognition.resolve_spec(hf).model_type == "asr_whisper"  # by architectures alone
    (hf / "config.json").write_text(json.dumps({"model_type": "whisper", "d_model": 768, "vocab_size": 51865}))
    model = AutoModel.from_pretrained(hf, device="cpu")  # lazy: the upstream keys are the checkpoint's, not ours
    assert model.model_type == "asr_whisper" and model.config.extra_sources == ()
    assert str(model.source.to_string()) == f"file:{hf}"  # type: ignore[union-attr]
    # named from the file, never from the path: the same config under another name gives the same model
    renamed = tmp_path / "my-model"
    hf.rename(renamed)
    assert AutoModel.resolve_spec(renamed).model_type == "asr_whisper"
    (renamed / "config.json").write_text(json.dumps({"model_type": "wav2vec2", "architectures": ["Wav2Vec2ForCTC"]}))
    with pytest.raises(ConfigError, match=r"'wav2vec2'.*no registered model loads.*'whisper': 'asr_whisper'"):
        AutoModel.from_pretrained(renamed)


def test_a_saved_voicehub_directory_still_names_its_own_model(tmp_path: Path) -> None:
    from voicehub.auto import AutoModel
    from voicehub.models.asr_whisper.config import ASRWhisperConfig

    ASRWhisperConfig().save_pretrained(tmp_path)  # "type" + "model_type": VoiceHub's own config
    assert AutoModel.resolve_spec(tmp_path).model_type == "asr_whisper"


def test_torch_dtype_is_an_alias_of_dtype() -> None:
    import torch

    from voicehub.auto import AutoModelForSpeechRecognition
    from voicehub.models.asr_whisper.wrapper import WhisperASRModel

    model = AutoModelForSpeechRecognition.from_pretrained(device="cpu", torch_dtype=torch.bfloat16)
    assert model.dtype == torch.bfloat16  # before loading: the request
    assert AutoModelForSpeechRecognition.from_pretrained(dtype="float32", torch_dtype="float32").dtype == torch.float32
    assert WhisperASRModel.from_pretrained(torch_dtype="bfloat16").dtype == torch.bfloat16
    with pytest.raises(ConfigError, match="dtype='bfloat16' and torch_dtype='float32' disagree"):
        AutoModelForSpeechRecognition.from_pretrained(dtype="bfloat16", torch_dtype=torch.float32)


def test_to_moves_a_loaded_model_and_records_the_device_of_a_lazy_one() -> None:
    import torch

    from voicehub.auto import AutoModelForSpeechRecognition
    from voicehub.core import Device
    from voicehub.core.errors import DeviceError

    lazy = AutoModelForSpeechRecognition.from_pretrained(device="cuda")  # nothing checked or loaded yet
    assert lazy.to("cpu") is lazy and lazy.device == Device("cpu") and lazy.runtime is None
    lazy.load()
    assert lazy.device == Device("cpu") and lazy.dtype == torch.float32
    module = lazy.runtime.module  # type: ignore[union-attr]
    assert next(module.parameters()).device.type == "cpu"
    if not torch.cuda.is_available():
        with pytest.raises(DeviceError):
            lazy.to("cuda")
    assert lazy.device == Device("cpu") and lazy.to("cpu") is lazy
    assert lazy.transcribe(str(CLIP_0930)).text == TEXT_0930  # still usable where it is

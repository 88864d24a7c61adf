"""Native Silero VAD graph: parity with the upstream TorchScript model on real weights and real speech.

Weights: the v6 files inside the installed ``silero-vad==6.2.3`` wheel and the committed v5 files
(``tests/data/silero/v5``). Audio: ``tests/data/silero/test.wav`` (60 s of speech, 16 kHz) and the
LibriVox clips.
"""

from __future__ import annotations

import importlib.metadata
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file

from voicehub.architectures.errors import CheckpointMismatchError
from voicehub.architectures.silero import (
    CheckpointFormat,
    SileroConfig,
    SileroVAD,
    convert_state_dict,
    detect_format,
    load_silero_vad,
    read_tensors,
)
from voicehub.architectures.silero.model import BLOCK_NUM_CHUNKS
from voicehub.core import load_audio
from voicehub.core.errors import AudioError, CheckpointError, ConfigError, SampleRateError

pytestmark = pytest.mark.usefixtures("one_intra_op_thread")

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "tests" / "data"
SPEECH_60S = DATA / "silero" / "test.wav"
LIBRIVOX = sorted((DATA / "librivox").glob("*.wav"))


def _wheel_file(name: str) -> Path:
    return Path(str(importlib.metadata.distribution("silero-vad").locate_file(f"silero_vad/data/{name}")))


CHECKPOINTS = {"v5": DATA / "silero" / "v5" / "silero_vad.jit", "v6": _wheel_file("silero_vad.jit")}
SAFETENSORS_V6 = _wheel_file("silero_vad_16k.safetensors")


def _speech(sample_rate: int) -> torch.Tensor:
    return torch.from_numpy(load_audio(SPEECH_60S, target_sample_rate=sample_rate).samples)


def _upstream_probabilities(jit: torch.jit.ScriptModule, audio: torch.Tensor, sample_rate: int) -> np.ndarray:
    """The upstream loop of ``get_speech_timestamps``: one chunk per call, the last one zero-padded."""
    chunk = 512 if sample_rate == 16000 else 256
    jit.reset_states()
    out = []
    with torch.no_grad():
        for start in range(0, audio.shape[0], chunk):
            piece = audio[start : start + chunk]
            piece = torch.nn.functional.pad(piece, (0, chunk - piece.shape[0]))
            out.append(jit(piece, sample_rate).item())
    return np.asarray(out)


@pytest.fixture(scope="module", params=["v5", "v6"])
def pair(request: pytest.FixtureRequest) -> tuple[str, SileroVAD, torch.jit.ScriptModule]:
    path = CHECKPOINTS[request.param]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        jit = torch.jit.load(str(path), map_location="cpu")
    return request.param, load_silero_vad(path), jit


@pytest.mark.parametrize("sample_rate", [16000, 8000])
def test_silero_matches_upstream_torchscript_on_60s_speech_in_both_paths(
    pair: tuple[str, SileroVAD, torch.jit.ScriptModule], sample_rate: int
) -> None:
    version, native, jit = pair
    audio = _speech(sample_rate)
    reference = _upstream_probabilities(jit, audio, sample_rate)
    assert reference.shape == (1875,)
    assert native.config.model_version == version
    with torch.inference_mode():
        whole = native(audio, sample_rate).numpy()
        chunk = 512 if sample_rate == 16000 else 256
        padded = torch.nn.functional.pad(audio, (0, (-audio.shape[0]) % chunk))
        state = None
        streamed = []
        for start in range(0, padded.shape[0], chunk):
            probability, state = native.step(padded[start : start + chunk], sample_rate, state)
            streamed.append(float(probability))
    assert whole.shape == reference.shape
    assert np.abs(whole - reference).max() < 1e-5
    assert np.abs(np.asarray(streamed) - reference).max() < 1e-5
    # The file is mostly speech with pauses: both classes occur, so the comparison is not vacuous.
    assert 0.3 < (reference > 0.5).mean() < 0.95


def test_silero_batch_of_different_lengths_equals_one_by_one() -> None:
    model = load_silero_vad(CHECKPOINTS["v6"])
    clips = [torch.from_numpy(load_audio(path).samples) for path in LIBRIVOX[:3]]
    lengths = [clip.shape[0] for clip in clips]
    assert len(set(lengths)) == 3
    batch = torch.nn.utils.rnn.pad_sequence(clips, batch_first=True)
    with torch.inference_mode():
        together = model(batch, 16000)
        for index, clip in enumerate(clips):
            alone = model(clip, 16000)
            count = SileroVAD.num_chunks(lengths[index], 16000)
            assert alone.shape == (count,)
            torch.testing.assert_close(together[index, :count], alone, atol=1e-6, rtol=0)


@pytest.mark.parametrize("sample_rate", [16000, 8000])
def test_silero_long_input_in_bounded_blocks_equals_one_block(sample_rate: int) -> None:
    model = load_silero_vad(CHECKPOINTS["v6"])
    speech = _speech(sample_rate)[: sample_rate * 20 + 77]  # 20 s and a partial last chunk
    batch = torch.stack([speech, speech.flip(0)])
    count = SileroVAD.num_chunks(speech.shape[0], sample_rate)
    chunk = 512 * sample_rate // 16000
    with torch.inference_mode():
        whole = model(batch, sample_rate, block_num_chunks=count)
        for block in (1, 37, 256, count - 1):
            blocked = model(batch, sample_rate, block_num_chunks=block)
            assert blocked.shape == (2, count)
            torch.testing.assert_close(blocked, whole, atol=1e-6, rtol=0)
        streamed, _ = model.step_chunks(F.pad(speech, (0, count * chunk - speech.shape[0])), sample_rate)
    torch.testing.assert_close(model(speech, sample_rate, block_num_chunks=100), streamed, atol=1e-6, rtol=0)
    assert count > 100 and BLOCK_NUM_CHUNKS == 2048  # docs/vad.md states the default block (65.5 s at 16 kHz)
    longer = torch.cat([_speech(sample_rate), _speech(sample_rate).flip(0)])  # 120 s: the default runs 2 blocks
    longer_count = SileroVAD.num_chunks(longer.shape[0], sample_rate)
    assert BLOCK_NUM_CHUNKS < longer_count < 2 * BLOCK_NUM_CHUNKS
    with torch.inference_mode():
        torch.testing.assert_close(
            model(longer, sample_rate), model(longer, sample_rate, block_num_chunks=longer_count), atol=1e-6, rtol=0
        )
    with pytest.raises(AudioError, match="block_num_chunks: expected a positive int, got 0"):
        model(speech, sample_rate, block_num_chunks=0)


def test_silero_step_carries_state_across_a_batch_of_streams() -> None:
    model = load_silero_vad(CHECKPOINTS["v6"])
    audio = _speech(16000)[: 512 * 40]
    two = torch.stack([audio, audio.flip(0)])
    with torch.inference_mode():
        whole = model(two, 16000)
        state = None
        steps = []
        for start in range(0, two.shape[1], 512):
            probability, state = model.step(two[:, start : start + 512], 16000, state)
            steps.append(probability)
        grouped, state = [], None
        for start in range(0, two.shape[1], 512 * 8):  # 8, 8, 8, 8, 8 chunks per call
            probabilities, state = model.step_chunks(two[:, start : start + 512 * 8], 16000, state)
            grouped.append(probabilities)
    assert whole.shape == (2, 40)
    torch.testing.assert_close(torch.stack(steps, dim=1), whole, atol=1e-6, rtol=0)
    torch.testing.assert_close(torch.cat(grouped, dim=1), whole, atol=1e-6, rtol=0)
    with pytest.raises(AudioError, match="expected a multiple of 512 samples at 16000 Hz, got 1000"):
        model.step_chunks(two[:, :1000], 16000)


def test_silero_state_dict_round_trip_gives_identical_output(tmp_path: Path) -> None:
    model = load_silero_vad(CHECKPOINTS["v5"])
    save_file(model.state_dict(), str(tmp_path / "native.safetensors"))
    copy = SileroVAD(model.config)
    copy.load_state_dict(load_file(str(tmp_path / "native.safetensors")), strict=True)
    assert sorted(copy.state_dict()) == sorted(model.state_dict())
    assert len(model.state_dict()) == 30
    audio = _speech(8000)[:8000]
    with torch.inference_mode():
        assert torch.equal(copy.eval()(audio, 8000), model(audio, 8000))


def test_silero_safetensors_adapter_loads_16k_weights_that_differ_from_the_torchscript_branch() -> None:
    assert detect_format(SAFETENSORS_V6) is CheckpointFormat.SAFETENSORS
    assert detect_format(CHECKPOINTS["v6"]) is CheckpointFormat.TORCHSCRIPT
    model = load_silero_vad(SAFETENSORS_V6)
    assert model.config.sample_rates == (16000,)
    assert model.config.model_version == "v6"
    jit_model = load_silero_vad(CHECKPOINTS["v6"])
    key = "branches.16k.lstm.weight_ih_l0"
    assert not torch.equal(model.state_dict()[key], jit_model.state_dict()[key])
    # Sane on real speech: LibriVox clips are read speech with short leading/trailing pauses.
    with torch.inference_mode():
        for path in LIBRIVOX:
            probabilities = model(torch.from_numpy(load_audio(path).samples), 16000)
            assert (probabilities > 0.5).float().mean() > 0.6, path.name
        silence = model(torch.zeros(16000 * 2), 16000)
    assert float(silence.max()) < 0.1
    with pytest.raises(SampleRateError, match=r"\[16000\] Hz, got 8000"):
        model(torch.zeros(800), 8000)


def test_silero_adapter_reports_missing_unexpected_and_misshaped_tensors_before_loading() -> None:
    tensors = read_tensors(CHECKPOINTS["v6"], "torchscript")
    config = SileroConfig()
    tensors.pop("_model_8k.decoder.rnn.bias_hh")
    tensors["_model.extra"] = torch.zeros(3)
    tensors["_model.encoder.2.reparam_conv.weight"] = torch.zeros(64, 64, 5)
    with pytest.raises(CheckpointMismatchError) as caught:
        convert_state_dict(tensors, config, "torchscript", path="x.jit")
    error = caught.value
    assert error.missing == ("_model_8k.decoder.rnn.bias_hh",)
    assert error.unexpected == ("_model.extra",)
    assert error.mismatched == (("_model.encoder.2.reparam_conv.weight", (64, 64, 3), (64, 64, 5)),)
    assert "x.jit" in str(error) and "expected [64, 64, 3], got [64, 64, 5]" in str(error)

    safetensors = load_file(str(SAFETENSORS_V6))
    safetensors["conv9.weight"] = safetensors.pop("conv4.weight")
    with pytest.raises(CheckpointMismatchError, match=r"missing \['conv4.weight'\]; unexpected \['conv9.weight'\]"):
        convert_state_dict(safetensors, SileroConfig(sample_rates=(16000,)), "safetensors")
    with pytest.raises(CheckpointError, match="16 kHz branch only"):
        convert_state_dict(safetensors, SileroConfig(), "safetensors")


def test_silero_loader_refuses_a_16k_only_config_for_the_merged_file_and_non_checkpoints(tmp_path: Path) -> None:
    with pytest.raises(CheckpointMismatchError) as caught:
        load_silero_vad(CHECKPOINTS["v6"], config=SileroConfig(sample_rates=(16000,)))
    assert len(caught.value.unexpected) == 15 and all(n.startswith("_model_8k.") for n in caught.value.unexpected)
    text = tmp_path / "notes.jit"
    text.write_text("not a model")
    with pytest.raises(CheckpointError, match="not a Silero VAD checkpoint"):
        load_silero_vad(text)
    broken = tmp_path / "broken.jit"
    shutil.copy(CHECKPOINTS["v5"], broken)
    with broken.open("r+b") as handle:
        handle.truncate(4096)
    with pytest.raises(CheckpointError):
        load_silero_vad(broken)


def test_silero_rejects_bad_inputs_with_the_expected_shape_in_the_message() -> None:
    model = load_silero_vad(CHECKPOINTS["v6"])
    with pytest.raises(AudioError, match=r"expected 512 samples at 16000 Hz, got 500"):
        model.step(torch.zeros(500), 16000)
    with pytest.raises(AudioError, match=r"got shape \(0,\)"):
        model(torch.zeros(0), 16000)
    with pytest.raises(AudioError, match=r"got shape \(1, 2, 3\)"):
        model(torch.zeros(1, 2, 3), 16000)
    with pytest.raises(SampleRateError, match="got 44100 Hz; resample"):
        model(torch.zeros(44100), 44100)
    _, state = model.step(torch.zeros(2, 512), 16000)
    with pytest.raises(AudioError, match="start a new state"):
        model.step(torch.zeros(3, 512), 16000, state)


@pytest.mark.parametrize(
    ("changes", "key"),
    [
        ({"sample_rates": (22050,)}, "sample_rates"),
        ({"sample_rates": ()}, "sample_rates"),
        ({"hidden_size": 0}, "hidden_size"),
        ({"encoder_strides": (1, 2, 2)}, "encoder_channels"),
        ({"model_version": "v4"}, "model_version"),
    ],
)
def test_silero_config_rejects_invalid_values(changes: dict[str, object], key: str) -> None:
    with pytest.raises(ConfigError) as caught:
        SileroConfig(**changes)  # type: ignore[arg-type]
    assert caught.value.key == key


def test_silero_registration_and_catalog_import_no_torch() -> None:
    code = (
        "import sys\n"
        "from voicehub.registry import ArchitectureRegistry\n"
        "from voicehub.architectures import BUILTIN_ARCHITECTURES\n"
        "reference = 'voicehub.architectures.silero.registration:ARCHITECTURE'\n"
        "assert reference in BUILTIN_ARCHITECTURES\n"
        "(spec,) = ArchitectureRegistry().load_references([reference])\n"
        "assert 'torch' not in sys.modules, 'torch imported'\n"
        "print(spec.architecture_id, spec.sample_rates, spec.supports(feature='8khz', task='vad'), spec.aliases)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.split("\n")[0] == "silero (16000, 8000) True ('silero-vad',)"


def test_silero_config_round_trips_through_strict_json() -> None:
    config = SileroConfig(model_version="v5", sample_rates=(8000,))
    assert SileroConfig.from_json(config.to_json()) == config
    assert SileroConfig.from_dict(config.to_dict()).sample_rates == (8000,)

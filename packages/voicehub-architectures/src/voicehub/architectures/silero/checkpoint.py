"""Checkpoint adapters: upstream Silero VAD files -> the native :class:`SileroVAD` state dict.

Two upstream formats (silero-vad 5.1.2 and 6.2.3 wheels, ``silero_vad/data/``, MIT):

* ``silero_vad.jit``, TorchScript: the merged model, 30 tensors, ``_model.*`` (16 kHz) and
  ``_model_8k.*`` (8 kHz), e.g. ``_model.encoder.0.reparam_conv.weight``,
  ``_model.decoder.rnn.weight_ih`` (an ``LSTMCell``), ``_model.decoder.decoder.2.weight`` (the head).
* ``silero_vad_16k.safetensors`` (v6 wheel only): 16 kHz only, 15 tensors named ``stft_conv``,
  ``conv1``..``conv4``, ``lstm_cell``, ``final_conv``. Its weights differ from the TorchScript
  file's 16 kHz branch (it is a separate export), so it is loaded as its own model.

Conversion is strict: every native tensor must come from exactly one checkpoint tensor of the
same shape, and every checkpoint tensor must be used. All problems are collected and raised
together as :class:`~voicehub.core.errors.CheckpointMismatchError` before the model is touched
(:func:`voicehub.core.checkpoint.check_state_dict`).
"""

from __future__ import annotations

import enum
import hashlib
import os
import warnings
import zipfile
from collections.abc import Mapping
from pathlib import Path

import torch
from torch import Tensor

from voicehub.architectures.silero.config import SileroConfig, branch_name
from voicehub.architectures.silero.model import SileroVAD
from voicehub.core.checkpoint import check_state_dict, check_tensor_values, read_safetensors
from voicehub.core.errors import CheckpointError


class CheckpointFormat(enum.StrEnum):
    """The upstream file formats the adapters read."""

    TORCHSCRIPT = "torchscript"
    SAFETENSORS = "safetensors"


KNOWN_CHECKPOINTS: Mapping[str, tuple[str, str]] = {
    "85c48e1f0ecb604e5d2a268f3ccfb912d4f7e935acdc86af5a3fc5b0aea7b29a": ("v5", "silero-vad 5.1.2 silero_vad.jit"),
    "e1122837f4154c511485fe0b9c64455f7b929c96fbb8d79fbdb336383ebd3720": ("v6", "silero-vad 6.2.3 silero_vad.jit"),
    "c59271c284ae9c8335d795d60e0bfdb71aaaceec578d9bd9ffc1b8153c319ea1": (
        "v6",
        "silero-vad 6.2.3 silero_vad_16k.safetensors",
    ),
}
"""SHA-256 of the released files -> (model version, provenance)."""

_TORCHSCRIPT_PREFIX = {16000: "_model.", 8000: "_model_8k."}
_LSTM_PARAMETERS = ("weight_ih", "weight_hh", "bias_ih", "bias_hh")


def _branch_rules(config: SileroConfig, sample_rate: int, source_format: CheckpointFormat) -> dict[str, str]:
    """Native name -> checkpoint name for one branch."""
    native = f"branches.{branch_name(sample_rate)}."
    rules: dict[str, str] = {}
    if source_format is CheckpointFormat.TORCHSCRIPT:
        source = _TORCHSCRIPT_PREFIX[sample_rate]
        rules[native + "stft_basis"] = source + "stft.forward_basis_buffer"
        for index in range(len(config.encoder_channels)):
            for kind in ("weight", "bias"):
                rules[f"{native}encoder.{index}.{kind}"] = f"{source}encoder.{index}.reparam_conv.{kind}"
        for name in _LSTM_PARAMETERS:
            rules[f"{native}lstm.{name}_l0"] = f"{source}decoder.rnn.{name}"
        for kind in ("weight", "bias"):
            rules[f"{native}head.{kind}"] = f"{source}decoder.decoder.2.{kind}"
    else:
        rules[native + "stft_basis"] = "stft_conv.weight"
        for index in range(len(config.encoder_channels)):
            for kind in ("weight", "bias"):
                rules[f"{native}encoder.{index}.{kind}"] = f"conv{index + 1}.{kind}"
        for name in _LSTM_PARAMETERS:
            rules[f"{native}lstm.{name}_l0"] = f"lstm_cell.{name}"
        for kind in ("weight", "bias"):
            rules[f"{native}head.{kind}"] = f"final_conv.{kind}"
    return rules


def tensor_rules(config: SileroConfig, source_format: CheckpointFormat | str) -> dict[str, str]:
    """The explicit renaming plan: native state-dict name -> checkpoint tensor name (tensors are copied as is).

    Raises:
        CheckpointError: when the safetensors format is asked for a config with an 8 kHz branch
            (the upstream safetensors file has none).
    """
    fmt = CheckpointFormat(source_format)
    if fmt is CheckpointFormat.SAFETENSORS and config.sample_rates != (16000,):
        raise CheckpointError(
            f"the Silero VAD safetensors file holds the 16 kHz branch only; use a config with "
            f"sample_rates=(16000,), got {list(config.sample_rates)}"
        )
    rules: dict[str, str] = {}
    for rate in config.sample_rates:
        rules.update(_branch_rules(config, rate, fmt))
    return rules


def expected_shapes(config: SileroConfig) -> dict[str, tuple[int, ...]]:
    """Native state-dict name -> shape, from a graph built on the meta device (no memory)."""
    with torch.device("meta"):
        model = SileroVAD(config)
    return {name: tuple(tensor.shape) for name, tensor in model.state_dict().items()}


def convert_state_dict(
    tensors: Mapping[str, Tensor],
    config: SileroConfig,
    source_format: CheckpointFormat | str,
    *,
    path: str | os.PathLike[str] | None = None,
) -> dict[str, Tensor]:
    """Rename upstream tensors to the native state dict, strictly.

    Args:
        tensors: the checkpoint's tensors by upstream name.
        config: the native graph they are meant for.
        source_format: which upstream naming ``tensors`` follows.
        path: the file they came from, for messages.

    Returns:
        A state dict that :meth:`SileroVAD.load_state_dict` accepts with ``strict=True``.

    Raises:
        CheckpointMismatchError: listing every missing, unexpected and mis-shaped tensor.
        CheckpointError: for NaN or infinite values, or an integer tensor (every Silero weight is
            floating point), checked before the float32 conversion.
    """
    rules = tensor_rules(config, source_format)
    shapes = expected_shapes(config)
    if set(rules) != set(shapes):  # the plan must cover the graph exactly; a bug here is ours, not the file's
        raise CheckpointError(f"internal: Silero VAD tensor plan does not cover {sorted(set(shapes) ^ set(rules))}")
    check_state_dict(
        tensors,
        {source: shapes[native] for native, source in rules.items()},
        what=f"Silero VAD {CheckpointFormat(source_format).value} checkpoint for sample rates "
        f"{list(config.sample_rates)}",
        source=path,
    )
    out = {native: tensors[source].detach().to(torch.float32).clone() for native, source in rules.items()}
    check_tensor_values(
        {source: tensors[source] for source in rules.values() if source in tensors},
        source=path if path is not None else "Silero VAD checkpoint",
        floating=rules.values(),
    )
    return out


def detect_format(path: str | os.PathLike[str]) -> CheckpointFormat:
    """Tell the format from the file's content (a TorchScript zip archive or a safetensors header).

    Raises:
        CheckpointError: for a missing file or any other content.
    """
    file = Path(path)
    if not file.is_file():
        raise CheckpointError(f"{file}: no such checkpoint file", path=file)
    with file.open("rb") as handle:
        head = handle.read(9)
    if zipfile.is_zipfile(file):
        return CheckpointFormat.TORCHSCRIPT
    if len(head) == 9 and head[8:9] == b"{" and int.from_bytes(head[:8], "little") < file.stat().st_size:
        return CheckpointFormat.SAFETENSORS
    raise CheckpointError(
        f"{file}: not a Silero VAD checkpoint; expected the upstream TorchScript file (silero_vad.jit) "
        f"or safetensors file (silero_vad_16k.safetensors)",
        path=file,
    )


def read_tensors(path: str | os.PathLike[str], source_format: CheckpointFormat | str) -> dict[str, Tensor]:
    """Read every tensor of an upstream file onto the CPU.

    Raises:
        CheckpointError: naming the file when it cannot be read in that format.
    """
    fmt = CheckpointFormat(source_format)
    try:
        if fmt is CheckpointFormat.TORCHSCRIPT:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FutureWarning)  # torch.jit.load's deprecation notice
                module = torch.jit.load(os.fspath(path), map_location="cpu")  # type: ignore[no-untyped-call]
            return {name: tensor.detach() for name, tensor in module.state_dict().items()}
        return read_safetensors(path)[0]
    except (RuntimeError, ValueError, OSError) as err:
        raise CheckpointError(f"{path}: cannot read as a {fmt.value} checkpoint ({err})", path=Path(path)) from err


def config_for_checkpoint(
    tensors: Mapping[str, Tensor], source_format: CheckpointFormat | str, *, model_version: str = "v6"
) -> SileroConfig:
    """The config matching a checkpoint: both rates for a TorchScript file that has ``_model_8k``, else 16 kHz."""
    fmt = CheckpointFormat(source_format)
    rates: tuple[int, ...] = (16000,)
    if fmt is CheckpointFormat.TORCHSCRIPT and any(name.startswith(_TORCHSCRIPT_PREFIX[8000]) for name in tensors):
        rates = (16000, 8000)
    if model_version not in ("v5", "v6"):
        raise CheckpointError(f"model_version must be 'v5' or 'v6', got {model_version!r}")
    return SileroConfig(model_version="v5" if model_version == "v5" else "v6", sample_rates=rates)


def load_silero_vad(
    path: str | os.PathLike[str],
    *,
    config: SileroConfig | None = None,
    model_version: str | None = None,
    source_format: CheckpointFormat | str | None = None,
) -> SileroVAD:
    """Build a native Silero VAD from an upstream checkpoint file, in eval mode on the CPU.

    Args:
        path: ``silero_vad.jit`` (TorchScript, 16 and 8 kHz) or ``silero_vad_16k.safetensors``.
        config: the graph to load into; by default derived from the file (rates present).
        model_version: ``"v5"`` or ``"v6"`` for the config; by default looked up from the file's
            SHA-256 among the released files, else ``"v6"``.
        source_format: the file's format; by default detected from its content.

    Returns:
        The loaded model.

    Raises:
        CheckpointError: for an unreadable or unrecognised file.
        CheckpointMismatchError: when the tensors do not fit the graph (nothing is loaded).
    """
    fmt = CheckpointFormat(source_format) if source_format is not None else detect_format(path)
    tensors = read_tensors(path, fmt)
    if config is None:
        if model_version is None:
            digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
            model_version = KNOWN_CHECKPOINTS.get(digest, ("v6", ""))[0]
        config = config_for_checkpoint(tensors, fmt, model_version=model_version)
    state = convert_state_dict(tensors, config, fmt, path=path)
    model = SileroVAD(config)
    check_tensor_values(state, source=path, expected=model.state_dict())
    model.load_state_dict(state, strict=True)
    return model.eval()


__all__ = [
    "KNOWN_CHECKPOINTS",
    "CheckpointFormat",
    "config_for_checkpoint",
    "convert_state_dict",
    "detect_format",
    "expected_shapes",
    "load_silero_vad",
    "read_tensors",
    "tensor_rules",
]

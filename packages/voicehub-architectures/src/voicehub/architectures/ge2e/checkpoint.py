"""Checkpoint adapter: ``resemblyzer`` 0.1.4's ``pretrained.pt`` -> :class:`GE2ESpeakerEncoder`.

The upstream file (17 MB, SHA-256 ``39373b86...f134e``) is a ``torch.save`` dict
``{"step": int, "model_state": OrderedDict, "optimizer_state": dict}``; ``model_state`` holds
``similarity_weight`` (1,), ``similarity_bias`` (1,), ``lstm.{weight_ih,weight_hh,bias_ih,bias_hh}_l{0,1,2}``
(gates 4 x 256 = 1024 rows; inputs 40 for layer 0, 256 above) and ``linear.weight`` (256, 256),
``linear.bias`` (256,). The native graph uses the same tensor names, so the adapter is a strict
name-and-shape check followed by ``load_state_dict``. The file is read with
``torch.load(weights_only=True)``; the optimizer state is ignored.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import pickle
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from voicehub.architectures.errors import CheckpointMismatchError
from voicehub.architectures.ge2e.config import GE2EConfig
from voicehub.architectures.ge2e.model import GE2ESpeakerEncoder
from voicehub.core import CheckpointError
from voicehub.core.checkpoint import check_tensor_values

RESEMBLYZER_VERSION = "0.1.4"
"""The ``resemblyzer`` release the weights come from (its ``resemblyzer/pretrained.pt``)."""
RESEMBLYZER_SHA256 = "39373b86598fa3da9fcddee6142382efe09777e8d37dc9c0561f41f0070f134e"
"""SHA-256 of ``pretrained.pt`` in the ``resemblyzer==0.1.4`` wheel."""
WEIGHTS_DISTRIBUTION = "voicehub-ge2e-weights"
"""The distribution that ships that file byte-identical (the VoiceHub repository's ``weights/`` member).

``resemblyzer`` itself is not used: installing it builds the ``webrtcvad`` sdist, which breaks
``import webrtcvad``.
"""
WEIGHTS_PATH = "voicehub_ge2e_weights/pretrained.pt"
"""Path of the weights inside the installed :data:`WEIGHTS_DISTRIBUTION`."""
WEIGHTS_INSTALL_HINT = (
    f"uv build --package {WEIGHTS_DISTRIBUTION} --out-dir dist && pip install dist/voicehub_ge2e_weights-*.whl "
    f"(in a VoiceHub checkout; it is a dependency of the voicehub wheel and `uv sync` installs it)"
)
"""A command that installs :data:`WEIGHTS_DISTRIBUTION` (it is built from the repository, not on PyPI)."""


def locate_resemblyzer_weights() -> Path:
    """Find resemblyzer 0.1.4's ``pretrained.pt`` in the installed ``voicehub-ge2e-weights`` distribution.

    The package is not imported; the file's SHA-256 must be :data:`RESEMBLYZER_SHA256`.

    Returns:
        The path of the file.

    Raises:
        CheckpointError: when the distribution or the file is missing, with the install command,
            or when the file is not the released one.
    """
    hint = f"install it with: {WEIGHTS_INSTALL_HINT}; or pass the path of a GE2E checkpoint"
    try:
        dist = importlib.metadata.distribution(WEIGHTS_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError as err:
        raise CheckpointError(
            f"the GE2E weights come from the {WEIGHTS_DISTRIBUTION!r} distribution, which is not installed; {hint}"
        ) from err
    path = Path(str(dist.locate_file(WEIGHTS_PATH)))
    if not path.is_file():
        raise CheckpointError(f"{path}: not found in the installed {WEIGHTS_DISTRIBUTION} {dist.version}; {hint}")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != RESEMBLYZER_SHA256:
        raise CheckpointError(
            f"{path}: sha256 {digest}, expected {RESEMBLYZER_SHA256} (resemblyzer {RESEMBLYZER_VERSION}'s "
            f"pretrained.pt); the installed {WEIGHTS_DISTRIBUTION} is damaged; reinstall it: {WEIGHTS_INSTALL_HINT}",
            path=path,
        )
    return path


def read_resemblyzer_state_dict(path: str | os.PathLike[str]) -> dict[str, torch.Tensor]:
    """Read the ``model_state`` tensors of a resemblyzer-format file (``weights_only=True``).

    Raises:
        CheckpointError: naming the file when it is unreadable, pickles other objects, or has no
            ``model_state`` dict of tensors.
    """
    file = Path(path)
    if not file.is_file():
        raise CheckpointError(f"{file}: no such GE2E checkpoint file", path=file)
    try:
        payload: Any = torch.load(file, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as err:
        raise CheckpointError(
            f"{file}: refused to unpickle objects other than tensors and plain containers "
            f"(read with torch.load(weights_only=True)): {str(err).splitlines()[0]}",
            path=file,
        ) from err
    except (RuntimeError, EOFError, OSError, zipfile.BadZipFile, ValueError) as err:
        raise CheckpointError(f"{file}: not a PyTorch checkpoint ({err})", path=file) from err
    state = payload.get("model_state") if isinstance(payload, Mapping) else None
    if not isinstance(state, Mapping) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        found = sorted(map(str, payload)) if isinstance(payload, Mapping) else type(payload).__name__
        raise CheckpointError(
            f"{file}: not a resemblyzer checkpoint: expected a dict with a 'model_state' dict of tensors, "
            f"found {found}",
            path=file,
        )
    return {str(k): v for k, v in state.items()}


def check_state_dict(model: GE2ESpeakerEncoder, state: Mapping[str, torch.Tensor], *, source: str) -> None:
    """Check tensor names and shapes against ``model``; list every problem at once.

    Raises:
        CheckpointMismatchError: naming ``source``, the missing, unexpected and mis-shaped tensors.
    """
    expected = model.state_dict()
    missing = sorted(set(expected) - set(state))
    unexpected = sorted(set(state) - set(expected))
    mismatched = [
        (key, tuple(expected[key].shape), tuple(state[key].shape))
        for key in sorted(set(expected) & set(state))
        if expected[key].shape != state[key].shape
    ]
    if missing or unexpected or mismatched:
        parts = [f"{k}: expected {e}, found {f}" for k, e, f in mismatched]
        parts += [f"missing {k}" for k in missing] + [f"unexpected {k}" for k in unexpected]
        raise CheckpointMismatchError(
            f"{source}: does not fit GE2ESpeakerEncoder({model.config.frontend.num_mel_bins} mels, "
            f"hidden {model.config.hidden_size}, {model.config.num_layers} layers, "
            f"embedding {model.config.embedding_dim}): {'; '.join(parts)}",
            path=source,
            missing=missing,
            unexpected=unexpected,
            mismatched=mismatched,
        )


def load_resemblyzer_checkpoint(
    path: str | os.PathLike[str] | None = None,
    *,
    config: GE2EConfig | None = None,
    map_location: str | torch.device = "cpu",
) -> GE2ESpeakerEncoder:
    """Build a :class:`GE2ESpeakerEncoder` from a resemblyzer-format checkpoint.

    Args:
        path: the ``.pt`` file; ``None`` uses ``pretrained.pt`` of the installed ``voicehub-ge2e-weights``.
        config: the encoder config (defaults match the pretrained model).
        map_location: device of the returned model.

    Returns:
        The model in eval mode.

    Raises:
        CheckpointError: the file is missing or not a resemblyzer checkpoint (see
            :func:`locate_resemblyzer_weights` for the install hint).
        CheckpointMismatchError: the tensors do not fit ``config``; checked before loading.
    """
    file = Path(path) if path is not None else locate_resemblyzer_weights()
    state = read_resemblyzer_state_dict(file)
    model = GE2ESpeakerEncoder(config)
    check_state_dict(model, state, source=str(file))
    check_tensor_values(state, source=file, expected=model.state_dict())
    model.load_state_dict(state, strict=True)
    return model.eval().to(map_location)


__all__ = [
    "RESEMBLYZER_SHA256",
    "RESEMBLYZER_VERSION",
    "WEIGHTS_DISTRIBUTION",
    "WEIGHTS_INSTALL_HINT",
    "WEIGHTS_PATH",
    "check_state_dict",
    "load_resemblyzer_checkpoint",
    "locate_resemblyzer_weights",
    "read_resemblyzer_state_dict",
]

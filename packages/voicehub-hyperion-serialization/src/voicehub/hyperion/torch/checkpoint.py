"""Reading and writing Hyperion PyTorch checkpoints.

Two on-disk forms, both holding the same two things (Hyperion's ``HyperTorchModel`` contract):

* **single file** (``.pth`` / ``.pt``), the legacy Hyperion format: ``torch.save`` of a dict
  ``{"model_cfg": <get_config()>, "model_state_dict": <state_dict()>}``. VoiceHub adds two
  top-level keys Hyperion ignores: ``class_path`` (``"module:Class"``) and ``package_version``.
  Files are read with ``torch.load(weights_only=True)`` only, so a file that pickles arbitrary
  Python objects is refused (CVE-2025-32434 class of attacks); a caller who trusts specific
  classes lists them in ``safe_globals`` (torch's allow-list), never a blanket opt-out.
* **directory**: ``config.json`` (the ``model_cfg`` as strict JSON) and ``model.safetensors``
  (every tensor detached, contiguous and cloned, so tied storages are written separately;
  metadata ``class_name``, ``class_path``, ``package_version``). No pickle at all.

Normalization on read (upstream defects fixed; ``docs/hyperion.md``, "Upstream defects fixed"):
``module.`` prefixes from DDP / DataParallel / ``AveragedModel`` are stripped **per key**
(upstream looked at the first key only) and a collision after stripping is an error; the SWA
counter ``n_averaged`` is dropped only when it sits beside ``module.``-prefixed keys, i.e.
in an ``AveragedModel`` checkpoint.
"""

from __future__ import annotations

import argparse
import dataclasses
import enum
import os
import pickle
import re
import struct
import zipfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import torch

from voicehub.core import StrictJSONError, strict_json
from voicehub.core.checkpoint import read_safetensors
from voicehub.core.errors import CheckpointError, OutputPathError
from voicehub.core.files import CONFIG_FILE_NAME, WEIGHTS_FILE_NAME, atomic_write, write_directory, write_text_atomic
from voicehub.hyperion.errors import HyperionFileError, UnsafeFormatError

SINGLE_FILE_SUFFIXES = (".pth", ".pt")
"""Suffixes that select the legacy single-file format in ``save``."""

_MODULE_PREFIX = re.compile(r"^(?:module\.)+")
_SWA_COUNTER = "n_averaged"


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class RawCheckpoint:
    """What a checkpoint file holds, before any class is built.

    Attributes:
        model_cfg: the saved ``get_config()`` dict, converted to plain JSON values.
        state_dict: tensor name -> tensor, ``module.`` prefixes and SWA counter removed.
        source: the path read, for messages.
        class_path: ``"module:Class"`` recorded by VoiceHub, ``None`` for files from elsewhere.
        package_version: the writer's package version, when recorded.
        train_mode: the model's training mode when saved (``"full"``, ``"ft-embed-affine"``...),
            ``None`` for files that do not record it (Hyperion's own: read as ``"full"``).
    """

    model_cfg: dict[str, Any]
    state_dict: dict[str, torch.Tensor]
    source: str
    class_path: str | None = None
    package_version: str | None = None
    train_mode: str | None = None


# --------------------------------------------------------------------------- writing
def save_single_file(
    path: Path,
    model_cfg: Mapping[str, Any],
    state_dict: Mapping[str, torch.Tensor],
    *,
    class_path: str,
    package_version: str,
    train_mode: str = "full",
) -> Path:
    """Write the legacy single-file format atomically (temporary file, then rename).

    Args:
        path: destination ``.pth`` / ``.pt`` file; parent directories are created.
        model_cfg: strict-JSON config dict including ``class_name``.
        state_dict: tensors to store (moved to the CPU first).
        class_path: ``"module:Class"`` of the model class.
        package_version: version string of the writing package.
        train_mode: the model's training mode, restored on load.

    Returns:
        ``path``.

    Raises:
        HyperionFileError: naming ``path`` when it cannot be written (a directory, a file among its
            parents, an unwritable directory, a full disk); the old file, if any, is kept.
    """
    payload = {
        "model_cfg": dict(model_cfg),
        "model_state_dict": {k: v.detach().cpu() for k, v in state_dict.items()},
        "class_path": class_path,
        "package_version": package_version,
        "train_mode": train_mode,
    }
    try:
        atomic_write(path, lambda tmp: torch.save(payload, tmp), what="checkpoint")
    except OutputPathError as err:
        raise HyperionFileError(str(err), path=path) from err
    return path


def save_directory(
    path: Path,
    model_cfg: Mapping[str, Any],
    state_dict: Mapping[str, torch.Tensor],
    *,
    class_path: str,
    package_version: str,
    train_mode: str = "full",
) -> Path:
    """Write ``config.json`` + ``model.safetensors`` into ``path`` as one transaction.

    The files are written into a staging directory beside ``path`` and moved in with
    :func:`voicehub.core.files.write_directory` (merged into an existing directory, whose other
    files are kept; ``config.json`` is moved last, so a reader never sees a config naming
    tensors that are not there yet). The path is checked before anything is written; a failure
    leaves ``path`` as it was and removes the parents it created.

    Returns:
        ``path`` (``~`` expanded).

    Raises:
        HyperionFileError: naming ``path`` when it is a file, lies under a file, or cannot be
            written; nothing new is left behind.
        StrictJSONError: for a ``model_cfg`` that is not strict JSON (before anything is written).
    """
    from safetensors.torch import save_file

    config_text = strict_json.dumps(dict(model_cfg), indent=2) + "\n"
    tensors = {k: v.detach().cpu().contiguous().clone() for k, v in state_dict.items()}
    metadata = {
        "format": "pt",
        "class_name": str(model_cfg.get("class_name", "")),
        "class_path": class_path,
        "package_version": package_version,
        "train_mode": train_mode,
    }

    def write(staging: Path) -> None:
        save_file(tensors, str(staging / WEIGHTS_FILE_NAME), metadata=metadata)
        write_text_atomic(staging / CONFIG_FILE_NAME, config_text, what="config", create_parents=False)

    try:
        return write_directory(path, write, what="checkpoint directory")
    except OutputPathError as err:
        raise HyperionFileError(str(err), path=path) from err


# --------------------------------------------------------------------------- reading
def read_checkpoint(
    path: str | os.PathLike[str],
    *,
    map_location: str | torch.device = "cpu",
    safe_globals: Iterable[Any] = (),
    model_name: str = "model",
) -> RawCheckpoint:
    """Read either checkpoint form without building a model.

    Args:
        path: a directory (``config.json`` + ``model.safetensors``) or a ``.pth`` file.
        map_location: device the tensors are loaded to; the CPU by default, so a file saved on
            a GPU loads on a CPU-only machine.
        safe_globals: classes or functions a *trusted* legacy file may reference, passed to
            ``torch.serialization.safe_globals``; loading stays ``weights_only=True``.
        model_name: the state-dict key is ``f"{model_name}_state_dict"`` (Hyperion convention).

    Returns:
        The normalized :class:`RawCheckpoint`.

    Raises:
        HyperionFileError: naming the file, when it is missing, not a checkpoint, lacks
            ``model_cfg`` / the state dict, or holds keys that collide once ``module.`` prefixes are removed.
        UnsafeFormatError: a legacy file pickles a global that is not in ``safe_globals``.
    """
    source = Path(path)
    if source.is_dir():
        return _read_directory(source, map_location)
    if not source.exists():
        raise HyperionFileError(
            f"{source}: no such checkpoint; expected a .pth file or a directory with {CONFIG_FILE_NAME} "
            f"and {WEIGHTS_FILE_NAME}",
            path=source,
        )
    return _read_single_file(source, map_location, tuple(safe_globals), model_name)


def _read_directory(path: Path, map_location: str | torch.device) -> RawCheckpoint:
    config_file, weights_file = path / CONFIG_FILE_NAME, path / WEIGHTS_FILE_NAME
    if not config_file.is_file() and not weights_file.is_file():
        found = sorted(item.name for item in path.iterdir() if not item.name.startswith("."))[:6]
        held = f"it holds {', '.join(found)}{' ...' if len(found) == 6 else ''}" if found else "it is empty"
        raise HyperionFileError(
            f"{path}: a directory that is not a torch checkpoint ({held}); a checkpoint directory holds "
            f"{CONFIG_FILE_NAME} and {WEIGHTS_FILE_NAME}; otherwise pass a .pth file",
            path=path,
        )
    for file in (config_file, weights_file):
        if not file.is_file():
            raise HyperionFileError(
                f"{file}: missing; a directory checkpoint holds {CONFIG_FILE_NAME} and {WEIGHTS_FILE_NAME}",
                path=file,
            )
    try:
        cfg = strict_json.loads(config_file.read_text(encoding="utf-8"))
    except (StrictJSONError, ValueError, UnicodeDecodeError) as err:
        raise HyperionFileError(f"{config_file}: not a strict-JSON model config ({err})", path=config_file) from err
    if not isinstance(cfg, dict):
        raise HyperionFileError(f"{config_file}: expected a JSON object, got {type(cfg).__name__}", path=config_file)
    try:
        tensors, metadata = read_safetensors(weights_file, device=str(map_location))
    except CheckpointError as err:
        raise HyperionFileError(str(err), path=weights_file) from err
    return RawCheckpoint(
        model_cfg=cfg,
        state_dict=normalize_state_dict(tensors, source=str(weights_file)),
        source=str(path),
        class_path=metadata.get("class_path") or None,
        package_version=metadata.get("package_version") or None,
        train_mode=metadata.get("train_mode") or None,
    )


_ZIP_MAGIC = b"PK\x03\x04"  # torch.save since PyTorch 1.6 (a zip archive holding data.pkl)
_PICKLE_PROTO = b"\x80"  # the legacy torch.save format: pickles with protocol >= 2
_HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
_HDF5_OFFSETS = (0, 512, 1024, 2048)  # where the HDF5 superblock may start (user block sizes)
_AUDIO_MAGIC = ((b"RIFF", "WAV audio"), (b"fLaC", "FLAC audio"), (b"OggS", "Ogg audio"), (b"ID3", "MP3 audio"))


def sniff_file_type(path: Path) -> str:
    """What a file looks like from its first bytes: ``"zip"``, ``"pickle"``, ``"hdf5"``, ``"safetensors"``,
    ``"empty"``, ``"a text file"``, an audio description (``"WAV audio"``...) or ``"unknown"``.

    Raises:
        HyperionFileError: if the file cannot be read.
    """
    try:
        with path.open("rb") as handle:
            head = handle.read(16)
            hdf5 = False
            for offset in _HDF5_OFFSETS:
                handle.seek(offset)
                if handle.read(8) == _HDF5_SIGNATURE:
                    hdf5 = True
                    break
    except OSError as err:
        raise HyperionFileError(f"{path}: cannot read ({err.strerror or err})", path=path) from err
    if not head:
        return "empty"
    if head.startswith(_ZIP_MAGIC):
        return "zip"
    if head.startswith(_PICKLE_PROTO):
        return "pickle"
    if hdf5:
        return "hdf5"
    for magic, kind in _AUDIO_MAGIC:
        if head.startswith(magic):
            return kind
    if len(head) >= 9 and head[8:9] == b"{" and int.from_bytes(head[:8], "little") < 100_000_000:
        return "safetensors"
    if all(32 <= byte < 127 or byte in b"\t\r\n" for byte in head):
        return "a text file"
    return "unknown"


def _refuse_non_checkpoint(path: Path, kind: str) -> HyperionFileError:
    expected = "expected a PyTorch checkpoint (.pth, a zip or pickle written by torch.save)"
    fixes = {
        "empty": "the file is empty; re-save the model",
        "hdf5": (
            "it is an HDF5 file, e.g. a Hyperion NumPy model (PLDA, LNorm, calibration): load it with "
            "voicehub.hyperion.np.HyperNPModel.auto_load"
        ),
        "safetensors": (
            f"it is a bare safetensors file: put it in a directory as {WEIGHTS_FILE_NAME} next to the "
            f"{CONFIG_FILE_NAME} it was written with, and load the directory"
        ),
        "unknown": "its first bytes match no known model format (truncated, or another kind of file?)",
    }
    reason = fixes.get(kind, f"it is {kind}, not a model: pass the checkpoint file or directory instead")
    return HyperionFileError(f"{path}: not a PyTorch checkpoint: {reason}; {expected}", path=path)


def _read_single_file(
    path: Path, map_location: str | torch.device, safe_globals: tuple[Any, ...], model_name: str
) -> RawCheckpoint:
    kind = sniff_file_type(path)
    if kind not in ("zip", "pickle"):
        raise _refuse_non_checkpoint(path, kind)
    try:
        with torch.serialization.safe_globals(list(safe_globals)):
            payload = torch.load(path, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as err:
        detail = str(err).strip().splitlines()
        reason = next((line.strip() for line in detail if "GLOBAL" in line or "Unsupported" in line), detail[0])
        raise UnsafeFormatError(
            f"{path}: refused to unpickle: the file references Python objects beyond tensors and plain "
            f"containers ({reason}). VoiceHub reads legacy files only with torch.load(weights_only=True). "
            f"If you trust this file, pass the classes it needs as safe_globals=[...], or re-save it in the "
            f"directory format (config.json + model.safetensors)",
            path=path,
        ) from err
    except (
        RuntimeError,
        EOFError,
        OSError,
        zipfile.BadZipFile,
        ValueError,
        KeyError,
        IndexError,
        TypeError,
        AttributeError,
        struct.error,
    ) as err:  # torch's weights_only unpickler raises these for damaged or foreign data
        raise HyperionFileError(
            f"{path}: a {kind} file that torch.load cannot read as a checkpoint (truncated or corrupt?): "
            f"{type(err).__name__}: {err}; re-save the model, or restore the file",
            path=path,
        ) from err
    if not isinstance(payload, Mapping):
        raise HyperionFileError(
            f"{path}: expected a dict with 'model_cfg' and '{model_name}_state_dict', got {type(payload).__name__}",
            path=path,
        )
    state_key = f"{model_name}_state_dict"
    missing = [key for key in ("model_cfg", state_key) if key not in payload]
    if missing:
        raise HyperionFileError(
            f"{path}: not a Hyperion model checkpoint: missing {missing}; found keys {sorted(map(str, payload))}",
            path=path,
        )
    cfg = _plain_json(payload["model_cfg"], f"{path}: model_cfg", path)
    if not isinstance(cfg, dict):
        raise HyperionFileError(f"{path}: model_cfg must be a dict, got {type(cfg).__name__}", path=path)
    state = payload[state_key]
    if not isinstance(state, Mapping):
        raise HyperionFileError(f"{path}: {state_key} must be a dict of tensors, got {type(state).__name__}", path=path)
    class_path = payload.get("class_path")
    version = payload.get("package_version")
    train_mode = payload.get("train_mode")
    return RawCheckpoint(
        model_cfg=cfg,
        state_dict=normalize_state_dict(state, source=str(path)),
        source=str(path),
        class_path=class_path if isinstance(class_path, str) else None,
        package_version=version if isinstance(version, str) else None,
        train_mode=train_mode if isinstance(train_mode, str) and train_mode else None,
    )


def _plain_json(value: Any, where: str, path: Path) -> Any:
    """Convert an unpickled config to strict-JSON values (Enum -> value, Namespace -> dict)."""
    if isinstance(value, enum.Enum):
        return _plain_json(value.value, where, path)
    if isinstance(value, argparse.Namespace):
        value = vars(value)
    if isinstance(value, Mapping):
        return {str(k): _plain_json(v, f"{where}.{k}", path) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain_json(v, f"{where}[{i}]", path) for i, v in enumerate(value)]
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        return value.item()
    try:
        strict_json.dumps(value)
    except StrictJSONError as err:
        raise HyperionFileError(f"{where}: {err}", path=path) from err
    return value


def normalize_state_dict(state: Mapping[str, Any], *, source: str) -> dict[str, torch.Tensor]:
    """Strip ``module.`` prefixes per key and drop an ``AveragedModel``'s ``n_averaged`` counter.

    Args:
        state: tensor name -> tensor as stored.
        source: file name for messages.

    Returns:
        A new dict; the input is not modified.

    Raises:
        HyperionFileError: for a non-tensor value or two keys that collide after stripping.
    """
    wrapped = any(isinstance(key, str) and key.startswith("module.") for key in state)
    out: dict[str, torch.Tensor] = {}
    origin: dict[str, str] = {}
    for key, value in state.items():
        if not isinstance(key, str):
            raise HyperionFileError(f"{source}: state-dict key {key!r} is not a string", path=source)
        stripped = _MODULE_PREFIX.sub("", key)
        if wrapped and stripped == _SWA_COUNTER:
            continue
        if not isinstance(value, torch.Tensor):
            raise HyperionFileError(
                f"{source}: state-dict entry {key!r} is a {type(value).__name__}, expected a tensor", path=source
            )
        if stripped in out:
            raise HyperionFileError(
                f"{source}: state-dict keys {origin[stripped]!r} and {key!r} both become {stripped!r} once "
                f"'module.' prefixes are removed",
                path=source,
            )
        out[stripped] = value
        origin[stripped] = key
    return out


__all__ = [
    "CONFIG_FILE_NAME",
    "SINGLE_FILE_SUFFIXES",
    "WEIGHTS_FILE_NAME",
    "RawCheckpoint",
    "normalize_state_dict",
    "read_checkpoint",
    "save_directory",
    "save_single_file",
    "sniff_file_type",
]

"""Hyperion file access: output checks, atomic writes, opening HDF5 files and reading their ``/config``.

The writers go through :mod:`voicehub.core.files` (one set of rules for every VoiceHub file) and
raise this layer's :class:`~voicehub.hyperion.errors.HyperionFileError`; the readers turn every
h5py or OS error on a damaged file into one that names the file and says what to do.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from voicehub.core import strict_json
from voicehub.core.errors import OutputPathError, StrictJSONError, VoiceHubError
from voicehub.core.files import atomic_write as core_atomic_write
from voicehub.core.files import check_output_file
from voicehub.hyperion.errors import HyperionFileError, UnsafeFormatError

CONFIG_DATASET = "config"
"""Name of the HDF5 dataset that holds the JSON configuration."""

PICKLE_SUFFIXES = (".pkl", ".pickle")
"""File suffixes (case-insensitive) that select the pickle format."""

HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
"""The first 8 bytes of every HDF5 file."""

PICKLE_MAGIC = b"\x80"
"""The first byte of a Python pickle (protocol 2 and later)."""

PathLike = str | os.PathLike[str]

_WHAT = "Hyperion model file"


def is_pickle_path(path: Path) -> bool:
    return path.suffix.lower() in PICKLE_SUFFIXES


def refuse_pickle(path: Path, action: str) -> UnsafeFormatError:
    return UnsafeFormatError(
        f"{path}: refusing to {action} a Python pickle; unpickling runs arbitrary code. Pass "
        "allow_pickle=True only for a trusted, version-controlled file, or use the HDF5 format",
        path=path,
    )


def check_output_path(path: PathLike) -> Path:
    """Check an output path before anything is written (:func:`voicehub.core.files.check_output_file`).

    A symbolic link is followed, so the file it points to is replaced and the link is kept.

    Returns:
        The file to write.

    Raises:
        HyperionFileError: naming ``path`` for an empty path, a directory, a parent that is a file,
            or a directory that does not accept new files.
    """
    try:
        return check_output_file(path, what=_WHAT)
    except OutputPathError as err:
        raise HyperionFileError(str(err), path=os.fspath(path)) from err


def atomic_write(path: PathLike, write: Callable[[Path], None]) -> Path:
    """Call ``write(tmp)`` on a temporary file next to ``path``, then rename it over ``path``.

    This is :func:`voicehub.core.files.atomic_write` with this layer's error: the path is checked
    first; a symlink is written through; a new file gets the default mode (``0o666 & ~umask``), a
    replaced file keeps its mode; on any error the temporary file is removed and ``path`` is left as
    it was.

    Returns:
        The file written (``path`` with symlinks resolved).

    Raises:
        HyperionFileError: naming ``path`` when it cannot be written (see :func:`check_output_path`;
            also a directory that cannot be created or written, or a full disk).
    """
    try:
        return core_atomic_write(path, write, what=_WHAT)
    except OutputPathError as err:
        raise HyperionFileError(str(err), path=os.fspath(path)) from err


def open_hdf5(path: Path) -> h5py.File:
    """Open an existing HDF5 file for reading, with errors that name the file.

    Raises:
        HyperionFileError: if the file is missing, empty, not HDF5, truncated or corrupt.
        UnsafeFormatError: if the file is a Python pickle.
    """
    if path.is_dir():
        raise HyperionFileError(
            f"{path}: is a directory; a Hyperion NumPy model is one HDF5 file (e.g. plda.h5): pass the file. A "
            f"directory with config.json and model.safetensors is a torch model (HyperTorchModel.auto_load), and a "
            f"PLDA back-end directory loads with voicehub.plda_backend.PLDABackend.load",
            path=path,
        )
    if not path.is_file():
        raise HyperionFileError(f"{path}: no such file", path=path)
    with path.open("rb") as handle:
        head = handle.read(8)
    if not head:
        raise HyperionFileError(f"{path}: the file is empty", path=path)
    if head[:1] == PICKLE_MAGIC:
        raise refuse_pickle(path, "load")
    if head != HDF5_SIGNATURE and not h5py.is_hdf5(path):
        raise HyperionFileError(f"{path}: not an HDF5 file (no HDF5 signature at the start)", path=path)
    try:
        return h5py.File(path, "r")
    except H5_READ_ERRORS as err:
        raise corrupt(path, "cannot open the HDF5 file", err) from err


def read_config_dataset(f: h5py.File, path: Path) -> dict[str, Any]:
    """Read and parse the ``/config`` JSON dataset of an open Hyperion file.

    Raises:
        HyperionFileError: if the dataset is missing, unreadable, not strict JSON, or not an
            object with a string ``class_name``.
    """
    try:
        present = CONFIG_DATASET in f
        raw = f[CONFIG_DATASET][()] if present else None
    except H5_READ_ERRORS as err:
        raise corrupt(path, f"cannot read /{CONFIG_DATASET}", err) from err
    if not present:
        raise HyperionFileError(f"{path}: no /{CONFIG_DATASET} dataset; not a Hyperion NumPy model file", path=path)
    return parse_config_text(raw, path)


H5_READ_ERRORS = (OSError, RuntimeError, KeyError, ValueError, TypeError)
"""What h5py raises for damaged files: OSError/KeyError for bad objects, RuntimeError for damaged
link or object headers ("Unable to synchronously check link existence"), ValueError/TypeError for
impossible shapes or types. Handlers catch VoiceHub errors (some subclass these builtins) first."""


def corrupt(path: Any, what: str, err: BaseException) -> HyperionFileError:
    """The error for an unreadable part of an HDF5 file: names the file and says what to do."""
    return HyperionFileError(
        f"{path}: {what}: the file is corrupt or not a Hyperion file ({type(err).__name__}: {err}); "
        "expected an HDF5 file written by HyperNPModel.save or hyperion-ml; re-save it from the fitted model "
        "or restore it from a backup",
        path=path,
    )


@contextlib.contextmanager
def reading(path: Path) -> Iterator[None]:
    """Turn any h5py/OS error while reading ``path`` into :class:`HyperionFileError` (VoiceHub errors pass)."""
    try:
        yield
    except VoiceHubError:
        raise
    except H5_READ_ERRORS as err:
        raise corrupt(path, "cannot read the model", err) from err


def parse_config_text(raw: Any, path: Path) -> dict[str, Any]:
    """Decode a config given as bytes, str or a 0-d/1-element NumPy array of either."""
    if isinstance(raw, np.ndarray):
        raw = raw.item() if raw.size == 1 else raw.tobytes()
    try:
        text = raw.decode("utf-8") if isinstance(raw, (bytes, np.bytes_)) else str(raw)
        config = strict_json.loads(text)
    except (UnicodeDecodeError, StrictJSONError) as err:
        raise HyperionFileError(f"{path}: the model config is not valid strict JSON: {err}", path=path) from err
    if not isinstance(config, dict) or not isinstance(config.get("class_name"), str):
        raise HyperionFileError(f"{path}: the model config must be a JSON object with a 'class_name' string", path=path)
    return config


__all__ = [
    "CONFIG_DATASET",
    "H5_READ_ERRORS",
    "HDF5_SIGNATURE",
    "PICKLE_MAGIC",
    "PICKLE_SUFFIXES",
    "PathLike",
    "atomic_write",
    "check_output_path",
    "corrupt",
    "is_pickle_path",
    "open_hdf5",
    "parse_config_text",
    "read_config_dataset",
    "reading",
    "refuse_pickle",
]

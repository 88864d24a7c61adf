"""Compatibility names for the meta-package's writers; the implementation is :mod:`voicehub.core.files`."""

from __future__ import annotations

from voicehub.core.files import (
    atomic_write as write_file_atomic,
)
from voicehub.core.files import (
    check_output_directory,
    check_output_file,
    created_parents,
    default_directory_mode,
    default_file_mode,
    normalize_modes,
)

__all__ = [
    "check_output_directory",
    "check_output_file",
    "created_parents",
    "default_directory_mode",
    "default_file_mode",
    "normalize_modes",
    "write_file_atomic",
]

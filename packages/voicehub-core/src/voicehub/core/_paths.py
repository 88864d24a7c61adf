"""File names as messages show them."""

from __future__ import annotations

import os
from pathlib import Path


def display_path(path: str | os.PathLike[str]) -> str:
    """``path`` as printable text: bytes of a non-UTF-8 file name appear as ``\\xff`` escapes.

    A name that is not valid UTF-8 reaches Python as surrogate escapes, which cannot be printed
    or encoded; messages name the file with this instead.
    """
    text = os.fspath(path)
    raw = os.fsencode(text) if isinstance(text, str) else text
    return raw.decode("utf-8", errors="backslashreplace")


def utf8_name(path: Path) -> bool:
    """Whether ``path`` is valid UTF-8 (a C library can be handed it as text)."""
    try:
        os.fspath(path).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


__all__ = ["display_path", "utf8_name"]

"""Versions of the VoiceHub distributions, read from the installed metadata.

One source: each member's ``version`` in its ``pyproject.toml``. The build writes it into the
wheel's metadata and this module reads it back at run time (``importlib.metadata``), so no
second literal exists in the code; ``tests/test_metadata.py`` keeps every member on the same
version and every sibling range admitting it.
"""

from __future__ import annotations

import importlib.metadata

UNKNOWN_VERSION = "unknown"
"""Reported when the distribution is not installed (code run from a source tree on ``PYTHONPATH``)."""


def distribution_version(distribution: str) -> str:
    """Return the installed version of ``distribution`` (e.g. ``"voicehub-core"``).

    Args:
        distribution: a distribution name as in ``pyproject.toml``.

    Returns:
        Its version string, or :data:`UNKNOWN_VERSION` when no metadata is installed.
    """
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return UNKNOWN_VERSION


__all__ = ["UNKNOWN_VERSION", "distribution_version"]

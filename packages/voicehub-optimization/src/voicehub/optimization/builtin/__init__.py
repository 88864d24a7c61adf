"""The built-in optimization passes, one module each; imported lazily through the registry."""

from __future__ import annotations

__all__: list[str] = []

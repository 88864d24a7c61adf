"""ECAPA-style x-vector speaker encoder as a Hyperion ``HyperTorchModel`` (trainable, no pretrained weights).

Importing this package stays light (no torch): the architecture declaration is imported at once,
the config and the graph on first attribute access.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from voicehub.architectures.xvector.registration import ARCHITECTURE

if TYPE_CHECKING:
    from voicehub.architectures.xvector.config import XVectorConfig
    from voicehub.architectures.xvector.model import XVector

_LAZY = {"XVectorConfig": "config", "XVector": "model"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


__all__ = ["ARCHITECTURE", "XVector", "XVectorConfig"]

"""ECAPA-style x-vector speaker encoder as a Hyperion ``HyperTorchModel`` (trainable, no pretrained weights).

Importing this package stays light (no torch): the architecture declaration is imported at once,
the config and the graph on first attribute access.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from voicehub.architectures.xvector.registration import ARCHITECTURE
from voicehub.core.lazy import lazy_attributes

if TYPE_CHECKING:
    from voicehub.architectures.xvector.config import XVectorConfig
    from voicehub.architectures.xvector.model import XVector

_LAZY = {"XVectorConfig": "config", "XVector": "model"}

__getattr__ = lazy_attributes(__name__, _LAZY)


__all__ = ["ARCHITECTURE", "XVector", "XVectorConfig"]

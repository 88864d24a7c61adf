"""ECAPA-style x-vector speaker encoder as a Hyperion ``HyperTorchModel`` (trainable, no pretrained weights).

Importing this package imports torch; :mod:`.registration` does not.
"""

from __future__ import annotations

from voicehub.architectures.xvector.config import XVectorConfig
from voicehub.architectures.xvector.model import XVector

__all__ = ["XVector", "XVectorConfig"]

"""voicehub.architectures: native PyTorch graphs, one folder per family, with checkpoint adapters.

Importing this package imports no torch; each family's graph loads on first use.
"""

from __future__ import annotations

from voicehub.architectures.catalog import BUILTIN_ARCHITECTURES
from voicehub.architectures.errors import CheckpointMismatchError

__all__ = ["BUILTIN_ARCHITECTURES", "CheckpointMismatchError"]

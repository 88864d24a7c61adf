"""The ``vad_silero`` integration: native Silero VAD v5/v6 (the default VAD).

Importing this package is light; the wrapper (``voicehub.models.vad_silero.wrapper``) imports torch.
"""

from __future__ import annotations

from voicehub.models.vad_silero.config import VADSileroConfig
from voicehub.models.vad_silero.registration import MODEL_SPEC

__all__ = ["MODEL_SPEC", "VADSileroConfig"]

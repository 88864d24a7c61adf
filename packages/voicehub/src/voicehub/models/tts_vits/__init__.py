"""The ``tts_vits`` integration: native VITS on Piper voices, the default TTS.

Importing this package is light; the wrapper (``voicehub.models.tts_vits.wrapper``) imports torch.
"""

from __future__ import annotations

from voicehub.models.tts_vits.config import TTSVITSConfig, TTSVITSOptions
from voicehub.models.tts_vits.registration import MODEL_SPEC

__all__ = ["MODEL_SPEC", "TTSVITSConfig", "TTSVITSOptions"]

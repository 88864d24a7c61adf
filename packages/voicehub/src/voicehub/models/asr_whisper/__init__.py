"""The ``asr_whisper`` integrations: native Whisper tiny.en (the default ASR) and base.

Importing this package is light; the wrapper (``voicehub.models.asr_whisper.wrapper``) imports torch.
"""

from __future__ import annotations

from voicehub.models.asr_whisper.config import ASRWhisperBaseConfig, ASRWhisperConfig, ASRWhisperOptions
from voicehub.models.asr_whisper.registration import BASE_MODEL_SPEC, MODEL_SPEC

__all__ = ["BASE_MODEL_SPEC", "MODEL_SPEC", "ASRWhisperBaseConfig", "ASRWhisperConfig", "ASRWhisperOptions"]

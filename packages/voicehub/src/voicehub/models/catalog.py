"""The built-in model catalog: one ``"module:attr"`` reference per integration.

Each reference names the ``MODEL_SPEC`` (a :class:`voicehub.registry.ModelSpec`) declared in
``voicehub/models/<model_type>/registration.py``, a module that imports nothing heavy. The
catalog is read lazily, on the first look-up in ``voicehub.registry.MODEL_CATALOG``. To add an
integration, add one line here; no other shared file changes.
"""

from __future__ import annotations

BUILTIN_MODELS: tuple[str, ...] = (
    "voicehub.models.vad_silero.registration:MODEL_SPEC",
    "voicehub.models.vad_webrtc.registration:MODEL_SPEC",
    "voicehub.models.sv_ge2e.registration:MODEL_SPEC",
    "voicehub.models.sv_xvector.registration:MODEL_SPEC",
    "voicehub.models.asr_whisper.registration:MODEL_SPEC",
    "voicehub.models.asr_whisper.registration:BASE_MODEL_SPEC",
    "voicehub.models.tts_vits.registration:MODEL_SPEC",
    "voicehub.models.asr_moonshine.registration:MODEL_SPEC",
    "voicehub.models.asr_qwen3.registration:MODEL_SPEC",
)
"""References to the built-in :class:`~voicehub.registry.ModelSpec` declarations, in listing order."""

__all__ = ["BUILTIN_MODELS"]

"""The speech tasks VoiceHub serves (the lifecycle states are in :mod:`voicehub.core.runtime`)."""

from __future__ import annotations

import enum

from voicehub.core.errors import UnknownTaskError


class SpeechTask(enum.StrEnum):
    """The speech tasks VoiceHub serves; values are the canonical task names."""

    TEXT_TO_SPEECH = "text-to-speech"
    AUTOMATIC_SPEECH_RECOGNITION = "automatic-speech-recognition"
    VOICE_ACTIVITY_DETECTION = "voice-activity-detection"
    SPEAKER_VERIFICATION = "speaker-verification"

    @property
    def short_name(self) -> str:
        """The common abbreviation: ``tts``, ``asr``, ``vad`` or ``sv``."""
        return _SHORT[self]

    @classmethod
    def parse(cls, value: str | SpeechTask) -> SpeechTask:
        """Accept a task, its canonical name or a common alias (``tts``, ``asr``, ``stt``, ``vad``, ``sv``).

        Raises:
            UnknownTaskError: (a ``KeyError``) listing the accepted names.
        """
        if isinstance(value, SpeechTask):
            return value
        key = str(value).strip().lower().replace("_", "-")
        task = _ALIASES.get(key)
        if task is None:
            raise UnknownTaskError(str(value), sorted(_ALIASES))
        return task


_SHORT = {
    SpeechTask.TEXT_TO_SPEECH: "tts",
    SpeechTask.AUTOMATIC_SPEECH_RECOGNITION: "asr",
    SpeechTask.VOICE_ACTIVITY_DETECTION: "vad",
    SpeechTask.SPEAKER_VERIFICATION: "sv",
}
_ALIASES: dict[str, SpeechTask] = {
    **{task.value: task for task in SpeechTask},
    **{short: task for task, short in _SHORT.items()},
    "stt": SpeechTask.AUTOMATIC_SPEECH_RECOGNITION,
    "speech-recognition": SpeechTask.AUTOMATIC_SPEECH_RECOGNITION,
    "speaker-recognition": SpeechTask.SPEAKER_VERIFICATION,
}


__all__ = ["SpeechTask"]

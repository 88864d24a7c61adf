"""Speech task names and aliases."""

from __future__ import annotations

import pytest

from voicehub.core import SpeechTask, UnknownTaskError


@pytest.mark.parametrize(
    ("alias", "task"),
    [
        ("tts", SpeechTask.TEXT_TO_SPEECH),
        ("STT", SpeechTask.AUTOMATIC_SPEECH_RECOGNITION),
        ("voice_activity_detection", SpeechTask.VOICE_ACTIVITY_DETECTION),
        ("sv", SpeechTask.SPEAKER_VERIFICATION),
    ],
)
def test_task_aliases_resolve(alias: str, task: SpeechTask) -> None:
    assert SpeechTask.parse(alias) is task
    assert SpeechTask.parse(task.value) is task


def test_unknown_task_lists_the_accepted_names() -> None:
    with pytest.raises(UnknownTaskError, match=r"unknown speech task 'diarization'; available: .*asr"):
        SpeechTask.parse("diarization")

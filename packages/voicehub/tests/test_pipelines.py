"""pipeline(): task-shaped calls that forward to the wrapper unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import SPEECH_WAV
from voicehub import AutoModelForVoiceActivityDetection, pipeline
from voicehub.core import ConfigError, TaskMismatchError, VADOutput
from voicehub_test_extension import EnergyVAD, EnergyVADConfig

pytestmark = pytest.mark.usefixtures("isolated_catalog")


def test_pipeline_loads_by_model_type_and_forwards_to_detect(mean_square_kernel: Path) -> None:
    AutoModelForVoiceActivityDetection.register(EnergyVADConfig, EnergyVAD)
    vad = pipeline("vad", mean_square_kernel, model_type="test_energy_vad", device="cpu")
    direct = vad.model.detect(SPEECH_WAV, threshold=3e-3)
    output = vad(SPEECH_WAV, threshold=3e-3)
    assert isinstance(output, VADOutput)
    assert [s.end_sample for s in output.segments] == [s.end_sample for s in direct.segments]
    batch = vad([SPEECH_WAV, SPEECH_WAV], threshold=3e-3)
    assert isinstance(batch, list) and len(batch) == 2
    for item in batch:
        assert [(s.start_sample, s.end_sample) for s in item.segments] == [
            (s.start_sample, s.end_sample) for s in direct.segments
        ]


def test_pipeline_refuses_other_tasks_and_loader_options_next_to_a_model(mean_square_kernel: Path) -> None:
    AutoModelForVoiceActivityDetection.register(EnergyVADConfig, EnergyVAD)
    model = EnergyVAD.from_pretrained(mean_square_kernel, device="cpu")
    with pytest.raises(TaskMismatchError, match="use pipeline\\('voice-activity-detection', model\\)"):
        pipeline("asr", model)
    with pytest.raises(TaskMismatchError, match="use AutoModelForVoiceActivityDetection"):
        pipeline("tts", mean_square_kernel, model_type="test_energy_vad")
    with pytest.raises(ConfigError, match="\\['device'\\] cannot be applied to an already-built model"):
        pipeline("vad", model, device="cpu")
    assert pipeline("vad", model).model is model

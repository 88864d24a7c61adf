"""Loading from foreign checkpoint directories, and errors that name the method called."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from voicehub.auto import AutoModelForSpeakerVerification
from voicehub.core.errors import ConfigError

DATA = Path(__file__).resolve().parents[3] / "tests" / "data"
WAV = DATA / "librivox" / "sense_and_sensibility_01_austen_64kb-0880.wav"


@pytest.mark.slow
def test_a_hyperion_encoder_directory_loads_as_sv_ge2e_with_the_same_embeddings(tmp_path: Path) -> None:
    default = AutoModelForSpeakerVerification.from_pretrained()
    default.load()
    default.runtime.module.save(
        tmp_path / "ge2e_dir"
    )  # Hyperion directory: config.json (class_name) + model.safetensors
    reloaded = AutoModelForSpeakerVerification.from_pretrained(tmp_path / "ge2e_dir", model_type="sv_ge2e")
    np.testing.assert_array_equal(reloaded.embed(WAV).embedding, default.embed(WAV).embedding)
    with pytest.raises(ConfigError, match="has no 'model_type'; pass model_type="):
        AutoModelForSpeakerVerification.from_pretrained(tmp_path / "ge2e_dir")


def test_verify_option_errors_name_verify() -> None:
    model = AutoModelForSpeakerVerification.from_pretrained()
    with pytest.raises(TypeError, match=r"verify\(\)"):
        model.verify(WAV, WAV, threshhold=0.5)

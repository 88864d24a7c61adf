"""Declaration of the Silero VAD architecture (imports no torch; the references resolve lazily)."""

from __future__ import annotations

from voicehub.core.tasks import SpeechTask
from voicehub.registry.architecture_registry import ArchitectureSpec

ARCHITECTURE = ArchitectureSpec(
    architecture_id="silero-vad",
    version="1",
    model_builder="voicehub.architectures.silero_vad.model:SileroVAD",
    config="voicehub.architectures.silero_vad.config:SileroVADConfig",
    checkpoint_adapter="voicehub.architectures.silero_vad.checkpoint:load_silero_vad",
    components={"state": "voicehub.architectures.silero_vad.model:SileroVADState"},
    tasks=(SpeechTask.VOICE_ACTIVITY_DETECTION,),
    devices=("cpu",),
    dtypes=("float32", "bfloat16"),
    features=("16khz", "8khz", "streaming", "batched-inference", "frame-probabilities"),
    optimization_passes=("eval-mode", "inference-mode", "threads", "dtype", "int8-dynamic"),
    sample_rates=(16000, 8000),
    upstream="https://github.com/snakers4/silero-vad (silero-vad 5.1.2 and 6.2.3 on PyPI)",
    license="MIT",
)
"""Verified on CPU: float32 against the upstream TorchScript model (v5, v6) at 16 and 8 kHz; bfloat16 and the
listed optimization passes against float32 on real speech (``packages/voicehub/tests/test_vad_optimization.py``)."""

__all__ = ["ARCHITECTURE"]

"""Declaration of the Silero VAD architecture: its verified facts (imports no torch)."""

from __future__ import annotations

from voicehub.architectures.silero.config import SUPPORTED_SAMPLE_RATES
from voicehub.core.tasks import SpeechTask
from voicehub.registry.architecture_registry import ArchitectureSpec

ARCHITECTURE = ArchitectureSpec(
    architecture_id="silero",
    version="1",
    tasks=(SpeechTask.VOICE_ACTIVITY_DETECTION,),
    devices=("cpu",),
    dtypes=("float32", "bfloat16"),
    features=("16khz", "8khz", "streaming", "batched-inference", "frame-probabilities"),
    optimization_passes=("eval-mode", "inference-mode", "threads", "dtype", "int8-dynamic"),
    sample_rates=SUPPORTED_SAMPLE_RATES,
    aliases=("silero-vad",),
    upstream="https://github.com/snakers4/silero-vad (silero-vad 5.1.2 and 6.2.3 on PyPI)",
    license="MIT",
    builder="voicehub.architectures.silero.model:SileroVAD",
    config="voicehub.architectures.silero.config:SileroConfig",
    processor=None,  # the graph takes raw 16/8 kHz audio; its STFT front end is inside SileroVAD
    decoder=None,  # the output is per-chunk speech probability; segmentation is voicehub.voice_activity's
    objective=None,  # trained by voicehub.training's generic frame-classification objective
    checkpoint_adapter="voicehub.architectures.silero.checkpoint:load_silero_vad",
)
"""Verified on CPU: float32 against the upstream TorchScript model (v5, v6) at 16 and 8 kHz; bfloat16 and the
listed optimization passes against float32 on real speech (``packages/voicehub/tests/test_vad_optimization.py``)."""

__all__ = ["ARCHITECTURE"]

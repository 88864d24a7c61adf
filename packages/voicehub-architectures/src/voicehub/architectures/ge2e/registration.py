"""Declaration of the GE2E speaker-encoder architecture: its verified facts (imports no torch)."""

from __future__ import annotations

from voicehub.architectures.ge2e.config import SAMPLE_RATE
from voicehub.core.tasks import SpeechTask
from voicehub.registry.architecture_registry import ArchitectureSpec

ARCHITECTURE = ArchitectureSpec(
    architecture_id="ge2e",
    version="1",
    tasks=(SpeechTask.SPEAKER_VERIFICATION,),
    devices=("cpu",),
    dtypes=("float32", "bfloat16"),
    # int8-dynamic: per-tensor activation scales cannot hold the raw (not log) mel power the LSTM
    # reads; measured cosine distance 0.46 to the float32 embedding on LibriVox speech.
    features=("16khz", "batched-inference", "hyper-torch-model", "int8-dynamic-inference-unsafe"),
    optimization_passes=("eval-mode", "inference-mode", "threads", "dtype"),
    sample_rates=(SAMPLE_RATE,),
    upstream="https://github.com/resemble-ai/Resemblyzer (resemblyzer 0.1.4 on PyPI)",
    license="Apache-2.0",
    builder="voicehub.architectures.ge2e.model:GE2ESpeakerEncoder",
    config="voicehub.architectures.ge2e.config:GE2EConfig",
    processor="voicehub.architectures.ge2e.processor:preprocess",
    decoder=None,  # the output is the speaker embedding; scoring is voicehub.speaker_verification's
    objective="voicehub.architectures.ge2e.model:GE2ESpeakerEncoder.ge2e_loss",
    checkpoint_adapter="voicehub.architectures.ge2e.checkpoint:load_resemblyzer_checkpoint",
)
"""Verified on CPU: float32 embeddings equal resemblyzer's VoiceEncoder within 1e-5 on real speech; bfloat16 and
the listed passes against float32 on real speech (``packages/voicehub/tests/test_sv_optimization.py``)."""

__all__ = ["ARCHITECTURE"]

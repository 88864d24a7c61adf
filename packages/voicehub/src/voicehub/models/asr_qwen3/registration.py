"""Catalog entry of ``asr_qwen3`` (declaration only): Qwen3-ASR-0.6B, seed 001's loading example."""

from __future__ import annotations

from voicehub.core.tasks import SpeechTask
from voicehub.registry.checkpoints import HubSource
from voicehub.registry.model_registry import ModelSpec

REPOSITORY = "Qwen/Qwen3-ASR-0.6B"
"""The Hugging Face repository of the weights (Apache-2.0, Alibaba Qwen team)."""

MODEL_SPEC = ModelSpec(
    model_type="asr_qwen3",
    training_spec="voicehub.models.asr_qwen3.training:TRAINING_SPEC",
    task=SpeechTask.AUTOMATIC_SPEECH_RECOGNITION,
    config="voicehub.models.asr_qwen3.config:ASRQwen3Config",
    wrapper="voicehub.models.asr_qwen3.wrapper:Qwen3ASRModel",
    default_source=HubSource(repo_id=REPOSITORY),
    aliases=("qwen3-asr", "qwen3-asr-0.6b"),
    # graph-pending: created and listed, but no runtime can be built yet; the optimization matrix checks that
    # every pass is refused before loading instead of running it (tests/test_optimization_matrix.py)
    capabilities=("multilingual", "graph-pending"),
    architecture=None,  # no native graph yet: nothing verified to declare
    license="Apache-2.0",
    description=f"Qwen3-ASR-0.6B ({REPOSITORY}): created lazily; the native graph is not implemented yet",
)

__all__ = ["MODEL_SPEC", "REPOSITORY"]

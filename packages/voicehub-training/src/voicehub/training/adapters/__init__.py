"""Family adapters: :class:`AutoTrainingAdapter` picks one from a model's training spec."""

from __future__ import annotations

from voicehub.training.adapters.base import (
    AutoTrainingAdapter,
    TrainingAdapter,
    TrainingBatch,
    family_adapters,
    freeze_parts,
    register_family_adapter,
)

__all__ = [
    "AutoTrainingAdapter",
    "TrainingAdapter",
    "TrainingBatch",
    "family_adapters",
    "freeze_parts",
    "register_family_adapter",
]

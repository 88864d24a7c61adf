"""voicehub.training: training specs, family adapters, the Trainer, data manifests and objectives.

The path through it (DESIGN.md, "Training"): :func:`get_training_spec` says how a registered model
trains (native / preprocessed / custom / none) -> :class:`AutoTrainingAdapter` picks the family
adapter -> :class:`Trainer` owns the loop, callbacks, checkpoints and the strategy. The Trainer
reaches a model only through the runtime-host protocol (:class:`voicehub.core.runtime.RuntimeHost`).
"""

from __future__ import annotations

from voicehub.training.errors import (
    ManifestError,
    ManifestProblem,
    ResumeMismatchError,
    SplitError,
    TrainingCheckpointError,
    TrainingError,
    TrainingNotSupportedError,
    TrainingSpecError,
)
from voicehub.training.spec import DataContract, ManifestField, ModelTrainingSpec, SupportLevel, get_training_spec

__all__ = [
    "DataContract",
    "ManifestError",
    "ManifestField",
    "ManifestProblem",
    "ModelTrainingSpec",
    "ResumeMismatchError",
    "SplitError",
    "SupportLevel",
    "TrainingCheckpointError",
    "TrainingError",
    "TrainingNotSupportedError",
    "TrainingSpecError",
    "get_training_spec",
]

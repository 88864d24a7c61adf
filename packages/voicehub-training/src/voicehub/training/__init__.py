"""voicehub.training: training specs, family adapters, the Trainer, data manifests and objectives.

The path through it (``docs/training.md``): :func:`get_training_spec` says how a registered model
trains (native / preprocessed / custom / none) -> :class:`AutoTrainingAdapter` picks the family
adapter -> :class:`Trainer` owns the loop, callbacks, checkpoints and the strategy. The Trainer
reaches a model only through the runtime-host protocol (:class:`voicehub.core.runtime.RuntimeHost`).
"""

from __future__ import annotations

from voicehub.training.adapters import AutoTrainingAdapter, TrainingAdapter, register_family_adapter
from voicehub.training.batching import AudioBatch, LengthBucketBatchSampler, collate_audio
from voicehub.training.callbacks import EarlyStopping, JSONLMetricsLog, ProgressBar, TrainerCallback
from voicehub.training.checkpoints import Checkpoint, CheckpointStore
from voicehub.training.errors import (
    DistributedTimeoutError,
    ManifestError,
    ManifestProblem,
    NonFiniteLossError,
    ResumeMismatchError,
    SplitError,
    TrainingCheckpointError,
    TrainingError,
    TrainingNotSupportedError,
    TrainingSpecError,
)
from voicehub.training.manifest import ManifestRecord, Segment, read_manifest, write_manifest
from voicehub.training.spec import DataContract, ManifestField, ModelTrainingSpec, SupportLevel, get_training_spec
from voicehub.training.splits import split_records
from voicehub.training.trainer import Trainer, TrainerConfig, TrainResult

__all__ = [
    "AudioBatch",
    "AutoTrainingAdapter",
    "Checkpoint",
    "CheckpointStore",
    "DataContract",
    "DistributedTimeoutError",
    "EarlyStopping",
    "JSONLMetricsLog",
    "LengthBucketBatchSampler",
    "ManifestError",
    "ManifestField",
    "ManifestProblem",
    "ManifestRecord",
    "ModelTrainingSpec",
    "NonFiniteLossError",
    "ProgressBar",
    "ResumeMismatchError",
    "Segment",
    "SplitError",
    "SupportLevel",
    "TrainResult",
    "Trainer",
    "TrainerCallback",
    "TrainerConfig",
    "TrainingAdapter",
    "TrainingCheckpointError",
    "TrainingError",
    "TrainingNotSupportedError",
    "TrainingSpecError",
    "collate_audio",
    "get_training_spec",
    "read_manifest",
    "register_family_adapter",
    "split_records",
    "write_manifest",
]

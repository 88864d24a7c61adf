"""voicehub.hyperion.torch: Hyperion-format PyTorch task models.

:class:`HyperTorchModel` is the base class of trainable task models whose checkpoints hold a
``model_cfg`` (the output of ``get_config()``, with ``class_name``) and a ``state_dict``; see
:mod:`voicehub.hyperion.torch.model` for the contract and :mod:`voicehub.hyperion.torch.checkpoint`
for the two file forms. Importing this package imports torch.
"""

from __future__ import annotations

from voicehub.hyperion.torch.checkpoint import (
    CONFIG_FILE_NAME,
    SINGLE_FILE_SUFFIXES,
    WEIGHTS_FILE_NAME,
    RawCheckpoint,
    normalize_state_dict,
    read_checkpoint,
)
from voicehub.hyperion.torch.model import (
    ENTRY_POINT_GROUP,
    TRAIN_MODES,
    HyperTorchConfig,
    HyperTorchModel,
    StateMigration,
)

__all__ = [
    "CONFIG_FILE_NAME",
    "ENTRY_POINT_GROUP",
    "SINGLE_FILE_SUFFIXES",
    "TRAIN_MODES",
    "WEIGHTS_FILE_NAME",
    "HyperTorchConfig",
    "HyperTorchModel",
    "RawCheckpoint",
    "StateMigration",
    "normalize_state_dict",
    "read_checkpoint",
]

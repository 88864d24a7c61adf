"""voicehub.hyperion.torch: Hyperion-format PyTorch task models.

:class:`HyperTorchModel` is the base class of trainable task models whose checkpoints hold a
``model_cfg`` (the output of ``get_config()``, with ``class_name``) and a ``state_dict``; see
:mod:`voicehub.hyperion.torch.model` for the contract and :mod:`voicehub.hyperion.torch.checkpoint`
for the two file forms. Importing this package imports no torch: each name loads its module on
first access (:class:`HyperTorchConfig` from the torch-free :mod:`voicehub.hyperion.torch.config`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from voicehub.core.files import CONFIG_FILE_NAME, WEIGHTS_FILE_NAME
from voicehub.core.lazy import lazy_attributes

if TYPE_CHECKING:
    from voicehub.hyperion.torch.checkpoint import (
        SINGLE_FILE_SUFFIXES,
        RawCheckpoint,
        normalize_state_dict,
        read_checkpoint,
    )
    from voicehub.hyperion.torch.config import HyperTorchConfig
    from voicehub.hyperion.torch.model import ENTRY_POINT_GROUP, TRAIN_MODES, HyperTorchModel, StateMigration

_LAZY = {
    "SINGLE_FILE_SUFFIXES": "checkpoint",
    "RawCheckpoint": "checkpoint",
    "normalize_state_dict": "checkpoint",
    "read_checkpoint": "checkpoint",
    "HyperTorchConfig": "config",
    "ENTRY_POINT_GROUP": "model",
    "TRAIN_MODES": "model",
    "HyperTorchModel": "model",
    "StateMigration": "model",
}

__getattr__ = lazy_attributes(__name__, _LAZY)

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

"""voicehub.registry: lazy model and architecture registries and checkpoint sources.

Importing this package imports no torch and no model code. The process-wide catalogs are
:data:`MODEL_CATALOG` and :data:`ARCHITECTURE_CATALOG`; both fill themselves on first read
through queued *populators*: this package queues the ``voicehub.models`` entry-point group,
and the ``voicehub`` meta-package queues the built-in catalogs (before the plug-ins).
"""

from __future__ import annotations

from voicehub.registry.architecture_registry import ARCHITECTURE_PARTS, ArchitectureRegistry, ArchitectureSpec
from voicehub.registry.checkpoints import (
    CheckpointSource,
    DistributionSource,
    HubSource,
    LocalSource,
    file_sha256,
    parse_source,
    verify_sha256,
)
from voicehub.registry.errors import (
    CheckpointNotFoundError,
    ChecksumMismatchError,
    DuplicateRegistrationError,
    PluginError,
    SpecError,
    UnsupportedByArchitectureError,
)
from voicehub.registry.model_config import ModelConfig
from voicehub.registry.model_registry import GENERIC_MODEL_TYPES, ModelRegistry, ModelSpec, class_reference
from voicehub.registry.plugins import MODEL_ENTRY_POINT_GROUP, PluginWarning, load_model_entry_points

MODEL_CATALOG = ModelRegistry(name="catalog")
"""The process-wide model registry (built-ins, ``register()`` calls and entry-point plug-ins)."""

ARCHITECTURE_CATALOG = ArchitectureRegistry(name="catalog")
"""The process-wide architecture registry."""


def _load_plugins(registry: object) -> None:
    if isinstance(registry, ModelRegistry):
        load_model_entry_points(registry, on_error="warn")


MODEL_CATALOG.add_populator(f"entry points {MODEL_ENTRY_POINT_GROUP!r}", _load_plugins)

__all__ = [
    "ARCHITECTURE_CATALOG",
    "ARCHITECTURE_PARTS",
    "GENERIC_MODEL_TYPES",
    "MODEL_CATALOG",
    "MODEL_ENTRY_POINT_GROUP",
    "ArchitectureRegistry",
    "ArchitectureSpec",
    "CheckpointNotFoundError",
    "CheckpointSource",
    "ChecksumMismatchError",
    "DistributionSource",
    "DuplicateRegistrationError",
    "HubSource",
    "LocalSource",
    "ModelConfig",
    "ModelRegistry",
    "ModelSpec",
    "PluginError",
    "PluginWarning",
    "SpecError",
    "UnsupportedByArchitectureError",
    "class_reference",
    "file_sha256",
    "load_model_entry_points",
    "parse_source",
    "verify_sha256",
]

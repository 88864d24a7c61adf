"""The model registry under the seed's model-domain path, ``voicehub.models.registry``.

Seed 001 places the model registry at ``voicehub/models/registry.py`` and calls ``voicehub.registry``
"a compatibility facade over the model-domain implementation". VoiceHub inverts the two, on
purpose: the implementation is ``voicehub.registry`` (the ``voicehub-registry`` distribution),
because layers below this meta-package (``voicehub.optimization``, ``voicehub.training``, the
provider policy) read ``ModelSpec`` and ``ArchitectureSpec`` and may not import the meta-package.
This module is the thin facade: it re-exports the very same objects (no copy, no second
registry), so code written against the seed's layer table works and registers into the one
process-wide catalog. Importing it imports no torch and no model code. See
``docs/architecture.md``, "Seed conformance".
"""

from __future__ import annotations

from voicehub.registry import (
    ARCHITECTURE_CATALOG,
    MODEL_CATALOG,
    ArchitectureRegistry,
    ArchitectureSpec,
    ModelRegistry,
    ModelSpec,
    class_reference,
)

__all__ = [
    "ARCHITECTURE_CATALOG",
    "MODEL_CATALOG",
    "ArchitectureRegistry",
    "ArchitectureSpec",
    "ModelRegistry",
    "ModelSpec",
    "class_reference",
]

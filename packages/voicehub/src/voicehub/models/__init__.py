"""Built-in model integrations (``voicehub/models/<model_type>/``) and lazy catalog loading.

Importing this package imports no integration. :func:`install_builtin_catalogs` (called by
``import voicehub``) queues the built-in model catalog (:data:`voicehub.models.catalog.BUILTIN_MODELS`)
and the built-in architecture catalog (``voicehub.architectures.catalog.BUILTIN_ARCHITECTURES``,
when that module exists) on the process-wide registries; they are read on the first look-up.
"""

from __future__ import annotations

import importlib
import importlib.util
import threading

from voicehub.registry import ARCHITECTURE_CATALOG, MODEL_CATALOG, ArchitectureRegistry, ModelRegistry

MODEL_CATALOG_MODULE = "voicehub.models.catalog"
ARCHITECTURE_CATALOG_MODULE = "voicehub.architectures.catalog"

_installed = False
_install_lock = threading.Lock()


def _populate_models(registry: object) -> None:
    if not isinstance(registry, ModelRegistry):
        return
    catalog = importlib.import_module(MODEL_CATALOG_MODULE)
    registry.load_references(catalog.BUILTIN_MODELS, label="built-in model catalog")


def _populate_architectures(registry: object) -> None:
    if not isinstance(registry, ArchitectureRegistry):
        return
    if importlib.util.find_spec(ARCHITECTURE_CATALOG_MODULE) is None:
        return
    catalog = importlib.import_module(ARCHITECTURE_CATALOG_MODULE)
    registry.load_references(getattr(catalog, "BUILTIN_ARCHITECTURES", ()), label="built-in architecture catalog")


def install_builtin_catalogs() -> None:
    """Queue the built-in model and architecture catalogs on the process-wide registries (once).

    The model catalog runs before the entry-point plug-ins, so a plug-in that collides with a
    built-in name is the one reported.
    """
    global _installed
    with _install_lock:
        if _installed:
            return
        MODEL_CATALOG.add_populator("built-in model catalog", _populate_models, first=True)
        ARCHITECTURE_CATALOG.add_populator("built-in architecture catalog", _populate_architectures, first=True)
        _installed = True


def load_builtin_models() -> ModelRegistry:
    """Load the built-in model catalog and the entry-point plug-ins now; return ``MODEL_CATALOG``.

    Tools that inspect every registered model type and alias (the provider-independence policy,
    ``voicehub models``) call this, then read ``MODEL_CATALOG.list()`` and ``MODEL_CATALOG.aliases``.
    Only ``registration.py`` declaration modules are imported.

    Raises:
        PluginError: naming a catalog reference or plug-in that failed to load.
    """
    install_builtin_catalogs()
    MODEL_CATALOG.populate()
    return MODEL_CATALOG


def load_builtin_architectures() -> ArchitectureRegistry:
    """Load the built-in architecture catalog now; return ``ARCHITECTURE_CATALOG``.

    Raises:
        PluginError: naming a catalog reference that failed to load.
    """
    install_builtin_catalogs()
    ARCHITECTURE_CATALOG.populate()
    return ARCHITECTURE_CATALOG


__all__ = ["install_builtin_catalogs", "load_builtin_architectures", "load_builtin_models"]

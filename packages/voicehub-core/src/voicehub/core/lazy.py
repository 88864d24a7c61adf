"""Lazy imports: optional packages and ``"module:attribute"`` references.

Heavy packages (torch, h5py, model code) are imported only when first used, so that
``import voicehub`` and registry listings stay fast. These helpers also turn a missing
optional package into an :class:`~voicehub.core.errors.OptionalDependencyError` that names
the install command.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

from voicehub.core.errors import OptionalDependencyError, VoiceHubError


def import_optional(module: str, *, purpose: str, install_hint: str | None = None) -> ModuleType:
    """Import ``module`` or explain how to install it.

    Args:
        module: import name, e.g. ``"torch"``.
        purpose: what needs it, for the message ("Silero VAD inference").
        install_hint: command to install it; defaults to ``pip install <module>``.

    Raises:
        OptionalDependencyError: if the import fails with ``ModuleNotFoundError``.
    """
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as err:
        top = module.split(".")[0]
        if err.name not in (module, top):
            raise
        raise OptionalDependencyError(top, purpose=purpose, install_hint=install_hint or f"pip install {top}") from err


def parse_reference(reference: str) -> tuple[str, str]:
    """Split ``"package.module:attribute.path"`` into its module and attribute parts.

    The one validator of the lazy ``"module:attribute"`` references every VoiceHub registry
    stores (model specs, catalogs, optimization passes, Hyperion classes): a dotted module name
    (non-empty parts without spaces), a colon, and a dotted attribute path of Python identifiers.

    Raises:
        ValueError: if the reference is not in ``module:attribute`` form.
    """
    module, sep, attribute = reference.partition(":") if isinstance(reference, str) else ("", "", "")
    module_ok = all(part and not any(ch.isspace() for ch in part) for part in module.split("."))
    if not sep or not module_ok or not all(part.isidentifier() for part in attribute.split(".")):
        raise ValueError(f"expected a 'module:attribute' reference (attribute: dotted Python names), got {reference!r}")
    return module, attribute


def resolve_reference(reference: str) -> Any:
    """Import and return the object named by a ``"module:attribute"`` reference.

    Raises:
        VoiceHubError: naming the reference when the module or attribute is missing.
    """
    module_name, attribute = parse_reference(reference)
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as err:
        raise VoiceHubError(f"cannot import {module_name!r} for reference {reference!r}: {err}") from err
    for part in attribute.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError as err:
            raise VoiceHubError(f"reference {reference!r}: {module_name} has no attribute {attribute!r}") from err
    return obj


def lazy_attributes(package: str, table: Mapping[str, str]) -> Callable[[str], Any]:
    """Build a module ``__getattr__`` (PEP 562) that imports submodules on first attribute access.

    Usage in a package ``__init__``: ``__getattr__ = lazy_attributes(__name__, {"Model": "model"})``;
    ``pkg.Model`` then imports ``pkg.model`` and returns its ``Model``.

    Args:
        package: the package's ``__name__``.
        table: attribute name -> submodule name (relative to ``package``).

    Returns:
        The ``__getattr__`` function; it raises ``AttributeError`` for names not in ``table``.
    """

    def __getattr__(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{module}"), name)

    return __getattr__


__all__ = ["import_optional", "lazy_attributes", "parse_reference", "resolve_reference"]

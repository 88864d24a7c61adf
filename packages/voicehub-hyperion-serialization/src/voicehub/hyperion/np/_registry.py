"""The class-name registry behind :meth:`HyperNPModel.auto_load`.

A saved model records its Python class name (``class_name``), so that name is part of the
artifact format. Three sources map a name to a class, checked in this order:

1. classes whose definition has run in this process (``HyperNPModel.__init_subclass__``);
2. the catalog of maintained back-ends below: lazy ``"module:attribute"`` references, so that
   ``auto_load`` works in a fresh process without the caller importing anything;
3. plug-ins declared as entry points in the ``voicehub.hyperion_np_models`` group.

Collisions are errors, never "last definition wins": a class whose name is in the catalog but
which lives elsewhere, two different classes with one name, or two plug-ins with one name all
raise :class:`HyperionRegistryError`.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from voicehub.core.lazy import resolve_reference
from voicehub.hyperion.errors import HyperionRegistryError

ENTRY_POINT_GROUP = "voicehub.hyperion_np_models"
"""Entry-point group through which third-party packages add HyperNPModel classes."""

_NP = "voicehub.hyperion.np"

CATALOG: Mapping[str, str] = MappingProxyType(
    {
        "CentWhiten": f"{_NP}.transforms:CentWhiten",
        "LNorm": f"{_NP}.transforms:LNorm",
        "PCA": f"{_NP}.transforms:PCA",
        "LDA": f"{_NP}.transforms:LDA",
        "TransformList": f"{_NP}.transforms:TransformList",
        "SPLDA": f"{_NP}.plda:SPLDA",
        "FRPLDA": f"{_NP}.plda:FRPLDA",
        "LinearGBE": f"{_NP}.classifiers:LinearGBE",
        "GaussCalibration": f"{_NP}.calibration:GaussCalibration",
        "BinaryLogisticRegression": f"{_NP}.calibration:BinaryLogisticRegression",
        "AdaptSNorm": f"{_NP}.score_norm:AdaptSNorm",
    }
)
"""Maintained class names and where each class lives (resolved on first use)."""

_classes: dict[str, type[Any]] = {}


def _reference(cls: type[Any]) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def register(cls: type[Any]) -> None:
    """Record ``cls`` under its class name.

    Re-running the same definition (a module reload) replaces the entry; a different class
    with the same name is refused.

    Raises:
        HyperionRegistryError: if the name belongs to a catalog class defined elsewhere, or
            another class already holds the name.
    """
    name = cls.__name__
    reference = _reference(cls)
    maintained = CATALOG.get(name)
    if maintained is not None and maintained != reference:
        raise HyperionRegistryError(
            f"HyperNPModel class name {name!r} is taken by the maintained class {maintained}; "
            f"{reference} must use another name (saved files record only the class name) "
            "or be defined with `register=False`"
        )
    existing = _classes.get(name)
    if existing is not None and existing is not cls and _reference(existing) != reference:
        raise HyperionRegistryError(
            f"HyperNPModel class name {name!r} is already registered by {_reference(existing)}; "
            f"{reference} must use another name or be defined with `register=False`"
        )
    _classes[name] = cls


def _entry_points(name: str | None = None) -> list[importlib.metadata.EntryPoint]:
    points = importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)
    return [ep for ep in points if name is None or ep.name == name]


def resolve(name: str) -> type[Any] | None:
    """Return the class registered as ``name``, importing it if needed; ``None`` if unknown.

    Raises:
        HyperionRegistryError: if two plug-ins declare ``name`` with different targets, or a
            plug-in target is not a class named ``name``.
    """
    found = _classes.get(name)
    if found is not None:
        return found
    reference = CATALOG.get(name)
    if reference is not None:
        resolved: type[Any] = resolve_reference(reference)
        return resolved
    points = _entry_points(name)
    targets = sorted({ep.value for ep in points})
    if len(targets) > 1:
        raise HyperionRegistryError(f"entry points in {ENTRY_POINT_GROUP!r} give {name!r} several targets: {targets}")
    if not targets:
        return None
    obj = points[0].load()
    if not isinstance(obj, type) or obj.__name__ != name:
        raise HyperionRegistryError(
            f"entry point {name!r} = {targets[0]} in {ENTRY_POINT_GROUP!r} must name a class called {name!r}"
        )
    return _classes.get(name, obj)


def available() -> tuple[str, ...]:
    """Every class name that :func:`resolve` can find, sorted."""
    names = set(_classes) | set(CATALOG) | {ep.name for ep in _entry_points()}
    return tuple(sorted(names))


__all__ = ["CATALOG", "ENTRY_POINT_GROUP", "available", "register", "resolve"]

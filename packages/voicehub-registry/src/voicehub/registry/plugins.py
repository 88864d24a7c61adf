"""Entry-point discovery of third-party model integrations.

A distribution declares its integrations in its ``pyproject.toml``::

    [project.entry-points."voicehub.models"]
    aurora = "aurora_voicehub.registration:MODEL_SPEC"

Each entry point names a :class:`~voicehub.registry.ModelSpec` (or a tuple of them) in a
light module (no torch at import time). The process-wide catalog loads the group once, on
its first read, after the built-in catalog.
"""

from __future__ import annotations

import importlib.metadata
import warnings
from typing import Literal

from voicehub.core.errors import VoiceHubError
from voicehub.registry.errors import PluginError
from voicehub.registry.model_registry import ModelRegistry, ModelSpec, _as_specs

MODEL_ENTRY_POINT_GROUP = "voicehub.models"
"""The entry-point group scanned for third-party :class:`ModelSpec` declarations."""


class PluginWarning(UserWarning):
    """A third-party plug-in was skipped because it failed to load or collided with a registration."""


def load_model_entry_points(
    registry: ModelRegistry,
    *,
    group: str = MODEL_ENTRY_POINT_GROUP,
    on_error: Literal["raise", "warn"] = "raise",
) -> tuple[ModelSpec, ...]:
    """Register every spec declared in the entry-point ``group`` into ``registry``.

    Entry points are processed in (distribution, name) order so the result is deterministic.
    Each entry point is all-or-nothing: a tuple of specs is registered completely or not at all.

    Args:
        registry: where to register.
        group: the entry-point group.
        on_error: ``"raise"`` stops at the first broken plug-in; ``"warn"`` skips it with a
            :class:`PluginWarning` (the process catalog does this, so one broken third-party
            package cannot make the built-in models unusable).

    Returns:
        The specs registered (or already present and identical).

    Raises:
        PluginError: naming the distribution and entry point that failed to load or does not
            point to a ``ModelSpec``; uninstall or fix that distribution.
        DuplicateRegistrationError: when a plug-in's model type or alias is already taken.
    """
    found = importlib.metadata.entry_points(group=group)
    ordered = sorted(found, key=lambda ep: ((ep.dist.name if ep.dist else ""), ep.name))
    added: list[ModelSpec] = []
    for entry_point in ordered:
        owner = entry_point.dist.name if entry_point.dist is not None else "an unknown distribution"
        where = f"entry point {entry_point.name!r} = {entry_point.value!r} of {owner} (group {group!r})"
        try:
            try:
                value = entry_point.load()
            except Exception as err:
                raise PluginError(
                    f"{where} failed to load: {type(err).__name__}: {err}; fix or uninstall {owner}",
                    reference=entry_point.value,
                ) from err
            specs = _as_specs(value, entry_point.value, where)
            new: list[ModelSpec] = []
            try:
                for spec in specs:
                    present = spec.model_type in registry and registry.get(spec.model_type) == spec
                    registry.add(spec)
                    if not present:
                        new.append(spec)
            except VoiceHubError:
                for spec in new:
                    registry.unregister(spec.model_type)
                raise
            added.extend(specs)
        except VoiceHubError as err:
            if on_error == "raise":
                raise
            warnings.warn(f"skipped {where}: {err}", PluginWarning, stacklevel=2)
    return tuple(added)


__all__ = ["MODEL_ENTRY_POINT_GROUP", "PluginWarning", "load_model_entry_points"]

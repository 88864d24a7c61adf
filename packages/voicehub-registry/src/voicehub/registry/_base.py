"""The registry machinery shared by :class:`ModelRegistry` and :class:`ArchitectureRegistry`.

A registry maps canonical names to frozen spec records, keeps case-insensitive aliases, refuses
every collision, and can be filled lazily: *populators* (callables registered with
:meth:`_NamedRegistry.add_populator`) run once, under the registry lock, before the first
read. A populator that fails leaves the registry exactly as it was and stays pending, so the
next read retries it and raises the same clear error.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from types import MappingProxyType
from typing import Generic, Protocol, TypeVar

from voicehub.core.errors import UnknownModelError
from voicehub.registry.errors import DuplicateRegistrationError, SpecError


class _Named(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def aliases(self) -> tuple[str, ...]: ...


SpecT = TypeVar("SpecT", bound=_Named)
RegistryT = TypeVar("RegistryT", bound="_NamedRegistry")  # type: ignore[type-arg]


def normalize_name(name: str, *, what: str = "name") -> str:
    """Return the registry key of ``name``: stripped and lower-cased.

    Raises:
        SpecError: if ``name`` is not a non-empty string without whitespace inside.
    """
    if not isinstance(name, str):
        raise SpecError(f"{what} must be a string, got {type(name).__name__}", field=what)
    key = name.strip().lower()
    if not key or any(ch.isspace() for ch in key):
        raise SpecError(f"{what} must be a non-empty name without spaces, got {name!r}", field=what)
    return key


def normalize_names(values: object, *, owner: str, field: str) -> tuple[str, ...]:
    """Normalize a tuple of names (aliases, tags) with :func:`normalize_name`, dropping repeats.

    Args:
        values: an iterable of strings (a bare string is refused, not split into characters).
        owner: the record named in messages (``"ModelSpec"``).
        field: the field named in messages (``"aliases"``).

    Returns:
        The keys in first-seen order.

    Raises:
        SpecError: if ``values`` is a string or not iterable, or an item is not a valid name.
    """
    if isinstance(values, str) or not isinstance(values, Iterable):
        raise SpecError(f"{owner}.{field} must be a tuple of strings, got {values!r}", field=field)
    return tuple(dict.fromkeys(normalize_name(value, what=field) for value in values))


class _NamedRegistry(Generic[SpecT]):
    """Thread-safe mapping of names and aliases to specs; see the module docstring."""

    kind: str = "entry"

    def __init__(self, *, name: str = "registry") -> None:
        self.name = name
        self._lock = threading.RLock()
        self._specs: dict[str, SpecT] = {}
        self._aliases: dict[str, str] = {}
        self._populators: list[tuple[str, Callable[[_NamedRegistry[SpecT]], None]]] = []
        self._populating = False

    # ------------------------------------------------------------------ population
    def add_populator(
        self, label: str, populate: Callable[[_NamedRegistry[SpecT]], None], *, first: bool = False
    ) -> None:
        """Queue ``populate(registry)`` to run once before the next read.

        Args:
            label: a short description used in error messages (``"built-in catalog"``).
            populate: called with this registry; registers specs through :meth:`register`.
            first: run before populators queued earlier (built-ins before plug-ins).
        """
        with self._lock:
            entry = (label, populate)
            if first:
                self._populators.insert(0, entry)
            else:
                self._populators.append(entry)

    @property
    def pending_populators(self) -> tuple[str, ...]:
        """Labels of the populators that have not run (or not succeeded) yet."""
        with self._lock:
            return tuple(label for label, _ in self._populators)

    def populate(self) -> None:
        """Run every pending populator now (reads do this implicitly).

        Raises:
            Whatever a populator raises; the registry is restored to its state before that
            populator ran and the populator stays pending.
        """
        with self._lock:
            if self._populating:
                return
            self._populating = True
            try:
                while self._populators:
                    _label, populate = self._populators[0]
                    snapshot = (dict(self._specs), dict(self._aliases))
                    try:
                        populate(self)
                    except BaseException:
                        self._specs, self._aliases = snapshot
                        self._restore_extra_state()
                        raise
                    self._populators.pop(0)
            finally:
                self._populating = False

    def _restore_extra_state(self) -> None:
        """Rebuild derived state after a failed populator (subclasses with indexes override)."""

    # ------------------------------------------------------------------ reading
    def normalize(self, name: str) -> str:
        """Return the canonical name for ``name`` or one of its aliases (case-insensitive).

        Raises:
            UnknownModelError: listing every registered name when ``name`` is unknown.
        """
        self.populate()
        key = normalize_name(name, what=f"{self.kind} name")
        with self._lock:
            if key in self._specs:
                return key
            target = self._aliases.get(key)
            if target is None:
                raise UnknownModelError(name, self._specs, kind=self.kind)
            return target

    def get(self, name: str) -> SpecT:
        """Return the spec registered under ``name`` or one of its aliases.

        Raises:
            UnknownModelError: (a ``KeyError``) listing every registered name.
        """
        key = self.normalize(name)
        with self._lock:
            return self._specs[key]

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        self.populate()
        key = name.strip().lower()
        with self._lock:
            return key in self._specs or key in self._aliases

    def __len__(self) -> int:
        self.populate()
        with self._lock:
            return len(self._specs)

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def names(self) -> tuple[str, ...]:
        """Canonical names in registration order."""
        self.populate()
        with self._lock:
            return tuple(self._specs)

    @property
    def aliases(self) -> Mapping[str, str]:
        """A read-only snapshot of ``alias -> canonical name``."""
        self.populate()
        with self._lock:
            return MappingProxyType(dict(self._aliases))

    # ------------------------------------------------------------------ writing
    def _check_free(self, key: str, *, owner: str, what: str) -> None:
        """Raise if ``key`` is taken by a registration other than ``owner``."""
        if key in self._specs and key != owner:
            raise DuplicateRegistrationError(
                f"{what} {key!r} collides with the registered {self.kind} {key!r}; choose another name",
                name=key,
                owner=key,
            )
        holder = self._aliases.get(key)
        if holder is not None and holder != owner:
            raise DuplicateRegistrationError(
                f"{what} {key!r} is already an alias of {self.kind} {holder!r}; "
                f"unregister that alias first or choose another name",
                name=key,
                owner=holder,
            )

    def _register(self, spec: SpecT, *, exist_ok: bool) -> SpecT:
        key = spec.name
        with self._lock:
            self._check_free_for_spec(spec, exist_ok=exist_ok)
            previous = self._specs.get(key)
            if previous is not None:
                self._drop_aliases(key)
            self._specs[key] = spec
            for alias in spec.aliases:
                self._aliases[alias] = key
            return spec

    def _check_free_for_spec(self, spec: SpecT, *, exist_ok: bool) -> None:
        key = spec.name
        if key in self._specs and not exist_ok:
            raise DuplicateRegistrationError(
                f"{self.kind} {key!r} is already registered; pass exist_ok=True to replace it, or unregister it first",
                name=key,
                owner=key,
            )
        holder = self._aliases.get(key)
        if holder is not None:
            raise DuplicateRegistrationError(
                f"{self.kind} name {key!r} is already an alias of {holder!r}; choose another name",
                name=key,
                owner=holder,
            )
        for alias in spec.aliases:
            if alias == key:
                raise SpecError(f"{self.kind} {key!r} lists its own name as an alias", field="aliases")
            self._check_free(alias, owner=key, what="alias")

    def _drop_aliases(self, key: str) -> None:
        for alias in [a for a, target in self._aliases.items() if target == key]:
            del self._aliases[alias]

    def _unregister(self, name: str) -> SpecT:
        key = self.normalize(name)
        with self._lock:
            spec = self._specs.pop(key)
            self._drop_aliases(key)
            return spec

    def register_alias(self, alias: str, name: str) -> None:
        """Make ``alias`` (case-insensitive) resolve to the registered ``name``.

        Raises:
            UnknownModelError: if ``name`` is not registered.
            DuplicateRegistrationError: if ``alias`` is a registered name or another's alias.
        """
        target = self.normalize(name)
        key = normalize_name(alias, what="alias")
        with self._lock:
            self._check_free(key, owner=target, what="alias")
            if key == target:
                raise SpecError(f"alias {alias!r} equals the name it points to", field="aliases")
            self._aliases[key] = target

    def unregister_alias(self, alias: str) -> str:
        """Remove ``alias``; return the name it pointed to.

        Raises:
            UnknownModelError: if ``alias`` is not a registered alias.
        """
        self.populate()
        key = normalize_name(alias, what="alias")
        with self._lock:
            target = self._aliases.pop(key, None)
            if target is None:
                raise UnknownModelError(alias, self._aliases, kind=f"{self.kind} alias")
            return target

    def clear(self) -> None:
        """Remove every registration and drop pending populators."""
        with self._lock:
            self._specs.clear()
            self._aliases.clear()
            self._populators.clear()
            self._restore_extra_state()

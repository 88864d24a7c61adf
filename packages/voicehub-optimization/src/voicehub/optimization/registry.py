"""The lazy registry of optimization passes.

A registry maps a lower-case name (``"eval-mode"``) to a *factory*: a pass class, a function
returning a configured pass, or a ``"module:attribute"`` reference to either, resolved on first
use. Nothing is imported when a pass is registered or listed. Each :meth:`create` call builds a
fresh pass instance, so plans never share pass state. Third-party passes arrive through the
``voicehub.optimization_passes`` entry-point group (name = registry name, value =
``module:factory``), discovered the first time the global registry is read.
"""

from __future__ import annotations

import importlib.metadata
import re
import threading
from collections.abc import Callable
from typing import Final, TypeVar, overload

from voicehub.core.errors import RegistryError, UnknownPassError, VoiceHubError
from voicehub.core.lazy import parse_reference, resolve_reference
from voicehub.optimization.errors import OptimizationConfigurationError
from voicehub.optimization.passes import OptimizationPass

ENTRY_POINT_GROUP: Final = "voicehub.optimization_passes"
"""Entry-point group through which installed distributions contribute passes."""

PassFactory = Callable[[], OptimizationPass]
"""A zero-argument callable (usually the pass class) returning a configured pass."""

F = TypeVar("F", bound=Callable[[], OptimizationPass])
AUTOMATIC_PLAN: Final = "auto"
"""The plan name that asks for automatic selection (:mod:`voicehub.optimization.automatic`); reserved,
so no pass may be registered under it."""

_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]*$")


def _normalize_name(name: str) -> str:
    if not isinstance(name, str):
        raise OptimizationConfigurationError(f"an optimization pass name must be a string, got {name!r}")
    key = name.strip().lower()
    if not _NAME.match(key):
        raise OptimizationConfigurationError(
            f"invalid optimization pass name {name!r}; expected lower-case letters, digits, '.', '_' or '-'"
        )
    return key


class OptimizationPassRegistry:
    """A thread-safe mapping from pass names to lazy factories.

    ``OptimizationPassRegistry()`` is an isolated, empty registry (for tests and embedding);
    :data:`OPTIMIZATION_PASSES` is the global one holding the built-in passes and those from
    entry points.

    Args:
        discover_entry_points: load the ``voicehub.optimization_passes`` entry points on first read.
    """

    def __init__(self, *, discover_entry_points: bool = False) -> None:
        self._factories: dict[str, PassFactory | str] = {}
        self._lock = threading.RLock()
        self._discover = discover_entry_points
        self._discovered = False

    # ---------------------------------------------------------------- writing
    def register(self, name: str, factory: PassFactory | str, *, exist_ok: bool = False) -> None:
        """Register ``factory`` under ``name``.

        Args:
            name: the registry name, case-insensitive (``"int8-dynamic"``).
            factory: a pass class, a zero-argument function returning a pass, or a
                ``"module:attribute"`` reference to one (imported on first :meth:`create`).
            exist_ok: replace an existing registration instead of refusing it; registering the
                very same factory again is always accepted.

        Raises:
            OptimizationConfigurationError: for an invalid name, or a factory that is neither
                callable nor a ``module:attribute`` string.
            RegistryError: if ``name`` is taken by another factory and ``exist_ok`` is false.
        """
        key = _normalize_name(name)
        if key == AUTOMATIC_PLAN:
            raise OptimizationConfigurationError(
                f"optimization pass name {name!r} is reserved: the plan {AUTOMATIC_PLAN!r} selects the passes an "
                "architecture records as verified; register the pass under another name"
            )
        if isinstance(factory, str):
            try:
                parse_reference(factory)
            except ValueError as err:
                raise OptimizationConfigurationError(f"optimization pass {name!r}: factory {err}") from err
        elif not callable(factory):
            raise OptimizationConfigurationError(
                f"optimization pass {name!r}: factory must be a pass class, a function returning a pass, or a "
                f"'module:attribute' string; got {type(factory).__name__}"
            )
        with self._lock:
            existing = self._factories.get(key)
            if existing is not None and existing != factory and not exist_ok:
                raise RegistryError(
                    f"optimization pass {key!r} is already registered ({_describe(existing)}); pick another name or "
                    "pass exist_ok=True to replace it"
                )
            self._factories[key] = factory

    def unregister(self, name: str) -> None:
        """Remove a registration.

        Raises:
            UnknownPassError: (a ``KeyError``) if ``name`` is not registered, listing the names.
        """
        key = _normalize_name(name)
        with self._lock:
            self._ensure_discovered()
            if key not in self._factories:
                raise UnknownPassError(name, self._factories)
            del self._factories[key]

    # ---------------------------------------------------------------- reading
    def list(self) -> tuple[str, ...]:
        """Every registered name, sorted. Imports nothing."""
        with self._lock:
            self._ensure_discovered()
            return tuple(sorted(self._factories))

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        with self._lock:
            self._ensure_discovered()
            return name.strip().lower() in self._factories

    def factory(self, name: str) -> PassFactory | str:
        """The registered factory (a reference string stays unresolved).

        Raises:
            UnknownPassError: if ``name`` is not registered, listing the registered names.
        """
        key = name.strip().lower() if isinstance(name, str) else name
        with self._lock:
            self._ensure_discovered()
            try:
                return self._factories[key]
            except KeyError:
                raise UnknownPassError(str(name), self._factories) from None

    def create(self, name: str) -> OptimizationPass:
        """Build a fresh, configured pass instance.

        Raises:
            UnknownPassError: if ``name`` is not registered, listing the registered names.
            OptimizationConfigurationError: if the factory cannot be imported, or returns
                something that is not a valid :class:`OptimizationPass`.
        """
        factory = self.factory(name)
        if isinstance(factory, str):
            try:
                factory = resolve_reference(factory)
            except VoiceHubError as err:
                raise OptimizationConfigurationError(f"optimization pass {name!r}: {err}") from err
            if not callable(factory):
                raise OptimizationConfigurationError(
                    f"optimization pass {name!r}: reference resolved to a non-callable {type(factory).__name__}"
                )
        created = factory()
        if not isinstance(created, OptimizationPass):
            raise OptimizationConfigurationError(
                f"optimization pass {name!r}: factory {_describe(factory)} returned {type(created).__name__}, "
                "expected an OptimizationPass instance"
            )
        type(created).validate_declaration()
        return created

    # ---------------------------------------------------------------- entry points
    def load_entry_points(self) -> tuple[str, ...]:
        """Register the passes of the ``voicehub.optimization_passes`` entry-point group now.

        Entry points never replace an existing registration (a built-in name stays built-in).

        Returns:
            The names that were added.

        Raises:
            RegistryError: if an entry point's name collides with a different registration.
        """
        added: list[str] = []
        with self._lock:
            self._discovered = True
            for entry_point in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
                key = _normalize_name(entry_point.name)
                if self._factories.get(key) == entry_point.value:
                    continue
                if key in self._factories:
                    raise RegistryError(
                        f"entry point {entry_point.name!r} = {entry_point.value!r} (group {ENTRY_POINT_GROUP}) "
                        f"collides with the registered optimization pass {key!r}; rename the entry point"
                    )
                self.register(key, entry_point.value)
                added.append(key)
        return tuple(added)

    def _ensure_discovered(self) -> None:
        if self._discover and not self._discovered:
            self.load_entry_points()


def _describe(factory: object) -> str:
    if isinstance(factory, str):
        return factory
    module = getattr(factory, "__module__", "?")
    return f"{module}:{getattr(factory, '__qualname__', type(factory).__name__)}"


OPTIMIZATION_PASSES: Final = OptimizationPassRegistry(discover_entry_points=True)
"""The global registry: built-in passes plus third-party entry points."""


@overload
def register_optimization_pass(
    name: str, factory: None = None, *, exist_ok: bool = False, registry: OptimizationPassRegistry | None = None
) -> Callable[[F], F]: ...


@overload
def register_optimization_pass(
    name: str,
    factory: PassFactory | str,
    *,
    exist_ok: bool = False,
    registry: OptimizationPassRegistry | None = None,
) -> None: ...


def register_optimization_pass(
    name: str,
    factory: PassFactory | str | None = None,
    *,
    exist_ok: bool = False,
    registry: OptimizationPassRegistry | None = None,
) -> Callable[[F], F] | None:
    """Register a pass factory, as a function call or as a class/function decorator.

    Example::

        @register_optimization_pass("acme-eval-mode")
        class AcmeEvalModePass(OptimizationPass): ...

        register_optimization_pass("fp16", lambda: DtypePass(dtype="float16"))

    Args:
        name: the registry name.
        factory: the factory; omit it to use the decorator form.
        exist_ok: replace an existing registration of ``name``.
        registry: the registry to write to (default: the global :data:`OPTIMIZATION_PASSES`).

    Returns:
        ``None`` in the function form; in the decorator form, a decorator returning its argument.

    Raises:
        RegistryError: if ``name`` is already registered to another factory.
    """
    target = OPTIMIZATION_PASSES if registry is None else registry
    if factory is not None:
        target.register(name, factory, exist_ok=exist_ok)
        return None

    def decorator(obj: F) -> F:
        target.register(name, obj, exist_ok=exist_ok)
        return obj

    return decorator


__all__ = [
    "AUTOMATIC_PLAN",
    "ENTRY_POINT_GROUP",
    "OPTIMIZATION_PASSES",
    "OptimizationPassRegistry",
    "PassFactory",
    "register_optimization_pass",
]

"""Pickling a task wrapper as a *recipe*: what rebuilds it, never its loaded runtime.

A wrapper holds locks and, once loaded, a graph of tensors; neither belongs in a pickle sent to
a worker process or a Ray actor. ``pickle.dumps(wrapper)`` (and ``cloudpickle``) therefore
serializes a :class:`ModelRecipe`:

* the wrapper class (by reference: ``module.qualname``, importable in the worker);
* the model config and the default inference options, as their versioned JSON documents
  (``type``/``schema_version``; the worker's reader validates them);
* the checkpoint source (a :class:`~voicehub.registry.CheckpointSource`: a path, a hub id or an
  installed distribution, resolved again in the worker), the requested device and dtype;
* the passes of the optimization plan active in inference mode, if any: re-applied, in order,
  when the rebuilt wrapper loads (a plan whose passes do not pickle is refused);
* the state a task base adds (:meth:`~voicehub.modeling.PreTrainedSpeechModel._recipe_extras`),
  for example an attached PLDA back-end, carried by value.

Unpickling builds a wrapper in the ``created`` state: nothing is read until its first call,
so every worker loads its model exactly once, where it runs. Refused, with
:class:`~voicehub.errors.UnpicklableModelError`: a wrapper loaded for training (its weights
may differ from its source: ``save_pretrained`` them first), one with a tainted plan, and
state that does not pickle. Weights changed in place outside the optimization API are not
detected: the recipe rebuilds from the source.
"""

from __future__ import annotations

import dataclasses
import pickle
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from voicehub.core.device import Device, DType
from voicehub.core.runtime import RuntimeState
from voicehub.errors import UnpicklableModelError
from voicehub.registry.checkpoints import CheckpointSource

if TYPE_CHECKING:
    from voicehub.modeling import AnySpeechModel
    from voicehub.optimization import OptimizationPass

RECIPE_SCHEMA_VERSION = 1
"""Version of the :class:`ModelRecipe` layout; a recipe of another version is refused when rebuilt."""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ModelRecipe:
    """Everything that rebuilds a task wrapper in another process (see the module docstring).

    Attributes:
        wrapper_class: the wrapper's class (pickled by reference).
        config_json: the model config's JSON document.
        options_json: the default inference options' JSON document.
        source: the checkpoint source, or ``None`` for a model without one.
        device: the requested device (``auto`` stays ``auto``: each worker picks its own).
        dtype: the requested dtype.
        plan: the passes of the active inference plan, in application order (empty: none).
        extras: the task base's own state (``_recipe_extras``), by name.
        schema_version: :data:`RECIPE_SCHEMA_VERSION` when written.
    """

    wrapper_class: type[AnySpeechModel]
    config_json: str
    options_json: str
    source: CheckpointSource | None
    device: Device
    dtype: DType
    plan: tuple[OptimizationPass, ...] = ()
    extras: Mapping[str, object] = dataclasses.field(default_factory=dict)
    schema_version: int = RECIPE_SCHEMA_VERSION

    def build(self) -> AnySpeechModel:
        """Create the wrapper, not loaded; the plan (if any) is applied by its first load.

        Raises:
            UnpicklableModelError: for a recipe of another schema version.
            ConfigError: for a config or options document the installed wrapper does not accept.
        """
        cls = self.wrapper_class
        if self.schema_version != RECIPE_SCHEMA_VERSION:
            raise UnpicklableModelError(
                f"a pickled {cls.__name__} recipe has schema_version {self.schema_version}, this VoiceHub reads "
                f"{RECIPE_SCHEMA_VERSION}; pickle it again with the VoiceHub version the workers run"
            )
        config = cls.config_class.from_json(self.config_json)
        options = cls.options_class.from_json(self.options_json)
        model = cls(config, source=self.source, device=self.device, dtype=self.dtype, options=options)
        model._apply_recipe_extras(dict(self.extras))
        if self.plan:
            model._pending_plan = self.plan
        return model


def _check_picklable(value: object, what: str, fix: str) -> None:
    """Refuse ``value`` with a named error when the standard pickler cannot serialize it."""
    try:
        pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as err:
        raise UnpicklableModelError(f"{what} cannot be pickled ({type(err).__name__}: {err}); {fix}") from err


def recipe_of(model: AnySpeechModel) -> ModelRecipe:
    """The recipe that rebuilds ``model`` (called by the wrapper's ``__reduce__``).

    Raises:
        UnpicklableModelError: for a wrapper loaded for training, a tainted or unpicklable plan,
            a plan active in training mode, or task state that does not pickle.
    """
    name = type(model).__name__
    if model.state is RuntimeState.TRAINING:
        raise UnpicklableModelError(
            f"cannot pickle a {name} loaded for training: its weights may differ from its checkpoint source, and "
            f"a pickle carries only the source; call save_pretrained(DIR) and pickle {name}.from_pretrained(DIR)"
        )
    plan: tuple[OptimizationPass, ...] = ()
    result = model.active_optimization(RuntimeState.INFERENCE)
    if result is not None:
        if result.tainted is not None:
            raise UnpicklableModelError(
                f"cannot pickle a {name} whose runtime is tainted by a failed optimization plan ({result.tainted}); "
                f"build a new wrapper (or unload() and load() this one) and pickle that"
            )
        plan = tuple(applied.optimization_pass for applied in result.applied)
        for applied in result.applied:
            _check_picklable(
                applied.optimization_pass,
                f"{name}: the active optimization pass {applied.name!r}",
                "restore_optimization_plan() before pickling and apply the plan in the worker instead",
            )
    extras = model._recipe_extras()
    for key, value in extras.items():
        _check_picklable(value, f"{name}: its {key}", "detach it before pickling, or save it with save_pretrained()")
    return ModelRecipe(
        wrapper_class=type(model),
        config_json=model.config.to_json(),
        options_json=model.default_options.to_json(),
        source=model.source,
        device=model._requested_device,
        dtype=model._requested_dtype,
        plan=plan,
        extras=extras,
    )


def rebuild(recipe: ModelRecipe) -> Any:
    """Unpickling entry point: ``recipe.build()`` (a module-level function, so pickle finds it)."""
    return recipe.build()


__all__ = ["RECIPE_SCHEMA_VERSION", "ModelRecipe", "rebuild", "recipe_of"]

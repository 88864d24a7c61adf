"""``eval-mode``: switch every submodule to evaluation behaviour (dropout off, norms frozen)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from voicehub.core.strict_json import JSONValue
from voicehub.optimization.capabilities import OptimizationCapabilities, OptimizationContext, OptimizationMode
from voicehub.optimization.execution import not_a_module_reason, torch_module
from voicehub.optimization.passes import OptimizationPass, PassResult


class EvalModePass(OptimizationPass):
    """Calls ``eval()`` on the runtime and remembers each submodule's ``training`` flag.

    Restoring puts every flag back exactly (a model with some submodules deliberately in eval
    mode keeps them so). A runtime that is not a ``torch.nn.Module`` reports not-applicable.
    """

    pass_id: ClassVar[str] = "voicehub.eval-mode"
    pass_version: ClassVar[str] = "1"
    optimization_kind: ClassVar[str | None] = "eval-mode"
    capabilities: ClassVar[OptimizationCapabilities] = OptimizationCapabilities(
        modes=(OptimizationMode.INFERENCE,), reversible=True, persistent=True, streaming_safe=True
    )

    def manifest_configuration(self) -> Mapping[str, JSONValue]:
        """No options."""
        return {}

    def apply(self, model: object, context: OptimizationContext) -> PassResult:
        """Switch to eval mode; not-applicable for a non-torch runtime."""
        if not torch_module(model):
            return self.not_applicable_result(model, reason=not_a_module_reason(model, "eval()"))
        module: Any = model
        flags = {name: bool(sub.training) for name, sub in module.named_modules(remove_duplicate=False)}
        module.eval()
        switched = sum(flags.values())
        return PassResult(
            model=model,
            state={"training_flags": flags},
            metadata={"outcome": "configured", "modules_switched_to_eval": switched},
        )

    def restore(self, model: object, state: Mapping[str, Any], context: OptimizationContext) -> object:
        """Put every submodule's ``training`` flag back."""
        module: Any = model
        flags: Mapping[str, bool] = state["training_flags"]
        for name, sub in module.named_modules(remove_duplicate=False):
            if name in flags:
                sub.training = flags[name]
        return model


__all__ = ["EvalModePass"]

"""``inference-mode``: run the runtime's execution methods under ``torch.inference_mode()``.

Inside inference mode torch records no autograd graph and skips version-counter bookkeeping.
The setting is scoped: each execution method is wrapped so that the mode is entered on the
call and left (in ``finally``, by the context manager) when it returns; nothing global changes
between calls. Restoring removes the wrappers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from voicehub.core.strict_json import JSONValue
from voicehub.optimization.capabilities import OptimizationCapabilities, OptimizationContext, OptimizationMode
from voicehub.optimization.execution import (
    execution_methods,
    not_a_module_reason,
    patch_methods,
    torch_module,
    unpatch_methods,
)
from voicehub.optimization.passes import OptimizationPass, PassResult


class InferenceModePass(OptimizationPass):
    """Wraps the execution methods (``forward`` or the ``optimization_execution_methods()`` protocol).

    Tensors returned under inference mode cannot later join an autograd graph, hence
    inference mode only.
    """

    pass_id: ClassVar[str] = "voicehub.inference-mode"
    pass_version: ClassVar[str] = "1"
    optimization_kind: ClassVar[str | None] = "inference-mode"
    capabilities: ClassVar[OptimizationCapabilities] = OptimizationCapabilities(
        modes=(OptimizationMode.INFERENCE,), reversible=True, streaming_safe=True
    )

    def manifest_configuration(self) -> Mapping[str, JSONValue]:
        """No options."""
        return {}

    def validate(self, model: object, context: OptimizationContext) -> None:
        """Capabilities, then a malformed execution-method protocol."""
        super().validate(model, context)
        if torch_module(model):
            execution_methods(model, self.pass_id)

    def apply(self, model: object, context: OptimizationContext) -> PassResult:
        """Wrap every execution method; not-applicable for a non-torch runtime."""
        if not torch_module(model):
            return self.not_applicable_result(model, reason=not_a_module_reason(model, "torch.inference_mode()"))
        import torch

        names = execution_methods(model, self.pass_id)

        def make_wrapper(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
            def run_in_inference_mode(*args: Any, **kwargs: Any) -> Any:
                with torch.inference_mode():
                    return method(*args, **kwargs)

            return run_in_inference_mode

        token = patch_methods(model, names, make_wrapper)
        return PassResult(
            model=model,
            state={"token": token},
            metadata={"outcome": "configured", "wrapped_methods": list(names)},
        )

    def restore(self, model: object, state: Mapping[str, Any], context: OptimizationContext) -> object:
        """Remove the wrappers."""
        unpatch_methods(model, state["token"], self.pass_id)
        return model


__all__ = ["InferenceModePass"]

"""``threads``: a fixed intra-op thread count while the runtime executes.

``torch.set_num_threads`` is process-global, so the pass scopes it: each execution method sets
the count on entry and puts the previous count back in ``finally``. Between calls the process
keeps its own setting. Small streaming models (a 32 ms VAD chunk) often run faster on one
thread than on many, because thread hand-off costs more than the work it splits.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from voicehub.core.strict_json import JSONValue
from voicehub.optimization.capabilities import (
    OptimizationCapabilities,
    OptimizationContext,
    OptimizationMode,
    device_type,
)
from voicehub.optimization.errors import OptimizationCompatibilityError, OptimizationConfigurationError
from voicehub.optimization.execution import (
    execution_methods,
    not_a_module_reason,
    patch_methods,
    torch_module,
    unpatch_methods,
)
from voicehub.optimization.passes import OptimizationPass, PassResult


class ThreadsPass(OptimizationPass):
    """Run the runtime's execution methods with ``num_threads`` intra-op threads.

    Args:
        num_threads: intra-op threads while the runtime runs, at least 1 (default 1).

    Raises:
        OptimizationConfigurationError: if ``num_threads`` is not a positive int.
    """

    pass_id: ClassVar[str] = "voicehub.threads"
    pass_version: ClassVar[str] = "1"
    optimization_kind: ClassVar[str | None] = "threads"
    capabilities: ClassVar[OptimizationCapabilities] = OptimizationCapabilities(
        modes=(OptimizationMode.INFERENCE, OptimizationMode.TRAINING), reversible=True, streaming_safe=True
    )

    def __init__(self, num_threads: int = 1) -> None:
        if isinstance(num_threads, bool) or not isinstance(num_threads, int) or num_threads < 1:
            raise OptimizationConfigurationError(f"ThreadsPass: num_threads must be an int >= 1, got {num_threads!r}")
        self.num_threads = num_threads

    def manifest_configuration(self) -> Mapping[str, JSONValue]:
        """``{"num_threads": n}``."""
        return {"num_threads": self.num_threads}

    def validate(self, model: object, context: OptimizationContext) -> None:
        """Capabilities, the execution-method protocol, and the machine's CPU count.

        Raises:
            OptimizationCompatibilityError: if more threads are requested than the machine has CPUs.
        """
        super().validate(model, context)
        available = os.cpu_count() or 1
        if self.num_threads > available:
            raise OptimizationCompatibilityError(
                self.pass_id,
                (
                    f"num_threads={self.num_threads} exceeds the {available} CPU(s) of this machine; request at most "
                    f"{available}",
                ),
            )
        if torch_module(model):
            execution_methods(model, self.pass_id)

    def apply(self, model: object, context: OptimizationContext) -> PassResult:
        """Wrap every execution method; not-applicable off the CPU or for a non-torch runtime."""
        if not torch_module(model):
            return self.not_applicable_result(model, reason=not_a_module_reason(model, "a torch thread count"))
        if context.device is not None and device_type(context.device) != "cpu":
            return self.not_applicable_result(
                model,
                reason=f"the runtime is on {context.device}; intra-op threads only affect CPU kernels",
            )
        import torch

        names = execution_methods(model, self.pass_id)
        num_threads = self.num_threads

        def make_wrapper(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
            def run_with_threads(*args: Any, **kwargs: Any) -> Any:
                previous = torch.get_num_threads()
                torch.set_num_threads(num_threads)
                try:
                    return method(*args, **kwargs)
                finally:
                    torch.set_num_threads(previous)

            return run_with_threads

        token = patch_methods(model, names, make_wrapper)
        return PassResult(
            model=model,
            state={"token": token},
            metadata={"outcome": "configured", "num_threads": num_threads, "wrapped_methods": list(names)},
        )

    def restore(self, model: object, state: Mapping[str, Any], context: OptimizationContext) -> object:
        """Remove the wrappers."""
        unpatch_methods(model, state["token"], self.pass_id)
        return model


__all__ = ["ThreadsPass"]

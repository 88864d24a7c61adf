"""``compile``: ``torch.compile`` of the runtime's execution methods, with a recorded eager fallback.

The execution *methods* (``forward``, or those named by ``optimization_execution_methods()``)
are compiled and installed as instance attributes, not the module: ``state_dict`` keys stay
exactly the same, and restoring removes the compiled methods.

torch.compile is lazy: graphs are captured on the first call. With ``requirement="auto"`` a
compilation failure at that call falls back to eager execution for good, and the manifest's
``runtime_status`` records ``eager-fallback`` with the reason; with ``"required"`` the error
propagates. A backend that cannot run (unknown to this torch, or inductor on a CPU without a
C++ compiler) fails in ``validate``, before any change, when it was named explicitly
(``TorchCompilePass(backend="no-such-backend")``, seed 000: "an explicit backend that cannot run
must still fail before mutation") or when ``requirement="required"``; only the default backend
(no ``backend=`` given) is recorded as ``eager-fallback`` at apply time. Architectures opt out with
the feature ``compile-inference-unsafe`` (or ``compile-training-unsafe``).
"""

from __future__ import annotations

import shutil
import threading
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Literal

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

DEFAULT_BACKEND = "inductor"
"""The backend used when none is named; the only one that may fall back to eager when it cannot run."""

_MODES = (None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


class _CompileStatus:
    """The evolving status of one applied compile pass (shared by its wrappers)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.methods: dict[str, str] = {}
        self.reasons: dict[str, str] = {}

    def as_json(self) -> dict[str, JSONValue]:
        with self.lock:
            statuses = set(self.methods.values())
            overall = (
                "eager-fallback"
                if "eager-fallback" in statuses
                else "compiled"
                if statuses == {"compiled"}
                else ("pending")
            )
            return {"status": overall, "methods": dict(self.methods), "fallback_reasons": dict(self.reasons)}


class TorchCompilePass(OptimizationPass):
    """Compile the execution methods with ``torch.compile``.

    Args:
        backend: a ``torch._dynamo`` backend name, or ``None`` for the default (``"inductor"``). A
            backend named here must be able to run: if it cannot, :meth:`validate` raises before
            any change; only the default may fall back to eager execution.
        mode: ``None`` or a torch.compile mode (``"reduce-overhead"``, ``"max-autotune"``...).
        fullgraph: refuse graph breaks.
        dynamic: ``None`` (automatic), or force dynamic/static shapes.
        requirement: ``"auto"`` falls back to eager with the reason recorded; ``"required"`` raises.

    Raises:
        OptimizationConfigurationError: for an invalid option.
    """

    pass_id: ClassVar[str] = "voicehub.compile"
    pass_version: ClassVar[str] = "1"
    optimization_kind: ClassVar[str | None] = "compile"
    capabilities: ClassVar[OptimizationCapabilities] = OptimizationCapabilities(
        modes=(OptimizationMode.INFERENCE, OptimizationMode.TRAINING),
        devices=("cpu", "cuda"),
        reversible=True,
        persistent=True,
        streaming_safe=True,
    )

    def __init__(
        self,
        *,
        backend: str | None = None,
        mode: str | None = None,
        fullgraph: bool = False,
        dynamic: bool | None = None,
        requirement: Literal["auto", "required"] = "auto",
    ) -> None:
        if backend is not None and (not isinstance(backend, str) or not backend.strip()):
            raise OptimizationConfigurationError(
                f"TorchCompilePass: backend must be a torch.compile backend name (e.g. 'inductor') or None for the "
                f"default, got {backend!r}"
            )
        if mode not in _MODES:
            raise OptimizationConfigurationError(f"TorchCompilePass: mode must be one of {list(_MODES)}, got {mode!r}")
        if not isinstance(fullgraph, bool) or dynamic not in (None, True, False):
            raise OptimizationConfigurationError(
                "TorchCompilePass: fullgraph must be a bool and dynamic a bool or None"
            )
        if requirement not in ("auto", "required"):
            raise OptimizationConfigurationError(
                f"TorchCompilePass: requirement must be 'auto' or 'required', got {requirement!r}"
            )
        self.backend = DEFAULT_BACKEND if backend is None else backend
        self.backend_explicit = backend is not None
        self.mode = mode
        self.fullgraph = fullgraph
        self.dynamic = dynamic
        self.requirement = requirement

    def manifest_configuration(self) -> Mapping[str, JSONValue]:
        """Every torch.compile option, defaults included."""
        return {
            "backend": self.backend,
            "mode": self.mode,
            "fullgraph": self.fullgraph,
            "dynamic": self.dynamic,
            "requirement": self.requirement,
        }

    def _backend_problem(self, context: OptimizationContext) -> str | None:
        import torch._dynamo

        available = torch._dynamo.list_backends(exclude_tags=())
        if self.backend not in available:
            # torch registers fault-injection and minifier backends for its own tests: not worth suggesting.
            usable = [b for b in available if not b.endswith("_TESTING_ONLY") and "minifier" not in b]
            return (
                f"torch.compile backend {self.backend!r} is not available in this torch; use one of {usable} "
                "(usually 'inductor')"
            )
        if self.backend == "inductor" and device_type(context.device or "cpu") == "cpu":
            import torch._inductor.config as inductor_config

            compilers = inductor_config.cpp.cxx
            names = [c for c in (compilers if isinstance(compilers, tuple) else (compilers,)) if c]
            if not any(shutil.which(str(c)) for c in names):
                return f"inductor on the CPU needs a C++ compiler ({names}); none was found on PATH"
        return None

    def validate(self, model: object, context: OptimizationContext) -> None:
        """Capabilities, the execution-method protocol and, for a named or required backend, that it can run.

        Raises:
            OptimizationCompatibilityError: if the backend was named explicitly (or
                ``requirement="required"``) and cannot run here: unknown to this torch, or inductor
                on a CPU without a C++ compiler. The message lists the usable backends.
        """
        super().validate(model, context)
        if not torch_module(model):
            if self.requirement == "required":
                raise OptimizationCompatibilityError(self.pass_id, (not_a_module_reason(model, "torch.compile"),))
            return
        execution_methods(model, self.pass_id)
        if self.requirement == "required" or self.backend_explicit:
            problem = self._backend_problem(context)
            if problem is not None:
                reasons = [problem]
                if self.backend_explicit:
                    reasons.append(
                        f"backend={self.backend!r} was named explicitly, so it is not replaced by eager execution; "
                        "name a usable backend, or omit backend= to let the default fall back to eager"
                    )
                raise OptimizationCompatibilityError(self.pass_id, tuple(reasons))

    def apply(self, model: object, context: OptimizationContext) -> PassResult:
        """Install compiled execution methods; record an eager fallback when the backend cannot run."""
        if not torch_module(model):
            return self.not_applicable_result(model, reason=not_a_module_reason(model, "torch.compile"))
        problem = self._backend_problem(context)
        names = execution_methods(model, self.pass_id)
        if problem is not None:
            return PassResult(
                model=model,
                state={"token": None},
                metadata={"outcome": "eager-fallback", "reason": problem, "compiled_methods": []},
            )
        import torch

        status = _CompileStatus()
        required = self.requirement == "required"
        options: dict[str, Any] = {"backend": self.backend, "fullgraph": self.fullgraph, "dynamic": self.dynamic}
        if self.mode is not None:
            options["mode"] = self.mode

        def make_wrapper(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
            compiled = torch.compile(method, **options)
            status.methods[name] = "pending"

            def run_compiled(*args: Any, **kwargs: Any) -> Any:
                if status.methods.get(name) == "eager-fallback":
                    return method(*args, **kwargs)
                try:
                    out = compiled(*args, **kwargs)
                except Exception as err:
                    if required or _is_input_error(err):
                        raise
                    with status.lock:
                        status.methods[name] = "eager-fallback"
                        status.reasons[name] = f"{type(err).__name__}: {str(err).splitlines()[0][:300]}"
                    return method(*args, **kwargs)
                if status.methods.get(name) == "pending":
                    with status.lock:
                        status.methods[name] = "compiled"
                return out

            return run_compiled

        token = patch_methods(model, names, make_wrapper)
        return PassResult(
            model=model,
            state={"token": token, "status": status},
            metadata={"outcome": "configured", "compiled_methods": list(names), "compilation": "on-first-call"},
        )

    def runtime_manifest_status(self, result: PassResult) -> Mapping[str, JSONValue] | None:
        """``{"status": "pending" | "compiled" | "eager-fallback", "methods": ..., "fallback_reasons": ...}``."""
        status = result.state.get("status")
        return status.as_json() if isinstance(status, _CompileStatus) else None

    def restore(self, model: object, state: Mapping[str, Any], context: OptimizationContext) -> object:
        """Remove the compiled methods."""
        if state["token"] is not None:
            unpatch_methods(model, state["token"], self.pass_id)
        return model


def _is_input_error(err: Exception) -> bool:
    """A VoiceHub input error raised by the model itself is the caller's problem, not the compiler's."""
    from voicehub.core.errors import VoiceHubError

    cause: BaseException | None = err
    while cause is not None:
        if isinstance(cause, VoiceHubError):
            return True
        cause = cause.__cause__
    return False


__all__ = ["TorchCompilePass"]

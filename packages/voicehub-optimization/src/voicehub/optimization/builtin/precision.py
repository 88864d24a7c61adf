"""``dtype``: cast a float32 runtime to float16 or bfloat16.

Every floating parameter and buffer is cast; the original tensors are kept, so restoring puts
the very same float32 values back (bit-identical, no float32 -> bfloat16 -> float32 rounding).
Execution methods are wrapped so callers keep their float32 contract: floating tensor
arguments (also inside tuples, lists and dicts) are cast to the new dtype, and floating tensor
results are cast back to float32.

A module is unsafe in low precision, and the pass refuses it, when:

* a submodule sets ``low_precision_unsafe = True`` (the protocol; it must be a bool);
* the architecture declares the feature ``"<dtype>-unsafe"`` (e.g. ``"bfloat16-unsafe"``);
* the runtime holds complex tensors or already-quantized submodules.

With ``requirement="auto"`` (the default) an unsafe runtime reports not-applicable; with
``"required"`` it fails before any change. float16 on the CPU and bfloat16 on a GPU without
bfloat16 support always fail before any change: they are hardware requests that cannot run.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Literal

from voicehub.core.strict_json import JSONValue
from voicehub.optimization.capabilities import (
    OptimizationCapabilities,
    OptimizationContext,
    OptimizationMode,
    device_type,
)
from voicehub.optimization.errors import (
    OptimizationCompatibilityError,
    OptimizationConfigurationError,
    OptimizationProtocolError,
)
from voicehub.optimization.execution import (
    execution_methods,
    not_a_module_reason,
    patch_methods,
    torch_module,
    unpatch_methods,
)
from voicehub.optimization.passes import OptimizationPass, PassResult

UNSAFE_PROTOCOL = "low_precision_unsafe"
_TARGETS = ("float16", "bfloat16")


class DtypePass(OptimizationPass):
    """Cast the runtime to a half-precision dtype, refusing unsafe modules.

    Args:
        dtype: ``"bfloat16"`` (default; runs on CPUs and recent GPUs) or ``"float16"`` (GPU only).
        requirement: ``"auto"``: an unsafe runtime reports not-applicable; ``"required"``: it
            raises before any change.

    Raises:
        OptimizationConfigurationError: for another dtype or requirement.
    """

    pass_id: ClassVar[str] = "voicehub.dtype"
    pass_version: ClassVar[str] = "1"
    optimization_kind: ClassVar[str | None] = "dtype"
    capabilities: ClassVar[OptimizationCapabilities] = OptimizationCapabilities(
        modes=(OptimizationMode.INFERENCE,),
        devices=("cpu", "cuda"),
        dtypes=("float32",),
        reversible=True,
        # Measured: Silero VAD streamed in 1000-sample pushes over tests/data/silero/test.wav gives the
        # same 38 events (19 segments) in bfloat16 as in float32; the carried LSTM state stays in the
        # weights' dtype between chunks, so the pass keeps a streaming runtime's state correct.
        streaming_safe=True,
    )

    def __init__(self, dtype: str = "bfloat16", requirement: Literal["auto", "required"] = "auto") -> None:
        if dtype not in _TARGETS:
            raise OptimizationConfigurationError(f"DtypePass: dtype must be one of {list(_TARGETS)}, got {dtype!r}")
        if requirement not in ("auto", "required"):
            raise OptimizationConfigurationError(
                f"DtypePass: requirement must be 'auto' or 'required', got {requirement!r}"
            )
        self.dtype = dtype
        self.requirement = requirement

    def manifest_configuration(self) -> Mapping[str, JSONValue]:
        """``{"dtype": ..., "requirement": ...}``."""
        return {"dtype": self.dtype, "requirement": self.requirement}

    def planned_context(self, context: OptimizationContext) -> OptimizationContext:
        """``context`` in the target dtype (what the runtime's floating tensors are after :meth:`apply`)."""
        return dataclasses.replace(context, dtype=self.dtype)

    def validate(self, model: object, context: OptimizationContext) -> None:
        """Capabilities, hardware support, the ``low_precision_unsafe`` protocol, and unsafe modules.

        Raises:
            OptimizationCompatibilityError: for float16 on the CPU, bfloat16 on a GPU without it,
                or (``requirement="required"``) an unsafe runtime.
            OptimizationProtocolError: for a non-bool ``low_precision_unsafe``.
        """
        super().validate(model, context)
        if not torch_module(model):
            if self.requirement == "required":
                raise OptimizationCompatibilityError(self.pass_id, (not_a_module_reason(model, "a dtype cast"),))
            return
        device = device_type(context.device or "cpu")
        if device == "cpu" and self.dtype == "float16":
            raise OptimizationCompatibilityError(
                self.pass_id,
                ("float16 is not supported on the CPU (most CPU kernels lack it); use dtype='bfloat16' or a GPU",),
            )
        if device == "cuda" and self.dtype == "bfloat16":
            import torch

            if not torch.cuda.is_bf16_supported():
                raise OptimizationCompatibilityError(
                    self.pass_id, ("this GPU does not support bfloat16; use dtype='float16'",)
                )
        execution_methods(model, self.pass_id)
        reason = self._unsafe_reason(model, context)
        if reason is not None and self.requirement == "required":
            raise OptimizationCompatibilityError(self.pass_id, (reason,))

    def _unsafe_reason(self, model: Any, context: OptimizationContext) -> str | None:
        for feature in (f"{self.dtype}-unsafe", "low-precision-unsafe"):
            if feature in context.architecture_features:
                return f"architecture {context.architecture!r} declares the feature {feature!r}"
        for name, module in model.named_modules():
            flag = getattr(module, UNSAFE_PROTOCOL, None)
            if flag is None:
                continue
            if not isinstance(flag, bool):
                raise OptimizationProtocolError(
                    f"{type(module).__name__}.{UNSAFE_PROTOCOL} must be a bool, got {flag!r}",
                    pass_id=self.pass_id,
                    module=name,
                )
            if flag:
                return f"submodule {name or '<root>'} ({type(module).__name__}) declares {UNSAFE_PROTOCOL}=True"
        for name, module in model.named_modules():
            if type(module).__module__.startswith("torch.ao.nn.quantized"):
                return f"submodule {name} is quantized ({type(module).__name__}); cast before quantizing, not after"
        for name, tensor in [*model.named_parameters(), *model.named_buffers()]:
            if tensor.is_complex():
                return f"tensor {name} is complex ({tensor.dtype}); a real half-precision cast would drop its meaning"
        return None

    def apply(self, model: object, context: OptimizationContext) -> PassResult:
        """Cast and wrap; not-applicable for a non-torch or unsafe runtime."""
        if not torch_module(model):
            return self.not_applicable_result(model, reason=not_a_module_reason(model, "a dtype cast"))
        import torch

        module: Any = model
        reason = self._unsafe_reason(module, context)
        if reason is not None:
            return self.not_applicable_result(
                model, reason=f"{reason}; the runtime stays in {context.dtype}. Fix the module or drop 'dtype'"
            )
        target = getattr(torch, self.dtype)
        originals: list[tuple[Any, str, str, Any]] = []  # (module, "param"|"buffer", name, original tensor)
        for sub in module.modules():
            for name, param in sub._parameters.items():
                if param is not None and param.is_floating_point():
                    originals.append((sub, "param", name, param.data))
            for name, buffer in sub._buffers.items():
                if buffer is not None and buffer.is_floating_point():
                    originals.append((sub, "buffer", name, buffer))
        names = execution_methods(model, self.pass_id)
        try:
            with torch.no_grad():
                for sub, kind, name, tensor in originals:
                    if kind == "param":
                        sub._parameters[name].data = tensor.to(target)
                    else:
                        sub._buffers[name] = tensor.to(target)

            def make_wrapper(method_name: str, method: Callable[..., Any]) -> Callable[..., Any]:
                def run_in_dtype(*args: Any, **kwargs: Any) -> Any:
                    args = _cast(args, torch.float32, target)
                    kwargs = _cast(kwargs, torch.float32, target)
                    return _cast(method(*args, **kwargs), target, torch.float32)

                return run_in_dtype

            token = patch_methods(model, names, make_wrapper)
        except BaseException:
            _put_back(originals)
            raise
        verified = context.architecture_dtypes is not None and self.dtype in context.architecture_dtypes
        return PassResult(
            model=model,
            state={"originals": originals, "token": token},
            metadata={
                "outcome": "configured",
                "dtype": self.dtype,
                "cast_tensors": len(originals),
                "wrapped_methods": list(names),
                "architecture_verified_dtype": verified,
            },
        )

    def restore(self, model: object, state: Mapping[str, Any], context: OptimizationContext) -> object:
        """Remove the wrappers and put the original float32 tensors back."""
        unpatch_methods(model, state["token"], self.pass_id)
        _put_back(state["originals"])
        return model


def _put_back(originals: list[tuple[Any, str, str, Any]]) -> None:
    for sub, kind, name, tensor in originals:
        if kind == "param":
            sub._parameters[name].data = tensor
        else:
            sub._buffers[name] = tensor


def _cast(value: Any, source: Any, target: Any) -> Any:
    """Cast floating tensors of dtype ``source`` to ``target`` inside tuples, lists and dicts."""
    import torch

    if isinstance(value, torch.Tensor):
        return value.to(target) if value.dtype == source else value
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        return tuple(_cast(v, source, target) for v in value)
    if isinstance(value, list):
        return [_cast(v, source, target) for v in value]
    if isinstance(value, dict):
        return {k: _cast(v, source, target) for k, v in value.items()}
    return value


__all__ = ["UNSAFE_PROTOCOL", "DtypePass"]

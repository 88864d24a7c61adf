"""``int8-dynamic``: dynamic int8 quantization of Linear and recurrent layers on the CPU.

Weights of ``nn.Linear``, ``nn.LSTM``, ``nn.LSTMCell``, ``nn.GRU`` and ``nn.GRUCell`` are
quantized to int8 once; activations are quantized on the fly per call (the
``torch.ao.nn.quantized.dynamic`` modules, i.e. what ``torch.ao.quantization.quantize_dynamic``
builds). Only exact instances of those classes are converted: a subclass may read its weights
directly (``MultiheadAttention.out_proj`` does), which a packed int8 module cannot serve.

The swap happens in place: each float submodule is replaced in its parent by its quantized
counterpart, and restoring puts the very same float module objects back, so the original
weights are untouched (bit-identical) and wrappers already installed on the root keep working.
While active, state-dict keys differ (packed parameters), so the result is not persistent.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any, ClassVar

from voicehub.core.strict_json import JSONValue
from voicehub.optimization.capabilities import OptimizationCapabilities, OptimizationContext, OptimizationMode
from voicehub.optimization.errors import OptimizationCompatibilityError
from voicehub.optimization.execution import not_a_module_reason, torch_module
from voicehub.optimization.passes import OptimizationPass, PassResult

_NO_ENGINE = "none"
"""The entry of ``torch.backends.quantized.supported_engines`` that is not a quantized CPU engine."""


def _quantized_classes() -> dict[type, Any]:
    import torch.ao.nn.quantized.dynamic as nnqd
    from torch import nn

    return {
        nn.Linear: nnqd.Linear,
        nn.LSTM: nnqd.LSTM,
        nn.LSTMCell: nnqd.LSTMCell,
        nn.GRU: nnqd.GRU,
        nn.GRUCell: nnqd.GRUCell,
    }


class Int8DynamicPass(OptimizationPass):
    """Dynamic int8 quantization of Linear/LSTM/LSTMCell/GRU/GRUCell layers (CPU, float32 runtimes)."""

    pass_id: ClassVar[str] = "voicehub.int8-dynamic"
    pass_version: ClassVar[str] = "1"
    optimization_kind: ClassVar[str | None] = "int8-dynamic"
    capabilities: ClassVar[OptimizationCapabilities] = OptimizationCapabilities(
        modes=(OptimizationMode.INFERENCE,),
        devices=("cpu",),
        dtypes=("float32",),
        reversible=True,
        streaming_safe=True,
        changes_parameter_names=True,
        changes_topology=True,
    )

    def manifest_configuration(self) -> Mapping[str, JSONValue]:
        """The quantized weight dtype and the layer classes converted."""
        return {"weight_dtype": "qint8", "layers": ["GRU", "GRUCell", "LSTM", "LSTMCell", "Linear"]}

    def validate(self, model: object, context: OptimizationContext) -> None:
        """Capabilities, then a quantized CPU engine in this torch build.

        Raises:
            OptimizationCompatibilityError: if torch has no quantized CPU engine.
        """
        super().validate(model, context)
        if torch_module(model):
            import torch

            engines = [e for e in torch.backends.quantized.supported_engines if e != _NO_ENGINE]
            if not engines:
                raise OptimizationCompatibilityError(
                    self.pass_id,
                    (
                        "this torch build has no quantized CPU engine (supported engines: "
                        f"{torch.backends.quantized.supported_engines}); install a torch build with fbgemm or qnnpack",
                    ),
                )

    def apply(self, model: object, context: OptimizationContext) -> PassResult:
        """Swap the float layers for dynamic int8 ones; not-applicable when there are none."""
        if not torch_module(model):
            return self.not_applicable_result(model, reason=not_a_module_reason(model, "int8 dynamic quantization"))
        from torch.ao.quantization import default_dynamic_qconfig

        module: Any = model
        classes = _quantized_classes()
        if type(module) in classes:
            return self.not_applicable_result(
                model,
                reason=f"the runtime itself is a bare {type(module).__name__}; wrap it in a container module so "
                "the layer can be swapped in place",
            )
        targets: list[tuple[Any, str, str, Any]] = []  # (parent, attribute, dotted name, float child)
        for parent_name, parent in module.named_modules():
            for child_name, child in parent.named_children():
                if type(child) in classes:
                    dotted = f"{parent_name}.{child_name}" if parent_name else child_name
                    targets.append((parent, child_name, dotted, child))
        if not targets:
            return self.not_applicable_result(
                model,
                reason="the runtime has no nn.Linear, nn.LSTM, nn.LSTMCell, nn.GRU or nn.GRUCell layer to quantize "
                "(convolutions are not dynamically quantizable)",
            )
        quantized: dict[int, Any] = {}  # a layer shared by two parents is quantized once
        for _, _, _, child in targets:
            if id(child) in quantized:
                continue
            child.qconfig = default_dynamic_qconfig
            try:
                with warnings.catch_warnings():
                    # torch deprecates quantized tensors in favour of torchao; the modules still work.
                    warnings.filterwarnings("ignore", message=".*quantize", category=UserWarning)
                    quantized[id(child)] = classes[type(child)].from_float(child)
            finally:
                del child.qconfig
        for parent, attribute, _, child in targets:
            parent._modules[attribute] = quantized[id(child)]
        layers: dict[str, JSONValue] = {dotted: type(child).__name__ for _, _, dotted, child in targets}
        return PassResult(
            model=model,
            state={"swaps": [(parent, attribute, child) for parent, attribute, _, child in targets]},
            metadata={"outcome": "quantized", "quantized_layers": layers, "num_quantized_layers": len(targets)},
        )

    def restore(self, model: object, state: Mapping[str, Any], context: OptimizationContext) -> object:
        """Put the original float layers back."""
        for parent, attribute, child in state["swaps"]:
            parent._modules[attribute] = child
        return model


__all__ = ["Int8DynamicPass"]

"""``sdpa-attention``: select ``torch.nn.functional.scaled_dot_product_attention`` in attention layers.

The protocol, implemented by attention modules that can run more than one way:

* ``attention_implementation``: a string attribute naming the active implementation;
* ``set_attention_implementation(name)``: a method switching it;
* optionally ``supported_attention_implementations``: a tuple of the names the module accepts.

Every submodule exposing the protocol is switched to ``"sdpa"`` and remembered; restoring
switches each back. A runtime without such modules (no attention, or attention that does not
declare the protocol) reports not-applicable. A module that exposes the protocol in a broken
way, or declares that it cannot run ``"sdpa"``, fails before any change.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from voicehub.core.strict_json import JSONValue
from voicehub.optimization.capabilities import OptimizationCapabilities, OptimizationContext, OptimizationMode
from voicehub.optimization.errors import OptimizationCompatibilityError, OptimizationProtocolError
from voicehub.optimization.execution import not_a_module_reason, torch_module
from voicehub.optimization.passes import OptimizationPass, PassResult

SETTER = "set_attention_implementation"
ATTRIBUTE = "attention_implementation"
SUPPORTED = "supported_attention_implementations"
SDPA = "sdpa"


class SDPAAttentionPass(OptimizationPass):
    """Switch every attention module exposing the protocol to scaled-dot-product attention."""

    pass_id: ClassVar[str] = "voicehub.sdpa-attention"
    pass_version: ClassVar[str] = "1"
    optimization_kind: ClassVar[str | None] = "sdpa-attention"
    capabilities: ClassVar[OptimizationCapabilities] = OptimizationCapabilities(
        modes=(OptimizationMode.INFERENCE, OptimizationMode.TRAINING),
        reversible=True,
        streaming_safe=True,
        distributed_safe=True,
        persistent=True,
    )

    def manifest_configuration(self) -> Mapping[str, JSONValue]:
        """The implementation selected."""
        return {"implementation": SDPA}

    def _protocol_modules(self, model: Any) -> list[tuple[str, Any]]:
        found: list[tuple[str, Any]] = []
        for name, module in model.named_modules():
            has_setter = hasattr(module, SETTER)
            has_attribute = hasattr(module, ATTRIBUTE)
            if not has_setter and not has_attribute:
                continue
            label = name or "<root>"
            if not (has_setter and callable(getattr(module, SETTER))):
                raise OptimizationProtocolError(
                    f"{label} ({type(module).__name__}) exposes the attention protocol but has no callable "
                    f"{SETTER}(name); implement the method or remove the attribute",
                    pass_id=self.pass_id,
                    module=name,
                )
            current = getattr(module, ATTRIBUTE, None)
            if not isinstance(current, str):
                raise OptimizationProtocolError(
                    f"{label} ({type(module).__name__}).{ATTRIBUTE} must be a string naming the active "
                    f"implementation, got {current!r}",
                    pass_id=self.pass_id,
                    module=name,
                )
            supported = getattr(module, SUPPORTED, None)
            if supported is not None:
                if not isinstance(supported, tuple) or not all(isinstance(s, str) for s in supported):
                    raise OptimizationProtocolError(
                        f"{label} ({type(module).__name__}).{SUPPORTED} must be a tuple of strings, got {supported!r}",
                        pass_id=self.pass_id,
                        module=name,
                    )
                if SDPA not in supported:
                    raise OptimizationCompatibilityError(
                        self.pass_id,
                        (f"{label} ({type(module).__name__}) supports only {list(supported)}, not {SDPA!r}",),
                    )
            found.append((name, module))
        return found

    def validate(self, model: object, context: OptimizationContext) -> None:
        """Capabilities, then every protocol module must be well formed and accept ``"sdpa"``.

        Raises:
            OptimizationProtocolError: for a malformed protocol.
            OptimizationCompatibilityError: for a module that cannot run ``"sdpa"``.
        """
        super().validate(model, context)
        if torch_module(model):
            self._protocol_modules(model)

    def apply(self, model: object, context: OptimizationContext) -> PassResult:
        """Switch every protocol module; not-applicable when there is none."""
        if not torch_module(model):
            return self.not_applicable_result(model, reason=not_a_module_reason(model, "scaled-dot-product attention"))
        module: Any = model
        targets = self._protocol_modules(module)
        if not targets:
            return self.not_applicable_result(
                model,
                reason=f"no submodule exposes the attention protocol ({SETTER}(name) and {ATTRIBUTE}); the runtime "
                "has no switchable attention layers",
            )
        keys = list(module.state_dict())
        previous: list[tuple[Any, str]] = []
        try:
            for _, sub in targets:
                previous.append((sub, getattr(sub, ATTRIBUTE)))
                getattr(sub, SETTER)(SDPA)
                if getattr(sub, ATTRIBUTE) != SDPA:
                    raise OptimizationProtocolError(
                        f"{type(sub).__name__}.{SETTER}({SDPA!r}) left {ATTRIBUTE}={getattr(sub, ATTRIBUTE)!r}",
                        pass_id=self.pass_id,
                    )
            if list(module.state_dict()) != keys:
                raise OptimizationProtocolError(
                    f"switching attention to {SDPA!r} changed the state-dict keys; the protocol must only select "
                    "an implementation",
                    pass_id=self.pass_id,
                )
        except BaseException:
            for sub, implementation in reversed(previous):
                getattr(sub, SETTER)(implementation)
            raise
        return PassResult(
            model=model,
            state={"previous": previous},
            metadata={
                "outcome": "configured",
                "implementation": SDPA,
                "modules": {
                    name or "<root>": implementation
                    for (name, _), (_, implementation) in zip(targets, previous, strict=True)
                },
            },
        )

    def restore(self, model: object, state: Mapping[str, Any], context: OptimizationContext) -> object:
        """Switch every module back to its previous implementation."""
        for sub, implementation in reversed(state["previous"]):
            getattr(sub, SETTER)(implementation)
        return model


__all__ = ["ATTRIBUTE", "SDPA", "SETTER", "SUPPORTED", "SDPAAttentionPass"]

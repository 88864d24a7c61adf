"""``lora``: low-rank adapters on Linear layers for fine-tuning (Hu et al., 2021, arXiv:2106.09685).

Each exact ``nn.Linear`` (optionally only those whose dotted name ends with one of
``target_modules``) is replaced by :class:`LoRALinear`, which keeps the original layer as
``base`` (frozen) and adds ``y += (alpha / rank) * x @ A.T @ B.T`` with ``A`` (rank, in_features)
initialised like a Linear weight and ``B`` (out_features, rank) zero, so the adapted runtime
starts out computing exactly what the original did. Every parameter outside the adapters is
frozen while the pass is active.

The pass changes topology and parameter names (``head.weight`` becomes ``head.base.weight``
plus ``head.lora_a``/``head.lora_b``), so it provides both halves of that contract:
:meth:`LoRAPass.route_optimizer_parameters` (the adapter parameters, the only ones to train) and
:meth:`LoRAPass.export_portable_state` (a state dict in the original names with the adapters
merged: ``W + (alpha / rank) * B @ A``), loadable into the un-adapted architecture. Restoring
puts the original layers and ``requires_grad`` flags back and discards the adapters; export
first to keep them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar

import torch
from torch import nn

from voicehub.core.strict_json import JSONValue
from voicehub.optimization.capabilities import OptimizationCapabilities, OptimizationContext, OptimizationMode
from voicehub.optimization.errors import OptimizationConfigurationError
from voicehub.optimization.execution import not_a_module_reason, torch_module
from voicehub.optimization.passes import OptimizationPass, PassResult


class LoRALinear(nn.Module):
    """A frozen ``nn.Linear`` plus a trainable low-rank update.

    Args:
        base: the original layer (kept, not copied).
        rank: the rank ``r`` of the update, >= 1.
        alpha: the scale numerator; the update is multiplied by ``alpha / rank``.
    """

    def __init__(self, base: nn.Linear, rank: int, alpha: float) -> None:
        super().__init__()
        self.base = base
        self.rank = rank
        self.scaling = alpha / rank
        device, dtype = base.weight.device, base.weight.dtype
        self.lora_a = nn.Parameter(torch.empty(rank, base.in_features, device=device, dtype=dtype))
        self.lora_b = nn.Parameter(torch.zeros(base.out_features, rank, device=device, dtype=dtype))
        nn.init.kaiming_uniform_(self.lora_a, a=math.sqrt(5))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x: (..., in_features) -> (..., out_features)."""
        update = nn.functional.linear(nn.functional.linear(x, self.lora_a), self.lora_b)
        out: torch.Tensor = self.base(x) + update * self.scaling
        return out

    def merged_weight(self) -> torch.Tensor:
        """``W + (alpha / rank) * B @ A``, the weight of an equivalent plain Linear."""
        return self.base.weight + (self.lora_b @ self.lora_a) * self.scaling


class LoRAPass(OptimizationPass):
    """Low-rank adapters on Linear layers, training mode only.

    Args:
        rank: adapter rank, >= 1 (default 8).
        alpha: scale numerator (default 16.0).
        target_modules: dotted-name suffixes selecting the layers (``("linear",)``); ``None`` = every
            exact ``nn.Linear``.

    Raises:
        OptimizationConfigurationError: for a non-positive rank or alpha, or empty target names.
    """

    pass_id: ClassVar[str] = "voicehub.lora"
    pass_version: ClassVar[str] = "1"
    optimization_kind: ClassVar[str | None] = "lora"
    capabilities: ClassVar[OptimizationCapabilities] = OptimizationCapabilities(
        modes=(OptimizationMode.TRAINING,),
        dtypes=("float32", "bfloat16", "float16"),
        reversible=True,
        persistent=True,
        portable_export=True,
        distributed_safe=True,
        streaming_safe=True,
        changes_parameter_names=True,
        changes_topology=True,
    )

    def __init__(self, rank: int = 8, alpha: float = 16.0, target_modules: tuple[str, ...] | None = None) -> None:
        if isinstance(rank, bool) or not isinstance(rank, int) or rank < 1:
            raise OptimizationConfigurationError(f"LoRAPass: rank must be an int >= 1, got {rank!r}")
        if not isinstance(alpha, (int, float)) or isinstance(alpha, bool) or not alpha > 0:
            raise OptimizationConfigurationError(f"LoRAPass: alpha must be a positive number, got {alpha!r}")
        if target_modules is not None and (
            not isinstance(target_modules, tuple) or not target_modules or not all(target_modules)
        ):
            raise OptimizationConfigurationError(
                f"LoRAPass: target_modules must be None or a non-empty tuple of names, got {target_modules!r}"
            )
        self.rank = rank
        self.alpha = float(alpha)
        self.target_modules = target_modules

    def manifest_configuration(self) -> Mapping[str, JSONValue]:
        """Rank, alpha and the layer selection."""
        targets = list(self.target_modules) if self.target_modules is not None else None
        return {"rank": self.rank, "alpha": self.alpha, "target_modules": targets, "layers": ["Linear"]}

    def _targets(self, model: Any) -> list[tuple[Any, str, str, nn.Linear]]:
        found = []
        for parent_name, parent in model.named_modules():
            for child_name, child in parent.named_children():
                dotted = f"{parent_name}.{child_name}" if parent_name else child_name
                selected = self.target_modules is None or any(
                    dotted == t or dotted.endswith(f".{t}") for t in self.target_modules
                )
                # A Linear whose weight is not its own registered parameter (tied to an embedding, as
                # Whisper's output projection) is left alone: its merged weight could not be exported.
                owns_weight = isinstance(getattr(child, "_parameters", {}).get("weight"), nn.Parameter)
                if type(child) is nn.Linear and selected and owns_weight:
                    found.append((parent, child_name, dotted, child))
        return found

    def apply(self, model: object, context: OptimizationContext) -> PassResult:
        """Insert the adapters and freeze everything else; not-applicable without a matching Linear."""
        if not torch_module(model):
            return self.not_applicable_result(model, reason=not_a_module_reason(model, "LoRA"))
        module: Any = model
        targets = self._targets(module)
        if not targets:
            selection = f"named {list(self.target_modules)}" if self.target_modules else "at all"
            return self.not_applicable_result(
                model, reason=f"the runtime has no nn.Linear layer {selection} to adapt; LoRA here adapts Linear layers"
            )
        flags = {name: p.requires_grad for name, p in module.named_parameters()}
        adapters = {id(child): LoRALinear(child, self.rank, self.alpha) for _, _, _, child in targets}
        for parameter in module.parameters():
            parameter.requires_grad_(False)
        for parent, attribute, _, child in targets:
            parent._modules[attribute] = adapters[id(child)]
        trainable = sum(a.lora_a.numel() + a.lora_b.numel() for a in adapters.values())
        return PassResult(
            model=model,
            state={"swaps": [(parent, attribute, child) for parent, attribute, _, child in targets], "flags": flags},
            metadata={
                "outcome": "configured",
                "adapted_layers": sorted(dotted for _, _, dotted, _ in targets),
                "trainable_parameters": trainable,
            },
        )

    def restore(self, model: object, state: Mapping[str, Any], context: OptimizationContext) -> object:
        """Put the original Linear layers and ``requires_grad`` flags back (the adapters are dropped)."""
        module: Any = model
        for parent, attribute, child in state["swaps"]:
            parent._modules[attribute] = child
        flags: Mapping[str, bool] = state["flags"]
        for name, parameter in module.named_parameters():
            parameter.requires_grad_(flags.get(name, parameter.requires_grad))
        return model

    def route_optimizer_parameters(self, model: object, result: PassResult) -> list[nn.Parameter]:
        """The adapter parameters (``lora_a``, ``lora_b`` of every adapted layer): the ones to train."""
        if result.is_not_applicable:
            return []
        module: Any = model
        return [p for m in module.modules() if isinstance(m, LoRALinear) for p in (m.lora_a, m.lora_b)]

    def export_portable_state(self, model: object, result: PassResult) -> Mapping[str, Any]:
        """The state dict in the original names, adapters merged into the Linear weights (detached copies)."""
        module: Any = model
        state: dict[str, Any] = {}
        adapted = {name: m for name, m in module.named_modules() if isinstance(m, LoRALinear)}
        for key, tensor in module.state_dict().items():
            owner, _, leaf = key.rpartition(".")
            if owner in adapted and leaf in ("lora_a", "lora_b"):
                continue
            prefix, _, base_leaf = owner.rpartition(".")
            if base_leaf == "base" and prefix in adapted:
                original = f"{prefix}.{leaf}" if prefix else leaf
                value = adapted[prefix].merged_weight() if leaf == "weight" else tensor
                state[original] = value.detach().clone()
            else:
                state[key] = tensor.detach().clone()
        return state


__all__ = ["LoRALinear", "LoRAPass"]

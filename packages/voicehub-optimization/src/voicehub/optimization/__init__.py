"""voicehub.optimization: transactional optimization passes with strict-JSON manifests.

Importing this package loads no torch: the built-in passes are registered as
``"module:attribute"`` references and imported when a plan first uses them.

Example::

    from voicehub.optimization import apply_optimization_plan

    result = apply_optimization_plan(module, ("eval-mode", "int8-dynamic"), mode="inference")
    module = result.model
    print(result.manifest_json(indent=2))
    module = result.restore()
"""

from __future__ import annotations

from voicehub.core.version import distribution_version
from voicehub.optimization.automatic import AUTOMATIC_PLAN, AutomaticPlan, select_verified_passes
from voicehub.optimization.capabilities import (
    ArchitectureSupport,
    OptimizationCapabilities,
    OptimizationContext,
    OptimizationMode,
)
from voicehub.optimization.errors import (
    OptimizationApplicationError,
    OptimizationCompatibilityError,
    OptimizationConfigurationError,
    OptimizationError,
    OptimizationLifecycleError,
    OptimizationProtocolError,
    OptimizationRestoreError,
    OptimizationValidationError,
)
from voicehub.optimization.host import OptimizationHost
from voicehub.optimization.manager import (
    OptimizationPassManager,
    Plan,
    PlanItem,
    apply_optimization_plan,
    infer_context,
)
from voicehub.optimization.passes import (
    OUTCOME_CONFIGURED,
    OUTCOME_NOT_APPLICABLE,
    AppliedPass,
    OptimizationPass,
    OptimizationResult,
    PassResult,
)
from voicehub.optimization.registry import (
    ENTRY_POINT_GROUP,
    OPTIMIZATION_PASSES,
    OptimizationPassRegistry,
    PassFactory,
    register_optimization_pass,
)

BUILTIN_PASSES: dict[str, str] = {
    "compile": "voicehub.optimization.builtin.torch_compile:TorchCompilePass",
    "dtype": "voicehub.optimization.builtin.precision:DtypePass",
    "eval-mode": "voicehub.optimization.builtin.eval_mode:EvalModePass",
    "inference-mode": "voicehub.optimization.builtin.inference_mode:InferenceModePass",
    "int8-dynamic": "voicehub.optimization.builtin.quantization:Int8DynamicPass",
    "lora": "voicehub.optimization.builtin.lora:LoRAPass",
    "sdpa-attention": "voicehub.optimization.builtin.attention:SDPAAttentionPass",
    "threads": "voicehub.optimization.builtin.threads:ThreadsPass",
}
"""The built-in passes: registry name -> lazy ``module:factory`` reference."""

for _name, _reference in BUILTIN_PASSES.items():
    OPTIMIZATION_PASSES.register(_name, _reference)

__version__ = distribution_version("voicehub-optimization")

__all__ = [
    "AUTOMATIC_PLAN",
    "BUILTIN_PASSES",
    "ENTRY_POINT_GROUP",
    "OPTIMIZATION_PASSES",
    "OUTCOME_CONFIGURED",
    "OUTCOME_NOT_APPLICABLE",
    "AppliedPass",
    "ArchitectureSupport",
    "AutomaticPlan",
    "OptimizationApplicationError",
    "OptimizationCapabilities",
    "OptimizationCompatibilityError",
    "OptimizationConfigurationError",
    "OptimizationContext",
    "OptimizationError",
    "OptimizationHost",
    "OptimizationLifecycleError",
    "OptimizationMode",
    "OptimizationPass",
    "OptimizationPassManager",
    "OptimizationPassRegistry",
    "OptimizationProtocolError",
    "OptimizationRestoreError",
    "OptimizationResult",
    "OptimizationValidationError",
    "PassFactory",
    "PassResult",
    "Plan",
    "PlanItem",
    "apply_optimization_plan",
    "infer_context",
    "register_optimization_pass",
    "select_verified_passes",
]

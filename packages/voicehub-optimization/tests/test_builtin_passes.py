"""The built-in passes on small real torch modules (the real models are in tests/test_optimization_matrix.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
import torch
from torch import nn

from voicehub.optimization import (
    OptimizationApplicationError,
    OptimizationCompatibilityError,
    OptimizationConfigurationError,
    OptimizationContext,
    OptimizationProtocolError,
    apply_optimization_plan,
)
from voicehub.optimization.builtin.precision import DtypePass
from voicehub.optimization.builtin.threads import ThreadsPass
from voicehub.optimization.builtin.torch_compile import TorchCompilePass


class RecurrentTagger(nn.Module):
    """Conv front end + 2-layer LSTM + LSTMCell + Linear head: the layer mix of speech encoders."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.conv = nn.Conv1d(4, 8, 3, padding=1)
        self.lstm = nn.LSTM(8, 16, num_layers=2, batch_first=True)
        self.cell = nn.LSTMCell(16, 16)
        self.head = nn.Linear(16, 3)
        self.register_buffer("scale", torch.tensor(0.5))

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        """features: float (batch, 4, num_frames) -> float (batch, 3) class probabilities."""
        hidden, _ = self.lstm(torch.relu(self.conv(features)).transpose(1, 2))
        h, _ = self.cell(hidden[:, -1])
        return torch.softmax(self.head(h) * self.scale, dim=-1)


def snapshot(module: nn.Module) -> dict[str, torch.Tensor]:
    """A deep copy of the state dict."""
    return {k: v.detach().clone() for k, v in module.state_dict().items()}


def identical(module: nn.Module, saved: Mapping[str, torch.Tensor]) -> bool:
    """True when keys, dtypes and every value equal ``saved`` bit for bit."""
    state = module.state_dict()
    return list(state) == list(saved) and all(
        state[k].dtype == v.dtype and torch.equal(state[k], v) for k, v in saved.items()
    )


FEATURES = torch.randn(2, 4, 12, generator=torch.Generator().manual_seed(1))


def _metadata(result: Any, index: int = 0) -> dict[str, Any]:
    return dict(result.manifest()["passes"][index]["metadata"])


# ------------------------------------------------------------------------------------------ inference-mode
def test_inference_mode_wraps_forward_without_autograd_and_restores() -> None:
    model = RecurrentTagger()
    eager = model(FEATURES)
    assert eager.requires_grad
    result = apply_optimization_plan(model, "inference-mode")
    out = model(FEATURES)
    assert out.is_inference() and not out.requires_grad
    assert torch.equal(out, eager.detach())
    assert not torch.is_inference_mode_enabled()  # scoped to the call
    assert _metadata(result) == {"outcome": "configured", "wrapped_methods": ["forward"]}
    result.restore()
    assert "forward" not in vars(model) and model(FEATURES).requires_grad


def test_malformed_execution_method_protocol_fails_before_mutation() -> None:
    class Broken(RecurrentTagger):
        def optimization_execution_methods(self) -> list[str]:
            return ["forward"]  # a list, not a tuple

    model = Broken()
    model.train()
    with pytest.raises(OptimizationProtocolError, match="non-empty tuple"):
        apply_optimization_plan(model, ("eval-mode", "inference-mode"))
    assert model.training and "forward" not in vars(model)


# ------------------------------------------------------------------------------------------ threads
def test_threads_scopes_the_intra_op_thread_count_to_the_call() -> None:
    seen: list[int] = []

    class Probe(RecurrentTagger):
        def forward(self, features: torch.Tensor) -> torch.Tensor:
            seen.append(torch.get_num_threads())
            return super().forward(features)

    model = Probe()
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        result = apply_optimization_plan(model, ThreadsPass(num_threads=1))
        model(FEATURES)
        assert seen == [1] and torch.get_num_threads() == 2
        result.restore()
        model(FEATURES)
        assert seen == [1, 2]
    finally:
        torch.set_num_threads(before)
    with pytest.raises(OptimizationCompatibilityError, match="exceeds"):
        apply_optimization_plan(model, ThreadsPass(num_threads=10_000))


# ------------------------------------------------------------------------------------------ dtype
def test_dtype_bfloat16_keeps_float32_contract_and_restores_bit_identically() -> None:
    model = RecurrentTagger().eval()
    saved = snapshot(model)
    eager = model(FEATURES).detach()
    result = apply_optimization_plan(model, ("eval-mode", "dtype"))
    assert model.head.weight.dtype == torch.bfloat16 and model.scale.dtype == torch.bfloat16
    out = model(FEATURES).detach()
    assert out.dtype == torch.float32
    difference = float((out - eager).abs().max())
    assert 0 < difference < 2e-2  # bfloat16 keeps 8 bits of mantissa: visible, but small
    assert _metadata(result, 1)["cast_tensors"] == len(saved)
    result.restore()
    assert identical(model, saved)
    assert torch.equal(model(FEATURES), eager)


def test_dtype_float16_on_cpu_and_unsafe_modules_fail_before_mutation() -> None:
    model = RecurrentTagger()
    saved = snapshot(model)
    with pytest.raises(OptimizationCompatibilityError, match="float16 is not supported on the CPU"):
        apply_optimization_plan(model, ("eval-mode", DtypePass(dtype="float16")))
    model.cell.low_precision_unsafe = True  # type: ignore[assignment]
    with pytest.raises(OptimizationCompatibilityError, match=r"cell \(LSTMCell\) declares low_precision_unsafe"):
        apply_optimization_plan(model, ("eval-mode", DtypePass(requirement="required")))
    result = apply_optimization_plan(model, "dtype")
    assert _metadata(result)["outcome"] == "not-applicable"
    assert "low_precision_unsafe=True" in _metadata(result)["reason"]
    model.cell.low_precision_unsafe = "yes"  # type: ignore[assignment]
    with pytest.raises(OptimizationProtocolError, match="must be a bool"):
        apply_optimization_plan(model, "dtype")
    assert identical(model, saved) and model.training


# ------------------------------------------------------------------------------------------ int8-dynamic
def test_int8_dynamic_quantizes_linear_and_recurrent_layers_and_restores() -> None:
    model = RecurrentTagger().eval()
    saved = snapshot(model)
    eager = model(FEATURES).detach()
    result = apply_optimization_plan(model, "int8-dynamic")
    assert _metadata(result) == {
        "outcome": "quantized",
        "num_quantized_layers": 3,
        "quantized_layers": {"cell": "LSTMCell", "head": "Linear", "lstm": "LSTM"},
    }
    assert type(model.lstm).__module__.startswith("torch.ao.nn.quantized.dynamic")
    assert list(model.state_dict()) != list(saved)  # declared: changes_parameter_names
    difference = float((model(FEATURES).detach() - eager).abs().max())
    assert 0 < difference < 2e-2
    result.restore()
    assert identical(model, saved) and type(model.lstm) is nn.LSTM
    assert torch.equal(model(FEATURES), eager)


def test_int8_dynamic_is_not_applicable_without_quantizable_layers_and_refuses_bfloat16() -> None:
    convs = nn.Sequential(nn.Conv1d(4, 4, 3), nn.ReLU())
    result = apply_optimization_plan(convs, "int8-dynamic")
    assert _metadata(result)["outcome"] == "not-applicable"
    assert "no nn.Linear" in _metadata(result)["reason"]
    with pytest.raises(OptimizationCompatibilityError, match="runtime dtype 'bfloat16' is not supported"):
        apply_optimization_plan(RecurrentTagger().to(torch.bfloat16), "int8-dynamic")


# ------------------------------------------------------------------------------------------ sdpa-attention
class SelfAttention(nn.Module):
    """Single-head self-attention with two implementations of the same function (the protocol)."""

    supported_attention_implementations = ("math", "sdpa")

    def __init__(self, dim: int = 16) -> None:
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)
        self.attention_implementation = "math"

    def set_attention_implementation(self, name: str) -> None:
        if name not in self.supported_attention_implementations:
            raise ValueError(name)
        self.attention_implementation = name

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        if self.attention_implementation == "sdpa":
            return nn.functional.scaled_dot_product_attention(q, k, v)
        weights = torch.softmax(q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5, dim=-1)
        return weights @ v


def test_sdpa_attention_switches_protocol_modules_and_matches_math_attention() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(SelfAttention(), nn.ReLU(), SelfAttention())
    x = torch.randn(2, 5, 16)
    eager = model(x).detach()
    result = apply_optimization_plan(model, "sdpa-attention")
    assert _metadata(result)["modules"] == {"0": "math", "2": "math"}
    assert model[0].attention_implementation == "sdpa"
    assert torch.allclose(model(x), eager, atol=1e-5)
    result.restore()
    assert model[2].attention_implementation == "math"


def test_sdpa_attention_malformed_or_unsupported_protocol_fails_and_absent_is_not_applicable() -> None:
    broken = SelfAttention()
    broken.attention_implementation = 3  # type: ignore[assignment]
    with pytest.raises(OptimizationProtocolError, match="must be a string"):
        apply_optimization_plan(nn.Sequential(broken), "sdpa-attention")
    math_only = SelfAttention()
    math_only.supported_attention_implementations = ("math",)  # type: ignore[misc]
    with pytest.raises(OptimizationCompatibilityError, match="supports only"):
        apply_optimization_plan(nn.Sequential(SelfAttention(), math_only), "sdpa-attention")
    result = apply_optimization_plan(RecurrentTagger(), "sdpa-attention")
    assert _metadata(result)["outcome"] == "not-applicable"


# ------------------------------------------------------------------------------------------ compile
@pytest.mark.slow
def test_compile_inductor_keeps_state_keys_and_records_compiled_status() -> None:
    model = nn.Sequential(nn.Linear(8, 8), nn.ReLU()).eval()
    x = torch.randn(3, 8)
    eager = model(x).detach()
    keys = list(model.state_dict())
    result = apply_optimization_plan(model, ("eval-mode", "compile"))
    assert result.manifest()["passes"][1]["runtime_status"]["status"] == "pending"
    assert torch.allclose(model(x), eager, atol=1e-6)
    assert list(model.state_dict()) == keys
    assert result.manifest()["passes"][1]["runtime_status"] == {
        "status": "compiled",
        "methods": {"forward": "compiled"},
        "fallback_reasons": {},
    }
    result.restore()
    assert "forward" not in vars(model)


def test_compile_falls_back_to_eager_on_a_graph_break_and_unknown_backend_fails_when_required() -> None:
    class GraphBreak(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if float(x.sum()) > 0:  # data-dependent control flow: a graph break
                return x * 2
            return x

    model = GraphBreak()
    result = apply_optimization_plan(model, TorchCompilePass(backend="eager", fullgraph=True))
    assert torch.equal(model(torch.ones(2)), torch.full((2,), 2.0))
    status = result.manifest()["passes"][0]["runtime_status"]
    assert status["status"] == "eager-fallback" and status["fallback_reasons"]["forward"]
    with pytest.raises(OptimizationCompatibilityError, match="backend 'no-such-backend' is not available") as info:
        apply_optimization_plan(model, TorchCompilePass(backend="no-such-backend", requirement="required"))
    message = str(info.value)
    assert "'inductor'" in message and "'eager'" in message  # the usable backends are listed...
    assert "TESTING_ONLY" not in message and "minifier" not in message  # ...torch's own test backends are not
    with pytest.raises(OptimizationCompatibilityError, match="device 'mps' is not supported"):
        apply_optimization_plan(model, "compile", context=OptimizationContext(device="mps"))


def test_compile_named_backend_that_cannot_run_fails_in_validate_and_only_the_default_falls_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model = RecurrentTagger().eval()
    saved = snapshot(model)
    with pytest.raises(OptimizationCompatibilityError, match="backend 'no-such-backend' is not available") as info:
        apply_optimization_plan(model, ("eval-mode", TorchCompilePass(backend="no-such-backend")))
    assert "named explicitly" in str(info.value) and "'inductor'" in str(info.value)
    assert "forward" not in vars(model) and identical(model, saved)  # failed before the first change
    # The same "cannot run" for the default backend is an eager fallback; for an explicitly named one, an error.
    monkeypatch.setattr(TorchCompilePass, "_backend_problem", lambda self, context: "no C++ compiler (simulated)")
    default = apply_optimization_plan(model, TorchCompilePass())
    assert default.manifest()["passes"][0]["metadata"] == {
        "outcome": "eager-fallback",
        "reason": "no C++ compiler (simulated)",
        "compiled_methods": [],
    }
    assert default.manifest()["passes"][0]["configuration"]["backend"] == "inductor"
    default.restore()
    with pytest.raises(OptimizationCompatibilityError, match=r"no C\+\+ compiler \(simulated\)"):
        apply_optimization_plan(model, TorchCompilePass(backend="inductor"))
    assert "forward" not in vars(model) and identical(model, saved)


# ------------------------------------------------------------------------------------------ pass interplay
def test_a_pass_made_impossible_by_an_earlier_pass_rolls_the_plan_back() -> None:
    model = RecurrentTagger().eval()
    saved = snapshot(model)
    with pytest.raises(OptimizationApplicationError, match=r"runtime dtype 'bfloat16' is not supported") as info:
        apply_optimization_plan(model, ("inference-mode", "dtype", "int8-dynamic"))
    assert info.value.pass_id == "voicehub.int8-dynamic" and info.value.rollback_errors == ()
    assert identical(model, saved) and "forward" not in vars(model)
    result = apply_optimization_plan(model, ("int8-dynamic", "dtype"))  # the other order: dtype declines
    assert result.outcomes() == {"int8-dynamic": "quantized", "dtype": "not-applicable"}
    assert "is quantized" in _metadata(result, 1)["reason"]
    result.restore()
    assert identical(model, saved)


# ------------------------------------------------------------------------------------------ lora (training)
def test_lora_trains_only_adapters_exports_original_names_and_restores() -> None:
    from voicehub.optimization.builtin.lora import LoRAPass

    model = RecurrentTagger().train()
    saved = snapshot(model)
    eager = model(FEATURES).detach()
    result = apply_optimization_plan(model, LoRAPass(rank=4, alpha=8.0), mode="training")
    assert _metadata(result) == {
        "outcome": "configured",
        "adapted_layers": ["head"],
        "trainable_parameters": 4 * 16 + 3 * 4,
    }
    assert torch.allclose(model(FEATURES), eager, atol=1e-7)  # B = 0: the adapted model starts identical
    routed = result.optimizer_parameters()
    assert [tuple(p.shape) for p in routed] == [(4, 16), (3, 4)]
    assert {n for n, p in model.named_parameters() if p.requires_grad} == {"head.lora_a", "head.lora_b"}
    optimizer = torch.optim.SGD(routed, lr=5.0)
    target = torch.tensor([0, 1])
    losses = []
    for _ in range(5):
        optimizer.zero_grad()
        loss = nn.functional.nll_loss(torch.log(model(FEATURES)), target)
        loss.backward()
        optimizer.step()
        losses.append(float(loss.detach()))
    trained = model(FEATURES).detach()
    assert losses[-1] < losses[0] and float((trained - eager).abs().max()) > 1e-3  # the adapters learned
    portable = result.portable_state_dict()
    assert list(portable) == list(saved)  # original names, no lora_* keys
    fresh = RecurrentTagger()
    fresh.load_state_dict(portable)
    assert torch.allclose(fresh(FEATURES), trained, atol=1e-6)  # merged W + (alpha/r) B A reproduces training
    result.restore()
    assert identical(model, saved) and type(model.head) is nn.Linear
    assert all(p.requires_grad for p in model.parameters())
    with pytest.raises(OptimizationCompatibilityError, match="mode 'inference' is not supported"):
        apply_optimization_plan(model, "lora", mode="inference")
    assert _metadata(apply_optimization_plan(nn.Sequential(nn.Conv1d(2, 2, 1)), "lora", mode="training")) == {
        "outcome": "not-applicable",
        "reason": "the runtime has no nn.Linear layer at all to adapt; LoRA here adapts Linear layers",
    }


class _TiedProjection(nn.Module):
    """An embedding whose output Linear shares the embedding's weight (Whisper's decoder does this)."""

    def __init__(self) -> None:
        super().__init__()
        self.embedding = nn.Embedding(5, 4)
        self.hidden = nn.Linear(4, 4)
        self.output = nn.Linear(4, 5, bias=False)
        del self.output.weight
        object.__setattr__(self.output, "weight", self.embedding.weight)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.output(self.hidden(self.embedding(tokens)))
        return out


def test_lora_leaves_a_linear_with_a_tied_weight_alone_so_the_merged_export_is_complete() -> None:
    model = _TiedProjection()
    result = apply_optimization_plan(model, "lora", mode="training")
    assert _metadata(result)["adapted_layers"] == ["hidden"]  # not "output": its weight is the embedding's
    with torch.no_grad():
        model.hidden.lora_b.fill_(0.5)  # type: ignore[operator]
    tokens = torch.tensor([[0, 3, 4]])
    fresh = _TiedProjection()
    fresh.load_state_dict(result.portable_state_dict())
    assert torch.allclose(fresh(tokens), model(tokens), atol=1e-6)


def test_portable_state_is_refused_for_a_renaming_pass_without_export() -> None:
    result = apply_optimization_plan(RecurrentTagger(), "int8-dynamic")
    with pytest.raises(OptimizationConfigurationError, match="no portable export"):
        result.portable_state_dict()

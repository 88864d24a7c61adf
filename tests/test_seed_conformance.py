"""The seed documents' own examples, run as written (issue #33); each test is a row of docs/architecture.md.

Seed 000 is "Add an optimization", seed 001 "Library architecture", seed 004 "Model Extension
Contracts" (Hyperion). Each test quotes the sentence it proves and runs the seed's code, changed only
where a name must change (a named model type, a file path); it asserts the outcome a reader of the
seed expects, not that the code runs.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
import torch

from voicehub import AutoModel
from voicehub.core import load_audio
from voicehub.core.errors import UnknownPassError
from voicehub.models import load_builtin_architectures
from voicehub.optimization import (
    OptimizationCompatibilityError,
    OptimizationConfigurationError,
    OptimizationContext,
    select_verified_passes,
)
from voicehub.optimization.builtin.torch_compile import TorchCompilePass

os.environ.setdefault("HF_HUB_OFFLINE", "1")
DATA = Path(__file__).resolve().parent / "data"
ARCHITECTURES = load_builtin_architectures()


# ------------------------------------------------------------------------------------------ seed 000 / 001: passes
def test_seed_000_explicit_backend_that_cannot_run_fails_before_mutation() -> None:
    """Seed 000: "an explicit backend that cannot run ... must still fail before mutation"."""
    model = AutoModel.from_pretrained(model_type="vad_silero")
    model.load()
    assert model.runtime is not None
    module = model.runtime.module
    before = {k: v.clone() for k, v in module.state_dict().items()}
    with pytest.raises(OptimizationCompatibilityError, match="backend 'no-such-backend' is not available") as info:
        model.apply_optimization_plan(("eval-mode", TorchCompilePass(backend="no-such-backend")), mode="inference")
    assert "named explicitly" in str(info.value)
    assert model.active_optimization("inference") is None
    assert model.runtime.module is module and "forward" not in vars(module)
    assert all(torch.equal(v, before[k]) for k, v in module.state_dict().items())


def test_seed_001_custom_kernels_plan_is_refused_naming_the_known_passes() -> None:
    """Seed 001's plan ``("custom-kernels", "compile")``: the pass is pending (lead); until then a named refusal."""
    model = AutoModel.from_pretrained(model_type="vad_silero")
    with pytest.raises(UnknownPassError) as info:
        model.apply_optimization_plan(("custom-kernels", "compile"), mode="inference")
    message = str(info.value)
    assert "'custom-kernels'" in message
    for known in ("compile", "dtype", "eval-mode", "inference-mode", "int8-dynamic", "threads"):
        assert known in message
    assert not model.is_loaded  # refused before the runtime was loaded


def test_seed_001_auto_plan_applies_exactly_the_architectures_verified_passes() -> None:
    """Seed 001: "optimization_passes metadata records implementations verified for automatic selection"."""
    audio = load_audio(DATA / "silero" / "test.wav").samples[: 16000 * 20]
    model = AutoModel.from_pretrained(model_type="vad_silero", device="cpu")
    reference = model.detect(audio, sample_rate=16000, return_probabilities=True)
    verified = model.architecture_spec().optimization_passes  # type: ignore[union-attr]
    result = model.apply_optimization_plan("auto", mode="inference")
    manifest = result.manifest()
    names = [entry["name"] for entry in manifest["passes"]]  # type: ignore[index, union-attr]
    # float32 on the CPU: every verified kind fits except int8-dynamic, which is float32-only and comes after dtype
    assert verified == ("eval-mode", "inference-mode", "threads", "dtype", "int8-dynamic")
    assert names == ["eval-mode", "inference-mode", "threads", "dtype"]
    assert manifest["context"]["dtype"] == "float32"  # type: ignore[index, call-overload]
    optimized = model.detect(audio, sample_rate=16000, return_probabilities=True)
    model.restore_optimization_plan("inference")
    assert optimized.probabilities is not None and reference.probabilities is not None
    assert len(optimized.segments) == len(reference.segments)
    assert float(np.abs(optimized.probabilities - reference.probabilities).max()) <= 0.08  # bfloat16, as verified
    restored = model.detect(audio, sample_rate=16000, return_probabilities=True)
    assert restored.probabilities is not None and np.array_equal(restored.probabilities, reference.probabilities)


def test_seed_001_auto_plan_without_architecture_metadata_is_refused_before_loading() -> None:
    model = AutoModel.from_pretrained(model_type="vad_webrtc")
    with pytest.raises(OptimizationConfigurationError, match="has no architecture metadata; name the passes"):
        model.apply_optimization_plan("auto", mode="inference")
    assert not model.is_loaded


@pytest.mark.parametrize("architecture", [spec.architecture_id for spec in ARCHITECTURES.list()])
def test_seed_001_auto_selection_is_a_partition_of_every_architectures_verified_passes(architecture: str) -> None:
    spec = ARCHITECTURES.get(architecture)
    for device in spec.devices:
        for dtype in spec.dtypes:
            context = OptimizationContext(device=device, dtype=dtype)
            selection = select_verified_passes(spec, context)
            skipped = [kind for kind, _ in selection.skipped]
            assert sorted((*selection.passes, *skipped)) == sorted(spec.optimization_passes), (device, dtype)
            assert all(reason for _, reason in selection.skipped)


# ------------------------------------------------------------------------------------------ seed 004: Hyperion
SEED_004_MODELS = '''
"""The seed's HyperTorchModel examples, as a user's own package would hold them (seed 004, literally)."""
import torch
from torch import nn

from voicehub.hyperion.torch import HyperTorchModel, read_checkpoint


class Encoder(nn.Module):
    """A nested reusable architecture: it contributes its own configuration."""

    def __init__(self, in_dim=8, hidden_dim=16):
        super().__init__()
        self.in_dim, self.hidden_dim = in_dim, hidden_dim
        self.layer = nn.Linear(in_dim, hidden_dim)

    def get_config(self):
        return {"in_dim": self.in_dim, "hidden_dim": self.hidden_dim}

    def forward(self, x):
        return torch.tanh(self.layer(x))


class SeedEmbedder(HyperTorchModel):
    def __init__(self, encoder_cfg, embedding_dim=4, dropout_rate=0.0):
        super().__init__()
        self.encoder = Encoder(**encoder_cfg)
        self.embedding_dim = embedding_dim
        self.dropout_rate = dropout_rate
        self.dropout = nn.Dropout(dropout_rate)
        self.affine = nn.Linear(self.encoder.hidden_dim, embedding_dim)

    def get_config(self):
        return {
            **super().get_config(),
            "encoder_cfg": self.encoder.get_config(),
            "embedding_dim": self.embedding_dim,
            "dropout_rate": self.dropout_rate,
        }

    def forward(self, x):
        return self.affine(self.dropout(self.encoder(x)))


class AE(HyperTorchModel):
    """Seed 004's AE.load pattern: the constructor takes live modules, so load() rebuilds them first."""

    def __init__(self, encoder_net, decoder_net):
        super().__init__()
        self.encoder_net = encoder_net
        self.decoder_net = decoder_net
        self.loaded_by = "constructor"

    def get_config(self):
        return {
            **super().get_config(),
            "encoder_cfg": self.encoder_net.get_config(),
            "decoder_cfg": self.decoder_net.get_config(),
        }

    @classmethod
    def load(cls, path, *, map_location="cpu", safe_globals=()):
        raw = read_checkpoint(path, map_location=map_location, safe_globals=safe_globals)
        model = cls(Encoder(**raw.model_cfg["encoder_cfg"]), Encoder(**raw.model_cfg["decoder_cfg"]))
        model.load_state_dict(raw.state_dict)
        model.loaded_by = "AE.load"
        return model.eval()

    def forward(self, x):
        return self.decoder_net(self.encoder_net(x))
'''

FRESH_PROCESS_004 = """
import sys, json, numpy as np, torch
from pathlib import Path
from voicehub.hyperion.torch import HyperTorchModel
d = Path(sys.argv[1])
assert "seed_models" not in sys.modules and "voicehub.architectures.xvector.model" not in sys.modules
x = torch.from_numpy(np.load(d / "x.npy"))
wave = torch.from_numpy(np.load(d / "wave.npy"))
report = {}
for name in ("embedder.pth", "embedder_dir", "ae.pth", "xvector.pth"):
    model = HyperTorchModel.auto_load(d / name)
    with torch.no_grad():
        out = model(wave if name == "xvector.pth" else x)
    report[name] = {
        "class": type(model).__name__,
        "max_abs_diff": float((out - torch.from_numpy(np.load(d / (name + ".npy")))).abs().max()),
        "config": model.get_config(),
        "train_mode": model.train_mode,
        "trainable": sorted({k.split(".")[0] for k, p in model.named_parameters() if p.requires_grad}),
        "loaded_by": getattr(model, "loaded_by", None),
    }
print(json.dumps(report))
"""


def _seed_004_package(root: Path) -> tuple[Path, Path]:
    """The seed's models as an installed plug-in: source on the path, classes announced by entry points."""
    source = root / "src"
    source.mkdir()
    (source / "seed_models.py").write_text(SEED_004_MODELS)
    site = root / "site"
    info = site / "seed_models-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: seed-models\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[voicehub.hyperion_torch_models]\nSeedEmbedder = seed_models:SeedEmbedder\nAE = seed_models:AE\n"
    )
    return source, site


def test_seed_004_examples_save_and_auto_load_in_a_fresh_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seed 004: "save/load and auto_load in a fresh process"; train_mode restored; AE.load honoured;
    a Hyperion file without a class path finds the maintained models."""
    import subprocess
    import sys

    from voicehub.architectures.xvector.config import XVectorConfig
    from voicehub.architectures.xvector.model import XVector
    from voicehub.hyperion.torch import HyperTorchModel

    source, site = _seed_004_package(tmp_path)
    monkeypatch.syspath_prepend(str(source))
    import seed_models  # type: ignore[import-not-found]

    torch.manual_seed(0)
    embedder = seed_models.SeedEmbedder({"in_dim": 8, "hidden_dim": 16}, embedding_dim=4, dropout_rate=0.25).eval()
    ae = seed_models.AE(seed_models.Encoder(8, 3), seed_models.Encoder(3, 8)).eval()
    xvector = XVector(
        XVectorConfig(
            channels=32,
            dilations=(2,),
            res2net_scale=4,
            se_bottleneck=8,
            aggregation_channels=64,
            attention_channels=16,
            embedding_dim=24,
        )
    ).eval()
    xvector.set_train_mode("ft-embed-affine")
    x = torch.randn(5, 8)
    wave = torch.randn(2, 8000)
    np.save(tmp_path / "x.npy", x.numpy())
    np.save(tmp_path / "wave.npy", wave.numpy())
    saved = {"embedder.pth": embedder, "embedder_dir": embedder, "ae.pth": ae, "xvector.pth": xvector}
    for name, model in saved.items():
        model.save(tmp_path / name)
        with torch.no_grad():
            np.save(tmp_path / (name + ".npy"), model(wave if name == "xvector.pth" else x).numpy())
    # A Hyperion-style file: model_cfg + model_state_dict, no import path recorded.
    payload = torch.load(tmp_path / "xvector.pth", weights_only=True)
    del payload["class_path"]
    torch.save(payload, tmp_path / "xvector.pth")

    # In this process too: the seed's constructor-style class loads by its own load and by auto_load.
    reloaded = seed_models.SeedEmbedder.load(tmp_path / "embedder.pth")
    assert reloaded.dropout_rate == 0.25 and reloaded.embedding_dim == 4
    assert torch.equal(reloaded(x), embedder(x))

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(source), str(site), os.environ.get("PYTHONPATH", "")])}
    # The same intra-op thread count as here: another count sums in another order (XVector's output
    # then differed by 2.2e-8 after an earlier test left this process at one thread).
    env["OMP_NUM_THREADS"] = str(torch.get_num_threads())
    done = subprocess.run(
        [sys.executable, "-c", FRESH_PROCESS_004, str(tmp_path)], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    for name in ("embedder.pth", "embedder_dir"):
        assert report[name]["class"] == "SeedEmbedder" and report[name]["max_abs_diff"] == 0.0
        assert report[name]["config"] == embedder.get_config()
        assert report[name]["config"]["dropout_rate"] == 0.25
    assert report["ae.pth"]["class"] == "AE" and report["ae.pth"]["loaded_by"] == "AE.load"
    assert report["ae.pth"]["max_abs_diff"] == 0.0
    assert report["xvector.pth"]["class"] == "XVector" and report["xvector.pth"]["max_abs_diff"] == 0.0
    assert report["xvector.pth"]["train_mode"] == "ft-embed-affine"
    assert report["xvector.pth"]["trainable"] == sorted(
        {k.split(".")[0] for k, p in xvector.named_parameters() if p.requires_grad}
    )
    assert report["xvector.pth"]["trainable"] != sorted({k.split(".")[0] for k, _ in xvector.named_parameters()})
    assert isinstance(HyperTorchModel.auto_load(tmp_path / "ae.pth"), seed_models.AE)


def test_seed_004_constructor_style_config_with_a_key_the_constructor_lacks_names_both(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from voicehub.hyperion.errors import HyperionFileError

    source, _ = _seed_004_package(tmp_path)
    monkeypatch.syspath_prepend(str(source))
    import seed_models

    path = seed_models.SeedEmbedder({"in_dim": 2, "hidden_dim": 2}).save(tmp_path / "e.pth")
    payload = torch.load(path, weights_only=True)
    payload["model_cfg"]["embeding_dim"] = 3  # a misspelt key is refused, not silently dropped
    torch.save(payload, path)
    with pytest.raises(HyperionFileError, match=r"'embeding_dim'.*'dropout_rate', 'embedding_dim', 'encoder_cfg'"):
        seed_models.SeedEmbedder.load(path)


# ------------------------------------------------------------------------------------------ seed 001: ArchitectureSpec
ABSENT_PARTS = {  # parts a family really does not have; the reason is beside each None in its registration.py
    "silero": {"processor", "decoder", "objective"},
    "ge2e": {"decoder"},
    "xvector": {"processor", "decoder"},
    "whisper": {"objective"},
    "vits": {"objective"},
    "moonshine": {"objective"},
}


@pytest.mark.parametrize("architecture", [spec.architecture_id for spec in ARCHITECTURES.list()])
def test_seed_001_architecture_spec_references_resolve_for_every_family(architecture: str) -> None:
    """Seed 001: "ArchitectureSpec ... contains lazy references to the builder, config, processor, decoder,
    objective, and checkpoint adapter"."""
    from voicehub.core.config import Config
    from voicehub.registry import ARCHITECTURE_PARTS, SpecError

    spec = ARCHITECTURES.get(architecture)
    references = spec.references()
    assert tuple(references) == ARCHITECTURE_PARTS
    assert {part for part, ref in references.items() if ref is None} == ABSENT_PARTS[architecture]
    for part in ARCHITECTURE_PARTS:
        if references[part] is None:
            with pytest.raises(SpecError, match=f"declares no {part}"):
                spec.resolve(part)
            continue
        resolved = spec.resolve(part)
        assert callable(resolved), (part, resolved)
    assert issubclass(spec.resolve("builder"), torch.nn.Module)
    assert issubclass(spec.resolve("config"), Config)
    assert spec.to_dict()["builder"] == spec.builder


def test_seed_001_runtime_build_uses_the_architecture_references(monkeypatch: pytest.MonkeyPatch) -> None:
    import dataclasses

    from voicehub.core.errors import LifecycleError
    from voicehub.models.vad_silero.wrapper import SileroVADModel
    from voicehub.registry import SpecError

    spec = ARCHITECTURES.get("silero")
    model = AutoModel.from_pretrained(model_type="vad_silero", device="cpu")
    model.load()  # the real references: the graph built is the builder's class
    assert isinstance(model.runtime.module, spec.resolve("builder"))  # type: ignore[union-attr]
    wrong = dataclasses.replace(spec, builder="voicehub.architectures.ge2e.model:GE2ESpeakerEncoder")
    monkeypatch.setattr(SileroVADModel, "architecture_spec", lambda self: wrong)
    with pytest.raises(LifecycleError, match=r"built a SileroVAD, but its architecture 'silero' names the builder"):
        AutoModel.from_pretrained(model_type="vad_silero", device="cpu").load()
    rotten = dataclasses.replace(spec, checkpoint_adapter="voicehub.architectures.silero.checkpoint:load_gone")
    monkeypatch.setattr(SileroVADModel, "architecture_spec", lambda self: rotten)
    with pytest.raises(SpecError, match=r"checkpoint_adapter reference .*load_gone.* does not resolve"):
        AutoModel.from_pretrained(model_type="vad_silero", device="cpu").load()


# ------------------------------------------------------------------------------------------ seed 001: registry facade
FACADE_SCRIPT = """
import sys
import voicehub
import voicehub.registry as implementation
from voicehub.models import registry as facade
assert facade.MODEL_CATALOG is implementation.MODEL_CATALOG
assert facade.ARCHITECTURE_CATALOG is implementation.ARCHITECTURE_CATALOG
assert facade.ModelSpec is implementation.ModelSpec and facade.ModelRegistry is implementation.ModelRegistry
spec = facade.ModelSpec(model_type="acme_tts", task="tts", config="acme.config:AcmeConfig", wrapper="acme.wrapper:Acme")
facade.MODEL_CATALOG.register(spec)
print(implementation.MODEL_CATALOG.get("acme_tts") is spec, implementation.MODEL_CATALOG.get("silero").model_type,
      "torch" in sys.modules)
"""


def test_seed_001_voicehub_models_registry_is_a_facade_over_the_one_implementation() -> None:
    """Seed 001: "The old voicehub.registry module is a compatibility facade over the model-domain implementation".

    Decided the other way round (docs/architecture.md, "Seed conformance"): ``voicehub.registry`` is the
    implementation, ``voicehub.models.registry`` the facade; both name the very same objects.
    """
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", FACADE_SCRIPT], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "vad_silero", "False"]  # one catalog, built-ins included, no torch


# ------------------------------------------------------------------------------------------ seed 001: loading
def test_seed_001_loading_example_creates_qwen3_lazily_and_first_use_says_how_to_get_weights() -> None:
    """Seed 001, "Loading a model": the wrapper is created with model=None; the first inference builds the runtime."""
    import numpy as np

    from voicehub.core.runtime import RuntimeState
    from voicehub.registry import CheckpointNotFoundError

    model = AutoModel.from_pretrained(
        "Qwen/Qwen3-ASR-0.6B",
        model_type="asr_qwen3",
        lazy_load=True,
    )
    assert type(model).__name__ == "Qwen3ASRModel" and model.task.value == "automatic-speech-recognition"
    assert model.state is RuntimeState.CREATED and model.runtime is None
    assert model.source is not None and model.source.to_string() == "hf:Qwen/Qwen3-ASR-0.6B"
    with pytest.raises(CheckpointNotFoundError) as info:  # HF_HUB_OFFLINE=1: no model hub at run time
        model.transcribe(np.zeros(16000, dtype=np.float32), sample_rate=16000)
    message = str(info.value)
    assert "asr_qwen3" in message and "Qwen/Qwen3-ASR-0.6B" in message
    assert "download it once online" in message and "source=" in message
    assert model.state is RuntimeState.CREATED

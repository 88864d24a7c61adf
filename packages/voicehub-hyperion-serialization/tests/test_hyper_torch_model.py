"""HyperTorchModel: config contract, both file forms, auto_load, normalization, migrations, training helpers."""

from __future__ import annotations

import argparse
import dataclasses
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import pytest
import torch
from torch import nn

from voicehub.core import Config, ConfigError, DeviceError, Migration, UnknownConfigKeyError, VoiceHubError
from voicehub.hyperion.errors import (
    HyperionFileError,
    HyperionRegistryError,
    UnknownHyperionClassError,
    UnsafeFormatError,
)
from voicehub.hyperion.torch import HyperTorchConfig, HyperTorchModel, StateMigration


def _rename_hidden(cfg: dict[str, Any]) -> dict[str, Any]:
    cfg["hidden_size"] = cfg.pop("hidden")
    return cfg


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class InnerConfig(Config):
    config_type: ClassVar[str] = "tiny-inner"
    scale: float = 2.0


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class TinyConfig(HyperTorchConfig):
    config_type: ClassVar[str] = "tiny-model"
    schema_version: ClassVar[int] = 2
    migrations: ClassVar[Mapping[int, Migration]] = {1: _rename_hidden}
    in_dim: int = 4
    hidden_size: int = 8
    out_dim: int = 3
    inner: InnerConfig = dataclasses.field(default_factory=InnerConfig)


def _scale_became_buffer(config: Any, state: dict[str, torch.Tensor], source: str) -> dict[str, torch.Tensor]:
    stored = state.pop("scale")
    if float(stored) != config.inner.scale:
        raise HyperionFileError(f"{source}: stored scale {float(stored)} != config {config.inner.scale}", path=source)
    return state


class TinyHyperModel(HyperTorchModel):
    config_class: ClassVar[type[TinyConfig]] = TinyConfig
    state_migrations: ClassVar[dict[int, StateMigration]] = {1: _scale_became_buffer}
    config: TinyConfig

    def __init__(self, config: TinyConfig | None = None) -> None:
        super().__init__(config)
        self.first = nn.Linear(self.config.in_dim, self.config.hidden_size)
        self.norm = nn.BatchNorm1d(self.config.hidden_size)
        self.second = nn.Linear(self.config.hidden_size, self.config.out_dim)
        self.register_buffer("scale", torch.tensor(self.config.inner.scale), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.second(torch.relu(self.norm(self.first(x)))) * self.scale
        return out


def _trained(seed: int = 0, **changes: Any) -> TinyHyperModel:
    torch.manual_seed(seed)
    model = TinyHyperModel(TinyConfig(**changes))
    with torch.no_grad():
        for param in model.parameters():
            param.add_(torch.randn_like(param))
        model.norm.running_mean.normal_()
        model.norm.num_batches_tracked.fill_(7)
    return model


def _assert_same_state(a: nn.Module, b: nn.Module) -> None:
    sa, sb = a.state_dict(), b.state_dict()
    assert sa.keys() == sb.keys()
    for key in sa:
        assert sa[key].dtype == sb[key].dtype, key
        assert torch.equal(sa[key], sb[key]), key


# ----------------------------------------------------------------------------- configuration
def test_get_config_holds_class_name_tags_defaults_and_nested_config() -> None:
    cfg = TinyHyperModel().get_config()
    assert cfg == {
        "class_name": "TinyHyperModel",
        "type": "tiny-model",
        "schema_version": 2,
        "bias_weight_decay": None,
        "in_dim": 4,
        "hidden_size": 8,
        "out_dim": 3,
        "inner": {"type": "tiny-inner", "schema_version": 1, "scale": 2.0},
    }


def test_from_config_round_trip_rebuilds_equal_config() -> None:
    model = TinyHyperModel(TinyConfig(hidden_size=5, inner=InnerConfig(scale=0.5), bias_weight_decay=0.0))
    rebuilt = TinyHyperModel.from_config(model.get_config())
    assert rebuilt.config == model.config
    assert rebuilt.first.out_features == 5 and float(rebuilt.scale) == 0.5


def test_from_config_rejects_unknown_key_listing_known_keys() -> None:
    cfg = TinyHyperModel().get_config() | {"hiden_size": 3}
    with pytest.raises(UnknownConfigKeyError, match=r"hiden_size.*known keys are .*hidden_size"):
        TinyHyperModel.from_config(cfg)


def test_from_config_rejects_other_class_name() -> None:
    with pytest.raises(ConfigError, match="OtherModel"):
        TinyHyperModel.from_config({"class_name": "OtherModel"})


def test_constructor_refuses_a_config_of_another_class() -> None:
    with pytest.raises(ConfigError, match="expects a TinyConfig"):
        TinyHyperModel(HyperTorchConfig())  # type: ignore[arg-type]


def test_negative_bias_weight_decay_is_refused() -> None:
    with pytest.raises(ConfigError, match="bias_weight_decay"):
        TinyConfig(bias_weight_decay=-1.0)


def test_duplicate_class_name_from_another_module_is_refused() -> None:
    with pytest.raises(HyperionRegistryError, match="TinyHyperModel"):
        type("TinyHyperModel", (HyperTorchModel,), {"__module__": "somewhere.else"})


# ----------------------------------------------------------------------------- save / load
@pytest.mark.parametrize("name", ["model.pth", "model_dir"])
def test_save_then_load_is_bit_exact_and_in_eval_mode(tmp_path: Path, name: str) -> None:
    model = _trained(hidden_size=6)
    path = model.save(tmp_path / name)
    loaded = TinyHyperModel.load(path)
    assert loaded.config == model.config
    _assert_same_state(model, loaded)
    assert not loaded.training
    x = torch.randn(5, 4)
    model.eval()
    assert torch.equal(model(x), loaded(x))


def test_directory_format_holds_strict_json_config_and_safetensors(tmp_path: Path) -> None:
    from safetensors import safe_open

    path = _trained().save(tmp_path / "ckpt")
    assert sorted(p.name for p in path.iterdir()) == ["config.json", "model.safetensors"]
    assert '"class_name": "TinyHyperModel"' in (path / "config.json").read_text()
    with safe_open(str(path / "model.safetensors"), framework="pt") as handle:
        meta = handle.metadata()
        assert sorted(handle.keys()) == sorted(TinyHyperModel().state_dict())
    assert meta["class_name"] == "TinyHyperModel"
    assert meta["class_path"].endswith(":TinyHyperModel")


def test_single_file_format_is_the_hyperion_dict(tmp_path: Path) -> None:
    path = _trained().save(tmp_path / "m.pth")
    payload = torch.load(path, weights_only=True)
    assert {"model_cfg", "model_state_dict"} <= set(payload)
    assert payload["model_cfg"]["class_name"] == "TinyHyperModel"


def test_auto_load_builds_the_class_named_in_the_file(tmp_path: Path) -> None:
    model = _trained(out_dim=2)
    for path in (model.save(tmp_path / "a.pth"), model.save(tmp_path / "a_dir")):
        loaded = HyperTorchModel.auto_load(path)
        assert type(loaded) is TinyHyperModel
        _assert_same_state(model, loaded)


def test_auto_load_prefers_extra_objs_over_the_registry(tmp_path: Path) -> None:
    class Plugin(TinyHyperModel):
        pass

    path = _trained().save(tmp_path / "p.pth")
    loaded = HyperTorchModel.auto_load(path, extra_objs={"TinyHyperModel": Plugin})
    assert type(loaded) is Plugin


def test_load_refuses_a_file_of_another_class(tmp_path: Path) -> None:
    class OtherTiny(TinyHyperModel):
        pass

    path = OtherTiny().save(tmp_path / "o.pth")
    with pytest.raises(HyperionFileError, match=r"o\.pth.*'OtherTiny'.*not TinyHyperModel"):
        TinyHyperModel.load(path)


class EntryPointNet(HyperTorchModel):
    """A plug-in class announced through the ``voicehub.hyperion_torch_models`` entry-point group."""


def test_auto_load_finds_a_plugin_class_through_its_entry_point(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib.metadata

    path = EntryPointNet().save(tmp_path / "plugin.pth")
    payload = torch.load(path, weights_only=True)
    payload.pop("class_path")  # as written by another toolkit: no module recorded
    torch.save(payload, path)
    monkeypatch.delitem(HyperTorchModel._registry, "EntryPointNet")  # as in a process that never imported it
    with pytest.raises(UnknownHyperionClassError, match="EntryPointNet"):
        HyperTorchModel.auto_load(path)
    entry = importlib.metadata.EntryPoint(
        name="EntryPointNet", value=f"{__name__}:EntryPointNet", group="voicehub.hyperion_torch_models"
    )

    def entry_points(*, group: str) -> list[importlib.metadata.EntryPoint]:
        return [entry] if group == "voicehub.hyperion_torch_models" else []

    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)
    assert type(HyperTorchModel.auto_load(path)) is EntryPointNet


def test_auto_load_unknown_class_lists_known_names_and_file(tmp_path: Path) -> None:
    path = tmp_path / "u.pth"
    torch.save({"model_cfg": {"class_name": "NoSuchNet"}, "model_state_dict": {}}, path)
    with pytest.raises(UnknownHyperionClassError, match=r"u\.pth.*NoSuchNet.*TinyHyperModel.*extra_objs") as info:
        HyperTorchModel.auto_load(path)
    assert "TinyHyperModel" in info.value.available


def test_auto_load_without_class_name_is_an_error_not_a_guess(tmp_path: Path) -> None:
    path = tmp_path / "n.pth"
    torch.save({"model_cfg": {"in_dim": 4}, "model_state_dict": {}}, path)
    with pytest.raises(HyperionFileError, match=r"n\.pth.*no 'class_name'"):
        HyperTorchModel.auto_load(path)


@pytest.mark.parametrize("content", [b"", b"not a checkpoint at all", b"PK\x03\x04broken zip"])
def test_corrupt_file_raises_naming_it(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "bad.pth"
    path.write_bytes(content)
    with pytest.raises(HyperionFileError, match=r"bad\.pth"):
        HyperTorchModel.auto_load(path)


def test_missing_weights_in_directory_is_named(tmp_path: Path) -> None:
    path = _trained().save(tmp_path / "d")
    (path / "model.safetensors").unlink()
    with pytest.raises(HyperionFileError, match=r"model\.safetensors: missing"):
        TinyHyperModel.load(path)


# ----------------------------------------------------------------------------- mismatches
def test_wrong_shape_raises_naming_file_and_tensor_before_touching_model(tmp_path: Path) -> None:
    source = _trained(hidden_size=6)
    path = tmp_path / "w.pth"
    payload = {"model_cfg": source.get_config(), "model_state_dict": dict(source.state_dict())}
    payload["model_state_dict"]["second.weight"] = torch.zeros(3, 7)
    torch.save(payload, path)
    with pytest.raises(HyperionFileError, match=r"w\.pth.*second\.weight: expected \(3, 6\), found \(3, 7\)"):
        TinyHyperModel.load(path)
    target = _trained(seed=1, hidden_size=6)
    before = {k: v.clone() for k, v in target.state_dict().items()}
    with pytest.raises(HyperionFileError, match=r"second\.weight"):
        target.load_checked_state_dict(payload["model_state_dict"], source=str(path))
    for key, value in target.state_dict().items():
        assert torch.equal(value, before[key]), f"{key} changed although loading failed"


def test_missing_and_unexpected_tensors_are_listed(tmp_path: Path) -> None:
    state = dict(_trained().state_dict())
    del state["first.bias"]
    state["extra.weight"] = torch.zeros(1)
    with pytest.raises(HyperionFileError, match=r"missing: \['first\.bias'\].*unexpected: \['extra\.weight'\]"):
        TinyHyperModel().load_checked_state_dict(state, source="x")


# ----------------------------------------------------------------------------- normalization
def test_module_prefixes_are_stripped_per_key_and_swa_counter_dropped(tmp_path: Path) -> None:
    model = _trained()
    averaged = torch.optim.swa_utils.AveragedModel(model)
    averaged.update_parameters(model)
    state = averaged.state_dict()
    assert "n_averaged" in state and all(k.startswith("module.") for k in state if k != "n_averaged")
    # DDP inside AveragedModel on some keys only: upstream inspected the first key alone.
    mixed = {("module.module." + k[7:] if i % 2 else k): v for i, (k, v) in enumerate(state.items())}
    path = tmp_path / "swa.pth"
    torch.save({"model_cfg": model.get_config(), "model_state_dict": mixed}, path)
    loaded = HyperTorchModel.auto_load(path)
    _assert_same_state(model, loaded)


def test_keys_colliding_after_prefix_stripping_are_refused(tmp_path: Path) -> None:
    model = _trained()
    state = dict(model.state_dict())
    state["module.first.bias"] = state["first.bias"]
    path = tmp_path / "c.pth"
    torch.save({"model_cfg": model.get_config(), "model_state_dict": state}, path)
    with pytest.raises(HyperionFileError, match=r"'first\.bias' and 'module\.first\.bias' both become 'first\.bias'"):
        TinyHyperModel.load(path)


def test_legacy_unversioned_file_is_migrated_config_and_state(tmp_path: Path) -> None:
    model = _trained(hidden_size=5, inner=InnerConfig(scale=3.0))
    state = dict(model.state_dict()) | {"scale": torch.tensor(3.0)}
    old_cfg = {"class_name": "TinyHyperModel", "in_dim": 4, "hidden": 5, "out_dim": 3, "inner": {"scale": 3.0}}
    path = tmp_path / "old.pth"
    torch.save({"model_cfg": old_cfg, "model_state_dict": state}, path)
    loaded = HyperTorchModel.auto_load(path)
    assert loaded.config == model.config
    _assert_same_state(model, loaded)
    assert float(loaded.scale) == 3.0


def test_state_migration_refuses_inconsistent_legacy_tensor(tmp_path: Path) -> None:
    model = _trained(hidden_size=5)
    state = dict(model.state_dict()) | {"scale": torch.tensor(9.0)}
    path = tmp_path / "old_bad.pth"
    old_cfg = {"class_name": "TinyHyperModel", "hidden": 5, "inner": {"scale": 2.0}}
    torch.save({"model_cfg": old_cfg, "model_state_dict": state}, path)
    with pytest.raises(HyperionFileError, match=r"stored scale 9\.0"):
        TinyHyperModel.load(path)


def test_newer_schema_version_is_refused_naming_file(tmp_path: Path) -> None:
    path = tmp_path / "new.pth"
    cfg = TinyHyperModel().get_config() | {"schema_version": 3}
    torch.save({"model_cfg": cfg, "model_state_dict": TinyHyperModel().state_dict()}, path)
    with pytest.raises(HyperionFileError, match=r"new\.pth.*schema_version 3 is newer"):
        TinyHyperModel.load(path)


# ----------------------------------------------------------------------------- pickle safety
def test_pickled_namespace_is_refused_without_opt_in_then_loads_with_safe_globals(tmp_path: Path) -> None:
    model = _trained()
    cfg = argparse.Namespace(**model.get_config())
    path = tmp_path / "ns.pth"
    torch.save({"model_cfg": cfg, "model_state_dict": model.state_dict()}, path)
    with pytest.raises(UnsafeFormatError, match=r"ns\.pth: refused to unpickle.*argparse\.Namespace.*safe_globals"):
        HyperTorchModel.auto_load(path)
    loaded = HyperTorchModel.auto_load(path, safe_globals=[argparse.Namespace])
    _assert_same_state(model, loaded)


class _Exploit:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.mkdir, (str(self.marker),))


def test_code_executing_pickle_is_refused_and_never_runs(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.pth"
    torch.save({"model_cfg": {"class_name": "TinyHyperModel"}, "model_state_dict": {}, "x": _Exploit(marker)}, path)
    with pytest.raises(UnsafeFormatError, match=r"evil\.pth") as info:
        HyperTorchModel.auto_load(path)
    assert isinstance(info.value, VoiceHubError) and isinstance(info.value, ValueError)
    assert not marker.exists()


# ----------------------------------------------------------------------------- training helpers
def test_frozen_mode_stops_gradients_and_keeps_eval_mode() -> None:
    model = _trained()
    model.set_train_mode("frozen")
    model.train()
    assert not model.training and not model.norm.training
    assert all(not p.requires_grad for p in model.parameters())
    assert model.parameter_summary()["trainable"] == 0
    model.set_train_mode("full")
    model.train()
    assert model.training and all(p.requires_grad for p in model.parameters())


@pytest.mark.parametrize("name", ["frozen.pth", "frozen_dir"])
def test_train_mode_is_saved_and_restored_by_load_and_auto_load(tmp_path: Path, name: str) -> None:
    model = _trained()
    model.set_train_mode("frozen")
    path = model.save(tmp_path / name)
    for loaded in (TinyHyperModel.load(path), HyperTorchModel.auto_load(path)):
        assert loaded.train_mode == "frozen"
        assert all(not p.requires_grad for p in loaded.parameters())
        loaded.train()
        assert not loaded.training  # frozen keeps eval mode, as before saving
    assert TinyHyperModel.load(_trained().save(tmp_path / ("full_" + name))).train_mode == "full"


def test_a_hyperion_file_without_train_mode_loads_in_full_and_an_unknown_one_is_named(tmp_path: Path) -> None:
    path = _trained().save(tmp_path / "m.pth")
    payload = torch.load(path, weights_only=True)
    del payload["train_mode"]
    torch.save(payload, path)
    assert TinyHyperModel.load(path).train_mode == "full"
    payload["train_mode"] = "partial"
    torch.save(payload, path)
    with pytest.raises(HyperionFileError, match=r"m\.pth: saved train_mode: .*'partial'.*\['full', 'frozen'\]"):
        TinyHyperModel.load(path)


def test_unknown_train_mode_is_refused_when_set() -> None:
    with pytest.raises(ConfigError, match=r"unknown train_mode 'partial'.*\['full', 'frozen'\]"):
        TinyHyperModel().set_train_mode("partial")


def test_bias_weight_decay_splits_matrices_from_biases_and_norm_scales() -> None:
    model = TinyHyperModel(TinyConfig(bias_weight_decay=0.0))
    matrices, vectors = model.trainable_param_groups()
    assert [tuple(p.shape) for p in matrices["params"]] == [(8, 4), (3, 8)]
    assert len(vectors["params"]) == 4 and vectors["weight_decay"] == 0.0  # 2 biases + BN weight/bias
    model.first.weight.requires_grad_(False)
    only = TinyHyperModel(TinyConfig()).trainable_param_groups()
    assert len(only) == 1 and isinstance(only[0]["params"], list) and len(only[0]["params"]) == 6
    assert len(model.trainable_param_groups()[0]["params"]) == 1


def test_bias_weight_decay_groups_drive_a_real_optimizer_step() -> None:
    model = _trained(bias_weight_decay=0.0)
    bias_before = model.first.bias.detach().clone()
    weight_before = model.first.weight.detach().clone()
    optimizer = torch.optim.SGD(model.trainable_param_groups(), lr=0.0, weight_decay=1.0)
    model.zero_grad()
    for param in model.parameters():
        param.grad = torch.zeros_like(param)
    optimizer.step()  # lr 0: nothing moves; then lr 0.1: decay only on matrices
    for group in optimizer.param_groups:
        group["lr"] = 0.1
    optimizer.step()
    assert torch.equal(model.first.bias, bias_before)
    assert torch.allclose(model.first.weight, weight_before * 0.9)


def test_device_property_and_error_on_mixed_devices() -> None:
    model = TinyHyperModel()
    assert model.device == torch.device("cpu")
    model.second.to("meta")
    with pytest.raises(DeviceError, match=r"no single device .*cpu.*meta"):
        _ = model.device


def test_freeze_leaves_buffers_alone() -> None:
    model = _trained()
    model.freeze()
    assert all(not p.requires_grad for p in model.parameters())
    assert int(model.norm.num_batches_tracked) == 7
    model.unfreeze()
    assert all(p.requires_grad for p in model.parameters())


_REPO_DATA = Path(__file__).resolve().parents[3] / "tests" / "data"


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("speech.wav", None, r"speech\.wav: not a PyTorch checkpoint: it is WAV audio"),
        ("notes.wav", b"this is a text file named .wav\n", r"notes\.wav: not a PyTorch checkpoint: it is a text file"),
        ("model.pth", b"", r"model\.pth: not a PyTorch checkpoint: the file is empty"),
        ("junk.pth", b"\x00\x01\x02\x03garbage", r"junk\.pth: not a PyTorch checkpoint: its first bytes match no"),
    ],
)
def test_non_checkpoint_file_says_what_it_is(tmp_path: Path, name: str, content: bytes | None, message: str) -> None:
    path = tmp_path / name
    real_speech = _REPO_DATA / "librivox" / "sense_and_sensibility_01_austen_64kb-0880.wav"
    path.write_bytes(real_speech.read_bytes() if content is None else content)
    with pytest.raises(HyperionFileError, match=message) as info:
        HyperTorchModel.auto_load(path)
    assert not isinstance(info.value, UnsafeFormatError)  # not a pickle: nothing was refused for safety


def test_hdf5_file_points_to_the_numpy_loader(tmp_path: Path) -> None:
    import numpy as np

    from voicehub.hyperion.np import LNorm

    path = LNorm(name="ln").fit(np.random.default_rng(0).normal(size=(20, 3))).save(tmp_path / "backend.pth")
    with pytest.raises(HyperionFileError, match=r"backend\.pth: .*HDF5 file.*HyperNPModel\.auto_load") as info:
        HyperTorchModel.auto_load(path)
    assert not isinstance(info.value, UnsafeFormatError)


def test_damaged_zip_checkpoint_never_leaks_a_bare_error(tmp_path: Path) -> None:
    """Flip bytes all over a real zip checkpoint: every load either succeeds or raises HyperionFileError."""
    good = _trained().save(tmp_path / "m.pth").read_bytes()
    outcomes: dict[str, int] = {}
    for offset in range(0, len(good), max(1, len(good) // 150)):
        damaged = bytearray(good)
        damaged[offset] ^= 0x5A
        path = tmp_path / "d.pth"
        path.write_bytes(bytes(damaged))
        try:
            HyperTorchModel.auto_load(path)
            outcomes["loaded"] = outcomes.get("loaded", 0) + 1
        except HyperionFileError as err:
            assert "d.pth" in str(err)
            outcomes["refused"] = outcomes.get("refused", 0) + 1
        except VoiceHubError:
            outcomes["other VoiceHub error"] = outcomes.get("other VoiceHub error", 0) + 1
    assert outcomes.get("refused", 0) > 0, outcomes


def test_checkpoint_files_get_ordinary_modes_and_replacing_keeps_the_mode(tmp_path: Path) -> None:
    from voicehub.core.files import default_file_mode

    model = _trained()
    single = model.save(tmp_path / "model.pth")
    directory = model.save(tmp_path / "model_dir")
    files = [Path(single), Path(directory) / "config.json", Path(directory) / "model.safetensors"]
    assert [f.stat().st_mode & 0o777 for f in files] == [default_file_mode()] * 3
    os.chmod(files[0], 0o640)
    model.save(tmp_path / "model.pth")
    assert files[0].stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.pth", "model_dir"]


def test_save_onto_a_file_or_under_a_file_raises_naming_the_path_and_writes_nothing(tmp_path: Path) -> None:
    model = _trained()
    occupied = tmp_path / "occupied"
    occupied.write_bytes(b"not a directory")
    single_dir = tmp_path / "taken.pth"
    single_dir.mkdir()
    # directory format onto a file, directory format under a file, single file under a file / onto a directory
    for target in (occupied, occupied / "ckpt", occupied / "m.pth", single_dir):
        with pytest.raises(HyperionFileError) as info:
            model.save(target)
        assert str(target) in str(info.value) and info.value.path == str(target)
    assert occupied.read_bytes() == b"not a directory"
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["occupied", "taken.pth"]


def test_failed_directory_save_removes_the_directories_and_files_it_created(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from voicehub.core.errors import OutputPathError
    from voicehub.hyperion.torch import checkpoint

    def disk_full(path: Path, text: str, **kwargs: Any) -> Path:
        raise OutputPathError(f"config {path}: cannot write (No space left on device)", path=path)

    model = _trained()
    monkeypatch.setattr(checkpoint, "write_text_atomic", disk_full)
    target = tmp_path / "new" / "deeper" / "ckpt"
    with pytest.raises(HyperionFileError, match="No space left") as info:
        model.save(target)
    assert info.value.path == str(target)
    assert list(tmp_path.iterdir()) == []  # the weights written first are gone, and so are the three directories
    existing = tmp_path / "existing"
    existing.mkdir()
    (existing / "notes.txt").write_text("keep")
    with pytest.raises(HyperionFileError):
        model.save(existing)
    assert sorted(p.name for p in existing.iterdir()) == ["notes.txt"]  # staged: nothing new after a failure

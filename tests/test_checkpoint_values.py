"""Every checkpoint loader refuses NaN/Inf weights and integer tensors where floats belong, at load time,
naming the tensor; every integration reads a damaged ``model.safetensors`` through one path with one
clean error (``voicehub.core.checkpoint``)."""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from voicehub.core import CheckpointError

SILERO_DATA = Path(str(importlib.metadata.distribution("silero-vad").locate_file("silero_vad/data")))
NAN_MESSAGE = r"NaN or infinite values: {name} \("


def _poison_nan(tensor: torch.Tensor) -> torch.Tensor:
    poisoned = tensor.clone()
    poisoned.view(-1)[0] = float("nan")
    return poisoned


def _poison_inf(tensor: torch.Tensor) -> torch.Tensor:
    poisoned = tensor.clone()
    poisoned.view(-1)[-1] = float("inf")
    return poisoned


def _to_integer(tensor: torch.Tensor) -> torch.Tensor:
    return tensor.round().to(torch.int64)


def _first_float(tensors: dict[str, torch.Tensor]) -> str:
    return next(name for name, tensor in sorted(tensors.items()) if tensor.is_floating_point() and tensor.numel() > 1)


@pytest.mark.parametrize("damage", [_poison_nan, _poison_inf], ids=["nan", "inf"])
def test_silero_safetensors_with_non_finite_weights_is_refused(
    tmp_path: Path, damage: Callable[[torch.Tensor], torch.Tensor]
) -> None:
    from voicehub.architectures.silero import load_silero_vad

    tensors = load_file(str(SILERO_DATA / "silero_vad_16k.safetensors"))
    name = _first_float(tensors)
    tensors[name] = damage(tensors[name])
    damaged = tmp_path / "silero_vad_16k.safetensors"
    save_file(tensors, str(damaged))
    with pytest.raises(CheckpointError, match="NaN or infinite values") as caught:
        load_silero_vad(damaged)
    assert str(damaged) in str(caught.value)


def test_silero_safetensors_with_an_integer_tensor_is_refused(tmp_path: Path) -> None:
    from voicehub.architectures.silero import load_silero_vad

    tensors = load_file(str(SILERO_DATA / "silero_vad_16k.safetensors"))
    name = _first_float(tensors)
    tensors[name] = _to_integer(tensors[name])
    damaged = tmp_path / "silero_vad_16k.safetensors"
    save_file(tensors, str(damaged))
    with pytest.raises(CheckpointError, match=r"integer tensors where the model holds floating-point weights"):
        load_silero_vad(damaged)


def test_silero_torchscript_with_nan_weights_is_refused(tmp_path: Path) -> None:
    from voicehub.architectures.silero import load_silero_vad

    module = torch.jit.load(str(SILERO_DATA / "silero_vad.jit"), map_location="cpu")  # type: ignore[no-untyped-call]
    state = module.state_dict()
    name = _first_float(state)
    with torch.no_grad():
        state[name].view(-1)[0] = float("nan")
    damaged = tmp_path / "silero_vad.jit"
    torch.jit.save(module, str(damaged))  # type: ignore[no-untyped-call]
    with pytest.raises(CheckpointError, match="NaN or infinite values"):
        load_silero_vad(damaged)


def test_resemblyzer_checkpoint_with_nan_weights_is_refused(tmp_path: Path) -> None:
    from voicehub.architectures.ge2e import load_resemblyzer_checkpoint
    from voicehub.architectures.ge2e.checkpoint import locate_resemblyzer_weights

    payload = torch.load(locate_resemblyzer_weights(), map_location="cpu", weights_only=True)
    state = payload["model_state"]
    state["linear.weight"] = _poison_nan(state["linear.weight"])
    damaged = tmp_path / "pretrained.pt"
    torch.save(payload, damaged)
    with pytest.raises(CheckpointError, match=NAN_MESSAGE.format(name=r"linear\.weight")):
        load_resemblyzer_checkpoint(damaged)


@pytest.mark.parametrize("form", ["directory", "pth"])
def test_hyperion_auto_load_refuses_nan_weights(tmp_path: Path, form: str) -> None:
    from voicehub.architectures.ge2e import load_resemblyzer_checkpoint
    from voicehub.hyperion.torch import HyperTorchModel

    encoder = load_resemblyzer_checkpoint()
    with torch.no_grad():
        encoder.linear.weight.view(-1)[3] = float("inf")
    target = encoder.save(tmp_path / ("encoder" if form == "directory" else "encoder.pth"))
    with pytest.raises(CheckpointError, match=NAN_MESSAGE.format(name=r"linear\.weight")):
        HyperTorchModel.auto_load(target)


def _truncate(file: Path) -> None:
    data = file.read_bytes()
    file.write_bytes(data[: len(data) // 2])


def test_a_truncated_saved_weights_file_gives_the_same_clean_error_for_every_integration(tmp_path: Path) -> None:
    from voicehub import AutoModel
    from voicehub.models.sv_ge2e.wrapper import GE2ESpeakerVerifier
    from voicehub.models.vad_silero.wrapper import SileroVADModel

    vad_dir = SileroVADModel.from_pretrained(device="cpu").save_pretrained(tmp_path / "vad")
    sv_dir = GE2ESpeakerVerifier.from_pretrained(device="cpu").save_pretrained(tmp_path / "sv")
    weight_files = [vad_dir / "model.safetensors", *sorted(sv_dir.rglob("model.safetensors"))]
    assert len(weight_files) == 2
    messages = []
    for saved, weights in zip((vad_dir, sv_dir), weight_files, strict=True):
        _truncate(weights)
        with pytest.raises(CheckpointError, match="not a readable safetensors file, truncated or corrupt") as caught:
            AutoModel.from_pretrained(str(saved), device="cpu").load()
        assert str(weights) in str(caught.value)
        messages.append(str(caught.value).split(": ", 1)[1])
    assert messages[0].split(" (")[0] == messages[1].split(" (")[0]


def test_nan_in_a_saved_vad_directory_is_refused_at_load(tmp_path: Path) -> None:
    from voicehub import AutoModel
    from voicehub.models.vad_silero.wrapper import SileroVADModel

    saved = SileroVADModel.from_pretrained(device="cpu").save_pretrained(tmp_path / "vad")
    tensors = load_file(str(saved / "model.safetensors"))
    name = _first_float(tensors)
    tensors[name] = _poison_nan(tensors[name])
    save_file(tensors, str(saved / "model.safetensors"))
    with pytest.raises(CheckpointError, match=NAN_MESSAGE.format(name=name.replace(".", r"\."))):
        AutoModel.from_pretrained(str(saved), device="cpu").load()

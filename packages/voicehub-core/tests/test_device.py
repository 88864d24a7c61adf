"""Device and dtype resolution."""

from __future__ import annotations

import pytest

from voicehub.core import DeviceError, normalize_device, normalize_dtype, resolve_device, resolve_dtype


def test_devices_are_normalized_and_unknown_ones_refused() -> None:
    assert [normalize_device(d) for d in ("AUTO", "cpu", "cuda:1", "mps")] == ["auto", "cpu", "cuda:1", "mps"]
    with pytest.raises(DeviceError, match="expected 'auto', 'cpu', 'cuda', 'cuda:N' or 'mps'"):
        normalize_device("gpu")


def test_auto_resolves_to_an_available_device() -> None:
    import torch

    expected = "cuda" if torch.cuda.is_available() else "cpu"
    if expected == "cpu" and torch.backends.mps.is_available():
        expected = "mps"
    assert resolve_device("auto") == expected


def test_unavailable_accelerators_are_refused_with_the_fix() -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA; the refusal cannot be observed")
    with pytest.raises(DeviceError, match="CUDA is not available on this machine; use the cpu device"):
        resolve_device("cuda")


def test_dtypes_accept_aliases_and_torch_dtypes() -> None:
    import torch

    assert normalize_dtype("fp16") == "float16"
    assert normalize_dtype(torch.bfloat16) == "bfloat16"
    assert resolve_dtype("auto") is torch.float32
    assert resolve_dtype("bf16", "cpu") is torch.bfloat16
    with pytest.raises(DeviceError, match="float16 is not supported on the CPU"):
        resolve_dtype("half", "cpu")
    with pytest.raises(DeviceError, match="unsupported dtype 'int8'"):
        normalize_dtype("int8")


def test_requests_become_typed_values_once_and_stay_unchanged() -> None:
    import torch

    from voicehub.core import Device, DType

    device = normalize_device(" CUDA:1 ")
    assert isinstance(device, Device) and device == "cuda:1" and device.type == "cuda" and not device.is_auto
    assert normalize_device(device) is device  # a typed value is not parsed again
    dtype = normalize_dtype(torch.bfloat16)
    assert dtype is DType.BFLOAT16 and normalize_dtype(dtype) is dtype and str(dtype) == "bfloat16"
    assert resolve_device(Device("cpu")) == "cpu" and isinstance(resolve_device("auto"), Device)
    assert resolve_dtype(DType.AUTO, Device("cpu")) is torch.float32

"""Device and dtype resolution.

Devices are given as ``"auto"``, ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or ``"mps"``; dtypes as
``"float32"``, ``"float16"``, ``"bfloat16"`` (aliases ``fp32``/``float``, ``fp16``/``half``,
``bf16``) or ``"auto"``. Resolution imports torch lazily; this module imports nothing heavy.
"""

from __future__ import annotations

import re
from typing import Any

from voicehub.core.errors import DeviceError
from voicehub.core.lazy import import_optional

DTYPE_ALIASES: dict[str, str] = {
    "float32": "float32",
    "fp32": "float32",
    "float": "float32",
    "float16": "float16",
    "fp16": "float16",
    "half": "float16",
    "bfloat16": "bfloat16",
    "bf16": "bfloat16",
}
_DEVICE = re.compile(r"^(cpu|mps|cuda(:\d+)?)$")


def _torch() -> Any:
    return import_optional("torch", purpose="device and dtype resolution")


def normalize_device(device: Any) -> str:
    """Validate a device request without touching hardware.

    Returns:
        ``"auto"``, ``"cpu"``, ``"mps"``, ``"cuda"`` or ``"cuda:N"``.

    Raises:
        DeviceError: for anything else, listing the accepted forms.
    """
    text = str(device).strip().lower()
    if text == "auto" or _DEVICE.match(text):
        return text
    raise DeviceError(f"unknown device {device!r}; expected 'auto', 'cpu', 'cuda', 'cuda:N' or 'mps'")


def resolve_device(device: Any = "auto") -> str:
    """Resolve a device request against the hardware present.

    ``"auto"`` picks CUDA, then Apple MPS, then the CPU.

    Returns:
        A concrete torch device string.

    Raises:
        DeviceError: if the requested accelerator is not available.
    """
    text = normalize_device(device)
    if text == "cpu":
        return text
    torch = _torch()
    cuda = bool(torch.cuda.is_available())
    mps = bool(getattr(torch.backends, "mps", None) and torch.backends.mps.is_available())
    if text == "auto":
        return "cuda" if cuda else "mps" if mps else "cpu"
    if text.startswith("cuda"):
        if not cuda:
            raise DeviceError(f"device {text!r} requested but CUDA is not available; use device='cpu'")
        index = int(text.split(":")[1]) if ":" in text else 0
        if index >= int(torch.cuda.device_count()):
            raise DeviceError(f"device {text!r} requested but only {torch.cuda.device_count()} CUDA device(s) exist")
        return text
    if not mps:
        raise DeviceError("device 'mps' requested but Apple MPS is not available; use device='cpu'")
    return text


def normalize_dtype(dtype: Any) -> str:
    """Validate a dtype request (a string alias or a ``torch.dtype``) without importing torch.

    Returns:
        ``"auto"``, ``"float32"``, ``"float16"`` or ``"bfloat16"``.

    Raises:
        DeviceError: for other dtypes, listing the accepted names.
    """
    text = str(dtype).strip().lower().removeprefix("torch.")
    if text == "auto":
        return text
    name = DTYPE_ALIASES.get(text)
    if name is None:
        raise DeviceError(f"unsupported dtype {dtype!r}; expected one of 'auto', {sorted(set(DTYPE_ALIASES))}")
    return name


def resolve_dtype(dtype: Any = "auto", device: str = "cpu") -> Any:
    """Resolve a dtype request to a ``torch.dtype`` for ``device``.

    ``"auto"`` is float32 on every device (half precision is opt-in, since not every model
    is accurate in it). float16 on the CPU is refused: most CPU kernels lack it.

    Raises:
        DeviceError: for an unknown dtype or float16 on the CPU.
    """
    name = normalize_dtype(dtype)
    if name == "auto":
        name = "float32"
    if name == "float16" and device == "cpu":
        raise DeviceError("dtype float16 is not supported on the CPU; use float32 or bfloat16")
    return getattr(_torch(), name)


__all__ = ["DTYPE_ALIASES", "normalize_device", "normalize_dtype", "resolve_device", "resolve_dtype"]

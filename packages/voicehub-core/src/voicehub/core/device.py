"""Device and dtype requests as typed values, and their resolution against the hardware.

A user passes ``device`` as ``"auto"``, ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or ``"mps"`` and
``dtype`` as ``"auto"``, ``"float32"``, ``"float16"``, ``"bfloat16"`` (aliases ``fp32``/``float``,
``fp16``/``half``, ``bf16``) or a ``torch.dtype``. The boundary that receives them
(``AutoModel.from_pretrained``, a wrapper's constructor) turns them once into a :class:`Device`
and a :class:`DType` with :func:`normalize_device` / :func:`normalize_dtype`; every layer below
takes those typed values and never parses again (normalising a value that already is a
``Device`` or ``DType`` returns it unchanged). Resolution imports torch lazily; this module
imports nothing heavy.
"""

from __future__ import annotations

import enum
import re
from typing import Any, Protocol

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


class Device(str):
    """A validated device request: ``"auto"``, ``"cpu"``, ``"mps"``, ``"cuda"`` or ``"cuda:N"``.

    It is a ``str`` (compares equal to its text and works wherever torch takes a device string),
    so a value made once at the user boundary travels down unchanged. Build one with
    :func:`normalize_device`.
    """

    __slots__ = ()

    def __new__(cls, value: str) -> Device:
        text = str(value).strip().lower()
        if text != "auto" and not _DEVICE.match(text):
            raise DeviceError(f"unknown device {value!r}; expected 'auto', 'cpu', 'cuda', 'cuda:N' or 'mps'")
        return super().__new__(cls, text)

    @property
    def type(self) -> str:
        """The device type without an index: ``"auto"``, ``"cpu"``, ``"cuda"`` or ``"mps"``."""
        return self.split(":", 1)[0]

    @property
    def is_auto(self) -> bool:
        """Whether the request leaves the choice to :func:`resolve_device`."""
        return self == "auto"


class DType(enum.StrEnum):
    """A validated floating-point dtype request; ``AUTO`` is float32 once resolved."""

    AUTO = "auto"
    FLOAT32 = "float32"
    FLOAT16 = "float16"
    BFLOAT16 = "bfloat16"


class TorchDTypeLike(Protocol):
    """A ``torch.dtype`` (as far as this module needs it: ``str()`` names it ``torch.<name>``)."""

    @property
    def is_floating_point(self) -> bool:
        """Whether the dtype is a floating-point type."""
        ...


DeviceLike = str | Device
"""What a user may pass as ``device``."""

DTypeLike = str | DType | TorchDTypeLike
"""What a user may pass as ``dtype``: a name, an alias, a :class:`DType` or a ``torch.dtype``."""


def _torch() -> Any:
    return import_optional("torch", purpose="device and dtype resolution")


def normalize_device(device: DeviceLike) -> Device:
    """Validate a device request without touching hardware (a :class:`Device` is returned as it is).

    Returns:
        The :class:`Device`: ``"auto"``, ``"cpu"``, ``"mps"``, ``"cuda"`` or ``"cuda:N"``.

    Raises:
        DeviceError: for anything else, listing the accepted forms.
    """
    return device if isinstance(device, Device) else Device(device)


def normalize_dtype(dtype: DTypeLike) -> DType:
    """Validate a dtype request without importing torch (a :class:`DType` is returned as it is).

    Returns:
        ``DType.AUTO``, ``FLOAT32``, ``FLOAT16`` or ``BFLOAT16``.

    Raises:
        DeviceError: for other dtypes, listing the accepted names.
    """
    if isinstance(dtype, DType):
        return dtype
    text = str(dtype).strip().lower().removeprefix("torch.")
    if text == "auto":
        return DType.AUTO
    name = DTYPE_ALIASES.get(text)
    if name is None:
        raise DeviceError(f"unsupported dtype {dtype!r}; expected one of 'auto', {sorted(set(DTYPE_ALIASES))}")
    return DType(name)


def resolve_device(device: DeviceLike = "auto") -> Device:
    """Resolve a device request against the hardware present.

    ``"auto"`` picks CUDA, then Apple MPS, then the CPU.

    Returns:
        A concrete :class:`Device` (never ``"auto"``).

    Raises:
        DeviceError: if the requested accelerator is not available.
    """
    request = normalize_device(device)
    if request.type == "cpu":
        return request
    torch = _torch()
    cuda = bool(torch.cuda.is_available())
    mps = bool(getattr(torch.backends, "mps", None) and torch.backends.mps.is_available())
    if request.is_auto:
        return Device("cuda" if cuda else "mps" if mps else "cpu")
    if request.type == "cuda":
        if not cuda:
            raise DeviceError(
                f"device {request!r} requested but CUDA is not available on this machine; use the cpu device (or auto)"
            )
        index = int(request.split(":")[1]) if ":" in request else 0
        if index >= int(torch.cuda.device_count()):
            raise DeviceError(f"device {request!r} requested but only {torch.cuda.device_count()} CUDA device(s) exist")
        return request
    if not mps:
        raise DeviceError(
            "device 'mps' requested but Apple MPS is not available on this machine; use the cpu device (or auto)"
        )
    return request


def resolve_dtype(dtype: DTypeLike = DType.AUTO, device: DeviceLike = "cpu") -> Any:
    """Resolve a dtype request to a ``torch.dtype`` for ``device``.

    ``"auto"`` is float32 on every device (half precision is opt-in, since not every model
    is accurate in it). float16 on the CPU is refused: most CPU kernels lack it.

    Returns:
        The ``torch.dtype`` (typed ``Any``: this layer does not import torch for its types).

    Raises:
        DeviceError: for an unknown dtype or float16 on the CPU.
    """
    name = normalize_dtype(dtype)
    if name is DType.AUTO:
        name = DType.FLOAT32
    if name is DType.FLOAT16 and normalize_device(device).type == "cpu":
        raise DeviceError("dtype float16 is not supported on the CPU; use float32 or bfloat16")
    return getattr(_torch(), name.value)


__all__ = [
    "DTYPE_ALIASES",
    "DType",
    "DTypeLike",
    "Device",
    "DeviceLike",
    "TorchDTypeLike",
    "normalize_device",
    "normalize_dtype",
    "resolve_device",
    "resolve_dtype",
]

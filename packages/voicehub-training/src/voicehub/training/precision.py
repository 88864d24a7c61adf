"""Mixed precision: the autocast context of a run's ``precision`` and, for float16, its gradient scaler.

``bfloat16`` has float32's exponent range, so its autocast needs no loss scaling. ``float16``
(``fp16``) does: the loss is multiplied by a dynamic scale before the backward pass so that small
gradients do not flush to zero, the gradients are unscaled before clipping, and a step whose
gradients overflowed (inf or NaN) is skipped while the scale shrinks
(:class:`torch.amp.GradScaler`; its state is part of a checkpoint so a resume stays exact).
"""

from __future__ import annotations

import contextlib

import torch

from voicehub.training.errors import TrainingError

HALF_PRECISIONS = ("float16", "fp16")
"""The ``precision`` values that mean float16 autocast with a gradient scaler."""


def autocast_context(precision: str, device: torch.device) -> contextlib.AbstractContextManager[object]:
    """The forward pass's autocast context for ``precision`` on ``device`` (none for ``float32``)."""
    if precision == "bfloat16":
        return torch.autocast(device_type=device.type, dtype=torch.bfloat16)
    if precision in HALF_PRECISIONS:
        return torch.autocast(device_type=device.type, dtype=torch.float16)
    return contextlib.nullcontext()


def grad_scaler(precision: str, device: torch.device, *, initial_scale: float = 65536.0) -> torch.amp.GradScaler | None:
    """A :class:`torch.amp.GradScaler` for float16 runs on ``device`` (``None`` for other precisions).

    Args:
        precision: the run's ``TrainerConfig.precision``.
        device: where the module is.
        initial_scale: the first loss scale.

    Raises:
        TrainingError: naming the device when this torch build has no float16 autocast or
            gradient scaler for it (use ``precision = "bfloat16"`` or ``"float32"`` there).
    """
    if precision not in HALF_PRECISIONS:
        return None
    problem = None
    if not torch.amp.is_autocast_available(device.type):
        problem = "no autocast"
    else:
        try:
            scaler = torch.amp.GradScaler(device.type, init_scale=initial_scale)
        except (RuntimeError, ValueError, AssertionError) as err:  # torch rejects a device type it cannot scale on
            problem = f"no gradient scaler ({err})"
    if problem is not None:
        raise TrainingError(
            f"precision {precision!r}: torch {torch.__version__} has {problem} for float16 on device {device.type!r}; "
            f"use precision 'bfloat16' or 'float32' on this device"
        )
    return scaler


__all__ = ["HALF_PRECISIONS", "autocast_context", "grad_scaler"]

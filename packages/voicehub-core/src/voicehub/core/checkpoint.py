"""Reading checkpoint tensors and checking their values: one path for every loader.

Every checkpoint adapter (Silero, GE2E, Hyperion ``.pth`` and directories, Whisper, Moonshine,
saved model directories) checks the tensors it is about to load with :func:`check_tensor_values`,
and every ``.safetensors`` file is read with :func:`read_safetensors`, so a damaged file gives the
same named :class:`~voicehub.core.errors.CheckpointError` whichever model reads it.

The module imports no torch: tensors are used through their own methods (``is_floating_point``,
``isfinite``), and ``safetensors.torch`` is imported on use (:func:`voicehub.core.lazy.import_optional`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from voicehub.core.errors import CheckpointError
from voicehub.core.lazy import import_optional


def _is_floating(tensor: Any) -> bool:
    check = getattr(tensor, "is_floating_point", None)
    if callable(check):
        return bool(check())
    kind = getattr(getattr(tensor, "dtype", None), "kind", None)  # numpy arrays
    return kind in ("f", "c")


def _non_finite_count(tensor: Any) -> int:
    if hasattr(tensor, "isfinite"):
        return int((~tensor.isfinite()).sum().item())
    import numpy as np

    return int((~np.isfinite(np.asarray(tensor))).sum())


def _num_elements(tensor: Any) -> int:
    numel = getattr(tensor, "numel", None)
    return int(numel()) if callable(numel) else int(getattr(tensor, "size", 0))


def check_tensor_values(
    tensors: Mapping[str, Any],
    *,
    source: str | os.PathLike[str],
    expected: Mapping[str, Any] | None = None,
    floating: Iterable[str] = (),
) -> None:
    """Refuse non-finite floating tensors, and integer tensors where the model holds floats.

    Call it on the state dict an adapter is about to load (after any conversion), before the
    model is touched.

    Args:
        tensors: tensor name -> tensor (``torch.Tensor`` or NumPy array).
        source: the checkpoint, named in messages.
        expected: the model's own state dict (name -> tensor); a name that is floating there
            must be floating here. ``None`` checks values only.
        floating: further names that must be floating (for an adapter that converts dtypes
            before it builds the state dict, so the check sees the file's own dtypes).

    Raises:
        CheckpointError: naming ``source`` and the first tensors found with NaN or infinite
            values (and how many), or with an integer or boolean dtype where a float is expected.
    """
    must_float = set(floating)
    if expected is not None:
        must_float |= {name for name, tensor in expected.items() if _is_floating(tensor)}
    wrong_type = [
        f"{name} ({getattr(tensors[name], 'dtype', type(tensors[name]).__name__)}, expected floating point)"
        for name in tensors
        if name in must_float and not _is_floating(tensors[name])
    ]
    if wrong_type:
        raise CheckpointError(
            f"{source}: integer tensors where the model holds floating-point weights: "
            f"{'; '.join(wrong_type[:5])}{' ...' if len(wrong_type) > 5 else ''}; the file is damaged or holds "
            f"quantized weights that this loader does not dequantize",
            path=os.fspath(source),
        )
    non_finite = []
    for name, tensor in tensors.items():
        if _is_floating(tensor):
            count = _non_finite_count(tensor)
            if count:
                non_finite.append(f"{name} ({count} of {_num_elements(tensor)} values)")
    if non_finite:
        raise CheckpointError(
            f"{source}: tensors with NaN or infinite values: {'; '.join(non_finite[:5])}"
            f"{' ...' if len(non_finite) > 5 else ''}; a model with such weights gives no usable output. The file "
            f"is damaged or was saved from a diverged training run: use another checkpoint",
            path=os.fspath(source),
        )


def read_safetensors(path: str | os.PathLike[str], *, device: str = "cpu") -> tuple[dict[str, Any], dict[str, str]]:
    """Read every tensor and the metadata of a ``.safetensors`` file.

    Args:
        path: the file.
        device: where the tensors are put (``"cpu"`` by default).

    Returns:
        ``(tensors, metadata)``: name -> ``torch.Tensor``, and the file's string metadata (empty
        when it has none).

    Raises:
        CheckpointError: naming the file when it is missing, truncated or not in the safetensors
            format.
        OptionalDependencyError: when ``safetensors`` (or torch) is not installed.
    """
    file = Path(path)
    safetensors = import_optional("safetensors", purpose="reading .safetensors checkpoints")
    import_optional("torch", purpose="reading .safetensors checkpoints")
    if not file.is_file():
        raise CheckpointError(f"{file}: no such safetensors file", path=file)
    try:
        with safetensors.safe_open(os.fspath(file), framework="pt", device=device) as handle:
            metadata = dict(handle.metadata() or {})
            tensors = {key: handle.get_tensor(key) for key in handle.keys()}  # noqa: SIM118 (not a dict)
    except (safetensors.SafetensorError, OSError, RuntimeError, ValueError) as err:
        reason = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise CheckpointError(
            f"{file}: not a readable safetensors file, truncated or corrupt ({reason}); save or download it again",
            path=file,
        ) from err
    return tensors, metadata


__all__ = ["check_tensor_values", "read_safetensors"]

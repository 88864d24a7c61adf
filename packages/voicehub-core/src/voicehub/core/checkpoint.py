"""Reading checkpoint tensors and checking their names, shapes and values: one path for every loader.

* :func:`check_state_dict` is the one strict check of the checkpoint adapters (Silero VAD, Whisper,
  Moonshine, VITS): the tensors a file provides against the names and shapes the native graph
  expects, every missing, unexpected, mis-shaped (and, where asked, non-floating) tensor reported
  at once as :class:`~voicehub.core.errors.CheckpointMismatchError`, before the model is touched.
* Every adapter (Silero, GE2E, Hyperion ``.pth`` and directories, Whisper, Moonshine, saved model
  directories) checks the values it is about to load with :func:`check_tensor_values`, and every
  ``.safetensors`` file is read with :func:`read_safetensors`, so a damaged file gives the same
  named :class:`~voicehub.core.errors.CheckpointError` whichever model reads it.

The module imports no torch: shapes are plain tuples of ints, tensors are used through their own
attributes and methods (``shape``, ``dtype``, ``is_floating_point``, ``isfinite``; NumPy arrays
work too), and ``safetensors.torch`` is imported on use (:func:`voicehub.core.lazy.import_optional`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from voicehub.core.errors import CheckpointError, CheckpointMismatchError
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


def _shape(tensor: Any, name: str) -> tuple[int, ...]:
    shape = getattr(tensor, "shape", None)
    if shape is None:
        raise CheckpointError(
            f"checkpoint entry {name!r} is a {type(tensor).__name__}, not a tensor (it has no shape); "
            f"expected a torch.Tensor or NumPy array"
        )
    return tuple(int(size) for size in shape)


def check_state_dict(
    tensors: Mapping[str, Any],
    expected: Mapping[str, Sequence[int]],
    *,
    what: str,
    source: str | os.PathLike[str] | None = None,
    floating: Iterable[str] = (),
    consumed: Iterable[str] = (),
    extra_missing: Iterable[str] = (),
    extra_unexpected: Iterable[str] = (),
    extra_mismatched: Iterable[tuple[str, Sequence[int], Sequence[int]]] = (),
    mismatched_label: str = "mis-shaped",
) -> None:
    """Check a checkpoint's tensors against the names and shapes a graph expects; report every problem at once.

    The one strict check of the checkpoint adapters: call it on the tensors as the file names
    them (an adapter that renames first maps the graph's shapes onto the file's names), before
    the model is built or touched.

    Args:
        tensors: checkpoint tensor name -> tensor (anything with ``shape``; ``dtype`` and
            ``is_floating_point`` for the ``floating`` check): ``torch.Tensor`` or NumPy array.
        expected: tensor name -> expected shape, a tuple of ints (``tuple(t.shape)`` of the
            graph's state dict, e.g. built on the meta device).
        what: what the tensors should have been, completing "not a ...": ``"Whisper OpenAI
            checkpoint for width 384, 4+4 layers, 80 mel bins, 51864 tokens"``.
        source: the file or directory, first in the message and the error's ``path``.
        floating: names that must hold floating-point values (an integer tensor of the right
            shape would otherwise be converted silently).
        consumed: checkpoint names the adapter reads outside ``expected`` (metadata, constants),
            not reported as unexpected.
        extra_missing: problems the adapter found itself (a derived constant the file lacks),
            reported with the others.
        extra_unexpected: likewise, tensors it could not place (a name with its reason is fine).
        extra_mismatched: likewise, ``(name, expected shape, got shape)`` of values it compared.
        mismatched_label: how the message introduces the mismatched list (``"mis-shaped or
            mismatched"`` when ``extra_mismatched`` holds value mismatches).

    Raises:
        CheckpointMismatchError: ``"{source}: not a {what}: missing [...]; unexpected [...];
            mis-shaped name (expected [..], got [..]); not floating point name (dtype)"`` (only the
            parts that apply), with the same lists as ``missing``, ``unexpected``,
            ``mismatched`` and ``not_floating``.
        CheckpointError: when an entry of ``tensors`` has no ``shape`` (not a tensor).
    """
    wanted = {name: tuple(int(size) for size in shape) for name, shape in expected.items()}
    ignored = set(consumed)
    missing = sorted({name for name in wanted if name not in tensors} | set(extra_missing))
    unexpected = sorted(
        [name for name in tensors if name not in wanted and name not in ignored] + list(extra_unexpected)
    )
    mismatched = [(name, wanted[name], _shape(tensor, name)) for name, tensor in tensors.items() if name in wanted]
    mismatched = sorted(
        [(name, want, got) for name, want, got in mismatched if want != got]
        + [(name, tuple(want), tuple(got)) for name, want, got in extra_mismatched]
    )
    must_float = set(floating)
    not_floating = sorted(
        (name, str(getattr(tensor, "dtype", type(tensor).__name__)))
        for name, tensor in tensors.items()
        if name in must_float and not _is_floating(tensor)
    )
    if not (missing or unexpected or mismatched or not_floating):
        return
    parts = []
    if missing:
        parts.append(f"missing {missing}")
    if unexpected:
        parts.append(f"unexpected {unexpected}")
    if mismatched:
        shapes = (f"{name} (expected {list(want)}, got {list(got)})" for name, want, got in mismatched)
        parts.append(f"{mismatched_label} " + ", ".join(shapes))
    if not_floating:
        parts.append("not floating point " + ", ".join(f"{name} ({dtype})" for name, dtype in not_floating))
    where = f"{os.fspath(source)}: " if source is not None else ""
    raise CheckpointMismatchError(
        f"{where}not a {what}: {'; '.join(parts)}",
        path=os.fspath(source) if source is not None else None,
        missing=missing,
        unexpected=unexpected,
        mismatched=mismatched,
        not_floating=not_floating,
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


__all__ = ["check_state_dict", "check_tensor_values", "read_safetensors"]

"""Helpers of :mod:`voicehub.modeling` that need none of a wrapper's state: the graph protocols, the
inference context, recognising a saved model config, the ``dtype``/``torch_dtype`` request, and the
state-dict file of a saved directory."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from voicehub.core import strict_json
from voicehub.core.checkpoint import check_tensor_values, read_safetensors
from voicehub.core.device import DType, DTypeLike, normalize_dtype
from voicehub.core.errors import CheckpointError, ConfigError, LifecycleError
from voicehub.core.files import WEIGHTS_FILE_NAME
from voicehub.core.lazy import import_optional
from voicehub.registry import MODEL_CATALOG, ArchitectureSpec

if TYPE_CHECKING:
    import torch


@runtime_checkable
class _ModeSwitchable(Protocol):
    """A graph with torch's mode switches (``torch.nn.Module``)."""

    def eval(self) -> object: ...

    def train(self, mode: bool = True) -> object: ...

    def requires_grad_(self, requires_grad: bool = True) -> object: ...


@runtime_checkable
class _HasStateDict(Protocol):
    """A graph whose weights are a state dict (``torch.nn.Module``)."""

    def state_dict(self) -> Mapping[str, torch.Tensor]: ...


@contextlib.contextmanager
def _inference_context() -> Iterator[None]:
    """``torch.inference_mode()`` when torch is already imported; nothing otherwise."""
    torch = sys.modules.get("torch")
    if torch is None:
        yield
        return
    with torch.inference_mode():
        yield


def _is_model_config(path: Path) -> bool:
    """Whether ``path`` is a ``config.json`` written by ``save_pretrained`` (it names its ``model_type``).

    An upstream checkpoint directory may hold a ``config.json`` of its own (CTranslate2 and Hugging
    Face Whisper do); such a file is the adapter's to read, not a model config.
    """
    if not path.is_file():
        return False
    try:
        document = strict_json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return True  # let the config reader report the problem with its path
    return isinstance(document, dict) and "model_type" in document and MODEL_CATALOG.upstream_spec_of(document) is None


def dtype_request(dtype: DTypeLike, torch_dtype: DTypeLike | None) -> DType:
    """The dtype asked for through ``dtype=`` or its alias ``torch_dtype=`` (transformers' older name).

    Raises:
        ConfigError: when both are given and differ, naming both.
        DeviceError: for a malformed dtype.
    """
    requested = normalize_dtype(dtype)
    if torch_dtype is None:
        return requested
    alias = normalize_dtype(torch_dtype)
    if requested is not DType.AUTO and requested is not alias:
        raise ConfigError(
            f"dtype={requested.value!r} and torch_dtype={alias.value!r} disagree; torch_dtype is an alias of dtype, "
            "pass only one of them"
        )
    return alias


def write_state_dict(module: object, directory: Path, *, owner: str) -> None:
    """Write ``module``'s state dict into ``directory`` as ``model.safetensors`` (tensors on the CPU).

    Raises:
        CheckpointError: for a module without a ``state_dict``, naming the wrapper ``owner``.
    """
    if not isinstance(module, _HasStateDict):
        raise CheckpointError(
            f"{owner}: the module {type(module).__name__} has no state_dict(); "
            f"override _save_weights() to save it, or set has_weights = False if the model has no weights"
        )
    safetensors_torch = import_optional("safetensors.torch", purpose="saving weights")
    tensors = {name: tensor.detach().cpu().contiguous() for name, tensor in module.state_dict().items()}
    safetensors_torch.save_file(tensors, str(directory / WEIGHTS_FILE_NAME), metadata={"format": "pt"})


def read_saved_state_dict(checkpoint: Path | None) -> dict[str, torch.Tensor] | None:
    """The state dict of a directory written by ``save_pretrained``, or ``None`` when it is not one.

    Raises:
        CheckpointError: naming the file when it is truncated or corrupt, or holds NaN or infinite values.
    """
    if checkpoint is None or not checkpoint.is_dir() or not (checkpoint / WEIGHTS_FILE_NAME).is_file():
        return None
    loaded: dict[str, torch.Tensor] = read_safetensors(checkpoint / WEIGHTS_FILE_NAME)[0]
    check_tensor_values(loaded, source=checkpoint / WEIGHTS_FILE_NAME)
    return loaded


def check_architecture_parts(owner: str, architecture: ArchitectureSpec, module: object) -> None:
    """Resolve every part ``architecture`` references, and check the graph ``module`` is its ``builder``'s.

    Run on every runtime build, so a reference in a family's ``registration.py`` that stops
    resolving (a renamed class, a moved function) fails the first load, naming it.

    Args:
        owner: the wrapper class's name, for the message.

    Raises:
        SpecError: naming a reference that does not resolve.
        LifecycleError: when the built graph is not an instance of the architecture's builder.
    """
    for part, reference in architecture.references().items():
        if reference is not None:
            architecture.resolve(part)
    builder = architecture.resolve("builder") if architecture.builder is not None else None
    if isinstance(builder, type) and not isinstance(module, builder):
        raise LifecycleError(
            f"{owner} built a {type(module).__name__}, but its architecture {architecture.architecture_id!r} names "
            f"the builder {architecture.builder}; the wrapper and the architecture's registration.py disagree: fix "
            "one of them"
        )


__all__ = [
    "_HasStateDict",
    "_ModeSwitchable",
    "_inference_context",
    "_is_model_config",
    "check_architecture_parts",
    "dtype_request",
    "read_saved_state_dict",
    "write_state_dict",
]

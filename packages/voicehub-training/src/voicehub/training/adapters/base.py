"""The family-adapter contract and :class:`AutoTrainingAdapter`.

A family adapter turns a loaded model into a trainable ``torch.nn.Module`` whose ``forward(batch)``
returns ``{"loss": scalar}`` (the objective of its family), and turns manifest records into
batches. It reaches the model only through the runtime-host protocol: ``load_for_training()``,
then the bundle in ``host.runtime``. What a family needs from a graph beyond the module (how to
call it, its tokenizer, its frame size) comes from the integration's *hooks*: an object built
by the factory its :class:`~voicehub.training.spec.ModelTrainingSpec` names (``hooks``), which
satisfies the family's typed protocol. The graph is trained in place: after training, the
host's bundle holds the trained weights and ``save_pretrained`` exports them.

Families are registered by name with a lazy ``"module:attr"`` reference
(:func:`register_family_adapter`); the built-in ones are ``frame_classification``,
``speaker_classification`` and ``sequence_to_sequence``.
"""

from __future__ import annotations

import abc
import threading
from collections.abc import Sequence
from typing import Any, ClassVar, Protocol, Self

import torch
from torch import nn

from voicehub.core.errors import UnknownModelError, VoiceHubError
from voicehub.core.lazy import parse_reference, resolve_reference
from voicehub.core.runtime import RuntimeHost
from voicehub.registry.errors import DuplicateRegistrationError
from voicehub.training.errors import TrainingError, TrainingSpecError
from voicehub.training.manifest import ManifestRecord
from voicehub.training.spec import DataContract, ModelTrainingSpec


class TrainingBatch(Protocol):
    """What a family's ``collate`` returns."""

    @property
    def size(self) -> int:
        """Utterances in the batch."""
        ...

    def to(self, device: torch.device) -> Self:
        """A copy with its tensors on ``device``."""
        ...


def freeze_parts(graph: nn.Module, prefixes: Sequence[str]) -> tuple[str, ...]:
    """Turn off ``requires_grad`` on the parameters whose names start with one of ``prefixes``.

    Returns:
        The frozen parameter names.

    Raises:
        TrainingSpecError: for a prefix that matches no parameter (listing the top-level parts).
    """
    names = [name for name, _ in graph.named_parameters()]
    frozen = []
    for prefix in prefixes:
        matched = [name for name in names if name.startswith(prefix)]
        if not matched:
            parts = sorted({name.split(".")[0] + "." for name in names})
            raise TrainingSpecError(f"frozen part {prefix!r} matches no parameter; the graph's parts are {parts}")
        frozen.extend(matched)
    for name, parameter in graph.named_parameters():
        if name in frozen:
            parameter.requires_grad_(False)
    return tuple(frozen)


class TrainingAdapter(abc.ABC):
    """Base of the family adapters (see the module docstring).

    Args:
        host: the model (a runtime host); it is loaded for training here.
        spec: its training declaration (support must not be ``none``; family must match).
        records: the training records (a family may read labels from them, e.g. speakers).
        frozen_parts: parameter-name prefixes to freeze instead of ``spec.frozen_parts``.

    Raises:
        TrainingNotSupportedError: for support ``none``.
        TrainingSpecError: for another family, or hooks that do not satisfy the family protocol.
        TrainingError: when the loaded graph is not a ``torch.nn.Module``.
    """

    family: ClassVar[str]
    hooks_protocol: ClassVar[type]

    def __init__(
        self,
        host: RuntimeHost,
        spec: ModelTrainingSpec,
        *,
        records: Sequence[ManifestRecord] = (),
        frozen_parts: Sequence[str] | None = None,
    ) -> None:
        spec.require_trainable()
        if spec.family != self.family:
            raise TrainingSpecError(
                f"{spec.model_type} declares family {spec.family!r}; {type(self).__name__} trains {self.family!r}",
                model_type=spec.model_type,
            )
        host.load_for_training()
        runtime = host.runtime
        if runtime is None or not isinstance(runtime.module, nn.Module):
            kind = type(None if runtime is None else runtime.module).__name__
            raise TrainingError(
                f"{spec.model_type}: the loaded graph is a {kind}, not a torch.nn.Module; only torch graphs train"
            )
        self.host = host
        self.spec = spec
        self.data: DataContract = spec.data_contract
        self.graph: nn.Module = runtime.module
        try:
            hooks = resolve_reference(str(spec.hooks))(runtime)
        except VoiceHubError as err:
            raise TrainingSpecError(
                f"{spec.model_type}: cannot build its training hooks {spec.hooks!r}: {err}", model_type=spec.model_type
            ) from err
        if not isinstance(hooks, self.hooks_protocol):
            raise TrainingSpecError(
                f"{spec.model_type}: hooks {spec.hooks!r} gave a {type(hooks).__name__}, which does not implement "
                f"{self.hooks_protocol.__name__}",
                model_type=spec.model_type,
            )
        self.hooks: Any = hooks
        self.frozen_parts = tuple(spec.frozen_parts if frozen_parts is None else frozen_parts)
        self.frozen_names = freeze_parts(self.graph, self.frozen_parts)
        self._setup(records)

    @abc.abstractmethod
    def _setup(self, records: Sequence[ManifestRecord]) -> None:
        """Family set-up after the common one: build the trainable module."""

    @property
    @abc.abstractmethod
    def module(self) -> nn.Module:
        """The trainable module: the graph plus any head; ``forward(batch)`` returns ``{"loss": scalar}``."""

    @abc.abstractmethod
    def collate(self, records: Sequence[ManifestRecord]) -> TrainingBatch:
        """Load and pad ``records`` into a batch with this family's targets."""

    def describe(self) -> dict[str, object]:
        """What defines this adapter's training plan (checked when a run resumes)."""
        return {
            "model_type": self.spec.model_type,
            "family": self.family,
            "objective": self.spec.objective,
            "frozen_parts": list(self.frozen_parts),
            "trainable": {
                name: list(parameter.shape)
                for name, parameter in self.module.named_parameters()
                if parameter.requires_grad
            },
        }


_FAMILIES: dict[str, str] = {
    "frame_classification": "voicehub.training.adapters.frame_classification:FrameClassificationAdapter",
    "speaker_classification": "voicehub.training.adapters.speaker_classification:SpeakerClassificationAdapter",
    "sequence_to_sequence": "voicehub.training.adapters.sequence_to_sequence:SequenceToSequenceAdapter",
}
_FAMILIES_LOCK = threading.Lock()


def register_family_adapter(family: str, reference: str, *, exist_ok: bool = False) -> None:
    """Register a family adapter class by its ``"module:attr"`` path (resolved on first use).

    Raises:
        DuplicateRegistrationError: for a taken family name (without ``exist_ok``).
        TrainingSpecError: for a malformed reference.
    """
    try:
        parse_reference(reference)
    except ValueError as err:
        raise TrainingSpecError(f"family adapter {family!r}: {err}") from err
    with _FAMILIES_LOCK:
        if family in _FAMILIES and not exist_ok and _FAMILIES[family] != reference:
            raise DuplicateRegistrationError(
                f"family adapter {family!r} is already registered as {_FAMILIES[family]!r}",
                name=family,
                owner=_FAMILIES[family],
            )
        _FAMILIES[family] = reference


def family_adapters() -> dict[str, str]:
    """Registered family name -> adapter reference."""
    with _FAMILIES_LOCK:
        return dict(_FAMILIES)


class AutoTrainingAdapter:
    """Picks the family adapter a model's training spec names."""

    @staticmethod
    def adapter_class(spec: ModelTrainingSpec) -> type[TrainingAdapter]:
        """The adapter class of ``spec.family``.

        Raises:
            TrainingNotSupportedError: for support ``none``.
            UnknownModelError: for an unregistered family, listing the registered ones.
        """
        spec.require_trainable()
        references = family_adapters()
        if spec.family not in references:
            raise UnknownModelError(str(spec.family), references, kind="training family")
        adapter = resolve_reference(references[str(spec.family)])
        if not (isinstance(adapter, type) and issubclass(adapter, TrainingAdapter)):
            raise TrainingSpecError(
                f"family {spec.family!r}: {references[str(spec.family)]!r} is not a TrainingAdapter"
            )
        return adapter

    @classmethod
    def from_host(
        cls,
        host: RuntimeHost,
        spec: ModelTrainingSpec,
        *,
        records: Sequence[ManifestRecord] = (),
        frozen_parts: Sequence[str] | None = None,
    ) -> TrainingAdapter:
        """Build the family adapter for ``host`` (loads it for training); see :class:`TrainingAdapter`."""
        return cls.adapter_class(spec)(host, spec, records=records, frozen_parts=frozen_parts)


__all__ = [
    "AutoTrainingAdapter",
    "TrainingAdapter",
    "TrainingBatch",
    "family_adapters",
    "freeze_parts",
    "register_family_adapter",
]

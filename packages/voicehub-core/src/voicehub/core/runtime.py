"""The runtime seam: the lifecycle state, the runtime bundle, and the runtime-host protocol.

Every layer that drives a loaded model (the optimization host, the trainer, the task wrappers'
own lifecycle) meets it here, in the lowest layer, and nowhere else:

* :class:`RuntimeState` is the one lifecycle enum: ``created`` (no weights in memory),
  ``inference`` or ``training``. An optimization plan applies to one of the two loaded states
  (``voicehub.optimization.OptimizationMode`` is this enum under its optimization name).
* :class:`RuntimeBundle` is what a loaded model *is*: the graph module plus the named parts a
  family needs around it (a front end, a tokenizer or phonemizer, a decoder or scoring back-end).
  A family with typed parts subclasses it (``WhisperRuntime(RuntimeBundle[Whisper])`` with
  ``front_end: LogMelFrontEnd``, ``tokenizer: WhisperTokenizer``, ``decoder: DecodingOptions``).
* :class:`RuntimeHost` is the typed protocol a host of such a bundle offers: ``state``,
  ``runtime``, ``load()``, ``load_for_training()``, ``unload()``, and ``replace_module()`` to
  install a different graph module (an optimization pass returned a new object, or a restore
  puts the original back). No layer reads a host's internals: this protocol is the contract.

Nothing here imports torch.
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass
from typing import Generic, Protocol, Self, TypeVar, runtime_checkable

from voicehub.core.errors import LifecycleError

ModuleT = TypeVar("ModuleT", covariant=True)


class RuntimeState(enum.StrEnum):
    """Lifecycle of a model host's runtime; the one enum for the lifecycle mode.

    ``created`` (no weights in memory) -> ``inference`` (loaded, eval mode, no autograd) ->
    ``training`` (loaded for fine-tuning). Moving between ``inference`` and ``training``
    requires restoring any reversible optimization plan first.
    """

    CREATED = "created"
    INFERENCE = "inference"
    TRAINING = "training"

    @property
    def is_loaded(self) -> bool:
        """Whether a runtime is in memory (``inference`` or ``training``)."""
        return self is not RuntimeState.CREATED

    @classmethod
    def parse(cls, value: str | RuntimeState) -> RuntimeState:
        """Accept a state or its name (``"created"``, ``"inference"``, ``"training"``, any case).

        Raises:
            LifecycleError: for any other value, listing the valid ones.
        """
        if isinstance(value, RuntimeState):
            return value
        try:
            return cls(str(value).strip().lower())
        except ValueError:
            raise LifecycleError(
                f"unknown runtime state {value!r}; expected one of {[state.value for state in cls]}"
            ) from None

    @classmethod
    def loaded(cls) -> tuple[RuntimeState, RuntimeState]:
        """The two states a runtime can be loaded in: ``(INFERENCE, TRAINING)``."""
        return (cls.INFERENCE, cls.TRAINING)


@dataclass(frozen=True, slots=True, kw_only=True)
class RuntimeBundle(Generic[ModuleT]):
    """A loaded model: the graph module and the named parts its family needs around it.

    Attributes:
        module: the graph (usually a ``torch.nn.Module``; a C-extension detector for models
            without a torch graph). Optimization passes and the trainer work on it.
        front_end: the processor that turns raw input into the module's input (a log-mel front
            end, silence trimming and volume normalisation), when it is not part of the module.
        tokenizer: text <-> ids: a tokenizer (ASR) or a phonemizer with its symbol table (TTS).
        decoder: what turns the module's output into the task's answer: a decoding loop and its
            options (ASR), a vocoder, or a scoring back-end (the PLDA of speaker verification).

    A family whose parts have known types subclasses this record and narrows the fields; parts a
    family does not need stay ``None``.
    """

    module: ModuleT
    front_end: object | None = None
    tokenizer: object | None = None
    decoder: object | None = None

    def parts(self) -> dict[str, object]:
        """The parts that are set, by field name (``module`` excluded)."""
        return {
            field.name: value
            for field in dataclasses.fields(self)
            if field.name != "module" and (value := getattr(self, field.name)) is not None
        }

    def with_module(self, module: object) -> Self:
        """A copy holding ``module`` instead of :attr:`module`, with the same parts.

        ``module`` may be another object than the original graph (a pass may return a compiled or
        quantized module that serves in its place).
        """
        return dataclasses.replace(self, module=module)  # type: ignore[arg-type]


@runtime_checkable
class RuntimeHost(Protocol):
    """The one typed contract between a model host and the layers that drive its runtime.

    VoiceHub's task wrappers (``voicehub.PreTrainedSpeechModel``) implement it; the optimization
    host (``voicehub.optimization.OptimizationHost``) and the trainer use nothing else.
    """

    @property
    def state(self) -> RuntimeState:
        """``created``, ``inference`` or ``training``."""
        ...

    @property
    def runtime(self) -> RuntimeBundle[object] | None:
        """The loaded bundle, or ``None`` in ``created``."""
        ...

    def load(self) -> Self:
        """Load for inference (first load, or switch back from training); idempotent.

        Raises:
            LifecycleError: if the switch is refused (an optimization plan of the other mode is active).
        """
        ...

    def load_for_training(self) -> Self:
        """Load for training (first load, or switch from inference); idempotent.

        Raises:
            LifecycleError: if the switch is refused.
        """
        ...

    def unload(self) -> None:
        """Drop the runtime and return to ``created``.

        Raises:
            LifecycleError: if a reversible optimization plan is still active.
        """
        ...

    def replace_module(self, module: object, *, state: RuntimeState) -> None:
        """Install ``module`` as the graph of the loaded bundle (the other parts stay).

        Args:
            module: the new graph object.
            state: the state the caller expects the host to be in.

        Raises:
            LifecycleError: if the host is not loaded in ``state``.
        """
        ...


__all__ = ["RuntimeBundle", "RuntimeHost", "RuntimeState"]

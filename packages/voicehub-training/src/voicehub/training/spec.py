"""What an integration declares about training it: :class:`ModelTrainingSpec` and :func:`get_training_spec`.

An integration states its training support next to its catalog entry: its
:class:`~voicehub.registry.ModelSpec` names a ``"module:attr"`` reference in ``training_spec``,
and that attribute is a :class:`ModelTrainingSpec`. Nothing here keeps a table of model names;
the registry is the only index. Importing this module imports no torch.

Support levels (the seed's "Training boundary"):

* ``native``: the graph trains as loaded, from raw audio and the manifest.
* ``preprocessed``: it trains on features computed beforehand (the declaration says which).
* ``custom``: it trains only through a loop the integration supplies (its family adapter).
* ``none``: it cannot be trained here; ``reason`` says why.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

from voicehub.core.errors import VoiceHubError
from voicehub.core.lazy import parse_reference, resolve_reference
from voicehub.registry import MODEL_CATALOG, ModelRegistry
from voicehub.training.errors import TrainingNotSupportedError, TrainingSpecError

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


class SupportLevel(enum.StrEnum):
    """How far a model can be trained by VoiceHub (see the module docstring)."""

    NATIVE = "native"
    PREPROCESSED = "preprocessed"
    CUSTOM = "custom"
    NONE = "none"


class ManifestField(enum.StrEnum):
    """The fields a JSONL training manifest row may carry (see :mod:`voicehub.training.manifest`)."""

    AUDIO_PATH = "audio_path"
    OFFSET_S = "offset_s"
    DURATION_S = "duration_s"
    TEXT = "text"
    SPEAKER = "speaker"
    RECORDING = "recording"
    SEGMENTS = "segments"


@dataclass(frozen=True, slots=True, kw_only=True)
class DataContract:
    """What a model's training data must look like.

    Attributes:
        required_fields: manifest fields every row must carry (``audio_path`` and ``duration_s``
            are always required and added when missing).
        sample_rate: the rate in Hz every audio file must have (files are never resampled
            silently during training; a file at another rate is a manifest error).
        frame_num_samples: for frame-level targets, the samples one output frame covers at
            ``sample_rate`` (512 = 32 ms at 16 kHz); ``None`` for utterance-level targets.
        max_duration_s: longest clip the model accepts in seconds (Whisper's 30 s window), if bounded.
    """

    required_fields: tuple[ManifestField, ...]
    sample_rate: int
    frame_num_samples: int | None = None
    max_duration_s: float | None = None

    def __post_init__(self) -> None:
        try:
            fields = tuple(ManifestField(str(field)) for field in self.required_fields)
        except ValueError:
            raise TrainingSpecError(
                f"data contract: required_fields {list(self.required_fields)} holds an unknown field; "
                f"expected names from {[field.value for field in ManifestField]}"
            ) from None
        always = (ManifestField.AUDIO_PATH, ManifestField.DURATION_S)
        object.__setattr__(self, "required_fields", (*always, *(f for f in fields if f not in always)))
        if isinstance(self.sample_rate, bool) or not isinstance(self.sample_rate, int) or self.sample_rate <= 0:
            raise TrainingSpecError(f"data contract: sample_rate must be a positive int (Hz), got {self.sample_rate!r}")
        if self.frame_num_samples is not None and (
            isinstance(self.frame_num_samples, bool)
            or not isinstance(self.frame_num_samples, int)
            or self.frame_num_samples <= 0
        ):
            raise TrainingSpecError(
                f"data contract: frame_num_samples must be a positive int or None, got {self.frame_num_samples!r}"
            )
        if self.max_duration_s is not None and not self.max_duration_s > 0:
            raise TrainingSpecError(f"data contract: max_duration_s must be > 0 or None, got {self.max_duration_s!r}")


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelTrainingSpec:
    """An integration's declaration of how (and whether) it trains.

    Attributes:
        model_type: the registered model type this declaration belongs to.
        support: the :class:`SupportLevel`.
        reason: one sentence saying why this level (required for every level).
        family: the family adapter that trains it (``"frame_classification"``,
            ``"speaker_classification"``, ``"sequence_to_sequence"``, or a plug-in's); ``None``
            for ``none``.
        objective: the loss the family adapter optimises (``"binary_cross_entropy"``,
            ``"additive_margin_softmax"``, ``"cross_entropy"``); ``None`` for ``none``.
        data: the data contract; ``None`` for ``none``.
        frozen_parts: parameter-name prefixes of the graph kept frozen (``requires_grad`` false,
            not given to the optimizer), e.g. ``("encoder.",)``.
        checkpoint_kind: the format of the trained weights (``"state_dict"``, ``"hyperion"``,
            ``"openai_whisper"``).
        export_path: how the trained model leaves the trainer (``"save_pretrained"``: the
            wrapper writes a directory ``from_pretrained`` reads).
        hooks: ``"module:attr"`` of the integration's factory ``(runtime bundle) -> family hooks``
            (the typed protocol the family adapter needs, see :mod:`voicehub.training.adapters`);
            ``None`` for ``none``.
    """

    model_type: str
    support: SupportLevel
    reason: str
    family: str | None = None
    objective: str | None = None
    data: DataContract | None = None
    frozen_parts: tuple[str, ...] = ()
    checkpoint_kind: str = "state_dict"
    export_path: str = "save_pretrained"
    hooks: str | None = None

    def __post_init__(self) -> None:
        where = f"training spec of {self.model_type!r}"
        try:
            object.__setattr__(self, "support", SupportLevel(str(self.support)))
        except ValueError:
            raise TrainingSpecError(
                f"{where}: support {self.support!r} is not one of {[level.value for level in SupportLevel]}",
                model_type=self.model_type,
            ) from None
        if not isinstance(self.reason, str) or not self.reason.strip():
            raise TrainingSpecError(f"{where}: reason must be a non-empty sentence", model_type=self.model_type)
        trainable = (self.family, self.objective, self.data, self.hooks)
        if self.support is SupportLevel.NONE:
            if any(value is not None for value in trainable) or self.frozen_parts:
                raise TrainingSpecError(
                    f"{where}: support 'none' declares no family, objective, data, hooks or frozen parts",
                    model_type=self.model_type,
                )
            return
        for name in ("family", "objective"):
            value = getattr(self, name)
            if not isinstance(value, str) or not _NAME.match(value):
                raise TrainingSpecError(
                    f"{where}: {name} must be a lower-case name for support {self.support.value!r}, got {value!r}",
                    model_type=self.model_type,
                )
        if not isinstance(self.data, DataContract):
            raise TrainingSpecError(
                f"{where}: support {self.support.value!r} needs data=DataContract(...), got {self.data!r}",
                model_type=self.model_type,
            )
        if not isinstance(self.hooks, str):
            raise TrainingSpecError(
                f"{where}: support {self.support.value!r} needs hooks='module:attr' (the family hooks factory)",
                model_type=self.model_type,
            )
        try:
            parse_reference(self.hooks)
        except ValueError as err:
            raise TrainingSpecError(f"{where}: hooks: {err}", model_type=self.model_type) from err
        if not all(isinstance(prefix, str) and prefix for prefix in self.frozen_parts):
            raise TrainingSpecError(
                f"{where}: frozen_parts must be non-empty parameter-name prefixes, got {self.frozen_parts!r}",
                model_type=self.model_type,
            )
        for name in ("checkpoint_kind", "export_path"):
            if not isinstance(getattr(self, name), str) or not getattr(self, name):
                raise TrainingSpecError(f"{where}: {name} must be a non-empty string", model_type=self.model_type)

    @property
    def trainable(self) -> bool:
        """Whether the model can be trained here (any level but ``none``)."""
        return self.support is not SupportLevel.NONE

    @property
    def data_contract(self) -> DataContract:
        """The data contract of a trainable model.

        Raises:
            TrainingNotSupportedError: for support ``none``, with the declared reason.
        """
        self.require_trainable()
        if self.data is None:  # pragma: no cover - excluded by __post_init__
            raise TrainingSpecError(f"{self.model_type}: no data contract", model_type=self.model_type)
        return self.data

    def require_trainable(self) -> None:
        """Refuse a model whose support level is ``none``.

        Raises:
            TrainingNotSupportedError: naming the model and the declared reason.
        """
        if self.support is SupportLevel.NONE:
            raise TrainingNotSupportedError(
                f"{self.model_type} cannot be trained: {self.reason}", model_type=self.model_type
            )

    def to_dict(self) -> dict[str, object]:
        """A strict-JSON-ready description (for listings and checkpoint manifests)."""
        data = self.data
        return {
            "model_type": self.model_type,
            "support": self.support.value,
            "reason": self.reason,
            "family": self.family,
            "objective": self.objective,
            "data": None
            if data is None
            else {
                "required_fields": [field.value for field in data.required_fields],
                "sample_rate": data.sample_rate,
                "frame_num_samples": data.frame_num_samples,
                "max_duration_s": data.max_duration_s,
            },
            "frozen_parts": list(self.frozen_parts),
            "checkpoint_kind": self.checkpoint_kind,
            "export_path": self.export_path,
            "hooks": self.hooks,
        }


def get_training_spec(model_type: str, *, registry: ModelRegistry | None = None) -> ModelTrainingSpec:
    """The training declaration of a registered model (aliases accepted).

    Args:
        model_type: a registered model type or alias.
        registry: the model registry to look in; ``None`` is the process catalog
            (``voicehub.registry.MODEL_CATALOG``, filled by ``import voicehub``).

    Returns:
        The :class:`ModelTrainingSpec` its ``ModelSpec.training_spec`` reference names.

    Raises:
        UnknownModelError: for an unregistered name, listing the registered ones.
        TrainingSpecError: when the integration declares no training spec, or its reference
            does not import or names something else than this model's :class:`ModelTrainingSpec`.
    """
    catalog = MODEL_CATALOG if registry is None else registry
    model = catalog.get(model_type)
    if model.training_spec is None:
        raise TrainingSpecError(
            f"{model.model_type} declares no training spec; its integration must add "
            f"training_spec='module:TRAINING_SPEC' to its ModelSpec (a voicehub.training.ModelTrainingSpec, "
            f"support 'none' with a reason when it cannot be trained)",
            model_type=model.model_type,
        )
    try:
        declared = resolve_reference(model.training_spec)
    except VoiceHubError as err:
        raise TrainingSpecError(
            f"{model.model_type}: cannot import its training spec {model.training_spec!r}: {err}",
            model_type=model.model_type,
        ) from err
    if not isinstance(declared, ModelTrainingSpec):
        raise TrainingSpecError(
            f"{model.model_type}: {model.training_spec!r} is a {type(declared).__name__}, expected a ModelTrainingSpec",
            model_type=model.model_type,
        )
    if declared.model_type != model.model_type:
        raise TrainingSpecError(
            f"{model.model_type}: {model.training_spec!r} declares model_type {declared.model_type!r}; "
            f"the two must match",
            model_type=model.model_type,
        )
    return declared


__all__ = [
    "DataContract",
    "ManifestField",
    "ModelTrainingSpec",
    "SupportLevel",
    "get_training_spec",
]

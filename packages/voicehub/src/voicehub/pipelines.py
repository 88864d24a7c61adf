"""``pipeline(task, model)``: a task-shaped callable around a wrapper.

A pipeline is thin on purpose: calling it forwards to the wrapper's task method
(``generate``, ``transcribe``, ``detect`` or ``embed``) unchanged, so batching, options and
outputs are exactly those of the wrapper.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from voicehub.auto import FACTORY_NAMES, TASK_FACTORIES
from voicehub.core.device import DeviceLike, DTypeLike
from voicehub.core.errors import ConfigError, TaskMismatchError, check_flag
from voicehub.core.tasks import SpeechTask
from voicehub.modeling import AnySpeechModel, PreTrainedSpeechModel
from voicehub.registry import ModelConfig
from voicehub.registry.checkpoints import CheckpointSource

TASK_METHODS: Mapping[SpeechTask, str] = {
    SpeechTask.TEXT_TO_SPEECH: "generate",
    SpeechTask.AUTOMATIC_SPEECH_RECOGNITION: "transcribe",
    SpeechTask.VOICE_ACTIVITY_DETECTION: "detect",
    SpeechTask.SPEAKER_VERIFICATION: "embed",
}
"""The wrapper method a pipeline call forwards to, per task."""


class Pipeline:
    """A wrapper bound to its task method.

    Attributes:
        task: the speech task.
        model: the wrapper.
    """

    def __init__(self, task: SpeechTask, model: AnySpeechModel) -> None:
        """Bind ``model`` to ``task``.

        Raises:
            TaskMismatchError: if the model serves another task.
        """
        if model.task is not task:
            raise TaskMismatchError(
                f"pipeline({task.value!r}) cannot run {type(model).__name__}, a {model.task.value!r} model; "
                f"use pipeline({model.task.value!r}, model) instead"
            )
        self.task = task
        self.model = model

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the wrapper's task method (``generate``/``transcribe``/``detect``/``embed``)."""
        return getattr(self.model, TASK_METHODS[self.task])(*args, **kwargs)

    def load(self) -> Pipeline:
        """Load the model now instead of on the first call."""
        self.model.load()
        return self

    def __repr__(self) -> str:
        return f"Pipeline(task={self.task.value!r}, model={self.model!r})"


def pipeline(
    task: SpeechTask | str,
    model: str | os.PathLike[str] | CheckpointSource | AnySpeechModel | None = None,
    *,
    model_type: str | None = None,
    device: DeviceLike = "auto",
    dtype: DTypeLike = "auto",
    config: ModelConfig | None = None,
    lazy_load: bool = True,
) -> Pipeline:
    """Build a pipeline for ``task``.

    Args:
        task: ``"text-to-speech"``/``"tts"``, ``"automatic-speech-recognition"``/``"asr"``,
            ``"voice-activity-detection"``/``"vad"`` or ``"speaker-verification"``/``"sv"``.
        model: a wrapper already built, a checkpoint source, or ``None`` for the task default
            (or the registered default source of ``model_type``).
        model_type: the registered model type or alias.
        device: see :meth:`voicehub.AutoModel.from_pretrained`.
        dtype: see :meth:`voicehub.AutoModel.from_pretrained`.
        config: a model config.
        lazy_load: defer loading to the first call.

    Raises:
        TaskMismatchError: when the model serves another task (before it is imported).
        ConfigError: for loader options passed next to an already-built wrapper.
    """
    lazy_load = check_flag(lazy_load, name="lazy_load")
    parsed = SpeechTask.parse(task)
    if isinstance(model, PreTrainedSpeechModel):
        given = {
            name
            for name, value, default in (
                ("model_type", model_type, None),
                ("device", device, "auto"),
                ("dtype", dtype, "auto"),
                ("config", config, None),
                ("lazy_load", lazy_load, True),
            )
            if value != default
        }
        if given:
            raise ConfigError(
                f"pipeline(): {sorted(given)} cannot be applied to an already-built model; pass them to "
                f"{FACTORY_NAMES[parsed]}.from_pretrained() instead, or pass a source rather than a model"
            )
        return Pipeline(parsed, model)
    factory = TASK_FACTORIES[parsed]
    wrapper = factory.from_pretrained(
        model, model_type=model_type, device=device, dtype=dtype, lazy_load=lazy_load, config=config
    )
    return Pipeline(parsed, wrapper)


__all__ = ["TASK_METHODS", "Pipeline", "pipeline"]

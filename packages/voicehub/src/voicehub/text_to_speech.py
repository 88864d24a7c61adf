"""The text-to-speech task: :class:`PreTrainedTTSModel`.

A TTS integration subclasses it, sets ``config_class`` and ``options_class``, returns its runtime
bundle from ``_load_runtime`` (for VITS: the generator as ``module`` and the phonemizer with its
symbol table as ``tokenizer``) and implements ``_generate``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, overload

from voicehub.core.errors import InferenceOptionError
from voicehub.core.outputs import TTSOutput
from voicehub.core.tasks import SpeechTask
from voicehub.modeling import ConfigT, OptionsT, PreTrainedSpeechModel, RuntimeT


class PreTrainedTTSModel(PreTrainedSpeechModel[ConfigT, OptionsT, RuntimeT]):
    """Base of text-to-speech wrappers; implement ``_generate``."""

    task: ClassVar[SpeechTask] = SpeechTask.TEXT_TO_SPEECH
    output_type: ClassVar[type] = TTSOutput
    _task_method: ClassVar[str] = "generate"

    @overload
    def generate(self, text: list[str], *, options: OptionsT | None = None, **overrides: object) -> list[TTSOutput]: ...

    @overload
    def generate(self, text: str, *, options: OptionsT | None = None, **overrides: object) -> TTSOutput: ...

    def generate(
        self, text: str | Sequence[str], *, options: OptionsT | None = None, **overrides: object
    ) -> TTSOutput | list[TTSOutput]:
        """Synthesize speech for one text or a list of texts.

        Args:
            text: a non-empty string, or a ``list`` of them (a batch).
            options: inference options replacing the defaults.
            **overrides: individual options (validated before loading).

        Returns:
            A :class:`~voicehub.core.TTSOutput`, or a list of them for a list input.

        Raises:
            UnknownInferenceOptionError: for an unknown option (a ``TypeError``).
            InferenceOptionError: for invalid options or empty text.
        """
        resolved = self.resolve_options(options, **overrides)
        is_batch = isinstance(text, list)
        items: list[object] = list(text) if isinstance(text, list) else [text]
        if not items:
            raise InferenceOptionError("generate() got an empty list; pass at least one text")
        texts: list[str] = []
        for index, item in enumerate(items):
            if not isinstance(item, str) or not item.strip():
                where = f"item {index}" if is_batch else "text"
                raise InferenceOptionError(f"generate(): {where} must be a non-empty string, got {item!r}")
            texts.append(item)
        outputs = self._run(self._generate, texts, resolved, TTSOutput)
        return outputs if is_batch else outputs[0]

    def _generate(self, runtime: RuntimeT, texts: Sequence[str], options: OptionsT) -> Sequence[TTSOutput]:
        """Return one :class:`TTSOutput` per text."""
        raise NotImplementedError(f"{type(self).__name__} must implement _generate()")


__all__ = ["PreTrainedTTSModel"]

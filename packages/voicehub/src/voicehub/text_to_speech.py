"""The text-to-speech task: :class:`PreTrainedTTSModel`.

A TTS integration subclasses it, sets ``config_class`` and ``options_class``, returns its runtime
bundle from ``_load_runtime`` (for VITS: the generator as ``module`` and the text front end as
``tokenizer``) and implements ``_generate``. A model that can speak a text piece by piece (sentence
by sentence) also implements ``_stream_pieces`` and ``_generate_piece``; :meth:`PreTrainedTTSModel.stream`
then yields each piece's audio as soon as it is ready.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Iterator, Sequence
from typing import ClassVar, overload

from voicehub._model_files import _inference_context
from voicehub.core.errors import InferenceOptionError
from voicehub.core.outputs import TTSOutput, check_output
from voicehub.core.tasks import SpeechTask
from voicehub.modeling import ConfigT, OptionsT, PreTrainedSpeechModel, RuntimeT

PathLike = str | os.PathLike[str]


def _check_texts(method: str, text: object) -> tuple[list[str], bool]:
    """The texts of a call and whether it was a batch (a ``list``).

    Raises:
        InferenceOptionError: for an empty list, or an item that is not a non-empty string.
    """
    is_batch = isinstance(text, list)
    items: list[object] = list(text) if isinstance(text, list) else [text]
    if not items:
        raise InferenceOptionError(f"{method}() got an empty list; pass at least one text")
    texts: list[str] = []
    for index, item in enumerate(items):
        if not isinstance(item, str) or not item.strip():
            where = f"item {index}" if is_batch else "text"
            raise InferenceOptionError(f"{method}(): {where} must be a non-empty string, got {item!r}")
        texts.append(item)
    return texts, is_batch


class PreTrainedTTSModel(PreTrainedSpeechModel[ConfigT, OptionsT, RuntimeT]):
    """Base of text-to-speech wrappers; implement ``_generate`` (and, to stream, the two piece hooks)."""

    task: ClassVar[SpeechTask] = SpeechTask.TEXT_TO_SPEECH
    output_type: ClassVar[type] = TTSOutput
    _task_method: ClassVar[str] = "generate"

    @overload
    def generate(
        self,
        text: list[str],
        *,
        output_path: Sequence[PathLike] | None = None,
        options: OptionsT | None = None,
        **overrides: object,
    ) -> list[TTSOutput]: ...

    @overload
    def generate(
        self, text: str, *, output_path: PathLike | None = None, options: OptionsT | None = None, **overrides: object
    ) -> TTSOutput: ...

    def generate(
        self,
        text: str | Sequence[str],
        *,
        output_path: PathLike | Sequence[PathLike] | None = None,
        options: OptionsT | None = None,
        **overrides: object,
    ) -> TTSOutput | list[TTSOutput]:
        """Synthesize speech for one text or a list of texts.

        Args:
            text: a non-empty string, or a ``list`` of them (a batch).
            output_path: write the audio there too (format from the suffix: ``.wav``, ``.flac``,
                ``.ogg``; atomically, see :func:`voicehub.core.audio.save_audio`); one path for a
                string, a list of as many paths as texts for a list. The output's ``path`` names it.
            options: inference options replacing the defaults.
            **overrides: individual options (validated before loading).

        Returns:
            A :class:`~voicehub.core.TTSOutput`, or a list of them for a list input.

        Raises:
            UnknownInferenceOptionError: for an unknown option (a ``TypeError``).
            InferenceOptionError: for invalid options or empty text, or ``output_path`` not
                matching the input (a path for a string, a list of paths for a list).
            OutputPathError: when an output file cannot be written (checked before synthesis).
        """
        resolved = self.resolve_options(options, **overrides)
        texts, is_batch = _check_texts("generate", text)
        paths = self._output_paths(output_path, len(texts), is_batch)
        outputs = self._run(self._generate, texts, resolved, TTSOutput)
        if paths is not None:
            outputs = [
                dataclasses.replace(out, path=str(out.save(path))) for out, path in zip(outputs, paths, strict=True)
            ]
        return outputs if is_batch else outputs[0]

    @staticmethod
    def _output_paths(output_path: object, count: int, is_batch: bool) -> list[str] | None:
        """The destinations of a ``generate`` call, checked before any synthesis."""
        from voicehub.core.files import check_output_file

        if output_path is None:
            return None
        if is_batch:
            if isinstance(output_path, (str, os.PathLike)) or not isinstance(output_path, Sequence):
                raise InferenceOptionError(
                    f"generate(): a list of texts needs a list of {count} output paths, got {output_path!r}"
                )
            candidates = list(output_path)
        else:
            if not isinstance(output_path, (str, os.PathLike)):
                raise InferenceOptionError(
                    f"generate(): output_path must be one path for one text, got {output_path!r}"
                )
            candidates = [output_path]
        if len(candidates) != count or not all(isinstance(p, (str, os.PathLike)) for p in candidates):
            raise InferenceOptionError(
                f"generate(): expected {count} output path(s), one per text, got {len(candidates)}: {candidates!r}"
            )
        return [str(check_output_file(p, what="generate() output file")) for p in candidates]

    def stream(self, text: str, *, options: OptionsT | None = None, **overrides: object) -> Iterator[TTSOutput]:
        """Synthesize ``text`` piece by piece (sentence by sentence for VITS), yielding each piece's audio.

        The text is cut into pieces first (for VITS: the text front end's sentences); each piece
        is then synthesized when the consumer asks for the next chunk, so the first audio is
        ready after one piece, not the whole text. Concatenating the chunks' ``audio`` gives the
        one-shot output of :meth:`generate` for the same options and seed (within float
        tolerance; see the integration's docs for how seeds map to pieces).

        Each chunk's ``metadata`` adds ``chunk_index``, ``num_chunks``, ``start_s`` (where the
        chunk starts in the whole audio), ``elapsed_s`` (seconds since the call, when the chunk
        was ready) and ``time_to_first_audio_s`` (the first chunk's ``elapsed_s``).

        Args:
            text: a non-empty string.
            options: inference options replacing the defaults.
            **overrides: individual options (validated before loading).

        Raises:
            UnknownInferenceOptionError, InferenceOptionError: as :meth:`generate`, raised by this
                call itself (before anything loads), not on the first ``next()``.
            NothingToPronounceError, UnknownSpeakerError and the other text errors of
                :meth:`generate`: also raised by this call itself; it loads the model (when lazy)
                and cuts the text into pieces before returning the iterator.
            NotImplementedError: for a model that does not stream.
        """
        started = time.perf_counter()
        resolved = self.resolve_options_for("stream", options, overrides)
        texts, is_batch = _check_texts("stream", text)
        if is_batch:
            raise InferenceOptionError("stream(): pass one text (a string); use generate() for a list of texts")
        return self._stream(texts[0], resolved, started)

    def _stream(self, text: str, options: OptionsT, started: float) -> Iterator[TTSOutput]:
        """Cut the text into pieces now (its errors surface at the call), then synthesize lazily."""
        with self._calls.call():
            runtime = self._inference_runtime()
            with _inference_context():
                pieces = list(self._stream_pieces(runtime, text, options))
        return self._stream_chunks(pieces, options, started)

    def _stream_chunks(self, pieces: Sequence[object], options: OptionsT, started: float) -> Iterator[TTSOutput]:
        first_audio_s: float | None = None
        offset_s = 0.0
        producer = f"{type(self).__name__}.stream"
        for index, piece in enumerate(pieces):
            # The gate is taken per chunk: a consumer that pauses between chunks never blocks a plan change.
            with self._calls.call():
                runtime = self._inference_runtime()
                with _inference_context():
                    chunk = self._generate_piece(runtime, piece, index, options)
            check_output(chunk, TTSOutput, producer=producer)
            elapsed_s = time.perf_counter() - started
            first_audio_s = elapsed_s if first_audio_s is None else first_audio_s
            metadata = dict(chunk.metadata) | {
                "chunk_index": index,
                "num_chunks": len(pieces),
                "start_s": offset_s,
                "elapsed_s": elapsed_s,
                "time_to_first_audio_s": first_audio_s,
            }
            offset_s += chunk.duration_s
            yield dataclasses.replace(chunk, metadata=metadata)

    def _generate(self, runtime: RuntimeT, texts: Sequence[str], options: OptionsT) -> Sequence[TTSOutput]:
        """Return one :class:`TTSOutput` per text."""
        raise NotImplementedError(f"{type(self).__name__} must implement _generate()")

    def _stream_pieces(self, runtime: RuntimeT, text: str, options: OptionsT) -> Sequence[object]:
        """Cut ``text`` into the pieces :meth:`stream` synthesizes one at a time (cheap: no synthesis)."""
        raise NotImplementedError(f"{type(self).__name__} does not stream; use generate()")

    def _generate_piece(self, runtime: RuntimeT, piece: object, index: int, options: OptionsT) -> TTSOutput:
        """Synthesize piece number ``index`` of :meth:`_stream_pieces`."""
        raise NotImplementedError(f"{type(self).__name__} does not stream; use generate()")


__all__ = ["PreTrainedTTSModel"]

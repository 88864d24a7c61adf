"""Audio -> timed text: batches of windows of up to 30 s, and the reference sequential long-form algorithm.

:meth:`WhisperTranscriber.transcribe_windows` takes independent windows of at most 30 s (the cuts of
a voice-activity chunker, or short files) with their offsets in the source, encodes them as one
batch and decodes them together. Every segment of a window is kept, including an unfinished one
after the last timestamp pair (it ends where the audio of the window ends), so a chunker loses no
word at its cuts. A window decoded without the text before it can get timestamp tokens on whole
seconds (tiny.en on the second 20 s chunk of ``tests/data/silero/test.wav``: 6.00, 9.00, 15.00 s;
faster-whisper decodes the same tokens), so with word timestamps a window's segments span their
aligned words instead.

:meth:`WhisperTranscriber.transcribe` is openai/whisper's ``transcribe`` (MIT) for one waveform of
any length: the log-mel of the whole file (plus 30 s of zeros) is normalised once, a 30 s window
starts at ``seek``, is decoded with the text so far as prompt, and ``seek`` moves to the last
complete timestamp pair (to the end of the window when the text ends with a lone timestamp, or to
the end of the last word with word timestamps), so words cut by the window's end are decoded again
in the next window and no word is lost or doubled. Timestamps are monotonic: each window's
timestamps are at or after its start, which is at or after every earlier timestamp.
:meth:`WhisperTranscriber.stream` is the same loop yielding each window's segments as it is decoded.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence

import numpy as np
import torch
from torch import Tensor

from voicehub.architectures.errors import DecodingOptionError
from voicehub.architectures.whisper.alignment import (
    AlignmentWindow,
    SegmentDraft,
    WordDraft,
    add_word_timestamps,
    find_alignments,
    place_words,
    segment_text_tokens,
)
from voicehub.architectures.whisper.audio import (
    as_waveform_batch,
    log_mel_spectrogram,
    pad_or_trim_frames,
    window_log_mel,
)
from voicehub.architectures.whisper.config import (
    FRAMES_PER_SECOND,
    HOP_LENGTH,
    SAMPLE_RATE,
    WINDOW_NUM_FRAMES,
    WINDOW_NUM_SAMPLES,
    WhisperGenerationConfig,
)
from voicehub.architectures.whisper.decoding import DecodingOptions, DecodingResult, WhisperDecoder, compression_ratio
from voicehub.architectures.whisper.model import Whisper
from voicehub.architectures.whisper.tokenizer import WhisperTokenizer


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class WhisperWord:
    """One word with its time span.

    Attributes:
        start_s, end_s: seconds from the start of the source audio.
        text: the word as written, with its leading space and attached punctuation.
        probability: mean probability of its tokens, in [0, 1]; ``None`` when not computed
            (``DecodingOptions.word_probabilities=False``).
    """

    start_s: float
    end_s: float
    text: str
    probability: float | None


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class WhisperSegment:
    """One decoded segment.

    Attributes:
        start_s, end_s: seconds from the start of the source audio.
        text: its text (with the leading space Whisper writes).
        tokens: its tokens, timestamp tokens included.
        avg_logprob: average token log-probability of the window decoding it came from.
        no_speech_prob: that window's no-speech probability.
        compression_ratio: that window's text compression ratio.
        temperature: the temperature the window was decoded at.
        words: its words, when word timestamps were asked for.
    """

    start_s: float
    end_s: float
    text: str
    tokens: tuple[int, ...]
    avg_logprob: float
    no_speech_prob: float
    compression_ratio: float
    temperature: float
    words: tuple[WhisperWord, ...] = ()


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class WhisperTranscript:
    """The transcript of one waveform (or of one window).

    Attributes:
        segments: in time order; silent windows give none.
        language: the language code decoded with (detected or given).
        language_probability: its detected probability (1.0 when it was given).
        duration_s: length of the audio, in seconds.
    """

    segments: tuple[WhisperSegment, ...]
    language: str
    language_probability: float
    duration_s: float

    @property
    def text(self) -> str:
        """All segment texts joined, stripped."""
        return "".join(segment.text for segment in self.segments).strip()

    @property
    def words(self) -> tuple[WhisperWord, ...]:
        """All words in order (empty unless word timestamps were asked for)."""
        return tuple(word for segment in self.segments for word in segment.words)


@dataclasses.dataclass(slots=True)
class _Split:
    segments: list[SegmentDraft]
    advance_frames: int
    single_timestamp_ending: bool


@dataclasses.dataclass(slots=True, kw_only=True)
class _WindowSeek:
    """Where the transcription of one independent window stands (see ``transcribe_windows``).

    Attributes:
        mel: the window's normalised log-mel, (num_mel_bins, 3000).
        num_frames: its frames of real audio (100 per second).
        offset_s: where the window starts in its source, in seconds.
        language: the language it is decoded in.
        prompt: previous-text tokens for its next decoding (the initial prompt, then its text so far).
        seek: frames of the window transcribed so far.
        last_speech_s: end of its last timed word, in seconds (word timestamps only).
        segments: its finished segments, in order.
    """

    mel: Tensor
    num_frames: int
    offset_s: float
    language: str
    prompt: list[int]
    last_speech_s: float
    seek: int = 0
    segments: list[WhisperSegment] = dataclasses.field(default_factory=list)

    @property
    def start_s(self) -> float:
        """Where the window's untranscribed rest starts in the source, in seconds."""
        return self.offset_s + self.seek / FRAMES_PER_SECOND

    @property
    def done(self) -> bool:
        """Whether the window is transcribed to its end."""
        return self.seek >= self.num_frames


class WhisperTranscriber:
    """Transcribes audio with one loaded checkpoint.

    Args:
        model: the graph (eval mode).
        tokenizer: the checkpoint's tokenizer.
        generation: the checkpoint's suppressed tokens and alignment heads.
    """

    def __init__(self, model: Whisper, tokenizer: WhisperTokenizer, generation: WhisperGenerationConfig) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.generation = generation
        self.decoder = WhisperDecoder(model, tokenizer, generation)
        self.heads = generation.alignment_heads_for(model.config)

    # ------------------------------------------------------------------------------------------- checks
    def _check_options(self, options: DecodingOptions) -> None:
        if options.language is not None:
            self.tokenizer.check_language(options.language)
        if options.task == "translate" and not self.tokenizer.multilingual:
            raise DecodingOptionError(
                "task", expected="'transcribe' on an English-only checkpoint", actual=options.task,
                fix="translation needs a multilingual checkpoint",
            )  # fmt: skip

    def _language(self, options: DecodingOptions, features: Tensor) -> list[tuple[str, float]]:
        """Per window: the language to decode with and its probability."""
        if options.language is not None or not self.tokenizer.multilingual:
            return [(options.language or "en", 1.0)] * features.shape[0]
        detected = []
        for probs in self.decoder.detect_language(features):
            code = max(probs, key=lambda c: probs[c])
            detected.append((code, probs[code]))
        return detected

    def _encode(self, mel: Tensor) -> Tensor:
        device = self.model.encoder.conv1.weight.device
        return self.model.embed_audio(mel.to(device))

    # ------------------------------------------------------------------------------------------ segments
    def _split(self, tokens: Sequence[int], window_start_s: float, num_frames: int) -> _Split:
        """Cut one window's tokens into segments at consecutive timestamp pairs (reference rules)."""
        begin = self.tokenizer.special.timestamp_begin
        precision = self.model.config.time_precision_s
        stride = WINDOW_NUM_FRAMES // self.model.config.audio_context
        is_time = [t >= begin for t in tokens]
        single_ending = len(tokens) >= 2 and not is_time[-2] and is_time[-1]
        cuts = [k for k in range(1, len(tokens)) if is_time[k] and is_time[k - 1]]
        segments: list[SegmentDraft] = []
        if cuts:
            if single_ending:
                cuts.append(len(tokens))
            last = 0
            for cut in cuts:
                piece = list(tokens[last:cut])
                segments.append(
                    SegmentDraft(
                        start_s=window_start_s + (piece[0] - begin) * precision,
                        end_s=window_start_s + (piece[-1] - begin) * precision,
                        tokens=piece,
                    )
                )
                last = cut
            advance = num_frames if single_ending else (tokens[last - 1] - begin) * stride
            return _Split(segments, advance, single_ending)
        duration_s = num_frames / FRAMES_PER_SECOND
        times = [t for t in tokens if t >= begin]
        if times and times[-1] != begin:
            duration_s = (times[-1] - begin) * precision
        segments.append(SegmentDraft(start_s=window_start_s, end_s=window_start_s + duration_s, tokens=list(tokens)))
        return _Split(segments, num_frames, single_ending)

    def _finish(self, draft: SegmentDraft, result: DecodingResult) -> WhisperSegment | None:
        """The frozen segment, or ``None`` for an empty one."""
        text = self.tokenizer.decode(draft.tokens)
        if draft.start_s == draft.end_s or not text.strip():
            return None
        return WhisperSegment(
            start_s=draft.start_s,
            end_s=draft.end_s,
            text=text,
            tokens=tuple(draft.tokens),
            avg_logprob=result.avg_logprob,
            no_speech_prob=result.no_speech_prob,
            compression_ratio=result.compression_ratio,
            temperature=result.temperature,
            words=tuple(
                WhisperWord(start_s=w.start_s, end_s=w.end_s, text=w.text, probability=w.probability)
                for w in draft.words
            ),
        )

    @torch.inference_mode()
    def detect_language(self, waveforms: Sequence[Tensor | np.ndarray]) -> list[dict[str, float]]:
        """Language probabilities of windows of at most 30 s (multilingual checkpoints).

        Args:
            waveforms: float (num_samples,) arrays at 16000 Hz, each at most 30 s.

        Returns:
            One ``{language code: probability}`` per window.

        Raises:
            AudioError: for a window longer than 30 s.
            DecodingOptionError: on an English-only checkpoint.
        """
        samples = [as_waveform_batch(w)[0] for w in waveforms]
        if not samples:
            return []
        return self.decoder.detect_language(self._encode(window_log_mel(samples, self.model.config.num_mel_bins)))

    # ------------------------------------------------------------------------------------ batched windows
    @torch.inference_mode()
    def transcribe_windows(
        self,
        waveforms: Sequence[Tensor | np.ndarray],
        offsets_s: Sequence[float] | None = None,
        options: DecodingOptions | None = None,
    ) -> list[WhisperTranscript]:
        """Transcribe independent windows of at most 30 s as one batch.

        Each window is transcribed to its end with the reference seek rule, as :meth:`transcribe`
        does for a whole file: when a window's decoding ends before the window does (its last
        complete timestamp pair is followed by nothing, or by text without a closing timestamp),
        the segments up to that pair are kept and the rest of the window, from the pair's time, is
        decoded again with the window's text so far as prompt. The continuations of all windows are
        decoded together, round after round, until every window is transcribed to its end. (A
        window is not done when its decoding stops: tiny.en ends a 30.0 s window whose last
        sentence starts at 27.2 s with ``<|27.16|><|27.16|>`` and end-of-text.)

        Args:
            waveforms: float (num_samples,) arrays, mono, in [-1, 1], at 16000 Hz, each at most
                480000 samples (30 s).
            offsets_s: where each window starts in its source, in seconds (added to every time);
                default 0.
            options: decoding options; ``initial_prompt`` is given to every window,
                ``condition_on_previous_text`` applies within a window (its continuations), and
                ``language=None`` detects the language of each window on its own (detect it once
                with :meth:`detect_language` and pass it to give all windows one language).

        Returns:
            One transcript per window, times in the source's time line.

        Raises:
            AudioError: for a window longer than 30 s or not a 1-D float array.
            DecodingOptionError: for options the checkpoint cannot honour (see :class:`DecodingOptions`).
            UnsupportedLanguageError: for a language the checkpoint has no token for.
        """
        options = options or DecodingOptions()
        self._check_options(options)
        samples = [as_waveform_batch(w)[0] for w in waveforms]
        if offsets_s is None:
            offsets_s = [0.0] * len(samples)
        if len(offsets_s) != len(samples):
            raise DecodingOptionError(
                "offsets_s", expected=f"{len(samples)} offsets, one per window", actual=len(offsets_s)
            )
        if not samples:
            return []
        mel = window_log_mel(samples, self.model.config.num_mel_bins)
        features = self._encode(mel)
        languages = self._language(options, features)
        prompt = self.decoder.prompt_tokens(options.initial_prompt)
        windows = [
            _WindowSeek(
                mel=mel[index],
                num_frames=min(WINDOW_NUM_FRAMES, window.shape[0] // HOP_LENGTH),
                offset_s=float(offset),
                language=language,
                prompt=list(prompt),
                last_speech_s=float(offset),
            )
            for index, (window, offset, (language, _)) in enumerate(zip(samples, offsets_s, languages, strict=True))
        ]
        generator = torch.Generator().manual_seed(options.seed)
        pending = windows
        while pending:
            self._seek_round(pending, features, options, generator)
            pending = [w for w in windows if not w.done]
            if pending:
                features = self._encode(
                    torch.stack([pad_or_trim_frames(w.mel[:, w.seek : w.num_frames]) for w in pending])
                )
        return [
            WhisperTranscript(
                segments=tuple(w.segments),
                language=language,
                language_probability=probability,
                duration_s=window.shape[0] / SAMPLE_RATE,
            )
            for w, window, (language, probability) in zip(windows, samples, languages, strict=True)
        ]

    def _seek_round(
        self, windows: Sequence[_WindowSeek], features: Tensor, options: DecodingOptions, generator: torch.Generator
    ) -> None:
        """Decode every window from its seek (``features``: one encoded 30 s window each) and move the seeks.

        Windows whose decoder inputs differ in length (their prompts do) are decoded in groups of
        one length; all of them are aligned together when word timestamps are asked for.
        """
        cross = self.model.decoder.cross_keys_values(features)
        initial = [self.decoder.initial_tokens(w.language, options, w.prompt, first=w.seek == 0) for w in windows]
        prefix_length = len(self.decoder.prefix_tokens(options))
        forced = [prefix_length if w.seek == 0 else 0 for w in windows]
        by_row: dict[int, DecodingResult] = {}
        for length in sorted({len(tokens) for tokens in initial}):
            rows = [k for k, tokens in enumerate(initial) if len(tokens) == length]
            index = torch.tensor(rows, device=features.device)
            group_cross = cross if len(rows) == len(windows) else [(k[index], v[index]) for k, v in cross]
            decoded = self.decoder.decode_with_fallback(
                features.index_select(0, index), [initial[k] for k in rows], options, generator, cross=group_cross,
                forced=[forced[k] for k in rows],
            )  # fmt: skip
            by_row.update(zip(rows, decoded, strict=True))
        results = [by_row[k] for k in range(len(windows))]
        splits = [
            None
            if self.decoder.is_silent(result, options)
            else self._split(result.tokens, window.start_s, window.num_frames - window.seek)
            for window, result in zip(windows, results, strict=True)
        ]
        if options.word_timestamps:
            self._align_round(windows, splits, options, cross)
        for window, result, split in zip(windows, results, splits, strict=True):
            if split is None:
                window.seek = window.num_frames  # a silent rest of a window holds no words
                continue
            size = window.num_frames - window.seek
            advance = split.advance_frames
            if advance < size and options.word_timestamps:
                last_word_end = next((w.end_s for s in reversed(split.segments) for w in reversed(s.words)), None)
                if last_word_end is not None and last_word_end > window.start_s:
                    advance = round((last_word_end - window.start_s) * FRAMES_PER_SECOND)
            finished = [s for d in split.segments if (s := self._finish(d, result)) is not None]
            window.segments.extend(finished)
            if options.condition_on_previous_text and result.temperature <= options.prompt_reset_on_temperature:
                window.prompt.extend(t for s in finished for t in s.tokens)
            else:
                window.prompt = []
            window.seek = min(window.num_frames, window.seek + max(advance, 1))

    def _align_round(
        self, windows: Sequence[_WindowSeek], splits: Sequence[_Split | None], options: DecodingOptions,
        cross: Sequence[tuple[Tensor, Tensor]],
    ) -> None:  # fmt: skip
        """Time the words of one round's complete segments in one alignment pass; segments span their words."""
        drafts = [split.segments if split is not None else [] for split in splits]
        alignment = [
            AlignmentWindow(
                sot_sequence=tuple(self.tokenizer.sot_sequence(window.language, options.task)),
                text_tokens=segment_text_tokens(segments, self.tokenizer),
                num_frames=window.num_frames - window.seek,
                language=window.language,
            )
            for segments, window in zip(drafts, windows, strict=True)
        ]
        words = find_alignments(
            self.model, self.tokenizer, cross, alignment, self.heads, word_probabilities=options.word_probabilities
        )
        for segments, found, window in zip(drafts, words, windows, strict=True):
            window.last_speech_s = place_words(
                segments, found, tokenizer=self.tokenizer, window_start_s=window.start_s,
                last_speech_s=window.last_speech_s, step_s=self.model.config.time_precision_s,
                segment_times_from_words=True,
            )  # fmt: skip

    # ---------------------------------------------------------------------------------- sequential long form
    def transcribe(self, waveform: Tensor | np.ndarray, options: DecodingOptions | None = None) -> WhisperTranscript:
        """Transcribe one waveform of any length with the reference sequential 30 s seek.

        Args:
            waveform: float (num_samples,), mono, in [-1, 1], at 16000 Hz.
            options: decoding options.

        Returns:
            The transcript; segment and word times in seconds from the start of ``waveform``: the
            segments of every window :meth:`stream` yields, in order.

        Raises:
            AudioError: for an input that is not a 1-D float array.
            DecodingOptionError: for options the checkpoint cannot honour.
            UnsupportedLanguageError: for a language the checkpoint has no token for.
        """
        pieces = list(self.stream(waveform, options))
        first = pieces[0]
        return dataclasses.replace(first, segments=tuple(s for piece in pieces for s in piece.segments))

    @torch.inference_mode()
    def stream(
        self, waveform: Tensor | np.ndarray, options: DecodingOptions | None = None
    ) -> Iterator[WhisperTranscript]:
        """The sequential 30 s seek of :meth:`transcribe`, yielding each window's segments as it is decoded.

        The options and the waveform are checked when the first item is asked for.

        Args:
            waveform: float (num_samples,), mono, in [-1, 1], at 16000 Hz.
            options: decoding options.

        Yields:
            One transcript per decoded window (no segments for a silent one; at least one in all),
            each with the whole waveform's ``duration_s``, language and its probability.

        Raises:
            AudioError: for an input that is not a 1-D float array.
            DecodingOptionError: for options the checkpoint cannot honour.
            UnsupportedLanguageError: for a language the checkpoint has no token for.
        """
        options = options or DecodingOptions()
        self._check_options(options)
        audio = as_waveform_batch(waveform)
        if audio.shape[0] != 1:
            raise DecodingOptionError("waveform", expected="one waveform (num_samples,)", actual=tuple(audio.shape))
        duration_s = audio.shape[1] / SAMPLE_RATE
        mel = log_mel_spectrogram(audio, self.model.config.num_mel_bins, padding_num_samples=WINDOW_NUM_SAMPLES)
        content_frames = mel.shape[-1] - WINDOW_NUM_FRAMES
        language, probability = options.language or "en", 1.0
        features_first: Tensor | None = None
        if options.language is None and self.tokenizer.multilingual:
            features_first = self._encode(mel[..., :WINDOW_NUM_FRAMES])
            language, probability = self._language(options, features_first)[0]
        sot_sequence = self.tokenizer.sot_sequence(language, options.task)
        generator = torch.Generator().manual_seed(options.seed)
        all_tokens = self.decoder.prompt_tokens(options.initial_prompt)
        prompt_start = 0
        last_speech_s = 0.0
        seek = 0

        def piece(segments: Sequence[WhisperSegment]) -> WhisperTranscript:
            return WhisperTranscript(
                segments=tuple(segments), language=language, language_probability=probability, duration_s=duration_s
            )

        yielded = False
        for clip_start, clip_end in _seek_clips(options.clip_timestamps, content_frames):
            seek = max(seek, clip_start)
            while seek < clip_end:
                window_start_s = seek / FRAMES_PER_SECOND
                size = min(WINDOW_NUM_FRAMES, clip_end - seek)
                if seek == 0 and features_first is not None and size == WINDOW_NUM_FRAMES:
                    features = features_first
                else:
                    features = self._encode(pad_or_trim_frames(mel[..., seek : seek + size]))
                first = seek == 0
                initial = self.decoder.initial_tokens(language, options, all_tokens[prompt_start:], first=first)
                forced = [len(self.decoder.prefix_tokens(options))] if first else None
                cross = self.model.decoder.cross_keys_values(features)
                result = self.decoder.decode_with_fallback(
                    features, [initial], options, generator, cross=cross, forced=forced
                )[0]
                if self.decoder.is_silent(result, options):
                    seek += size
                    yielded = True
                    yield piece(())
                    continue
                split = self._split(result.tokens, window_start_s, size)
                next_seek = seek + split.advance_frames
                if options.word_timestamps:
                    add_word_timestamps(
                        split.segments, model=self.model, tokenizer=self.tokenizer, audio_features=features,
                        sot_sequence=sot_sequence, window_start_s=window_start_s, num_frames=size, heads=self.heads,
                        language=language, last_speech_s=last_speech_s, cross=cross,
                    )  # fmt: skip
                    last_word_end = _last_word_end(split.segments)
                    if (
                        not split.single_timestamp_ending
                        and last_word_end is not None
                        and last_word_end > window_start_s
                    ):
                        next_seek = round(last_word_end * FRAMES_PER_SECOND)
                    if options.hallucination_silence_threshold is not None:
                        skip = _HallucinationSkip(
                            threshold_s=options.hallucination_silence_threshold, window_start_s=window_start_s,
                            window_size_s=size / FRAMES_PER_SECOND, last_speech_s=last_speech_s,
                            content_duration_s=content_frames / FRAMES_PER_SECOND,
                        )  # fmt: skip
                        skipped_seek = skip.leading_silence(split.segments, seek)
                        if skipped_seek is not None:
                            seek = skipped_seek
                            continue
                        next_seek = skip.next_seek(split, next_seek, content_frames)
                    last_speech_s = _last_word_end(split.segments) or last_speech_s
                finished = [(d, s) for d in split.segments if (s := self._finish(d, result)) is not None]
                all_tokens.extend(t for d, _ in finished for t in d.tokens)
                if not options.condition_on_previous_text or result.temperature > options.prompt_reset_on_temperature:
                    prompt_start = len(all_tokens)
                seek = max(next_seek, seek + 1)
                yielded = True
                yield piece([s for _, s in finished])
        if not yielded:
            yield piece(())


def _seek_clips(clip_timestamps: Sequence[float], content_frames: int) -> list[tuple[int, int]]:
    """``(start, end)`` frames of the stretches to transcribe (openai-whisper's ``clip_timestamps`` rule).

    Seconds come in ``start, end`` pairs; an odd count runs to the end of the audio; none is all of it.
    Ends are clipped to the audio.
    """
    points = [round(t * FRAMES_PER_SECOND) for t in clip_timestamps] or [0]
    if len(points) % 2:
        points.append(content_frames)
    return [(start, min(end, content_frames)) for start, end in zip(points[::2], points[1::2], strict=True)]


def _last_word_end(segments: Sequence[SegmentDraft]) -> float | None:
    return next((w.end_s for s in reversed(segments) for w in reversed(s.words)), None)


HALLUCINATION_PUNCTUATION = "\"'“¿([{-\"'.。,，!！?？:：”)]}、"  # noqa: RUF001 (full-width marks, on purpose)
"""Words that are only these characters are left out of the anomaly score (openai-whisper's list)."""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class _HallucinationSkip:
    """The ``hallucination_silence_threshold`` rule of openai-whisper (``transcribe.py``, 20250625) for one window.

    As faster-whisper 1.2.1 applies it: without openai-whisper's extra move of the seek to the end
    of the window when the last word ends less than the threshold before it (which skips the words
    between the last word and the window's end: "And this spills" at 29.3-30.0 s of
    ``tests/data/silero/test.wav`` with a 1 s threshold).

    A segment is anomalous when its first 8 words (punctuation left out) score at least 3, or about
    one per word: a word scores 1 if its probability is under 0.15, ``15 * (0.133 - d)`` if it lasts
    ``d < 0.133`` s, and ``d - 2`` if it lasts over 2 s. An anomalous segment after a silence longer
    than the threshold (or at a window's start) and before another one (or a window's end) is
    dropped with everything after it, and the seek moves to it.
    """

    threshold_s: float
    window_start_s: float
    window_size_s: float
    content_duration_s: float
    last_speech_s: float

    @staticmethod
    def _word_score(word: WordDraft) -> float:
        duration = word.end_s - word.start_s
        score = 1.0 if (word.probability or 0.0) < 0.15 else 0.0
        if duration < 0.133:
            score += (0.133 - duration) * 15
        if duration > 2.0:
            score += duration - 2.0
        return score

    def is_anomaly(self, segment: SegmentDraft | None) -> bool:
        if segment is None or not segment.words:
            return False
        words = [w for w in segment.words if w.text not in HALLUCINATION_PUNCTUATION][:8]
        score = sum(self._word_score(w) for w in words)
        return score >= 3 or score + 0.01 >= len(words)

    def leading_silence(self, segments: Sequence[SegmentDraft], seek: int) -> int | None:
        """The seek past a long silence before an anomalous first segment, or ``None``."""
        first = next((s for s in segments if s.words), None)
        if first is not None and self.is_anomaly(first):
            gap_s = first.start_s - self.window_start_s
            if gap_s > self.threshold_s:
                return seek + round(gap_s * FRAMES_PER_SECOND)
        return None

    def next_seek(self, split: _Split, next_seek: int, content_frames: int) -> int:
        """Where to go on after this window; drops an anomalous segment in silence (and what follows) from ``split``."""
        segments = split.segments
        window_end_s = self.window_start_s + WINDOW_NUM_FRAMES / FRAMES_PER_SECOND
        previous_end_s = self.last_speech_s
        for index, segment in enumerate(segments):
            if not segment.words:
                continue
            if self.is_anomaly(segment):
                following = next((s for s in segments[index + 1 :] if s.words), None)
                next_start_s = (
                    following.words[0].start_s if following is not None else self.window_start_s + self.window_size_s
                )
                silence_before = (
                    segment.start_s - previous_end_s > self.threshold_s
                    or segment.start_s < self.threshold_s
                    or segment.start_s - self.window_start_s < 2.0
                )
                silence_after = (
                    next_start_s - segment.end_s > self.threshold_s
                    or self.is_anomaly(following)
                    or window_end_s - segment.end_s < 2.0
                )
                if silence_before and silence_after:
                    next_seek = round(max(self.window_start_s + 1, segment.start_s) * FRAMES_PER_SECOND)
                    if self.content_duration_s - segment.end_s < self.threshold_s:
                        next_seek = content_frames
                    del segments[index:]
                    break
            previous_end_s = segment.end_s
        return next_seek


__all__ = ["WhisperSegment", "WhisperTranscriber", "WhisperTranscript", "WhisperWord", "compression_ratio"]

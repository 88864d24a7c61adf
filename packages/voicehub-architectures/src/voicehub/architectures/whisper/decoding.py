"""Token decoding of 30 s windows: greedy, beam search and sampling with Whisper's logit rules.

The rules follow openai/whisper ``decoding.py`` (MIT) and what faster-whisper passes to
CTranslate2:

1. The decoder input is ``[<|startofprev|> hotwords... prompt...] + start sequence [+ <|notimestamps|>]
   [+ <|0.00|> prefix...]``; the prompt is the last ``text_context // 2 - 1`` tokens of the previous
   text or initial prompt; hotwords are left out where a prefix is given (faster-whisper's
   ``get_prompt``). The prefix (with its opening timestamp) is forced: it is part of the result.
2. The no-speech probability is the probability of ``<|nospeech|>`` right after
   ``<|startoftranscript|>`` at the first step.
3. At every step: a token already in the row's result has its logit divided by
   ``repetition_penalty`` (multiplied where negative; the CTRL paper's penalty, as CTranslate2
   applies it); a token that would repeat an n-gram of ``no_repeat_ngram_size`` tokens of the
   result is forbidden; the suppressed tokens (``suppress_tokens``: ``-1`` stands for the
   checkpoint's non-speech set) and the control tokens (task, start, previous, LM, no-speech) get
   probability 0; at the first step also the blank and end-of-text.
4. With timestamps: ``<|notimestamps|>`` is never sampled; the first token is a timestamp of at
   most ``max_initial_timestamp_s``; timestamps come in pairs (after one timestamp only another
   one or end-of-text... after a pair only text); they never decrease, and a segment is never empty;
   when the timestamps together are more probable than any text token, a timestamp is taken.
5. Greedy and sampling keep ``group`` independent rows per window; beam search keeps ``beam_size``
   rows, expands each by its ``beam_size + 1`` best tokens, collects finished sequences until
   ``round(beam_size * patience)`` exist, and ranks them by summed log-probability over length
   (or the length penalty ``((5 + n) / 6) ** alpha``).
6. Temperature fallback (per window): a result whose text compresses by more than
   ``compression_ratio_threshold`` (gzip, a repetition loop) or whose average log-probability is
   below ``logprob_threshold`` is decoded again at the next temperature, unless the window is
   silent (no-speech probability above ``no_speech_threshold`` and low log-probability). If every
   temperature fails, the result with the best average log-probability among those under the
   compression threshold is kept (faster-whisper's choice).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import zlib
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import Tensor

from voicehub.architectures.errors import DecodingOptionError
from voicehub.architectures.whisper.config import WhisperGenerationConfig
from voicehub.architectures.whisper.model import DecoderState, Whisper
from voicehub.architectures.whisper.tokenizer import Task, WhisperTokenizer

DEFAULT_TEMPERATURES = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
"""The reference fallback temperatures."""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class DecodingOptions:
    """How to decode (all defaults are those of openai-whisper's ``transcribe``).

    Attributes:
        task: ``"transcribe"`` (the spoken language) or ``"translate"`` (to English; multilingual only).
        language: language code (``"en"``, ``"de"``...); ``None`` detects it on multilingual
            checkpoints and means English on English-only ones.
        temperatures: tried in order until a result passes the fallback checks; 0 is greedy or beam.
        beam_size: beams at temperature 0; 1 is greedy decoding.
        best_of: independent samples at a temperature above 0, the most probable one is kept.
        patience: beam search stops once ``round(beam_size * patience)`` sequences are finished.
        length_penalty: ``None`` ranks by log-probability / length, else by the Google NMT
            penalty with this alpha in [0, 1].
        compression_ratio_threshold: fall back when the text's gzip ratio is above this (``None``: never).
        logprob_threshold: fall back when the average token log-probability is below this.
        no_speech_threshold: a window is silent when its no-speech probability is above this and its
            average log-probability is below ``logprob_threshold``; silent windows give no text.
        without_timestamps: decode text only (``<|notimestamps|>``); segments then span the window.
        max_initial_timestamp_s: latest first timestamp, in seconds.
        suppress_blank: forbid a blank or end-of-text as the first token.
        initial_prompt: text given to the first window as previous text (vocabulary, style).
        condition_on_previous_text: give each window of a long file the text so far as its prompt.
        prompt_reset_on_temperature: stop conditioning after a window decoded above this temperature.
        word_timestamps: add word timings from the cross-attention alignment heads.
        word_probabilities: with ``word_timestamps``, also each word's probability (a softmax over the
            vocabulary at every text token); ``False`` times the words only (their probability is
            ``None``), for callers that want the times and drop the words.
        max_new_tokens: most tokens sampled per window (default ``text_context // 2``).
        seed: seed of the sampler used at temperatures above 0 (results are reproducible).
        prefix: text the transcript of the first window starts with (forced, kept in the result).
        hotwords: words to bias recognition toward, given as previous text to every window (not
            to a window that gets ``prefix``).
        suppress_tokens: token ids never sampled; ``-1`` stands for the checkpoint's non-speech
            set (the default, ``(-1,)``); ``()`` suppresses only the control tokens.
        repetition_penalty: above 1 makes tokens already in the result less likely (1: off).
        no_repeat_ngram_size: forbid repeating any n-gram of this many tokens (0: off).
        clip_timestamps: seconds ``start, end, start, end...`` of the stretches of a long input
            to transcribe with the sequential seek (an odd count runs to the end); ``()``: all.
        hallucination_silence_threshold: with word timestamps, in the sequential seek, skip a
            silence longer than this many seconds before a segment that looks like a
            hallucination (openai-whisper's rule); ``None``: off.
    """

    task: Task = "transcribe"
    language: str | None = None
    temperatures: tuple[float, ...] = DEFAULT_TEMPERATURES
    beam_size: int = 1
    best_of: int = 5
    patience: float = 1.0
    length_penalty: float | None = None
    compression_ratio_threshold: float | None = 2.4
    logprob_threshold: float | None = -1.0
    no_speech_threshold: float | None = 0.6
    without_timestamps: bool = False
    max_initial_timestamp_s: float = 1.0
    suppress_blank: bool = True
    initial_prompt: str | None = None
    condition_on_previous_text: bool = True
    prompt_reset_on_temperature: float = 0.5
    word_timestamps: bool = False
    word_probabilities: bool = True
    max_new_tokens: int | None = None
    seed: int = 0
    prefix: str | None = None
    hotwords: str | None = None
    suppress_tokens: tuple[int, ...] = (-1,)
    repetition_penalty: float = 1.0
    no_repeat_ngram_size: int = 0
    clip_timestamps: tuple[float, ...] = ()
    hallucination_silence_threshold: float | None = None

    def __post_init__(self) -> None:
        def positive_int(name: str) -> None:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise DecodingOptionError(name, expected="an integer >= 1", actual=value)

        positive_int("beam_size")
        positive_int("best_of")
        if self.max_new_tokens is not None:
            positive_int("max_new_tokens")
        if self.task not in ("transcribe", "translate"):
            raise DecodingOptionError("task", expected="'transcribe' or 'translate'", actual=self.task)
        if self.language is not None and not isinstance(self.language, str):
            raise DecodingOptionError(
                "language", expected="a language code such as 'en', or None", actual=self.language
            )
        temperatures = self.temperatures
        if isinstance(temperatures, (int, float)):
            object.__setattr__(self, "temperatures", (float(temperatures),))
        elif not isinstance(temperatures, tuple) or not temperatures:
            raise DecodingOptionError(
                "temperature", expected="a number >= 0 or a non-empty tuple of them", actual=temperatures
            )
        if any(
            isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t) or t < 0
            for t in self.temperatures
        ):
            raise DecodingOptionError("temperature", expected="finite numbers >= 0", actual=self.temperatures)
        if not math.isfinite(self.patience) or self.patience <= 0 or round(self.beam_size * self.patience) < 1:
            raise DecodingOptionError(
                "patience", expected="a number > 0 with round(beam_size * patience) >= 1", actual=self.patience
            )
        if self.length_penalty is not None and not 0 <= self.length_penalty <= 1:
            raise DecodingOptionError(
                "length_penalty", expected="None or a number in [0, 1]", actual=self.length_penalty
            )
        if self.no_speech_threshold is not None and not 0 <= self.no_speech_threshold <= 1:
            raise DecodingOptionError(
                "no_speech_threshold", expected="None or a probability in [0, 1]", actual=self.no_speech_threshold
            )
        if not 0 <= self.max_initial_timestamp_s <= 30:
            raise DecodingOptionError(
                "max_initial_timestamp_s", expected="seconds in [0, 30]", actual=self.max_initial_timestamp_s
            )
        for name in ("prefix", "hotwords"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise DecodingOptionError(name, expected="text or None", actual=value)
        if not isinstance(self.suppress_tokens, tuple) or any(
            isinstance(t, bool) or not isinstance(t, int) or t < -1 for t in self.suppress_tokens
        ):
            raise DecodingOptionError(
                "suppress_tokens", expected="a tuple of token ids (-1: the checkpoint's non-speech set)",
                actual=self.suppress_tokens,
            )  # fmt: skip
        penalty = self.repetition_penalty
        if isinstance(penalty, bool) or not isinstance(penalty, (int, float)) or not 0 < penalty < math.inf:
            raise DecodingOptionError("repetition_penalty", expected="a number > 0 (1: off)", actual=penalty)
        ngram = self.no_repeat_ngram_size
        if isinstance(ngram, bool) or not isinstance(ngram, int) or ngram < 0:
            raise DecodingOptionError("no_repeat_ngram_size", expected="an integer >= 0 (0: off)", actual=ngram)
        clips = self.clip_timestamps
        if not isinstance(clips, tuple) or any(
            isinstance(t, bool) or not isinstance(t, (int, float)) or not 0 <= t < math.inf for t in clips
        ):
            raise DecodingOptionError("clip_timestamps", expected="a tuple of seconds >= 0", actual=clips)
        if any(b < a for a, b in itertools.pairwise(clips)):
            raise DecodingOptionError("clip_timestamps", expected="seconds in increasing order", actual=clips)
        threshold = self.hallucination_silence_threshold
        if threshold is not None:
            if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 < threshold < math.inf:
                raise DecodingOptionError(
                    "hallucination_silence_threshold", expected="seconds > 0, or None", actual=threshold
                )
            if not self.word_timestamps:
                raise DecodingOptionError(
                    "hallucination_silence_threshold", expected="None without word timestamps", actual=threshold,
                    fix="the rule looks at word times: also set word_timestamps=True",
                )  # fmt: skip
        if self.word_timestamps and self.without_timestamps:
            raise DecodingOptionError(
                "word_timestamps", expected="False when without_timestamps is True", actual=True,
                fix="word timings need the segment timestamps",
            )  # fmt: skip


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class DecodingResult:
    """The decoding of one window at one temperature.

    Attributes:
        tokens: sampled tokens (text and timestamps), without the start sequence and end-of-text.
        text: their text, stripped.
        avg_logprob: summed token log-probability over ``len(tokens) + 1`` (end-of-text counted).
        no_speech_prob: probability of ``<|nospeech|>`` after ``<|startoftranscript|>``.
        temperature: the temperature used.
        compression_ratio: UTF-8 bytes of ``text`` over its zlib-compressed bytes.
    """

    tokens: tuple[int, ...]
    text: str
    avg_logprob: float
    no_speech_prob: float
    temperature: float
    compression_ratio: float


def compression_ratio(text: str) -> float:
    """UTF-8 length of ``text`` over its zlib-compressed length (repetitive text compresses well)."""
    data = text.encode("utf-8")
    return len(data) / len(zlib.compress(data)) if data else 0.0


class _TimestampRules:
    """Rule 4 of the module docstring, applied in place to a batch of logits."""

    def __init__(self, tokenizer: WhisperTokenizer, max_initial_index: int) -> None:
        self.begin = tokenizer.special.timestamp_begin
        self.eot = tokenizer.special.eot
        self.no_timestamps = tokenizer.special.no_timestamps
        self.max_initial_index = max_initial_index
        self._cached_positions: Tensor | None = None

    def apply(self, logits: Tensor, sampled: Sequence[Sequence[int]]) -> Tensor:
        """Mask ``logits`` (rows, vocab) in place for the rows' tokens so far; return their log-probabilities.

        The per-row rules become one boolean mask (a range of forbidden text tokens and a range of
        forbidden timestamps per row) filled in one call, instead of slice assignments row by row.
        """
        begin, eot = self.begin, self.eot
        vocab = logits.shape[-1]
        text_end: list[int] = []  # tokens [0, text_end) are forbidden
        time_start: list[int] = []  # tokens [time_start, time_end) are forbidden
        time_end: list[int] = []
        for seq in sampled:
            if not seq:
                text_end.append(begin)
                time_start.append(begin + self.max_initial_index + 1)
                time_end.append(vocab)
                continue
            last_is_time = seq[-1] >= begin
            penultimate_is_time = len(seq) < 2 or seq[-2] >= begin
            text = 0
            low, high = begin, begin
            if last_is_time:
                if penultimate_is_time:
                    high = vocab
                else:
                    text = eot
            last_time = next((t for t in reversed(seq) if t >= begin), None)
            if last_time is not None:
                # Timestamps never decrease; a closing timestamp may repeat the opening one's value
                # only directly (empty segments are forbidden by the pairing rule above).
                limit = last_time if last_is_time and not penultimate_is_time else last_time + 1
                high = max(high, limit)
            text_end.append(text)
            time_start.append(low)
            time_end.append(high)
        positions = self._positions(vocab, logits.device)
        device = logits.device
        forbidden = (positions < torch.tensor(text_end, device=device)[:, None]) | (
            (positions >= torch.tensor(time_start, device=device)[:, None])
            & (positions < torch.tensor(time_end, device=device)[:, None])
        )
        forbidden[:, self.no_timestamps] = True
        logits.masked_fill_(forbidden, -math.inf)
        logprobs = F.log_softmax(logits, dim=-1)
        time_mass = logprobs[:, begin:].logsumexp(dim=-1)
        best_text = logprobs[:, :begin].amax(dim=-1)
        rows = (time_mass > best_text).nonzero().flatten()
        if rows.numel():
            logits[rows, :begin] = -math.inf
            logprobs = F.log_softmax(logits, dim=-1)
        return logprobs

    def _positions(self, vocab: int, device: torch.device) -> Tensor:
        """``arange(vocab)`` as a (1, vocab) row on ``device``, built once."""
        cached = self._cached_positions
        if cached is None or cached.shape[1] != vocab or cached.device != device:
            cached = self._cached_positions = torch.arange(vocab, device=device)[None, :]
        return cached


@dataclasses.dataclass(slots=True)
class _Beam:
    finished: dict[tuple[int, ...], float] = dataclasses.field(default_factory=dict)


class WhisperDecoder:
    """Decodes batches of encoded 30 s windows with one checkpoint's tokenizer and generation facts.

    Args:
        model: the graph (eval mode).
        tokenizer: the checkpoint's tokenizer.
        generation: its suppressed tokens and alignment heads.
    """

    def __init__(self, model: Whisper, tokenizer: WhisperTokenizer, generation: WhisperGenerationConfig) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.generation = generation
        special = tokenizer.special
        self.control = (
            special.transcribe,
            special.translate,
            special.sot,
            special.sot_prev,
            special.sot_lm,
            special.no_speech,
        )
        self._suppressed: dict[tuple[int, ...], Tensor] = {}
        self.begin_suppress = torch.tensor(sorted(set(generation.begin_suppress_tokens)), dtype=torch.long)

    # -------------------------------------------------------------------------------------------- prompts
    def initial_tokens(
        self, language: str | None, options: DecodingOptions, previous: Sequence[int] = (), *, first: bool = False
    ) -> list[int]:
        """Rule 1: the decoder input for one window.

        Args:
            language: the window's language (ignored on English-only checkpoints).
            options: task, timestamps, hotwords and prefix.
            previous: previous-text tokens (already including the initial prompt, if any).
            first: whether this is the first window of its input (the one ``options.prefix`` is for).

        Returns:
            The tokens; the last :meth:`forced_length` of them are the forced prefix.

        Raises:
            UnsupportedLanguageError: for a language without a token.
        """
        limit = self.model.config.text_context // 2 - 1
        prefix = self.prefix_tokens(options) if first else []
        hotwords = self.prompt_tokens(options.hotwords)[:limit] if not prefix else []
        tokens: list[int] = []
        if previous or hotwords:
            tokens = [self.tokenizer.special.sot_prev, *hotwords, *(list(previous)[-limit:] if previous else [])]
        tokens.extend(self.tokenizer.sot_sequence(language, options.task))
        if options.without_timestamps:
            tokens.append(self.tokenizer.special.no_timestamps)
        return tokens + prefix

    def prefix_tokens(self, options: DecodingOptions) -> list[int]:
        """The forced start of a first window's result: ``<|0.00|>`` (with timestamps) and the prefix text."""
        if not options.prefix:
            return []
        text = self.tokenizer.encode(" " + options.prefix.strip())[: self.model.config.text_context // 2 - 1]
        return text if options.without_timestamps else [self.tokenizer.special.timestamp_begin, *text]

    def suppressed(self, options: DecodingOptions) -> Tensor:
        """Rule 3: the token ids never sampled under ``options`` (``-1``: the checkpoint's non-speech set)."""
        chosen = self._suppressed.get(options.suppress_tokens)
        if chosen is None:
            ids = {t for t in options.suppress_tokens if t >= 0}
            if -1 in options.suppress_tokens:
                ids |= set(self.generation.suppress_tokens)
            vocab = self.model.config.vocab_size
            if any(t >= vocab for t in ids):
                raise DecodingOptionError(
                    "suppress_tokens", expected=f"token ids below the vocabulary size {vocab}",
                    actual=sorted(t for t in ids if t >= vocab),
                )  # fmt: skip
            chosen = torch.tensor(sorted(ids | set(self.control)), dtype=torch.long)
            self._suppressed[options.suppress_tokens] = chosen
        return chosen

    def prompt_tokens(self, text: str | None) -> list[int]:
        """Tokens of an initial prompt or hotwords (``" " + text.strip()``), or none."""
        return self.tokenizer.encode(" " + text.strip()) if text else []

    # ------------------------------------------------------------------------------------------- language
    @torch.inference_mode()
    def detect_language(self, audio_features: Tensor) -> list[dict[str, float]]:
        """Probabilities of each language token after ``<|startoftranscript|>``, per window.

        Args:
            audio_features: float (windows, audio_context, W) from the encoder.

        Returns:
            One ``{code: probability}`` per window, summing to 1 over the checkpoint's languages.

        Raises:
            DecodingOptionError: on an English-only checkpoint (it has no language tokens to choose from).
        """
        if not self.tokenizer.multilingual:
            raise DecodingOptionError(
                "language", expected="'en' on an English-only checkpoint", actual=None,
                fix="language detection needs a multilingual checkpoint",
            )  # fmt: skip
        special = self.tokenizer.special
        state = self.model.decoder.init_state(audio_features, max_length=1)
        sot = torch.full((audio_features.shape[0], 1), special.sot, dtype=torch.long, device=audio_features.device)
        hidden, _ = self.model.decode(sot, state)
        ids = torch.tensor(special.language_ids, device=audio_features.device)
        probs = self.model.decoder.logits(hidden[:, 0])[:, ids].softmax(dim=-1).cpu()
        return [dict(zip(special.language_codes, row.tolist(), strict=True)) for row in probs]

    # ---------------------------------------------------------------------------------------- one temperature
    @torch.inference_mode()
    def decode(
        self, audio_features: Tensor, initial: Sequence[Sequence[int]], options: DecodingOptions, temperature: float,
        generator: torch.Generator | None = None, cross: Sequence[tuple[Tensor, Tensor]] | None = None,
        forced: Sequence[int] | None = None,
    ) -> list[DecodingResult]:  # fmt: skip
        """Decode each window once at ``temperature`` (rules 2-5).

        Args:
            audio_features: float (windows, audio_context, W).
            cross: the windows' cross-attention keys and values if already computed
                (``model.decoder.cross_keys_values(audio_features)``), else computed here.
            initial: per window its decoder input (:meth:`initial_tokens`), all of the same length.
            forced: per window how many of its last input tokens are a forced prefix, which starts
                its result (default none).
            options: beam size, samples, timestamps and limits.
            temperature: 0 for greedy / beam search, above 0 for sampling ``best_of`` candidates.
            generator: random source for sampling.

        Returns:
            One result per window.

        Raises:
            DecodingOptionError: when the windows' inputs differ in length or leave no room to decode.
        """
        windows = audio_features.shape[0]
        lengths = {len(seq) for seq in initial}
        if len(initial) != windows or len(lengths) != 1:
            raise DecodingOptionError(
                "initial", expected=f"{windows} decoder inputs of one length", actual=sorted(lengths)
            )
        special = self.tokenizer.special
        context = self.model.config.text_context
        sample_begin = lengths.pop()
        sample_len = options.max_new_tokens or context // 2
        max_length = min(context, sample_begin + sample_len)
        if max_length <= sample_begin:
            raise DecodingOptionError(
                "initial_prompt", expected=f"a decoder input shorter than {context} tokens", actual=sample_begin
            )
        beam = temperature == 0 and options.beam_size > 1
        group = options.beam_size if beam else (options.best_of if temperature > 0 else 1)
        device = audio_features.device
        sot_index = list(initial[0]).index(special.sot)
        rows = windows * group
        tokens = torch.tensor(initial, dtype=torch.long, device=device).repeat_interleave(group, dim=0)
        state = self.model.decoder.init_state(audio_features, group_size=group, max_length=max_length, cross=cross)
        hidden, _ = self.model.decode(tokens, state)
        first = self.model.decoder.logits(hidden[:, [sot_index, -1]])
        no_speech = first[::group, 0].softmax(dim=-1)[:, special.no_speech].tolist()
        logits = first[:, 1]
        timestamp_rules = None
        if not options.without_timestamps:
            max_initial = round(options.max_initial_timestamp_s / self.model.config.time_precision_s)
            timestamp_rules = _TimestampRules(self.tokenizer, max_initial)
        forced = forced or [0] * windows
        sampled = [
            list(initial[row // group][len(initial[row // group]) - forced[row // group] :]) for row in range(rows)
        ]
        suppress = self.suppressed(options)
        sum_logprobs = torch.zeros(rows, dtype=torch.float64)
        done = [False] * rows
        active = torch.ones(rows, dtype=torch.bool)  # ``not done``, as a mask for the log-probability sums
        beams = [_Beam() for _ in range(windows)] if beam else []
        max_candidates = round(options.beam_size * options.patience)
        live = list(range(rows))  # the rows still in the decoder state, in its order (all of them for beams)
        step = 0
        while True:
            histories = [sampled[row] for row in live]
            if options.repetition_penalty != 1.0:
                penalise_repetitions(logits, histories, options.repetition_penalty)
            if options.no_repeat_ngram_size:
                forbid_repeated_ngrams(logits, histories, options.no_repeat_ngram_size)
            logits[:, suppress] = -math.inf
            if step == 0 and options.suppress_blank:
                logits[:, self.begin_suppress] = -math.inf
            if timestamp_rules is not None:
                logprobs = timestamp_rules.apply(logits, histories)
            else:
                logprobs = F.log_softmax(logits, dim=-1)
            if beam:
                next_tokens, source_rows = self._beam_step(
                    logprobs, sampled, sum_logprobs, beams, group, max_candidates
                )
                finished = all(len(b.finished) >= max_candidates for b in beams)
                if source_rows != list(range(rows)):
                    state.reorder(torch.tensor(source_rows, device=device))
            else:
                if temperature > 0:
                    chosen = torch.multinomial((logits / temperature).softmax(dim=-1), 1, generator=generator)[:, 0]
                else:
                    chosen = logits.argmax(dim=-1)
                chosen_logprobs = logprobs.gather(1, chosen[:, None])[:, 0].double().cpu()
                live_rows = torch.tensor(live)
                sum_logprobs[live_rows] += torch.where(active[live_rows], chosen_logprobs, 0.0)
                next_tokens = chosen.tolist()
                for position, token in enumerate(next_tokens):
                    row = live[position]
                    if done[row]:
                        next_tokens[position] = special.eot
                        continue
                    if token == special.eot:
                        done[row] = True
                        active[row] = False
                    else:
                        sampled[row].append(token)
                finished = all(done)
            step += 1
            if finished or step >= sample_len or sample_begin + step >= max_length:
                break
            if not beam:
                live, next_tokens = _drop_finished_windows(state, live, next_tokens, done, group)
            hidden, _ = self.model.decode(torch.tensor(next_tokens, device=device)[:, None], state)
            logits = self.model.decoder.logits(hidden[:, 0])
        if beam:
            candidates = self._finish_beams(beams, sampled, sum_logprobs, group)
        else:
            candidates = [
                [(tuple(sampled[w * group + j]), float(sum_logprobs[w * group + j])) for j in range(group)]
                for w in range(windows)
            ]
        results = []
        for window, options_of_window in enumerate(candidates):
            chosen_tokens, total = max(options_of_window, key=lambda c: self._rank(c, options.length_penalty))
            text = self.tokenizer.decode(chosen_tokens).strip()
            results.append(
                DecodingResult(
                    tokens=chosen_tokens,
                    text=text,
                    avg_logprob=total / (len(chosen_tokens) + 1),
                    no_speech_prob=float(no_speech[window]),
                    temperature=float(temperature),
                    compression_ratio=compression_ratio(text),
                )
            )
        return results

    @staticmethod
    def _rank(candidate: tuple[tuple[int, ...], float], length_penalty: float | None) -> float:
        tokens, total = candidate
        length = len(tokens)
        penalty = length if length_penalty is None else ((5 + length) / 6) ** length_penalty
        return total / penalty if penalty else total

    def _beam_step(
        self, logprobs: Tensor, sampled: list[list[int]], sum_logprobs: Tensor, beams: list[_Beam], group: int,
        max_candidates: int,
    ) -> tuple[list[int], list[int]]:  # fmt: skip
        """Expand every beam by its ``group + 1`` best tokens; keep the ``group`` best unfinished per window."""
        eot = self.tokenizer.special.eot
        values, indices = logprobs.topk(group + 1, dim=-1)
        totals = (sum_logprobs[:, None] + values.double()).tolist()
        indices_list = indices.tolist()
        next_tokens: list[int] = []
        sources: list[int] = []
        new_sampled: list[list[int]] = []
        new_sums: list[float] = []
        for window, state in enumerate(beams):
            scored: dict[tuple[int, ...], tuple[float, int]] = {}
            for j in range(group):
                row = window * group + j
                prefix = tuple(sampled[row])
                for total, token in zip(totals[row], indices_list[row], strict=True):
                    scored[(*prefix, token)] = (total, row)
            kept = 0
            for sequence in sorted(scored, key=lambda s: scored[s][0], reverse=True):
                total, row = scored[sequence]
                if sequence[-1] == eot:
                    if len(state.finished) < max_candidates:
                        state.finished.setdefault(sequence[:-1], total)
                    continue
                next_tokens.append(sequence[-1])
                sources.append(row)
                new_sampled.append(list(sequence))
                new_sums.append(total)
                kept += 1
                if kept == group:
                    break
        sampled[:] = new_sampled
        sum_logprobs.copy_(torch.tensor(new_sums, dtype=torch.float64))
        return next_tokens, sources

    @staticmethod
    def _finish_beams(
        beams: list[_Beam], sampled: list[list[int]], sum_logprobs: Tensor, group: int
    ) -> list[list[tuple[tuple[int, ...], float]]]:
        """Finished sequences per window, topped up with the best unfinished beams if too few finished."""
        out = []
        for window, state in enumerate(beams):
            finished = dict(state.finished)
            if len(finished) < group:
                rows = range(window * group, (window + 1) * group)
                for row in sorted(rows, key=lambda r: float(sum_logprobs[r]), reverse=True):
                    finished.setdefault(tuple(sampled[row]), float(sum_logprobs[row]))
                    if len(finished) >= group:
                        break
            out.append(list(finished.items()))
        return out

    # ----------------------------------------------------------------------------------------------- fallback
    def needs_fallback(self, result: DecodingResult, options: DecodingOptions) -> bool:
        """Rule 6: whether ``result`` should be decoded again at the next temperature."""
        low_logprob = options.logprob_threshold is not None and result.avg_logprob < options.logprob_threshold
        repetitive = (
            options.compression_ratio_threshold is not None
            and result.compression_ratio > options.compression_ratio_threshold
        )
        silent = (
            options.no_speech_threshold is not None
            and result.no_speech_prob > options.no_speech_threshold
            and low_logprob
        )
        return (repetitive or low_logprob) and not silent

    @staticmethod
    def is_silent(result: DecodingResult, options: DecodingOptions) -> bool:
        """No speech: probable ``<|nospeech|>`` and, with a log-probability threshold, improbable text."""
        if options.no_speech_threshold is None or result.no_speech_prob <= options.no_speech_threshold:
            return False
        return options.logprob_threshold is None or result.avg_logprob <= options.logprob_threshold

    def decode_with_fallback(
        self, audio_features: Tensor, initial: Sequence[Sequence[int]], options: DecodingOptions,
        generator: torch.Generator | None = None, cross: Sequence[tuple[Tensor, Tensor]] | None = None,
        forced: Sequence[int] | None = None,
    ) -> list[DecodingResult]:  # fmt: skip
        """Decode each window, falling back to higher temperatures per window (rule 6).

        Args:
            audio_features: float (windows, audio_context, W).
            cross: the windows' cross-attention keys and values (``model.decoder.cross_keys_values``),
                computed here once if not given and reused at every temperature.
            initial: per window its decoder input, all of one length.
            forced: per window the length of its forced prefix (see :meth:`decode`).
            options: temperatures, thresholds, beam size and samples.
            generator: random source for the sampling temperatures.

        Returns:
            One result per window: the first that passed, or the best of those that failed.
        """
        windows = audio_features.shape[0]
        tried: list[list[DecodingResult]] = [[] for _ in range(windows)]
        final: list[DecodingResult | None] = [None] * windows
        pending = list(range(windows))
        if cross is None:
            cross = self.model.decoder.cross_keys_values(audio_features)
        for temperature in options.temperatures:
            if not pending:
                break
            index = torch.tensor(pending, device=audio_features.device)
            subset = cross if len(pending) == windows else [(k[index], v[index]) for k, v in cross]
            results = self.decode(
                audio_features.index_select(0, index), [initial[i] for i in pending], options, temperature, generator,
                cross=subset, forced=[forced[i] for i in pending] if forced else None,
            )  # fmt: skip
            still = []
            for window, result in zip(pending, results, strict=True):
                tried[window].append(result)
                if self.needs_fallback(result, options):
                    still.append(window)
                else:
                    final[window] = result
            pending = still
        for window in pending:
            threshold = options.compression_ratio_threshold
            passing = [r for r in tried[window] if threshold is None or r.compression_ratio <= threshold]
            best = max(passing or tried[window], key=lambda r: r.avg_logprob)
            final[window] = dataclasses.replace(best, temperature=tried[window][-1].temperature)
        return [result for result in final if result is not None]


def penalise_repetitions(logits: Tensor, histories: Sequence[Sequence[int]], penalty: float) -> None:
    """Divide the logits (rows, vocab) of each row's earlier tokens by ``penalty``, multiply them where negative.

    The repetition penalty of the CTRL paper (Keskar et al. 2019, eq. 1 with the sign fix that
    CTranslate2 and Hugging Face apply); in place.
    """
    for row, history in enumerate(histories):
        if history:
            index = torch.tensor(sorted(set(history)), device=logits.device)
            values = logits[row, index]
            logits[row, index] = torch.where(values < 0, values * penalty, values / penalty)


def forbid_repeated_ngrams(logits: Tensor, histories: Sequence[Sequence[int]], size: int) -> None:
    """Set to ``-inf`` each row's tokens that would complete an n-gram of ``size`` tokens already in its history."""
    for row, history in enumerate(histories):
        if len(history) < size:
            continue
        last = tuple(history[len(history) - size + 1 :]) if size > 1 else ()
        banned = {
            history[k + size - 1] for k in range(len(history) - size + 1) if tuple(history[k : k + size - 1]) == last
        }
        if banned:
            logits[row, torch.tensor(sorted(banned), device=logits.device)] = -math.inf


def _drop_finished_windows(
    state: DecoderState, live: list[int], next_tokens: list[int], done: list[bool], group: int
) -> tuple[list[int], list[int]]:
    """Take the windows whose every row has finished out of ``state`` (greedy decoding and sampling).

    A batch of windows decodes until its longest transcript ends; a finished window's rows would
    otherwise be carried through every remaining step (attention over its audio, the vocabulary
    projection) only to be ignored. Their rows leave the state as soon as the whole window is done.

    Args:
        state: the batch's decoder state; its rows are ``live`` (original row numbers, in order).
        live: original row of each state row.
        next_tokens: next input token of each state row.
        done: per original row, whether it has finished.
        group: rows per window (samples).

    Returns:
        The remaining rows' original numbers and next tokens.
    """
    kept = [start for start in range(0, len(live), group) if not all(done[row] for row in live[start : start + group])]
    if len(kept) * group == len(live):
        return live, next_tokens
    state.keep_windows(torch.tensor([start // group for start in kept]))
    positions = [start + j for start in kept for j in range(group)]
    return [live[p] for p in positions], [next_tokens[p] for p in positions]


__all__ = [
    "DEFAULT_TEMPERATURES",
    "DecodingOptions",
    "DecodingResult",
    "WhisperDecoder",
    "compression_ratio",
    "forbid_repeated_ngrams",
    "penalise_repetitions",
]

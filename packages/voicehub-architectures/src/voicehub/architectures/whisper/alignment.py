"""Word timestamps from cross-attention: alignment heads + dynamic time warping (openai/whisper ``timing.py``, MIT).

For one window and its decoded text tokens:

1. Teacher-force ``start sequence + <|notimestamps|> + text + <|endoftext|>`` through the decoder and
   keep the cross-attention scores of the alignment heads (checkpoint metadata), over the encoder
   positions that hold audio (20 ms each).
2. Softmax over time, standardise each head over tokens, median-filter over time (7 positions),
   average the heads: a (tokens x time) similarity.
3. Dynamic time warping on the negated similarity gives a monotonic token -> time path; a word
   starts where the path first reaches its first token and ends where the next word starts.
4. Heuristics of the reference: words at sentence ends or after pauses are cut to at most twice the
   median word duration (itself at most 0.7 s), punctuation joins its neighbour word, a segment's
   first and last word are reconciled with the segment's own timestamps.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import torch
import torch.nn.functional as F
from torch import Tensor

from voicehub.architectures.whisper.model import Whisper
from voicehub.architectures.whisper.tokenizer import WhisperTokenizer

MEDIAN_FILTER_WIDTH = 7
"""Width of the median filter over time applied to the attention weights, in encoder positions."""

PREPEND_PUNCTUATIONS = "\"'“¿([{-"
"""Punctuation merged into the following word."""

APPEND_PUNCTUATIONS = "\"'.。,，!！?？:：”)]}、"  # noqa: RUF001
"""Punctuation merged into the preceding word."""

SENTENCE_END_MARKS = ".。!！?？"  # noqa: RUF001
"""Marks after which a long word is cut to twice the median duration."""

MAX_MEDIAN_DURATION_S = 0.7
"""Upper bound on the median word duration used by the heuristics, in seconds."""


@dataclasses.dataclass(slots=True)
class WordDraft:
    """A word being placed (mutable working record).

    Attributes:
        text: the word with its leading space and merged punctuation.
        tokens: its token ids.
        start_s, end_s: times in seconds.
        probability: mean probability of its tokens under the teacher-forced decoder (``None``: not
            computed, see :func:`find_alignments`).
    """

    text: str
    tokens: list[int]
    start_s: float
    end_s: float
    probability: float | None


@dataclasses.dataclass(slots=True)
class SegmentDraft:
    """A segment of one window being built (mutable working record).

    Attributes:
        start_s, end_s: times in seconds, absolute.
        tokens: its tokens, timestamps included.
        words: its words once aligned.
    """

    start_s: float
    end_s: float
    tokens: list[int]
    words: list[WordDraft] = dataclasses.field(default_factory=list)


def median_filter(x: Tensor, width: int) -> Tensor:
    """Median over a sliding window of ``width`` (odd) along the last axis, reflect-padded at the ends."""
    pad = width // 2
    if x.shape[-1] <= pad:
        return x
    shape = x.shape
    padded = F.pad(x.reshape(-1, 1, shape[-1]), (pad, pad), mode="reflect")
    return padded.unfold(-1, width, 1).sort(dim=-1).values[..., pad].reshape(shape)


def dtw_path(cost: npt.NDArray[np.float64]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Minimum-cost monotonic path through ``cost`` (tokens x frames) from (0, 0) to the last cell.

    Moves: diagonal, down (next token, same frame) or right (next frame, same token). Ties prefer
    right, then down, as in the reference; the accumulated cost is kept in float32 like it.
    Computed one anti-diagonal at a time (all cells of a diagonal depend only on the two before).

    Returns:
        ``(token_indices, frame_indices)`` along the path, both non-decreasing.
    """
    rows, cols = cost.shape
    acc = np.full((rows + 1, cols + 1), np.inf, dtype=np.float32)
    trace = np.full((rows + 1, cols + 1), -1, dtype=np.int8)
    acc[0, 0] = 0.0
    for diagonal in range(2, rows + cols + 1):
        i = np.arange(max(1, diagonal - cols), min(rows, diagonal - 1) + 1)
        j = diagonal - i
        c0, c1, c2 = acc[i - 1, j - 1], acc[i - 1, j], acc[i, j - 1]
        diag = (c0 < c1) & (c0 < c2)
        down = ~diag & (c1 < c0) & (c1 < c2)
        best = np.where(diag, c0, np.where(down, c1, c2))
        acc[i, j] = (cost[i - 1, j - 1] + best.astype(np.float64)).astype(np.float32)
        trace[i, j] = np.where(diag, 0, np.where(down, 1, 2))
    trace[0, :] = 2
    trace[:, 0] = 1
    i, j = rows, cols
    path = []
    while i > 0 or j > 0:
        path.append((i - 1, j - 1))
        move = trace[i, j]
        if move == 0:
            i, j = i - 1, j - 1
        elif move == 1:
            i -= 1
        else:
            j -= 1
    steps = np.array(path[::-1], dtype=np.int64).reshape(-1, 2)
    return steps[:, 0], steps[:, 1]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class AlignmentWindow:
    """One window to align (see :func:`find_alignments`).

    Attributes:
        sot_sequence: the window's start sequence (no prompt).
        text_tokens: its decoded text tokens (no timestamps).
        num_frames: mel frames of real audio in the window (100 per second).
        language: the window's language (words of unspaced languages are characters).
    """

    sot_sequence: tuple[int, ...]
    text_tokens: tuple[int, ...]
    num_frames: int
    language: str | None


@torch.inference_mode()
def find_alignments(
    model: Whisper,
    tokenizer: WhisperTokenizer,
    cross: Sequence[tuple[Tensor, Tensor]],
    windows: Sequence[AlignmentWindow],
    heads: Sequence[tuple[int, int]],
    *,
    word_probabilities: bool = True,
) -> list[list[WordDraft]]:
    """Steps 1-3 of the module docstring for a batch of windows, in one teacher-forced decoder pass.

    The windows' token sequences are right-padded to the longest (the causal self-attention keeps a
    position from seeing those after it, so padding changes no real position) and decoded as one
    batch over the cross-attention keys and values the decoding already computed.

    Args:
        model: the graph.
        tokenizer: its tokenizer.
        cross: the windows' cross-attention keys and values, one ``(key, value)`` per layer, each
            (len(windows), heads, audio_context, head_width) (``model.decoder.cross_keys_values``).
        windows: what to align in each window.
        heads: ``(layer, head)`` alignment heads.
        word_probabilities: compute each word's mean token probability (a full-vocabulary softmax per
            token); ``False`` leaves ``probability`` at ``None``.

    Returns:
        Per window, its words with start and end in seconds from the window's start (no words for a
        window without text or with a single word-less token run).
    """
    special = tokenizer.special
    sequences = [[*w.sot_sequence, special.no_timestamps, *w.text_tokens, special.eot] for w in windows]
    active = [k for k, w in enumerate(windows) if w.text_tokens]
    found: list[list[WordDraft]] = [[] for _ in windows]
    if not active:
        return found
    length = max(len(sequences[k]) for k in active)
    device = cross[0][0].device
    tokens = torch.tensor([sequences[k] + [special.eot] * (length - len(sequences[k])) for k in active], device=device)
    if len(active) < len(windows):
        index = torch.tensor(active, device=device)
        cross = [(key.index_select(0, index), value.index_select(0, index)) for key, value in cross]
    state = model.decoder.init_state(max_length=length, cross=cross)
    hidden, scores = model.decode(tokens, state, return_scores=True)
    for row, k in enumerate(active):
        window = windows[k]
        start = len(window.sot_sequence)  # the <|notimestamps|> position predicts the first text token
        count = len(window.text_tokens)
        probs: list[float] = []
        if word_probabilities:
            logits = model.decoder.logits(hidden[row, start : start + count])[:, : special.eot]
            probs = logits.softmax(dim=-1)[torch.arange(count), torch.tensor(window.text_tokens)].tolist()
        weights = torch.stack([scores[layer][row, head, : len(sequences[k])] for layer, head in heads]).float()
        found[k] = _words_from_weights(model, tokenizer, weights, window, probs if word_probabilities else None)
    return found


def _words_from_weights(
    model: Whisper,
    tokenizer: WhisperTokenizer,
    weights: Tensor,
    window: AlignmentWindow,
    probs: list[float] | None,
) -> list[WordDraft]:
    """Steps 2-3 for one window: alignment-head scores (heads, tokens, audio_context) -> words."""
    start = len(window.sot_sequence)
    weights = weights[:, :, : max(1, window.num_frames // 2)].softmax(dim=-1)
    std, mean = torch.std_mean(weights, dim=-2, keepdim=True, unbiased=False)
    weights = median_filter((weights - mean) / std, MEDIAN_FILTER_WIDTH)
    matrix = weights.mean(dim=0)[start:-1]
    token_index, frame_index = dtw_path(-matrix.double().cpu().numpy())
    words, word_tokens = tokenizer.split_to_word_tokens([*window.text_tokens, tokenizer.special.eot], window.language)
    if len(word_tokens) <= 1:
        return []
    boundaries = np.concatenate([[0], np.cumsum([len(t) for t in word_tokens[:-1]])])
    jumps = np.concatenate([[True], np.diff(token_index) > 0])
    jump_times = frame_index[jumps] * model.config.time_precision_s
    return [
        WordDraft(
            text=word,
            tokens=list(ids),
            start_s=float(jump_times[boundaries[k]]),
            end_s=float(jump_times[boundaries[k + 1]]),
            probability=None if probs is None else float(np.mean(probs[boundaries[k] : boundaries[k + 1]])),
        )
        for k, (word, ids) in enumerate(zip(words[:-1], word_tokens[:-1], strict=True))
    ]


def find_alignment(
    model: Whisper,
    tokenizer: WhisperTokenizer,
    audio_features: Tensor,
    sot_sequence: Sequence[int],
    text_tokens: Sequence[int],
    num_frames: int,
    heads: Sequence[tuple[int, int]],
    language: str | None,
    cross: Sequence[tuple[Tensor, Tensor]] | None = None,
) -> list[WordDraft]:
    """Steps 1-3 of the module docstring for one window (:func:`find_alignments` of one).

    Args:
        model: the graph.
        tokenizer: its tokenizer.
        audio_features: float (1, audio_context, W), the window's encoder output.
        sot_sequence: the window's start sequence (no prompt).
        text_tokens: its decoded text tokens (no timestamps).
        num_frames: mel frames of real audio in the window (100 per second).
        heads: ``(layer, head)`` alignment heads.
        language: the window's language (words of unspaced languages are characters).
        cross: the window's cross-attention keys and values if the decoding computed them already.

    Returns:
        Words with start and end in seconds from the window's start.
    """
    window = AlignmentWindow(
        sot_sequence=tuple(sot_sequence), text_tokens=tuple(text_tokens), num_frames=num_frames, language=language
    )
    if cross is None:
        with torch.inference_mode():
            cross = model.decoder.cross_keys_values(audio_features)
    return find_alignments(model, tokenizer, cross, [window], heads)[0]


def merge_punctuations(
    words: list[WordDraft], prepended: str = PREPEND_PUNCTUATIONS, appended: str = APPEND_PUNCTUATIONS
) -> None:
    """Join leading punctuation to the next word and trailing punctuation to the previous one (in place).

    Emptied words keep their place with ``text == ""`` and no tokens.
    """
    i, j = len(words) - 2, len(words) - 1
    while i >= 0:
        previous, following = words[i], words[j]
        if previous.text.startswith(" ") and previous.text.strip() in prepended:
            following.text = previous.text + following.text
            following.tokens = previous.tokens + following.tokens
            previous.text, previous.tokens = "", []
        else:
            j = i
        i -= 1
    i, j = 0, 1
    while j < len(words):
        previous, following = words[i], words[j]
        if not previous.text.endswith(" ") and following.text in appended:
            previous.text = previous.text + following.text
            previous.tokens = previous.tokens + following.tokens
            following.text, following.tokens = "", []
        else:
            i = j
        j += 1


def add_word_timestamps(
    segments: list[SegmentDraft],
    *,
    model: Whisper,
    tokenizer: WhisperTokenizer,
    audio_features: Tensor,
    sot_sequence: Sequence[int],
    window_start_s: float,
    num_frames: int,
    heads: Sequence[tuple[int, int]],
    language: str | None,
    last_speech_s: float,
    segment_times_from_words: bool = False,
    cross: Sequence[tuple[Tensor, Tensor]] | None = None,
) -> float:
    """Align the words of one window's segments and reconcile them with the segment times (step 4).

    Args:
        segments: the window's segments (absolute times); their ``words`` are filled and their
            ``start_s`` / ``end_s`` may move to the first / last word.
        model, tokenizer, audio_features, sot_sequence, num_frames, heads, language: see
            :func:`find_alignment`.
        window_start_s: absolute time of the window's first frame.
        last_speech_s: end of the last word before this window (for the pause heuristic).
        segment_times_from_words: ``True``: each segment spans its first word's start to its last
            word's end, whatever its timestamp tokens said (for a window decoded without the text
            before it, whose timestamp tokens can fall on whole seconds); ``False``: the reference
            reconciliation (a word more than 0.5 s outside its segment's timestamps is pulled in).
        cross: the window's cross-attention keys and values if the decoding computed them already.

    Returns:
        The end of the last word placed (``last_speech_s`` if none).
    """
    if not segments:
        return last_speech_s
    text_tokens = segment_text_tokens(segments, tokenizer)
    words = find_alignment(
        model, tokenizer, audio_features, sot_sequence, text_tokens, num_frames, heads, language, cross
    )
    return place_words(
        segments, words, tokenizer=tokenizer, window_start_s=window_start_s, last_speech_s=last_speech_s,
        step_s=model.config.time_precision_s, segment_times_from_words=segment_times_from_words,
    )  # fmt: skip


def segment_text_tokens(segments: Sequence[SegmentDraft], tokenizer: WhisperTokenizer) -> tuple[int, ...]:
    """The text tokens of a window's segments, in order (timestamps and special tokens left out)."""
    eot = tokenizer.special.eot
    return tuple(t for segment in segments for t in segment.tokens if t < eot)


def place_words(
    segments: list[SegmentDraft],
    words: list[WordDraft],
    *,
    tokenizer: WhisperTokenizer,
    window_start_s: float,
    last_speech_s: float,
    step_s: float,
    segment_times_from_words: bool = False,
) -> float:
    """Step 4 for one window: put its aligned words into its segments (see :func:`add_word_timestamps`).

    Args:
        segments: the window's segments; their ``words`` are filled, their times may move.
        words: the window's words from :func:`find_alignments`, times from the window's start.
        tokenizer: the tokenizer (for the end-of-text id).
        window_start_s, last_speech_s, segment_times_from_words: see :func:`add_word_timestamps`.
        step_s: one encoder position, in seconds (``config.time_precision_s``).

    Returns:
        The end of the last word placed (``last_speech_s`` if none).
    """
    if not segments:
        return last_speech_s
    eot = tokenizer.special.eot
    per_segment = [[t for t in segment.tokens if t < eot] for segment in segments]
    durations = np.array([w.end_s - w.start_s for w in words])
    durations = durations[durations.nonzero()]
    median = min(MAX_MEDIAN_DURATION_S, float(np.median(durations))) if len(durations) else 0.0
    longest = median * 2
    if len(durations):
        for k in range(1, len(words)):
            if words[k].end_s - words[k].start_s > longest:
                if words[k].text in SENTENCE_END_MARKS:
                    words[k].end_s = words[k].start_s + longest
                elif words[k - 1].text in SENTENCE_END_MARKS:
                    words[k].start_s = words[k].end_s - longest
    merge_punctuations(words)
    index = 0
    for segment, tokens in zip(segments, per_segment, strict=True):
        placed: list[WordDraft] = []
        consumed = 0
        while index < len(words) and consumed < len(tokens):
            word = words[index]
            if word.text:
                placed.append(
                    WordDraft(
                        text=word.text,
                        tokens=word.tokens,
                        start_s=round(window_start_s + word.start_s, 2),
                        end_s=round(window_start_s + word.end_s, 2),
                        probability=word.probability,
                    )
                )
            consumed += len(word.tokens)
            index += 1
        if placed:
            first, last = placed[0], placed[-1]
            # The first word after a pause, when too long, is cut to twice the median duration.
            if first.end_s - last_speech_s > median * 4 and (
                first.end_s - first.start_s > longest
                or (len(placed) > 1 and placed[1].end_s - first.start_s > longest * 2)
            ):
                if len(placed) > 1 and placed[1].end_s - placed[1].start_s > longest:
                    boundary = max(placed[1].end_s / 2, placed[1].end_s - longest)
                    first.end_s = placed[1].start_s = boundary
                first.start_s = max(0.0, first.end_s - longest)
            if not segment_times_from_words:
                if segment.start_s < first.end_s and segment.start_s - 0.5 > first.start_s:
                    first.start_s = max(0.0, min(first.end_s - median, segment.start_s))
                else:
                    segment.start_s = first.start_s
                if segment.end_s > last.start_s and segment.end_s + 0.5 < last.end_s:
                    last.end_s = max(last.start_s + median, segment.end_s)
                else:
                    segment.end_s = last.end_s
            separate_words(placed, step_s=step_s)
            if segment_times_from_words:
                segment.start_s, segment.end_s = first.start_s, last.end_s
            last_speech_s = segment.end_s
        segment.words = placed
    return last_speech_s


def separate_words(words: list[WordDraft], *, step_s: float) -> None:
    """Give zero-length words one time step, taken from a neighbour in the same segment (in place).

    Dynamic time warping can map two consecutive words to the same position, which the reference
    leaves as a word of zero length (``start == end == next start``). Here such a word takes one
    step (20 ms) from the following word, or from the preceding one, when that word stays longer
    than one step; the segment's first start and last end never move. Afterwards word starts are
    strictly increasing wherever a neighbour had time to spare.
    """
    for k, word in enumerate(words):
        if word.end_s > word.start_s:
            continue
        following = words[k + 1] if k + 1 < len(words) else None
        preceding = words[k - 1] if k > 0 else None
        if following is not None and following.start_s == word.end_s and following.end_s - following.start_s > step_s:
            word.end_s = following.start_s = round(word.start_s + step_s, 2)
        elif preceding is not None and preceding.end_s == word.start_s and preceding.end_s - preceding.start_s > step_s:
            word.start_s = preceding.end_s = round(word.end_s - step_s, 2)


__all__ = [
    "APPEND_PUNCTUATIONS",
    "MAX_MEDIAN_DURATION_S",
    "MEDIAN_FILTER_WIDTH",
    "PREPEND_PUNCTUATIONS",
    "SENTENCE_END_MARKS",
    "AlignmentWindow",
    "SegmentDraft",
    "WordDraft",
    "add_word_timestamps",
    "dtw_path",
    "find_alignment",
    "find_alignments",
    "median_filter",
    "merge_punctuations",
    "place_words",
    "segment_text_tokens",
    "separate_words",
]

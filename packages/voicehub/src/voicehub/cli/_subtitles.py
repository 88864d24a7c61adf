"""Subtitle cues from ASR segments, cut as openai-whisper's ``SubtitlesWriter.iterate_result`` cuts them.

A port of ``whisper/utils.py`` (openai-whisper v20250625, MIT), reading :class:`~voicehub.core.ASRSegment`
records instead of the result dict, lazily (a cue is yielded as soon as the segments that close it
have arrived, so SRT and VTT can be printed while the model decodes):

* without timed words, one cue per segment: its span and its stripped text, ``-->`` written ``->``;
* with timed words, cues are built from the words (their spelling with the leading space,
  :meth:`~voicehub.core.ASRSegment.spelled_words`), spanning the first word's start to the last
  word's end: one cue per segment by default, cut every ``max_words_per_line`` words;
  with both ``max_line_width`` and ``max_line_count``, segments are ignored and lines are filled to
  ``max_line_width`` characters, ``max_line_count`` lines per cue, a new cue after a pause of more
  than 3 s; ``max_line_width`` alone breaks lines inside a segment's cue;
* ``highlight_words``: one cue per word, underlining it (``<u>word</u>``) in its cue's text, with
  the cue's text shown alone over any gap between words.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Iterator

from voicehub.core.outputs import ASRSegment

LONG_PAUSE_S = 3.0
"""A pause between words longer than this starts a new cue when segments are not kept (openai-whisper's)."""

_UNLIMITED = 1000  # openai-whisper's stand-in for "no limit" on line width and words per line


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class SubtitleOptions:
    """How to cut subtitle cues (openai-whisper's ``--max_line_width`` ... ``--highlight_words``).

    Attributes:
        max_line_width: characters in a line before it breaks; ``None``: no limit.
        max_line_count: lines in a cue; ``None``: no limit (with ``max_line_width``, cues then
            follow the segments).
        max_words_per_line: words in a cue of one segment (no effect when both limits above are
            given); ``None``: no limit.
        highlight_words: one cue per word, the word underlined in its cue's text.
    """

    max_line_width: int | None = None
    max_line_count: int | None = None
    max_words_per_line: int | None = None
    highlight_words: bool = False

    def __post_init__(self) -> None:
        for name in ("max_line_width", "max_line_count", "max_words_per_line"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise ValueError(f"subtitle option {name}: expected an integer >= 1 or None, got {value!r}")

    @property
    def reshapes(self) -> bool:
        """Whether these options change cues (they then need timed words)."""
        return self != SubtitleOptions()


Cue = tuple[float, float, str]
"""One subtitle: start and end in seconds, and its text (lines separated by ``\\n``)."""


def _ms(seconds: float) -> int:
    return round(seconds * 1000)


def subtitle_cues(
    segments: Iterable[ASRSegment], options: SubtitleOptions | None = None, *, timed: bool | None = None
) -> Iterator[Cue]:
    """The cues of ``segments`` in order (see the module docstring for the rules).

    Args:
        segments: in time order; consumed lazily.
        options: how to cut them; ``None``: one cue per segment (or per segment's words).
        timed: whether to build cues from the words (openai-whisper: whether its segments carry
            ``words``); ``None`` decides on the first segment (whether it has words).

    Yields:
        ``(start_s, end_s, text)`` per cue.
    """
    options = options or SubtitleOptions()
    iterator = iter(segments)
    first = next(iterator, None)
    if first is None:
        return
    if timed is None:
        timed = bool(first.words)

    def chained() -> Iterator[ASRSegment]:
        yield first
        yield from iterator

    if not timed:
        for segment in chained():
            yield segment.start_s, segment.end_s, segment.text.strip().replace("-->", "->")
        return
    for subtitle in _subtitles(chained(), options):
        start_s, end_s = subtitle[0][1], subtitle[-1][2]
        text = "".join(word for word, _, _ in subtitle)
        if not options.highlight_words:
            yield start_s, end_s, text
            continue
        last_s = start_s
        spelled = [word for word, _, _ in subtitle]
        for index, (_, word_start_s, word_end_s) in enumerate(subtitle):
            if _ms(last_s) != _ms(word_start_s):
                yield last_s, word_start_s, text
            underlined = "".join(
                re.sub(r"^(\s*)(.*)$", r"\1<u>\2</u>", word) if j == index else word for j, word in enumerate(spelled)
            )
            yield word_start_s, word_end_s, underlined
            last_s = word_end_s


def _subtitles(segments: Iterable[ASRSegment], options: SubtitleOptions) -> Iterator[list[tuple[str, float, float]]]:
    """openai-whisper's ``iterate_subtitles``: lists of ``(spelling, start_s, end_s)`` words, one per cue."""
    preserve_segments = options.max_line_count is None or options.max_line_width is None
    max_line_width = options.max_line_width or _UNLIMITED
    max_words_per_line = options.max_words_per_line or _UNLIMITED
    line_len = 0
    line_count = 1
    subtitle: list[tuple[str, float, float]] = []
    last_s: float | None = None  # openai-whisper starts it at the first word's start
    for segment in segments:
        words = list(zip(segment.spelled_words(), segment.words, strict=True))
        chunk_index = 0
        words_count = max_words_per_line
        while chunk_index < len(words):
            remaining = len(words) - chunk_index
            if max_words_per_line > remaining:
                words_count = remaining
            for i, (spelled, timing) in enumerate(words[chunk_index : chunk_index + words_count]):
                word = spelled
                if last_s is None:
                    last_s = timing.start_s
                long_pause = not preserve_segments and timing.start_s - last_s > LONG_PAUSE_S
                has_room = line_len + len(word) <= max_line_width
                seg_break = i == 0 and len(subtitle) > 0 and preserve_segments
                if line_len > 0 and has_room and not long_pause and not seg_break:
                    line_len += len(word)  # line continuation
                else:
                    word = word.strip()  # a new line
                    if (
                        len(subtitle) > 0
                        and options.max_line_count is not None
                        and (long_pause or line_count >= options.max_line_count)
                    ) or seg_break:
                        yield subtitle  # a new cue
                        subtitle = []
                        line_count = 1
                    elif line_len > 0:
                        line_count += 1  # a line break
                        word = "\n" + word
                    line_len = len(word.strip())
                subtitle.append((word, timing.start_s, timing.end_s))
                last_s = timing.start_s
            chunk_index += max_words_per_line
    if subtitle:
        yield subtitle


__all__ = ["LONG_PAUSE_S", "Cue", "SubtitleOptions", "subtitle_cues"]

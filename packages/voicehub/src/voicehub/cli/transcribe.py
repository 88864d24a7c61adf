"""``voicehub transcribe``: speech to text for files, directories or standard input, in the formats of the
openai-whisper command line (txt, json, srt, vtt, tsv)."""

from __future__ import annotations

import dataclasses
import logging
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import click
import numpy as np

from voicehub.cli._inputs import (
    SAMPLE_RATE_HELP,
    audio_input,
    check_raw_inputs,
    cli_model_type,
    default_model_help,
    expand_audio_inputs,
    resolve_cli_options,
)
from voicehub.cli._options import CommonOptions, common_options
from voicehub.cli._outputs import echo_json_line, input_ids, write_destination
from voicehub.cli._subtitles import SubtitleOptions, subtitle_cues
from voicehub.core import strict_json
from voicehub.core.audio import AudioLike, Waveform, display_path, is_raw_pcm, load_audio, pcm_to_float
from voicehub.core.audio_stream import audio_file_info
from voicehub.core.errors import AudioDecodeError, InferenceOptionError, VoiceHubError
from voicehub.core.files import check_output_directory
from voicehub.core.outputs import ASROutput, ASRSegment
from voicehub.core.tasks import SpeechTask

_LOG = logging.getLogger(__name__)


class _Unset:
    """The value of a threshold flag that was not given (``None`` is a value: "never")."""

    def __repr__(self) -> str:
        return "UNSET"


UNSET = _Unset()


class _OptionalFloat(click.ParamType[float | None, object]):
    """A float, or ``None`` written ``None``/``none`` (openai-whisper's ``optional_float``)."""

    name = "float|None"

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> float | None:
        if value is None or isinstance(value, (float, _Unset)):
            return value  # type: ignore[return-value]
        if str(value).strip().lower() == "none":
            return None
        try:
            return float(str(value))
        except ValueError:
            self.fail(f"expected a number or None, got {value!r}", param, ctx)


OPTIONAL_FLOAT = _OptionalFloat()

STDIN = "-"
"""The argument naming audio on standard input (any format libsndfile reads; outputs are named ``stdin``).

Unlike ``vad`` and ``embed``, where ``-`` reads a list of paths, ``transcribe -`` reads the audio
itself, as a pipe from a recorder or ``ffmpeg ... -f wav -`` would give it.
"""


# --------------------------------------------------------------------------- formats
def _clock(seconds: float, separator: str) -> str:
    """``HH:MM:SS<separator>mmm`` (rounded to the millisecond)."""
    total_ms = round(seconds * 1000)
    hours, rest = divmod(total_ms, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    secs, ms = divmod(rest, 1000)
    return f"{hours:02d}:{minutes:02d}:{secs:02d}{separator}{ms:03d}"


def _srt_block(index: int, start_s: float, end_s: float, text: str) -> str:
    return f"{index}\n{_clock(start_s, ',')} --> {_clock(end_s, ',')}\n{text}\n"


def _vtt_block(start_s: float, end_s: float, text: str) -> str:
    return f"{_clock(start_s, '.')} --> {_clock(end_s, '.')}\n{text}\n"


def srt_cue(index: int, segment: ASRSegment) -> str:
    """One SubRip cue of a segment: its number (from 1), ``HH:MM:SS,mmm --> HH:MM:SS,mmm`` and the text
    (``-->`` in the text written ``->``, as openai-whisper does)."""
    (start_s, end_s, text), *_ = subtitle_cues([segment], timed=False)
    return _srt_block(index, start_s, end_s, text)


def vtt_cue(segment: ASRSegment) -> str:
    """One WebVTT cue of a segment: ``HH:MM:SS.mmm --> HH:MM:SS.mmm`` and the text."""
    (start_s, end_s, text), *_ = subtitle_cues([segment], timed=False)
    return _vtt_block(start_s, end_s, text)


def tsv_row(segment: ASRSegment) -> str:
    """One tab-separated row: ``start``, ``end`` (integer milliseconds) and ``text``."""
    return f"{round(segment.start_s * 1000)}\t{round(segment.end_s * 1000)}\t{segment.text.replace(chr(9), ' ')}\n"


VTT_HEADER = "WEBVTT\n\n"
TSV_HEADER = "start\tend\ttext\n"


def _has_words(output: ASROutput) -> bool:
    """Whether cues come from words: the output has timed words (its whisper JSON then has ``words``)."""
    return any(segment.words for segment in output.segments)


def format_txt(output: ASROutput, subtitles: SubtitleOptions | None = None) -> str:
    """One line per segment."""
    return "".join(f"{segment.text}\n" for segment in output.segments)


def format_srt(output: ASROutput, subtitles: SubtitleOptions | None = None) -> str:
    """SubRip: numbered cues, ``HH:MM:SS,mmm --> HH:MM:SS,mmm``, a blank line between cues.

    Cues are cut as openai-whisper's ``WriteSRT`` cuts them (:mod:`voicehub.cli._subtitles`): one per
    segment, or from the words when the output has them (shaped by ``subtitles``).
    """
    cues = subtitle_cues(output.segments, subtitles, timed=_has_words(output))
    return "\n".join(_srt_block(index, *cue) for index, cue in enumerate(cues, 1))


def format_vtt(output: ASROutput, subtitles: SubtitleOptions | None = None) -> str:
    """WebVTT: the ``WEBVTT`` header, then ``HH:MM:SS.mmm --> HH:MM:SS.mmm`` cues (cut as :func:`format_srt`)."""
    cues = subtitle_cues(output.segments, subtitles, timed=_has_words(output))
    return VTT_HEADER + "\n".join(_vtt_block(*cue) for cue in cues)


def format_tsv(output: ASROutput, subtitles: SubtitleOptions | None = None) -> str:
    """Tab-separated ``start``, ``end`` (integer milliseconds) and ``text``, with a header (openai-whisper's)."""
    return TSV_HEADER + "".join(tsv_row(s) for s in output.segments)


def echo_segments(
    stream: Iterable[ASRSegment], output_format: str, prefix: str, subtitles: SubtitleOptions | None = None
) -> None:
    """Print segments on stdout as they come, in ``output_format`` (txt, srt, vtt or tsv).

    The bytes printed equal the whole document's (``txt``: the transcript on one line after
    ``prefix``, as for a finished output; the others: :data:`FORMATS`' writer). SRT and VTT cues
    are cut by :func:`~voicehub.cli._subtitles.subtitle_cues` (from the words when the first segment
    has them), each printed once the segments that close it have arrived.
    """
    if output_format == "txt":
        click.echo(prefix, nl=False)
        try:
            texts = (text for s in stream if (text := s.text.strip()))
            for index, text in enumerate(texts):
                click.echo(f" {text}" if index else text, nl=False)
        finally:
            click.echo("")  # a failure part-way still ends the line
        return
    if output_format == "tsv":
        click.echo(TSV_HEADER, nl=False)
        for segment in stream:
            click.echo(tsv_row(segment), nl=False)
        return
    if output_format == "vtt":
        click.echo(VTT_HEADER, nl=False)
    for index, cue in enumerate(subtitle_cues(stream, subtitles), 1):
        block = _srt_block(index, *cue) if output_format == "srt" else _vtt_block(*cue)
        click.echo(block if index == 1 else "\n" + block, nl=False)


def format_json(output: ASROutput, subtitles: SubtitleOptions | None = None) -> str:
    """openai-whisper's result as strict JSON (:meth:`~voicehub.core.ASROutput.to_whisper_dict`), indented.

    Tools that read whisper's JSON (its own ``WriteSRT``...) read it; VoiceHub's own fields
    (``language_probability``, ``duration``, ``source``, ``metadata``) are added beside whisper's.
    """
    return strict_json.dumps(output.to_whisper_dict(), indent=2) + "\n"


FORMATS: dict[str, Callable[[ASROutput, SubtitleOptions | None], str]] = {
    "txt": format_txt,
    "json": format_json,
    "srt": format_srt,
    "vtt": format_vtt,
    "tsv": format_tsv,
}
"""Output format name -> writer (the output, and how to cut srt/vtt cues); ``all`` writes every one."""

STREAMED_FORMATS = ("txt", "srt", "vtt", "tsv")
"""Formats printed on stdout segment by segment as the model decodes them (json is printed whole)."""


class _NumberList(click.ParamType[tuple[Any, ...]]):
    """A comma-separated list of numbers (openai-whisper's ``--suppress_tokens -1`` and ``--clip_timestamps 0,30``)."""

    name = "list"

    def __init__(self, kind: type[int] | type[float], what: str) -> None:
        self.kind = kind
        self.what = what

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> tuple[Any, ...]:
        if isinstance(value, tuple):
            return value
        try:
            return tuple(self.kind(item) for item in str(value).split(",") if item.strip())
        except ValueError:
            self.fail(f"expected comma-separated {self.what} such as 1,2,3, got {value!r}", param, ctx)


# --------------------------------------------------------------------------- inputs
def expand_inputs(arguments: Sequence[str]) -> list[Path | None]:
    """Files of the arguments, as :func:`~voicehub.cli._inputs.expand_audio_inputs` expands them.

    ``-`` (exactly; ``./-`` is a file named ``-``) stands for audio on standard input and comes
    back as ``None``, at its place in the order, once.

    Raises:
        click.UsageError: for ``-`` given twice, a glob that matches nothing or a directory without
            audio files.
    """
    if sum(argument == STDIN for argument in arguments) > 1:
        raise click.UsageError("'-' (audio from standard input) can be given only once")
    files: list[Path | None] = []
    for argument in arguments:
        for path in [None] if argument == STDIN else expand_audio_inputs([argument]):
            if path is None or path not in files:
                files.append(path)
    return files


def _read_stdin(sample_rate: int | None) -> AudioLike:
    """The audio piped on standard input: raw s16le at ``--sample-rate``, else any format load_audio reads.

    Raises:
        AudioDecodeError: naming standard input, what was expected and, for a list of paths, what
            to do instead.
    """
    data = sys.stdin.buffer.read()
    if not data:
        raise AudioDecodeError("standard input is empty; pipe audio into it (e.g. `< talk.wav`)", source="stdin")
    if sample_rate is not None:  # headerless PCM, as `ffmpeg -f s16le -` or `arecord -t raw` give it
        if len(data) % 2:
            raise AudioDecodeError(
                f"standard input: {len(data)} bytes is not a whole number of 16-bit samples; with --sample-rate "
                "it is read as s16le mono PCM",
                source="stdin",
            )
        samples = pcm_to_float(np.frombuffer(data, dtype="<i2"), source="stdin")
        return Waveform(samples=samples, sample_rate=sample_rate, source="stdin")
    with tempfile.TemporaryDirectory(prefix="voicehub-stdin-") as folder:
        staged = Path(folder) / "stdin"
        staged.write_bytes(data)
        try:
            return load_audio(staged)
        except AudioDecodeError as err:
            hint = ""
            first_line = data[:4096].split(b"\n", 1)[0].strip()
            if first_line and Path(os.fsdecode(first_line)).exists():
                hint = (
                    "; it looks like a list of paths: for transcribe, '-' is the audio itself, so pass the paths as "
                    "arguments (e.g. `xargs voicehub transcribe`)"
                )
            reason = str(err).replace(str(staged), "standard input").split(": ", 1)[-1]
            raise AudioDecodeError(
                f"standard input ({len(data)} bytes): {reason}{hint}; with --sample-rate HZ it is read as raw s16le "
                "mono PCM",
                source="stdin",
            ) from err


def _check_checkpoint_options(model: Any, options: Any, language: str | None, task: str | None) -> Any:
    """The options the loaded checkpoint judges (language, task), once before any file: a usage error.

    Raises:
        click.UsageError: naming the flag (``--language``, ``--task``) and what this checkpoint accepts.
    """
    try:
        return model.check_options(options)
    except InferenceOptionError as err:
        flag = ""
        if language is not None and "language" in str(err):
            flag = f"--language {language}: "
        elif task is not None and "task" in str(err):
            flag = f"--task {task}: "
        raise click.UsageError(flag + str(err)) from err


def _check_subtitle_formats(subtitles: SubtitleOptions, formats: Sequence[str], *, as_jsonl: bool) -> None:
    """The subtitle options shape srt and vtt only: refuse them when neither is written.

    Raises:
        click.UsageError: naming the flags given and the formats that use them.
    """
    if not as_jsonl and {"srt", "vtt"} & set(formats):
        return
    given = [
        flag
        for flag, value in (
            ("--max-line-width", subtitles.max_line_width),
            ("--max-line-count", subtitles.max_line_count),
            ("--max-words-per-line", subtitles.max_words_per_line),
            ("--highlight-words", subtitles.highlight_words or None),
        )
        if value is not None
    ]
    written = "--jsonl" if as_jsonl else "-f " + ",".join(formats)
    raise click.UsageError(
        f"{' and '.join(given)} cut srt and vtt subtitles, but {written} writes neither; add -f srt, -f vtt or "
        "-f all, or drop the option"
    )


def _duration_s(path: Path | None, sample_rate: int | None) -> float:
    """Length of a file in seconds for the progress bar (0 when unknown: standard input, undecodable)."""
    if path is None:
        return 0.0
    if is_raw_pcm(path):
        return path.stat().st_size / 2 / sample_rate if sample_rate and path.is_file() else 0.0
    try:
        return audio_file_info(path).duration_s
    except (VoiceHubError, OSError):
        return 0.0  # reported, named, when the file is transcribed


def _write(output: ASROutput, name: str, directory: Path, formats: Sequence[str], subtitles: SubtitleOptions) -> None:
    for fmt in formats:
        target = directory / f"{name}.{fmt}"
        target.parent.mkdir(parents=True, exist_ok=True)
        write_destination(target, FORMATS[fmt](output, subtitles), what=f"{fmt} output")


TRANSCRIBE_INPUTS_HELP = (
    "INPUT is an audio file (wav, flac, ogg, mp3; m4a, mp4, webm with voicehub[av]), a directory (searched "
    "recursively for audio files), a quoted glob ('clips/*.wav'), or - for audio piped on standard input "
    "(any format load_audio reads; raw s16le PCM when --sample-rate is given)."
)

_DEFAULT_MODEL = default_model_help(SpeechTask.AUTOMATIC_SPEECH_RECOGNITION)


@click.command("transcribe", epilog=TRANSCRIBE_INPUTS_HELP)
@click.argument("inputs", nargs=-1, required=True, metavar="FILE|DIR|-...")
@click.option(
    "--model",
    "model_type",
    default=None,
    metavar="MODEL_TYPE",
    help=f"A registered ASR model type or alias (default: {_DEFAULT_MODEL}; whisper-base for Whisper base).",
)
@click.option("--source", default=None, help="Checkpoint source (file, directory, hf:owner/name).")
@click.option("--language", default=None, help="Language code of the speech (default: detected where possible).")
@click.option("--task", type=click.Choice(["transcribe", "translate"]), default=None, help="Transcribe or translate.")
@click.option(
    "--beam-size",
    "--beam_size",
    "beam_size",
    type=int,
    default=None,
    help="Beams at temperature 0 (default 1: greedy).",
)
@click.option(
    "--best-of",
    "--best_of",
    "best_of",
    type=int,
    default=None,
    help="Samples drawn at each temperature above 0; the most probable is kept (default 5).",
)
@click.option(
    "--patience",
    type=float,
    default=None,
    help="Beam search stops once round(beam_size * patience) sequences have finished (default 1.0).",
)
@click.option(
    "--initial-prompt",
    "--initial_prompt",
    "initial_prompt",
    default=None,
    metavar="TEXT",
    help="Text given to the first window as previous text (vocabulary, spelling, style).",
)
@click.option(
    "--condition-on-previous-text/--no-condition-on-previous-text",
    "--condition_on_previous_text/--no_condition_on_previous_text",
    "condition_on_previous_text",
    default=None,
    help="Give each window of the sequential long form (--no-vad) the text so far (default: on).",
)
@click.option(
    "--compression-ratio-threshold",
    "--compression_ratio_threshold",
    "compression_ratio_threshold",
    type=OPTIONAL_FLOAT,
    default=UNSET,
    metavar="RATIO|None",
    help="Retry at the next temperature when the text's gzip compression ratio is above this (default 2.4; None: "
    "never).",
)
@click.option(
    "--logprob-threshold",
    "--logprob_threshold",
    "logprob_threshold",
    type=OPTIONAL_FLOAT,
    default=UNSET,
    metavar="LOGPROB|None",
    help="Retry at the next temperature when the average token log-probability is below this (default -1.0; None: "
    "never).",
)
@click.option(
    "--no-speech-threshold",
    "--no_speech_threshold",
    "no_speech_threshold",
    type=OPTIONAL_FLOAT,
    default=UNSET,
    metavar="PROB|None",
    help="A window is silence when its no-speech probability is above this and its log-probability below "
    "--logprob-threshold (default 0.6; None: never).",
)
@click.option(
    "--prefix", default=None, metavar="TEXT", help="Text the transcript of the first window starts with (forced)."
)
@click.option(
    "--hotwords",
    default=None,
    metavar="TEXT",
    help="Words to bias recognition toward, given to every window as previous text (not with --prefix).",
)
@click.option(
    "--suppress-tokens",
    "--suppress_tokens",
    "suppress_tokens",
    type=_NumberList(int, "token ids"),
    default=None,
    metavar="IDS",
    help="Comma-separated token ids never written; -1 stands for the model's non-speech symbols (default -1; "
    "'' suppresses none of them).",
)
@click.option(
    "--repetition-penalty",
    "--repetition_penalty",
    "repetition_penalty",
    type=float,
    default=None,
    help="Above 1 makes tokens already written in a window less likely (default 1: off).",
)
@click.option(
    "--no-repeat-ngram-size",
    "--no_repeat_ngram_size",
    "no_repeat_ngram_size",
    type=int,
    default=None,
    help="Forbid repeating any n-gram of this many tokens in a window (default 0: off).",
)
@click.option(
    "--clip-timestamps",
    "--clip_timestamps",
    "clip_timestamps",
    type=_NumberList(float, "seconds"),
    default=None,
    metavar="S,E,...",
    help="Comma-separated start,end,... seconds of the stretches to transcribe (an odd count runs to the end); "
    "needs --no-vad.",
)
@click.option(
    "--hallucination-silence-threshold",
    "--hallucination_silence_threshold",
    "hallucination_silence_threshold",
    type=float,
    default=None,
    metavar="SECONDS",
    help="With --word-timestamps and --no-vad: skip silences longer than this before a likely hallucination.",
)
@click.option("--temperature", type=float, default=None, help="A single decoding temperature (no fallback).")
@click.option(
    "--word-timestamps",
    "--word_timestamps",
    "word_timestamps",
    is_flag=True,
    help="Add word times (kept in the json output; srt/vtt cues then follow the words).",
)
@click.option(
    "--batch-size", "--batch_size", "batch_size", type=int, default=None, help="Windows decoded together (default 8)."
)
@click.option(
    "--vad/--no-vad",
    default=None,
    help="Long inputs: cut by the voice-activity detector and batched (default), or --no-vad for the model's "
    "sequential long-form algorithm.",
)
@click.option(
    "--output-format",
    "--output_format",
    "-f",
    "output_format",
    type=click.Choice([*FORMATS, "all"]),
    default="txt",
    show_default=True,
    help="Format of the transcripts: printed on stdout, or one file per input and format with --output-dir.",
)
@click.option(
    "--output-dir",
    "--output_dir",
    "-o",
    "output_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Write <name>.<format> files into this directory (created if missing; existing files of those names "
    "are replaced). Without it (or with -o -) nothing is written to disk and the transcripts go to stdout.",
)
@click.option(
    "--jsonl",
    "as_jsonl",
    is_flag=True,
    help="Print one strict-JSON object per segment ({path, segment}) as it is decoded, then one per input (its "
    "path and the whole transcript) as it finishes.",
)
@click.option(
    "--max-line-width",
    "--max_line_width",
    "max_line_width",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="srt/vtt: characters in a line before it breaks (as openai-whisper; needs word times, so it turns "
    "--word-timestamps on).",
)
@click.option(
    "--max-line-count",
    "--max_line_count",
    "max_line_count",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="srt/vtt: lines per cue; with --max-line-width, cues no longer follow the segments (turns "
    "--word-timestamps on).",
)
@click.option(
    "--max-words-per-line",
    "--max_words_per_line",
    "max_words_per_line",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="srt/vtt: words per cue of a segment; no effect with both --max-line-width and --max-line-count "
    "(turns --word-timestamps on).",
)
@click.option(
    "--highlight-words",
    "--highlight_words",
    "highlight_words",
    is_flag=True,
    help="srt/vtt: one cue per word, underlined in its line (turns --word-timestamps on).",
)
@click.option(
    "--sample-rate", "--sample_rate", "sample_rate", type=int, default=None, metavar="HZ", help=SAMPLE_RATE_HELP
)
@common_options
def transcribe_command(
    inputs: tuple[str, ...],
    model_type: str | None,
    source: str | None,
    language: str | None,
    task: str | None,
    beam_size: int | None,
    best_of: int | None,
    patience: float | None,
    initial_prompt: str | None,
    condition_on_previous_text: bool | None,
    compression_ratio_threshold: float | _Unset | None,
    logprob_threshold: float | _Unset | None,
    no_speech_threshold: float | _Unset | None,
    prefix: str | None,
    hotwords: str | None,
    suppress_tokens: tuple[int, ...] | None,
    repetition_penalty: float | None,
    no_repeat_ngram_size: int | None,
    clip_timestamps: tuple[float, ...] | None,
    hallucination_silence_threshold: float | None,
    temperature: float | None,
    word_timestamps: bool,
    batch_size: int | None,
    vad: bool | None,
    output_format: str,
    output_dir: Path | None,
    as_jsonl: bool,
    max_line_width: int | None,
    max_line_count: int | None,
    max_words_per_line: int | None,
    highlight_words: bool,
    sample_rate: int | None,
    common: CommonOptions,
) -> None:
    """Transcribe each INPUT (raw PCM needs --sample-rate).

    Prints the transcripts on stdout (plain text by default; --output-format for one input, --jsonl
    for several), each segment as it is decoded, and with --output-dir also writes them there as files
    (--output-format). A file that fails is logged and the others are still transcribed; the exit
    status is then 1.
    """
    from voicehub.auto import AutoModelForSpeechRecognition

    files = expand_inputs(inputs)
    check_raw_inputs([f for f in files if f is not None], sample_rate)
    to_stdout = output_dir is None or str(output_dir) == STDIN
    formats = list(FORMATS) if output_format == "all" else [output_format]
    if to_stdout and as_jsonl and output_format != "txt":
        raise click.UsageError("--jsonl prints its own format; drop --output-format, or write files with -o DIR")
    if to_stdout and not as_jsonl and output_format != "txt" and (len(files) > 1 or len(formats) > 1):
        raise click.UsageError(
            f"-f {output_format} for {len(files)} input(s) would mix several documents on stdout; write them with "
            "-o DIR (one file per input and format), or print --jsonl"
        )
    overrides: dict[str, Any] = {
        key: value
        for key, value in (
            ("language", language),
            ("task", task),
            ("beam_size", beam_size),
            ("temperature", temperature),
            ("batch_size", batch_size),
            ("vad", vad),
            ("best_of", best_of),
            ("patience", patience),
            ("initial_prompt", initial_prompt),
            ("condition_on_previous_text", condition_on_previous_text),
            ("prefix", prefix),
            ("hotwords", hotwords),
            ("suppress_tokens", suppress_tokens),
            ("repetition_penalty", repetition_penalty),
            ("no_repeat_ngram_size", no_repeat_ngram_size),
            ("clip_timestamps", clip_timestamps),
            ("hallucination_silence_threshold", hallucination_silence_threshold),
        )
        if value is not None
    }
    for key, threshold in (
        ("compression_ratio_threshold", compression_ratio_threshold),
        ("logprob_threshold", logprob_threshold),
        ("no_speech_threshold", no_speech_threshold),
    ):
        if not isinstance(threshold, _Unset):
            overrides[key] = threshold  # a number, or None (written None: never)
    subtitles = SubtitleOptions(
        max_line_width=max_line_width,
        max_line_count=max_line_count,
        max_words_per_line=max_words_per_line,
        highlight_words=highlight_words,
    )
    if subtitles.reshapes:
        _check_subtitle_formats(subtitles, formats, as_jsonl=as_jsonl and to_stdout)
        if not word_timestamps:
            _LOG.info("the subtitle options cut cues at words: --word-timestamps is turned on")
        word_timestamps = True
    if word_timestamps:
        overrides["word_timestamps"] = True
    try:
        directory = None if output_dir is None or to_stdout else check_output_directory(output_dir, what="--output-dir")
        model_type = cli_model_type(SpeechTask.AUTOMATIC_SPEECH_RECOGNITION, model_type, source)
        started = time.perf_counter()
        model = AutoModelForSpeechRecognition.from_pretrained(source, model_type=model_type, device=common.device)
        options = resolve_cli_options(model, overrides, {})  # bad options: a usage error naming the flag
        model.load()
        options = _check_checkpoint_options(model, options, language, task)
        _LOG.info("%s loaded on %s in %.1f s", model.model_type, common.device, time.perf_counter() - started)
    except VoiceHubError as err:
        raise click.ClickException(str(err)) from err
    # On stdout, txt/srt/vtt/tsv and --jsonl print each segment as it is decoded; files are written whole.
    streams = to_stdout and (as_jsonl or output_format in STREAMED_FORMATS)
    names = input_ids([Path("stdin") if f is None else f for f in files])
    durations = [_duration_s(f, sample_rate) for f in files]
    from tqdm import tqdm

    failures: list[str] = []
    with tqdm(
        total=round(sum(durations), 2), unit="s", desc="transcribe", disable=not common.show_progress(), file=sys.stderr
    ) as bar:
        for index, (path, name, duration_s) in enumerate(zip(files, names, durations, strict=True)):
            label = "standard input" if path is None else display_path(path)
            bar.set_postfix_str(f"file {index + 1}/{len(files)}")
            try:
                started = time.perf_counter()
                audio = _read_stdin(sample_rate) if path is None else audio_input(path, sample_rate)
                if streams:
                    stream = model.transcribe_stream(audio, options=options)
                    if as_jsonl:
                        for segment in stream:
                            echo_json_line({"path": label, "segment": dataclasses.asdict(segment)})
                    else:
                        echo_segments(stream, output_format, f"{label}: " if len(files) > 1 else "", subtitles)
                    output = stream.output
                else:
                    output = model.transcribe(audio, options=options)
                if directory is not None:
                    _write(output, name, directory, formats, subtitles)
            except VoiceHubError as err:
                failures.append(str(err))
                continue
            finally:
                bar.update(round(duration_s, 2))
            elapsed = time.perf_counter() - started
            _LOG.info("%s: %.2f s of audio in %.2f s", label, output.duration_s or 0.0, elapsed)
            if as_jsonl:
                echo_json_line({"path": label, **output.to_dict()})
            elif streams:
                pass  # printed as it came
            elif to_stdout and output_format != "txt":
                click.echo(FORMATS[output_format](output, subtitles), nl=False)
            else:
                click.echo(f"{label}: {output.text}" if len(files) > 1 else output.text)
    if failures:
        for message in failures:
            _LOG.error("%s", message)
        _LOG.error("%d of %d input(s) failed", len(failures), len(files))
        raise click.exceptions.Exit(1)


__all__ = [
    "FORMATS",
    "STREAMED_FORMATS",
    "echo_segments",
    "expand_inputs",
    "format_json",
    "format_srt",
    "format_tsv",
    "format_txt",
    "format_vtt",
    "srt_cue",
    "transcribe_command",
    "tsv_row",
    "vtt_cue",
]

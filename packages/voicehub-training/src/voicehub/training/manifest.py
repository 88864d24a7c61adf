"""JSONL training manifests: one utterance per line, validated as a whole before training starts.

A row is a JSON object::

    {"audio_path": "clips/0870.wav", "duration_s": 14.2, "text": "...", "speaker": "reader1",
     "recording": "chapter01", "segments": [{"start_s": 0.31, "end_s": 6.02}]}

* ``audio_path``: the audio file, relative to the manifest's directory or absolute.
* ``duration_s``: its duration in seconds (checked against the file header).
* ``offset_s``: optional start of the utterance in the file, in seconds; with it the row is the
  part ``[offset_s, offset_s + duration_s]`` of a longer file (lhotse cuts, :mod:`voicehub.training.lhotse_cuts`),
  which must lie inside the file; without it the row is the whole file.
* ``text``: the transcript (ASR); ``speaker``: the speaker label (speaker models, leakage-safe
  splits); ``recording``: the source recording (several clips cut from one file share it;
  defaults to the audio path); ``segments``: speech regions in seconds (VAD targets).

Rows written for NeMo are read as they are: ``audio_filepath``, ``duration`` and ``offset``
(seconds, NeMo's names) are taken for ``audio_path``, ``duration_s`` and ``offset_s``
(:data:`FIELD_ALIASES`), and other fields (``id``, ``lang``, ``pred_text``...) are accepted and
ignored, except a name one or two letters away from a field this reader uses (``"speakr"``,
``"duration_ss"``), which is reported as the typo it most likely is.

:func:`read_manifest` checks every row against a :class:`~voicehub.training.spec.DataContract`
(required fields, the sample rate of every file) and reports *all* bad rows at once, with their
line numbers, in one :class:`~voicehub.training.errors.ManifestError`: also a line that is not
UTF-8 (its byte and column), and a row that repeats another (the same audio and span, or the
same ``id``), which would be trained on twice as often. Records are small frozen
dataclasses with ``to_dict`` / ``from_dict`` (times in seconds), as lhotse's are.
"""

from __future__ import annotations

import difflib
import gzip
import math
import os
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from voicehub.core import strict_json
from voicehub.core.audio_stream import audio_file_info
from voicehub.core.errors import AudioDecodeError, StrictJSONError
from voicehub.core.files import write_text_atomic
from voicehub.training.errors import ManifestError, ManifestProblem
from voicehub.training.spec import DataContract, ManifestField

DURATION_TOLERANCE_S = 0.05
"""Largest accepted difference between a row's ``duration_s`` and its file's header, in seconds."""

_KNOWN = tuple(field.value for field in ManifestField)

FIELD_ALIASES = {"audio_filepath": "audio_path", "duration": "duration_s", "offset": "offset_s"}
"""Other manifests' names (NeMo's) for the fields of this one: taken for them when the row lacks those."""

_ID_FIELDS = ("id", "utt_id", "utterance_id")
"""Fields that name a row; a value listed twice is reported as a duplicate."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Segment:
    """A speech region in seconds from the start of its clip."""

    start_s: float
    end_s: float

    def to_dict(self) -> dict[str, float]:
        """``{"start_s": ..., "end_s": ...}``."""
        return {"start_s": self.start_s, "end_s": self.end_s}


@dataclass(frozen=True, slots=True, kw_only=True)
class ManifestRecord:
    """One validated manifest row.

    Attributes:
        audio_path: the audio file (absolute).
        duration_s: its duration in seconds.
        offset_s: start of the utterance in the file in seconds, or ``None``: the whole file.
        text: the transcript, if the row has one.
        speaker: the speaker label, if any.
        recording: the source recording (the audio path when the row names none).
        segments: speech regions, if the row has them.
        line: the row's 1-based line number in its manifest (0 for records built in code).
    """

    audio_path: Path
    duration_s: float
    offset_s: float | None = None
    text: str | None = None
    speaker: str | None = None
    recording: str = ""
    segments: tuple[Segment, ...] | None = None
    line: int = 0

    def __post_init__(self) -> None:
        if not self.recording:
            object.__setattr__(self, "recording", str(self.audio_path))

    def to_dict(self, *, relative_to: Path | None = None) -> dict[str, Any]:
        """The row as written in a manifest (``audio_path`` relative to ``relative_to`` when given)."""
        path = self.audio_path
        if relative_to is not None:
            path = Path(os.path.relpath(path, relative_to))
        row: dict[str, Any] = {"audio_path": path.as_posix(), "duration_s": self.duration_s}
        if self.offset_s is not None:
            row["offset_s"] = self.offset_s
        if self.text is not None:
            row["text"] = self.text
        if self.speaker is not None:
            row["speaker"] = self.speaker
        if self.recording != str(self.audio_path):
            row["recording"] = self.recording
        if self.segments is not None:
            row["segments"] = [segment.to_dict() for segment in self.segments]
        return row


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def _label(
    row: Mapping[str, Any], key: str, problems: list[ManifestProblem], line: int, *, empty_ok: bool = False
) -> str | None:
    """``row[key]`` when it is a string (non-blank unless ``empty_ok``), else ``None`` and a problem."""
    if key not in row:
        return None
    value = row[key]
    if not isinstance(value, str):
        problems.append(ManifestProblem(line=line, field=key, message=f"expected a string, got {value!r}"))
        return None
    if not value.strip() and not empty_ok:
        what = "an empty transcript" if key == "text" else f"{value!r}"
        problems.append(ManifestProblem(line=line, field=key, message=f"expected a non-empty string, got {what}"))
        return None
    return value


def _segments(
    value: object, duration_s: float | None, line: int, problems: list[ManifestProblem]
) -> tuple[Segment, ...] | None:
    if not isinstance(value, list):
        problems.append(ManifestProblem(line=line, field="segments", message=f"expected a list, got {value!r}"))
        return None
    segments = []
    previous_end = 0.0
    for index, item in enumerate(value):
        start = _number(item.get("start_s")) if isinstance(item, dict) else None
        end = _number(item.get("end_s")) if isinstance(item, dict) else None
        valid = isinstance(item, dict) and set(item) == {"start_s", "end_s"} and start is not None and end is not None
        if not valid or start is None or end is None:
            problems.append(
                ManifestProblem(
                    line=line,
                    field="segments",
                    message=f"segment {index}: expected {{'start_s': s, 'end_s': s}} with finite seconds, got {item!r}",
                )
            )
            return None
        limit = duration_s if duration_s is not None else math.inf
        if not previous_end <= start < end <= limit + DURATION_TOLERANCE_S:
            problems.append(
                ManifestProblem(
                    line=line,
                    field="segments",
                    message=f"segment {index} [{start}, {end}] s: expected sorted, non-overlapping regions with "
                    f"start < end inside [0, duration_s={duration_s}]",
                )
            )
            return None
        previous_end = end
        segments.append(Segment(start_s=start, end_s=end))
    return tuple(segments)


def _audio(
    path: Path,
    duration_s: float | None,
    offset_s: float | None,
    contract: DataContract,
    line: int,
    problems: list[ManifestProblem],
) -> None:
    try:
        info = audio_file_info(path)
    except AudioDecodeError as err:
        message = "missing file" if not path.exists() else "unreadable audio"
        problems.append(ManifestProblem(line=line, field="audio_path", message=f"{message}: {err}"))
        return
    if info.sample_rate != contract.sample_rate:
        problems.append(
            ManifestProblem(
                line=line,
                field="audio_path",
                message=f"wrong sample rate: {path.name} is {info.sample_rate} Hz, the model trains at "
                f"{contract.sample_rate} Hz; resample the file (e.g. sox in.wav -r {contract.sample_rate} out.wav)",
            )
        )
    if offset_s is not None:
        end_s = offset_s + duration_s if duration_s is not None else None
        if end_s is not None and info.num_frames > 0 and end_s > info.duration_s + DURATION_TOLERANCE_S:
            problems.append(
                ManifestProblem(
                    line=line,
                    field="duration_s",
                    message=f"[{offset_s}, {end_s}] s reaches past the end of the file ({info.duration_s:.3f} s)",
                )
            )
    elif duration_s is not None and info.num_frames > 0 and abs(info.duration_s - duration_s) > DURATION_TOLERANCE_S:
        problems.append(
            ManifestProblem(
                line=line,
                field="duration_s",
                message=f"{duration_s} s, but the file holds {info.duration_s:.3f} s",
            )
        )


def parse_row(
    row: object, *, line: int, base: Path, contract: DataContract, check_audio: bool = True
) -> tuple[ManifestRecord | None, list[ManifestProblem]]:
    """Validate one decoded row; return its record (``None`` when it is bad) and its problems."""
    problems: list[ManifestProblem] = []
    if not isinstance(row, dict):
        return None, [ManifestProblem(line=line, field="json", message=f"expected a JSON object, got {row!r}")]
    row = _with_aliases(row, line, problems)
    for name in sorted(set(row) - set(_KNOWN) - set(FIELD_ALIASES)):
        close = difflib.get_close_matches(name, (*_KNOWN, *FIELD_ALIASES), n=1, cutoff=0.8)
        if close:  # other fields (id, lang, ...) are the writer's own and are ignored
            problems.append(
                ManifestProblem(
                    line=line,
                    field=name,
                    message=f"unknown field; did you mean {close[0]!r}? (fields used: {list(_KNOWN)}; other "
                    f"names are ignored)",
                )
            )
    for field in contract.required_fields:
        if field.value not in row:
            problems.append(ManifestProblem(line=line, field=field.value, message="required by this model, missing"))
    duration_s = None
    if "duration_s" in row:
        duration_s = _number(row["duration_s"])
        if duration_s is None or duration_s <= 0:
            problems.append(
                ManifestProblem(
                    line=line, field="duration_s", message=f"expected seconds > 0, got {row['duration_s']!r}"
                )
            )
            duration_s = None
        elif contract.max_duration_s is not None and duration_s > contract.max_duration_s:
            problems.append(
                ManifestProblem(
                    line=line,
                    field="duration_s",
                    message=f"{duration_s} s exceeds the model's {contract.max_duration_s} s; cut the clip",
                )
            )
    offset_s = None
    if "offset_s" in row:
        offset_s = _number(row["offset_s"])
        if offset_s is None or offset_s < 0:
            problems.append(
                ManifestProblem(line=line, field="offset_s", message=f"expected seconds >= 0, got {row['offset_s']!r}")
            )
            offset_s = None
    path: Path | None = None
    raw_path = row.get("audio_path")
    if "audio_path" in row:
        if not isinstance(raw_path, str) or not raw_path:
            problems.append(
                ManifestProblem(line=line, field="audio_path", message=f"expected a path string, got {raw_path!r}")
            )
        else:
            path = Path(raw_path) if Path(raw_path).is_absolute() else base / raw_path
            if check_audio:
                # a bad offset is reported once: the part is then only checked to fit from the start
                part_start = 0.0 if offset_s is None and "offset_s" in row else offset_s
                _audio(path, duration_s, part_start, contract, line, problems)
    # a model that does not train on text (a VAD) takes a row whose transcript is empty
    text = _label(row, "text", problems, line, empty_ok=ManifestField.TEXT not in contract.required_fields)
    speaker = _label(row, "speaker", problems, line)
    recording = _label(row, "recording", problems, line)
    segments = _segments(row["segments"], duration_s, line, problems) if "segments" in row else None
    if problems or path is None or duration_s is None:
        return None, problems
    record = ManifestRecord(
        audio_path=path,
        duration_s=duration_s,
        offset_s=offset_s,
        text=text,
        speaker=speaker,
        recording=recording or "",
        segments=segments,
        line=line,
    )
    return record, problems


def _with_aliases(row: dict[str, Any], line: int, problems: list[ManifestProblem]) -> dict[str, Any]:
    """``row`` with each :data:`FIELD_ALIASES` name renamed to this manifest's (a problem when both are given)."""
    renamed = dict(row)
    for alias, field in FIELD_ALIASES.items():
        if alias not in renamed:
            continue
        if field in renamed:
            problems.append(
                ManifestProblem(
                    line=line, field=alias, message=f"given with {field!r}, which it stands for; keep one of the two"
                )
            )
            del renamed[alias]
        else:
            renamed[field] = renamed.pop(alias)
    return renamed


def _duplicates(records: Iterable[ManifestRecord], ids: Mapping[int, str]) -> list[ManifestProblem]:
    """A problem for each record that repeats an earlier one: the same audio and span, or the same id.

    Args:
        records: the valid records, in file order.
        ids: the ``id`` (or ``utt_id``, ``utterance_id``) of each line that has one.
    """
    problems = []
    first_span: dict[tuple[Path, float | None, float], int] = {}
    for record in records:
        span = (record.audio_path, record.offset_s, record.duration_s)
        if span in first_span:
            problems.append(
                ManifestProblem(
                    line=record.line,
                    field="audio_path",
                    message=f"the same audio and span as line {first_span[span]} ({record.audio_path.name}); a "
                    f"repeated row is trained on twice as often: remove one, or give each its own offset_s",
                )
            )
        else:
            first_span[span] = record.line
    first_id: dict[str, int] = {}
    for line, name in sorted(ids.items()):
        if name in first_id:
            problems.append(
                ManifestProblem(
                    line=line, field="id", message=f"{name!r} also names line {first_id[name]}; ids must be unique"
                )
            )
        else:
            first_id[name] = line
    return problems


GZIP_MAGIC = b"\x1f\x8b"
"""The first two bytes of a gzip stream (RFC 1952, section 2.3.1): how a compressed manifest is told."""

UNREADABLE_FILE_ERRORS: tuple[type[Exception], ...] = (OSError, EOFError, zlib.error, UnicodeDecodeError)
"""What reading a manifest file through :func:`open_manifest_text` raises for a file that cannot be
read: missing or unreadable (``OSError``, also gzip's bad header or CRC), a truncated gzip stream
(``EOFError``), a corrupt one (``zlib.error``), bytes that are not UTF-8."""

_UNREADABLE_BYTES_ERRORS: tuple[type[Exception], ...] = (OSError, EOFError, zlib.error)


def open_manifest_text(file: Path) -> IO[str]:
    """``file`` opened for reading as UTF-8 text, through gzip when its first two bytes say so.

    Raises:
        OSError: when the file cannot be opened; reading the handle raises one of
            :data:`UNREADABLE_FILE_ERRORS` for damaged content.
    """
    with file.open("rb") as handle:
        compressed = handle.read(2) == GZIP_MAGIC
    return gzip.open(file, "rt", encoding="utf-8") if compressed else file.open(encoding="utf-8")


def read_manifest_lines(file: Path, problems: list[ManifestProblem] | None = None) -> list[str]:
    """The lines of a manifest file, plain or gzip-compressed, each decoded as UTF-8 on its own.

    Args:
        file: the manifest.
        problems: where a line that is not UTF-8 is reported (its line number, the byte and its
            column), the line then read as empty, so the caller goes on and reports every other
            problem too; ``None`` raises at once for such a line.

    Raises:
        ManifestError: when the file cannot be read (missing, unreadable, a damaged or truncated
            gzip stream), as one problem on line 0; for a line that is not UTF-8 when
            ``problems`` is ``None``.
    """
    try:
        with file.open("rb") as handle:
            compressed = handle.read(2) == GZIP_MAGIC
        with gzip.open(file, "rb") if compressed else file.open("rb") as handle:
            data = handle.read()
    except _UNREADABLE_BYTES_ERRORS as err:
        raise ManifestError(file, (ManifestProblem(line=0, field="file", message=f"cannot read: {err}"),)) from err
    lines = []
    # Rows end at "\n" only ("\r\n" too): str.splitlines would also cut a row at U+0085, U+2028 or
    # U+2029, which JSON writers leave unescaped inside strings.
    for number, raw in enumerate(data.split(b"\n"), start=1):
        try:
            lines.append(raw.removesuffix(b"\r").decode("utf-8"))
        except UnicodeDecodeError as err:
            problem = ManifestProblem(
                line=number,
                field="encoding",
                message=f"byte 0x{raw[err.start]:02x} at column {err.start + 1} is not UTF-8 ({err.reason}); save "
                f"the manifest as UTF-8 (e.g. iconv -f latin1 -t utf-8)",
            )
            if problems is None:
                raise ManifestError(file, (problem,)) from err
            problems.append(problem)
            lines.append("")
    return lines


def read_manifest(
    path: str | os.PathLike[str], contract: DataContract, *, check_audio: bool = True
) -> tuple[ManifestRecord, ...]:
    """Read and validate a JSONL manifest, or a lhotse cut manifest; every bad row is reported at once.

    Either may be gzip-compressed (``.jsonl.gz``, told by its first bytes, not its name). A file whose
    first row is a lhotse cut is read by :func:`voicehub.training.lhotse_cuts.read_lhotse_cuts`
    (needs lhotse installed).

    Args:
        path: the ``.jsonl`` file (one JSON object per line; blank lines are skipped), plain or gzip.
        contract: the model's data contract (required fields, sample rate, longest clip).
        check_audio: open each file's header (existence, sample rate, duration); turn off only
            for manifests already checked.

    Returns:
        The records in file order.

    Raises:
        ManifestError: listing every problem with its line number (a line that is not UTF-8, bad
            JSON, a field name that looks like a typo of a known one, missing fields, missing file,
            wrong sample rate, empty transcript, non-positive duration, bad segments, a row that
            repeats another's audio and span or id), or an empty manifest.
        OptionalDependencyError: for a lhotse manifest without lhotse installed.
    """
    from voicehub.training.lhotse_cuts import is_lhotse_manifest, read_lhotse_cuts  # it builds on this module

    file = Path(path)
    if is_lhotse_manifest(file):
        return read_lhotse_cuts(file, contract, check_audio=check_audio)
    problems: list[ManifestProblem] = []
    lines = read_manifest_lines(file, problems)
    base = file.parent.resolve()
    records: list[ManifestRecord] = []
    ids: dict[int, str] = {}
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        try:
            row = strict_json.loads(text)
        except (StrictJSONError, ValueError) as err:
            problems.append(ManifestProblem(line=number, field="json", message=str(err)))
            continue
        if isinstance(row, dict):
            name = next((row[key] for key in _ID_FIELDS if isinstance(row.get(key), (str, int))), None)
            if name is not None and not isinstance(name, bool):
                ids[number] = str(name)
        record, row_problems = parse_row(row, line=number, base=base, contract=contract, check_audio=check_audio)
        problems.extend(row_problems)
        if record is not None:
            records.append(record)
    problems.extend(_duplicates(records, ids))
    problems.sort(key=lambda problem: problem.line)
    if not records and not problems:
        problems.append(ManifestProblem(line=0, field="file", message="holds no rows"))
    if problems:
        raise ManifestError(file, tuple(problems))
    return tuple(records)


def write_manifest(records: Iterable[ManifestRecord], path: str | os.PathLike[str]) -> Path:
    """Write ``records`` as a JSONL manifest (atomically), audio paths relative to its directory.

    Returns:
        The written file.
    """
    file = Path(path)
    base = file.parent.resolve()
    text = "".join(strict_json.dumps(record.to_dict(relative_to=base)) + "\n" for record in records)
    write_text_atomic(file, text)
    return file


__all__ = [
    "DURATION_TOLERANCE_S",
    "FIELD_ALIASES",
    "GZIP_MAGIC",
    "UNREADABLE_FILE_ERRORS",
    "ManifestRecord",
    "Segment",
    "open_manifest_text",
    "parse_row",
    "read_manifest",
    "read_manifest_lines",
    "write_manifest",
]

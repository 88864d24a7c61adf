"""lhotse CutSet manifests read as training records (``pip install "voicehub-training[lhotse]"``).

A cut manifest is what ``CutSet.to_file("cuts.jsonl.gz")`` writes: one cut per line, plain or
gzip-compressed JSONL. Every line is decoded by lhotse itself (``deserialize_item``), then turned
into a row of the JSONL manifest format (:mod:`voicehub.training.manifest`) and validated exactly
like one, so one :class:`~voicehub.training.errors.ManifestError` lists every bad cut with its
line number (the cut's 1-based index) and id:

* ``audio_path``: the recording's single ``file`` source, opened as lhotse opens it (a relative
  path is relative to the current directory, not to the manifest);
* ``offset_s`` / ``duration_s``: the cut's ``start`` and ``duration`` in the recording;
* ``recording``: the recording id (leakage-safe splits keep cuts of one recording together);
* ``text``: the supervisions' texts in time order, joined by spaces;
* ``speaker``: the supervisions' speaker (a cut whose supervisions name several speakers has
  none, which is an error for speaker models);
* ``segments``: the supervisions as speech regions relative to the cut, clipped to it, overlaps
  merged.

Supported: single-channel ``MonoCut`` s over one audio file. Mixed and padding cuts, several
sources, URL / memory / command sources, features-only cuts and multi-channel recordings are
reported as bad rows (nothing is mixed, padded or downloaded silently).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from voicehub.core.lazy import import_optional
from voicehub.training.errors import ManifestError, ManifestProblem
from voicehub.training.manifest import (
    UNREADABLE_FILE_ERRORS,
    ManifestRecord,
    open_manifest_text,
    parse_row,
    read_manifest_lines,
)
from voicehub.training.spec import DataContract, ManifestField

INSTALL_HINT = 'pip install "voicehub-training[lhotse]"  (or "voicehub[lhotse]")'
_NOT_A_CUT_ROW: tuple[type[Exception], ...] = (*UNREADABLE_FILE_ERRORS, ValueError)  # ValueError: bad JSON


def _merged_segments(cut: Any) -> list[dict[str, float]]:
    """Supervision spans relative to the cut, clipped to [0, duration], sorted, overlaps merged."""
    spans = sorted(
        (max(0.0, float(s.start)), min(float(cut.duration), float(s.start) + float(s.duration)))
        for s in cut.supervisions
    )
    merged: list[list[float]] = []
    for start, end in spans:
        if end <= start:
            continue
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [{"start_s": round(start, 6), "end_s": round(end, 6)} for start, end in merged]


def cut_to_row(cut: Any, contract: DataContract) -> tuple[dict[str, Any] | None, list[tuple[str, str]]]:
    """The manifest row of one lhotse cut, or ``None`` and ``(field, message)`` problems."""
    kind = type(cut).__name__
    if kind != "MonoCut":
        return None, [("type", f"a {kind}; only MonoCut cuts over one audio file are read (mix or pad them first)")]
    recording = cut.recording
    if recording is None:
        return None, [("recording", "the cut has no recording (features-only cuts are not read: training needs audio)")]
    sources = recording.sources
    if len(sources) != 1 or sources[0].type != "file":
        kinds = [source.type for source in sources]
        return None, [("recording", f"sources {kinds}: expected exactly one source of type 'file'")]
    if recording.num_channels != 1:
        return None, [("recording", f"{recording.num_channels} channels: only single-channel recordings are read")]
    row: dict[str, Any] = {
        "audio_path": str(Path(sources[0].source).resolve()),
        "offset_s": float(cut.start),
        "duration_s": float(cut.duration),
        "recording": str(recording.id),
    }
    problems: list[tuple[str, str]] = []
    supervisions = sorted(cut.supervisions, key=lambda s: float(s.start))
    untranscribed = [str(s.id) for s in supervisions if s.text is None]
    if untranscribed and ManifestField.TEXT in contract.required_fields:
        problems.append(("text", f"supervision(s) {untranscribed} have no text, which this model trains on"))
    texts = [str(s.text) for s in supervisions if s.text is not None]
    if texts:
        row["text"] = " ".join(texts)
    speakers = sorted({str(s.speaker) for s in supervisions if s.speaker is not None})
    if len(speakers) == 1:
        row["speaker"] = speakers[0]
    elif len(speakers) > 1 and ManifestField.SPEAKER in contract.required_fields:
        problems.append(("speaker", f"supervisions name several speakers {speakers}; a record has one speaker"))
    if supervisions:
        row["segments"] = _merged_segments(cut)
    return row, problems


def read_lhotse_cuts(
    path: str | os.PathLike[str], contract: DataContract, *, check_audio: bool = True
) -> tuple[ManifestRecord, ...]:
    """Read and validate a lhotse cut manifest; every bad cut is reported at once.

    Args:
        path: a ``.jsonl`` or ``.jsonl.gz`` file written by ``CutSet.to_file``.
        contract: the model's data contract (required fields, sample rate, longest clip).
        check_audio: open each file's header (existence, sample rate, the cut inside the file).

    Returns:
        One record per cut, in file order.

    Raises:
        OptionalDependencyError: when lhotse is not installed (naming the extra that installs it).
        ManifestError: listing every bad cut with its line number and id (not a cut, a cut listed
            twice, an unsupported cut, missing text or speaker the model needs, a missing file, another sample rate, a
            cut outside its file, ...), or an empty manifest.
    """
    serialization = import_optional(
        "lhotse.serialization", purpose="reading lhotse cut manifests", install_hint=INSTALL_HINT
    )
    file = Path(path)
    problems: list[ManifestProblem] = []
    lines = read_manifest_lines(file, problems)
    records: list[ManifestRecord] = []
    first_line: dict[str, int] = {}  # cut id -> the line that listed it first
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        try:
            cut = serialization.deserialize_item(json.loads(text))
        except Exception as err:  # json and lhotse raise many kinds for a bad line
            problems.append(ManifestProblem(line=number, field="json", message=f"not a lhotse cut: {err!r}"))
            continue
        cut_id = str(getattr(cut, "id", "?"))
        name = f"cut {cut_id}: "
        if cut_id in first_line:  # trained on twice as often, and on both sides of a split
            problems.append(
                ManifestProblem(
                    line=number,
                    field="id",
                    message=f"{name}listed twice (first on line {first_line[cut_id]}); cut ids must be unique",
                )
            )
            continue
        first_line[cut_id] = number
        row, cut_problems = cut_to_row(cut, contract)
        problems.extend(ManifestProblem(line=number, field=f, message=name + m) for f, m in cut_problems)
        if row is None:
            continue
        record, row_problems = parse_row(row, line=number, base=Path.cwd(), contract=contract, check_audio=check_audio)
        problems.extend(ManifestProblem(line=p.line, field=p.field, message=name + p.message) for p in row_problems)
        if record is not None and not cut_problems:
            records.append(record)
    if not records and not problems:
        problems.append(ManifestProblem(line=0, field="file", message="holds no cuts"))
    if problems:
        raise ManifestError(file, tuple(problems))
    return tuple(records)


def is_lhotse_manifest(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` looks like a lhotse cut manifest: a first row with a cut's keys (``recording``
    or ``type``) and no ``audio_path``, in a plain or gzip-compressed file. A gzip-compressed JSONL
    manifest of :mod:`voicehub.training.manifest` rows is not one."""
    try:
        with open_manifest_text(Path(path)) as lines:
            text = next((line for line in lines if line.strip()), "")
        if text:
            row = json.loads(text)
            return isinstance(row, dict) and "audio_path" not in row and ("recording" in row or "type" in row)
    except _NOT_A_CUT_ROW:
        return False  # the JSONL reader reports the file's problem
    return False


__all__ = ["INSTALL_HINT", "cut_to_row", "is_lhotse_manifest", "read_lhotse_cuts"]

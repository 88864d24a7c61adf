"""Trial lists for speaker verification: which (model, test segment) pairs to score, their labels, scores.

A trial list is a dense matrix over ``model_set`` (rows, enrolment models) x ``seg_set``
(columns, test segments). Formats follow upstream Hyperion (``hyperion/utils/trial_*.py``),
chosen by file suffix:

* HDF5 (``.h5``, ``.hdf5``): ``ID/row_ids`` and ``ID/column_ids`` (byte strings), plus
  ``trial_mask`` (uint8 0/1) for :class:`TrialNdx`; ``trial_mask`` (int8: +1 target,
  -1 non-target, 0 not a trial, -2 spoof) for :class:`TrialKey`; ``scores`` (float) and
  ``score_mask`` (uint8) for :class:`TrialScores`.
* text (anything else): one trial per line, ``model segment`` (ndx),
  ``model segment target|nontarget|spoof`` (key), ``model segment score`` (scores). Scores are
  written with 17 significant digits, so text round trips are lossless (upstream wrote 6
  decimals).

Ids are non-empty and contain no whitespace (the text format separates fields by whitespace),
and unique. Loaders check what :meth:`create` checks, plus: a text file lists each trial once,
scores are finite, HDF5 key codes are 0, +1, -1 or -2 and masks 0/1. Writes are atomic;
unreadable files raise :class:`HyperionFileError` naming the file (and line for text).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

import h5py
import numpy as np
from numpy.typing import NDArray

from voicehub.hyperion.errors import HyperionFileError, HyperionInputError
from voicehub.hyperion.np.files import atomic_write, open_hdf5

PathLike = str | os.PathLike[str]
_H5_SUFFIXES = (".h5", ".hdf5")
BoolMatrix = NDArray[np.bool_]


def _is_h5(path: Path) -> bool:
    return path.suffix.lower() in _H5_SUFFIXES


def _ids(values: Any, what: str) -> NDArray[np.str_]:
    arr = np.asarray(values, dtype=str)
    if arr.ndim != 1:
        raise HyperionInputError(f"{what}: expected a 1-D list of ids, got shape {arr.shape}")
    bad = [v for v in arr.tolist() if not v or any(c.isspace() for c in v)]
    if bad:
        raise HyperionInputError(
            f"{what}: ids must be non-empty and contain no whitespace (the text format splits on it), got {bad[0]!r}"
        )
    unique, counts = np.unique(arr, return_counts=True)
    if unique.shape[0] != arr.shape[0]:
        raise HyperionInputError(f"{what}: ids must be unique, {str(unique[counts > 1][0])!r} repeats")
    return arr


def _file_ids(rows: Any, cols: Any, path: Path) -> tuple[NDArray[np.str_], NDArray[np.str_]]:
    try:
        return _ids(rows, "ID/row_ids"), _ids(cols, "ID/column_ids")
    except HyperionInputError as err:
        raise HyperionFileError(f"{path}: {err}", path=path) from err


def _check_codes(path: Path, key: str, arr: NDArray[Any], allowed: tuple[int, ...]) -> None:
    if arr.dtype.kind not in "biuf":
        raise HyperionFileError(f"{path}: /{key} has dtype {arr.dtype}, expected integers", path=path)
    bad = ~np.isin(arr, allowed)
    if np.any(bad):
        raise HyperionFileError(
            f"{path}: /{key} holds {np.unique(arr[bad])[:5].tolist()}, expected only {list(allowed)}", path=path
        )


def _mask(values: Any, shape: tuple[int, int], what: str) -> BoolMatrix:
    arr = np.asarray(values)
    if arr.shape != shape:
        raise HyperionInputError(f"{what}: expected shape {shape} (models, segments), got {arr.shape}")
    return arr.astype(bool)


def _read_ids(f: h5py.File, path: Path) -> tuple[NDArray[np.str_], NDArray[np.str_]]:
    try:
        rows = [v.decode("utf-8") if isinstance(v, bytes) else str(v) for v in f["ID/row_ids"][()]]
        cols = [v.decode("utf-8") if isinstance(v, bytes) else str(v) for v in f["ID/column_ids"][()]]
    except KeyError as err:
        raise HyperionFileError(f"{path}: missing ID/row_ids or ID/column_ids; not a trial file", path=path) from err
    except (OSError, ValueError, TypeError) as err:
        raise HyperionFileError(f"{path}: cannot read trial ids (truncated?): {err}", path=path) from err
    return _file_ids(rows, cols, path)


def _read_matrix(f: h5py.File, path: Path, key: str, shape: tuple[int, int]) -> NDArray[Any]:
    if key not in f:
        raise HyperionFileError(f"{path}: missing dataset /{key}", path=path)
    try:
        arr = np.asarray(f[key][()])
    except (OSError, ValueError, TypeError) as err:
        raise HyperionFileError(f"{path}: cannot read /{key} (truncated?): {err}", path=path) from err
    if arr.shape != shape:
        raise HyperionFileError(f"{path}: /{key} has shape {arr.shape}, expected {shape}", path=path)
    return arr


def _write_h5(path: Path, model_set: NDArray[np.str_], seg_set: NDArray[np.str_], data: dict[str, Any]) -> None:
    def write(tmp: Path) -> None:
        with h5py.File(tmp, "w") as f:
            f.create_dataset("ID/row_ids", data=np.char.encode(model_set, "utf-8"))
            f.create_dataset("ID/column_ids", data=np.char.encode(seg_set, "utf-8"))
            for key, value in data.items():
                f.create_dataset(key, data=value)

    atomic_write(path, write)


def _read_lines(path: Path, num_fields: int) -> list[tuple[int, list[str]]]:
    """The non-blank lines as ``(line number, fields)``; each (model, segment) pair at most once."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as err:
        raise HyperionFileError(f"{path}: no such file", path=path) from err
    except (OSError, UnicodeDecodeError) as err:
        raise HyperionFileError(f"{path}: cannot read as UTF-8 text: {err}", path=path) from err
    rows: list[tuple[int, list[str]]] = []
    seen: dict[tuple[str, str], int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        fields = line.split()
        if not fields:
            continue
        if len(fields) != num_fields:
            raise HyperionFileError(
                f"{path}:{number}: expected {num_fields} fields, got {len(fields)}: {line!r}", path=path
            )
        pair = (fields[0], fields[1])
        if pair in seen:
            raise HyperionFileError(
                f"{path}:{number}: trial {fields[0]} {fields[1]} repeats line {seen[pair]}; list each trial once",
                path=path,
            )
        seen[pair] = number
        rows.append((number, fields))
    return rows


def _index(models: list[str], segs: list[str]) -> tuple[NDArray[np.str_], NDArray[np.str_], Any, Any]:
    model_set, model_idx = np.unique(np.asarray(models, dtype=str), return_inverse=True)
    seg_set, seg_idx = np.unique(np.asarray(segs, dtype=str), return_inverse=True)
    return model_set, seg_set, model_idx, seg_idx


def _write_text(path: Path, lines: list[str]) -> None:
    def write(tmp: Path) -> None:
        tmp.write_text("".join(lines), encoding="utf-8")

    atomic_write(path, write)


def _positions(ids: NDArray[np.str_], wanted: NDArray[np.str_], what: str) -> NDArray[np.intp]:
    lookup = {value: i for i, value in enumerate(ids.tolist())}
    missing = [w for w in wanted.tolist() if w not in lookup]
    if missing:
        raise HyperionInputError(f"{what}: {len(missing)} id(s) not found, e.g. {missing[:3]}")
    return np.asarray([lookup[w] for w in wanted.tolist()], dtype=np.intp)


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class TrialNdx:
    """The trials to score.

    Attributes:
        model_set: str (num_models,) unique enrolment model ids.
        seg_set: str (num_segments,) unique test segment ids.
        trial_mask: bool (num_models, num_segments), True where a trial exists.
    """

    model_set: NDArray[np.str_]
    seg_set: NDArray[np.str_]
    trial_mask: BoolMatrix

    @classmethod
    def create(cls, model_set: Any, seg_set: Any, trial_mask: Any = None) -> Self:
        """Validate and build; ``trial_mask=None`` means every pair is a trial.

        Raises:
            HyperionInputError: for duplicate ids or a mask of the wrong shape.
        """
        models, segs = _ids(model_set, "TrialNdx.model_set"), _ids(seg_set, "TrialNdx.seg_set")
        shape = (models.shape[0], segs.shape[0])
        mask = np.ones(shape, dtype=bool) if trial_mask is None else _mask(trial_mask, shape, "TrialNdx.trial_mask")
        return cls(model_set=models, seg_set=segs, trial_mask=mask)

    def save(self, path: PathLike) -> None:
        """Write as HDF5 (``.h5``/``.hdf5``) or text, atomically."""
        file = Path(path)
        if _is_h5(file):
            _write_h5(file, self.model_set, self.seg_set, {"trial_mask": self.trial_mask.astype(np.uint8)})
            return
        rows, cols = np.nonzero(self.trial_mask)
        _write_text(file, [f"{self.model_set[r]} {self.seg_set[c]}\n" for r, c in zip(rows, cols, strict=True)])

    @classmethod
    def load(cls, path: PathLike) -> Self:
        """Read an HDF5 or text trial list.

        Raises:
            HyperionFileError: for a missing, truncated or malformed file.
        """
        file = Path(path)
        if _is_h5(file):
            with open_hdf5(file) as f:
                models, segs = _read_ids(f, file)
                mask = _read_matrix(f, file, "trial_mask", (models.shape[0], segs.shape[0]))
            _check_codes(file, "trial_mask", mask, (0, 1))
            return cls(model_set=models, seg_set=segs, trial_mask=mask.astype(bool))
        lines = [fields for _, fields in _read_lines(file, 2)]
        model_set, seg_set, mi, si = _index([r[0] for r in lines], [r[1] for r in lines])
        mask = np.zeros((model_set.shape[0], seg_set.shape[0]), dtype=bool)
        mask[mi, si] = True
        return cls(model_set=model_set, seg_set=seg_set, trial_mask=mask)


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class TrialKey:
    """Trial labels.

    Attributes:
        model_set: str (num_models,); seg_set: str (num_segments,).
        tar: bool (num_models, num_segments), target trials.
        non: bool (num_models, num_segments), non-target trials (disjoint from ``tar``).
        spoof: bool (num_models, num_segments), spoofed trials (ASVspoof label -2).
    """

    model_set: NDArray[np.str_]
    seg_set: NDArray[np.str_]
    tar: BoolMatrix
    non: BoolMatrix
    spoof: BoolMatrix

    @classmethod
    def create(cls, model_set: Any, seg_set: Any, tar: Any, non: Any, spoof: Any = None) -> Self:
        """Validate and build.

        Raises:
            HyperionInputError: for duplicate ids, wrong shapes or overlapping labels.
        """
        models, segs = _ids(model_set, "TrialKey.model_set"), _ids(seg_set, "TrialKey.seg_set")
        shape = (models.shape[0], segs.shape[0])
        t, n = _mask(tar, shape, "TrialKey.tar"), _mask(non, shape, "TrialKey.non")
        s = np.zeros(shape, dtype=bool) if spoof is None else _mask(spoof, shape, "TrialKey.spoof")
        if np.any(t & n) or np.any(s & (t | n)):
            raise HyperionInputError("TrialKey: a trial cannot carry two labels")
        return cls(model_set=models, seg_set=segs, tar=t, non=n, spoof=s)

    def to_ndx(self) -> TrialNdx:
        """The trials of this key (targets, non-targets and spoofs)."""
        return TrialNdx(model_set=self.model_set, seg_set=self.seg_set, trial_mask=self.tar | self.non | self.spoof)

    def save(self, path: PathLike) -> None:
        """Write as HDF5 (``.h5``/``.hdf5``) or text, atomically."""
        file = Path(path)
        if _is_h5(file):
            codes = self.tar.astype(np.int8) - self.non.astype(np.int8) - 2 * self.spoof.astype(np.int8)
            _write_h5(file, self.model_set, self.seg_set, {"trial_mask": codes})
            return
        lines: list[str] = []
        for label, mask in (("target", self.tar), ("nontarget", self.non), ("spoof", self.spoof)):
            rows, cols = np.nonzero(mask)
            lines += [f"{self.model_set[r]} {self.seg_set[c]} {label}\n" for r, c in zip(rows, cols, strict=True)]
        _write_text(file, lines)

    @classmethod
    def load(cls, path: PathLike) -> Self:
        """Read an HDF5 or text key (labels ``target``, ``nontarget``, ``spoof``).

        Raises:
            HyperionFileError: for a missing, truncated or malformed file or an unknown label.
        """
        file = Path(path)
        if _is_h5(file):
            with open_hdf5(file) as f:
                models, segs = _read_ids(f, file)
                codes = _read_matrix(f, file, "trial_mask", (models.shape[0], segs.shape[0]))
            _check_codes(file, "trial_mask", codes, (0, 1, -1, -2))
            mask = codes.astype(np.int8)
            return cls(model_set=models, seg_set=segs, tar=mask == 1, non=mask == -1, spoof=mask == -2)
        numbered = _read_lines(file, 3)
        labels = {"target": 1, "nontarget": -1, "spoof": -2}
        for number, row in numbered:
            if row[2] not in labels:
                raise HyperionFileError(
                    f"{file}:{number}: unknown trial label {row[2]!r}; expected {sorted(labels)}", path=file
                )
        lines = [fields for _, fields in numbered]
        model_set, seg_set, mi, si = _index([r[0] for r in lines], [r[1] for r in lines])
        mask = np.zeros((model_set.shape[0], seg_set.shape[0]), dtype=np.int8)
        mask[mi, si] = [labels[r[2]] for r in lines]
        return cls(model_set=model_set, seg_set=seg_set, tar=mask == 1, non=mask == -1, spoof=mask == -2)


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class TrialScores:
    """Scores of a trial list.

    Attributes:
        model_set: str (num_models,); seg_set: str (num_segments,).
        scores: float64 (num_models, num_segments); meaningful where ``score_mask``.
        score_mask: bool (num_models, num_segments), True where a score exists.
    """

    model_set: NDArray[np.str_]
    seg_set: NDArray[np.str_]
    scores: NDArray[np.float64]
    score_mask: BoolMatrix

    @classmethod
    def create(cls, model_set: Any, seg_set: Any, scores: Any, score_mask: Any = None) -> Self:
        """Validate and build; ``score_mask=None`` marks every entry as scored.

        Raises:
            HyperionInputError: for duplicate ids, wrong shapes or non-finite masked-in scores.
        """
        models, segs = _ids(model_set, "TrialScores.model_set"), _ids(seg_set, "TrialScores.seg_set")
        shape = (models.shape[0], segs.shape[0])
        values = np.asarray(scores, dtype=np.float64)
        if values.shape != shape:
            raise HyperionInputError(f"TrialScores.scores: expected shape {shape}, got {values.shape}")
        mask = np.ones(shape, dtype=bool) if score_mask is None else _mask(score_mask, shape, "TrialScores.score_mask")
        if not np.all(np.isfinite(values[mask])):
            raise HyperionInputError("TrialScores.scores: NaN or infinite values where score_mask is set")
        return cls(model_set=models, seg_set=segs, scores=values, score_mask=mask)

    def save(self, path: PathLike) -> None:
        """Write as HDF5 (``.h5``/``.hdf5``) or text (17 significant digits), atomically."""
        file = Path(path)
        if _is_h5(file):
            data = {"scores": self.scores, "score_mask": self.score_mask.astype(np.uint8)}
            _write_h5(file, self.model_set, self.seg_set, data)
            return
        rows, cols = np.nonzero(self.score_mask)
        _write_text(
            file,
            [
                f"{self.model_set[r]} {self.seg_set[c]} {self.scores[r, c]:.17g}\n"
                for r, c in zip(rows, cols, strict=True)
            ],
        )

    @classmethod
    def load(cls, path: PathLike) -> Self:
        """Read an HDF5 or text score file.

        Raises:
            HyperionFileError: for a missing, truncated or malformed file, or a score that is not a
                finite number.
        """
        file = Path(path)
        if _is_h5(file):
            with open_hdf5(file) as f:
                models, segs = _read_ids(f, file)
                shape = (models.shape[0], segs.shape[0])
                raw = _read_matrix(f, file, "scores", shape)
                raw_mask = _read_matrix(f, file, "score_mask", shape) if "score_mask" in f else None
            if raw.dtype.kind not in "iuf":
                raise HyperionFileError(f"{file}: /scores has dtype {raw.dtype}, expected float", path=file)
            scores = raw.astype(np.float64)
            mask = np.ones(shape, dtype=bool)
            if raw_mask is not None:
                _check_codes(file, "score_mask", raw_mask, (0, 1))
                mask = raw_mask.astype(bool)
            bad = mask & ~np.isfinite(scores)
            if np.any(bad):
                r, c = (int(i[0]) for i in np.nonzero(bad))
                raise HyperionFileError(
                    f"{file}: {int(bad.sum())} score(s) are NaN or infinite, e.g. {models[r]} {segs[c]}", path=file
                )
            return cls(model_set=models, seg_set=segs, scores=scores, score_mask=mask)
        numbered = _read_lines(file, 3)
        values: list[float] = []
        for number, row in numbered:
            try:
                value = float(row[2])
            except ValueError as err:
                raise HyperionFileError(f"{file}:{number}: the score {row[2]!r} is not a number", path=file) from err
            if not np.isfinite(value):
                raise HyperionFileError(f"{file}:{number}: the score {row[2]!r} is not finite", path=file)
            values.append(value)
        lines = [fields for _, fields in numbered]
        model_set, seg_set, mi, si = _index([r[0] for r in lines], [r[1] for r in lines])
        scores = np.zeros((model_set.shape[0], seg_set.shape[0]))
        mask = np.zeros(scores.shape, dtype=bool)
        scores[mi, si] = values
        mask[mi, si] = True
        return cls(model_set=model_set, seg_set=seg_set, scores=scores, score_mask=mask)

    def align_with(self, model_set: Any, seg_set: Any) -> TrialScores:
        """Reorder rows and columns to the given ids.

        Raises:
            HyperionInputError: if an id has no row or column here.
        """
        models, segs = np.asarray(model_set, dtype=str), np.asarray(seg_set, dtype=str)
        r = _positions(self.model_set, models, "TrialScores.align_with models")
        c = _positions(self.seg_set, segs, "TrialScores.align_with segments")
        return TrialScores(
            model_set=models, seg_set=segs, scores=self.scores[np.ix_(r, c)], score_mask=self.score_mask[np.ix_(r, c)]
        )

    def get_tar_non(self, key: TrialKey) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Target and non-target scores of the trials in ``key``.

        Returns:
            ``(target_scores, nontarget_scores)``, 1-D float64, in row-major trial order.

        Raises:
            HyperionInputError: if a keyed trial has no score.
        """
        aligned = self.align_with(key.model_set, key.seg_set)
        missing = (key.tar | key.non) & ~aligned.score_mask
        if np.any(missing):
            raise HyperionInputError(f"TrialScores.get_tar_non: {int(missing.sum())} keyed trial(s) have no score")
        return aligned.scores[key.tar], aligned.scores[key.non]


__all__ = ["TrialKey", "TrialNdx", "TrialScores"]

"""TrialNdx, TrialKey and TrialScores: HDF5 and text round trips, alignment, bad files."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest

from voicehub.hyperion.errors import HyperionFileError, HyperionInputError
from voicehub.hyperion.trials import TrialKey, TrialNdx, TrialScores

MODELS = ["spk1", "spk2", "spk3"]
SEGS = ["a.wav", "b.wav", "c.wav", "d.wav"]


def _key() -> TrialKey:
    tar = np.zeros((3, 4), dtype=bool)
    tar[0, 0] = tar[1, 2] = True
    non = ~tar
    non[2, 3] = False
    spoof = np.zeros((3, 4), dtype=bool)
    spoof[2, 3] = True
    return TrialKey.create(MODELS, SEGS, tar, non, spoof)


@pytest.mark.parametrize("suffix", [".h5", ".txt"])
def test_key_round_trip_keeps_targets_nontargets_and_spoofs(tmp_path: Path, suffix: str) -> None:
    key = _key()
    key.save(tmp_path / f"key{suffix}")
    loaded = TrialKey.load(tmp_path / f"key{suffix}")
    assert loaded.model_set.tolist() == MODELS and loaded.seg_set.tolist() == SEGS
    np.testing.assert_array_equal(loaded.tar, key.tar)
    np.testing.assert_array_equal(loaded.non, key.non)
    np.testing.assert_array_equal(loaded.spoof, key.spoof)
    assert int(loaded.non.sum()) == 9


@pytest.mark.parametrize("suffix", [".h5", ".txt"])
def test_scores_round_trip_is_lossless(tmp_path: Path, suffix: str) -> None:
    rng = np.random.default_rng(0)
    values = rng.standard_normal((3, 4)) * 1e3 + 1 / 3
    mask = np.ones((3, 4), dtype=bool)
    mask[1, 1] = False
    scores = TrialScores.create(MODELS, SEGS, values, mask)
    scores.save(tmp_path / f"scores{suffix}")
    loaded = TrialScores.load(tmp_path / f"scores{suffix}")
    np.testing.assert_array_equal(loaded.scores[loaded.score_mask], values[mask])
    np.testing.assert_array_equal(loaded.score_mask, mask)


@pytest.mark.parametrize("suffix", [".h5", ".txt"])
def test_ndx_round_trip(tmp_path: Path, suffix: str) -> None:
    ndx = _key().to_ndx()
    ndx.save(tmp_path / f"ndx{suffix}")
    np.testing.assert_array_equal(TrialNdx.load(tmp_path / f"ndx{suffix}").trial_mask, ndx.trial_mask)


def test_get_tar_non_aligns_scores_with_a_key_in_another_order() -> None:
    key = _key()
    values = np.arange(12.0).reshape(3, 4)
    scores = TrialScores.create(MODELS[::-1], SEGS[::-1], values[::-1, ::-1])
    tar, non = scores.get_tar_non(key)
    assert tar.tolist() == [0.0, 6.0]
    assert sorted(non.tolist()) == [1.0, 2.0, 3.0, 4.0, 5.0, 7.0, 8.0, 9.0, 10.0]


def test_get_tar_non_refuses_missing_scores() -> None:
    key = _key()
    mask = np.ones((3, 4), dtype=bool)
    mask[0, 0] = False
    scores = TrialScores.create(MODELS, SEGS, np.zeros((3, 4)), mask)
    with pytest.raises(HyperionInputError, match="1 keyed trial"):
        scores.get_tar_non(key)


def test_bad_trial_files_name_the_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "key.txt"
    bad.write_text("spk1 a.wav target\nspk1 b.wav maybe\n")
    with pytest.raises(HyperionFileError, match="maybe") as info:
        TrialKey.load(bad)
    assert str(bad) in str(info.value)
    short = tmp_path / "scores.txt"
    short.write_text("spk1 a.wav 0.5\nspk2 b.wav\n")
    with pytest.raises(HyperionFileError, match=r"scores.txt:2: expected 3 fields"):
        TrialScores.load(short)
    _key().save(tmp_path / "key.h5")
    data = (tmp_path / "key.h5").read_bytes()
    (tmp_path / "cut.h5").write_bytes(data[:600])
    with pytest.raises(HyperionFileError) as info2:
        TrialKey.load(tmp_path / "cut.h5")
    assert str(tmp_path / "cut.h5") in str(info2.value)


def test_create_validates_ids_and_shapes() -> None:
    with pytest.raises(HyperionInputError, match="unique"):
        TrialNdx.create(["a", "a"], SEGS)
    with pytest.raises(HyperionInputError, match=r"expected shape \(3, 4\)"):
        TrialScores.create(MODELS, SEGS, np.zeros((4, 3)))
    with pytest.raises(HyperionInputError, match="two labels"):
        TrialKey.create(MODELS, SEGS, np.ones((3, 4)), np.ones((3, 4)))


@pytest.mark.parametrize("bad_id", ["spk 1", "", "a\tb"])
def test_ids_must_be_non_empty_without_whitespace(bad_id: str) -> None:
    with pytest.raises(HyperionInputError, match="non-empty and contain no whitespace"):
        TrialNdx.create([bad_id, "spk2"], SEGS)
    with pytest.raises(HyperionInputError, match="non-empty and contain no whitespace"):
        TrialScores.create(MODELS, [bad_id, "b", "c", "d"], np.zeros((3, 4)))


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_text_scores_that_are_not_finite_are_refused_with_the_line(tmp_path: Path, value: str) -> None:
    path = tmp_path / "scores.txt"
    path.write_text(f"spk1 a.wav 1.5\nspk1 b.wav {value}\n")
    with pytest.raises(HyperionFileError, match=rf"scores.txt:2: the score '{value}' is not finite"):
        TrialScores.load(path)


def test_h5_scores_that_are_not_finite_are_refused(tmp_path: Path) -> None:
    scores = np.zeros((3, 4))
    path = tmp_path / "s.h5"
    TrialScores.create(MODELS, SEGS, scores).save(path)
    with h5py.File(path, "r+") as f:
        f["scores"][1, 2] = np.nan
    with pytest.raises(HyperionFileError, match=r"NaN or infinite, e\.g\. spk2 c\.wav"):
        TrialScores.load(path)


def test_a_text_key_listing_a_trial_twice_is_refused_naming_both_lines(tmp_path: Path) -> None:
    path = tmp_path / "key.txt"
    path.write_text("spk1 a.wav target\nspk2 a.wav nontarget\nspk1 a.wav nontarget\n")
    with pytest.raises(HyperionFileError, match=r"key\.txt:3: trial spk1 a\.wav repeats line 1"):
        TrialKey.load(path)


def test_h5_key_with_an_unknown_code_or_duplicate_ids_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "key.h5"
    _key().save(path)
    with h5py.File(path, "r+") as f:
        f["trial_mask"][0, 1] = 5
    with pytest.raises(HyperionFileError, match=r"/trial_mask holds \[5\], expected only \[0, 1, -1, -2\]"):
        TrialKey.load(path)
    _key().save(path)
    with h5py.File(path, "r+") as f:
        del f["ID/row_ids"]
        f.create_dataset("ID/row_ids", data=np.array([b"spk1", b"spk1", b"spk3"]))
    with pytest.raises(HyperionFileError, match="ids must be unique, 'spk1' repeats"):
        TrialKey.load(path)


def test_trial_files_get_the_default_mode(tmp_path: Path) -> None:
    import os

    old = os.umask(0o022)
    try:
        _key().save(tmp_path / "key.txt")
        _key().save(tmp_path / "key.h5")
    finally:
        os.umask(old)
    assert (tmp_path / "key.txt").stat().st_mode & 0o777 == 0o644
    assert (tmp_path / "key.h5").stat().st_mode & 0o777 == 0o644

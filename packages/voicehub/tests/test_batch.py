"""``voicehub.batch.map_corpus``: local and Ray engines equal a plain loop; bad files, resume, inputs.

The corpus is 200 real clips cut at test time from the LibriVox and synthetic test audio
(0.5 to 2.5 s, seeded), so the whole job stays short: VAD (Silero) and speaker embeddings
(GE2E) with 2 workers.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
import soundfile as sf

from voicehub import AutoModel
from voicehub.architectures.errors import NoSpeechFoundError
from voicehub.batch import SUMMARY_FILE_NAME, Step, expand_inputs, map_corpus, read_output
from voicehub.batch._local import forks_from_driver
from voicehub.batch.corpus import plan_batches
from voicehub.core.audio import load_audio
from voicehub.core.errors import OutputPathError
from voicehub.errors import BatchInputError, BatchItemError, BatchResumeMismatchError, UnpicklableModelError

ROOT = Path(__file__).resolve().parents[3]
SOURCES = sorted((ROOT / "tests" / "data" / "librivox").glob("*.wav")) + sorted(
    (ROOT / "tests" / "data" / "synthetic").glob("*_1.flac")
)
NUM_CLIPS = 200


def _cut_corpus(directory: Path, count: int, *, seed: int = 0) -> list[str]:
    """``count`` clips of 0.5-2.5 s cut from the test audio at seeded offsets, as 16 kHz wav files."""
    rng = np.random.default_rng(seed)
    waves = [load_audio(path, target_sample_rate=16000).samples for path in SOURCES]
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for index in range(count):
        wave = waves[index % len(waves)]
        length = min(len(wave), int(rng.uniform(0.5, 2.5) * 16000))
        start = int(rng.integers(0, len(wave) - length + 1))
        path = directory / f"clip-{index:03d}.wav"
        sf.write(path, wave[start : start + length], 16000, subtype="PCM_16")
        paths.append(str(path))
    return paths


def _steps() -> list[Step]:
    return [
        Step(name="vad", model=AutoModel.from_pretrained(model_type="vad_silero", device="cpu")),
        Step(name="embed", model=AutoModel.from_pretrained(model_type="sv_ge2e", device="cpu")),
    ]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    return _cut_corpus(tmp_path_factory.mktemp("corpus"), NUM_CLIPS)


Reference = dict[str, tuple[list[tuple[float, float]], np.ndarray | None]]


@pytest.fixture(scope="module")
def plain_loop(corpus: list[str]) -> Reference:
    """The reference: each wrapper called on each file in one process, one after the other.

    A clip cut inside a pause has no speech for GE2E's own silence trimming: its embedding is
    ``None`` (the job records ``embed: NoSpeechFoundError`` for it).
    """
    vad, embed = (step.model for step in _steps())
    expected: Reference = {}
    for path in corpus:
        segments = [(s.start_s, s.end_s) for s in vad.detect(path).segments]
        try:
            expected[path] = (segments, embed.embed(path).embedding)
        except NoSpeechFoundError:
            expected[path] = (segments, None)
    assert sum(e is None for _, e in expected.values()) < 20  # most cuts hold speech
    return expected


def _check_equals_plain_loop(output: Path, expected: Reference) -> None:
    table = read_output(output)
    rows = table.to_pylist()
    assert [row["path"] for row in rows] == sorted(expected)  # every input once, sorted by path
    for row in rows:
        segments, embedding = expected[row["path"]]
        if embedding is None:
            assert row["error"].startswith("embed: NoSpeechFoundError") and row["embedding"] is None
            continue
        assert row["error"] is None
        assert [(s["start_s"], s["end_s"]) for s in row["vad_segments"]] == segments, row["path"]
        np.testing.assert_allclose(np.asarray(row["embedding"], dtype=np.float32), embedding, rtol=0, atol=1e-6)
        assert row["duration_s"] == pytest.approx(sf.info(row["path"]).duration, abs=1e-9)


@pytest.mark.slow  # ~15 s on an idle 2-core machine (worker start-up included), over a minute under load
def test_local_engine_equals_the_plain_loop_on_200_real_clips(
    corpus: list[str], plain_loop: Any, tmp_path: Path
) -> None:
    seen: list[int] = []
    summary = map_corpus(
        corpus,
        _steps(),
        output=tmp_path / "out",
        engine="local",
        workers=2,
        batch_size=25,
        progress=lambda files, seconds: seen.append(files),
    )
    _check_equals_plain_loop(tmp_path / "out", plain_loop)
    hours = sum(sf.info(path).duration for path in corpus) / 3600
    silent = sum(embedding is None for _, embedding in plain_loop.values())
    assert summary.files == summary.processed_files == NUM_CLIPS and summary.failures == silent
    assert summary.audio_hours == pytest.approx(hours) and summary.workers == 2
    parts = sorted((tmp_path / "out").glob("part-*.parquet"))
    assert sum(seen) == NUM_CLIPS and len(seen) == len(parts) > 8  # one call per part; the last batches are smaller
    written = json.loads((tmp_path / "out" / SUMMARY_FILE_NAME).read_text())
    assert written["type"] == "batch_summary" and written["files"] == NUM_CLIPS and written["steps"] == ["vad", "embed"]
    again = map_corpus(corpus, _steps(), output=tmp_path / "out", engine="local", workers=2)  # resume: all done
    assert again.skipped_files == NUM_CLIPS and again.processed_files == 0 and again.files == NUM_CLIPS


@pytest.mark.slow  # a forkserver imports torch once more: ~10 s on an idle machine, a minute under load
def test_workers_with_two_threads_start_from_a_forkserver_and_equal_the_plain_loop(
    corpus: list[str], plain_loop: Reference, tmp_path: Path
) -> None:
    assert forks_from_driver(1, _steps()) == sys.platform.startswith("linux") and not forks_from_driver(2, _steps())
    some = corpus[:12]
    summary = map_corpus(some, _steps(), output=tmp_path / "out", workers=1, cpus_per_worker=2, batch_size=4)
    _check_equals_plain_loop(tmp_path / "out", {path: plain_loop[path] for path in some})
    assert summary.files == len(some)


@pytest.mark.slow
def test_ray_engine_equals_the_plain_loop_on_200_real_clips(
    corpus: list[str], plain_loop: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ray = pytest.importorskip("ray", reason="the ray engine's extra (voicehub[ray]) is not installed")
    monkeypatch.setenv("RAY_memory_monitor_refresh_ms", "0")
    monkeypatch.setenv("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")  # same interpreter: do not ship the checkout
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        summary = map_corpus(corpus, _steps(), output=tmp_path / "out", engine="ray", workers=2, batch_size=25)
    finally:
        ray.shutdown()
    _check_equals_plain_loop(tmp_path / "out", plain_loop)
    silent = sum(embedding is None for _, embedding in plain_loop.values())
    assert summary.engine == "ray" and summary.files == NUM_CLIPS and summary.failures == silent


@pytest.mark.slow
def test_missing_empty_and_corrupt_files_become_error_rows_and_the_job_finishes(tmp_path: Path) -> None:
    good = _cut_corpus(tmp_path / "good", 3)
    (tmp_path / "empty.wav").write_bytes(b"")
    (tmp_path / "corrupt.flac").write_bytes(Path(good[0]).read_bytes()[:40])  # a truncated header
    inputs = [*good, str(tmp_path / "empty.wav"), str(tmp_path / "missing.wav"), str(tmp_path / "corrupt.flac")]
    summary = map_corpus(inputs, _steps(), output=tmp_path / "out", workers=1, batch_size=6)
    rows = {row["path"]: row for row in read_output(tmp_path / "out").to_pylist()}
    assert summary.files == 6 and summary.failures == 3 and len(rows) == 6
    assert "file is empty" in rows[str(tmp_path / "empty.wav")]["error"]
    assert "no such audio file" in rows[str(tmp_path / "missing.wav")]["error"]
    assert rows[str(tmp_path / "corrupt.flac")]["error"].startswith("read: AudioDecodeError")
    for path in good:  # the good files of the same batch are all there
        assert rows[path]["error"] is None and rows[path]["embedding"] is not None
    for path in inputs[3:]:
        assert rows[path]["vad_segments"] is None and rows[path]["embedding"] is None
    # files are dispatched longest first, so the 40-byte corrupt file is the first bad one to run
    with pytest.raises(BatchItemError, match=r"corrupt\.flac: read: AudioDecodeError: .*cannot decode as audio"):
        map_corpus(inputs, _steps(), output=tmp_path / "raise", workers=1, on_error="raise")


_KILLED_JOB = """
import sys
from voicehub.batch import map_corpus
if __name__ == "__main__":
    paths = sys.argv[2:]
    map_corpus(paths, ["vad"], output=sys.argv[1], workers=1, batch_size=2,
               progress=lambda files, seconds: print("part", flush=True))
"""


@pytest.mark.slow
def test_a_job_killed_midway_and_resumed_writes_each_input_exactly_once(tmp_path: Path) -> None:
    paths = _cut_corpus(tmp_path / "clips", 40)
    output = tmp_path / "out"
    script = tmp_path / "job.py"
    script.write_text(_KILLED_JOB)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_WAIT_POLICY": "PASSIVE"}
    job = subprocess.Popen(
        [sys.executable, str(script), str(output), *paths],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )
    try:
        assert job.stdout is not None
        for _ in range(3):  # three parts written: kill the driver and its workers, mid-job
            assert job.stdout.readline() == "part\n"
    finally:
        os.killpg(job.pid, signal.SIGKILL)
        job.wait()
    before = read_output(output).column("path").to_pylist()
    assert 6 <= len(before) < len(paths)
    time.sleep(0.1)
    started: list[tuple[int, int, float]] = []
    summary = map_corpus(
        paths, ["vad"], output=output, workers=1, batch_size=8, on_start=lambda *counts: started.append(counts)
    )
    assert summary.skipped_files == len(before) and summary.processed_files == len(paths) - len(before)
    # progress starts at the files the killed run wrote: the corpus stays the total, their hours count as done
    ((total, done, done_s),) = started
    assert (total, done) == (len(paths), len(before))
    assert done_s == pytest.approx(sum(sf.info(path).duration for path in before), abs=1e-9)
    written = read_output(output).column("path").to_pylist()
    assert written == sorted(paths)  # every input exactly once
    assert not list(output.glob(".part-*"))


_ORPHANED_JOB = """
import multiprocessing
import sys
from voicehub.batch import map_corpus
def report(files, seconds):
    print(" ".join(str(child.pid) for child in multiprocessing.active_children()), flush=True)
if __name__ == "__main__":
    map_corpus(sys.argv[3:], ["vad"], output=sys.argv[1], workers=2, cpus_per_worker=int(sys.argv[2]), batch_size=1,
               progress=report)
"""


def _alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:  # gone (and reaped)
        return False
    return "\nState:\tZ" not in status  # a zombie runs nothing: it waits to be reaped


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("cpus_per_worker", [1, 2], ids=["forked", "forkserver"])
@pytest.mark.slow
def test_workers_exit_when_the_driver_is_killed(tmp_path: Path, cpus_per_worker: int) -> None:
    paths = _cut_corpus(tmp_path / "clips", 24)
    script = tmp_path / "job.py"
    script.write_text(_ORPHANED_JOB)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_WAIT_POLICY": "PASSIVE"}
    job = subprocess.Popen(
        [sys.executable, str(script), str(tmp_path / "out"), str(cpus_per_worker), *paths],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )
    try:
        assert job.stdout is not None
        workers = [int(pid) for pid in job.stdout.readline().split()]  # after the first part: the pool runs
        assert len(workers) == 2 and all(_alive(pid) for pid in workers)
        helpers = Path(f"/proc/{job.pid}/task/{job.pid}/children").read_text().split()  # forkserver, tracker
        children = sorted({*workers, *map(int, helpers)})
        os.kill(job.pid, signal.SIGKILL)  # the driver only: its workers are orphaned
        job.wait()
        deadline = time.monotonic() + 5.0
        while any(_alive(pid) for pid in children) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not [pid for pid in children if _alive(pid)]
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(job.pid, signal.SIGKILL)  # whatever is left of the job, if the test failed
        job.wait()


_OPENMP_DRIVER = """
import sys
import torch
from voicehub.batch import map_corpus, read_output
from voicehub.batch._local import forks_from_driver
if __name__ == "__main__":
    torch.set_num_threads(2)
    torch.randn(10**7).exp_()  # the driver's OpenMP pool now has threads a forked child must never wait on
    summary = map_corpus(sys.argv[2:], ["vad"], output=sys.argv[1], workers=2, batch_size=16)
    print(forks_from_driver(1, []), summary.workers, summary.files, summary.failures, read_output(sys.argv[1]).num_rows)
"""


@pytest.mark.slow
def test_workers_forked_from_a_driver_that_used_openmp_threads_do_not_deadlock(tmp_path: Path) -> None:
    paths = _cut_corpus(tmp_path / "clips", 4)
    script = tmp_path / "job.py"
    script.write_text(_OPENMP_DRIVER)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_WAIT_POLICY": "PASSIVE"}
    # a forked worker that ran torch on two threads would wait forever on the driver's OpenMP threads
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "out"), *paths],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=True,
    )
    # 4 files in batches of up to 16 still run on both workers: the batches shrink to spread them
    assert done.stdout.split() == [str(sys.platform.startswith("linux")), "2", "4", "0", "4"]


def test_inputs_from_a_directory_a_path_list_and_a_jsonl_manifest(tmp_path: Path) -> None:
    paths = _cut_corpus(tmp_path / "clips", 3)
    assert expand_inputs(tmp_path / "clips") == paths
    (tmp_path / "list.txt").write_text("# clips\nclips/clip-002.wav\n\n" + paths[0] + "\nclips/clip-002.wav\n")
    assert expand_inputs(tmp_path / "list.txt") == [paths[2], paths[0]]
    # A text with U+2028 written unescaped (ensure_ascii=False, as most JSONL writers) stays in its row.
    lines = [
        json.dumps({"path": "clips/clip-001.wav", "text": "x\u2028y"}, ensure_ascii=False),
        json.dumps({"audio_filepath": paths[0]}),
    ]
    (tmp_path / "manifest.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert expand_inputs(tmp_path / "manifest.jsonl") == [paths[1], paths[0]]
    (tmp_path / "bad.jsonl").write_text('{"file": "a.wav"}\n')
    with pytest.raises(BatchInputError, match=r"bad\.jsonl:1: expected an object with a string 'path'"):
        expand_inputs(tmp_path / "bad.jsonl")
    with pytest.raises(BatchInputError, match="names no audio file"):
        expand_inputs([])


def test_bad_settings_are_refused_before_anything_runs(tmp_path: Path) -> None:
    clip = str(SOURCES[0])
    with pytest.raises(BatchInputError, match=r"step 'diarize': expected one of \['embed', 'transcribe', 'vad'\]"):
        map_corpus([clip], ["diarize"], output=tmp_path / "a")
    with pytest.raises(BatchInputError, match="engine: expected 'local' or 'ray', got 'dask'"):
        map_corpus([clip], ["vad"], output=tmp_path / "a", engine="dask")  # type: ignore[arg-type]
    with pytest.raises(BatchInputError, match="batch_size: expected an integer >= 1, got 0"):
        map_corpus([clip], ["vad"], output=tmp_path / "a", batch_size=0)
    with pytest.raises(BatchInputError, match="needs a voice-activity-detection model"):
        Step(name="vad", model=AutoModel.from_pretrained(model_type="sv_ge2e"))
    with pytest.raises(BatchInputError, match="only the 'ray' engine reserves GPUs"):
        map_corpus([clip], ["vad"], output=tmp_path / "a", gpus_per_worker=1)
    training = AutoModel.from_pretrained(model_type="vad_silero", device="cpu").load_for_training()
    with pytest.raises(UnpicklableModelError, match="loaded for training"):  # even though forked workers need no pickle
        map_corpus([clip], [training], output=tmp_path / "a")
    assert not (tmp_path / "a").exists()


def test_an_output_with_parts_is_refused_without_resume_and_with_other_steps(tmp_path: Path) -> None:
    clip = str(SOURCES[1])
    map_corpus([clip], ["vad"], output=tmp_path / "out", workers=1)
    with pytest.raises(OutputPathError, match=r"already holds 1 part.*resume=True"):
        map_corpus([clip], ["vad"], output=tmp_path / "out", resume=False)
    with pytest.raises(OutputPathError, match=r"holds columns .* this job writes"):
        map_corpus([clip], ["embed"], output=tmp_path / "out")


def test_a_resume_with_other_options_is_refused_and_the_summary_records_the_models(tmp_path: Path) -> None:
    clips = [str(SOURCES[0]), str(SOURCES[1])]
    model = AutoModel.from_pretrained(model_type="vad_silero", device="cpu")
    summary = map_corpus(clips[:1], [model], output=tmp_path / "out", workers=1)
    ((recorded,),) = [json.loads((tmp_path / "out" / SUMMARY_FILE_NAME).read_text())["models"]]
    assert (recorded["step"], recorded["model_type"], recorded["options"]["threshold"]) == ("vad", "vad_silero", 0.5)
    assert summary.models[0]["source"] == "dist:silero-vad/silero_vad/data/silero_vad.jit"
    options = dataclasses.replace(model.default_options, threshold=0.6)
    stricter = type(model)(model.config, source=model.source, device="cpu", options=options)
    refused = r"steps\[0\]\.options\.threshold: saved 0\.5, now 0\.6"
    with pytest.raises(BatchResumeMismatchError, match=refused) as caught:
        map_corpus(clips, [stricter], output=tmp_path / "out", workers=1)
    assert caught.value.differences == (("steps[0].options.threshold", 0.5, 0.6),)
    assert read_output(tmp_path / "out").column("path").to_pylist() == clips[:1]  # refused before any work
    again = map_corpus(clips, [model], output=tmp_path / "out", workers=1)  # the same model resumes
    assert (again.skipped_files, again.processed_files, again.files) == (1, 1, 2)


def test_a_resumed_job_runs_failed_inputs_again_and_their_new_row_supersedes_the_error(tmp_path: Path) -> None:
    clip, empty = str(SOURCES[1]), tmp_path / "late.wav"
    empty.write_bytes(b"")  # not written yet when the first run read it
    first = map_corpus([clip, str(empty)], ["vad"], output=tmp_path / "out", workers=1)
    assert (first.files, first.failures, first.retried_files) == (2, 1, 0)
    kept = map_corpus([clip, str(empty)], ["vad"], output=tmp_path / "out", workers=1, retry_failed=False)
    assert (kept.processed_files, kept.skipped_files, kept.failures) == (0, 2, 1)
    sf.write(empty, load_audio(clip, target_sample_rate=16000).samples, 16000)  # the file is fixed
    started: list[tuple[int, int, float]] = []
    again = map_corpus(
        [clip, str(empty)], ["vad"], output=tmp_path / "out", workers=1, on_start=lambda *c: started.append(c)
    )
    assert (again.processed_files, again.skipped_files, again.retried_files) == (1, 1, 1)
    assert (again.files, again.failures) == (2, 0) and started[0][:2] == (2, 1)
    assert len(list((tmp_path / "out").glob("part-*.parquet"))) == 2  # the error row's part is rewritten without it
    assert sorted(pd.read_parquet(tmp_path / "out")["error"].isna()) == [True, True]  # superseded rows are dropped
    rows = read_output(tmp_path / "out").to_pylist()
    assert [row["path"] for row in rows] == sorted([clip, str(empty)])  # one row per input: the last written
    assert all(row["error"] is None for row in rows)
    assert rows[0]["vad_segments"] == rows[1]["vad_segments"] and rows[0]["vad_segments"]  # the same audio
    assert read_output(tmp_path / "out", columns=["error"]).column_names == ["error"]
    assert map_corpus([clip, str(empty)], ["vad"], output=tmp_path / "out", workers=1).processed_files == 0


def test_batches_go_longest_first_and_shrink_so_the_workers_finish_together(tmp_path: Path) -> None:
    sizes = [50, 400, 50, 50, 400, 50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 50]  # bytes: the work scales with them
    paths = []
    for index, size in enumerate(sizes):
        path = tmp_path / f"f{index:02d}.wav"
        path.write_bytes(b"x" * size)
        paths.append(str(path))
    paths.append(str(tmp_path / "missing.wav"))  # no size: an error row, dispatched last
    batches = plan_batches(paths, batch_size=3, workers=2)
    flat = [path for batch in batches for path in batch]
    assert flat == [paths[1], paths[4], *(p for p, size in zip(paths, sizes, strict=False) if size == 50), paths[-1]]
    # at most 3 files and at most a quarter (2 workers x 2) of the bytes not yet cut: the big files
    # alone, then 3 small ones (150 of 700), then ever smaller batches, so no worker idles on a tail
    assert [len(batch) for batch in batches] == [1, 1, 3, 2, 2, *[1] * 8]
    one_worker = plan_batches(paths[:5], batch_size=2, workers=1)  # nothing to balance: full batches
    assert one_worker == [[paths[1], paths[4]], [paths[0], paths[2]], [paths[3]]]


def test_resume_keys_files_by_resolved_path_and_content_not_by_the_path_string(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _cut_corpus(tmp_path / "a" / "clips", 2, seed=0)
    other = _cut_corpus(tmp_path / "b" / "clips", 2, seed=1)  # the same file names, other audio
    names = ["clips/clip-000.wav", "clips/clip-001.wav"]
    output = tmp_path / "out"
    monkeypatch.chdir(tmp_path / "a")
    one = map_corpus([*names, *first], ["vad"], output=output, workers=1)  # relative and absolute: run once
    assert (one.processed_files, one.skipped_files, one.files) == (2, 0, 2)
    again = map_corpus(first, ["vad"], output=output, workers=1)  # the same files by absolute paths: done
    assert (again.processed_files, again.skipped_files, again.files) == (0, 2, 2)
    monkeypatch.chdir(tmp_path / "b")
    two = map_corpus(names, ["vad"], output=output, workers=1)  # another corpus under the same names: run
    assert (two.processed_files, two.skipped_files, two.files) == (2, 0, 4)
    rows = read_output(output).to_pylist()
    assert [row["path"] for row in rows] == sorted(names * 2)
    assert {row["resolved_path"] for row in rows} == {os.path.realpath(path) for path in [*first, *other]}
    for row in rows:  # each row holds its own file's results: the clips' lengths differ between the corpora
        assert row["duration_s"] == pytest.approx(sf.info(row["resolved_path"]).duration, abs=1e-9)
    assert rows[0]["duration_s"] != rows[1]["duration_s"]

    size = os.path.getsize(first[0])
    sf.write(first[0], load_audio(other[1], target_sample_rate=16000).samples, 16000)  # first[0] changes
    redo = map_corpus(first, ["vad"], output=output, workers=1)
    assert (redo.processed_files, redo.changed_files, redo.skipped_files, redo.files) == (1, 1, 1, 4)
    changed = [row for row in read_output(output).to_pylist() if row["resolved_path"] == os.path.realpath(first[0])]
    assert [row["fingerprint"]["size_bytes"] for row in changed] == [os.path.getsize(first[0])] != [size]
    assert changed[0]["duration_s"] == pytest.approx(sf.info(other[1]).duration, abs=1e-9)
    written = json.loads((output / SUMMARY_FILE_NAME).read_text())
    assert (written["files"], written["changed_files"], written["schema_version"]) == (4, 1, 2)


def test_the_output_directory_reads_with_pandas_and_pyarrow_one_row_per_file(tmp_path: Path) -> None:
    clips = _cut_corpus(tmp_path / "clips", 3)
    output = tmp_path / "out"
    map_corpus(clips[:2], ["vad"], output=output, workers=1, batch_size=1)
    Path(clips[0]).write_bytes(b"")  # changed: its first row is superseded by the next run's error row
    map_corpus(clips, ["vad"], output=output, workers=1, batch_size=1)
    assert (output / SUMMARY_FILE_NAME).is_file() and SUMMARY_FILE_NAME.startswith("_")
    frame = pd.read_parquet(output)
    assert sorted(frame["path"]) == clips  # the first part only held the superseded row: removed
    assert frame.set_index("path").loc[clips[0], "error"].startswith("read:")
    assert frame["error"].isna().sum() == 2
    table = pq.ParquetDataset(output).read()
    assert sorted(table.column("path").to_pylist()) == clips
    assert table.column_names == read_output(output).column_names


def test_an_output_written_before_rows_were_keyed_by_file_is_read_but_not_resumed(tmp_path: Path) -> None:
    clip = str(SOURCES[1])
    map_corpus([clip], ["vad"], output=tmp_path / "new", workers=1)
    (part,) = (tmp_path / "new").glob("part-*.parquet")
    old = tmp_path / "old"
    old.mkdir()
    table = pq.read_table(part)
    pq.write_table(table.drop_columns(["resolved_path", "fingerprint"]), old / "part-000000.parquet")
    (old / "summary.json").write_text("{}")
    assert (
        read_output(old).to_pylist()
        == read_output(tmp_path / "new").drop_columns(["resolved_path", "fingerprint"]).to_pylist()
    )
    with pytest.raises(
        OutputPathError,
        match=r"part-000000\.parquet was written before batch resume keyed rows by file.*"
        r"write into a new directory",
    ):
        map_corpus([clip], ["vad"], output=old, workers=1)

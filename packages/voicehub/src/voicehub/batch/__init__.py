"""Corpus-scale batch jobs: run VAD, speaker embeddings or transcription over many files.

:func:`map_corpus` reads a list, a directory, a path list or a JSONL manifest, runs the steps
on a pool of worker processes (``engine="local"``) or on Ray Data actors (``engine="ray"``,
``pip install "voicehub[ray]"``, on this machine or a cluster), and writes Parquet parts and a
JSON summary that a killed job resumes from. See ``docs/batch.md``. Importing this package
imports neither torch, pyarrow nor ray.
"""

from __future__ import annotations

from voicehub.batch._inputs import expand_inputs
from voicehub.batch._output import SUMMARY_FILE_NAME, BatchSummary, read_output
from voicehub.batch._worker import STEP_TASKS, BatchWorker, OnError, Step, output_schema
from voicehub.batch.corpus import Engine, ProgressCallback, StartCallback, StepLike, map_corpus

__all__ = [
    "STEP_TASKS",
    "SUMMARY_FILE_NAME",
    "BatchSummary",
    "BatchWorker",
    "Engine",
    "OnError",
    "ProgressCallback",
    "StartCallback",
    "Step",
    "StepLike",
    "expand_inputs",
    "map_corpus",
    "output_schema",
    "read_output",
]

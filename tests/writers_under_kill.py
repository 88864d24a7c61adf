"""Every VoiceHub file writer, run in forked children that a test kills with SIGKILL mid-write.

Run as a process (``python writers_under_kill.py``) by ``test_writers_killed.py`` (which does not
import it, so collecting the tests loads no torch): it imports every writer once, prints the case
names as one JSON line, then reads one JSON command per line on stdin:

* ``{"run": CASE, "directory": D, "hold": POINT, "ready": R, "before": B, "earlier": E}`` forks a
  child that prepares ``D`` (what the writer needs, :data:`PREPARE`, and with ``E`` the output of
  an earlier complete run), writes a digest of every visible entry of
  ``D`` to ``B``, then runs the writer, held at ``POINT`` (``None`` runs it to the end):

  - ``"created"``: the temporary file or staging directory was just created (audit events
    ``tempfile.mkstemp`` / ``tempfile.mkdtemp``);
  - ``"writing"``: the writer's own callback has written part of the content (callback writers);
  - ``"commit"``: the content is complete and synced, just before the rename
    (:data:`voicehub.core.files.COMMIT_AUDIT_EVENT`).

  Held, the child writes the temporary path to ``R`` and sleeps until killed. Answers the pid.
* ``{"wait": PID}`` reaps that child and answers its wait status (``-9`` when SIGKILLed).

Forking from this one process (which has run no threaded torch code: ``OMP_NUM_THREADS=1``) keeps
a kill case to a fraction of a second instead of a fresh interpreter loading torch each time.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import matplotlib
import numpy as np
import pyarrow as pa
import pyarrow.parquet
import torch

matplotlib.use("Agg")
import matplotlib.pyplot  # imported once here, so that the forked writers start at once

from voicehub.architectures.silero.config import SileroConfig
from voicehub.architectures.vits.checkpoint import export_training_checkpoint
from voicehub.architectures.vits.config import VITSConfig
from voicehub.architectures.vits.model import VITSGenerator
from voicehub.architectures.whisper.checkpoint import export_openai_checkpoint
from voicehub.architectures.whisper.config import WhisperConfig
from voicehub.architectures.whisper.model import Whisper
from voicehub.batch._inputs import input_key
from voicehub.batch._output import BatchSummary, PartWriter
from voicehub.cli._outputs import write_destination
from voicehub.core import save_audio
from voicehub.core.files import COMMIT_AUDIT_EVENT, atomic_write, write_directory, write_text_atomic
from voicehub.core.strict_json import dumps
from voicehub.hyperion.metrics import plot_det
from voicehub.hyperion.np.transforms import LNorm
from voicehub.hyperion.torch.checkpoint import save_single_file
from voicehub.hyperion.trials import TrialKey
from voicehub.training import CheckpointStore
from voicehub.training.callbacks import JSONLMetricsLog
from voicehub.training.manifest import ManifestRecord, write_manifest

HOLD: dict[str, Any] = {"point": None, "ready": None, "directory": None}
RNG = np.random.default_rng(0)
SIZE = 1 << 20  # bytes of a "large" payload: writes that take a while


def _held(temporary: str) -> None:
    Path(HOLD["ready"]).write_text(temporary)
    while True:
        time.sleep(1)


def _audit(event: str, args: tuple[Any, ...]) -> None:
    point, directory = HOLD["point"], HOLD["directory"]
    if point is None:
        return
    if point == "created" and event in ("tempfile.mkstemp", "tempfile.mkdtemp"):
        made = Path(args[0]).resolve()
        if directory in made.parents and not made.name.startswith(".voicehub-probe-"):
            _held(str(made))
    if point == "commit" and event == COMMIT_AUDIT_EVENT:
        _held(str(args[0]))


def _partial(temporary: Path, data: bytes) -> None:
    """Write ``data`` to ``temporary``, half of it then a hold when the case is held at ``"writing"``."""
    with temporary.open("wb") as handle:
        handle.write(data[: len(data) // 2])
        handle.flush()
        if HOLD["point"] == "writing":
            _held(str(temporary))
        handle.write(data[len(data) // 2 :])


def _payload(version: int) -> bytes:
    return bytes([version]) * SIZE


# ----------------------------------------------------------------------------- the writers
# Each case: (prepare(directory) run before the held write, write(directory, version) the writer).
def _atomic_write(directory: Path, version: int) -> None:
    atomic_write(directory / "out.bin", lambda tmp: _partial(tmp, _payload(version)))


def _write_directory(directory: Path, version: int) -> None:
    def write(staging: Path) -> None:
        (staging / "config.json").write_text(json.dumps({"version": version}))
        _partial(staging / "model.safetensors", _payload(version))

    write_directory(directory / "model", write, record=True)


def _checkpoint_store(directory: Path, version: int) -> None:
    big = torch.full((SIZE // 4,), float(version))

    def write(handle: Any) -> None:
        buffer = io.BytesIO()
        torch.save({"weight": big}, buffer)
        data = buffer.getvalue()
        handle.write(data[: len(data) // 2])
        handle.flush()
        if HOLD["point"] == "writing":
            _held(handle.name)
        handle.write(data[len(data) // 2 :])

    CheckpointStore(directory / "checkpoints").save(2, {"model.pt": write})


def _write_destination(directory: Path, version: int) -> None:
    write_destination(directory / "speech.raw", lambda tmp: _partial(tmp, _payload(version)), what="-o/--output")


def _write_text_atomic(directory: Path, version: int) -> None:
    write_text_atomic(directory / "notes.txt", f"version {version}\n" * 1000)


def _save_audio(directory: Path, version: int) -> None:
    save_audio(directory / "speech.wav", np.full(16000, 0.1 * version, np.float32), 16000)


def _config_save(directory: Path, version: int) -> None:
    SileroConfig(model_version="v5" if version == 1 else "v6").save_pretrained(directory)


def _write_manifest(directory: Path, version: int) -> None:
    records = [ManifestRecord(audio_path=directory / f"{i}.wav", duration_s=1.0 + version) for i in range(200)]
    write_manifest(records, directory / "train.jsonl")


def _metrics_logged(directory: Path) -> None:
    lines = [dumps({"event": "step", "step": step, "epoch": 0, "loss": 1.0 / step}) for step in range(1, 400)]
    (directory / "metrics.jsonl").write_text("".join(line + "\n" for line in lines))


def _metrics_log(directory: Path, version: int) -> None:
    log = directory / "metrics.jsonl"
    trainer = SimpleNamespace(is_main=True, state=SimpleNamespace(step=400 - version * 100))
    JSONLMetricsLog(log).on_train_start(trainer)  # type: ignore[arg-type]


_SCHEMA = pa.schema([("path", pa.string()), ("duration_s", pa.float64()), ("error", pa.string())])


def _batch_part(directory: Path, version: int) -> None:
    writer = PartWriter(directory, _SCHEMA, steps=[{"step": "vad"}], resume=True)
    paths = [f"clip-{version}-{i}.wav" for i in range(2000)]
    keys = {path: input_key(path) for path in paths}  # files that do not exist: keys without fingerprints
    writer.write(pa.table({"path": paths, "duration_s": [1.0] * len(paths), "error": [None] * len(paths)}), keys)


def _batch_summary(directory: Path, version: int) -> None:
    writer = PartWriter(directory, _SCHEMA, steps=[{"step": "vad"}], resume=True)
    fields: dict[str, Any] = {"files": version, "failures": 0, "audio_hours": 1.0, "processed_files": version}
    fields.update(
        processed_audio_hours=1.0, skipped_files=0, retried_files=0, changed_files=0, wall_s=1.0, startup_s=None
    )
    fields.update(files_per_s=1.0, audio_hours_per_s=1.0, engine="local", workers=1, steps=("vad",))
    writer.write_summary(BatchSummary(output=directory, **fields))


def _hyperion_np(directory: Path, version: int) -> None:
    LNorm(name="ln").fit(RNG.normal(size=(50, 4)) + version).save(directory / "lnorm.h5")


def _hyperion_trials(directory: Path, version: int) -> None:
    models = [f"m{i}" for i in range(30 + version)]
    tar = np.eye(len(models), dtype=bool)
    TrialKey.create(models, models, tar, ~tar).save(directory / "trials.h5")


def _hyperion_torch(directory: Path, version: int) -> None:
    state = {"weight": torch.full((64, 64), float(version))}
    save_single_file(directory / "model.pth", {"class_name": "X"}, state, class_path="m:X", package_version="1")


def _plot_det(directory: Path, version: int) -> None:
    plot_det({"sys": (RNG.normal(1 + version, 1, 200), RNG.normal(0, 1, 200))}, directory / "det.png")


WHISPER = Whisper(
    WhisperConfig(
        num_mel_bins=80, audio_context=1500, audio_width=16, audio_heads=2, audio_layers=1, text_context=8,
        text_width=16, text_heads=2, text_layers=1,
    )
)  # fmt: skip
VITS = VITSGenerator(VITSConfig())


def _whisper_export(directory: Path, version: int) -> None:
    with torch.no_grad():
        WHISPER.encoder.conv1.bias.fill_(version)
    export_openai_checkpoint(WHISPER, directory / "tiny.pt")


def _vits_export(directory: Path, version: int) -> None:
    with torch.no_grad():
        VITS.dec.conv_pre.bias.fill_(version)
    export_training_checkpoint(VITS, directory / "voice.ckpt")


WRITERS: dict[str, Callable[[Path, int], None]] = {
    "core.files.atomic_write": _atomic_write,
    "core.files.write_directory": _write_directory,
    "core.files.write_text_atomic": _write_text_atomic,
    "core.audio.save_audio": _save_audio,
    "core.config.Config.save_pretrained": _config_save,
    "training.CheckpointStore.save": _checkpoint_store,
    "training.write_manifest": _write_manifest,
    "training.JSONLMetricsLog": _metrics_log,
    "batch.PartWriter.write": _batch_part,
    "batch.PartWriter.write_summary": _batch_summary,
    "cli.write_destination": _write_destination,
    "hyperion.np.HyperNPModel.save": _hyperion_np,
    "hyperion.trials.TrialKey.save": _hyperion_trials,
    "hyperion.torch.save_single_file": _hyperion_torch,
    "hyperion.metrics.plot_det": _plot_det,
    "architectures.whisper.export_openai_checkpoint": _whisper_export,
    "architectures.vits.export_training_checkpoint": _vits_export,
}
"""Every writer, by name. Those whose content comes from a callback can also be held mid-write."""

PREPARE: dict[str, Callable[[Path], None]] = {"training.JSONLMetricsLog": _metrics_logged}
"""What a writer needs in its directory first (the metrics log rewrites an existing log)."""

CALLBACK_WRITERS = (
    "core.files.atomic_write",
    "core.files.write_directory",
    "training.CheckpointStore.save",
    "cli.write_destination",
)


def visible_digest(directory: Path) -> dict[str, str]:
    """Relative path -> SHA-256 of every regular file under ``directory`` outside hidden entries."""
    digest = {}
    for path in sorted(directory.rglob("*")):
        relative = path.relative_to(directory)
        if path.is_file() and not any(part.startswith(".") for part in relative.parts):
            digest[str(relative)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return digest


def _child(command: dict[str, Any]) -> None:
    directory = Path(command["directory"]).resolve()
    write = WRITERS[command["run"]]
    if command["run"] in PREPARE:
        PREPARE[command["run"]](directory)
    if command.get("earlier"):
        write(directory, 1)  # the output an earlier run left, complete
    Path(command["before"]).write_text(json.dumps(visible_digest(directory)))
    HOLD.update(point=command["hold"], ready=command["ready"], directory=directory)
    write(directory, 2)


def main() -> None:
    torch.set_num_threads(1)
    sys.addaudithook(_audit)
    print(
        json.dumps({"writers": list(WRITERS), "callback": list(CALLBACK_WRITERS), "prepare": list(PREPARE)}), flush=True
    )
    for line in sys.stdin:
        command = json.loads(line)
        if "wait" in command:
            _, status = os.waitpid(command["wait"], 0)
            code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
            print(code, flush=True)
            continue
        pid = os.fork()
        if pid == 0:
            try:
                _child(command)
            except BaseException:
                traceback.print_exc()
                os._exit(1)
            os._exit(0)
        print(pid, flush=True)


if __name__ == "__main__":
    main()

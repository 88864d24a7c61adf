"""kill -9 of every VoiceHub writer mid-write: the output is absent or the old one, and nothing is mistaken for it.

Each writer (``writers_under_kill.WRITERS``: core files, audio and configs, training checkpoints,
manifests and metrics log, batch parts and summary, CLI outputs, Hyperion models, trials and
plots, Whisper and VITS exports) runs in a real child process, is held at a point of its write
(temporary file just created; half the content written; content complete, just before the
rename) and SIGKILLed there. Then every visible file under its directory must be byte-identical
to what was there before the write (absent if it was absent), the temporary the kill left must be
hidden, and the next run of the same writer must succeed and remove it.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

WRITERS = (
    "core.files.atomic_write",
    "core.files.write_directory",
    "core.files.write_text_atomic",
    "core.audio.save_audio",
    "core.config.Config.save_pretrained",
    "training.CheckpointStore.save",
    "training.write_manifest",
    "training.JSONLMetricsLog",
    "batch.PartWriter.write",
    "batch.PartWriter.write_summary",
    "cli.write_destination",
    "hyperion.np.HyperNPModel.save",
    "hyperion.trials.TrialKey.save",
    "hyperion.torch.save_single_file",
    "hyperion.metrics.plot_det",
    "architectures.whisper.export_openai_checkpoint",
    "architectures.vits.export_training_checkpoint",
)
"""The writers of ``writers_under_kill.py`` (the fixture checks that the lists agree)."""

CALLBACK_WRITERS = (
    "core.files.atomic_write",
    "core.files.write_directory",
    "training.CheckpointStore.save",
    "cli.write_destination",
)
"""Writers whose content comes from a callback, which can also be held half-written."""

PREPARE = ("training.JSONLMetricsLog",)
"""Writers whose directory holds an input before the first write (the metrics log rewrites a log)."""

KEPT_HIDDEN = {".voicehub-saved.json"}  # write_directory's own record inside a saved directory


def visible_digest(directory: Path) -> dict[str, str]:
    """Relative path -> SHA-256 of every regular file under ``directory`` outside hidden entries."""
    digest = {}
    for path in sorted(directory.rglob("*")):
        relative = path.relative_to(directory)
        if path.is_file() and not any(part.startswith(".") for part in relative.parts):
            digest[str(relative)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return digest


class Zygote:
    """The ``writers_under_kill.py`` process: forks one child per request."""

    def __init__(self) -> None:
        env = dict(os.environ, OMP_NUM_THREADS="1", MPLBACKEND="Agg")
        script = Path(__file__).with_name("writers_under_kill.py")
        self.process = subprocess.Popen(
            [sys.executable, str(script)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
        )
        names = json.loads(self._answer())
        assert (names["writers"], names["callback"], names["prepare"]) == (
            list(WRITERS),
            list(CALLBACK_WRITERS),
            list(PREPARE),
        )

    def _answer(self) -> str:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert line, f"writers_under_kill.py ended (status {self.process.poll()}); see its stderr"
        return line.strip()

    def request(self, command: dict[str, Any]) -> int:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()
        return int(self._answer())

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(timeout=30)


@pytest.fixture(scope="module")
def zygote() -> Iterator[Zygote]:
    process = Zygote()
    try:
        yield process
    finally:
        process.close()


CASES = [
    *[(name, "created", False) for name in WRITERS],
    *[(name, "commit", True) for name in WRITERS],
    *[(name, "writing", True) for name in CALLBACK_WRITERS],
]


@pytest.mark.parametrize(("writer", "hold", "earlier"), CASES, ids=[f"{name}-{hold}" for name, hold, _ in CASES])
def test_a_writer_killed_mid_write_leaves_the_old_output_and_no_file_taken_for_output(
    zygote: Zygote, tmp_path: Path, writer: str, hold: str, earlier: bool
) -> None:
    directory, ready, before = tmp_path / "out", tmp_path / "ready", tmp_path / "before.json"
    directory.mkdir()
    command = {"run": writer, "directory": str(directory), "hold": hold, "ready": str(ready), "before": str(before)}
    pid = zygote.request({**command, "earlier": earlier})
    deadline = time.monotonic() + 60
    while not ready.exists() or not ready.read_text():
        assert time.monotonic() < deadline, f"{writer} never reached {hold!r} (it ended or hangs)"
        time.sleep(0.005)
    os.kill(pid, signal.SIGKILL)
    assert zygote.request({"wait": pid}) == -signal.SIGKILL

    temporary = Path(ready.read_text()).relative_to(directory.resolve())
    assert any(part.startswith(".") for part in temporary.parts), f"{temporary} is not hidden"
    expected = json.loads(before.read_text())
    assert visible_digest(directory) == expected  # absent, or the old output byte for byte
    assert bool(expected) == (earlier or writer in PREPARE)

    rerun = zygote.request({**command, "hold": None, "earlier": False})
    assert zygote.request({"wait": rerun}) == 0, f"{writer} failed after the kill (see stderr)"
    hidden = sorted(
        str(path.relative_to(directory))
        for path in directory.rglob(".*")
        if path.name not in KEPT_HIDDEN and not any(p.startswith(".") for p in path.relative_to(directory).parts[:-1])
    )
    assert hidden == [], f"the next run left the killed write's temporaries: {hidden}"
    assert visible_digest(directory) != expected  # the next run did write

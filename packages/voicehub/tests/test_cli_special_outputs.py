"""Output options write into special files: ``--rttm /dev/stdout``, a shell's ``--rttm >(command)``,
a FIFO and a character device (made with mknod in a temporary directory), which stay what they were."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
CLIP = sorted((ROOT / "tests" / "data" / "librivox").glob("*.wav"))[0]
VAD = [sys.executable, "-m", "voicehub", "vad", str(CLIP)]
RTTM_LINE = f"SPEAKER {CLIP.stem} 1 0.322 6.588 <NA> <NA> speech <NA> <NA>"


@pytest.mark.slow
def test_rttm_to_dev_stdout_prints_it() -> None:
    result = subprocess.run([*VAD, "--rttm", "/dev/stdout"], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert RTTM_LINE in result.stdout


@pytest.mark.skipif(shutil.which("bash") is None, reason="process substitution needs bash")
@pytest.mark.slow
def test_rttm_to_a_process_substitution_pipe(tmp_path: Path) -> None:
    out = tmp_path / "piped.rttm"
    script = f'{" ".join(map(str, VAD))} --rttm >(cat > "{out}"); status=$?; wait $!; exit $status'
    result = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert out.read_text().strip() == RTTM_LINE


@pytest.mark.slow
def test_rttm_into_a_fifo_keeps_the_fifo(tmp_path: Path) -> None:
    fifo = tmp_path / "segments.rttm"
    os.mkfifo(fifo)
    received: list[str] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_text()))
    reader.start()
    result = subprocess.run([*VAD, "--rttm", str(fifo)], capture_output=True, text=True, check=False)
    reader.join(timeout=60)
    assert result.returncode == 0, result.stderr
    assert received and received[0].strip() == RTTM_LINE
    assert stat.S_ISFIFO(fifo.stat().st_mode)


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="mknod needs root")
@pytest.mark.slow
def test_rttm_into_a_character_device_keeps_the_device(tmp_path: Path) -> None:
    null = tmp_path / "null"
    os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    result = subprocess.run([*VAD, "--rttm", str(null)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert stat.S_ISCHR(null.stat().st_mode)
    assert sorted(item.name for item in tmp_path.iterdir()) == ["null"]


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (a device that is always full)")
@pytest.mark.parametrize(
    "command",
    [["models"], ["vad", str(CLIP)], ["synthesize", "Hello there.", "--output-raw", "--threads", "1"]],
    ids=["models", "vad", "synthesize-raw"],
)
@pytest.mark.slow
def test_standard_output_on_a_full_device_is_one_clear_error(command: list[str]) -> None:
    """Small outputs fail at the final flush, a raw PCM stream at its first write: the same message."""
    with open("/dev/full", "wb") as full:
        result = subprocess.run(
            [sys.executable, "-m", "voicehub", *command], stdout=full, stderr=subprocess.PIPE, text=True, check=False
        )
    assert result.returncode == 1, result.stderr
    assert "could not write to standard output: No space left on device" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr and "Exception ignored" not in result.stderr, result.stderr

"""Training checkpoints written atomically, with a content-hash manifest.

Layout of a run's checkpoint directory::

    checkpoints/
      step-00000010/            a finished checkpoint
        model.pt  optimizer.pt  rng.pt  trainer_state.json
        manifest.json           SHA-256 and size of every other file, written last
      .step-00000020.voicehub-staging-<random>/   a save in progress (or killed): never read

A save is one :func:`voicehub.core.files.write_directory` transaction, the one every VoiceHub
directory writer uses: every file is written into a hidden staging directory beside the step
directory, ``manifest.json`` last; each file and the staging directory are ``fsync``\\ ed; the
staging directory is renamed to ``step-NNNNNNNN`` (a re-save of the same step swaps the two
atomically) and the parent is ``fsync``\\ ed. A directory counts as a checkpoint only when its
name has that form and every file listed in its manifest is present with the recorded hash, so a
save killed at any point (even ``kill -9``) leaves the previous checkpoint as the latest valid
one, and the next save removes the killed one's staging directory.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from voicehub.core import strict_json
from voicehub.core.errors import OutputPathError, StrictJSONError
from voicehub.core.files import remove_leftovers, write_directory
from voicehub.training.errors import TrainingCheckpointError

MANIFEST_NAME = "manifest.json"
MANIFEST_TYPE = "voicehub.training.checkpoint"
MANIFEST_SCHEMA_VERSION = 1
STAGING_PREFIX = ".step-"
"""Start of the hidden name of a save in progress or killed (``.step-00000020.voicehub-staging-*``)."""
_LEGACY_STAGING_PREFIX = ".staging-"  # staging directories of older versions (``.staging-step-N-<pid>``)
_STEP_DIR = re.compile(r"^step-(\d{8})$")
_STAGING_DIR = re.compile(r"^\.(step-\d{8})\.voicehub-")
_CHUNK_BYTES = 1 << 20

logger = logging.getLogger(__name__)

FileWriter = Callable[[BinaryIO], None]
"""Writes one checkpoint file's bytes into an open binary file."""


def step_directory_name(step: int) -> str:
    """``step-00000010`` for step 10."""
    return f"step-{step:08d}"


def sha256_file(path: Path) -> str:
    """Hex SHA-256 of a file's content."""
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while chunk := file.read(_CHUNK_BYTES):
            digest.update(chunk)
    return digest.hexdigest()


@dataclass(frozen=True, slots=True, kw_only=True)
class Checkpoint:
    """A verified checkpoint directory.

    Attributes:
        path: the ``step-NNNNNNNN`` directory.
        step: optimizer steps completed when it was written.
        files: file name -> SHA-256, as recorded (and checked) in its manifest.
    """

    path: Path
    step: int
    files: Mapping[str, str]

    def file(self, name: str) -> Path:
        """The path of one recorded file.

        Raises:
            TrainingCheckpointError: if the manifest does not list ``name``.
        """
        if name not in self.files:
            raise TrainingCheckpointError(
                f"{self.path}: holds no {name!r} (it has {sorted(self.files)})", path=self.path
            )
        return self.path / name


class CheckpointStore:
    """Writes, finds and prunes the checkpoints of one run.

    Args:
        directory: the run's ``checkpoints`` directory (created on the first save).
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)

    def save(self, step: int, files: Mapping[str, FileWriter]) -> Checkpoint:
        """Write a checkpoint atomically.

        Args:
            step: optimizer steps completed (names the directory).
            files: file name -> writer of its bytes (``manifest.json`` is reserved).

        Returns:
            The written, verified checkpoint.

        Raises:
            TrainingCheckpointError: for a reserved or nested file name, or when writing fails
                (``checkpoint PATH: cannot write (REASON)``; the staging directory is removed,
                earlier checkpoints are untouched). Errors a writer raises propagate, with the
                same clean-up.
        """
        for name in files:
            if name == MANIFEST_NAME or "/" in name or name.startswith("."):
                raise TrainingCheckpointError(f"checkpoint file name {name!r} is reserved or not a plain name")
        self.remove_staging()
        final = self.directory / step_directory_name(step)

        def write(staging: Path) -> None:
            recorded: dict[str, dict[str, object]] = {}
            for name, writer in files.items():
                path = staging / name
                with path.open("wb") as file:
                    writer(file)
                recorded[name] = {"sha256": sha256_file(path), "num_bytes": path.stat().st_size}
            manifest = {
                "type": MANIFEST_TYPE,
                "schema_version": MANIFEST_SCHEMA_VERSION,
                "step": step,
                "files": recorded,
            }
            (staging / MANIFEST_NAME).write_text(strict_json.dumps(manifest, indent=2), encoding="utf-8")

        try:  # a re-save of the same step (a resumed run stopping where it started) replaces it as a whole
            write_directory(final, write, what="checkpoint", replace=True)
        except OutputPathError as err:
            raise TrainingCheckpointError(str(err), path=final) from err
        return self.verify(final)

    def verify(self, path: Path) -> Checkpoint:
        """Check a checkpoint directory against its manifest.

        Raises:
            TrainingCheckpointError: naming what is missing or altered.
        """
        match = _STEP_DIR.match(path.name)
        if match is None:
            raise TrainingCheckpointError(f"{path}: not a checkpoint directory name (step-NNNNNNNN)", path=path)
        manifest_path = path / MANIFEST_NAME
        try:
            manifest = strict_json.loads(manifest_path.read_bytes())
        except (OSError, StrictJSONError, ValueError) as err:
            raise TrainingCheckpointError(
                f"{path}: no readable {MANIFEST_NAME} ({err}); the save did not finish", path=path
            ) from err
        if (
            not isinstance(manifest, dict)
            or manifest.get("type") != MANIFEST_TYPE
            or manifest.get("schema_version") != MANIFEST_SCHEMA_VERSION
            or manifest.get("step") != int(match.group(1))
            or not isinstance(manifest.get("files"), dict)
        ):
            raise TrainingCheckpointError(
                f"{path}: {MANIFEST_NAME} is not a version-{MANIFEST_SCHEMA_VERSION} training checkpoint manifest "
                f"of step {int(match.group(1))}",
                path=path,
            )
        hashes: dict[str, str] = {}
        for name, entry in manifest["files"].items():
            file = path / name
            if not isinstance(entry, dict) or not file.is_file():
                raise TrainingCheckpointError(f"{path}: {name} is missing", path=path)
            if file.stat().st_size != entry.get("num_bytes") or sha256_file(file) != entry.get("sha256"):
                raise TrainingCheckpointError(
                    f"{path}: {name} does not match its recorded SHA-256 (altered or truncated)", path=path
                )
            hashes[name] = str(entry["sha256"])
        return Checkpoint(path=path, step=int(match.group(1)), files=hashes)

    def candidates(self) -> list[Path]:
        """Step directories, newest first (not yet verified)."""
        if not self.directory.is_dir():
            return []
        found = [path for path in self.directory.iterdir() if path.is_dir() and _STEP_DIR.match(path.name)]
        return sorted(found, key=lambda path: path.name, reverse=True)

    def latest(self) -> Checkpoint | None:
        """The newest checkpoint that verifies; invalid ones are skipped (and logged), staging ignored."""
        for path in self.candidates():
            try:
                return self.verify(path)
            except TrainingCheckpointError as err:
                logger.warning("skipping invalid checkpoint: %s", err)
        return None

    def prune(self, keep: int) -> None:
        """Delete all but the ``keep`` newest valid checkpoints (invalid step directories too)."""
        kept = 0
        for path in self.candidates():
            try:
                self.verify(path)
            except TrainingCheckpointError:
                shutil.rmtree(path, ignore_errors=True)
                continue
            kept += 1
            if kept > keep:
                shutil.rmtree(path, ignore_errors=True)

    def remove_staging(self) -> None:
        """Delete staging directories left by saves that did not finish (a save still running is left alone)."""
        if not self.directory.is_dir():
            return
        names = set()
        for path in self.directory.iterdir():
            if path.name.startswith(_LEGACY_STAGING_PREFIX):
                shutil.rmtree(path, ignore_errors=True)
            elif match := _STAGING_DIR.match(path.name):
                names.add(match.group(1))
        for name in sorted(names):
            remove_leftovers(self.directory, name)


__all__ = ["MANIFEST_NAME", "STAGING_PREFIX", "Checkpoint", "CheckpointStore", "sha256_file", "step_directory_name"]

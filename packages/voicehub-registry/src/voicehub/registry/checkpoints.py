"""Checkpoint sources: where a model's weights come from, resolved to a local path on request.

Three kinds exist, each written as a string (in specs, CLIs and ``from_pretrained``) and
parsed by :func:`parse_source`:

* ``"dist:<distribution>/<path>"``: a file or directory shipped inside an installed Python
  distribution, e.g. ``"dist:silero-vad/silero_vad/data/silero_vad.jit"``. Found with
  ``importlib.metadata.distribution(name).locate_file(path)``; the package is never imported.
* ``"hf:<owner>/<name>[@<revision>][/<file path>]"``: a Hugging Face Hub repository (a whole
  snapshot, or one file in it). Resolved through ``huggingface_hub``, which honours
  ``HF_HUB_OFFLINE=1`` and its cache. Imported only when such a source is resolved.
* ``"file:<path>"`` or a plain path: a local file or directory.

A plain string that names no existing path but has the shape ``owner/name`` is read as a hub
repository id (the common ``from_pretrained("acme/aurora-base")`` spelling); anything else is
a local path. Every source may carry a SHA-256 digest that a resolved *file* must match.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.metadata
import os
import re
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from voicehub.core.errors import CheckpointError
from voicehub.registry.errors import CheckpointNotFoundError, ChecksumMismatchError, SpecError

_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*$")
_CHUNK_BYTES = 1 << 20


@runtime_checkable
class CheckpointSource(Protocol):
    """Where a checkpoint lives. Implemented by the three source records of this module."""

    @property
    def sha256(self) -> str | None:
        """Expected hexadecimal SHA-256 digest of the resolved file, or ``None``."""
        ...

    def resolve(self) -> Path:
        """Return the local file or directory, verifying ``sha256`` for a file.

        Raises:
            CheckpointNotFoundError: naming the source when it does not exist.
            ChecksumMismatchError: when the file's digest differs from ``sha256``.
        """
        ...

    def is_available_offline(self) -> bool:
        """Whether :meth:`resolve` would succeed without network access (no hashing)."""
        ...

    def to_string(self) -> str:
        """The source in the string form :func:`parse_source` reads."""
        ...


def _check_sha256(value: str | None) -> str | None:
    if value is None:
        return None
    text = value.strip().lower()
    if not _SHA256.match(text):
        raise SpecError(f"sha256 must be 64 hexadecimal digits, got {value!r}", field="sha256")
    return text


def file_sha256(path: str | os.PathLike[str]) -> str:
    """Return the hexadecimal SHA-256 digest of a file, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(_CHUNK_BYTES), b""):
            digest.update(chunk)
    return digest.hexdigest()


def verify_sha256(path: Path, expected: str | None, *, source: str) -> Path:
    """Check ``path`` against ``expected`` (no check when ``expected`` is ``None``).

    Raises:
        CheckpointError: if ``expected`` is given but ``path`` is a directory.
        ChecksumMismatchError: naming both digests and the source when they differ.
    """
    if expected is None:
        return path
    if not path.is_file():
        raise CheckpointError(
            f"{source}: a sha256 digest was given but {path} is not a single file; "
            f"point the source at the file the digest belongs to",
            path=path,
        )
    actual = file_sha256(path)
    if actual != expected:
        raise ChecksumMismatchError(
            f"{source}: sha256 of {path} is {actual}, expected {expected}; the file is corrupt, "
            f"truncated or a different version; reinstall or re-download it",
            path=str(path),
            expected=expected,
            actual=actual,
        )
    return path


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class LocalSource:
    """A local checkpoint file or directory.

    Attributes:
        path: the file or directory (``~`` is expanded on resolution).
        sha256: expected digest of the file, or ``None``.
    """

    path: str
    sha256: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.path, str) or not self.path.strip():
            raise SpecError(f"LocalSource.path must be a non-empty string, got {self.path!r}", field="path")
        object.__setattr__(self, "sha256", _check_sha256(self.sha256))

    def to_string(self) -> str:
        """``file:<path>``."""
        return f"file:{self.path}"

    def is_available_offline(self) -> bool:
        """Whether the path exists."""
        return Path(self.path).expanduser().exists()

    def resolve(self) -> Path:
        """Return the existing path (see :class:`CheckpointSource`)."""
        path = Path(self.path).expanduser()
        if not path.exists():
            raise CheckpointNotFoundError(
                f"checkpoint {self.to_string()!r} not found: {path} does not exist; check the path, "
                f"or pass a hub repository as 'hf:owner/name'",
                source=self.to_string(),
            )
        return verify_sha256(path, self.sha256, source=self.to_string())


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class DistributionSource:
    """A file or directory shipped inside an installed Python distribution (a wheel).

    Attributes:
        distribution: the distribution's name on PyPI, e.g. ``"silero-vad"``.
        path: the path inside the installed files, e.g. ``"silero_vad/data/silero_vad.jit"``.
        sha256: expected digest of the file, or ``None``.
        requirement: what ``pip install`` needs to get the right version when the distribution is
            missing (``"resemblyzer==0.1.4"``); ``None`` names the distribution alone.
    """

    distribution: str
    path: str
    sha256: str | None = None
    requirement: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.distribution, str) or not re.match(r"^[A-Za-z0-9][\w.-]*$", self.distribution):
            raise SpecError(
                f"DistributionSource.distribution must be a distribution name, got {self.distribution!r}",
                field="distribution",
            )
        if not isinstance(self.path, str) or not self.path.strip("/") or self.path.startswith("/"):
            raise SpecError(
                f"DistributionSource.path must be a relative path inside the distribution, got {self.path!r}",
                field="path",
            )
        object.__setattr__(self, "sha256", _check_sha256(self.sha256))
        if self.requirement is not None and (not isinstance(self.requirement, str) or not self.requirement.strip()):
            raise SpecError(
                f"DistributionSource.requirement must be a pip requirement string or None, got {self.requirement!r}",
                field="requirement",
            )

    def to_string(self) -> str:
        """``dist:<distribution>/<path>``."""
        return f"dist:{self.distribution}/{self.path}"

    def _locate(self) -> Path | None:
        try:
            dist = importlib.metadata.distribution(self.distribution)
        except importlib.metadata.PackageNotFoundError:
            return None
        return Path(str(dist.locate_file(self.path)))

    def is_available_offline(self) -> bool:
        """Whether the distribution is installed and holds the path."""
        located = self._locate()
        return located is not None and located.exists()

    def resolve(self) -> Path:
        """Return the installed path (see :class:`CheckpointSource`)."""
        located = self._locate()
        if located is None:
            raise CheckpointNotFoundError(
                f"checkpoint {self.to_string()!r} not found: the Python distribution {self.distribution!r} "
                f"is not installed; install it with: pip install {self.requirement or self.distribution}",
                source=self.to_string(),
            )
        if not located.exists():
            raise CheckpointNotFoundError(
                f"checkpoint {self.to_string()!r} not found: {self.distribution!r} is installed but has no "
                f"{self.path!r} (looked at {located}); install the version the model expects",
                source=self.to_string(),
            )
        return verify_sha256(located, self.sha256, source=self.to_string())


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class HubSource:
    """A Hugging Face Hub repository, or one file in it.

    Resolution goes through ``huggingface_hub`` (``hf_hub_download`` for a file,
    ``snapshot_download`` for a repository), so ``HF_HUB_OFFLINE=1`` and the shared cache apply.

    Attributes:
        repo_id: ``owner/name``.
        filename: a file inside the repository, or ``None`` for the whole snapshot.
        revision: a branch, tag or commit; ``None`` is the default branch.
        sha256: expected digest of ``filename`` (only with a filename).
    """

    repo_id: str
    filename: str | None = None
    revision: str | None = None
    sha256: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.repo_id, str) or not _REPO_ID.match(self.repo_id):
            raise SpecError(f"HubSource.repo_id must look like 'owner/name', got {self.repo_id!r}", field="repo_id")
        object.__setattr__(self, "sha256", _check_sha256(self.sha256))
        if self.sha256 is not None and self.filename is None:
            raise SpecError(
                f"hf:{self.repo_id}: a sha256 digest needs a filename (a digest belongs to one file)",
                field="sha256",
            )

    def to_string(self) -> str:
        """``hf:<owner>/<name>[@<revision>][/<filename>]``."""
        text = f"hf:{self.repo_id}"
        if self.revision:
            text += f"@{self.revision}"
        if self.filename:
            text += f"/{self.filename}"
        return text

    def _hub(self) -> Any:
        from voicehub.core.lazy import import_optional

        return import_optional(
            "huggingface_hub",
            purpose="loading checkpoints from the Hugging Face Hub",
            install_hint="pip install huggingface-hub",
        )

    def is_available_offline(self) -> bool:
        """Whether the file (or a snapshot of the repository) is in the local hub cache."""
        hub = self._hub()
        if self.filename is not None:
            cached = hub.try_to_load_from_cache(self.repo_id, self.filename, revision=self.revision)
            return isinstance(cached, str)
        try:
            hub.snapshot_download(self.repo_id, revision=self.revision, local_files_only=True)
        except Exception:
            return False
        return True

    def resolve(self) -> Path:
        """Download or find in the cache (see :class:`CheckpointSource`)."""
        hub = self._hub()
        try:
            if self.filename is not None:
                path = Path(hub.hf_hub_download(self.repo_id, self.filename, revision=self.revision))
            else:
                path = Path(hub.snapshot_download(self.repo_id, revision=self.revision))
        except Exception as err:
            offline = os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in {"1", "true", "yes", "on"}
            hint = (
                "HF_HUB_OFFLINE is set and it is not in the local cache; download it once online"
                if offline
                else "check the repository id, the revision and your network or token"
            )
            raise CheckpointNotFoundError(
                f"checkpoint {self.to_string()!r} could not be fetched from the Hugging Face Hub "
                f"({type(err).__name__}: {err}); {hint}",
                source=self.to_string(),
            ) from err
        return verify_sha256(path, self.sha256, source=self.to_string())


def parse_source(source: str | os.PathLike[str] | CheckpointSource, *, sha256: str | None = None) -> CheckpointSource:
    """Turn a source string (see the module docstring) or path into a :class:`CheckpointSource`.

    Args:
        source: ``"dist:..."``, ``"hf:..."``, ``"file:..."``, a path, or a source object.
        sha256: expected digest of the resolved file; replaces the object's own when given.

    Raises:
        SpecError: for an empty or malformed source string.
    """
    if isinstance(source, (LocalSource, DistributionSource, HubSource)):
        known: CheckpointSource = source if sha256 is None else dataclasses.replace(source, sha256=sha256)
        return known
    if isinstance(source, os.PathLike):
        return LocalSource(path=os.fspath(source), sha256=sha256)
    if not isinstance(source, str):
        raise SpecError(
            f"a checkpoint source must be a string or path, got {type(source).__name__}; "
            f"use 'dist:<distribution>/<path>', 'hf:<owner>/<name>' or a local path",
            field="source",
        )
    text = source.strip()
    if not text:
        raise SpecError(
            "empty checkpoint source; pass a path, 'hf:<owner>/<name>' or 'dist:<name>/<path>'", field="source"
        )
    if text.startswith("dist:"):
        distribution, _, path = text[len("dist:") :].partition("/")
        if not distribution or not path:
            raise SpecError(f"{text!r}: expected 'dist:<distribution>/<path inside it>'", field="source")
        return DistributionSource(distribution=distribution, path=path, sha256=sha256)
    if text.startswith("hf:"):
        parts = text[len("hf:") :].split("/", 2)
        if len(parts) < 2 or not parts[0] or not parts[1]:
            raise SpecError(f"{text!r}: expected 'hf:<owner>/<name>[@<revision>][/<file>]'", field="source")
        name, _, revision = parts[1].partition("@")
        filename = parts[2] if len(parts) == 3 and parts[2] else None
        return HubSource(repo_id=f"{parts[0]}/{name}", filename=filename, revision=revision or None, sha256=sha256)
    if text.startswith("file:"):
        return LocalSource(path=text[len("file:") :], sha256=sha256)
    if _REPO_ID.match(text) and not Path(text).expanduser().exists():
        return HubSource(repo_id=text, sha256=sha256)
    return LocalSource(path=text, sha256=sha256)


__all__ = [
    "CheckpointSource",
    "DistributionSource",
    "HubSource",
    "LocalSource",
    "file_sha256",
    "parse_source",
    "verify_sha256",
]

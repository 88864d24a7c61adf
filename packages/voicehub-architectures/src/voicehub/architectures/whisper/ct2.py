"""Reader of CTranslate2 ``model.bin`` files (binary versions 4-6), possibly split into parts.

Layout (little-endian; from CTranslate2's ``models/model.cc`` reader, MIT; ``str`` is a ``u16``
byte count followed by the bytes including a final NUL)::

    u32 binary_version, str spec_name, u32 spec_revision, u32 num_variables
    num_variables x [str name, u8 rank, u32 dims[rank], u8 dtype, u32 num_bytes, bytes data]
    u32 num_aliases, num_aliases x [str alias, str target]

``dtype``: 0 float32, 1 int8, 2 int16, 3 int32, 4 float16, 5 bfloat16. A file split into parts
(``model.bin.part1`` + ``model.bin.part2``, as some wheels ship it to stay under size limits) is read
as one stream across the parts, without writing the whole file anywhere.

Every record is checked while it is read: a short read, a name that is not NUL-terminated UTF-8,
an unknown dtype, or a byte count that disagrees with the dimensions raises
:class:`~voicehub.architectures.errors.CheckpointCorruptError` with the byte offset and the name of
the variable being read.
"""

from __future__ import annotations

import dataclasses
import io
import math
import os
import struct
from collections.abc import Sequence
from pathlib import Path

import torch
from torch import Tensor

from voicehub.architectures.errors import CheckpointCorruptError
from voicehub.core.errors import CheckpointError

SUPPORTED_VERSIONS = (4, 5, 6)
"""``binary_version`` values this reader understands (CTranslate2 >= 2.0 writes 4 and later, 4.x writes 6)."""

DTYPES: dict[int, torch.dtype] = {
    0: torch.float32,
    1: torch.int8,
    2: torch.int16,
    3: torch.int32,
    4: torch.float16,
    5: torch.bfloat16,
}
"""CTranslate2 dtype codes."""

MAX_RANK = 8
"""Highest tensor rank accepted (CTranslate2 variables have rank <= 4)."""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class CT2Model:
    """The contents of a ``model.bin``.

    Attributes:
        binary_version: file format version.
        spec_name: model specification, e.g. ``"WhisperSpec"``.
        spec_revision: revision of that specification.
        variables: tensors by name, in file order, on the CPU in their stored dtype.
        aliases: alias name -> the variable it shares (e.g. a tied output projection).
    """

    binary_version: int
    spec_name: str
    spec_revision: int
    variables: dict[str, Tensor]
    aliases: dict[str, str]


class PartsReader(io.RawIOBase):
    """A read-only binary stream over several files read one after the other.

    Args:
        paths: the parts, in order.
    """

    def __init__(self, paths: Sequence[Path]) -> None:
        super().__init__()
        self._paths = list(paths)
        self._index = 0
        self._handle: io.BufferedReader | None = None
        self._position = 0

    def readable(self) -> bool:
        """Always true."""
        return True

    def tell(self) -> int:
        """Bytes read so far across all parts."""
        return self._position

    def readinto(self, buffer: memoryview | bytearray) -> int:  # type: ignore[override]
        """Fill ``buffer`` from the current part, moving on to the next part at its end; 0 at the end of the last."""
        view = memoryview(buffer).cast("B")
        while self._index < len(self._paths):
            if self._handle is None:
                self._handle = self._paths[self._index].open("rb")
            count = int(self._handle.readinto(view))
            if count:
                self._position += count
                return count
            self._handle.close()
            self._handle = None
            self._index += 1
        return 0

    def close(self) -> None:
        """Close the open part."""
        if self._handle is not None:
            self._handle.close()
            self._handle = None
        super().close()


class _Cursor:
    """Reads exact byte counts and names the offset and variable when the stream ends early."""

    def __init__(self, stream: io.BufferedIOBase, path: str, total_num_bytes: int) -> None:
        self.stream = stream
        self.path = path
        self.total_num_bytes = total_num_bytes
        self.offset = 0
        self.variable: str | None = None

    def fail(self, problem: str, offset: int | None = None) -> CheckpointCorruptError:
        where = f" in variable {self.variable!r}" if self.variable is not None else ""
        at = self.offset if offset is None else offset
        return CheckpointCorruptError(
            f"{self.path}: corrupt CTranslate2 model.bin at byte {at}{where}: {problem}; "
            "the file is damaged or truncated, download or reinstall it",
            path=self.path,
            offset=at,
            tensor=self.variable,
        )

    def read(self, num_bytes: int) -> bytearray:
        buffer = bytearray(num_bytes)
        view = memoryview(buffer)
        filled = 0
        while filled < num_bytes:
            count = self.stream.readinto(view[filled:])
            if not count:
                raise self.fail(
                    f"needed {num_bytes} bytes, the file ends after {filled} (it holds {self.total_num_bytes} bytes)",
                    self.offset + filled,
                )
            filled += count
        self.offset += num_bytes
        return buffer

    def unpack(self, fmt: str) -> tuple[int, ...]:
        return struct.unpack("<" + fmt, self.read(struct.calcsize("<" + fmt)))

    def string(self) -> str:
        start = self.offset
        (length,) = self.unpack("H")
        raw = bytes(self.read(length))
        if length == 0 or raw[-1] != 0:
            raise self.fail(f"expected a NUL-terminated string of {length} bytes", start)
        try:
            text = raw[:-1].decode("utf-8")
        except UnicodeDecodeError as err:
            raise self.fail(f"string is not UTF-8 ({err.reason})", start) from err
        if not text.isprintable():
            raise self.fail(f"string {text!r} holds control characters", start)
        return text


def part_paths(path: str | os.PathLike[str] | Sequence[str | os.PathLike[str]]) -> list[Path]:
    """The files making up one ``model.bin``: a single path, or the parts in order.

    Raises:
        CheckpointError: for an empty list or a part that is not a file.
    """
    paths = [Path(path)] if isinstance(path, (str, os.PathLike)) else [Path(p) for p in path]
    if not paths:
        raise CheckpointError("no model.bin file given")
    for part in paths:
        if not part.is_file():
            raise CheckpointError(f"{part}: no such CTranslate2 model file", path=part)
    return paths


def read_ct2_model(path: str | os.PathLike[str] | Sequence[str | os.PathLike[str]]) -> CT2Model:
    """Read every variable of a CTranslate2 ``model.bin`` (or of its parts, concatenated) onto the CPU.

    Args:
        path: the file, or its parts in order (``[model.bin.part1, model.bin.part2]``).

    Returns:
        The variables in their stored dtypes and the aliases.

    Raises:
        CheckpointError: for a missing file or an unsupported format version.
        CheckpointCorruptError: for a truncated or malformed file, with the byte offset and the variable.
    """
    paths = part_paths(path)
    label = " + ".join(str(p) for p in paths)
    total = sum(p.stat().st_size for p in paths)
    with PartsReader(paths) as raw, io.BufferedReader(raw, buffer_size=1 << 20) as stream:
        cursor = _Cursor(stream, label, total)
        (version,) = cursor.unpack("I")
        if version not in SUPPORTED_VERSIONS:
            raise CheckpointError(
                f"{label}: CTranslate2 binary version {version} is not supported (supported: "
                f"{list(SUPPORTED_VERSIONS)}); convert the model again with a current ct2-transformers-converter",
                path=paths[0],
            )
        spec = cursor.string()
        (revision,) = cursor.unpack("I")
        (count,) = cursor.unpack("I")
        variables: dict[str, Tensor] = {}
        for _ in range(count):
            cursor.variable = None
            name_offset = cursor.offset
            name = cursor.string()
            cursor.variable = name
            if name in variables:
                raise cursor.fail("variable stored twice", name_offset)
            (rank,) = cursor.unpack("B")
            if rank > MAX_RANK:
                raise cursor.fail(f"rank {rank} is above {MAX_RANK}", cursor.offset - 1)
            dims = cursor.unpack("I" * rank) if rank else ()
            dtype_offset = cursor.offset
            (code, num_bytes) = cursor.unpack("BI")
            dtype = DTYPES.get(code)
            if dtype is None:
                raise cursor.fail(f"unknown dtype code {code} (known: {sorted(DTYPES)})", dtype_offset)
            expected = math.prod(dims) * dtype.itemsize
            if num_bytes != expected:
                raise cursor.fail(
                    f"shape {list(dims)} of {dtype} needs {expected} bytes, the record says {num_bytes}", dtype_offset
                )
            data = cursor.read(num_bytes)
            variables[name] = (
                torch.frombuffer(data, dtype=dtype).reshape(dims) if num_bytes else torch.empty(dims, dtype=dtype)
            )
        cursor.variable = None
        (num_aliases,) = cursor.unpack("I")
        aliases: dict[str, str] = {}
        for _ in range(num_aliases):
            alias_offset = cursor.offset
            alias, target = cursor.string(), cursor.string()
            if target not in variables:
                raise cursor.fail(f"alias {alias!r} points to unknown variable {target!r}", alias_offset)
            aliases[alias] = target
        if stream.read(1):
            raise cursor.fail(f"{total - cursor.offset} bytes follow the last record")
    return CT2Model(
        binary_version=version, spec_name=spec, spec_revision=revision, variables=variables, aliases=aliases
    )


__all__ = ["DTYPES", "MAX_RANK", "SUPPORTED_VERSIONS", "CT2Model", "PartsReader", "part_paths", "read_ct2_model"]

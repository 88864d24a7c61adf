"""RIFF/WAVE header checks made before libsndfile decodes a file (it accepts some damaged headers).

A data chunk longer than the file (a truncated download) and an integer sample width that is not a
whole number of bytes (libsndfile reads 7 bits as 8) are refused with a description. Layout: the
Microsoft RIFF/WAVE specification (``RIFF`` size ``WAVE``, then ``fmt `` and ``data`` chunks).
"""

from __future__ import annotations

import struct
from pathlib import Path

_WAVE_FORMAT_PCM, _WAVE_FORMAT_EXTENSIBLE = 1, 0xFFFE


def wave_format_problem(fmt: bytes) -> str | None:
    """A description of a ``fmt `` chunk whose sample width libsndfile would decode as another width.

    Integer PCM must declare whole bytes per sample (8, 16, 24 or 32 bits): libsndfile reads a
    7-bit header as 8-bit PCM, silently giving samples twice too loud. For
    ``WAVE_FORMAT_EXTENSIBLE`` the valid bits may be fewer than the container's (20 in 24), which
    is fine; the container itself must be whole bytes.
    """
    if len(fmt) < 16:
        return f"its fmt chunk is {len(fmt)} bytes, shorter than the 16 of a WAV format header"
    format_tag, _, _, _, _, bits = struct.unpack("<HHIIHH", fmt[:16])
    if format_tag in (_WAVE_FORMAT_PCM, _WAVE_FORMAT_EXTENSIBLE) and (bits == 0 or bits % 8 or bits > 64):
        return (
            f"its header declares {bits} bits per sample, not a whole number of bytes (8, 16, 24 or 32); "
            f"such a file would be decoded at another sample width, so it is refused: re-encode it "
            f"(e.g. sox in.wav -b 16 out.wav)"
        )
    return None


def riff_truncation(path: Path) -> str | None:
    """Return a description when a RIFF/WAVE file's data chunk is longer than the file, or its
    ``fmt `` chunk declares a sample width that would be decoded as another (see :func:`wave_format_problem`).

    libsndfile silently decodes the part of a truncated WAV file that is present, so the
    declared chunk sizes are checked here (RIFF layout: Microsoft/IBM Multimedia
    Programming Interface and Data Specifications 1.0, 1991).
    """
    size = path.stat().st_size
    with path.open("rb") as handle:
        head = handle.read(12)
        if len(head) < 12 or head[:4] != b"RIFF" or head[8:12] != b"WAVE":
            return None
        offset = 12
        while offset + 8 <= size:
            handle.seek(offset)
            chunk_id, chunk_size = struct.unpack("<4sI", handle.read(8))
            if chunk_id == b"fmt ":
                problem = wave_format_problem(handle.read(min(chunk_size, 64)))
                if problem is not None:
                    return problem
            if chunk_id == b"data":
                if chunk_size != 0xFFFFFFFF and offset + 8 + chunk_size > size:
                    present = size - offset - 8
                    return (
                        f"file is truncated: its data chunk declares {chunk_size} bytes but only {present} are present"
                    )
                return None
            offset += 8 + chunk_size + (chunk_size & 1)
    return None


__all__ = ["riff_truncation", "wave_format_problem"]

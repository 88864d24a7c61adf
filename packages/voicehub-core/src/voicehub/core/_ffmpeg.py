"""FFmpeg decoding through PyAV: the fallback for audio containers libsndfile cannot read.

PyAV (``av``) is the optional ``voicehub[av]`` extra, imported only when a file needs it.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import numpy.typing as npt

from voicehub.core.errors import AudioDecodeError

_LOG = logging.getLogger("voicehub.core.audio")

RAW_PCM_HINT = (
    "headerless PCM (s16le) must be named .raw or .pcm and read with load_raw_pcm(path, sample_rate=...) "
    "(on the command line: --sample-rate HZ)"
)
"""What to do with a headerless PCM file, for decode errors (it carries no sample rate)."""

FFMPEG_SUFFIXES = (".m4a", ".mp4", ".aac", ".webm", ".mkv", ".mka", ".mov", ".wma", ".amr", ".3gp")
"""Suffixes of the container formats libsndfile does not read; they are decoded through PyAV (``voicehub[av]``)."""

AV_INSTALL_HINT = 'pip install "voicehub[av]"'
"""The command that installs the optional FFmpeg decoder (PyAV)."""


def _decode_with_ffmpeg(
    file: Path, *, libsndfile_detail: str, libsndfile_error: Exception
) -> tuple[npt.NDArray[np.float32], int]:
    """Decode ``file`` with FFmpeg through PyAV, the fallback for what libsndfile cannot read.

    The first audio stream is decoded and converted to planar float32 by FFmpeg's resampler,
    keeping its channels and sample rate (PyAV ``AudioResampler(format="fltp")``).

    Raises:
        AudioDecodeError: naming the file; when PyAV is not installed, naming the extra that
            installs it; when FFmpeg cannot decode it either, with both decoders' reasons.
    """
    name = str(file)
    try:
        import av
    except ImportError as err:
        hint = f"install the FFmpeg decoder with: {AV_INSTALL_HINT}"
        if file.suffix.lower() in FFMPEG_SUFFIXES:
            raise AudioDecodeError(
                f"{name}: {file.suffix.lower()} audio is decoded through FFmpeg, which needs the optional PyAV "
                f"package (not installed); {hint}, or convert the file first, e.g. "
                f"`ffmpeg -i {name} {file.with_suffix('.wav').name}`",
                source=name,
            ) from err
        raise AudioDecodeError(
            f"{name}: cannot decode as audio (libsndfile: {libsndfile_detail}); expected WAV, FLAC, OGG, MP3 or "
            f"another format libsndfile reads (for m4a, mp4, webm and other FFmpeg formats, {hint}); "
            f"{RAW_PCM_HINT}",
            source=name,
        ) from libsndfile_error
    _LOG.debug("%s: libsndfile cannot read it (%s); decoding through FFmpeg (PyAV)", name, libsndfile_detail)
    blocks: list[npt.NDArray[np.float32]] = []
    try:
        with av.open(name, mode="r") as container:
            streams = container.streams.audio
            if not streams:
                raise AudioDecodeError(
                    f"{name}: holds no audio stream (libsndfile: {libsndfile_detail}; FFmpeg found "
                    f"{len(container.streams)} other stream(s))",
                    source=name,
                )
            stream = streams[0]
            sample_rate = int(stream.sample_rate or 0)
            resampler = av.AudioResampler(format="fltp")
            for frame in container.decode(stream):
                for converted in resampler.resample(frame):
                    blocks.append(converted.to_ndarray().astype(np.float32, copy=False))
            for converted in resampler.resample(None):
                blocks.append(converted.to_ndarray().astype(np.float32, copy=False))
    except AudioDecodeError:
        raise
    except (av.error.FFmpegError, OSError, ValueError) as err:
        raise AudioDecodeError(
            f"{name}: cannot decode as audio (libsndfile: {libsndfile_detail}; FFmpeg: {err}); expected WAV, FLAC, "
            f"OGG, MP3, M4A, WebM or another format FFmpeg reads; {RAW_PCM_HINT}",
            source=name,
        ) from err
    if not blocks or sum(block.shape[1] for block in blocks) == 0:
        raise AudioDecodeError(f"{name}: file holds no audio samples", source=name)
    if sample_rate <= 0:
        raise AudioDecodeError(f"{name}: FFmpeg reports no sample rate for its audio stream", source=name)
    return np.ascontiguousarray(np.concatenate(blocks, axis=1)), sample_rate

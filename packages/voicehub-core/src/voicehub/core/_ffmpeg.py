"""FFmpeg decoding through PyAV: the fallback for audio containers libsndfile cannot read.

PyAV (``av``) is the optional ``voicehub[av]`` extra, imported only when a file needs it. Every
entry point here (the header, whole-file decoding and block streaming) opens the file the same
way, so a file that one of them reads, the others read too.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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


class FFmpegAudio:
    """The first audio stream of a file FFmpeg opened (through PyAV); close it, or use it as a context.

    Attributes:
        sample_rate: the stream's rate in Hz.
        num_channels: channels per frame.
        num_frames: frames the container declares (0 when it records no duration).
    """

    def __init__(self, file: Path, *, libsndfile_detail: str, libsndfile_error: Exception) -> None:
        """Open ``file``.

        Args:
            file: the audio file.
            libsndfile_detail: why libsndfile refused it (quoted in errors).
            libsndfile_error: libsndfile's exception (chained when PyAV is missing).

        Raises:
            AudioDecodeError: naming the file; when PyAV is not installed, naming the extra that
                installs it; when FFmpeg cannot open it either, with both decoders' reasons.
        """
        self._name = name = str(file)
        self._detail = libsndfile_detail
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
        self._av: Any = av
        _LOG.debug("%s: libsndfile cannot read it (%s); decoding through FFmpeg (PyAV)", name, libsndfile_detail)
        try:
            self._container: Any = av.open(name, mode="r")
        except (av.error.FFmpegError, OSError, ValueError) as err:
            raise self._failure(err) from err
        streams = self._container.streams.audio
        if not streams:
            others = len(self._container.streams)
            self._container.close()
            raise AudioDecodeError(
                f"{name}: holds no audio stream (libsndfile: {libsndfile_detail}; FFmpeg found {others} other "
                f"stream(s))",
                source=name,
            )
        self._stream = stream = streams[0]
        self.sample_rate = int(stream.sample_rate or 0)
        self.num_channels = int(stream.channels or 0)
        if self.sample_rate <= 0:
            self._container.close()
            raise AudioDecodeError(f"{name}: FFmpeg reports no sample rate for its audio stream", source=name)
        if stream.duration is not None and stream.time_base:
            seconds = float(stream.duration * stream.time_base)
        else:  # WebM/Matroska record the duration on the container only, in AV_TIME_BASE units
            seconds = float(self._container.duration or 0) / av.time_base
        self.num_frames = max(0, round(seconds * self.sample_rate))

    def _failure(self, err: Exception) -> AudioDecodeError:
        return AudioDecodeError(
            f"{self._name}: cannot decode as audio (libsndfile: {self._detail}; FFmpeg: {err}); expected WAV, FLAC, "
            f"OGG, MP3, M4A, WebM or another format FFmpeg reads; {RAW_PCM_HINT}",
            source=self._name,
        )

    def blocks(self, block_samples: int) -> Iterator[npt.NDArray[np.float32]]:
        """Decode the stream as float32 (num_frames, num_channels) blocks of ``block_samples`` frames.

        FFmpeg's resampler converts each decoded frame to planar float32 at the stream's own rate and
        channels (PyAV ``AudioResampler(format="fltp")``); the last block may be shorter. Memory is
        bounded by one block plus one codec frame.

        Raises:
            AudioDecodeError: when FFmpeg fails part-way, naming the file.
        """
        av = self._av
        pending: list[npt.NDArray[np.float32]] = []
        held = 0
        try:
            resampler = av.AudioResampler(format="fltp")
            frames = (
                converted for frame in self._container.decode(self._stream) for converted in resampler.resample(frame)
            )
            for converted in _chain(frames, resampler):
                planar = converted.to_ndarray().astype(np.float32, copy=False)
                pending.append(planar)
                held += planar.shape[1]
                while held >= block_samples:
                    joined = np.concatenate(pending, axis=1)
                    yield np.ascontiguousarray(joined[:, :block_samples].T)
                    pending, held = [joined[:, block_samples:]], joined.shape[1] - block_samples
        except (av.error.FFmpegError, OSError, ValueError) as err:
            raise self._failure(err) from err
        if held:
            yield np.ascontiguousarray(np.concatenate(pending, axis=1).T)

    def close(self) -> None:
        """Close the container."""
        self._container.close()

    def __enter__(self) -> FFmpegAudio:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _chain(frames: Iterator[Any], resampler: Any) -> Iterator[Any]:
    """The resampled frames, then what the resampler still holds."""
    yield from frames
    yield from resampler.resample(None)


def decode_with_ffmpeg(
    file: Path, *, libsndfile_detail: str, libsndfile_error: Exception
) -> tuple[npt.NDArray[np.float32], int]:
    """Decode all of ``file`` with FFmpeg through PyAV: float32 (num_frames, num_channels) and the rate in Hz.

    Raises:
        AudioDecodeError: as :class:`FFmpegAudio`, and for a stream without samples.
    """
    with FFmpegAudio(file, libsndfile_detail=libsndfile_detail, libsndfile_error=libsndfile_error) as audio:
        blocks = list(audio.blocks(1 << 20))
        rate = audio.sample_rate
    if not blocks:
        raise AudioDecodeError(f"{file}: file holds no audio samples", source=str(file))
    return np.ascontiguousarray(np.concatenate(blocks, axis=0)), rate

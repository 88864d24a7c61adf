"""Reading audio files without decoding them whole: the header, and decoding block by block.

Long recordings are streamed through :func:`iter_audio_blocks` so memory is bounded by a block,
not by the file. libsndfile reads the common formats; what it refuses goes through FFmpeg (PyAV,
the optional ``voicehub[av]`` extra), block by block too.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from voicehub.core._ffmpeg import FFmpegAudio
from voicehub.core.audio import (
    FloatArray,
    _check_audio_file,
    _detail,
    _downmix,
    _libsndfile_error,
    _validate_samples,
    check_sample_rate,
    display_path,
)
from voicehub.core.errors import AudioDecodeError, AudioError, VoiceHubError


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class AudioFileInfo:
    """What an audio file's header says, read without decoding the samples.

    Attributes:
        path: the file.
        sample_rate: its rate in Hz.
        num_channels: channels per frame.
        num_frames: frames the header declares (0 when the format does not record it, e.g. some MP3).
    """

    path: Path
    sample_rate: int
    num_channels: int
    num_frames: int

    @property
    def duration_s(self) -> float:
        """Declared duration in seconds."""
        return self.num_frames / self.sample_rate


def audio_file_info(path: str | os.PathLike[str]) -> AudioFileInfo:
    """Read an audio file's header (rate, channels, declared frames).

    Raises:
        AudioDecodeError: for a missing, empty, truncated or undecodable file.
    """
    import soundfile

    file = _check_audio_file(path)
    try:
        info = soundfile.info(str(file))
    except soundfile.LibsndfileError as err:
        with FFmpegAudio(file, libsndfile_detail=_detail(err), libsndfile_error=err) as audio:
            return AudioFileInfo(
                path=file, sample_rate=audio.sample_rate, num_channels=audio.num_channels, num_frames=audio.num_frames
            )
    except (RuntimeError, TypeError, ValueError) as err:
        raise AudioDecodeError(f"{file}: cannot decode as audio ({err})", source=str(file)) from err
    return AudioFileInfo(
        path=file, sample_rate=int(info.samplerate), num_channels=int(info.channels), num_frames=int(info.frames)
    )


def _padded(blocks: Iterator[FloatArray], num_channels: int) -> Iterator[FloatArray]:
    """``blocks``, then an empty block, so a reader that stops at the first short block always stops."""
    yield from blocks
    yield np.zeros((0, num_channels), dtype=np.float32)


def iter_audio_blocks(
    path: str | os.PathLike[str], *, block_samples: int, target_sample_rate: int | None = None
) -> Iterator[FloatArray]:
    """Decode, downmix, validate and resample a file block by block.

    Memory is bounded by the block, not by the file: libsndfile decodes ``block_samples`` frames
    at a time and a streaming libsoxr resampler (HQ) carries its filter state across blocks.
    Concatenated, the blocks equal ``load_audio(path).samples`` (bit for bit without resampling;
    with resampling, up to the float32 rounding of the streaming filter).

    Args:
        path: an audio file libsndfile reads.
        block_samples: frames decoded at once (> 0), at the file's rate.
        target_sample_rate: rate in Hz of the yielded samples; ``None`` keeps the file's rate.

    Yields:
        float32 mono blocks (num_samples,) in [-1, 1]; the last may be shorter (or, when
        resampling, longer by the resampler's flushed tail).

    Raises:
        AudioDecodeError: for a missing, empty, truncated or undecodable file (a truncation
            found at the end is raised after the decoded blocks).
        AudioError: for non-finite or out-of-range samples.
    """
    import soundfile

    if isinstance(block_samples, bool) or not isinstance(block_samples, int) or block_samples < 1:
        raise AudioError(f"block_samples: expected a positive int, got {block_samples!r}", source=str(path))
    file = _check_audio_file(path)
    name = display_path(file)
    decoded = 0
    try:
        with contextlib.ExitStack() as stack:
            try:
                handle = stack.enter_context(soundfile.SoundFile(name))
                declared, rate = handle.frames, int(handle.samplerate)
                reads: Iterator[FloatArray] = iter(
                    lambda: handle.read(block_samples, dtype="float32", always_2d=True), None
                )
            except soundfile.LibsndfileError as err:  # FFmpeg reads it, or says why not
                ffmpeg = stack.enter_context(FFmpegAudio(file, libsndfile_detail=_detail(err), libsndfile_error=err))
                declared, rate = 0, ffmpeg.sample_rate  # a container's duration is approximate
                reads = _padded(ffmpeg.blocks(block_samples), ffmpeg.num_channels)
            resampler: Any = None
            if target_sample_rate is not None and check_sample_rate(target_sample_rate, source=name) != rate:
                import soxr

                resampler = soxr.ResampleStream(rate, target_sample_rate, 1, dtype="float32", quality="HQ")
            while True:
                frames = next(reads)
                last = frames.shape[0] < block_samples
                decoded += frames.shape[0]
                if decoded == 0:
                    raise AudioDecodeError(f"{name}: file holds no audio samples", source=name)
                samples = _downmix(frames.T, name) if frames.shape[0] else np.zeros(0, dtype=np.float32)
                if samples.size:
                    _validate_samples(samples, name)
                if resampler is not None:
                    samples = np.asarray(resampler.resample_chunk(samples, last=last), dtype=np.float32)
                if samples.size:
                    yield np.ascontiguousarray(samples, dtype=np.float32)
                if last:
                    break
    except VoiceHubError:
        raise
    except soundfile.LibsndfileError as err:
        raise _libsndfile_error(name, err) from err
    except (RuntimeError, TypeError, ValueError) as err:
        raise AudioDecodeError(f"{name}: cannot decode as audio ({err})", source=name) from err
    if 0 < declared != decoded and file.suffix.lower() not in {".mp3"}:
        raise AudioDecodeError(
            f"{name}: file is truncated: header declares {declared} frames, decoded {decoded}",
            source=name,
        )


__all__ = ["AudioFileInfo", "audio_file_info", "iter_audio_blocks"]

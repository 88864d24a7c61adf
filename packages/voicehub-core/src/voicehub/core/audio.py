"""Audio input and output: decode any common format, downmix, resample, validate.

Decoding uses libsndfile through ``soundfile`` (WAV, FLAC, OGG/Vorbis, OGG/Opus, MP3 and the
other formats of libsndfile >= 1.1); a file libsndfile cannot read (m4a/mp4/aac from phones, webm/mkv
from video, wma...) is decoded through FFmpeg by PyAV (``av``, the optional ``voicehub[av]`` extra,
imported only then); resampling uses libsoxr through ``soxr`` (its "HQ"
quality: passband to 0.91 of Nyquist, stop-band attenuation about 130 dB per the libsoxr
documentation). Every waveform leaving this module is mono float32 in [-1, 1] at a known
sample rate in Hz, with finite samples.

Accepted inputs (:data:`AudioLike`):

* a path (``str`` or ``os.PathLike``) to an audio file; its own sample rate is used;
* a :class:`Waveform`;
* a NumPy array or a tensor (anything with ``.detach().cpu().numpy()``) together with the
  ``sample_rate`` keyword, or a ``(array, sample_rate)`` tuple. A 1-D array is mono
  ``(num_samples,)``; a 2-D array is ``(num_channels, num_samples)`` and is averaged to mono.
  Integer PCM is scaled to [-1, 1] (int16 by 32768, int8 by 128, uint8 centred on 128); wider
  integer arrays are ambiguous and refused with a message saying how to scale them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
from collections.abc import Collection
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from voicehub.core._ffmpeg import AV_INSTALL_HINT, FFMPEG_SUFFIXES, RAW_PCM_HINT, decode_with_ffmpeg
from voicehub.core._paths import display_path, utf8_name
from voicehub.core._wave_header import riff_truncation
from voicehub.core.errors import AudioDecodeError, AudioError, SampleRateError
from voicehub.core.files import atomic_write

FloatArray = npt.NDArray[np.float32]

_LOG = logging.getLogger(__name__)

MAX_CHANNELS = 32
"""Largest channel count accepted for a 2-D array; more suggests a transposed array."""

MIN_SAMPLE_RATE = 1000
"""Lowest accepted sample rate in Hz; anything lower is almost surely a unit mistake (kHz)."""

MAX_SAMPLE_RATE = 768_000
"""Highest accepted sample rate in Hz (the highest rate of common audio interfaces)."""

MAX_FLOAT_PEAK = 4.0
"""Largest float sample magnitude accepted (12 dB over full scale); larger values are almost
surely integer PCM values stored in a float array."""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class Waveform:
    """Mono audio ready for a model.

    Attributes:
        samples: float32 array (num_samples,), finite, nominally in [-1, 1].
        sample_rate: samples per second, in Hz.
        source: the file path, or a short description such as ``"array"``.
    """

    samples: FloatArray
    sample_rate: int
    source: str = "array"

    def __post_init__(self) -> None:
        if not isinstance(self.samples, np.ndarray) or self.samples.dtype != np.float32:
            raise AudioError("Waveform.samples must be a float32 numpy array", source=self.source)
        if self.samples.ndim != 1:
            raise AudioError(
                f"Waveform.samples must be (num_samples,), got shape {self.samples.shape}",
                source=self.source,
            )
        check_sample_rate(self.sample_rate, source=self.source)

    @property
    def num_samples(self) -> int:
        """Length in samples."""
        return int(self.samples.shape[0])

    @property
    def duration_s(self) -> float:
        """Length in seconds."""
        return self.num_samples / self.sample_rate

    def with_sample_rate(self, sample_rate: int) -> Waveform:
        """Return this waveform resampled to ``sample_rate`` Hz (itself when already there)."""
        if sample_rate == self.sample_rate:
            return self
        return Waveform(
            samples=resample(self.samples, self.sample_rate, sample_rate),
            sample_rate=sample_rate,
            source=self.source,
        )


class TensorLike(Protocol):
    """A tensor (``torch.Tensor`` or alike), read through ``.detach().cpu().numpy()`` without importing torch."""

    def detach(self) -> Any:
        """The tensor without autograd history."""
        ...

    def cpu(self) -> Any:
        """The tensor on the CPU."""
        ...

    def numpy(self) -> Any:
        """The tensor as a NumPy array."""
        ...


ArrayLike = npt.NDArray[Any] | TensorLike
"""Samples: a NumPy array or a tensor, (num_samples,) or (num_channels, num_samples)."""

AudioLike = str | os.PathLike[str] | Waveform | ArrayLike | tuple[ArrayLike, int]
"""What the inference methods accept for one input (see the module docstring); a ``list`` of these is a batch."""


def check_sample_rate(
    sample_rate: object,
    *,
    source: str = "audio",
    supported: Collection[int] = (),
    runs: str = "the model",
    why: str | None = None,
    fix: str = "resample the audio first (voicehub.core.resample)",
) -> int:
    """Validate a sample rate in Hz, and (when ``supported`` is given) that it is one of those rates.

    The one sample-rate check of VoiceHub: waveforms, file decoding, streams, wrappers that
    refuse to resample and graphs with per-rate branches all call it.

    Args:
        sample_rate: the rate to check.
        source: what the rate belongs to, first in the message (a file name, ``"stream"``).
        supported: the accepted rates in Hz, preferred first; empty accepts any audio rate.
        runs: who runs at ``supported`` in the message (``"SileroVADModel"``).
        why: why the rate is refused rather than resampled (``"resampling is off"``), if it is worth saying.
        fix: the last sentence of the message, saying how to get a supported rate.

    Returns:
        The rate as an ``int``.

    Raises:
        SampleRateError: for a non-integer or non-positive rate, one outside
            ``MIN_SAMPLE_RATE..MAX_SAMPLE_RATE`` (a likely kHz/Hz mix-up), or one not in
            ``supported``; ``expected`` and ``actual`` carry the two rates.
    """
    if isinstance(sample_rate, bool) or not isinstance(sample_rate, (int, np.integer)) or sample_rate <= 0:
        raise SampleRateError(
            f"{source}: sample_rate must be a positive integer in Hz, got {sample_rate!r}",
            expected=tuple(supported),
            actual=None,
            source=source,
        )
    rate = int(sample_rate)
    if not MIN_SAMPLE_RATE <= rate <= MAX_SAMPLE_RATE:
        hint = "; did you give kHz instead of Hz?" if rate < MIN_SAMPLE_RATE else ""
        raise SampleRateError(
            f"{source}: sample_rate={rate} Hz is outside the audio range {MIN_SAMPLE_RATE}..{MAX_SAMPLE_RATE} Hz{hint}",
            expected=tuple(supported),
            actual=rate,
            source=source,
        )
    if supported and rate not in supported:
        raise SampleRateError(
            f"{source}: {runs} runs at {list(supported)} Hz, got {rate} Hz{f' and {why}' if why else ''}; {fix}",
            expected=tuple(supported),
            actual=rate,
            source=source,
        )
    return rate


def resample(samples: npt.NDArray[Any], orig_sample_rate: int, target_sample_rate: int) -> FloatArray:
    """Resample mono audio with libsoxr (HQ quality).

    Args:
        samples: float array (num_samples,) at ``orig_sample_rate`` Hz.
        orig_sample_rate: input rate in Hz.
        target_sample_rate: output rate in Hz.

    Returns:
        float32 array (round(num_samples * target / orig),) at ``target_sample_rate`` Hz.

    Raises:
        SampleRateError: if either rate is not a positive integer.
    """
    orig = check_sample_rate(orig_sample_rate, source="resample")
    target = check_sample_rate(target_sample_rate, source="resample")
    data = np.asarray(samples, dtype=np.float32)
    if orig == target:
        return data
    import soxr

    return np.ascontiguousarray(soxr.resample(data, orig, target, quality="HQ"), dtype=np.float32)


UNAMBIGUOUS_PCM_DTYPES = ("int16", "int8", "uint8")
"""Integer dtypes whose scale is unambiguous (16-bit and 8-bit PCM); wider integers are refused."""


def pcm_to_float(array: npt.NDArray[Any], *, source: str = "array") -> FloatArray:
    """Convert PCM samples to float32 in [-1, 1].

    int16 is scaled by 32768, int8 by 128, uint8 centred on 128 and scaled by 128; floating
    types are cast. Wider integer types (int32, int64, uint16...) are refused: the same values
    may be 16-bit PCM widened by ``np.array(list_of_ints)`` or full-scale 32-bit PCM, and the
    wrong guess silently gives audio 65536 times too quiet (the same reason float audio above
    1.0 is refused).

    Raises:
        AudioError: for a wide integer dtype (the message says how to scale it), and for bool,
            complex, object or string arrays.
    """
    kind = array.dtype.kind
    if kind == "f":
        return array.astype(np.float32, copy=False)
    if kind in "iu" and array.dtype.name not in UNAMBIGUOUS_PCM_DTYPES:
        bits = 8 * array.dtype.itemsize
        peak = int(np.abs(array.astype(np.float64)).max()) if array.size else 0
        raise AudioError(
            f"{source}: integer samples of dtype {array.dtype} are ambiguous (peak |x| = {peak}): they may be 16-bit "
            f"PCM values widened to {bits} bits (e.g. by np.array(list_of_ints)) or full-scale {bits}-bit PCM. Pass "
            f"array.astype(np.int16) if they are 16-bit PCM, or (array / 2**{bits - 1 if kind == 'i' else bits}) "
            f"as float32 in [-1, 1] if they use the full {bits}-bit range",
            source=source,
        )
    if kind == "i":
        scale = float(2 ** (8 * array.dtype.itemsize - 1))
        return (array.astype(np.float64) / scale).astype(np.float32)
    if kind == "u":
        half = float(2 ** (8 * array.dtype.itemsize - 1))
        return ((array.astype(np.float64) - half) / half).astype(np.float32)
    raise AudioError(
        f"{source}: audio samples must be integer PCM or floating point, got dtype {array.dtype}",
        source=source,
    )


def _as_numpy(value: Any, source: str) -> npt.NDArray[Any]:
    if isinstance(value, np.ndarray):
        return value
    if hasattr(value, "detach") and hasattr(value, "cpu") and hasattr(value, "numpy"):
        tensor = value.detach()
        if getattr(tensor, "is_meta", False):
            raise AudioError(f"{source}: a meta tensor holds no samples; pass a tensor with data", source=source)
        tensor = tensor.cpu()
        if str(tensor.dtype) in ("torch.bfloat16", "torch.float16"):
            tensor = tensor.float()  # numpy has no bfloat16; half precision is widened alike
        return np.asarray(tensor.numpy())
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], (int, np.integer)):
        raise AudioError(
            f"{source}: got a tuple ({type(value[0]).__name__}, {type(value[1]).__name__}); "
            f"the tuple form is (array, sample_rate), array first",
            source=source,
        )
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, (int, float)) for v in value):
        return np.asarray(value, dtype=np.float32)
    raise AudioError(
        f"{source}: expected a file path, a Waveform, an (array, sample_rate) tuple, a numpy array or a tensor, "
        f"got {type(value).__name__}",
        source=source,
    )


def _validate_samples(samples: FloatArray, source: str) -> FloatArray:
    """Refuse empty, non-finite or integer-scale audio without copying the samples."""
    if samples.size == 0:
        raise AudioError(f"{source}: audio is empty (0 samples); pass at least one sample", source=source)
    low, high = float(samples.min()), float(samples.max())  # NaN and Inf propagate into these
    if not (np.isfinite(low) and np.isfinite(high)):
        finite = np.isfinite(samples)
        first = int(np.flatnonzero(~finite)[0])
        raise AudioError(
            f"{source}: audio holds {int((~finite).sum())} non-finite sample(s) (NaN or Inf), "
            f"the first at index {first}; clean the signal before passing it",
            source=source,
        )
    peak = max(high, -low)
    if peak > MAX_FLOAT_PEAK:
        raise AudioError(
            f"{source}: float samples reach {peak:g}, but float audio is expected in [-1, 1]; "
            f"if these are 16-bit PCM values stored as floats, divide by 32768 or pass the int16 array",
            source=source,
        )
    return samples


DOWNMIX_BLOCK_SAMPLES = 1 << 18
"""Samples per channel averaged at once when downmixing (bounds the float64 temporary to 2 MB)."""


def _downmix(data: npt.NDArray[Any], source: str) -> FloatArray:
    """``data`` is (num_channels, num_samples) float32; returns (num_samples,)."""
    if data.ndim == 1:
        return data
    if data.ndim != 2:
        raise AudioError(
            f"{source}: expected audio (num_samples,) or (num_channels, num_samples), "
            f"got shape {tuple(data.shape)}; pass a batch as a list of arrays",
            source=source,
        )
    if data.shape[0] > MAX_CHANNELS:
        raise AudioError(
            f"{source}: got shape {tuple(data.shape)}, read as {data.shape[0]} channels; "
            f"arrays are (num_channels, num_samples), transpose a (num_samples, num_channels) array",
            source=source,
        )
    if data.shape[0] == 1:
        mono: FloatArray = data[0]  # a view, no temporary
        return mono
    # The float64 mean is taken block by block so the temporary stays at DOWNMIX_BLOCK_SAMPLES.
    mixed = np.empty(data.shape[1], dtype=np.float32)
    for start in range(0, data.shape[1], DOWNMIX_BLOCK_SAMPLES):
        stop = start + DOWNMIX_BLOCK_SAMPLES
        mixed[start:stop] = data[:, start:stop].mean(axis=0, dtype=np.float64)
    return mixed


def _special_kind(path: Path) -> str | None:
    """``"a pipe or FIFO"``, ``"a character device"``... for a special file; ``None`` for a regular file."""
    import stat

    try:
        mode = path.stat().st_mode
    except OSError:
        return None
    if stat.S_ISFIFO(mode):
        return "a pipe or FIFO (such as /dev/stdin fed by a pipe)"
    if stat.S_ISCHR(mode):
        return "a character device (such as /dev/stdin on a terminal)"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return None


def decode_audio_file(path: str | os.PathLike[str]) -> tuple[FloatArray, int]:
    """Decode an audio file to float32 samples.

    Args:
        path: a file in any format libsndfile reads (WAV, FLAC, OGG/Vorbis/Opus, MP3, AIFF...).

    Returns:
        ``(samples, sample_rate)``: float32 array (num_channels, num_samples) in [-1, 1] and
        the file's sample rate in Hz.

    Raises:
        AudioDecodeError: naming the file, when it is missing, empty, truncated, not audio,
            or holds no samples.
    """
    frames, sample_rate = _decode_frames(path)
    return np.ascontiguousarray(frames.T), sample_rate


def _check_audio_file(path: str | os.PathLike[str]) -> Path:
    """Refuse a missing, directory, empty or truncated-WAV path before libsndfile opens it."""
    file = Path(path)
    name = display_path(file)
    if not file.exists():
        raise AudioDecodeError(f"{name}: no such audio file", source=name)
    if file.is_dir():
        raise AudioDecodeError(f"{name}: is a directory, not an audio file", source=name)
    kind = _special_kind(file)
    if kind is not None:
        raise AudioDecodeError(
            f"{name}: is {kind}, not a regular file; audio is decoded from regular files (the decoder seeks in "
            f"them): save the stream to a file first (e.g. `cat > clip.wav`) and pass that file",
            source=name,
        )
    if file.stat().st_size == 0:
        raise AudioDecodeError(f"{name}: file is empty (0 bytes)", source=name)
    truncation = riff_truncation(file)
    if truncation is not None:
        raise AudioDecodeError(f"{name}: {truncation}", source=name)
    return file


def _detail(err: Exception, file: Path) -> str:
    """Why libsndfile refused ``file``, in words that fit: its "not a regular file (possibly a pipe?)"
    for random bytes in a regular file says that the content is no audio format it knows."""
    detail = str(err).split(":", 1)[-1].strip() or "unknown error"
    if "regular file" in detail or "pipe" in detail or "Format not recognised" in detail:
        hint = f", whatever its {file.suffix} suffix says" if file.suffix else ""
        return f"the content is not in any audio format libsndfile recognises{hint}"
    return detail


def _libsndfile_error(name: str, err: Exception) -> AudioDecodeError:
    """The named error for a file libsndfile refused; content that is no audio at all is said so plainly."""
    detail = _detail(err, Path(name))
    detail = f"{detail}; is it really audio?" if detail.startswith("the content") else f"libsndfile: {detail}"
    return AudioDecodeError(
        f"{name}: cannot decode as audio ({detail}); expected WAV, FLAC, OGG, MP3 or "
        f"another format libsndfile reads; {RAW_PCM_HINT}",
        source=name,
    )


def _decode_frames(path: str | os.PathLike[str]) -> tuple[FloatArray, int]:
    """:func:`decode_audio_file` as libsndfile returns it: float32 (num_samples, num_channels)."""
    import soundfile

    file = _check_audio_file(path)
    name = display_path(file)
    try:
        with contextlib.ExitStack() as stack:
            # A name that is not valid UTF-8 cannot be passed to libsndfile's C API: such a file is
            # opened here and handed over as a file object.
            source: Any = str(file) if utf8_name(file) else stack.enter_context(file.open("rb"))
            handle = stack.enter_context(soundfile.SoundFile(source))
            declared = handle.frames
            data = handle.read(dtype="float32", always_2d=True)
            sample_rate = int(handle.samplerate)
    except soundfile.LibsndfileError as err:
        return decode_with_ffmpeg(file, libsndfile_detail=_detail(err, file), libsndfile_error=err)
    except (RuntimeError, TypeError, ValueError, OSError) as err:
        raise AudioDecodeError(f"{name}: cannot decode as audio ({err})", source=name) from err
    if data.shape[0] == 0:
        raise AudioDecodeError(f"{name}: file holds no audio samples", source=name)
    if 0 < declared != data.shape[0] and file.suffix.lower() not in {".mp3"}:
        raise AudioDecodeError(
            f"{name}: file is truncated: header declares {declared} frames, decoded {data.shape[0]}",
            source=name,
        )
    return data, sample_rate


LIBSNDFILE_SUFFIXES = (".wav", ".flac", ".ogg", ".oga", ".opus", ".mp3", ".aiff", ".aif", ".au", ".caf", ".w64")
"""Suffixes of the audio files libsndfile decodes (the common ones; it reads more, by content)."""

AUDIO_FILE_SUFFIXES = LIBSNDFILE_SUFFIXES + FFMPEG_SUFFIXES
"""Suffixes taken as audio when a directory is searched for audio files (headerless PCM excluded)."""

RAW_PCM_SUFFIXES = (".raw", ".pcm")
"""Suffixes of headerless PCM files, which carry no sample rate: :func:`load_raw_pcm` reads them."""


def is_raw_pcm(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` names a headerless PCM file (by its suffix, see :data:`RAW_PCM_SUFFIXES`)."""
    return Path(path).suffix.lower() in RAW_PCM_SUFFIXES


def load_raw_pcm(path: str | os.PathLike[str], *, sample_rate: int) -> Waveform:
    """Read a headerless file of 16-bit little-endian mono PCM (``s16le``) as a :class:`Waveform`.

    Args:
        path: the file (``.raw``/``.pcm`` by convention; the suffix is not checked).
        sample_rate: its rate in Hz (a headerless file does not record one).

    Returns:
        Mono float32 samples in [-1, 1) (int16 / 32768), named by ``path``.

    Raises:
        AudioDecodeError: for a file that cannot be read or holds an odd number of bytes.
        SampleRateError: for an invalid ``sample_rate``.
        AudioError: for an empty file.
    """
    source = os.fspath(path)
    rate = check_sample_rate(sample_rate, source=source)
    try:
        data = Path(path).read_bytes()
    except OSError as err:
        raise AudioDecodeError(f"{source}: cannot read ({err.strerror or err})", source=source) from err
    if len(data) % 2:
        raise AudioDecodeError(
            f"{source}: {len(data)} bytes is not a whole number of 16-bit samples; expected s16le mono PCM",
            source=source,
        )
    samples = pcm_to_float(np.frombuffer(data, dtype="<i2"), source=source)
    samples = _validate_samples(np.ascontiguousarray(samples, dtype=np.float32), source)
    return Waveform(samples=samples, sample_rate=rate, source=source)


def load_audio(
    audio: AudioLike,
    *,
    sample_rate: int | None = None,
    target_sample_rate: int | None = None,
) -> Waveform:
    """Turn one input into a validated mono :class:`Waveform`.

    Args:
        audio: a path, a :class:`Waveform`, a ``(array, sample_rate)`` tuple, or an array /
            tensor (num_samples,) or (num_channels, num_samples).
        sample_rate: the rate of ``audio`` in Hz. Required for arrays; for files and
            waveforms it must agree with the rate they carry.
        target_sample_rate: resample to this rate in Hz; ``None`` keeps the input rate.

    Returns:
        A mono float32 :class:`Waveform`.

    Raises:
        SampleRateError: an array without a rate, or a rate that conflicts with the file's.
        AudioDecodeError: a file that cannot be decoded.
        AudioError: empty audio, non-finite samples, wrong dtype or shape.
    """
    if isinstance(audio, (str, os.PathLike)):
        source = display_path(audio)  # printable even for a non-UTF-8 name
        frames, file_rate = _decode_frames(audio)
        if sample_rate is not None and check_sample_rate(sample_rate, source=source) != file_rate:
            raise SampleRateError(
                f"{source}: sample_rate={sample_rate} Hz conflicts with the file's {file_rate} Hz; "
                f"omit sample_rate for files: a file's own rate is used (and resampled where a model needs it)",
                expected=(file_rate,),
                actual=sample_rate,
                source=source,
            )
        samples = _downmix(frames.T, source)  # a view: mono needs no copy, stereo is averaged in blocks
        rate = file_rate
    elif isinstance(audio, Waveform):
        source = audio.source
        if sample_rate is not None and sample_rate != audio.sample_rate:
            raise SampleRateError(
                f"{source}: sample_rate={sample_rate} Hz conflicts with the waveform's {audio.sample_rate} Hz",
                expected=(audio.sample_rate,),
                actual=sample_rate,
                source=source,
            )
        samples, rate = audio.samples, audio.sample_rate
    else:
        source = "array"
        if isinstance(audio, tuple) and len(audio) == 2 and isinstance(audio[1], (int, np.integer)):
            array_rate = int(audio[1])
            if sample_rate is not None and sample_rate != array_rate:
                raise SampleRateError(
                    f"{source}: sample_rate={sample_rate} Hz conflicts with the tuple's {array_rate} Hz",
                    expected=(array_rate,),
                    actual=sample_rate,
                    source=source,
                )
            audio, sample_rate = audio[0], array_rate
        array = _as_numpy(audio, source)
        if sample_rate is None:
            raise SampleRateError(
                f"{source}: an array has no sample rate; pass sample_rate=<Hz> "
                f"(e.g. sample_rate=16000) or a (array, sample_rate) tuple",
                source=source,
            )
        rate = check_sample_rate(sample_rate, source=source)
        samples = _downmix(pcm_to_float(np.squeeze(array) if array.ndim > 2 else array, source=source), source)
    samples = _validate_samples(np.ascontiguousarray(samples, dtype=np.float32), source)
    waveform = Waveform(samples=samples, sample_rate=rate, source=source)
    if target_sample_rate is not None:
        waveform = waveform.with_sample_rate(check_sample_rate(target_sample_rate, source=source))
    return waveform


def load_audio_batch(
    audio: AudioLike | list[AudioLike],
    *,
    sample_rate: int | None = None,
    target_sample_rate: int | None = None,
) -> tuple[list[Waveform], bool]:
    """Normalize one input or a list of inputs.

    Args:
        audio: one input, or a ``list`` of inputs (a batch). Tuples are single
            ``(array, sample_rate)`` inputs, never batches.
        sample_rate: rate in Hz of every array in the batch (see :func:`load_audio`).
        target_sample_rate: resample every item to this rate in Hz.

    Returns:
        ``(waveforms, is_batch)``: the waveforms, and whether the caller passed a list.

    Raises:
        AudioError: for an empty list, or any item :func:`load_audio` refuses (the message
            names the item's index).
    """
    if isinstance(audio, list):
        if not audio:
            raise AudioError("empty batch: pass at least one audio input", source="batch")
        if all(isinstance(item, (int, float, np.number)) for item in audio):
            raise AudioError(
                "a list is read as a batch of inputs, but this one holds numbers; pass one waveform "
                "as np.asarray(samples) together with sample_rate=",
                source="batch",
            )
        out = []
        for index, item in enumerate(audio):
            try:
                out.append(load_audio(item, sample_rate=sample_rate, target_sample_rate=target_sample_rate))
            except AudioError as err:
                err.args = (f"batch item {index}: {err.args[0]}", *err.args[1:])
                raise
        return out, True
    return [load_audio(audio, sample_rate=sample_rate, target_sample_rate=target_sample_rate)], False


def save_audio(
    path: str | os.PathLike[str],
    samples: npt.NDArray[Any],
    sample_rate: int,
    *,
    subtype: str | None = None,
) -> Path:
    """Write audio atomically; the format follows the suffix (``.wav``, ``.flac``, ``.ogg``...).

    Args:
        path: destination file.
        samples: float array (num_samples,) or (num_channels, num_samples) in [-1, 1].
        sample_rate: rate in Hz.
        subtype: libsndfile subtype (``"PCM_16"``, ``"FLOAT"``...); ``None`` uses the
            format's default (16-bit PCM for WAV and FLAC).

    Returns:
        The written path.

    Raises:
        AudioError: for empty or non-finite samples or an unknown file suffix.
    """
    import soundfile

    target = Path(path)
    data = np.asarray(samples, dtype=np.float32)
    _validate_samples(data.reshape(-1), str(target))
    rate = check_sample_rate(sample_rate, source=str(target))
    frames = data if data.ndim == 1 else data.T
    audio_format = target.suffix.lstrip(".").upper()
    if audio_format not in soundfile.available_formats():
        raise AudioError(
            f"{target}: unknown audio file suffix {target.suffix!r}; use one of .wav, .flac, .ogg, .mp3",
            source=str(target),
        )

    def write(tmp: Path) -> None:
        try:
            soundfile.write(str(tmp), frames, rate, subtype=subtype, format=audio_format)
        except (soundfile.LibsndfileError, TypeError, ValueError) as err:
            raise AudioError(f"{target}: cannot write audio ({err})", source=str(target)) from err

    return atomic_write(target, write, create_parents=True)


__all__ = [
    "AUDIO_FILE_SUFFIXES",
    "AV_INSTALL_HINT",
    "FFMPEG_SUFFIXES",
    "LIBSNDFILE_SUFFIXES",
    "MAX_CHANNELS",
    "MAX_FLOAT_PEAK",
    "MAX_SAMPLE_RATE",
    "MIN_SAMPLE_RATE",
    "RAW_PCM_SUFFIXES",
    "UNAMBIGUOUS_PCM_DTYPES",
    "ArrayLike",
    "AudioLike",
    "FloatArray",
    "TensorLike",
    "Waveform",
    "check_sample_rate",
    "decode_audio_file",
    "display_path",
    "is_raw_pcm",
    "load_audio",
    "load_audio_batch",
    "load_raw_pcm",
    "pcm_to_float",
    "resample",
    "save_audio",
]

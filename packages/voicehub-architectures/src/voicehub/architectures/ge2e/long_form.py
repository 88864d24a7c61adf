"""GE2E embedding of audio of any length with memory bounded by a block.

The whole-input path (:meth:`GE2ESpeakerEncoder.embed_utterances` after
:func:`~voicehub.architectures.ge2e.processor.preprocess`) holds the preprocessed waveform, its
mel spectrogram and every partial utterance at once, and runs one LSTM batch over all partials:
memory grows with the duration (about 3 GB for an hour). :func:`embed_long` computes the same
embedding from a re-iterable source of blocks in up to three passes:

1. the mean square of the int16-scaled samples (the volume gain) and the sample count;
2. the WebRTC VAD flag of each 30 ms window (with the gain applied), smoothed and dilated at
   window level into the keep mask, which gives the trimmed length and so the partial starts;
3. the kept samples, cut into mel frames on the fly (frame ``t`` of a zero-padded centred STFT
   is an uncentred STFT of samples ``[t * hop - n_fft // 2, t * hop + n_fft // 2)``), partials
   embedded ``batch_partials`` at a time and summed.

Peak memory is one block of audio plus one batch of partials, whatever the duration; the
result equals the whole-input path up to float32 summation order (< 1e-5 per component).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np
import numpy.typing as npt
import torch

from voicehub.architectures.ge2e.config import GE2EConfig
from voicehub.architectures.ge2e.model import GE2ESpeakerEncoder
from voicehub.architectures.ge2e.processor import INT16_MAX, volume_gain, window_flags, window_mask
from voicehub.components.filterbank import MelSpectrogram
from voicehub.core import AudioError, import_optional

FloatArray = npt.NDArray[np.float32]
BlockSource = Callable[[], Iterable[FloatArray]]
"""Returns a fresh iterator over the float32 mono blocks of the input (called once per pass)."""

BATCH_PARTIALS = 128
"""Partial utterances run through the LSTM at once (about 20 s of audio, a few MB)."""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class LongFormEmbedding:
    """The result of :func:`embed_long`.

    Attributes:
        embedding: float32 tensor (embedding_dim,) with unit L2 norm.
        num_samples: samples in the input (at ``config.sample_rate``).
        kept_num_samples: samples left after silence trimming.
        num_partials: partial utterances averaged.
    """

    embedding: torch.Tensor
    num_samples: int
    kept_num_samples: int
    num_partials: int


def _rechunk(blocks: Iterable[FloatArray], size: int) -> Iterator[FloatArray]:
    """Re-cut blocks into pieces of exactly ``size`` samples (the last one shorter)."""
    pending: list[FloatArray] = []
    held = 0
    for block in blocks:
        pending.append(block)
        held += block.shape[0]
        if held >= size:
            joined = np.concatenate(pending) if len(pending) > 1 else pending[0]
            usable = held - held % size
            yield joined[:usable]
            pending, held = [joined[usable:]], held - usable
    if held:
        yield np.concatenate(pending) if len(pending) > 1 else pending[0]


def _gained(blocks: Iterable[FloatArray], gain: Any) -> Iterator[FloatArray]:
    for block in blocks:
        yield block if gain is None else np.asarray(block * gain, dtype=np.float32)


def embed_long(
    encoder: GE2ESpeakerEncoder,
    blocks: BlockSource,
    config: GE2EConfig,
    *,
    block_samples: int = 30 * 16000,
    batch_partials: int = BATCH_PARTIALS,
) -> LongFormEmbedding:
    """Embed one input given as blocks, with memory bounded by a block and a batch of partials.

    Args:
        encoder: the loaded encoder (its weights, device and front end are used).
        blocks: a re-iterable source of float32 mono blocks at ``config.sample_rate`` Hz.
        config: preprocessing and partial settings (``trim_silence``, ``target_dbfs``...).
        block_samples: samples handled at once in passes 2 and 3 (rounded to whole VAD windows).
        batch_partials: partials per LSTM batch (>= 1).

    Returns:
        The embedding and the counts the whole-input path reports.

    Raises:
        AudioError: for digital silence or no speech found (the messages of ``preprocess``).
    """
    num_samples = 0
    square_sum = 0.0
    for block in blocks():
        num_samples += int(block.shape[0])
        if config.target_dbfs is not None:
            scaled = block * np.float32(INT16_MAX)
            square_sum += float(np.sum(scaled.astype(np.float64) ** 2))
    if num_samples == 0:
        raise AudioError("GE2E: no samples to embed")
    gain = None
    if config.target_dbfs is not None:
        gain = volume_gain(np.float32(square_sum / num_samples), config.target_dbfs)
    window = config.vad_window_ms * config.sample_rate // 1000
    block_samples = max(window, block_samples - block_samples % window)
    mask: npt.NDArray[np.bool_] | None = None
    kept_total = num_samples
    if config.trim_silence:
        webrtcvad = import_optional(
            "webrtcvad", purpose="GE2E silence trimming", install_hint="pip install webrtcvad-wheels"
        )
        vad = webrtcvad.Vad(config.vad_mode)
        flags = [window_flags(vad, piece, config) for piece in _rechunk(_gained(blocks(), gain), block_samples)]
        all_flags = np.concatenate(flags) if flags else np.zeros(0, np.int64)
        mask = window_mask(all_flags, config) if all_flags.size else np.zeros(0, dtype=bool)
        kept_total = int(mask.sum()) * window
        if kept_total == 0:
            raise AudioError(
                f"GE2E: the WebRTC VAD found no speech in {num_samples / config.sample_rate:.3f} s of audio "
                f"(it judges whole {config.vad_window_ms:g} ms windows); expected speech, at least a second of it; "
                f"fix: pass speech, or switch silence trimming off (trim_silence=False) to embed the audio as it is"
            )

    def kept_blocks() -> Iterator[FloatArray]:
        first_window = 0
        for piece in _rechunk(_gained(blocks(), gain), block_samples):
            if mask is None:
                yield piece
                continue
            count = piece.shape[0] // window
            keep = mask[first_window : first_window + count]
            first_window += count
            if keep.any():
                yield piece[: count * window].reshape(count, window)[keep].reshape(-1)

    starts, _ = encoder.partial_starts(kept_total)
    frontend = encoder.frontend
    uncentred = MelSpectrogram(frontend.config.replace(center=False)).to(frontend.window.device)
    hop, n_fft, span = frontend.config.hop_length, frontend.config.n_fft, encoder.config.partial_num_frames
    half = n_fft // 2
    device = encoder.device
    total = torch.zeros(encoder.config.embedding_dim, dtype=torch.float64, device=device)
    source = kept_blocks()
    buffer = np.zeros(0, dtype=np.float32)
    buffer_start = 0  # index of buffer[0] among the kept samples
    exhausted = False
    for first in range(0, len(starts), max(1, batch_partials)):
        batch = starts[first : first + max(1, batch_partials)]
        low = batch[0] * hop - half
        high = (batch[-1] + span - 1) * hop - half + n_fft
        while not exhausted and buffer_start + buffer.shape[0] < min(high, kept_total):
            piece = next(source, None)
            if piece is None:
                exhausted = True
            else:
                buffer = np.concatenate([buffer, piece])
        segment = np.zeros(high - low, dtype=np.float32)
        begin, end = max(low, buffer_start), min(high, buffer_start + buffer.shape[0])
        if end > begin:
            segment[begin - low : end - low] = buffer[begin - buffer_start : end - buffer_start]
        mel = uncentred(torch.from_numpy(segment)[None].to(device))[0]
        partials = torch.stack([mel[start - batch[0] : start - batch[0] + span] for start in batch])
        total += encoder(partials).to(torch.float64).sum(dim=0)
        next_low = starts[first + len(batch)] * hop - half if first + len(batch) < len(starts) else high
        drop = max(0, min(next_low - buffer_start, buffer.shape[0]))
        buffer, buffer_start = buffer[drop:], buffer_start + drop
    mean = (total / len(starts)).to(torch.float32)
    embedding = torch.nn.functional.normalize(mean[None], p=2.0, dim=1, eps=torch.finfo(mean.dtype).tiny)[0]
    return LongFormEmbedding(
        embedding=embedding, num_samples=num_samples, kept_num_samples=kept_total, num_partials=len(starts)
    )


__all__ = ["BATCH_PARTIALS", "BlockSource", "LongFormEmbedding", "embed_long"]

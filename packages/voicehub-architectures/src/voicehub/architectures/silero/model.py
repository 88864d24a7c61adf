"""Native PyTorch graph of Silero VAD v5/v6 (upstream: github.com/snakers4/silero-vad, MIT).

One branch per sample rate, each a small network that turns one 32 ms chunk (plus the tail of the
previous chunk as context) into a speech probability:

    [context (K) | chunk (C)]  -> reflect-pad right by K -> STFT as a Conv1d with a fixed basis
    (filter C/2, hop C/4, 4 frames) -> magnitude (C/4 + 1 bins) -> 4 x (Conv1d k3 p1 + ReLU),
    strides 1, 2, 2, 1 (4 frames -> 1) -> LSTM cell (128) -> ReLU -> 1x1 Conv1d -> sigmoid

with C = 512, K = 64 at 16 kHz and C = 256, K = 32 at 8 kHz. The LSTM state and the context
carry over from chunk to chunk.

Two execution paths compute the same function:

* :meth:`SileroVAD.forward` (whole file): cuts every chunk window out of the signal at once, runs
  the STFT and the encoder batched over all chunks, and leaves only the recurrence sequential
  (``nn.LSTM`` precomputes the input projection of all steps). Batches of files of different
  lengths are zero-padded on the right, which is exactly what the upstream loop does to a last
  partial chunk, so each file's probabilities are independent of its batch mates.
* :meth:`SileroVAD.step` (streaming): one chunk per call with an explicit
  :class:`SileroVADState` (context and LSTM state); :meth:`SileroVAD.step_chunks` continues a
  stream with several buffered chunks at once.

Streamed and whole-file probabilities agree to ~1e-7 because the STFT and convolutions are
computed as framed matrix products whose rounding does not depend on how many chunks are
encoded together (:func:`_rows_linear`).
"""

from __future__ import annotations

import dataclasses
from typing import cast

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from voicehub.architectures.silero.config import (
    KERNEL_SIZE,
    SileroConfig,
    branch_name,
    chunk_num_samples,
    context_num_samples,
    filter_length,
    hop_length,
    num_frequency_bins,
)
from voicehub.core.errors import AudioError

MIN_ROWS = 4
"""Fewest rows :func:`_rows_linear` multiplies at once."""

BLOCK_NUM_CHUNKS = 2048
"""Chunks the whole-file path encodes at once (65.5 s at 16 kHz): bounds its peak memory."""


def _rows_linear(inputs: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
    """``F.linear`` over the last dimension, with at least :data:`MIN_ROWS` rows per product.

    BLAS sums a single-row product (a matrix-vector kernel) in another order than a multi-row
    one, so one streamed chunk would otherwise differ from the same chunk inside a whole file.
    Fewer rows are padded by repeating the first; the padding is dropped from the result.
    """
    rows = inputs.reshape(-1, inputs.shape[-1])
    count = rows.shape[0]
    if count < MIN_ROWS:
        rows = torch.cat([rows, rows[:1].expand(MIN_ROWS - count, -1)])
    return F.linear(rows, weight, bias)[:count].reshape(*inputs.shape[:-1], weight.shape[0])


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class SileroVADState:
    """What one stream carries from chunk to chunk.

    Attributes:
        context: float (batch, context_samples), the last K samples seen (zeros at the start).
        hidden: float (1, batch, hidden_size), LSTM hidden state.
        cell: float (1, batch, hidden_size), LSTM cell state.
    """

    context: Tensor
    hidden: Tensor
    cell: Tensor


class SileroVADBranch(nn.Module):
    """The network for one sample rate.

    Args:
        config: the graph's sizes.
        sample_rate: the rate in Hz this branch serves (16000 or 8000).
    """

    stft_basis: Tensor

    def __init__(self, config: SileroConfig, sample_rate: int) -> None:
        super().__init__()
        self.sample_rate = sample_rate
        self.chunk_samples = chunk_num_samples(sample_rate)
        self.context_samples = context_num_samples(sample_rate)
        self.hop_length = hop_length(sample_rate)
        self.num_bins = num_frequency_bins(sample_rate)
        # Real and imaginary DFT rows stacked: (2 * num_bins, 1, filter_length), loaded from the checkpoint.
        self.register_buffer("stft_basis", torch.zeros(2 * self.num_bins, 1, filter_length(sample_rate)))
        in_channels = [self.num_bins, *config.encoder_channels[:-1]]
        self.encoder = nn.ModuleList(
            nn.Conv1d(c_in, c_out, KERNEL_SIZE, stride=stride, padding=KERNEL_SIZE // 2)
            for c_in, c_out, stride in zip(in_channels, config.encoder_channels, config.encoder_strides, strict=True)
        )
        self.lstm = nn.LSTM(config.encoder_channels[-1], config.hidden_size, batch_first=True)
        self.head = nn.Conv1d(config.hidden_size, 1, 1)

    def encode(self, windows: Tensor) -> Tensor:
        """Encode chunk windows.

        The STFT and the convolutions are written as framed matrix products (``unfold`` + ``linear``,
        the same arithmetic as ``Conv1d``) so that a window's features do not depend on how many
        windows are encoded together (see :func:`_rows_linear`). This keeps the streaming and
        whole-file paths equal up to the float32 rounding of the recurrence alone.

        Args:
            windows: float (num_windows, context_samples + chunk_samples).

        Returns:
            float (num_windows, encoder_channels[-1]), the LSTM input of each window.
        """
        padded = F.pad(windows.unsqueeze(1), (0, self.context_samples), mode="reflect").squeeze(1)
        frames = padded.unfold(1, self.stft_basis.shape[-1], self.hop_length)  # (windows, 4, filter_length)
        spectrum = _rows_linear(frames, self.stft_basis.squeeze(1), None)  # (windows, 4, 2 * num_bins)
        real, imag = spectrum[..., : self.num_bins], spectrum[..., self.num_bins :]
        features = torch.sqrt(real * real + imag * imag)  # (windows, frames, channels)
        for module in self.encoder:
            conv = cast(nn.Conv1d, module)
            half = conv.kernel_size[0] // 2
            columns = F.pad(features, (0, 0, half, half)).unfold(1, conv.kernel_size[0], conv.stride[0])
            weight = conv.weight.reshape(conv.out_channels, -1)  # (out, in * kernel), as columns are laid out
            features = F.relu(_rows_linear(columns.reshape(columns.shape[0], columns.shape[1], -1), weight, conv.bias))
        # Upstream averages the head output over the remaining frames; with strides 1, 2, 2, 1 on
        # 4 STFT frames exactly one frame is left, so the mean is the identity.
        return features.mean(dim=1)

    def decode(self, hidden: Tensor) -> Tensor:
        """Speech probability from LSTM outputs.

        Args:
            hidden: float (batch, num_chunks, hidden_size).

        Returns:
            float (batch, num_chunks) in [0, 1].
        """
        logits = self.head(F.relu(hidden).transpose(1, 2))
        return torch.sigmoid(logits).squeeze(1)


class SileroVAD(nn.Module):
    """Silero VAD with a branch per sample rate (``branches["16k"]``, ``branches["8k"]``).

    Args:
        config: sizes and the sample rates to build branches for.
    """

    def __init__(self, config: SileroConfig | None = None) -> None:
        super().__init__()
        self.config = config or SileroConfig()
        self.branches = nn.ModuleDict(
            {branch_name(rate): SileroVADBranch(self.config, rate) for rate in self.config.sample_rates}
        )

    def branch(self, sample_rate: int) -> SileroVADBranch:
        """The branch for ``sample_rate`` Hz.

        Raises:
            SampleRateError: if the model has no branch for that rate.
        """
        self.config.check_sample_rate(sample_rate)
        return cast(SileroVADBranch, self.branches[branch_name(sample_rate)])

    @staticmethod
    def num_chunks(num_samples: int, sample_rate: int) -> int:
        """Probabilities produced for ``num_samples`` samples: ceil(num_samples / chunk_samples)."""
        chunk = chunk_num_samples(sample_rate)
        return -(-int(num_samples) // chunk)

    def _dtype(self) -> torch.dtype:
        return next(self.parameters()).dtype

    def forward(self, waveform: Tensor, sample_rate: int, *, block_num_chunks: int = BLOCK_NUM_CHUNKS) -> Tensor:
        """Whole-file path: speech probability of every chunk.

        Long inputs run in blocks of ``block_num_chunks`` chunks, carrying the LSTM state and the
        context across blocks exactly as :meth:`step_chunks` does, so peak memory is bounded by
        the block (about 25 MB at the default) rather than growing with the input; the result
        equals one block over the whole input up to float32 rounding (< 1e-6).

        Args:
            waveform: float (batch, num_samples) or (num_samples,), mono, in [-1, 1], at
                ``sample_rate`` Hz. Shorter files in a batch are zero-padded on the right; keep
                the first :meth:`num_chunks` probabilities of each.
            sample_rate: 16000 or 8000 (a rate the config has a branch for).
            block_num_chunks: chunks encoded at once (>= 1); the default is
                :data:`BLOCK_NUM_CHUNKS` (65.5 s at 16 kHz).

        Returns:
            float (batch, num_chunks) or (num_chunks,) for 1-D input; chunk ``i`` covers samples
            ``[i * C, (i + 1) * C)`` with C = 512 at 16 kHz, 256 at 8 kHz (the last chunk
            zero-padded).

        Raises:
            SampleRateError: for a rate without a branch.
            AudioError: for a waveform that is not 1-D/2-D or holds no samples, or a block size < 1.
        """
        branch = self.branch(sample_rate)
        if isinstance(block_num_chunks, bool) or not isinstance(block_num_chunks, int) or block_num_chunks < 1:
            raise AudioError(f"block_num_chunks: expected a positive int, got {block_num_chunks!r}", source="waveform")
        squeeze = waveform.dim() == 1
        batch = self._as_batch(waveform, "waveform")
        chunk, context = branch.chunk_samples, branch.context_samples
        num_samples = batch.shape[1]
        num_chunks = self.num_chunks(num_samples, sample_rate)
        state: tuple[Tensor, Tensor] | None = None
        blocks = []
        for first in range(0, num_chunks, block_num_chunks):
            last = min(first + block_num_chunks, num_chunks)
            start, stop = first * chunk - context, last * chunk  # the block's windows, context included
            piece = batch[:, max(start, 0) : min(stop, num_samples)]
            piece = F.pad(piece, (max(-start, 0), max(stop - num_samples, 0)))
            windows = piece.unfold(1, context + chunk, chunk)  # (batch, last - first, context + chunk)
            features = branch.encode(windows.reshape(-1, context + chunk)).view(batch.shape[0], last - first, -1)
            hidden, state = branch.lstm(features, state)
            blocks.append(branch.decode(hidden))
        probabilities = blocks[0] if len(blocks) == 1 else torch.cat(blocks, dim=1)
        return probabilities.squeeze(0) if squeeze else probabilities

    def initial_state(self, batch_size: int, sample_rate: int) -> SileroVADState:
        """Zero state for ``batch_size`` streams at ``sample_rate`` Hz (the upstream ``reset_states``)."""
        branch = self.branch(sample_rate)
        hidden_size = branch.lstm.hidden_size
        device, dtype = branch.stft_basis.device, self._dtype()
        return SileroVADState(
            context=torch.zeros(batch_size, branch.context_samples, device=device, dtype=dtype),
            hidden=torch.zeros(1, batch_size, hidden_size, device=device, dtype=dtype),
            cell=torch.zeros(1, batch_size, hidden_size, device=device, dtype=dtype),
        )

    def step(
        self, chunk: Tensor, sample_rate: int, state: SileroVADState | None = None
    ) -> tuple[Tensor, SileroVADState]:
        """Streaming path: the speech probability of one chunk.

        Args:
            chunk: float (batch, chunk_samples) or (chunk_samples,): exactly 512 samples at 16 kHz,
                256 at 8 kHz.
            sample_rate: 16000 or 8000.
            state: the state returned by the previous call; ``None`` starts a new stream.

        Returns:
            ``(probability, state)``: float (batch,) (a 0-d tensor for 1-D input) and the state
            to pass with the next chunk.

        Raises:
            SampleRateError: for a rate without a branch.
            AudioError: for a chunk of the wrong length or shape, or a state of another batch size.
        """
        branch = self.branch(sample_rate)
        if chunk.shape[-1] != branch.chunk_samples:
            raise AudioError(
                f"chunk: expected {branch.chunk_samples} samples at {sample_rate} Hz, got {chunk.shape[-1]}; "
                f"buffer the stream into 32 ms chunks (or use the whole-file forward)",
                source="chunk",
            )
        probabilities, new_state = self._step_chunks(chunk, sample_rate, state)
        return probabilities[..., 0], new_state

    def step_chunks(
        self, chunks: Tensor, sample_rate: int, state: SileroVADState | None = None
    ) -> tuple[Tensor, SileroVADState]:
        """Streaming path for several consecutive chunks at once (what a stream has buffered).

        The encoder runs batched over the chunks, the LSTM continues from ``state``; the result
        equals calling :meth:`step` once per chunk.

        Args:
            chunks: float (batch, num_chunks * chunk_samples) or (num_chunks * chunk_samples,).
            sample_rate: 16000 or 8000.
            state: the state returned by the previous call; ``None`` starts a new stream.

        Returns:
            ``(probabilities, state)``: float (batch, num_chunks) or (num_chunks,) for 1-D input,
            and the state after the last chunk.

        Raises:
            SampleRateError: for a rate without a branch.
            AudioError: for a length that is not a multiple of the chunk, a bad shape, or a state
                of another batch size.
        """
        return self._step_chunks(chunks, sample_rate, state)

    def _step_chunks(
        self, chunks: Tensor, sample_rate: int, state: SileroVADState | None
    ) -> tuple[Tensor, SileroVADState]:
        # step() and step_chunks() share this body rather than calling each other, so that an
        # optimization pass wrapping both (optimization_execution_methods) never nests.
        branch = self.branch(sample_rate)
        squeeze = chunks.dim() == 1
        batch = self._as_batch(chunks, "chunks")
        chunk, context = branch.chunk_samples, branch.context_samples
        if batch.shape[1] % chunk:
            raise AudioError(
                f"chunks: expected a multiple of {chunk} samples at {sample_rate} Hz, got {batch.shape[1]}; "
                f"buffer the stream into 32 ms chunks (or use the whole-file forward)",
                source="chunks",
            )
        if state is None:
            state = self.initial_state(batch.shape[0], sample_rate)
        elif state.context.shape != (batch.shape[0], context):
            raise AudioError(
                f"state: context has shape {tuple(state.context.shape)}, expected "
                f"({batch.shape[0]}, {context}) for this batch and rate; start a new state",
                source="chunks",
            )
        signal = torch.cat([state.context, batch], dim=1)
        windows = signal.unfold(1, context + chunk, chunk)  # (batch, num_chunks, context + chunk)
        features = branch.encode(windows.reshape(-1, context + chunk)).view(batch.shape[0], windows.shape[1], -1)
        if windows.shape[1] == 1 and type(branch.lstm) is nn.LSTM:
            # One step: the plain cell avoids nn.LSTM's per-call sequence set-up, most of a one-chunk call.
            weight_ih, weight_hh, bias_ih, bias_hh = branch.lstm.all_weights[0]
            h1, c1 = torch.lstm_cell(
                features[:, 0], (state.hidden[0], state.cell[0]), weight_ih, weight_hh, bias_ih, bias_hh
            )
            hidden, h, c = h1.unsqueeze(1), h1.unsqueeze(0), c1.unsqueeze(0)
        else:
            hidden, (h, c) = branch.lstm(features, (state.hidden, state.cell))
        probabilities = branch.decode(hidden)
        new_state = SileroVADState(context=signal[:, -context:], hidden=h, cell=c)
        return (probabilities[0] if squeeze else probabilities), new_state

    def optimization_execution_methods(self) -> tuple[str, ...]:
        """The entry points optimization passes wrap: the whole-file and both streaming paths.

        ``voicehub.optimization`` passes that wrap execution (``threads``, ``inference-mode``,
        ``compile``...) read this protocol instead of wrapping ``forward`` alone.
        """
        return ("forward", "step", "step_chunks")

    def _as_batch(self, waveform: Tensor, name: str) -> Tensor:
        if waveform.dim() not in (1, 2) or waveform.shape[-1] == 0:
            raise AudioError(
                f"{name}: expected a float tensor (batch, num_samples) or (num_samples,) with samples, "
                f"got shape {tuple(waveform.shape)}",
                source=name,
            )
        batch = waveform if waveform.dim() == 2 else waveform.unsqueeze(0)
        return batch.to(self._dtype())


__all__ = ["BLOCK_NUM_CHUNKS", "MIN_ROWS", "SileroVAD", "SileroVADBranch", "SileroVADState"]

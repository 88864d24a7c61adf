"""Native PyTorch VITS generator (inference graph), as in Piper voices.

VITS (Kim et al. 2021, "Conditional Variational Autoencoder with Adversarial Learning for End-to-End
Text-to-Speech"; jaywalnut310/vits and rhasspy/piper ``piper_train/vits``, both MIT). At inference:

    phoneme ids (batch, T_x) -> text encoder (embedding * sqrt(H), 6 x [relative-position attention,
    conv feed-forward], post-norm) -> prior mean m_p and log-std logs_p (batch, C, T_x)
    -> duration predictor -> log-durations; frames per phoneme = ceil(exp(logw) * length_scale)
    -> monotonic length regulation: each frame takes its phoneme's m_p, logs_p (batch, C, T_y)
    -> z_p = m_p + noise * exp(logs_p) * noise_scale -> normalizing flow, reversed -> z
    -> HiFi-GAN decoder: T_y frames -> T_y * hop_length samples in [-1, 1].

Module and parameter names follow the upstream ``SynthesizerTrn`` (``enc_p``, ``dp``, ``flow``,
``dec``, ``emb_g``) so checkpoints map one to one; the parts only training uses (posterior encoder
``enc_q``, the duration predictor's posterior flows and its first ConvFlow, which the reverse pass
skips) are left out.

Batches are padded on the right. Every step is masked so that each item's waveform equals the
item synthesized alone (within float rounding of differently shaped products): the text encoder
and duration predictor mask their inputs and the flow masks its couplings. The decoder runs item
by item on the CPU (no work on padding); elsewhere it runs batched and zeroes the padded samples
before each convolution (a lone item's convolutions see zero padding there), which upstream does
not need because it synthesizes one sentence at a time.

Noise: the stochastic duration predictor draws ``(batch, 2, T_x)`` standard normals scaled by
``noise_w``, the prior draws ``(batch, inter_channels, T_y)`` scaled by ``noise_scale``. Pass them
explicitly (:class:`VITSNoise`, e.g. the same tensors another runtime used), or a
``torch.Generator`` (one for the batch, or one per item so an item's audio does not depend on its
batch mates), or set both scales to 0 for noiseless, repeatable output.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from voicehub.architectures.parallel import (
    call_single_threaded,
    idle_threads_sleep,
    map_single_threaded,
)
from voicehub.architectures.vits.config import VITSConfig, check_scales
from voicehub.architectures.vits.decoder import Generator
from voicehub.architectures.vits.duration import DurationPredictor, StochasticDurationPredictor
from voicehub.architectures.vits.encoder import TextEncoder
from voicehub.architectures.vits.flow import ResidualCouplingBlock
from voicehub.architectures.vits.layers import sequence_mask
from voicehub.core.errors import InferenceOptionError

SPLIT_FLOW_MIN_FRAMES = 96
"""Frames from which one item's flow runs as time pieces on several threads (see
:meth:`~voicehub.architectures.vits.flow.ResidualCouplingBlock.inverse_in_pieces`); a shorter flow
is cheaper than the pieces' extra context and the threads' wake-ups."""

SHAPE_BUCKET = 32
"""Latent frames are padded (and masked) up to a multiple of this before the decoder runs: oneDNN
builds convolution kernels per input shape (a new length costs the decoder's first call 75-120 ms
more on two threads), and rounded lengths repeat from call to call, so the kernels it cached are
reused. The padding is decoded like signal: 32 decodes ~10 % more frames than the signal (the 16
benchmark sentences: 2816 for 2554). 8 was measured too (2026-12-02, 2 threads, AMD EPYC): with
every shape built beforehand, ``generate()`` of the 16 sentences took 0.956x the time; but a
paragraph streamed 10 times with fresh noise, 10 calls in a new process, took 1.06x and 1.16x by
medians (two processes each; best times alike), since new 8-frame lengths kept turning up and each
paid its first call. 32 stays until recurring lengths can be tightened without paying for one-off
ones. Phoneme ids and the flow's frames are not padded here: rounding 109 ids up to 128 cost the
text side ~15 % and 240 frames up to 256 the flow ~7 % (measured on their earlier BLAS paths). The
flow's oneDNN products, and one unmasked item's feed-forward from 56 ids on, round their rows to a
multiple of 8 instead (:data:`~voicehub.architectures.vits.layers.ONEDNN_ROW_BUCKET`). One item
decoded in tiles on several threads rounds each tile
(:data:`~voicehub.architectures.vits.decoder.TILE_BUCKET`) and skips this padding."""


# ----------------------------------------------------------------------------- the generator
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class VITSNoise:
    """Standard-normal noise for one call; only the leading part of each tensor is used.

    Attributes:
        duration: float (batch, 2, >= T_x), the stochastic duration predictor's input noise
            (scaled by ``noise_w``; unused by a deterministic predictor).
        latent: float (batch, inter_channels, >= T_y), the prior's noise (scaled by ``noise_scale``);
            T_y, the number of frames, is known only after the durations, so pass enough of it.
    """

    duration: Tensor
    latent: Tensor


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class VITSOutput:
    """What one batched call returns.

    Attributes:
        waveform: float32 (batch, max_num_samples) in [-1, 1] at ``sample_rate`` Hz, zero after each
            item's ``num_samples``.
        num_samples: int64 (batch,), each item's length in samples (``num_frames * hop_length``).
        durations: int64 (batch, T_x), latent frames per phoneme id (0 in the padding); one frame is
            ``hop_length`` samples.
        num_ids: int64 (batch,), each item's phoneme ids (its length before padding).
        num_frames: int64 (batch,), each item's latent frames (the sum of its durations, at least 1).
        hop_length: samples per frame.
        sample_rate: Hz.
    """

    waveform: Tensor
    num_samples: Tensor
    durations: Tensor
    num_ids: Tensor
    num_frames: Tensor
    hop_length: int
    sample_rate: int

    def item(self, index: int) -> tuple[np.ndarray, np.ndarray]:
        """One item's waveform, float32 (num_samples,), and its samples per phoneme id, int64 (T_x_item,)."""
        length = int(self.num_samples[index])
        num_ids = int(self.num_ids[index])
        waveform = self.waveform[index, :length].detach().cpu().numpy()
        return waveform, self.durations[index, :num_ids].cpu().numpy() * self.hop_length


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class _Prior:
    """What the text side of :meth:`VITSGenerator.forward` hands to the flow and the decoder."""

    z_p: Tensor  # float (batch, inter_channels, T_y): the prior's sample
    y_mask: Tensor  # float (batch, 1, T_y)
    durations: Tensor  # int64 (batch, T_x): frames per phoneme id
    num_frames: Tensor  # int64 (batch,)
    g: Tensor | None  # float (batch, speaker_channels, 1), or None


def _bucket(length: int) -> int:
    """``length`` rounded up to a multiple of :data:`SHAPE_BUCKET`."""
    return -(-length // SHAPE_BUCKET) * SHAPE_BUCKET


def _pad_to(tensor: Tensor, length: int) -> Tensor:
    """Zero-pad the last axis up to ``length``."""
    return F.pad(tensor, (0, length - tensor.shape[-1])) if tensor.shape[-1] < length else tensor


def pad_phoneme_ids(sequences: Sequence[Sequence[int]], *, pad_id: int = 0) -> tuple[Tensor, Tensor]:
    """Right-pad id sequences into one batch.

    Returns:
        ``(ids, lengths)``: int64 (batch, max_length) and int64 (batch,).

    Raises:
        InferenceOptionError: for an empty batch or an empty sequence.
    """
    if not sequences:
        raise InferenceOptionError("vits: expected at least one phoneme-id sequence, got an empty batch")
    lengths = [len(s) for s in sequences]
    if min(lengths) == 0:
        raise InferenceOptionError(f"vits: every phoneme-id sequence needs at least one id, got lengths {lengths}")
    ids = torch.full((len(sequences), max(lengths)), pad_id, dtype=torch.long)
    for row, sequence in enumerate(sequences):
        ids[row, : len(sequence)] = torch.as_tensor(list(sequence), dtype=torch.long)
    return ids, torch.tensor(lengths, dtype=torch.long)


def _one_per_item(generators: Sequence[torch.Generator], batch: int) -> list[torch.Generator]:
    """``generators`` as a list, checked to hold one generator per item.

    Raises:
        InferenceOptionError: for a count other than ``batch``.
    """
    listed = list(generators)
    if len(listed) != batch:
        raise InferenceOptionError(f"vits: expected one torch.Generator per item ({batch}), got {len(listed)}")
    return listed


def _draw(
    generator: torch.Generator | Sequence[torch.Generator] | None,
    batch: int,
    channels: int,
    lengths: Tensor,
    device: torch.device,
) -> Tensor:
    """Standard normals (batch, channels, max(lengths)); per-item generators draw only their own length."""
    size = int(lengths.max())
    if generator is None or isinstance(generator, torch.Generator):
        gen_device = generator.device if generator is not None else device
        return torch.randn(batch, channels, size, generator=generator, device=gen_device).to(device)
    out = torch.zeros(batch, channels, size, device=device)
    for row, (gen, length) in enumerate(zip(_one_per_item(generator, batch), lengths.tolist(), strict=True)):
        out[row, :, :length] = torch.randn(1, channels, length, generator=gen, device=gen.device).to(device)[0]
    return out


class VITSGenerator(nn.Module):
    """The VITS inference graph (see the module docstring for the data flow).

    Args:
        config: graph sizes.
    """

    def __init__(self, config: VITSConfig) -> None:
        super().__init__()
        self.config = config
        self.enc_p = TextEncoder(config)
        self.dp: StochasticDurationPredictor | DurationPredictor = (
            StochasticDurationPredictor(config) if config.stochastic_duration else DurationPredictor(config)
        )
        self.flow = ResidualCouplingBlock(config)
        self.dec = Generator(config)
        if config.num_speakers > 1:
            self.emb_g = nn.Embedding(config.num_speakers, config.speaker_channels)

    def _check_inputs(self, ids: Tensor, lengths: Tensor, speaker_ids: Tensor | None) -> None:
        if ids.dim() != 2 or ids.dtype not in (torch.int64, torch.int32):
            raise InferenceOptionError(
                f"vits: expected phoneme ids as an integer tensor (batch, num_ids), got {ids.dtype} {tuple(ids.shape)}"
            )
        if lengths.shape != (ids.shape[0],):
            raise InferenceOptionError(
                f"vits: expected lengths (batch,) = ({ids.shape[0]},), got {tuple(lengths.shape)}"
            )
        if int(lengths.min()) < 1 or int(lengths.max()) > ids.shape[1]:
            raise InferenceOptionError(
                f"vits: lengths must be in 1..{ids.shape[1]} (the padded length), got {lengths.tolist()}"
            )
        if int(ids.min()) < 0 or int(ids.max()) >= self.config.num_symbols:
            raise InferenceOptionError(
                f"vits: phoneme ids must be in 0..{self.config.num_symbols - 1}, got {int(ids.min())}..{int(ids.max())}"
            )
        if self.config.num_speakers > 1:
            if speaker_ids is None or speaker_ids.shape != (ids.shape[0],):
                raise InferenceOptionError(
                    f"vits: this model has {self.config.num_speakers} speakers; pass speaker_ids (batch,) = "
                    f"({ids.shape[0]},), got {None if speaker_ids is None else tuple(speaker_ids.shape)}"
                )
            if int(speaker_ids.min()) < 0 or int(speaker_ids.max()) >= self.config.num_speakers:
                raise InferenceOptionError(
                    f"vits: speaker ids must be in 0..{self.config.num_speakers - 1}, got {speaker_ids.tolist()}"
                )
        elif speaker_ids is not None:
            raise InferenceOptionError("vits: this model has one speaker; pass speaker_ids=None")

    def forward(
        self,
        ids: Tensor,
        lengths: Tensor,
        *,
        speaker_ids: Tensor | None = None,
        noise_scale: float = 0.667,
        length_scale: float = 1.0,
        noise_w: float = 0.8,
        noise: VITSNoise | None = None,
        generator: torch.Generator | Sequence[torch.Generator] | None = None,
        frames_per_item: bool | None = None,
    ) -> VITSOutput:
        """Synthesize a batch of phoneme-id sequences (call it under ``torch.inference_mode()``).

        Args:
            ids: int64 (batch, T_x) phoneme ids, right-padded (see :func:`pad_phoneme_ids`).
            lengths: int64 (batch,) ids per item, 1..T_x.
            speaker_ids: int64 (batch,) speaker indices for a multi-speaker model, else ``None``.
            noise_scale: scale of the prior noise (0: the prior mean).
            length_scale: duration multiplier (> 1 slower).
            noise_w: scale of the duration noise (0: the flow's mode).
            noise: explicit standard-normal noise; overrides ``generator``.
            generator: source of the noise: one ``torch.Generator`` for the batch, or one per item
                (then each item's audio is independent of the other items); ``None`` uses torch's
                global generator.
            frames_per_item: run the decoder (~60 % of the work) item by item at each item's own
                length instead of padded and masked. ``None``: per item on the CPU, where its
                convolutions over tens of thousands of samples gain nothing from a batch and padding
                is wasted work; batched on other devices. The rest runs batched, except on the CPU
                without autograd and with two or more intra-op threads: then items that draw their
                own noise (``noise``, one generator per item, or scales of 0) run whole, one per
                thread, and otherwise each item's flow and decoder run on their own thread (one
                intra-op thread each; see :func:`~voicehub.architectures.parallel.map_single_threaded`).
                One item, when idle OpenMP threads sleep
                (:func:`~voicehub.architectures.parallel.idle_threads_sleep`), runs whole on one
                worker thread, which shares its text encoder's feed-forward layers (by hidden
                channels), its flow (coupling by coupling) and its decoder stages (as time pieces)
                with the other workers, one piece per thread; otherwise on the intra-op threads.
                ``False`` keeps the batch together on every device.

        Returns:
            :class:`VITSOutput` with the waveform, lengths and per-phoneme durations.

        Raises:
            InferenceOptionError: for ids, lengths, speakers, scales or noise of the wrong shape or range.
        """
        check_scales(noise_scale=noise_scale, length_scale=length_scale, noise_w=noise_w)
        self._check_inputs(ids, lengths, speaker_ids)
        batch, num_ids = ids.shape
        device = self.enc_p.emb.weight.device
        ids, lengths = ids.to(device=device, dtype=torch.long), lengths.to(device)
        if noise is not None and (
            noise.duration.dim() != 3
            or noise.duration.shape[:2] != (batch, 2)
            or noise.duration.shape[2] < num_ids
            or noise.latent.dim() != 3
            or noise.latent.shape[:2] != (batch, self.config.inter_channels)
        ):
            raise InferenceOptionError(
                f"vits: expected noise.duration ({batch}, 2, >= {num_ids}) and noise.latent ({batch}, "
                f"{self.config.inter_channels}, >= num_frames), got {tuple(noise.duration.shape)} and "
                f"{tuple(noise.latent.shape)}"
            )

        threads = torch.get_num_threads() if device.type == "cpu" and not torch.is_grad_enabled() else 1
        per_item_generators = generator is not None and not isinstance(generator, torch.Generator)
        if (
            batch > 1
            and threads > 1
            and frames_per_item is not False
            and (noise is not None or per_item_generators or (noise_scale == 0 and noise_w == 0))
        ):
            # Items that draw their own noise are independent: each whole item on its own thread.
            scales = (noise_scale, length_scale, noise_w)
            return self._items_on_threads(ids, lengths, speaker_ids, noise, generator, scales, threads)

        # One item is split over the pool's single-threaded workers only when idle OpenMP threads sleep
        # (see idle_threads_sleep); while they spin, its operators use the intra-op threads instead.
        split_item = batch == 1 and threads > 1 and idle_threads_sleep()
        text_side = functools.partial(
            self._prior,
            ids,
            lengths,
            speaker_ids,
            noise,
            generator,
            (noise_scale, length_scale, noise_w),
            threads if split_item else 1,
        )

        per_item = device.type == "cpu" if frames_per_item is None else frames_per_item
        decoder_threads = threads if split_item else None  # a worker's own count is one

        # A split item runs whole on one pool worker (one intra-op thread), which shares its parts with
        # the other workers (map_with_caller): its text side, over a thousand small operators in a row
        # that one intra-op thread runs as fast as two, except for the text encoder's feed-forward
        # layers (FeedForward.time_major); then its flow and decoder in time pieces. The caller sleeps
        # once instead of at every part, and the worker works instead of waiting for the others.
        def synthesize() -> VITSOutput:
            prior = text_side()
            z_p, y_mask, durations, num_frames, g = prior.z_p, prior.y_mask, prior.durations, prior.num_frames, prior.g
            max_frames = y_mask.shape[2]
            padded_frames = _bucket(max_frames)  # for the decoder only: the flow rounds its own rows to 8
            hop = self.config.hop_length
            num_samples = num_frames * hop
            if per_item and batch > 1 and threads > 1:
                # Independent items: flow and decoder of each item on its own thread (see map_single_threaded).
                audio = torch.zeros(batch, max_frames * hop, device=device)
                counts = num_frames.tolist()

                def synthesize_item(row: int) -> None:
                    count = counts[row]
                    g_row = g[row : row + 1] if g is not None else None
                    z_row = self.flow.inverse(z_p[row : row + 1, :, :count], y_mask[row : row + 1, :, :count], g_row)
                    audio[row, : count * hop] = self._decode_item(z_row, g_row)[0, : count * hop]

                map_single_threaded(synthesize_item, sorted(range(batch), key=lambda row: -counts[row]), threads)
                return self._output(audio, num_samples, durations[:, :num_ids], lengths, num_frames)

            if split_item and max_frames >= SPLIT_FLOW_MIN_FRAMES and self.flow.time_major_ready():
                z = _pad_to(self.flow.inverse_in_pieces(z_p, y_mask, g, threads), padded_frames)  # one item: no padding
            else:
                z = _pad_to(self.flow.inverse(z_p, y_mask, g) * y_mask, padded_frames)
            if per_item:
                audio = torch.zeros(batch, max_frames * hop, device=device)
                for row, count in enumerate(num_frames.tolist()):
                    g_row = g[row : row + 1] if g is not None else None
                    item = self._decode_item(z[row : row + 1, :, :count], g_row, decoder_threads)
                    audio[row, : count * hop] = item[0, : count * hop]
            else:
                ragged = bool((num_frames != padded_frames).any())
                audio = self.dec(z, g, num_frames if ragged else None, decoder_threads)
                audio = audio[:, : max_frames * hop]
                if ragged:
                    audio = audio * sequence_mask(num_samples, audio.shape[1])[:, 0]
            return self._output(audio, num_samples, durations[:, :num_ids], lengths, num_frames)

        return call_single_threaded(synthesize) if split_item else synthesize()

    def _prior(
        self,
        ids: Tensor,
        lengths: Tensor,
        speaker_ids: Tensor | None,
        noise: VITSNoise | None,
        generator: torch.Generator | Sequence[torch.Generator] | None,
        scales: tuple[float, float, float],
        pieces: int = 1,
    ) -> _Prior:
        """The text side of :meth:`forward` (arguments as there, checked): text encoder, durations,
        length regulation and the prior's sample z_p. ``pieces``: threads for the text encoder's
        feed-forward layers (:meth:`FeedForward.time_major`), the caller being one of them."""
        noise_scale, length_scale, noise_w = scales
        batch, num_ids = ids.shape
        device = ids.device
        padded_ids = num_ids  # no bucket on the text side (see SHAPE_BUCKET)
        x_mask = sequence_mask(lengths, padded_ids)
        x, m_p, logs_p = self.enc_p(_pad_to(ids, padded_ids), x_mask, pieces)
        g = (
            self.emb_g(speaker_ids.to(device)).unsqueeze(-1)
            if speaker_ids is not None and self.config.num_speakers > 1
            else None
        )

        if isinstance(self.dp, StochasticDurationPredictor):
            if noise is not None:
                duration_noise = noise.duration[:, :, :num_ids].to(device)
            elif noise_w == 0:
                duration_noise = torch.zeros(batch, 2, num_ids, device=device)
            else:
                duration_noise = _draw(generator, batch, 2, lengths, device)
            logw = self.dp(x, x_mask, _pad_to(duration_noise, padded_ids) * noise_w, g)
        else:
            logw = self.dp(x, x_mask, g)
        durations = torch.ceil(torch.exp(logw) * x_mask * length_scale)[:, 0].long()  # (batch, padded T_x) frames
        num_frames = durations.sum(dim=1).clamp_min(1)
        max_frames = int(num_frames.max())

        # Monotonic length regulation: frame f belongs to the phoneme whose cumulative end first exceeds f.
        ends = durations.cumsum(dim=1)
        frames = torch.arange(max_frames, device=device).expand(batch, max_frames).contiguous()
        phoneme = torch.searchsorted(ends, frames, right=True)
        valid = (frames < ends[:, -1:]).unsqueeze(1)
        index = phoneme.clamp_max(padded_ids - 1).unsqueeze(1).expand(-1, self.config.inter_channels, -1)
        m_frames = torch.gather(m_p, 2, index) * valid
        logs_frames = torch.gather(logs_p, 2, index) * valid
        y_mask = sequence_mask(num_frames, max_frames)

        if noise is not None:
            if noise.latent.shape[2] < max_frames:
                raise InferenceOptionError(
                    f"vits: noise.latent has {noise.latent.shape[2]} frames, this call needs {max_frames}"
                )
            latent_noise = noise.latent[:, :, :max_frames].to(device)
        elif noise_scale == 0:
            latent_noise = torch.zeros(batch, self.config.inter_channels, max_frames, device=device)
        else:
            latent_noise = _draw(generator, batch, self.config.inter_channels, num_frames, device)
        z_p = m_frames + latent_noise * torch.exp(logs_frames) * noise_scale
        return _Prior(z_p=z_p, y_mask=y_mask, durations=durations, num_frames=num_frames, g=g)

    def _items_on_threads(
        self,
        ids: Tensor,
        lengths: Tensor,
        speaker_ids: Tensor | None,
        noise: VITSNoise | None,
        generator: torch.Generator | Sequence[torch.Generator] | None,
        scales: tuple[float, float, float],
        threads: int,
    ) -> VITSOutput:
        """:meth:`forward` of a batch whose items draw their own noise (explicit noise, one generator
        per item, or none): each item runs alone at its own length on its own thread with one
        intra-op thread (see :func:`~voicehub.architectures.parallel.map_single_threaded`), longest
        first, and the results are padded into one output. The same numbers as one item at a time."""
        batch = ids.shape[0]
        generators = (
            _one_per_item(generator, batch)
            if generator is not None and not isinstance(generator, torch.Generator)
            else None
        )
        counts = lengths.tolist()

        def item(row: int) -> VITSOutput:
            count = counts[row]
            return self.forward(
                ids[row : row + 1, :count],
                lengths[row : row + 1],
                speaker_ids=None if speaker_ids is None else speaker_ids[row : row + 1],
                noise=None
                if noise is None
                else VITSNoise(duration=noise.duration[row : row + 1], latent=noise.latent[row : row + 1]),
                generator=None if generators is None else [generators[row]],
                noise_scale=scales[0],
                length_scale=scales[1],
                noise_w=scales[2],
            )

        order = sorted(range(batch), key=lambda row: -counts[row])
        outputs = dict(zip(order, map_single_threaded(item, order, threads), strict=True))
        num_samples = torch.cat([outputs[row].num_samples for row in range(batch)])
        num_frames = torch.cat([outputs[row].num_frames for row in range(batch)])
        waveform = ids.new_zeros((batch, int(num_samples.max())), dtype=torch.float32)
        durations = torch.zeros_like(ids)
        for row, out in outputs.items():
            waveform[row, : int(out.num_samples[0])] = out.waveform[0, : int(out.num_samples[0])]
            durations[row, : counts[row]] = out.durations[0]
        return self._output(waveform, num_samples, durations, lengths, num_frames)

    def _decode_item(self, z: Tensor, g: Tensor | None, threads: int | None = None) -> Tensor:
        """Decode one item's latent frames (1, C, T_y) at the bucketed length (see :data:`SHAPE_BUCKET`):
        the waveform (1, >= T_y * hop_length), of which the first T_y * hop_length samples are the signal.
        ``threads``: see :meth:`~voicehub.architectures.vits.decoder.Generator.forward`."""
        count = z.shape[2]
        rounded = _bucket(count)
        lengths = torch.tensor([count], device=z.device) if rounded != count else None
        waveform: Tensor = self.dec(_pad_to(z, rounded), g, lengths, threads)
        return waveform

    def _output(
        self, audio: Tensor, num_samples: Tensor, durations: Tensor, lengths: Tensor, num_frames: Tensor
    ) -> VITSOutput:
        return VITSOutput(
            waveform=audio,
            num_samples=num_samples,
            durations=durations,
            num_ids=lengths,
            num_frames=num_frames,
            hop_length=self.config.hop_length,
            sample_rate=self.config.sample_rate,
        )


__all__ = [
    "VITSGenerator",
    "VITSNoise",
    "VITSOutput",
    "pad_phoneme_ids",
    "sequence_mask",
]

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
and duration predictor mask their inputs, the flow masks its couplings and the decoder zeroes the
padded samples before each convolution, which upstream does not need because it synthesizes one
sentence at a time.

How the stages run is the job of an execution backend (:mod:`~voicehub.architectures.vits.backend`),
chosen when the generator is built: the plain PyTorch layers of this package, or, where a probe
finds oneDNN's fused CPU operators, a fast CPU path for float32 inference that computes the same
functions (items on their own threads, time-major text encoder and flow, fused and pre-packed
decoder convolutions). :meth:`VITSGenerator.forward` reads the same either way.

Noise: the stochastic duration predictor draws ``(batch, 2, T_x)`` standard normals scaled by
``noise_w``, the prior draws ``(batch, inter_channels, T_y)`` scaled by ``noise_scale``. Pass them
explicitly (:class:`VITSNoise`, e.g. the same tensors another runtime used), or a
``torch.Generator`` (one for the batch, or one per item so an item's audio does not depend on its
batch mates), or set both scales to 0 for noiseless, repeatable output.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from voicehub.architectures.vits.backend import ExecutionBackend, select_backend
from voicehub.architectures.vits.config import VITSConfig, check_scales
from voicehub.architectures.vits.decoder import Generator
from voicehub.architectures.vits.duration import DurationPredictor, StochasticDurationPredictor
from voicehub.architectures.vits.encoder import TextEncoder
from voicehub.architectures.vits.flow import ResidualCouplingBlock
from voicehub.architectures.vits.layers import sequence_mask
from voicehub.core.errors import InferenceOptionError


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


def _regulate_length(durations: Tensor, stats: Tensor, num_frames: int) -> Tensor:
    """Monotonic length regulation: frame f takes the stats (batch, C, T_x) of the phoneme whose
    cumulative end first exceeds f; (batch, C, num_frames), zero after each item's frames."""
    batch = durations.shape[0]
    ends = durations.cumsum(dim=1)
    frames = torch.arange(num_frames, device=durations.device).expand(batch, num_frames).contiguous()
    phoneme = torch.searchsorted(ends, frames, right=True).clamp_max(durations.shape[1] - 1)
    valid = (frames < ends[:, -1:]).unsqueeze(1)
    return torch.gather(stats, 2, phoneme.unsqueeze(1).expand(-1, stats.shape[1], -1)) * valid


def _own_noise(noise: VITSNoise | None, generator: object, scales: tuple[float, float, float]) -> bool:
    """Whether each item draws its own noise: explicit noise, one generator per item, or none at all."""
    per_item_generators = generator is not None and not isinstance(generator, torch.Generator)
    return noise is not None or per_item_generators or (scales[0] == 0 and scales[2] == 0)


class VITSGenerator(nn.Module):
    """The VITS inference graph (see the module docstring for the data flow).

    Args:
        config: graph sizes.
        backend: how the stages run; default :func:`~voicehub.architectures.vits.backend.select_backend`
            (the fast CPU path where its operators work, else the plain layers).
    """

    def __init__(self, config: VITSConfig, backend: ExecutionBackend | None = None) -> None:
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
        self.backend = select_backend() if backend is None else backend

    def _check_inputs(self, ids: Tensor, lengths: Tensor, speaker_ids: Tensor | None, noise: VITSNoise | None) -> None:
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
        if noise is not None:
            self._check_noise(noise, *ids.shape)

    def _check_noise(self, noise: VITSNoise, batch: int, num_ids: int) -> None:
        if (
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

        Returns:
            :class:`VITSOutput` with the waveform, lengths and per-phoneme durations.

        Raises:
            InferenceOptionError: for ids, lengths, speakers, scales or noise of the wrong shape or range.
        """
        check_scales(noise_scale=noise_scale, length_scale=length_scale, noise_w=noise_w)
        self._check_inputs(ids, lengths, speaker_ids, noise)
        device = self.enc_p.emb.weight.device
        ids, lengths = ids.to(device=device, dtype=torch.long), lengths.to(device)
        backend, scales = self.backend.for_call(self), (noise_scale, length_scale, noise_w)
        if backend.runs_items_apart(ids.shape[0]) and _own_noise(noise, generator, scales):
            return self._items_apart(backend, ids, lengths, speaker_ids, noise, generator, scales)

        x_mask = sequence_mask(lengths, ids.shape[1])
        x, m_p, logs_p = backend.encode_text(self.enc_p, ids, x_mask)
        g = self.emb_g(speaker_ids.to(device)).unsqueeze(-1) if speaker_ids is not None else None
        logw = self._log_durations(x, x_mask, g, noise, generator, noise_w, lengths)
        durations = torch.ceil(torch.exp(logw) * x_mask * length_scale)[:, 0].long()  # frames per id
        num_frames = durations.sum(dim=1).clamp_min(1)
        stats = _regulate_length(durations, torch.cat([m_p, logs_p], 1), int(num_frames.max()))  # per frame
        m_frames, logs_frames = stats.chunk(2, 1)
        noise_frames = self._latent_noise(noise, generator, num_frames, noise_scale)
        z_p = m_frames + noise_frames * torch.exp(logs_frames) * noise_scale
        y_mask = sequence_mask(num_frames, z_p.shape[2])
        z = backend.flow_inverse(self.flow, z_p, y_mask, g) * y_mask
        audio = backend.decode(self.dec, z, num_frames, g)
        return self._output(audio, durations, lengths, num_frames)

    def _log_durations(
        self,
        x: Tensor,
        x_mask: Tensor,
        g: Tensor | None,
        noise: VITSNoise | None,
        generator: torch.Generator | Sequence[torch.Generator] | None,
        noise_w: float,
        lengths: Tensor,
    ) -> Tensor:
        """The duration predictor's log-durations (batch, 1, T_x), drawing its noise where it is stochastic."""
        logw: Tensor
        if not isinstance(self.dp, StochasticDurationPredictor):
            logw = self.dp(x, x_mask, g)
            return logw
        batch, _, num_ids = x.shape
        if noise is not None:
            duration_noise = noise.duration[:, :, :num_ids].to(x.device)
        elif noise_w == 0:
            duration_noise = torch.zeros(batch, 2, num_ids, device=x.device)
        else:
            duration_noise = _pad_to(_draw(generator, batch, 2, lengths, x.device), num_ids)
        logw = self.dp(x, x_mask, duration_noise * noise_w, g)
        return logw

    def _latent_noise(
        self,
        noise: VITSNoise | None,
        generator: torch.Generator | Sequence[torch.Generator] | None,
        num_frames: Tensor,
        noise_scale: float,
    ) -> Tensor:
        """Standard normals (batch, inter_channels, max(num_frames)) for the prior's sample."""
        max_frames, device = int(num_frames.max()), num_frames.device
        if noise is not None:
            if noise.latent.shape[2] < max_frames:
                raise InferenceOptionError(
                    f"vits: noise.latent has {noise.latent.shape[2]} frames, this call needs {max_frames}"
                )
            return noise.latent[:, :, :max_frames].to(device)
        if noise_scale == 0:
            return torch.zeros(num_frames.shape[0], self.config.inter_channels, max_frames, device=device)
        return _draw(generator, num_frames.shape[0], self.config.inter_channels, num_frames, device)

    def _items_apart(
        self,
        backend: ExecutionBackend,
        ids: Tensor,
        lengths: Tensor,
        speaker_ids: Tensor | None,
        noise: VITSNoise | None,
        generator: torch.Generator | Sequence[torch.Generator] | None,
        scales: tuple[float, float, float],
    ) -> VITSOutput:
        """:meth:`forward` of a batch whose items draw their own noise: each item alone at its own
        length (``backend.map_items``, longest first), the results padded into one output."""
        batch = ids.shape[0]
        generators = _one_per_item(generator, batch) if isinstance(generator, Sequence) else None
        counts = lengths.tolist()

        def item(row: int) -> VITSOutput:
            return self.forward(
                ids[row : row + 1, : counts[row]],
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
        outputs = dict(zip(order, backend.map_items(item, order), strict=True))
        num_frames = torch.cat([outputs[row].num_frames for row in range(batch)])
        waveform = ids.new_zeros((batch, int(num_frames.max()) * self.config.hop_length), dtype=torch.float32)
        durations = torch.zeros_like(ids)
        for row, out in outputs.items():
            waveform[row, : int(out.num_samples[0])] = out.waveform[0, : int(out.num_samples[0])]
            durations[row, : counts[row]] = out.durations[0]
        return self._output(waveform, durations, lengths, num_frames)

    def _output(self, audio: Tensor, durations: Tensor, lengths: Tensor, num_frames: Tensor) -> VITSOutput:
        return VITSOutput(
            waveform=audio,
            num_samples=num_frames * self.config.hop_length,
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

"""The GE2E LSTM speaker encoder (Wan et al., "Generalized End-to-End Loss for Speaker
Verification", ICASSP 2018), as trained and released in ``resemblyzer`` 0.1.4 (Apache-2.0).

Graph: mel spectrogram (batch, 160 frames, 40 bands) -> 3-layer LSTM -> last layer's final
hidden state -> linear 256 -> 256 -> ReLU -> L2 norm. An utterance is cut into overlapping
partial utterances of 160 frames; its embedding is the L2-normalised mean of the partial
embeddings. The GE2E similarity scale ``w`` and offset ``b`` (``similarity_weight`` /
``similarity_bias``) are kept as parameters so that checkpoints round-trip completely and the
model can be fine-tuned with :meth:`GE2ESpeakerEncoder.ge2e_loss`.
"""

from __future__ import annotations

import math
from typing import ClassVar

import torch
from torch import nn

from voicehub.architectures.ge2e.config import GE2EConfig
from voicehub.components.filterbank import MelSpectrogram
from voicehub.core import AudioError
from voicehub.hyperion.torch import HyperTorchModel


class GE2ESpeakerEncoder(HyperTorchModel):
    """GE2E speaker encoder as a :class:`~voicehub.hyperion.torch.HyperTorchModel`.

    Attributes:
        config: the :class:`GE2EConfig`.
        frontend: the mel-spectrogram front end (no parameters).
        lstm: ``nn.LSTM(num_mel_bins, hidden_size, num_layers, batch_first=True)``.
        linear: ``nn.Linear(hidden_size, embedding_dim)``.
        similarity_weight: GE2E similarity scale ``w`` (1,), initialised to 10.
        similarity_bias: GE2E similarity offset ``b`` (1,), initialised to -5.
    """

    config_class: ClassVar[type[GE2EConfig]] = GE2EConfig
    config: GE2EConfig

    def __init__(self, config: GE2EConfig | None = None) -> None:
        super().__init__(config)
        cfg = self.config
        self.frontend = MelSpectrogram(cfg.frontend)
        self.lstm = nn.LSTM(cfg.frontend.num_mel_bins, cfg.hidden_size, cfg.num_layers, batch_first=True)
        self.linear = nn.Linear(cfg.hidden_size, cfg.embedding_dim)
        self.relu = nn.ReLU()
        self.similarity_weight = nn.Parameter(torch.tensor([10.0]))
        self.similarity_bias = nn.Parameter(torch.tensor([-5.0]))

    @property
    def sample_rate(self) -> int:
        """Input rate in Hz."""
        return self.config.sample_rate

    def forward(self, mels: torch.Tensor) -> torch.Tensor:
        """Embed partial utterances.

        Args:
            mels: float tensor (batch, num_frames, num_mel_bins) of linear mel power (not log),
                normally ``num_frames = partial_num_frames``; cast to the weights' dtype.

        Returns:
            float tensor (batch, embedding_dim); each row is non-negative with unit L2 norm
            (an all-zero ReLU output gives a zero row rather than NaN).

        Raises:
            AudioError: for a tensor that is not (batch, num_frames, num_mel_bins).
        """
        bins = self.config.frontend.num_mel_bins
        if mels.ndim != 3 or mels.shape[2] != bins or mels.shape[1] == 0:
            raise AudioError(f"GE2E expects mels (batch, num_frames, {bins}), got {tuple(mels.shape)}")
        _, (hidden, _) = self.lstm(mels.to(self.linear.weight.dtype))  # the front end runs in float32
        raw: torch.Tensor = self.relu(self.linear(hidden[-1]))
        return nn.functional.normalize(raw, p=2.0, dim=1, eps=torch.finfo(raw.dtype).tiny)

    def partial_starts(self, num_samples: int) -> tuple[list[int], int]:
        """Where the partial utterances of an utterance start.

        Follows ``VoiceEncoder.compute_partial_slices``: a partial every
        :attr:`GE2EConfig.partial_frame_step` frames while it covers the utterance; the last one
        is dropped when less than ``min_coverage`` of it holds audio (unless it is the only one).

        Args:
            num_samples: utterance length in samples.

        Returns:
            ``(starts, padded_num_samples)``: first frame of each partial, and the length the
            waveform is zero-padded to so that every partial lies inside it.
        """
        cfg = self.config
        hop = cfg.frontend.hop_length
        span = cfg.partial_num_frames
        step = cfg.partial_frame_step
        num_frames = math.ceil((num_samples + 1) / hop)
        starts = list(range(0, max(1, num_frames - span + step + 1), step))
        coverage = (num_samples - starts[-1] * hop) / (span * hop)
        if coverage < cfg.min_coverage and len(starts) > 1:
            starts.pop()
        return starts, max(num_samples, (starts[-1] + span) * hop)

    def partial_mels(self, waveform: torch.Tensor) -> torch.Tensor:
        """Cut one preprocessed utterance into partial mel spectrograms.

        Args:
            waveform: float tensor (num_samples,) at ``sample_rate`` Hz, already preprocessed.

        Returns:
            float tensor (num_partials, partial_num_frames, num_mel_bins).

        Raises:
            AudioError: for an input that is not 1-D or is empty.
        """
        if waveform.ndim != 1 or waveform.numel() == 0:
            raise AudioError(f"GE2E expects one waveform (num_samples,) with samples, got {tuple(waveform.shape)}")
        starts, padded = self.partial_starts(int(waveform.shape[0]))
        if padded > waveform.shape[0]:
            waveform = nn.functional.pad(waveform, (0, padded - int(waveform.shape[0])))
        mel = self.frontend(waveform[None])[0]
        span = self.config.partial_num_frames
        return torch.stack([mel[start : start + span] for start in starts])

    def embed_utterances(self, waveforms: list[torch.Tensor]) -> torch.Tensor:
        """Embed preprocessed utterances, all partials of all utterances in one LSTM batch.

        Args:
            waveforms: float tensors (num_samples,), each at ``sample_rate`` Hz and already
                preprocessed (see :mod:`voicehub.architectures.ge2e.processor`).

        Returns:
            float tensor (len(waveforms), embedding_dim), rows with unit L2 norm.

        Raises:
            AudioError: for an empty list or an empty waveform.
        """
        if not waveforms:
            raise AudioError("GE2E: no waveforms to embed")
        partials = [self.partial_mels(w) for w in waveforms]
        counts = [int(p.shape[0]) for p in partials]
        embeds: torch.Tensor = self(torch.cat(partials))
        means = torch.stack([chunk.mean(dim=0) for chunk in torch.split(embeds, counts)])
        return nn.functional.normalize(means, p=2.0, dim=1, eps=torch.finfo(means.dtype).tiny)

    def ge2e_loss(self, embeddings: torch.Tensor) -> torch.Tensor:
        """GE2E softmax loss (Wan et al. 2018, eq. 6-9) over a (speakers x utterances) batch.

        Args:
            embeddings: float tensor (num_speakers, num_utterances, embedding_dim), L2-normed,
                with num_speakers >= 2 and num_utterances >= 2.

        Returns:
            Scalar mean loss.

        Raises:
            AudioError: for another shape.
        """
        if embeddings.ndim != 3 or embeddings.shape[0] < 2 or embeddings.shape[1] < 2:
            raise AudioError(f"ge2e_loss expects (speakers>=2, utterances>=2, dim), got {tuple(embeddings.shape)}")
        speakers, utterances, _ = embeddings.shape
        centroids = embeddings.mean(dim=1)
        # Exclusive centroid for the utterance's own speaker (eq. 8).
        own = (embeddings.sum(dim=1, keepdim=True) - embeddings) / (utterances - 1)
        unit = nn.functional.normalize
        sim = torch.einsum("sud,kd->suk", unit(embeddings, dim=2), unit(centroids, dim=1))
        own_sim = (unit(embeddings, dim=2) * unit(own, dim=2)).sum(dim=2)
        index = torch.arange(speakers)
        sim[index, :, index] = own_sim
        logits = sim * self.similarity_weight.clamp_min(1e-6) + self.similarity_bias
        target = index[:, None].expand(speakers, utterances)
        return nn.functional.cross_entropy(logits.reshape(-1, speakers), target.reshape(-1))


__all__ = ["GE2ESpeakerEncoder"]

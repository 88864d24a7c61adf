"""The ``sv_xvector`` wrapper: the x-vector encoder behind :class:`~voicehub.speaker_verification.PreTrainedSVModel`.

There are no pretrained weights. ``load_for_training()`` without a source builds a new encoder
from ``config.encoder``; inference needs a source: a Hyperion checkpoint of
:class:`~voicehub.architectures.xvector.XVector` (``.pth`` file or ``config.json`` +
``model.safetensors`` directory) or a directory written by ``save_pretrained`` (``encoder/`` and,
when a PLDA back-end is attached, ``backend/``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from voicehub.architectures.xvector import XVector
from voicehub.core.audio import Waveform
from voicehub.core.device import Device
from voicehub.core.errors import CheckpointError
from voicehub.core.files import CONFIG_FILE_NAME, WEIGHTS_FILE_NAME
from voicehub.core.outputs import SpeakerOutput
from voicehub.hyperion.torch import HyperTorchModel
from voicehub.models.sv_xvector.config import SVXVectorConfig, SVXVectorOptions
from voicehub.speaker_verification import ENCODER_DIR, PreTrainedSVModel, SpeakerRuntime


class XVectorSpeakerVerifier(PreTrainedSVModel[SVXVectorConfig, SVXVectorOptions, XVector]):
    """x-vector embeddings (not normalised; ``embedding_dim`` from the checkpoint) with cosine or PLDA scoring.

    A batch is run as one padded forward pass with per-item lengths (the graph masks padding,
    so the result equals one-by-one inference).
    """

    config_class = SVXVectorConfig
    options_class = SVXVectorOptions

    def _load_encoder(self, checkpoint: Path | None, *, device: Device, dtype: torch.dtype, training: bool) -> XVector:
        encoder = self._build_encoder(checkpoint, training=training)
        # The mel front end (voicehub.components.MelSpectrogram) calls torch.stft, which has no
        # bfloat16 kernel on the CPU: declare it (low_precision_unsafe protocol) so that the dtype
        # pass reports itself not applicable instead of failing at the first call.
        setattr(encoder.frontend, "low_precision_unsafe", True)  # noqa: B010 (a plain attribute, not a tensor)
        return encoder

    def _build_encoder(self, checkpoint: Path | None, *, training: bool) -> XVector:
        if checkpoint is None:
            if not training:
                raise CheckpointError(
                    "sv_xvector has no pretrained weights: pass source=<an XVector checkpoint (.pth or directory)> "
                    "or a saved sv_xvector directory (on the command line: --source PATH), or train one: "
                    "model.load_for_training() builds a new encoder from the config; after training, "
                    "model.save_pretrained(directory) writes a directory to load from"
                )
            return XVector(self.config.encoder)
        target = checkpoint / ENCODER_DIR if (checkpoint / ENCODER_DIR).is_dir() else checkpoint
        if target.is_dir() and not (target / CONFIG_FILE_NAME).is_file():
            raise CheckpointError(
                f"{checkpoint}: no x-vector checkpoint: expected {ENCODER_DIR}/ (a saved sv_xvector model) or "
                f"{CONFIG_FILE_NAME} + {WEIGHTS_FILE_NAME}",
                path=checkpoint,
            )
        loaded = HyperTorchModel.auto_load(target)
        if not isinstance(loaded, XVector):
            raise CheckpointError(f"{target}: holds a {type(loaded).__name__}, not an XVector", path=target)
        return loaded

    def _save_encoder(self, encoder: XVector, directory: Path) -> None:
        """Write the encoder in the Hyperion directory format under ``encoder/``."""
        if not isinstance(encoder, XVector):
            raise CheckpointError(f"sv_xvector: cannot save a {type(encoder).__name__} encoder")
        encoder.save(directory / ENCODER_DIR)

    def _embed(
        self, runtime: SpeakerRuntime[XVector], waveforms: Sequence[Waveform], options: SVXVectorOptions
    ) -> Sequence[SpeakerOutput]:
        encoder = runtime.module
        device = encoder.device
        lengths = torch.tensor([w.num_samples for w in waveforms], device=device)
        longest = int(lengths.max())
        batch = torch.zeros(len(waveforms), longest, device=device)
        for row, waveform in enumerate(waveforms):
            batch[row, : waveform.num_samples] = torch.from_numpy(waveform.samples)
        embeddings = encoder(batch, lengths if len(waveforms) > 1 else None).float().cpu().numpy()
        return [
            SpeakerOutput(
                embedding=np.ascontiguousarray(embedding, dtype=np.float32),
                duration_s=w.duration_s,
                source=w.source,
                metadata={"model_type": self.model_type, "sample_rate": w.sample_rate},
            )
            for embedding, w in zip(embeddings, waveforms, strict=True)
        ]


__all__ = ["ENCODER_DIR", "XVectorSpeakerVerifier"]

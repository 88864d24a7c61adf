"""The ``sv_ge2e`` wrapper: the GE2E speaker encoder behind :class:`~voicehub.modeling.PreTrainedSVModel`.

Weights: by default ``resemblyzer/pretrained.pt`` from the installed ``resemblyzer==0.1.4``
wheel; otherwise a resemblyzer-format ``.pt`` file, a Hyperion ``HyperTorchModel`` checkpoint
of :class:`~voicehub.architectures.ge2e.GE2ESpeakerEncoder` (``.pth`` file or ``config.json`` +
``model.safetensors`` directory), or a directory written by :meth:`GE2ESpeakerVerifier.save_pretrained`
(``encoder/`` in the Hyperion directory format and, when a back-end is attached, ``backend/``).
The preprocessing settings of :class:`SVGE2EConfig` (silence trimming, volume target, partial
rate and coverage) override those stored with the encoder; its architecture comes from the file.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from voicehub.architectures.ge2e import GE2ESpeakerEncoder, load_resemblyzer_checkpoint, preprocess
from voicehub.architectures.ge2e.checkpoint import RESEMBLYZER_DISTRIBUTION, RESEMBLYZER_VERSION
from voicehub.core.audio import Waveform
from voicehub.core.errors import CheckpointError, InferenceOptionError
from voicehub.core.outputs import SpeakerOutput, VerificationOutput
from voicehub.hyperion.torch import CONFIG_FILE_NAME as HYPERION_CONFIG_FILE
from voicehub.hyperion.torch import HyperTorchModel
from voicehub.modeling import PreTrainedSVModel, cosine_similarity
from voicehub.models.sv_ge2e.backend import PLDABackend
from voicehub.models.sv_ge2e.config import SVGE2EConfig, SVGE2EOptions
from voicehub.registry.checkpoints import DistributionSource
from voicehub.registry.errors import CheckpointNotFoundError

ENCODER_DIR = "encoder"
"""Sub-directory of a saved wrapper holding the encoder in the Hyperion directory format."""

BACKEND_DIR = "backend"
"""Sub-directory of a saved wrapper holding the PLDA back-end (Hyperion HDF5 files)."""


class GE2ESpeakerVerifier(PreTrainedSVModel[SVGE2EConfig, SVGE2EOptions]):
    """GE2E speaker embeddings (256-dim, unit norm) with cosine or PLDA scoring.

    ``embed(audio)`` returns a :class:`~voicehub.core.SpeakerOutput` per input;
    ``verify(enrollment, test)`` a :class:`~voicehub.core.VerificationOutput` whose ``scoring``
    is ``"cosine"``, ``"plda"`` or ``"plda+calibration"``. Inputs are paths (wav, flac, ogg,
    mp3), arrays or tensors with ``sample_rate=``, ``(array, sample_rate)`` tuples, or lists.
    """

    config_class = SVGE2EConfig
    options_class = SVGE2EOptions

    def __init__(self, *args: Any, backend: PLDABackend | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._backend = backend

    # ------------------------------------------------------------------ back-end
    @property
    def backend(self) -> PLDABackend | None:
        """The attached PLDA back-end, if any."""
        return self._backend

    def set_backend(self, backend: PLDABackend | str | os.PathLike[str] | None) -> None:
        """Attach a back-end (or a directory holding one), or detach it with ``None``.

        Raises:
            CheckpointError: for a directory that does not hold a back-end.
        """
        self._backend = backend if backend is None or isinstance(backend, PLDABackend) else PLDABackend.load(backend)

    def fit_backend(
        self, audio: Sequence[Any], labels: Sequence[Any], *, sample_rate: int | None = None, **fit_options: Any
    ) -> PLDABackend:
        """Embed labelled training audio, fit a :class:`PLDABackend` on it and attach it.

        Args:
            audio: a list of inputs (see :meth:`embed`).
            labels: the speaker of each input.
            sample_rate: rate in Hz of array inputs.
            **fit_options: ``lda_dim``, ``y_dim``, ``epochs``, ``calibrate`` of :meth:`PLDABackend.fit`.

        Returns:
            The fitted back-end (also attached).

        Raises:
            InferenceOptionError: when ``audio`` and ``labels`` differ in length.
        """
        if len(audio) != len(labels):
            raise InferenceOptionError(f"fit_backend: {len(audio)} inputs but {len(labels)} labels")
        outputs = self.embed(list(audio), sample_rate=sample_rate)
        backend = PLDABackend.fit(np.stack([o.embedding for o in outputs]), list(labels), **fit_options)
        self._backend = backend
        return backend

    # ------------------------------------------------------------------ loading
    def _build_runtime(self, *, training: bool) -> Any:
        try:
            return super()._build_runtime(training=training)
        except CheckpointNotFoundError as err:
            source = self.source
            if isinstance(source, DistributionSource) and source.distribution == RESEMBLYZER_DISTRIBUTION:
                raise CheckpointNotFoundError(
                    f"sv_ge2e: the default GE2E weights come from the {RESEMBLYZER_DISTRIBUTION!r} wheel, which is "
                    f"not installed; install it with `pip install {RESEMBLYZER_DISTRIBUTION}=={RESEMBLYZER_VERSION}` "
                    f"(Apache-2.0), or pass source=<local path or hub id> of a GE2E checkpoint",
                    source=source.to_string(),
                ) from err
            raise

    def _load_runtime(self, checkpoint: Path | None, *, device: str, dtype: Any, training: bool) -> GE2ESpeakerEncoder:
        if checkpoint is None:
            raise CheckpointError(
                f"sv_ge2e needs weights: install `{RESEMBLYZER_DISTRIBUTION}=={RESEMBLYZER_VERSION}` for the default, "
                f"or pass a source (resemblyzer .pt, Hyperion .pth or directory, or a saved sv_ge2e directory)"
            )
        model = self._read_encoder(checkpoint)
        backend_dir = checkpoint / BACKEND_DIR
        if checkpoint.is_dir() and backend_dir.is_dir() and self._backend is None:
            self._backend = PLDABackend.load(backend_dir)
        cfg = self.config
        model.config = model.config.replace(
            trim_silence=cfg.trim_silence,
            target_dbfs=cfg.target_dbfs,
            partials_per_second=cfg.partials_per_second,
            min_coverage=cfg.min_coverage,
        )
        return model

    @staticmethod
    def _read_encoder(checkpoint: Path) -> GE2ESpeakerEncoder:
        if checkpoint.is_dir():
            encoder_dir = checkpoint / ENCODER_DIR
            target = encoder_dir if encoder_dir.is_dir() else checkpoint
            if not (target / HYPERION_CONFIG_FILE).is_file():
                raise CheckpointError(
                    f"{checkpoint}: no GE2E checkpoint found: expected {ENCODER_DIR}/ (a saved sv_ge2e model) or "
                    f"{HYPERION_CONFIG_FILE} + model.safetensors (a Hyperion directory)",
                    path=checkpoint,
                )
            return GE2ESpeakerEncoder.load(target)
        payload_keys = _top_level_keys(checkpoint)
        if "model_state" in payload_keys:
            return load_resemblyzer_checkpoint(checkpoint)
        loaded = HyperTorchModel.auto_load(checkpoint)
        if not isinstance(loaded, GE2ESpeakerEncoder):
            raise CheckpointError(
                f"{checkpoint}: holds a {type(loaded).__name__}, not a GE2ESpeakerEncoder", path=checkpoint
            )
        return loaded

    def _save_weights(self, runtime: Any, directory: Path) -> None:
        """Write the encoder (Hyperion directory format) and the back-end, if any."""
        if not isinstance(runtime, GE2ESpeakerEncoder):
            raise CheckpointError(f"sv_ge2e: cannot save a {type(runtime).__name__} runtime")
        runtime.save(directory / ENCODER_DIR)
        if self._backend is not None:
            self._backend.save(directory / BACKEND_DIR)

    # ------------------------------------------------------------------ inference
    def _embed(
        self, runtime: GE2ESpeakerEncoder, waveforms: Sequence[Waveform], options: SVGE2EOptions
    ) -> Sequence[SpeakerOutput]:
        device = runtime.device
        kept = [preprocess(w.samples, runtime.config) for w in waveforms]
        tensors = [torch.from_numpy(k).to(device) for k in kept]
        embeddings = runtime.embed_utterances(tensors).float().cpu().numpy()
        return [
            SpeakerOutput(
                embedding=np.ascontiguousarray(embedding, dtype=np.float32),
                duration_s=w.duration_s,
                source=w.source,
                metadata={
                    "model_type": self.model_type,
                    "sample_rate": w.sample_rate,
                    "speech_duration_s": len(k) / w.sample_rate,
                    "num_partials": len(runtime.partial_starts(len(k))[0]),
                },
            )
            for embedding, w, k in zip(embeddings, waveforms, kept, strict=True)
        ]

    def _score(self, enrollment: SpeakerOutput, test: SpeakerOutput, options: SVGE2EOptions) -> VerificationOutput:
        backend = self._backend
        if options.scoring == "backend" and backend is None:
            raise InferenceOptionError(
                "scoring='backend' but no PLDA back-end is attached; call set_backend(...) or fit_backend(...)"
            )
        if backend is None or options.scoring == "cosine":
            score = cosine_similarity(enrollment, test)
            return VerificationOutput(
                score=score, threshold=options.threshold, is_same_speaker=score >= options.threshold, scoring="cosine"
            )
        backend.check_dim(enrollment.embedding_dim)
        llr = float(backend.score(enrollment.embedding, test.embedding)[0, 0])
        threshold = options.backend_threshold
        return VerificationOutput(
            score=llr, threshold=threshold, is_same_speaker=llr >= threshold, scoring=backend.scoring
        )


def _top_level_keys(path: Path) -> set[str]:
    """Top-level keys of a ``torch.save`` dict, read with ``weights_only=True`` (empty on failure)."""
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception:
        return set()
    return {str(k) for k in payload} if isinstance(payload, dict) else set()


__all__ = ["BACKEND_DIR", "ENCODER_DIR", "GE2ESpeakerVerifier"]

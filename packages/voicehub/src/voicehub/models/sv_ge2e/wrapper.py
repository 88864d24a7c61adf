"""The ``sv_ge2e`` wrapper: the GE2E speaker encoder behind :class:`~voicehub.modeling.PreTrainedSVModel`.

Weights: by default resemblyzer 0.1.4's ``pretrained.pt`` from the installed ``voicehub-ge2e-weights``
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

from voicehub.architectures.errors import CheckpointMismatchError
from voicehub.architectures.ge2e import GE2ESpeakerEncoder, load_resemblyzer_checkpoint, preprocess
from voicehub.architectures.ge2e.checkpoint import WEIGHTS_DISTRIBUTION, WEIGHTS_INSTALL_HINT
from voicehub.core.audio import AudioLike, Waveform
from voicehub.core.errors import AudioError, CheckpointError, InferenceOptionError
from voicehub.core.outputs import SpeakerOutput, VerificationOutput
from voicehub.core.tasks import RuntimeState
from voicehub.hyperion.torch import CONFIG_FILE_NAME as HYPERION_CONFIG_FILE
from voicehub.hyperion.torch import HyperTorchModel
from voicehub.hyperion.torch.checkpoint import sniff_file_type
from voicehub.modeling import PreTrainedSVModel
from voicehub.models.sv_ge2e.backend import DEFAULT_CALIBRATION_FOLDS, DEFAULT_SHRINKAGE, PLDABackend
from voicehub.models.sv_ge2e.config import MIN_SPEECH_S, SVGE2EConfig, SVGE2EOptions

ENCODER_DIR = "encoder"
"""Sub-directory of a saved wrapper holding the encoder in the Hyperion directory format."""

BACKEND_DIR = "backend"
"""Sub-directory of a saved wrapper holding the PLDA back-end (Hyperion HDF5 files)."""


class GE2ESpeakerVerifier(PreTrainedSVModel[SVGE2EConfig, SVGE2EOptions]):
    """GE2E speaker embeddings (256-dim, unit norm) with cosine or PLDA scoring.

    ``embed(audio)`` returns a :class:`~voicehub.core.SpeakerOutput` per input;
    ``verify(enrollment, test)`` a :class:`~voicehub.core.VerificationOutput` whose ``scoring``
    is ``"cosine"``, ``"plda"`` or ``"plda+calibration"``; ``verify([clip1, clip2, ...], test)``
    enrols a speaker with several clips. Inputs are paths (wav, flac, ogg, mp3), arrays or
    tensors with ``sample_rate=``, ``(array, sample_rate)`` tuples, or lists.
    """

    config_class = SVGE2EConfig
    options_class = SVGE2EOptions

    def __init__(self, *args: Any, backend: PLDABackend | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._backend = backend
        # True once the caller chose the back-end (set_backend, fit_backend or backend=): a reload then
        # keeps that choice instead of re-attaching the back-end saved next to the weights.
        self._backend_chosen = backend is not None
        # The back-end saved next to the weights, read by _load_runtime; attached by _enter only once the
        # whole load has succeeded, so a failed load leaves the wrapper as it was.
        self._loaded_backend: PLDABackend | None = None

    # ------------------------------------------------------------------ back-end
    @property
    def backend(self) -> PLDABackend | None:
        """The attached PLDA back-end, if any."""
        return self._backend

    def set_backend(self, backend: PLDABackend | str | os.PathLike[str] | None) -> None:
        """Attach a back-end (or a directory holding one), or detach it with ``None``.

        The choice survives ``unload()``/``load()``: a detached back-end stays detached even when
        the weights directory holds a saved one.

        Raises:
            CheckpointError: for a directory that does not hold a back-end.
        """
        self._backend = backend if backend is None or isinstance(backend, PLDABackend) else PLDABackend.load(backend)
        self._backend_chosen = True

    def fit_backend(
        self,
        audio: Sequence[Any],
        labels: Sequence[Any],
        *,
        sample_rate: int | None = None,
        lda_dim: int | None = None,
        y_dim: int | None = None,
        epochs: int = 10,
        shrinkage: float = DEFAULT_SHRINKAGE,
        calibrate: bool = True,
        calibration_folds: int = DEFAULT_CALIBRATION_FOLDS,
        sessions: Sequence[Any] | None = None,
    ) -> PLDABackend:
        """Embed labelled training audio, fit a :class:`PLDABackend` on it and attach it.

        Args:
            audio: a list of inputs (see :meth:`embed`).
            labels: the speaker of each input.
            sample_rate: rate in Hz of array inputs.
            lda_dim, y_dim, epochs, shrinkage, calibrate, calibration_folds, sessions: see
                :meth:`PLDABackend.fit` (defaults: no LDA, ``y_dim = num_speakers - 1``, 10 epochs,
                ``shrinkage=DEFAULT_SHRINKAGE``, calibration on held-out speaker folds).

        Returns:
            The fitted back-end (also attached).

        Raises:
            InferenceOptionError: when ``audio`` and ``labels`` differ in length, or for a bad setting.
        """
        if isinstance(audio, (str, bytes)) or len(audio) != len(labels):
            raise InferenceOptionError(
                f"fit_backend: expected a list of inputs and one speaker label each, got "
                f"{1 if isinstance(audio, (str, bytes)) else len(audio)} input(s) and {len(labels)} label(s)"
            )
        outputs = self.embed(list(audio), sample_rate=sample_rate)
        backend = PLDABackend.fit(
            np.stack([o.embedding for o in outputs]),
            list(labels),
            lda_dim=lda_dim,
            y_dim=y_dim,
            epochs=epochs,
            shrinkage=shrinkage,
            calibrate=calibrate,
            calibration_folds=calibration_folds,
            sessions=sessions,
        )
        self._backend = backend
        self._backend_chosen = True
        return backend

    # ------------------------------------------------------------------ loading
    def _enter(self, target: RuntimeState) -> Any:
        runtime = self._runtime
        if runtime is not None and self._state is target:  # fast path, no lock
            return runtime
        with self._lock:
            self._loaded_backend = None
            try:
                runtime = super()._enter(target)
                if self._loaded_backend is not None and not self._backend_chosen:
                    self._backend = self._loaded_backend
            finally:
                self._loaded_backend = None
            return runtime

    def _load_runtime(self, checkpoint: Path | None, *, device: str, dtype: Any, training: bool) -> GE2ESpeakerEncoder:
        if checkpoint is None:
            raise CheckpointError(
                f"sv_ge2e needs weights: install {WEIGHTS_DISTRIBUTION} for the default ({WEIGHTS_INSTALL_HINT}), "
                f"or pass a source (resemblyzer .pt, Hyperion .pth or directory, or a saved sv_ge2e directory)"
            )
        model = self._read_encoder(checkpoint)
        backend_dir = checkpoint / BACKEND_DIR
        if checkpoint.is_dir() and backend_dir.is_dir() and not self._backend_chosen:
            self._loaded_backend = PLDABackend.load(backend_dir)  # attached by _enter once the load succeeded
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
        if sniff_file_type(checkpoint) == "hdf5":
            raise CheckpointError(
                f"{checkpoint}: an HDF5 file (a Hyperion NumPy model, e.g. a PLDA back-end's plda.h5), not GE2E "
                f"encoder weights; attach a back-end directory with set_backend(directory) (command line: "
                f"--backend DIRECTORY); encoder weights are a resemblyzer .pt, a Hyperion .pth, or a directory",
                path=checkpoint,
            )
        try:
            return load_resemblyzer_checkpoint(checkpoint)
        except CheckpointMismatchError:
            raise  # a resemblyzer file whose tensors do not fit: its own error, not the Hyperion reader's
        except CheckpointError:
            pass  # not a resemblyzer file (no 'model_state'): read it as a Hyperion checkpoint
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

    # ------------------------------------------------------------------ inputs
    def prepare_audio(
        self, audio: AudioLike | Sequence[AudioLike], *, sample_rate: int | None = None
    ) -> tuple[list[Waveform], bool]:
        """Decode and resample like the base class, with messages that state the accepted forms.

        Raises:
            AudioError: for ``None``, bytes, a tuple that is not ``(array, sample_rate)`` (a tuple of
                paths is not a batch: use a list), an empty list, or unusable audio.
        """
        items = audio if isinstance(audio, list) else [audio]
        if isinstance(audio, list) and not audio:
            raise AudioError(f"{type(self).__name__}: got an empty list; {_ACCEPTED_INPUTS}")
        for item in items:
            _check_input_form(item)
        return super().prepare_audio(audio, sample_rate=sample_rate)

    # ------------------------------------------------------------------ inference
    def _embed(
        self, runtime: GE2ESpeakerEncoder, waveforms: Sequence[Waveform], options: SVGE2EOptions
    ) -> Sequence[SpeakerOutput]:
        device = runtime.device
        config = runtime.config
        if options.trim_silence is not None and options.trim_silence != config.trim_silence:
            config = config.replace(trim_silence=options.trim_silence)
        kept = []
        for index, waveform in enumerate(waveforms):
            try:
                kept.append(preprocess(waveform.samples, config))
            except AudioError as err:
                name = waveform.source or f"input {index}"
                raise AudioError(
                    f"{name}: {err} (Python: embed(..., trim_silence=False); command line: --no-trim-silence)",
                    source=waveform.source,
                ) from err
        tensors = [torch.from_numpy(k).to(device) for k in kept]
        embeddings = runtime.embed_utterances(tensors).float().cpu().numpy()
        outputs = []
        for embedding, w, k in zip(embeddings, waveforms, kept, strict=True):
            speech_s = len(k) / w.sample_rate
            metadata: dict[str, Any] = {
                "model_type": self.model_type,
                "sample_rate": w.sample_rate,
                "speech_duration_s": speech_s,
                "num_partials": len(runtime.partial_starts(len(k))[0]),
            }
            if speech_s < MIN_SPEECH_S:
                metadata["warning"] = (
                    f"only {speech_s:.2f} s of speech{' after silence trimming' if config.trim_silence else ''} "
                    f"(minimum for a reliable embedding: {MIN_SPEECH_S} s, one GE2E partial); scores of this clip "
                    "are less reliable: use a longer clip"
                )
            outputs.append(
                SpeakerOutput(
                    embedding=np.ascontiguousarray(embedding, dtype=np.float32),
                    duration_s=w.duration_s,
                    source=w.source,
                    metadata=metadata,
                )
            )
        return outputs

    def _scoring_backend(self, options: SVGE2EOptions) -> PLDABackend | None:
        """The back-end that scores under ``options``, or ``None`` for cosine scoring.

        Raises:
            InferenceOptionError: for ``scoring="backend"`` without an attached back-end.
        """
        backend = self._backend
        if options.scoring == "backend" and backend is None:
            raise InferenceOptionError(
                "scoring='backend' but no PLDA back-end is attached; attach one (Python: set_backend(directory) "
                "or fit_backend(audio, labels); command line: --backend DIRECTORY), or use cosine scoring"
            )
        return None if options.scoring == "cosine" else backend

    def _score(self, enrollment: SpeakerOutput, test: SpeakerOutput, options: SVGE2EOptions) -> VerificationOutput:
        backend = self._scoring_backend(options)
        if backend is None:
            return super()._score(enrollment, test, options)  # cosine against options.threshold
        backend.check_dim(test.embedding_dim)
        return _plda_decision(backend, float(backend.score(enrollment.embedding, test.embedding)[0, 0]), options)

    def _score_enrolled(
        self, enrollment: Sequence[SpeakerOutput], test: SpeakerOutput, options: SVGE2EOptions
    ) -> VerificationOutput:
        backend = self._scoring_backend(options)
        if backend is None or len(enrollment) == 1:
            # cosine: the base rule (the mean embedding, scored by _score); one clip: _score (1-vs-1 LLR)
            return super()._score_enrolled(enrollment, test, options)
        backend.check_dim(test.embedding_dim)
        llr = backend.score_enrollment(np.stack([e.embedding for e in enrollment]), test.embedding)
        return _plda_decision(backend, llr, options)


def _plda_decision(backend: PLDABackend, llr: float, options: SVGE2EOptions) -> VerificationOutput:
    threshold = options.backend_threshold
    return VerificationOutput(score=llr, threshold=threshold, is_same_speaker=llr >= threshold, scoring=backend.scoring)


_ACCEPTED_INPUTS = (
    "expected a file path (str or pathlib.Path: wav, flac, ogg, mp3), a NumPy array or torch tensor with "
    "sample_rate=, an (array, sample_rate) tuple, a voicehub.core.Waveform, or a list of these for a batch"
)


def _check_input_form(item: object) -> None:
    """Refuse input types the audio loader would only call "array", with the accepted forms.

    Raises:
        AudioError: for ``None``, bytes, a tuple that is not ``(array, sample_rate)``, or a nested list.
    """
    if item is None:
        raise AudioError(f"got None as audio input; {_ACCEPTED_INPUTS}")
    if isinstance(item, (bytes, bytearray, memoryview)):
        raise AudioError(
            f"got {type(item).__name__} ({len(item)} bytes) as audio input; encoded or raw bytes are not decoded "
            f"in memory: write them to a file and pass its path, or pass np.frombuffer(data, '<i2') with "
            f"sample_rate=; {_ACCEPTED_INPUTS}"
        )
    if isinstance(item, tuple) and not (
        len(item) == 2 and isinstance(item[1], int) and not isinstance(item[1], bool) and not isinstance(item[0], str)
    ):
        raise AudioError(
            f"got a tuple of {len(item)} item(s) ({', '.join(type(v).__name__ for v in item[:3])}); a tuple is "
            "read only as (array, sample_rate), it is not a batch: pass several inputs as a list, e.g. "
            "embed([path1, path2])"
        )
    if isinstance(item, list):
        raise AudioError(f"got a list inside a list; a batch is one flat list of inputs; {_ACCEPTED_INPUTS}")


__all__ = ["BACKEND_DIR", "ENCODER_DIR", "GE2ESpeakerVerifier"]

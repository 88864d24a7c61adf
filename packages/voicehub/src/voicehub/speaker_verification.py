"""The speaker-verification task: :class:`PreTrainedSVModel`, cosine scoring and the PLDA back-end.

Every SV integration computes one embedding per clip (``_embed``); this module scores them, so
every SV model gets the same two scoring rules:

* cosine similarity against ``options.threshold`` (:func:`cosine_similarity`);
* a :class:`PLDABackend` (Hyperion recipe: [LDA +] centring and length normalisation, SPLDA,
  calibration on held-out speakers; see its docstring), attached with
  :meth:`PreTrainedSVModel.set_backend` or fitted on labelled audio with
  :meth:`PreTrainedSVModel.fit_backend`, saved next to the weights by ``save_pretrained``
  (``backend/``) and loaded with them, in the same runtime bundle as the encoder
  (:class:`SpeakerRuntime`), so it is attached exactly when the load succeeds.

The back-end itself is :mod:`voicehub.plda_backend` (re-exported here on first access, since it
imports h5py). Options of the models that score with both subclass :class:`SpeakerScoringOptions`
(``scoring``, ``threshold``, ``backend_threshold``). An integration implements
``_load_encoder`` (and ``_save_encoder`` unless its encoder's state dict as ``model.safetensors``
will do) and ``_embed``. Importing this module imports neither torch nor h5py.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Literal, Protocol, TypeVar, overload, runtime_checkable

import numpy as np

from voicehub.audio_input import STREAM_BLOCK_S, STREAM_FILE_MIN_DURATION_S, PreTrainedAudioModel
from voicehub.core.audio import AudioLike, Waveform, check_sample_rate, is_raw_pcm, load_audio
from voicehub.core.audio_stream import audio_file_info
from voicehub.core.config import Config
from voicehub.core.device import Device, DeviceLike, DTypeLike
from voicehub.core.errors import (
    AudioError,
    ConfigError,
    InferenceOptionError,
    LifecycleError,
    OutputValidationError,
    check_flag,
)
from voicehub.core.lazy import lazy_attributes
from voicehub.core.outputs import SpeakerOutput, VerificationOutput, check_outputs
from voicehub.core.runtime import RuntimeBundle
from voicehub.core.tasks import SpeechTask
from voicehub.modeling import ConfigT, OptionsT, PreTrainedSpeechModel, SourceLike

if TYPE_CHECKING:
    import torch

    from voicehub.plda_backend import (
        CALIBRATION_FILE,
        DEFAULT_CALIBRATION_FOLDS,
        DEFAULT_SHRINKAGE,
        PLDA_FILE,
        TRANSFORM_FILE,
        PLDABackend,
    )

EncoderT = TypeVar("EncoderT")

ENCODER_DIR = "encoder"
"""Sub-directory of a saved SV wrapper holding a ``HyperTorchModel`` encoder (Hyperion directory format)."""

BACKEND_DIR = "backend"
"""Sub-directory of a saved SV wrapper holding its PLDA back-end (Hyperion HDF5 files)."""


# --------------------------------------------------------------------------- options and runtime
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class SpeakerScoringOptions(Config):
    """Scoring options shared by the SV models (subclass it to add a model's own options).

    Attributes:
        scoring: ``"auto"`` uses the attached PLDA back-end when there is one and cosine
            similarity otherwise; ``"cosine"`` or ``"backend"`` force one.
        threshold: decision threshold on the cosine similarity, in [-1, 1].
        backend_threshold: decision threshold on the back-end's log-likelihood ratio (natural
            log); 0 is the Bayes decision for a target prior of 0.5 when the back-end is calibrated.
    """

    config_type: ClassVar[str] = "speaker-scoring-options"
    schema_version: ClassVar[int] = 1

    scoring: Literal["auto", "cosine", "backend"] = "auto"
    threshold: float = 0.5
    backend_threshold: float = 0.0

    def validate(self) -> None:
        """Check types and ranges.

        Raises:
            ConfigError: for a cosine threshold outside [-1, 1] or a non-finite LLR threshold.
        """
        Config.validate(self)
        if not -1.0 <= self.threshold <= 1.0:
            raise ConfigError(f"threshold is a cosine similarity in [-1, 1], got {self.threshold}", key="threshold")
        if not math.isfinite(self.backend_threshold):
            raise ConfigError(f"backend_threshold must be finite, got {self.backend_threshold}")


@runtime_checkable
class ThresholdOptions(Protocol):
    """Options with a cosine decision ``threshold`` (what the default scoring needs)."""

    @property
    def threshold(self) -> float:
        """The threshold in [-1, 1]."""
        ...


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class SpeakerRuntime(RuntimeBundle[EncoderT]):
    """A loaded speaker-verification model: the encoder and the back-end saved next to it.

    Attributes:
        module: the embedding encoder.
        decoder: the PLDA back-end read from the weights directory's ``backend/``, or ``None``.
    """

    decoder: PLDABackend | None = None


def cosine_similarity(first: SpeakerOutput, second: SpeakerOutput) -> float:
    """Cosine similarity of two embeddings, in [-1, 1].

    Raises:
        OutputValidationError: for embeddings of different sizes or a zero embedding.
    """
    a, b = first.embedding.astype("float64"), second.embedding.astype("float64")
    if a.shape != b.shape:
        raise OutputValidationError(f"cannot compare embeddings of sizes {a.shape[0]} and {b.shape[0]}")
    norm = math.sqrt(float(a @ a) * float(b @ b))
    if norm == 0.0:
        raise OutputValidationError("cannot score a zero embedding (silent input?)")
    return max(-1.0, min(1.0, float(a @ b) / norm))


# --------------------------------------------------------------------------- the task base
class PreTrainedSVModel(PreTrainedAudioModel[ConfigT, OptionsT, SpeakerRuntime[EncoderT]]):
    """Base of speaker-verification wrappers; implement ``_load_encoder`` and ``_embed``.

    Type parameters: the model config, the inference options and the encoder's type.

    Scoring (see the module docstring): cosine similarity against ``options.threshold``, or,
    with options derived from :class:`SpeakerScoringOptions`, the attached PLDA back-end
    (``scoring="auto"`` uses it when one is attached). Several enrolment clips are scored by
    :meth:`_score_enrolled`: the mean embedding for cosine scoring, PLDA's own N-vs-1 rule with
    a back-end.
    """

    task: ClassVar[SpeechTask] = SpeechTask.SPEAKER_VERIFICATION
    output_type: ClassVar[type] = SpeakerOutput
    _task_method: ClassVar[str] = "embed"

    def __init__(
        self,
        config: ConfigT | None = None,
        *,
        source: SourceLike | None = None,
        device: DeviceLike = "auto",
        dtype: DTypeLike = "auto",
        options: OptionsT | None = None,
        backend: PLDABackend | None = None,
    ) -> None:
        """Create the wrapper without loading anything (see :class:`~voicehub.modeling.PreTrainedSpeechModel`).

        Args:
            backend: a PLDA back-end to attach now (it then replaces one saved next to the weights).
        """
        super().__init__(config, source=source, device=device, dtype=dtype, options=options)
        self._backend = backend
        # True once the caller chose the back-end (set_backend, fit_backend or backend=): loading then
        # keeps that choice instead of attaching the back-end saved next to the weights.
        self._backend_chosen = backend is not None

    # ------------------------------------------------------------------ back-end
    @property
    def backend(self) -> PLDABackend | None:
        """The attached PLDA back-end: the one chosen by the caller, else the one loaded with the weights."""
        if self._backend_chosen:
            return self._backend
        runtime = self.runtime
        return runtime.decoder if runtime is not None else None

    def set_backend(self, backend: PLDABackend | str | os.PathLike[str] | None) -> None:
        """Attach a back-end (or a directory holding one), or detach it with ``None``.

        The choice survives ``unload()``/``load()``: a detached back-end stays detached even when
        the weights directory holds a saved one.

        The back-end's input dimension is checked against the encoder's at once (the encoder is
        loaded for that if needed, unless the wrapper is loaded for training).

        Raises:
            CheckpointError: for a directory that does not hold a back-end.
            InferenceOptionError: when the back-end was fitted on embeddings of another size than
                the encoder makes (nothing is attached).
        """
        from voicehub.plda_backend import PLDABackend

        loaded = backend if backend is None or isinstance(backend, PLDABackend) else PLDABackend.load(backend)
        if loaded is not None:
            dim = self._encoder_embedding_dim()
            if dim is not None:
                loaded.check_dim(dim)
        self._backend = loaded
        self._backend_chosen = True

    def _recipe_extras(self) -> dict[str, object]:
        """A pickled wrapper carries the back-end the caller chose (by value; ``None`` when detached)."""
        return {"backend": self._backend} if self._backend_chosen else {}

    def _apply_recipe_extras(self, extras: Mapping[str, object]) -> None:
        """Attach the back-end a pickled recipe carried (checked against the encoder on first use)."""
        from voicehub.plda_backend import PLDABackend

        rest = {key: value for key, value in extras.items() if key != "backend"}
        super()._apply_recipe_extras(rest)
        if "backend" in extras:
            backend = extras["backend"]
            self._backend = backend if isinstance(backend, PLDABackend) else None
            self._backend_chosen = True

    def _encoder_embedding_dim(self) -> int | None:
        """The size of the embeddings the encoder makes (its ``config.embedding_dim``), or ``None``
        when the encoder does not say, or the wrapper is loaded for training."""
        from voicehub.core.runtime import RuntimeState

        if self.state is RuntimeState.TRAINING:
            return None
        encoder = self._inference_runtime().module
        dim = getattr(getattr(encoder, "config", None), "embedding_dim", None)
        return dim if isinstance(dim, int) and not isinstance(dim, bool) else None

    def fit_backend(
        self,
        audio: Sequence[AudioLike],
        labels: Sequence[object],
        *,
        sample_rate: int | None = None,
        lda_dim: int | None = None,
        y_dim: int | None = None,
        epochs: int = 10,
        shrinkage: float | None = None,
        calibrate: bool = True,
        calibration_folds: int | None = None,
        sessions: Sequence[object] | None = None,
    ) -> PLDABackend:
        """Embed labelled training audio, fit a :class:`PLDABackend` on it and attach it.

        Args:
            audio: a list of inputs (see :meth:`embed`).
            labels: the speaker of each input.
            sample_rate: rate in Hz of array inputs.
            lda_dim, y_dim, epochs, shrinkage, calibrate, calibration_folds, sessions: see
                :meth:`PLDABackend.fit` (defaults, ``None`` included: no LDA, ``y_dim = num_speakers - 1``,
                10 epochs, ``DEFAULT_SHRINKAGE``, calibration on ``DEFAULT_CALIBRATION_FOLDS`` held-out
                speaker folds).

        Returns:
            The fitted back-end (also attached).

        Raises:
            InferenceOptionError: when ``audio`` and ``labels`` differ in length, or for a bad setting.
        """
        calibrate = check_flag(calibrate, name="calibrate")
        if isinstance(audio, (str, bytes)) or len(audio) != len(labels):
            raise InferenceOptionError(
                f"fit_backend: expected a list of inputs and one speaker label each, got "
                f"{1 if isinstance(audio, (str, bytes)) else len(audio)} input(s) and {len(labels)} label(s)"
            )
        from voicehub.plda_backend import DEFAULT_CALIBRATION_FOLDS, DEFAULT_SHRINKAGE, PLDABackend

        outputs = self.embed(list(audio), sample_rate=sample_rate)
        backend = PLDABackend.fit(
            np.stack([o.embedding for o in outputs]),
            list(labels),
            lda_dim=lda_dim,
            y_dim=y_dim,
            epochs=epochs,
            shrinkage=DEFAULT_SHRINKAGE if shrinkage is None else shrinkage,
            calibrate=calibrate,
            calibration_folds=DEFAULT_CALIBRATION_FOLDS if calibration_folds is None else calibration_folds,
            sessions=sessions,
        )
        self._backend = backend
        self._backend_chosen = True
        return backend

    # ------------------------------------------------------------------ loading and saving
    def _load_runtime(
        self, checkpoint: Path | None, *, device: Device, dtype: torch.dtype, training: bool
    ) -> SpeakerRuntime[EncoderT]:
        """The encoder from :meth:`_load_encoder`, and the back-end saved in ``checkpoint/backend/`` (if any).

        The saved back-end is read only when the caller has not chosen one.
        """
        encoder = self._load_encoder(checkpoint, device=device, dtype=dtype, training=training)
        saved = checkpoint / BACKEND_DIR if checkpoint is not None else None
        backend = None
        if saved is not None and checkpoint is not None and checkpoint.is_dir() and saved.is_dir():
            from voicehub.plda_backend import PLDABackend

            backend = None if self._backend_chosen else PLDABackend.load(saved)
        return SpeakerRuntime(module=encoder, decoder=backend)

    def _load_encoder(self, checkpoint: Path | None, *, device: Device, dtype: torch.dtype, training: bool) -> EncoderT:
        """Build the embedding encoder from a resolved checkpoint (see ``_load_runtime`` of the lifecycle).

        Returns:
            The encoder; the base class moves a ``torch.nn.Module`` to ``device``/``dtype``.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement _load_encoder()")

    def _save_weights(self, runtime: SpeakerRuntime[EncoderT], directory: Path) -> None:
        """Write the encoder (:meth:`_save_encoder`) and the attached back-end (``backend/``), if any."""
        self._save_encoder(runtime.module, directory)
        backend = self.backend
        if backend is not None:
            backend.save(directory / BACKEND_DIR)

    def _save_encoder(self, encoder: EncoderT, directory: Path) -> None:
        """Write the encoder into ``directory`` (default: its state dict as ``model.safetensors``)."""
        PreTrainedSpeechModel._save_weights(self, SpeakerRuntime(module=encoder), directory)

    # ------------------------------------------------------------------ inference
    @overload
    def embed(
        self,
        audio: list[AudioLike],
        *,
        sample_rate: int | None = None,
        options: OptionsT | None = None,
        **overrides: object,
    ) -> list[SpeakerOutput]: ...

    @overload
    def embed(
        self,
        audio: AudioLike,
        *,
        sample_rate: int | None = None,
        options: OptionsT | None = None,
        **overrides: object,
    ) -> SpeakerOutput: ...

    def embed(
        self,
        audio: AudioLike | list[AudioLike],
        *,
        sample_rate: int | None = None,
        options: OptionsT | None = None,
        **overrides: object,
    ) -> SpeakerOutput | list[SpeakerOutput]:
        """Compute the speaker embedding of one input or a batch.

        Returns:
            A :class:`~voicehub.core.SpeakerOutput`, or a list of them for a list input.

        Raises:
            UnknownInferenceOptionError: for an unknown option (a ``TypeError``).
            InferenceOptionError, AudioError, SampleRateError: for invalid options or audio.
        """
        resolved = self.resolve_options(options, **overrides)
        if (
            self.embeds_files_in_blocks
            and isinstance(audio, (str, os.PathLike))
            and not is_raw_pcm(audio)
            and audio_file_info(audio).duration_s > STREAM_FILE_MIN_DURATION_S
        ):
            return self.embed_file(audio, sample_rate=sample_rate, options=resolved)
        waveforms, is_batch = self.prepare_audio(audio, sample_rate=sample_rate)
        outputs = self._run(self._embed, waveforms, resolved, SpeakerOutput)
        return outputs if is_batch else outputs[0]

    embeds_files_in_blocks: ClassVar[bool] = False
    """Whether the wrapper implements ``_embed_file`` (``embed`` then streams files longer than
    :data:`~voicehub.audio_input.STREAM_FILE_MIN_DURATION_S`)."""

    def embed_file(
        self,
        path: str | os.PathLike[str],
        *,
        sample_rate: int | None = None,
        options: OptionsT | None = None,
        block_s: float = STREAM_BLOCK_S,
        **overrides: object,
    ) -> SpeakerOutput:
        """Embed an audio file of any length with memory bounded by a block, not by its duration.

        The file is decoded, downmixed and resampled ``block_s`` seconds at a time (a few passes
        over the file); the result equals ``embed`` on the whole decoded file up to float32
        summation order. ``embed`` takes this path for files longer than
        :data:`~voicehub.audio_input.STREAM_FILE_MIN_DURATION_S`.

        Args:
            path: an audio file.
            sample_rate: if given, must equal the file's rate.
            options: inference options replacing the defaults.
            block_s: seconds decoded at once (> 0).
            **overrides: individual options.

        Raises:
            LifecycleError: for a model without a block-by-block path.
            AudioDecodeError, AudioError, SampleRateError: for an unusable file.
        """
        if not self.embeds_files_in_blocks:
            raise LifecycleError(f"{type(self).__name__} cannot embed a file block by block; use embed()")
        resolved = self.resolve_options(options, **overrides)
        source = os.fspath(path)
        if is_raw_pcm(path):
            raise AudioError(
                f"{source}: headerless PCM has no sample rate; read it with load_raw_pcm and call embed", source=source
            )
        info = audio_file_info(path)
        if sample_rate is not None and check_sample_rate(sample_rate, source=source) != info.sample_rate:
            load_audio(path, sample_rate=sample_rate)  # raises the SampleRateError load_audio gives
        if isinstance(block_s, bool) or not isinstance(block_s, (int, float)) or not block_s > 0:
            raise AudioError(f"block_s: expected a positive number of seconds, got {block_s!r}", source=source)
        rates = self.supported_sample_rates
        rate = info.sample_rate if not rates or info.sample_rate in rates else rates[0]
        block_samples = max(1, round(block_s * info.sample_rate))

        def hook(runtime: SpeakerRuntime[EncoderT], paths: Sequence[str], opts: OptionsT) -> list[SpeakerOutput]:
            return [self._embed_file(runtime, paths[0], rate, block_samples, opts)]

        return self._run(hook, [source], resolved, SpeakerOutput)[0]

    def _embed_file(
        self, runtime: SpeakerRuntime[EncoderT], path: str, sample_rate: int, block_samples: int, options: OptionsT
    ) -> SpeakerOutput:
        """Embed the file at ``path`` block by block, resampled to ``sample_rate`` (see :meth:`embed_file`)."""
        raise NotImplementedError(f"{type(self).__name__} must implement _embed_file() to embed files in blocks")

    @overload
    def verify(
        self,
        enrollment: list[AudioLike],
        test: list[AudioLike],
        *,
        sample_rate: int | None = None,
        options: OptionsT | None = None,
        **overrides: object,
    ) -> list[VerificationOutput]: ...

    @overload
    def verify(
        self,
        enrollment: AudioLike | list[AudioLike],
        test: AudioLike,
        *,
        sample_rate: int | None = None,
        options: OptionsT | None = None,
        **overrides: object,
    ) -> VerificationOutput: ...

    def verify(
        self,
        enrollment: AudioLike | list[AudioLike],
        test: AudioLike | list[AudioLike],
        *,
        sample_rate: int | None = None,
        options: OptionsT | None = None,
        **overrides: object,
    ) -> VerificationOutput | list[VerificationOutput]:
        """Decide whether ``enrollment`` and ``test`` come from the same speaker.

        Three forms:

        * ``verify(a, b)``: one pair.
        * ``verify([a1, a2, ...], b)``: multi-clip enrolment, one speaker enrolled with several
          clips against one test input (scored by :meth:`_score_enrolled`; by default the
          cosine similarity with the mean enrolment embedding).
        * ``verify([a1, a2], [b1, b2])``: pairs scored item by item (lists of equal length).

        Args:
            enrollment: one input, or a list (see above).
            test: one input, or a list of the enrolment list's length.
            sample_rate: rate in Hz of array inputs.
            options: inference options replacing the defaults.
            **overrides: individual options (validated before loading).

        Returns:
            A :class:`~voicehub.core.VerificationOutput`, or a list of them for two lists.

        Raises:
            InferenceOptionError: for an empty enrolment list, a single enrolment with a test
                list, or two lists of different lengths.
        """
        resolved = self.resolve_options_for("verify", options, overrides)
        if isinstance(enrollment, list) and not isinstance(test, list):
            if not enrollment:
                raise InferenceOptionError(
                    "verify(): the enrollment list is empty; pass one or more clips of the enrolled speaker"
                )
            enrolled, _ = self.prepare_audio(list(enrollment), sample_rate=sample_rate)
            probe, _ = self.prepare_audio(test, sample_rate=sample_rate)
            embeddings = self._run(self._embed, [*enrolled, *probe], resolved, SpeakerOutput)
            result = self._score_enrolled(embeddings[:-1], embeddings[-1], resolved)
            check_outputs([result], VerificationOutput, producer=f"{type(self).__name__}.verify")
            return result
        enrol_waves, enrol_batch = self.prepare_audio(enrollment, sample_rate=sample_rate)
        test_waves, test_batch = self.prepare_audio(test, sample_rate=sample_rate)
        if enrol_batch != test_batch or len(enrol_waves) != len(test_waves):
            raise InferenceOptionError(
                f"verify() pairs enrollment and test item by item: got {len(enrol_waves)} enrollment and "
                f"{len(test_waves)} test input(s) ({'list' if enrol_batch else 'single'} vs "
                f"{'list' if test_batch else 'single'}); pass two single inputs, two lists of equal length, "
                f"or a list of enrolment clips with one test input"
            )
        embeddings = self._run(self._embed, [*enrol_waves, *test_waves], resolved, SpeakerOutput)
        count = len(enrol_waves)
        results = [self._score(embeddings[i], embeddings[count + i], resolved) for i in range(count)]
        check_outputs(results, VerificationOutput, producer=f"{type(self).__name__}.verify")
        return results if enrol_batch else results[0]

    def score_embeddings(
        self,
        enrollment: SpeakerOutput | np.ndarray | Sequence[SpeakerOutput | np.ndarray],
        test: SpeakerOutput | np.ndarray,
        *,
        options: OptionsT | None = None,
        **overrides: object,
    ) -> VerificationOutput:
        """Score embeddings already computed by :meth:`embed` (one enrolment clip or several).

        Args:
            enrollment: the enrolled speaker's embedding: a :class:`SpeakerOutput`, a float array
                (embedding_dim,) or (num_clips, embedding_dim) (the matrix ``voicehub embed
                --output x.npy`` writes, one row per file), or a non-empty list of these.
            test: the test embedding: a :class:`SpeakerOutput` or a float array (embedding_dim,)
                or (1, embedding_dim).
            options: inference options replacing the defaults.
            **overrides: individual options, as for :meth:`verify`.

        Returns:
            The decision.

        Raises:
            InferenceOptionError: for an empty enrolment list, an input of another type or shape
                (naming the expected ones), embeddings of different sizes, or invalid options.
        """
        resolved = self.resolve_options_for("score_embeddings", options, overrides)
        enrolled = _as_embeddings(enrollment, "enrollment")
        if not enrolled:
            raise InferenceOptionError("score_embeddings(): the enrollment list is empty")
        tests = _as_embeddings(test, "test")
        if len(tests) != 1:
            raise InferenceOptionError(
                f"score_embeddings(): test must be one embedding (embedding_dim,) or (1, embedding_dim), got "
                f"{len(tests)}; score each row separately"
            )
        sizes = sorted({item.embedding_dim for item in [*enrolled, *tests]})
        if len(sizes) > 1:
            raise InferenceOptionError(
                f"score_embeddings(): embeddings of different sizes {sizes}; they must come from the same encoder"
            )
        test = tests[0]
        result = self._score_enrolled(enrolled, test, resolved)
        check_outputs([result], VerificationOutput, producer=f"{type(self).__name__}.score_embeddings")
        return result

    def _embed(
        self, runtime: SpeakerRuntime[EncoderT], waveforms: Sequence[Waveform], options: OptionsT
    ) -> Sequence[SpeakerOutput]:
        """Return one :class:`SpeakerOutput` per waveform."""
        raise NotImplementedError(f"{type(self).__name__} must implement _embed()")

    def _scoring_backend(self, options: OptionsT) -> PLDABackend | None:
        """The back-end that scores under ``options``, or ``None`` for cosine scoring.

        Raises:
            InferenceOptionError: for ``scoring="backend"`` without an attached back-end.
        """
        if not isinstance(options, SpeakerScoringOptions) or options.scoring == "cosine":
            return None
        backend = self.backend
        if options.scoring == "backend" and backend is None:
            raise InferenceOptionError(
                "scoring='backend' but no PLDA back-end is attached; attach one (Python: set_backend(directory) "
                "or fit_backend(audio, labels); command line: --backend DIRECTORY), or use cosine scoring"
            )
        return backend

    def _score(self, enrollment: SpeakerOutput, test: SpeakerOutput, options: OptionsT) -> VerificationOutput:
        """Score a pair: the attached back-end's LLR (see :meth:`_scoring_backend`), else cosine similarity.

        Raises:
            NotImplementedError: for cosine scoring with options that have no ``threshold``.
        """
        backend = self._scoring_backend(options)
        if backend is not None and isinstance(options, SpeakerScoringOptions):
            backend.check_dim(test.embedding_dim)
            return _plda_decision(backend, float(backend.score(enrollment.embedding, test.embedding)[0, 0]), options)
        if not isinstance(options, ThresholdOptions):
            raise NotImplementedError(
                f"{type(self).__name__}: the default _score() needs a float 'threshold' inference option; "
                f"add one to {self.options_class.__name__} or override _score()"
            )
        threshold = float(options.threshold)
        score = cosine_similarity(enrollment, test)
        return VerificationOutput(
            score=score, threshold=threshold, is_same_speaker=score >= threshold, scoring="cosine"
        )

    def _score_enrolled(
        self, enrollment: Sequence[SpeakerOutput], test: SpeakerOutput, options: OptionsT
    ) -> VerificationOutput:
        """Score a speaker enrolled with several clips.

        With a back-end: PLDA's N-vs-1 rule (:meth:`PLDABackend.score_enrollment`, averaging in
        its own space); with cosine scoring: :meth:`_score` of the mean embedding. One clip is
        scored by :meth:`_score`.
        """
        backend = self._scoring_backend(options)
        if len(enrollment) == 1:
            return self._score(enrollment[0], test, options)
        if backend is not None and isinstance(options, SpeakerScoringOptions):
            backend.check_dim(test.embedding_dim)
            llr = backend.score_enrollment(np.stack([e.embedding for e in enrollment]), test.embedding)
            return _plda_decision(backend, llr, options)
        mean = SpeakerOutput(
            embedding=np.mean([e.embedding.astype(np.float64) for e in enrollment], axis=0).astype(np.float32),
            duration_s=float(sum(e.duration_s for e in enrollment)),
            source="mean of the enrollment clips",
        )
        return self._score(mean, test, options)


_EMBEDDING_TYPES = (
    "a SpeakerOutput (from embed()), a float array (embedding_dim,) or (num_clips, embedding_dim) "
    "(as `voicehub embed --output x.npy` writes), or a list of these"
)


def _as_embeddings(value: object, what: str) -> list[SpeakerOutput]:
    """``value`` as a list of :class:`SpeakerOutput` (arrays become outputs of ``source="array"``).

    Raises:
        InferenceOptionError: naming ``what``, the type or shape found and the accepted ones.
    """
    if isinstance(value, SpeakerOutput):
        return [value]
    if isinstance(value, np.ndarray):
        if value.dtype.kind != "f" or value.ndim not in (1, 2) or value.size == 0:
            raise InferenceOptionError(
                f"score_embeddings(): {what} is an array of dtype {value.dtype} and shape {tuple(value.shape)}; "
                f"expected {_EMBEDDING_TYPES}"
            )
        rows = value.reshape(1, -1) if value.ndim == 1 else value
        try:
            return [
                SpeakerOutput(embedding=np.ascontiguousarray(row, dtype=np.float32), duration_s=0.0, source="array")
                for row in rows
            ]
        except OutputValidationError as err:
            raise InferenceOptionError(f"score_embeddings(): {what}: {err}") from err
    if isinstance(value, (list, tuple)):
        items: list[SpeakerOutput] = []
        for item in value:
            if not isinstance(item, (SpeakerOutput, np.ndarray)):
                raise InferenceOptionError(
                    f"score_embeddings(): {what} holds a {type(item).__name__}; expected {_EMBEDDING_TYPES}"
                )
            items.extend(_as_embeddings(item, what))
        return items
    raise InferenceOptionError(f"score_embeddings(): {what} is a {type(value).__name__}; expected {_EMBEDDING_TYPES}")


def _plda_decision(backend: PLDABackend, llr: float, options: SpeakerScoringOptions) -> VerificationOutput:
    threshold = options.backend_threshold
    return VerificationOutput(score=llr, threshold=threshold, is_same_speaker=llr >= threshold, scoring=backend.scoring)


__getattr__ = lazy_attributes(
    "voicehub",
    {
        "PLDABackend": "plda_backend",
        "DEFAULT_SHRINKAGE": "plda_backend",
        "DEFAULT_CALIBRATION_FOLDS": "plda_backend",
        "TRANSFORM_FILE": "plda_backend",
        "PLDA_FILE": "plda_backend",
        "CALIBRATION_FILE": "plda_backend",
    },
)
"""The PLDA back-end and its constants, from :mod:`voicehub.plda_backend` on first access (it imports h5py)."""
__all__ = [
    "BACKEND_DIR",
    "CALIBRATION_FILE",
    "DEFAULT_CALIBRATION_FOLDS",
    "DEFAULT_SHRINKAGE",
    "ENCODER_DIR",
    "PLDA_FILE",
    "TRANSFORM_FILE",
    "PLDABackend",
    "PreTrainedSVModel",
    "SpeakerRuntime",
    "SpeakerScoringOptions",
    "ThresholdOptions",
    "cosine_similarity",
]

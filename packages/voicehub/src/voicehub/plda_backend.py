"""A PLDA scoring back-end for speaker embeddings, stored in the Hyperion format.

Every speaker-verification wrapper can attach one (:class:`voicehub.speaker_verification.PreTrainedSVModel`:
``set_backend``, ``fit_backend``, saved as ``backend/`` next to the weights).

The back-end follows the Hyperion recipe for few-speaker data (``docs/hyperion.md``):
embeddings are centred and length-normalised (:class:`~voicehub.hyperion.np.LNorm` without
whitening; optionally after an LDA projection), scored with a simplified PLDA
(:class:`~voicehub.hyperion.np.SPLDA` with within-class covariance shrinkage, log-likelihood
ratios), and the LLRs are calibrated (:class:`~voicehub.hyperion.np.calibration.GaussCalibration`)
on **held-out** scores: the speakers are split into folds, a PLDA is fitted on the other folds
and scores the held-out fold's pairs, and the calibration is fitted on those scores. A
calibration fitted on the training pairs themselves sees over-confident in-sample LLRs and
shifts the decision at LLR 0 (measured: 12 % false accepts at an EER of 0.2 %).

On disk it is a directory of Hyperion HDF5 files that upstream Hyperion also reads:
``transform.h5``, ``plda.h5`` and, when calibrated, ``calibration.h5``; each is loaded with
``HyperNPModel.auto_load`` (no pickle). Importing this module imports h5py.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from voicehub.core.errors import CheckpointError, InferenceOptionError, check_flag
from voicehub.core.files import write_directory
from voicehub.hyperion.np import LDA, SPLDA, CentWhiten, HyperNPModel, LNorm, TransformList
from voicehub.hyperion.np.calibration import GaussCalibration
from voicehub.hyperion.np.transforms import NPTransform

TRANSFORM_FILE = "transform.h5"
PLDA_FILE = "plda.h5"
CALIBRATION_FILE = "calibration.h5"

DEFAULT_SHRINKAGE = 0.5
"""SPLDA within-class covariance shrinkage of :meth:`PLDABackend.fit`, chosen by measurement on the
repository's 14 speakers (``docs/speaker.md``): at LLR 0, unseen utterances of seen speakers had
2.4 % false accepts with 0.1, 1.4 % with 0.3 and 0.5, 1.2 % with 0.8; speakers unseen by the
back-end had 24 %, 17.5 %, 15 % and 15 % (mean over 3 folds). 0 (plain ML) is singular for 256-dim
embeddings from a few hundred vectors and gave LLRs of -1e4."""

DEFAULT_CALIBRATION_FOLDS = 5
"""Speaker folds of the held-out calibration (each fold needs >= 2 speakers for non-target pairs)."""


ModelT = TypeVar("ModelT", bound=HyperNPModel)


class PLDABackend:
    """Transform -> SPLDA -> optional calibration.

    Args:
        transform: a fitted transform chain applied to every embedding first.
        plda: a fitted SPLDA model in the transformed space.
        calibration: an optional fitted score calibration (LLR -> calibrated LLR).
    """

    def __init__(self, transform: TransformList, plda: SPLDA, calibration: GaussCalibration | None = None) -> None:
        self.transform = transform
        self.plda = plda
        self.calibration = calibration

    @property
    def scoring(self) -> str:
        """``"plda"`` or ``"plda+calibration"`` (the ``VerificationOutput.scoring`` value)."""
        return "plda" if self.calibration is None else "plda+calibration"

    @classmethod
    def fit(
        cls,
        embeddings: npt.ArrayLike,
        labels: Sequence[Any],
        *,
        lda_dim: int | None = None,
        y_dim: int | None = None,
        epochs: int = 10,
        shrinkage: float = DEFAULT_SHRINKAGE,
        calibrate: bool = True,
        calibration_folds: int = DEFAULT_CALIBRATION_FOLDS,
        sessions: Sequence[Any] | None = None,
    ) -> PLDABackend:
        """Fit [LDA +] LNorm + SPLDA, and a Gaussian calibration on held-out speaker folds.

        Args:
            embeddings: float (num_embeddings, embedding_dim).
            labels: speaker label of each embedding; at least 2 speakers (4 to calibrate).
            lda_dim: project with LDA to this many dimensions first; ``None`` (default) keeps
                the embedding dimension (no LDA: with few speakers LDA overfits their
                within-speaker scatter).
            y_dim: SPLDA speaker-subspace rank; ``None`` is ``num_speakers - 1`` (at most the dimension).
            epochs: EM iterations of the SPLDA.
            shrinkage: SPLDA within-class covariance shrinkage in [0, 1] (``DEFAULT_SHRINKAGE``).
            calibrate: fit a :class:`GaussCalibration` on held-out scores.
            calibration_folds: number of speaker folds (>= 2); each held-out fold is scored by a
                back-end fitted on the other speakers. Capped so that a fold has >= 2 speakers.
            sessions: optional recording (session) id of each embedding, e.g. the file several
                crops come from; pairs within one session are left out of the calibration
                (they are easier than real target trials). ``None``: every embedding is its own.

        Returns:
            The fitted back-end.

        Raises:
            InferenceOptionError: for labels/sessions of the wrong length, a bad ``shrinkage`` or
                ``calibration_folds``, or fewer than 4 speakers when ``calibrate`` is set.
            HyperionInputError: for bad arrays or fewer than 2 speakers (from the NumPy models).
        """
        calibrate = check_flag(calibrate, name="calibrate")
        x = np.asarray(embeddings, dtype=np.float64)
        names = np.asarray([str(label) for label in labels])
        if x.ndim != 2 or x.shape[0] != names.shape[0]:
            raise InferenceOptionError(
                f"PLDABackend.fit: expected embeddings (num_embeddings, embedding_dim) and one label each, got "
                f"{x.shape} and {names.shape[0]} labels"
            )
        session_ids = np.arange(len(names)).astype(str) if sessions is None else np.asarray([str(s) for s in sessions])
        if session_ids.shape != names.shape:
            raise InferenceOptionError(
                f"PLDABackend.fit: {len(session_ids)} session ids for {len(names)} embeddings; give one per embedding "
                "or sessions=None"
            )
        if not 0.0 <= shrinkage <= 1.0:
            raise InferenceOptionError(
                f"PLDABackend.fit: shrinkage must be in [0, 1], got {shrinkage}; the default is {DEFAULT_SHRINKAGE}"
            )
        if isinstance(calibration_folds, bool) or not isinstance(calibration_folds, int) or calibration_folds < 2:
            raise InferenceOptionError(
                f"PLDABackend.fit: calibration_folds must be an integer >= 2, got {calibration_folds!r}"
            )
        speakers = sorted(set(names.tolist()))
        if calibrate and len(speakers) < 4:
            raise InferenceOptionError(
                f"PLDABackend.fit: a held-out calibration needs >= 4 speakers (folds of >= 2 scored by a back-end "
                f"fitted on >= 2 others), got {len(speakers)}; add speakers, or pass calibrate=False (the LLRs are "
                "then uncalibrated and LLR 0 is not a meaningful threshold)"
            )
        transform, plda = _fit_plda(x, names, lda_dim=lda_dim, y_dim=y_dim, epochs=epochs, shrinkage=shrinkage)
        calibration = None
        if calibrate:
            folds = np.array_split(
                np.random.default_rng(0).permutation(speakers), min(calibration_folds, len(speakers) // 2)
            )
            scores, targets = [], []
            for fold in folds:
                held = np.isin(names, fold)
                fold_transform, fold_plda = _fit_plda(
                    x[~held], names[~held], lda_dim=lda_dim, y_dim=y_dim, epochs=epochs, shrinkage=shrinkage
                )
                projected = fold_transform.predict(x[held])
                llr = fold_plda.llr_1vs1(projected, projected)
                upper = np.triu_indices(int(held.sum()), 1)
                fold_names, fold_sessions = names[held], session_ids[held]
                same = (fold_names[:, None] == fold_names[None, :])[upper]
                other_session = (fold_sessions[:, None] != fold_sessions[None, :])[upper]
                scores.append(llr[upper][other_session])
                targets.append(same[other_session])
            all_targets = np.concatenate(targets)
            if all_targets.all() or not all_targets.any():
                raise InferenceOptionError(
                    "PLDABackend.fit: the held-out folds gave no target pairs from different sessions; give >= 2 "
                    "sessions for several speakers, or pass calibrate=False"
                )
            calibration = GaussCalibration().fit(np.concatenate(scores), all_targets.astype(np.int64))
        return cls(transform, plda, calibration)

    def score(self, enrollment: npt.ArrayLike, test: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """Log-likelihood ratios of every (enrolment, test) pair.

        Args:
            enrollment: float (num_enroll, embedding_dim) or (embedding_dim,).
            test: float (num_test, embedding_dim) or (embedding_dim,).

        Returns:
            float64 (num_enroll, num_test) natural-log LLRs (calibrated when a calibration is set).
        """
        a = self.transform.predict(np.atleast_2d(np.asarray(enrollment, dtype=np.float64)))
        b = self.transform.predict(np.atleast_2d(np.asarray(test, dtype=np.float64)))
        llr = np.asarray(self.plda.llr_1vs1(a, b), dtype=np.float64)
        if self.calibration is not None:
            llr = np.asarray(self.calibration.predict(llr), dtype=np.float64)
        return llr

    def score_enrollment(self, enrollment: npt.ArrayLike, test: npt.ArrayLike) -> float:
        """LLR of one test embedding against a speaker enrolled with several embeddings.

        The enrolment embeddings are averaged in the back-end's space and length-normalised again
        (``SPLDA.llr_NvsM(method="vavg-lnorm")``), so the score is a 1-vs-1 LLR of the kind the
        calibration was fitted on.

        Args:
            enrollment: float (num_enroll, embedding_dim), num_enroll >= 1.
            test: float (embedding_dim,) or (1, embedding_dim).

        Returns:
            The (calibrated, when a calibration is set) natural-log LLR.
        """
        a = self.transform.predict(np.atleast_2d(np.asarray(enrollment, dtype=np.float64)))
        b = self.transform.predict(np.atleast_2d(np.asarray(test, dtype=np.float64)))
        llr = np.asarray(
            self.plda.llr_NvsM(a, b, np.zeros(len(a), np.int64), np.zeros(len(b), np.int64), method="vavg-lnorm"),
            dtype=np.float64,
        )
        if self.calibration is not None:
            llr = np.asarray(self.calibration.predict(llr), dtype=np.float64)
        return float(llr[0, 0])

    def check_dim(self, embedding_dim: int) -> None:
        """Raise when the back-end was fitted on embeddings of another size.

        Raises:
            InferenceOptionError: naming both sizes.
        """
        first = self.transform.transforms[0] if self.transform.transforms else None
        fitted = first.in_dim if isinstance(first, CentWhiten) else None
        if fitted is not None and fitted != embedding_dim:
            raise InferenceOptionError(
                f"the PLDA back-end was fitted on {fitted}-dimensional embeddings, the encoder makes {embedding_dim}"
            )

    def save(self, directory: str | os.PathLike[str]) -> Path:
        """Write ``transform.h5``, ``plda.h5`` (and ``calibration.h5``) as the directory ``directory``.

        The directory is replaced as a whole (:func:`voicehub.core.files.write_directory` with
        ``replace=True``): it holds either the old back-end or the complete new one, never a mix.
        An existing directory may hold only back-end files, since it is replaced. Missing parent
        directories are created (and removed again on failure); files and directories get
        ordinary modes.

        Returns:
            The directory (``~`` expanded, symbolic links resolved).

        Raises:
            OutputPathError: naming ``directory`` when it is a file, lies under a file, holds
                files other than a back-end's, or cannot be written; nothing is changed.
            HyperionFileError: when a model file cannot be written (also nothing changed).
        """

        def write(staging: Path) -> None:
            self.transform.save(staging / TRANSFORM_FILE)
            self.plda.save(staging / PLDA_FILE)
            if self.calibration is not None:
                self.calibration.save(staging / CALIBRATION_FILE)

        return write_directory(
            directory, write, what="PLDA back-end directory", replace=True, replaceable=_BACKEND_FILES
        )

    @classmethod
    def load(cls, directory: str | os.PathLike[str]) -> PLDABackend:
        """Read a back-end written by :meth:`save` (each file through ``HyperNPModel.auto_load``).

        Raises:
            CheckpointError: naming the file that is missing or holds another model class.
        """
        source = Path(directory)
        transform = _load(source / TRANSFORM_FILE, TransformList)
        plda = _load(source / PLDA_FILE, SPLDA)
        calibration_file = source / CALIBRATION_FILE
        calibration = _load(calibration_file, GaussCalibration) if calibration_file.exists() else None
        return cls(transform, plda, calibration)


_BACKEND_FILES = (TRANSFORM_FILE, PLDA_FILE, CALIBRATION_FILE)


def _fit_plda(
    x: npt.NDArray[np.float64],
    names: npt.NDArray[Any],
    *,
    lda_dim: int | None,
    y_dim: int | None,
    epochs: int,
    shrinkage: float,
) -> tuple[TransformList, SPLDA]:
    num_speakers = len(set(names.tolist()))
    transforms: list[NPTransform] = []
    features = x
    if lda_dim is not None:
        lda = LDA(lda_dim=lda_dim).fit(features, names)
        features = np.asarray(lda.predict(features), dtype=np.float64)
        transforms.append(lda)
    lnorm = LNorm(update_t=False).fit(features)  # centre + length norm; whitening a 256-dim covariance amplifies noise
    transforms.append(lnorm)
    transform = TransformList(transforms)
    rank = y_dim if y_dim is not None else max(1, min(features.shape[1], num_speakers - 1))
    plda = SPLDA(y_dim=rank, shrinkage=shrinkage).fit(transform.predict(x), names, epochs=epochs)
    return transform, plda


def _load(path: Path, expected: type[ModelT]) -> ModelT:
    if not path.is_file():
        raise CheckpointError(f"{path}: missing; a PLDA back-end directory holds {TRANSFORM_FILE} and {PLDA_FILE}")
    model = HyperNPModel.auto_load(path)
    if not isinstance(model, expected):
        raise CheckpointError(f"{path}: holds a {type(model).__name__}, expected a {expected.__name__}", path=path)
    return model


__all__ = [
    "CALIBRATION_FILE",
    "DEFAULT_CALIBRATION_FOLDS",
    "DEFAULT_SHRINKAGE",
    "PLDA_FILE",
    "TRANSFORM_FILE",
    "PLDABackend",
]

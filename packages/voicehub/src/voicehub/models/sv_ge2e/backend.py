"""A PLDA scoring back-end for speaker embeddings, stored in the Hyperion format.

The back-end follows the usual Hyperion recipe (``hyperion/bin/eval_plda_backend.py``):
embeddings pass through a fitted :class:`~voicehub.hyperion.np.TransformList` (LDA to a few
dimensions, then centring, whitening and length normalisation: ``LNorm``), are scored with a
simplified PLDA (:class:`~voicehub.hyperion.np.SPLDA`, log-likelihood ratios), and the LLRs are
optionally calibrated (:class:`~voicehub.hyperion.np.calibration.GaussCalibration`).

On disk it is a directory of Hyperion HDF5 files that upstream Hyperion also reads:
``transform.h5``, ``plda.h5`` and, when calibrated, ``calibration.h5``; each is loaded with
``HyperNPModel.auto_load`` (no pickle).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from voicehub.core.errors import CheckpointError, InferenceOptionError
from voicehub.hyperion.np import LDA, SPLDA, CentWhiten, HyperNPModel, LNorm, TransformList
from voicehub.hyperion.np.calibration import GaussCalibration

TRANSFORM_FILE = "transform.h5"
PLDA_FILE = "plda.h5"
CALIBRATION_FILE = "calibration.h5"

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
        calibrate: bool = True,
    ) -> PLDABackend:
        """Fit LDA + LNorm + SPLDA (+ Gaussian calibration on all training pairs).

        Args:
            embeddings: float (num_embeddings, embedding_dim).
            labels: speaker label of each embedding; at least 2 speakers.
            lda_dim: LDA output size; ``None`` is ``num_speakers - 1`` (at most ``embedding_dim``).
            y_dim: SPLDA speaker-subspace rank; ``None`` uses ``lda_dim``.
            epochs: EM iterations of the SPLDA.
            calibrate: also fit a :class:`GaussCalibration` on the training pairs' LLRs.

        Returns:
            The fitted back-end.

        Raises:
            HyperionInputError: for bad arrays or fewer than 2 speakers (from the NumPy models).
        """
        x = np.asarray(embeddings, dtype=np.float64)
        names = np.asarray([str(label) for label in labels])
        num_speakers = len(set(names.tolist()))
        dim = lda_dim if lda_dim is not None else max(1, min(x.shape[1], num_speakers - 1))
        lda = LDA(lda_dim=dim).fit(x, names)
        lnorm = LNorm().fit(lda.predict(x))
        transform = TransformList([lda, lnorm])
        projected = transform.predict(x)
        plda = SPLDA(y_dim=y_dim if y_dim is not None else dim).fit(projected, names, epochs=epochs)
        calibration = None
        if calibrate:
            llr = plda.llr_1vs1(projected, projected)
            upper = np.triu_indices(len(names), 1)
            target = (names[:, None] == names[None, :])[upper]
            calibration = GaussCalibration().fit(llr[upper], target.astype(np.int64))
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
        """Write ``transform.h5``, ``plda.h5`` (and ``calibration.h5``) into ``directory``.

        Returns:
            The directory.
        """
        target = Path(directory)
        target.mkdir(parents=True, exist_ok=True)
        self.transform.save(target / TRANSFORM_FILE)
        self.plda.save(target / PLDA_FILE)
        if self.calibration is not None:
            self.calibration.save(target / CALIBRATION_FILE)
        else:
            (target / CALIBRATION_FILE).unlink(missing_ok=True)
        return target

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


def _load(path: Path, expected: type[ModelT]) -> ModelT:
    if not path.is_file():
        raise CheckpointError(f"{path}: missing; a PLDA back-end directory holds {TRANSFORM_FILE} and {PLDA_FILE}")
    model = HyperNPModel.auto_load(path)
    if not isinstance(model, expected):
        raise CheckpointError(f"{path}: holds a {type(model).__name__}, expected a {expected.__name__}", path=path)
    return model


__all__ = ["CALIBRATION_FILE", "PLDA_FILE", "TRANSFORM_FILE", "PLDABackend"]

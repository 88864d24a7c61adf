"""The ``sv_ge2e`` integration: the GE2E LSTM speaker encoder (the default speaker verification).

Importing this package is light; the wrapper (``voicehub.models.sv_ge2e.wrapper``) imports torch
and the back-end (``voicehub.plda_backend``) imports h5py.
"""

from __future__ import annotations

from voicehub.models.sv_ge2e.config import SVGE2EConfig, SVGE2EOptions
from voicehub.models.sv_ge2e.registration import MODEL_SPEC

__all__ = ["MODEL_SPEC", "SVGE2EConfig", "SVGE2EOptions"]

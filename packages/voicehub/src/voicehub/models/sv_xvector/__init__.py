"""The ``sv_xvector`` integration: a trainable ECAPA-style x-vector speaker encoder.

Importing this package is light; the wrapper (``voicehub.models.sv_xvector.wrapper``) imports torch.
"""

from __future__ import annotations

from voicehub.models.sv_xvector.config import SVXVectorConfig, SVXVectorOptions
from voicehub.models.sv_xvector.registration import MODEL_SPEC

__all__ = ["MODEL_SPEC", "SVXVectorConfig", "SVXVectorOptions"]

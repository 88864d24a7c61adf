"""The ``vad_webrtc`` integration: the WebRTC GMM voice activity detector (``webrtcvad`` C extension).

Importing this package is light; the wrapper (``voicehub.models.vad_webrtc.wrapper``) imports ``webrtcvad``
when it loads.
"""

from __future__ import annotations

from voicehub.models.vad_webrtc.config import VADWebRTCConfig
from voicehub.models.vad_webrtc.registration import MODEL_SPEC

__all__ = ["MODEL_SPEC", "VADWebRTCConfig"]

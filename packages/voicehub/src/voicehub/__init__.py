"""VoiceHub public API. Other distributions ship PEP 420 portions (voicehub/core/, ...)."""

from pkgutil import extend_path

__path__ = extend_path(__path__, __name__)

__all__: list[str] = []

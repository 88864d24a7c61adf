"""Model config and inference options of the ``sv_ge2e`` integration (no torch imported)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from voicehub.architectures.ge2e.config import SAMPLE_RATE, GE2EPreprocessing
from voicehub.core.config import Migration
from voicehub.core.errors import ConfigError
from voicehub.registry.model_config import ModelConfig
from voicehub.speaker_verification import SpeakerScoringOptions

DEFAULT_COSINE_THRESHOLD = 0.73
"""Default cosine decision threshold, measured on the repository's audio (``docs/speaker.md``,
"Cosine threshold"; ``test_sv_ge2e.py`` checks the numbers): same-reader real pairs score
0.7533-0.9489 (the lowest is LibriVox 0880 vs 0930), different real readers 0.34-0.50, real speech
against synthetic voices at most 0.7098. 0.73 is the middle of that gap (no error on pairs involving
real speech). Synthetic voices built on one espeak-ng voice base reach 0.96, so over all 1711 pairs
the EER is 3.9 % at about 0.84; no cosine threshold separates those. Tune it on your own trials."""

MIN_SPEECH_S = 1.6
"""Speech (seconds, after silence trimming) below which ``embed`` notes ``metadata["warning"]``: shorter
speech does not fill one 1.6 s GE2E partial, which is then zero-padded, and the embedding is less reliable."""


def _nest_preprocessing(cfg: dict[str, Any]) -> dict[str, Any]:
    """Version 1 -> 2: the copied preprocessing fields move into ``preprocessing`` (a ``GE2EPreprocessing``)."""
    nested = {key: cfg.pop(key) for key in GE2EPreprocessing.known_keys() if key in cfg}
    if nested:
        cfg["preprocessing"] = nested
    return cfg


@dataclass(frozen=True, slots=True, kw_only=True)
class SVGE2EConfig(ModelConfig):
    """How the ``sv_ge2e`` wrapper prepares audio for the GE2E encoder.

    The encoder's architecture comes from its checkpoint; ``preprocessing`` (the graph config's own
    :class:`~voicehub.architectures.ge2e.GE2EPreprocessing`) replaces the one stored with it.

    Schema history: version 1 copied the four preprocessing fields (``trim_silence``,
    ``target_dbfs``, ``partials_per_second``, ``min_coverage``) into this config;
    version 2 nests them (:func:`_nest_preprocessing` migrates).

    Attributes:
        sample_rate: the encoder's rate in Hz (16000); input at other rates is resampled.
        preprocessing: silence trimming, volume target, partial rate and coverage.
    """

    config_type: ClassVar[str] = "sv_ge2e"
    schema_version: ClassVar[int] = 2
    migrations: ClassVar[Mapping[int, Migration]] = {1: _nest_preprocessing}

    sample_rate: int = SAMPLE_RATE
    preprocessing: GE2EPreprocessing = field(default_factory=GE2EPreprocessing)

    def validate(self) -> None:
        """Check types and ranges (the preprocessing ranges are checked by its own record).

        Raises:
            ConfigError: naming the field and the allowed values.
        """
        ModelConfig.validate(self)
        if self.sample_rate != SAMPLE_RATE:
            raise ConfigError(
                f"sv_ge2e.sample_rate: the GE2E encoder runs at {SAMPLE_RATE} Hz, got {self.sample_rate}",
                config_type=self.config_type,
                key="sample_rate",
            )


@dataclass(frozen=True, slots=True, kw_only=True)
class SVGE2EOptions(SpeakerScoringOptions):
    """Inference options of ``embed`` and ``verify``.

    Attributes:
        scoring: ``"auto"`` uses the attached PLDA back-end when there is one and cosine
            similarity otherwise; ``"cosine"`` or ``"backend"`` force one.
        threshold: decision threshold on the cosine similarity, in [-1, 1] (default
            :data:`DEFAULT_COSINE_THRESHOLD`, measured on the repository's audio).
        backend_threshold: decision threshold on the back-end's log-likelihood ratio (natural
            log); 0 is the Bayes decision for a target prior of 0.5 when the back-end is calibrated
            (see ``docs/speaker.md`` for how well the default back-end's calibration holds).
        trim_silence: ``None`` (default) follows the model config (trim); ``False`` embeds the audio
            as it is, without WebRTC VAD silence trimming (for clips the VAD finds no speech in);
            ``True`` forces trimming.
    """

    config_type: ClassVar[str] = "sv_ge2e-options"
    schema_version: ClassVar[int] = 1

    threshold: float = DEFAULT_COSINE_THRESHOLD
    trim_silence: bool | None = None


__all__ = ["DEFAULT_COSINE_THRESHOLD", "MIN_SPEECH_S", "SAMPLE_RATE", "SVGE2EConfig", "SVGE2EOptions"]

"""Model config and inference options of ``tts_vits`` (no torch imported).

The graph's own config (:class:`~voicehub.architectures.vits.VITSConfig`: sizes, rate, speakers) and the
voice's front-end settings (:class:`~voicehub.architectures.vits.PiperVoiceConfig`: espeak voice, phoneme
ids, default scales) are read from the checkpoint, never copied here: every Piper voice loads through
the same wrapper. What the model config holds is how text is read.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar, Literal

from voicehub.architectures.vits.config import MAX_LENGTH_SCALE, MAX_NOISE_SCALE
from voicehub.core.config import Config
from voicehub.core.errors import ConfigError
from voicehub.registry.model_config import ModelConfig

MAX_SEED = 2**63 - 1
"""Largest seed a ``torch.Generator`` takes."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TTSVITSConfig(ModelConfig):
    """How the ``tts_vits`` wrapper reads text.

    Attributes:
        normalize: ``"auto"`` spells out currency, titles and abbreviations for English voices
            (:func:`voicehub.architectures.vits.normalize_english`); ``"english"`` always does;
            ``None`` gives espeak-ng the text unchanged (phoneme ids then equal piper-tts's).
        on_unknown: a phoneme the voice has no id for: ``"raise"`` an ``UnknownSymbolError``, or
            ``"skip"`` it as piper does.
    """

    config_type: ClassVar[str] = "tts_vits"
    schema_version: ClassVar[int] = 1

    normalize: Literal["auto", "english"] | None = "auto"
    on_unknown: Literal["raise", "skip"] = "raise"


def _option_error(key: str, expected: str, value: object) -> ConfigError:
    return ConfigError(
        f"tts option {key}: expected {expected}, got {value!r}", config_type=TTSVITSOptions.config_type, key=key
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class TTSVITSOptions(Config):
    """VITS inference options (``generate(text, **options)``, ``stream(text, **options)``).

    ``None`` for a scale means the voice's own default (its ``.onnx.json``: 0.667, 1.0 and 0.8 for
    most Piper voices).

    Attributes:
        speaker: a speaker name or index of a multi-speaker voice (``None``: its default speaker).
        length_scale: duration multiplier, in (0, 10] (1.0 normal speed, 2.0 twice as slow).
        noise_scale: scale of the latent noise, in [0, 10] (0: the prior mean; timbre variation).
        noise_w: scale of the duration noise, in [0, 10] (0: deterministic durations; rhythm variation).
        seed: the noise seed, 0..2**63-1; sentence ``i`` of a text draws from a ``torch.Generator``
            seeded ``seed + i``, so ``stream`` and ``generate`` give the same audio and a text's
            audio does not depend on the other texts of a batch. ``None`` draws a seed from torch's
            global generator (``torch.manual_seed`` makes that reproducible) and reports it in the
            output's metadata.
        sentence_silence_s: seconds of silence after each sentence but the last (piper's
            ``--sentence-silence``), >= 0.
    """

    config_type: ClassVar[str] = "tts-vits-options"
    schema_version: ClassVar[int] = 1

    speaker: str | int | None = None
    length_scale: float | None = None
    noise_scale: float | None = None
    noise_w: float | None = None
    seed: int | None = None
    sentence_silence_s: float = 0.0

    def validate(self) -> None:
        """Check types and ranges.

        Raises:
            ConfigError: naming the option, the allowed range and the value given.
        """
        Config.validate(self)
        # The graph's own bounds (architectures.vits.config.check_scales), checked here too so that a
        # bad value is refused with the option's name before any work (and as a usage error on the CLI).
        length = self.length_scale
        if length is not None and (not math.isfinite(length) or not 0 < length <= MAX_LENGTH_SCALE):
            expected = f"a number > 0 and <= {MAX_LENGTH_SCALE:g} (1.0 is normal speed, 2.0 twice as slow)"
            raise _option_error("length_scale", expected, length)
        for key in ("noise_scale", "noise_w"):
            value = getattr(self, key)
            if value is not None and (not math.isfinite(value) or not 0 <= value <= MAX_NOISE_SCALE):
                raise _option_error(key, f"a number in [0, {MAX_NOISE_SCALE:g}] (voices use 0.3-1.0)", value)
        if self.seed is not None and not 0 <= self.seed <= MAX_SEED:
            raise _option_error("seed", f"an integer in 0..{MAX_SEED} (unset: a random seed)", self.seed)
        if not math.isfinite(self.sentence_silence_s) or not 0 <= self.sentence_silence_s <= 10:
            raise _option_error("sentence_silence_s", "seconds in [0, 10]", self.sentence_silence_s)
        if isinstance(self.speaker, int) and self.speaker < 0:
            raise _option_error("speaker", "a speaker name or an index >= 0 (unset: the voice's first)", self.speaker)


__all__ = ["MAX_SEED", "TTSVITSConfig", "TTSVITSOptions"]

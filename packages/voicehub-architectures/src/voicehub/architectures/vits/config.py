"""Configuration of the native VITS generator and of a Piper voice.

Two records, because a Piper voice ships its graph and its front end in two files:

* :class:`VITSConfig`: the sizes of the generator graph (text encoder, duration predictor,
  normalizing flow, HiFi-GAN decoder). Defaults are the Piper "medium" voices (rhasspy/piper,
  ``piper_train/vits/lightning.py``, MIT): 192 hidden channels, 6 transformer layers, a stochastic
  duration predictor, 4 coupling layers and a ResBlock-2 decoder with upsampling 8 x 8 x 4 = 256
  samples per frame at 22050 Hz. The ONNX adapter reads the sizes from the voice file itself.
* :class:`PiperVoiceConfig`: what the ``.onnx.json`` beside a voice says: sample rate, espeak-ng
  voice, phoneme-id map, speakers and the default noise and length scales.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal

from voicehub.core.config import Config
from voicehub.core.errors import ConfigError, InferenceOptionError

PAD = "_"
"""Phoneme interleaved after every phoneme (Piper's ``PAD``, id 0 in every released voice)."""

BOS = "^"
"""Phoneme that starts every sequence (Piper's ``BOS``)."""

EOS = "$"
"""Phoneme that ends every sequence (Piper's ``EOS``)."""

SPLINE_NUM_BINS = 10
"""Bins of the rational-quadratic spline in each ConvFlow of the stochastic duration predictor."""

SPLINE_TAIL_BOUND = 5.0
"""The spline acts on [-5, 5]; outside it the flow is the identity (linear tails)."""

DDS_NUM_LAYERS = 3
"""Dilated depth-separable conv layers in the duration predictor's DDSConv stacks (dilations 1, 3, 9)."""


def _positive(config: Config, name: str, value: int) -> None:
    if value <= 0:
        raise ConfigError(
            f"{config.config_type}.{name}: expected a positive integer, got {value}",
            config_type=config.config_type,
            key=name,
        )


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class VITSConfig(Config):
    """Sizes of a VITS generator (inference graph: no posterior encoder, no discriminators).

    Attributes:
        num_symbols: rows of the phoneme embedding (ids are ``0 .. num_symbols - 1``).
        num_speakers: speakers in the speaker embedding; 1 means no embedding.
        speaker_channels: width of the speaker embedding (``gin_channels``); 0 for one speaker.
        inter_channels: channels of the latent ``z`` between flow and decoder.
        hidden_channels: width of the text encoder, duration predictor and flow.
        filter_channels: inner width of the text encoder's feed-forward layers.
        num_heads: attention heads in the text encoder.
        num_layers: transformer layers in the text encoder.
        kernel_size: kernel of the feed-forward convolutions in the text encoder.
        window_size: relative-position window of the attention (positions -w..w).
        stochastic_duration: flow-based (stochastic) duration predictor; else the deterministic one.
        duration_filter_channels: width of the deterministic duration predictor (unused otherwise;
            the stochastic one uses ``hidden_channels``).
        duration_kernel_size: kernel of both duration predictors' convolutions.
        duration_num_flows: ConvFlows in the stochastic predictor (one of them is unused at inference).
        flow_num_couplings: affine coupling layers in the normalizing flow.
        flow_num_layers: WaveNet layers inside each coupling layer.
        flow_kernel_size: kernel of those WaveNet layers.
        flow_dilation_rate: dilation growth of those WaveNet layers.
        resblock: HiFi-GAN residual block type: ``"1"`` (3 dilated + 3 plain convs) or ``"2"`` (2 dilated).
        resblock_kernel_sizes: kernel of each parallel residual block.
        resblock_dilation_sizes: dilations of each parallel residual block (3 each for type 1, 2 for type 2).
        upsample_rates: stride of each transposed convolution; their product is ``hop_length``.
        upsample_initial_channel: channels before the first upsampling (halved by each).
        upsample_kernel_sizes: kernel of each transposed convolution.
        sample_rate: output rate in Hz.
    """

    config_type: ClassVar[str] = "vits"
    schema_version: ClassVar[int] = 1

    num_symbols: int = 256
    num_speakers: int = 1
    speaker_channels: int = 0
    inter_channels: int = 192
    hidden_channels: int = 192
    filter_channels: int = 768
    num_heads: int = 2
    num_layers: int = 6
    kernel_size: int = 3
    window_size: int = 4
    stochastic_duration: bool = True
    duration_filter_channels: int = 256
    duration_kernel_size: int = 3
    duration_num_flows: int = 4
    flow_num_couplings: int = 4
    flow_num_layers: int = 4
    flow_kernel_size: int = 5
    flow_dilation_rate: int = 1
    resblock: Literal["1", "2"] = "2"
    resblock_kernel_sizes: tuple[int, ...] = (3, 5, 7)
    resblock_dilation_sizes: tuple[tuple[int, ...], ...] = ((1, 2), (2, 6), (3, 12))
    upsample_rates: tuple[int, ...] = (8, 8, 4)
    upsample_initial_channel: int = 256
    upsample_kernel_sizes: tuple[int, ...] = (16, 16, 8)
    sample_rate: int = 22050

    def validate(self) -> None:
        """Check types, then sizes and their consistency.

        Raises:
            ConfigError: naming the field, what was expected and what was given.
        """
        Config.validate(self)
        for name in (
            "num_symbols",
            "num_speakers",
            "inter_channels",
            "hidden_channels",
            "filter_channels",
            "num_heads",
            "num_layers",
            "kernel_size",
            "window_size",
            "duration_filter_channels",
            "duration_kernel_size",
            "duration_num_flows",
            "flow_num_couplings",
            "flow_num_layers",
            "flow_kernel_size",
            "flow_dilation_rate",
            "upsample_initial_channel",
            "sample_rate",
        ):
            _positive(self, name, getattr(self, name))
        self._validate_channels()
        self._validate_decoder()

    def _validate_channels(self) -> None:
        """Speaker, attention, flow and kernel sizes that must agree with each other."""
        if self.speaker_channels < 0 or (self.num_speakers > 1) != (self.speaker_channels > 0):
            raise ConfigError(
                f"vits.speaker_channels: expected > 0 exactly when num_speakers > 1, got speaker_channels="
                f"{self.speaker_channels} with num_speakers={self.num_speakers}",
                config_type=self.config_type,
                key="speaker_channels",
            )
        if self.hidden_channels % self.num_heads:
            raise ConfigError(
                f"vits.num_heads: hidden_channels ({self.hidden_channels}) must be divisible by num_heads, "
                f"got {self.num_heads}",
                config_type=self.config_type,
                key="num_heads",
            )
        if self.inter_channels % 2:
            raise ConfigError(
                f"vits.inter_channels: expected an even number (the flow splits it in halves), got "
                f"{self.inter_channels}",
                config_type=self.config_type,
                key="inter_channels",
            )
        if self.flow_kernel_size % 2 == 0 or self.duration_kernel_size % 2 == 0:
            raise ConfigError(
                f"vits.flow_kernel_size/duration_kernel_size: expected odd kernels, got {self.flow_kernel_size} "
                f"and {self.duration_kernel_size}",
                config_type=self.config_type,
                key="flow_kernel_size",
            )

    def _validate_decoder(self) -> None:
        """The decoder's residual blocks and upsampling layers."""
        per_block = 3 if self.resblock == "1" else 2
        if (
            not self.resblock_kernel_sizes
            or len(self.resblock_kernel_sizes) != len(self.resblock_dilation_sizes)
            or any(len(dilations) != per_block for dilations in self.resblock_dilation_sizes)
            or min(self.resblock_kernel_sizes) <= 0
            or min(min(d) for d in self.resblock_dilation_sizes) <= 0
        ):
            raise ConfigError(
                f"vits.resblock_dilation_sizes: expected one tuple of {per_block} positive dilations per kernel in "
                f"resblock_kernel_sizes={list(self.resblock_kernel_sizes)} (resblock type {self.resblock}), got "
                f"{[list(d) for d in self.resblock_dilation_sizes]}",
                config_type=self.config_type,
                key="resblock_dilation_sizes",
            )
        if (
            not self.upsample_rates
            or len(self.upsample_rates) != len(self.upsample_kernel_sizes)
            or any(
                rate <= 0 or kernel < rate or (kernel - rate) % 2
                for rate, kernel in zip(self.upsample_rates, self.upsample_kernel_sizes, strict=True)
            )
        ):
            raise ConfigError(
                "vits.upsample_rates/upsample_kernel_sizes: expected equally long tuples with each kernel >= its "
                f"rate and (kernel - rate) even, got {list(self.upsample_rates)} and "
                f"{list(self.upsample_kernel_sizes)}",
                config_type=self.config_type,
                key="upsample_rates",
            )
        if self.upsample_initial_channel % (2 ** len(self.upsample_rates)):
            raise ConfigError(
                f"vits.upsample_initial_channel: must be divisible by 2**{len(self.upsample_rates)} (halved per "
                f"upsampling), got {self.upsample_initial_channel}",
                config_type=self.config_type,
                key="upsample_initial_channel",
            )

    @property
    def hop_length(self) -> int:
        """Output samples per latent frame: the product of ``upsample_rates`` (256 for Piper voices)."""
        return math.prod(self.upsample_rates)


def _voice_error(key: str, message: str) -> ConfigError:
    return ConfigError(f"piper-voice.{key}: {message}", config_type=PiperVoiceConfig.config_type, key=key)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class PiperVoiceConfig(Config):
    """The front end and inference defaults of a Piper voice (its ``.onnx.json``).

    Attributes:
        sample_rate: output rate in Hz.
        espeak_voice: espeak-ng voice name the phonemes come from (``"en-us"``).
        phoneme_type: ``"espeak"`` (IPA phonemes from espeak-ng) or ``"text"`` (Unicode code points).
        phoneme_id_map: phoneme (one Unicode code point, or a merged vowel cluster) -> its ids.
        num_symbols: size of the model's phoneme embedding.
        num_speakers: speakers of the model (1: single speaker).
        speaker_id_map: speaker name -> speaker index (empty for one speaker).
        default_speaker_id: speaker used when none is asked for (multi-speaker voices).
        noise_scale: default scale of the latent noise (Piper's ``noise_scale``).
        length_scale: default duration multiplier (> 1 is slower).
        noise_w: default scale of the duration noise (Piper's ``noise_w``).
        hop_length: output samples per latent frame.
        vowel_clusters: phoneme sequences merged into one phoneme before the id lookup.
        language: language code of the voice (``"en_US"``), or ``None`` when not stated.
    """

    config_type: ClassVar[str] = "piper-voice"
    schema_version: ClassVar[int] = 1

    sample_rate: int
    espeak_voice: str = "en-us"
    phoneme_type: Literal["espeak", "text"] = "espeak"
    phoneme_id_map: dict[str, tuple[int, ...]]
    num_symbols: int
    num_speakers: int = 1
    speaker_id_map: dict[str, int] = dataclasses.field(default_factory=dict)
    default_speaker_id: int = 0
    noise_scale: float = 0.667
    length_scale: float = 1.0
    noise_w: float = 0.8
    hop_length: int = 256
    vowel_clusters: tuple[tuple[str, ...], ...] = ()
    language: str | None = None

    def validate(self) -> None:
        """Check types, then the id map, speakers and scales.

        Raises:
            ConfigError: naming the field, what was expected and what was given.
        """
        Config.validate(self)
        for name in ("sample_rate", "num_symbols", "num_speakers", "hop_length"):
            _positive(self, name, getattr(self, name))
        for symbol in (PAD, BOS, EOS):
            if not self.phoneme_id_map.get(symbol):
                raise _voice_error(
                    "phoneme_id_map", f"expected an entry for {symbol!r} (pad, bos and eos are required)"
                )
        bad = sorted(
            symbol for symbol, ids in self.phoneme_id_map.items() if any(not 0 <= i < self.num_symbols for i in ids)
        )
        if bad:
            raise _voice_error("phoneme_id_map", f"ids of {bad} are outside 0..{self.num_symbols - 1} (num_symbols)")
        if len(self.speaker_id_map) > self.num_speakers or any(
            not 0 <= index < self.num_speakers for index in self.speaker_id_map.values()
        ):
            raise _voice_error(
                "speaker_id_map", f"expected speaker indices in 0..{self.num_speakers - 1}, got {self.speaker_id_map}"
            )
        if not 0 <= self.default_speaker_id < self.num_speakers:
            raise _voice_error(
                "default_speaker_id", f"expected 0..{self.num_speakers - 1}, got {self.default_speaker_id}"
            )
        for name in ("noise_scale", "noise_w"):
            value = getattr(self, name)
            if not math.isfinite(value) or value < 0:
                raise _voice_error(name, f"expected a finite value >= 0, got {value}")
        if not math.isfinite(self.length_scale) or self.length_scale <= 0:
            raise _voice_error("length_scale", f"expected a finite value > 0, got {self.length_scale}")
        for cluster in self.vowel_clusters:
            if len(cluster) < 2 or "".join(cluster) not in self.phoneme_id_map:
                raise _voice_error(
                    "vowel_clusters",
                    f"each cluster needs >= 2 phonemes and its merged form in the id map, got {cluster}",
                )

    def speaker_index(self, speaker: int | str | None) -> int:
        """Resolve a speaker name or index (``None``: the default speaker).

        Raises:
            UnknownSpeakerError: for a name not in ``speaker_id_map`` or an index out of range,
                listing the speakers the voice has.
        """
        from voicehub.architectures.errors import UnknownSpeakerError

        if speaker is None:
            return self.default_speaker_id
        if isinstance(speaker, str):
            if speaker in self.speaker_id_map:
                return self.speaker_id_map[speaker]
            if speaker.isdigit() and int(speaker) < self.num_speakers:
                return int(speaker)
        elif isinstance(speaker, int) and not isinstance(speaker, bool) and 0 <= speaker < self.num_speakers:
            return speaker
        available = list(self.speaker_id_map) or [str(i) for i in range(self.num_speakers)]
        raise UnknownSpeakerError(speaker, available, num_speakers=self.num_speakers)

    @classmethod
    def from_piper_json(cls, source: str | os.PathLike[str] | Mapping[str, Any]) -> PiperVoiceConfig:
        """Read a Piper ``.onnx.json`` (piper 1.x format).

        Only the keys VoiceHub uses are read; descriptive keys (``dataset``, ``language`` details,
        ``audio.quality``, ``piper_version``, ``phoneme_map``, which piper 1.8 ignores too) are not
        needed. Missing defaults follow ``piper/config.py`` of piper-tts 1.8.0.

        Args:
            source: the file path, or its parsed JSON object.

        Raises:
            ConfigError: for an unreadable file or a missing or mistyped key, naming it.
        """
        if isinstance(source, Mapping):
            data: Mapping[str, Any] = source
            where = "piper voice config"
        else:
            path = Path(source)
            where = str(path)
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as err:
                raise ConfigError(
                    f"{path}: cannot read the Piper voice config ({err})", config_type=cls.config_type
                ) from err
            if not isinstance(data, Mapping):
                raise ConfigError(f"{path}: expected a JSON object", config_type=cls.config_type)
        try:
            inference = data.get("inference") or {}
            language = data.get("language") or {}
            id_map = data["phoneme_id_map"]
            if not isinstance(id_map, Mapping):
                raise TypeError("phoneme_id_map is not an object")
            return cls(
                sample_rate=data["audio"]["sample_rate"],
                espeak_voice=(data.get("espeak") or {}).get("voice", "en-us"),
                phoneme_type=data.get("phoneme_type", "espeak"),
                phoneme_id_map={str(k): tuple(v) for k, v in id_map.items()},
                num_symbols=data["num_symbols"],
                num_speakers=data.get("num_speakers", 1),
                speaker_id_map=dict(data.get("speaker_id_map") or {}),
                default_speaker_id=data.get("default_speaker_id", 0),
                noise_scale=inference.get("noise_scale", 0.667),
                length_scale=inference.get("length_scale", 1.0),
                noise_w=inference.get("noise_w", 0.8),
                hop_length=data.get("hop_length", 256),
                vowel_clusters=tuple(tuple(c) for c in data.get("vowel_clusters") or ()),
                language=language.get("code") if isinstance(language, Mapping) else None,
            )
        except ConfigError as err:
            raise ConfigError(f"{where}: {err}", config_type=err.config_type, key=err.key) from err
        except (KeyError, TypeError, AttributeError) as err:
            raise ConfigError(
                f"{where}: not a Piper voice config ({type(err).__name__}: {err}); expected the .onnx.json written "
                "by piper with audio.sample_rate, num_symbols and phoneme_id_map",
                config_type=cls.config_type,
            ) from err


MAX_LENGTH_SCALE = 10.0
"""The slowest speech accepted: each phoneme at most ten times its predicted length (bounds memory)."""

MAX_NOISE_SCALE = 10.0
"""The largest ``noise_scale`` / ``noise_w`` accepted. Voices use 0.3-1.0 (Piper's defaults: 0.667 and
0.8); at 10 the latent noise already swamps the prior and the waveform is clipped noise, so a larger
value is a mistake (a missing decimal point), not a style."""


def check_scales(*, noise_scale: float, length_scale: float, noise_w: float) -> None:
    """Refuse VITS inference scales the graph cannot use.

    Raises:
        InferenceOptionError: ``noise_scale`` and ``noise_w`` must be in [0, :data:`MAX_NOISE_SCALE`],
            ``length_scale`` in (0, :data:`MAX_LENGTH_SCALE`].
    """
    for name, value, low in (("noise_scale", noise_scale, 0.0), ("noise_w", noise_w, 0.0)):
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not math.isfinite(value)
            or not low <= value <= MAX_NOISE_SCALE
        ):
            raise InferenceOptionError(
                f"vits option {name}: expected a number >= 0 and <= {MAX_NOISE_SCALE:g} (voices use 0.3-1.0), "
                f"got {value!r}"
            )
    if (
        isinstance(length_scale, bool)
        or not isinstance(length_scale, (int, float))
        or not math.isfinite(length_scale)
        or length_scale <= 0
        or length_scale > MAX_LENGTH_SCALE
    ):
        raise InferenceOptionError(
            f"vits option length_scale: expected a number > 0 and <= {MAX_LENGTH_SCALE:g} (1.0 is normal speed, 2.0 "
            f"twice as slow; beyond {MAX_LENGTH_SCALE:g} the audio, and the memory it takes, grow without being "
            f"speech), got {length_scale!r}"
        )


__all__ = [
    "BOS",
    "DDS_NUM_LAYERS",
    "EOS",
    "MAX_LENGTH_SCALE",
    "MAX_NOISE_SCALE",
    "PAD",
    "SPLINE_NUM_BINS",
    "SPLINE_TAIL_BOUND",
    "PiperVoiceConfig",
    "VITSConfig",
    "check_scales",
]

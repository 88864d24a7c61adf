"""TTS, ASR and SV extensions built on real (tiny) torch computations, for the task base classes.

* ``ToneTTS`` maps each character to a sine tone: its runtime is a ``torch.nn.Embedding``
  (character code -> frequency in Hz) loaded from a checkpoint; 0.1 s per character at 8 kHz.
* ``ToneASR`` inverts it: each 0.1 s chunk's spectral peak (``torch.fft.rfft``) is mapped to the
  character whose frequency is nearest, using the same kind of checkpoint.
* ``SpectrumSV`` embeds audio as the mean log power of a fixed ``torch.nn.Conv1d`` filter bank.

A TTS -> ASR round trip must give the text back, which fails if either side is wrong.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from voicehub.core import ASROutput, ASRSegment, Config, ConfigError, SpeakerOutput, TTSOutput, Waveform
from voicehub.core.errors import CheckpointError
from voicehub.core.runtime import RuntimeBundle
from voicehub.registry import ModelConfig
from voicehub.speaker_verification import PreTrainedSVModel, SpeakerRuntime
from voicehub.speech_recognition import PreTrainedASRModel
from voicehub.text_to_speech import PreTrainedTTSModel

SAMPLE_RATE = 8000
SAMPLES_PER_CHAR = 800
"""0.1 s per character at 8 kHz: 10 Hz frequency resolution for the recogniser's FFT."""


def char_frequency_hz(code: int) -> float:
    """The tone of a character code: 300 Hz + 25 Hz per code point (below 3.5 kHz for ASCII)."""
    return 300.0 + 25.0 * code


def _load_table(checkpoint: Path | None) -> Any:
    import torch

    if checkpoint is None or not checkpoint.is_file():
        raise CheckpointError(f"a frequency-table .pt file is needed, got {checkpoint}", path=checkpoint)
    table = torch.nn.Embedding(128, 1)
    table.load_state_dict(torch.load(checkpoint, weights_only=True), strict=True)
    return table


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ToneTTSConfig(ModelConfig):
    config_type: ClassVar[str] = "test_tone_tts"
    sample_rate: int = SAMPLE_RATE
    samples_per_char: int = SAMPLES_PER_CHAR


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ToneTTSOptions(Config):
    config_type: ClassVar[str] = "test_tone_tts_options"
    amplitude: float = 0.5

    def validate(self) -> None:
        Config.validate(self)
        if not 0.0 < self.amplitude <= 1.0:
            raise ConfigError(f"amplitude must be in (0, 1], got {self.amplitude}", key="amplitude")


class ToneTTS(PreTrainedTTSModel[ToneTTSConfig, ToneTTSOptions, RuntimeBundle[Any]]):
    config_class: ClassVar[type[ModelConfig]] = ToneTTSConfig
    options_class: ClassVar[type[Config]] = ToneTTSOptions

    def _load_runtime(self, checkpoint: Path | None, *, device: Any, dtype: Any, training: bool) -> RuntimeBundle[Any]:
        return RuntimeBundle(module=_load_table(checkpoint))

    def _generate(self, bundle: RuntimeBundle[Any], texts: Sequence[str], options: ToneTTSOptions) -> list[TTSOutput]:
        runtime = bundle.module
        import torch

        n = self.config.samples_per_char
        t = torch.arange(n, dtype=torch.float64) / self.config.sample_rate
        outputs = []
        for text in texts:
            codes = torch.tensor([min(ord(c), 127) for c in text])
            freqs = runtime(codes)[:, 0].double()  # (num_chars,)
            tones = options.amplitude * torch.sin(2 * math.pi * freqs[:, None] * t[None, :])
            audio = tones.reshape(-1).float().numpy()
            outputs.append(TTSOutput(audio=audio, sample_rate=self.config.sample_rate, text=text))
        return outputs


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ToneASRConfig(ModelConfig):
    config_type: ClassVar[str] = "test_tone_asr"
    sample_rate: int = SAMPLE_RATE
    samples_per_char: int = SAMPLES_PER_CHAR


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ToneASROptions(Config):
    config_type: ClassVar[str] = "test_tone_asr_options"
    language: str = "en"


class ToneASR(PreTrainedASRModel[ToneASRConfig, ToneASROptions, RuntimeBundle[Any]]):
    config_class: ClassVar[type[ModelConfig]] = ToneASRConfig
    options_class: ClassVar[type[Config]] = ToneASROptions

    def _load_runtime(self, checkpoint: Path | None, *, device: Any, dtype: Any, training: bool) -> RuntimeBundle[Any]:
        return RuntimeBundle(module=_load_table(checkpoint))

    def _transcribe(
        self, bundle: RuntimeBundle[Any], waveforms: Sequence[Waveform], options: ToneASROptions
    ) -> list[ASROutput]:
        runtime = bundle.module
        import torch

        n = self.config.samples_per_char
        table = runtime.weight[:, 0].double()  # (128,) Hz
        outputs = []
        for waveform in waveforms:
            samples = torch.from_numpy(waveform.samples[: waveform.num_samples // n * n]).double()
            spectrum = torch.fft.rfft(samples.reshape(-1, n), dim=1).abs()
            peak_hz = spectrum.argmax(dim=1).double() * waveform.sample_rate / n
            codes = (peak_hz[:, None] - table[None, :]).abs().argmin(dim=1)
            text = "".join(chr(int(c)) for c in codes)
            segment = ASRSegment(text=text, start_s=0.0, end_s=waveform.duration_s, language=options.language)
            outputs.append(
                ASROutput(
                    text=text,
                    segments=(segment,),
                    language=options.language,
                    duration_s=waveform.duration_s,
                    source=waveform.source,
                )
            )
        return outputs


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class SpectrumSVConfig(ModelConfig):
    config_type: ClassVar[str] = "test_spectrum_sv"
    sample_rate: int = 16000


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class SpectrumSVOptions(Config):
    config_type: ClassVar[str] = "test_spectrum_sv_options"
    threshold: float = 0.99


class SpectrumSV(PreTrainedSVModel[SpectrumSVConfig, SpectrumSVOptions, Any]):
    """Embedding = mean log power of 16 fixed band-pass filters (a Conv1d, 25 ms window, 10 ms hop)."""

    config_class: ClassVar[type[ModelConfig]] = SpectrumSVConfig
    options_class: ClassVar[type[Config]] = SpectrumSVOptions

    def _load_encoder(self, checkpoint: Path | None, *, device: Any, dtype: Any, training: bool) -> Any:
        import torch

        if checkpoint is None:
            raise CheckpointError("SpectrumSV needs a filter-bank .pt file")
        bank = torch.nn.Conv1d(1, 16, kernel_size=400, stride=160, bias=False)
        bank.load_state_dict(torch.load(checkpoint, weights_only=True), strict=True)
        return bank

    def _embed(
        self, bundle: SpeakerRuntime[Any], waveforms: Sequence[Waveform], options: SpectrumSVOptions
    ) -> list[SpeakerOutput]:
        runtime = bundle.module
        import torch

        outputs = []
        for waveform in waveforms:
            frames = runtime(torch.from_numpy(waveform.samples)[None, None])[0]  # (16, num_frames)
            embedding = torch.log(frames.square().mean(dim=1) + 1e-10).numpy().astype(np.float32)
            outputs.append(SpeakerOutput(embedding=embedding, duration_s=waveform.duration_s, source=waveform.source))
        return outputs


def cosine_filter_bank() -> Any:
    """16 windowed cosines at 250 Hz ... 4 kHz (16 kHz audio), shape (16, 1, 400)."""
    import torch

    t = torch.arange(400, dtype=torch.float64) / 16000
    window = torch.hann_window(400, periodic=False, dtype=torch.float64)
    freqs = torch.arange(1, 17, dtype=torch.float64) * 250.0
    return (torch.cos(2 * math.pi * freqs[:, None] * t[None, :]) * window)[:, None, :].float()

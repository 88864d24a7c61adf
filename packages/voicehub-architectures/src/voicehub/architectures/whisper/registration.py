"""Declaration of the Whisper architecture: its verified facts (imports no torch)."""

from __future__ import annotations

from voicehub.architectures.whisper.config import SAMPLE_RATE
from voicehub.core.tasks import SpeechTask
from voicehub.registry.architecture_registry import ArchitectureSpec

ARCHITECTURE = ArchitectureSpec(
    architecture_id="whisper",
    version="1",
    tasks=(SpeechTask.AUTOMATIC_SPEECH_RECOGNITION,),
    devices=("cpu",),
    dtypes=("float32", "bfloat16"),
    features=(
        "word-timestamps",
        "long-form",
        "batched-inference",
        "beam-search",
        "language-detection",
        "translation",
    ),
    optimization_passes=("eval-mode", "inference-mode", "threads", "dtype", "int8-dynamic"),
    sample_rates=(SAMPLE_RATE,),
    upstream="https://github.com/openai/whisper (openai-whisper 20250625); CTranslate2 weights as in faster-whisper",
    license="MIT",
    builder="voicehub.architectures.whisper.model:Whisper",
    config="voicehub.architectures.whisper.config:WhisperConfig",
    processor="voicehub.architectures.whisper.audio:log_mel_spectrogram",
    decoder="voicehub.architectures.whisper.decoding:WhisperDecoder",
    objective=None,  # fine-tuned through voicehub.training's generic sequence-to-sequence cross entropy
    checkpoint_adapter="voicehub.architectures.whisper.checkpoint:load_whisper",
)
"""Verified on CPU in float32: log-mel, encoder output and first-step logits against openai-whisper, greedy
transcripts against faster-whisper on tiny.en and base (``packages/voicehub-architectures/tests/test_whisper*.py``);
bfloat16 and the listed passes by the ASR probe of ``tests/test_optimization_matrix.py`` (a LibriVox transcript within
two word edits and, when unchanged, its segment times within 0.5 s; the exact passes give the same transcript)."""

__all__ = ["ARCHITECTURE"]

"""Whisper (OpenAI, MIT): native encoder-decoder, log-mel front end, tokenizer, checkpoint adapters, decoding.

Importing this package stays light (no torch): the configs are imported at once, everything else on
first attribute access.

Typical use::

    loaded = load_whisper(model_dir)  # CTranslate2, Hugging Face or OpenAI files
    transcriber = WhisperTranscriber(loaded.model, loaded.tokenizer, loaded.generation)
    transcript = transcriber.transcribe(waveform_16k, DecodingOptions(word_timestamps=True))
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from voicehub.architectures.whisper.config import (
    OFFICIAL_SIZES,
    SAMPLE_RATE,
    WINDOW_DURATION_S,
    WINDOW_NUM_SAMPLES,
    WhisperConfig,
    WhisperGenerationConfig,
)
from voicehub.core.lazy import lazy_attributes

if TYPE_CHECKING:
    from voicehub.architectures.whisper.audio import log_mel_spectrogram, window_log_mel
    from voicehub.architectures.whisper.checkpoint import (
        CheckpointFormat,
        LoadedWhisper,
        WhisperFiles,
        convert_ct2,
        convert_hugging_face,
        convert_openai,
        export_openai_checkpoint,
        find_whisper_files,
        load_whisper,
    )
    from voicehub.architectures.whisper.ct2 import CT2Model, read_ct2_model
    from voicehub.architectures.whisper.decoding import DecodingOptions, DecodingResult, WhisperDecoder
    from voicehub.architectures.whisper.model import DecoderState, Whisper
    from voicehub.architectures.whisper.tokenizer import SpecialTokens, WhisperTokenizer
    from voicehub.architectures.whisper.transcription import (
        WhisperSegment,
        WhisperTranscriber,
        WhisperTranscript,
        WhisperWord,
    )

_LAZY = {
    "log_mel_spectrogram": "audio",
    "window_log_mel": "audio",
    "CheckpointFormat": "files",
    "LoadedWhisper": "checkpoint",
    "WhisperFiles": "files",
    "convert_ct2": "checkpoint",
    "convert_hugging_face": "checkpoint",
    "convert_openai": "checkpoint",
    "export_openai_checkpoint": "checkpoint",
    "find_whisper_files": "files",
    "load_whisper": "checkpoint",
    "CT2Model": "ct2",
    "read_ct2_model": "ct2",
    "DecodingOptions": "decoding",
    "DecodingResult": "decoding",
    "WhisperDecoder": "decoding",
    "DecoderState": "model",
    "Whisper": "model",
    "SpecialTokens": "tokenizer",
    "WhisperTokenizer": "tokenizer",
    "WhisperSegment": "transcription",
    "WhisperTranscriber": "transcription",
    "WhisperTranscript": "transcription",
    "WhisperWord": "transcription",
}

__getattr__ = lazy_attributes(__name__, _LAZY)


__all__ = [
    "OFFICIAL_SIZES",
    "SAMPLE_RATE",
    "WINDOW_DURATION_S",
    "WINDOW_NUM_SAMPLES",
    "CT2Model",
    "CheckpointFormat",
    "DecoderState",
    "DecodingOptions",
    "DecodingResult",
    "LoadedWhisper",
    "SpecialTokens",
    "Whisper",
    "WhisperConfig",
    "WhisperDecoder",
    "WhisperFiles",
    "WhisperGenerationConfig",
    "WhisperSegment",
    "WhisperTokenizer",
    "WhisperTranscriber",
    "WhisperTranscript",
    "WhisperWord",
    "convert_ct2",
    "convert_hugging_face",
    "convert_openai",
    "export_openai_checkpoint",
    "find_whisper_files",
    "load_whisper",
    "log_mel_spectrogram",
    "read_ct2_model",
    "window_log_mel",
]

"""VITS for Piper voices: native generator, configs, checkpoint adapters and the text front end.

Importing this package stays light (no torch, no espeak-ng): the configs are imported at once,
the graph, the adapters and the text front end on first attribute access.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from voicehub.architectures.vits.config import PiperVoiceConfig, VITSConfig, check_scales
from voicehub.core.lazy import lazy_attributes

if TYPE_CHECKING:
    from voicehub.architectures.vits.checkpoint import (
        PiperVoice,
        convert_onnx_voice,
        convert_training_state_dict,
        export_training_checkpoint,
        fold_weight_norm,
        load_piper_voice,
        load_vits_training_checkpoint,
        read_onnx_voice,
    )
    from voicehub.architectures.vits.model import VITSGenerator, VITSNoise, VITSOutput, pad_phoneme_ids
    from voicehub.architectures.vits.phonemize import EspeakPhonemizer, PhonemizedSentence, phoneme_ids
    from voicehub.architectures.vits.text import PiperTextFrontEnd, SentenceIds, normalize_english

_LAZY = {
    "PiperVoice": "checkpoint",
    "convert_onnx_voice": "checkpoint",
    "convert_training_state_dict": "checkpoint",
    "export_training_checkpoint": "checkpoint",
    "fold_weight_norm": "checkpoint",
    "load_piper_voice": "checkpoint",
    "load_vits_training_checkpoint": "checkpoint",
    "read_onnx_voice": "checkpoint",
    "VITSGenerator": "model",
    "VITSNoise": "model",
    "VITSOutput": "model",
    "pad_phoneme_ids": "model",
    "EspeakPhonemizer": "phonemize",
    "PhonemizedSentence": "phonemize",
    "phoneme_ids": "phonemize",
    "PiperTextFrontEnd": "text",
    "SentenceIds": "text",
    "normalize_english": "text",
}

__getattr__ = lazy_attributes(__name__, _LAZY)


__all__ = [
    "EspeakPhonemizer",
    "PhonemizedSentence",
    "PiperTextFrontEnd",
    "PiperVoice",
    "PiperVoiceConfig",
    "SentenceIds",
    "VITSConfig",
    "VITSGenerator",
    "VITSNoise",
    "VITSOutput",
    "check_scales",
    "convert_onnx_voice",
    "convert_training_state_dict",
    "export_training_checkpoint",
    "fold_weight_norm",
    "load_piper_voice",
    "load_vits_training_checkpoint",
    "normalize_english",
    "pad_phoneme_ids",
    "phoneme_ids",
    "read_onnx_voice",
]

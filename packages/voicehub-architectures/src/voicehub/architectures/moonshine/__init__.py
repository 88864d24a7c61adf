"""Moonshine (base-en, tiny-en): native encoder-decoder, config, ``.ort`` checkpoint adapter and tokenizer.

Importing this package stays light (no torch): the config is imported at once, the graph, the
adapter and the tokenizer on first attribute access.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from voicehub.architectures.moonshine.config import (
    MIN_NUM_SAMPLES,
    SAMPLE_RATE,
    MoonshineConfig,
    num_encoder_frames,
)
from voicehub.core.lazy import lazy_attributes

if TYPE_CHECKING:
    from voicehub.architectures.moonshine.checkpoint import (
        DECODER_FILE,
        ENCODER_FILE,
        KNOWN_CHECKPOINTS,
        MODEL_FILES,
        TOKENIZER_FILE,
        WHEEL_DIRECTORY,
        WHEEL_DISTRIBUTION,
        MoonshineOrtTensors,
        convert_state_dict,
        load_moonshine,
        read_tensors,
        tensor_rules,
    )
    from voicehub.architectures.moonshine.model import MoonshineDecoderState, MoonshineModel
    from voicehub.architectures.moonshine.tokenizer import MoonshineTokenizer

_LAZY = {
    "DECODER_FILE": "checkpoint",
    "ENCODER_FILE": "checkpoint",
    "KNOWN_CHECKPOINTS": "checkpoint",
    "MODEL_FILES": "checkpoint",
    "TOKENIZER_FILE": "checkpoint",
    "WHEEL_DIRECTORY": "checkpoint",
    "WHEEL_DISTRIBUTION": "checkpoint",
    "MoonshineOrtTensors": "checkpoint",
    "convert_state_dict": "checkpoint",
    "load_moonshine": "checkpoint",
    "read_tensors": "checkpoint",
    "tensor_rules": "checkpoint",
    "MoonshineDecoderState": "model",
    "MoonshineModel": "model",
    "MoonshineTokenizer": "tokenizer",
}

__getattr__ = lazy_attributes(__name__, _LAZY)


__all__ = [
    "DECODER_FILE",
    "ENCODER_FILE",
    "KNOWN_CHECKPOINTS",
    "MIN_NUM_SAMPLES",
    "MODEL_FILES",
    "SAMPLE_RATE",
    "TOKENIZER_FILE",
    "WHEEL_DIRECTORY",
    "WHEEL_DISTRIBUTION",
    "MoonshineConfig",
    "MoonshineDecoderState",
    "MoonshineModel",
    "MoonshineOrtTensors",
    "MoonshineTokenizer",
    "convert_state_dict",
    "load_moonshine",
    "num_encoder_frames",
    "read_tensors",
    "tensor_rules",
]

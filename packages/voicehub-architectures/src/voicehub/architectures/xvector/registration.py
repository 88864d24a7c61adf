"""Declaration of the ECAPA-style x-vector architecture: its verified facts (imports no torch)."""

from __future__ import annotations

from voicehub.core.tasks import SpeechTask
from voicehub.registry.architecture_registry import ArchitectureSpec

ARCHITECTURE = ArchitectureSpec(
    architecture_id="xvector",
    version="2",
    tasks=(SpeechTask.SPEAKER_VERIFICATION,),
    devices=("cpu",),
    dtypes=("float32",),
    features=("16khz", "batched-inference", "trainable", "hyper-torch-model"),
    optimization_passes=(),
    sample_rates=(16000,),
    upstream="https://github.com/hyperion-ml/hyperion (ResNet1dXVector, resb_type seres2bn); no pretrained weights",
    license="Apache-2.0",
    builder="voicehub.architectures.xvector.model:XVector",
    config="voicehub.architectures.xvector.config:XVectorConfig",
    processor=None,  # the log-mel front end is inside the graph (XVector.features)
    decoder=None,  # the output is the speaker embedding; scoring is voicehub.speaker_verification's
    objective="voicehub.architectures.xvector.model:XVector.loss",
    # Hyperion HyperTorchModel files: there are no upstream weights to adapt
    checkpoint_adapter="voicehub.architectures.xvector.model:XVector.load",
)
"""Verified on CPU in float32: padding invariance, AAM-softmax training steps, save/auto_load round trips."""

__all__ = ["ARCHITECTURE"]

"""The ``asr_qwen3`` wrapper: created without weights; the first use says what is missing and how to get it.

Seed 001's loading example, ``AutoModel.from_pretrained("Qwen/Qwen3-ASR-0.6B", model_type="asr_qwen3",
lazy_load=True)``, returns this wrapper in the ``created`` state without importing a graph or
touching the network. The first ``transcribe()`` or ``load()`` resolves the checkpoint:

* weights absent (the usual case here: no model hub at run time) -> ``CheckpointNotFoundError``
  naming the repository, the download command, and ``source=`` for a local copy;
* weights present -> ``LifecycleError``: the native graph is not implemented in this version
  (it could not be verified against the real model), so the weights cannot run yet.
"""

from __future__ import annotations

from pathlib import Path

import torch

from voicehub.core.device import Device
from voicehub.core.errors import LifecycleError
from voicehub.core.runtime import RuntimeBundle
from voicehub.models.asr_qwen3.config import ASRQwen3Config
from voicehub.models.asr_qwen3.registration import REPOSITORY
from voicehub.registry.errors import CheckpointNotFoundError
from voicehub.speech_recognition import ASROptions, PreTrainedASRModel

DOWNLOAD_COMMAND = f"huggingface-cli download {REPOSITORY} --local-dir qwen3-asr-0.6b"
"""How to get the weights on a machine with network access."""


class Qwen3ASRModel(PreTrainedASRModel[ASRQwen3Config, ASROptions, RuntimeBundle[torch.nn.Module]]):
    """Qwen3-ASR-0.6B: the lazy half of the integration (config, registration, created wrapper)."""

    config_class = ASRQwen3Config
    options_class = ASROptions

    def _load_runtime(
        self, checkpoint: Path | None, *, device: Device, dtype: torch.dtype, training: bool
    ) -> RuntimeBundle[torch.nn.Module]:
        """Refuse: without weights, say how to get them; with weights, say the graph is pending.

        Raises:
            CheckpointNotFoundError: no checkpoint was given or found.
            LifecycleError: a checkpoint was found, but this version has no Qwen3-ASR graph to run it.
        """
        if checkpoint is None:
            raise CheckpointNotFoundError(
                f"asr_qwen3 needs the {REPOSITORY} weights and none were given: on a machine with network "
                f"access run `{DOWNLOAD_COMMAND}` and pass source='qwen3-asr-0.6b' (command line: --source PATH)",
                source=REPOSITORY,
            )
        raise LifecycleError(
            f"asr_qwen3: found weights at {checkpoint}, but this VoiceHub version has no native Qwen3-ASR graph to "
            f"run them (it has not been verified against the real model yet); use asr_whisper or asr_moonshine"
        )


__all__ = ["DOWNLOAD_COMMAND", "Qwen3ASRModel"]

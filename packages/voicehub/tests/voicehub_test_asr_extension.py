"""An ASR extension whose module must not be imported when a VAD factory refuses it."""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from voicehub.core import Config
from voicehub.core.runtime import RuntimeBundle
from voicehub.registry import ModelConfig, ModelSpec
from voicehub.speech_recognition import PreTrainedASRModel


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ShadowASRConfig(ModelConfig):
    config_type: ClassVar[str] = "test_shadow_asr"


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ShadowASROptions(Config):
    config_type: ClassVar[str] = "test_shadow_asr_options"


class ShadowASR(PreTrainedASRModel[ShadowASRConfig, ShadowASROptions, RuntimeBundle[object]]):
    config_class: ClassVar[type[ModelConfig]] = ShadowASRConfig
    options_class: ClassVar[type[Config]] = ShadowASROptions


MODEL_SPEC = ModelSpec(
    model_type="test_shadow_asr",
    task="asr",  # type: ignore[arg-type]
    config="voicehub_test_asr_extension:ShadowASRConfig",
    wrapper="voicehub_test_asr_extension:ShadowASR",
)

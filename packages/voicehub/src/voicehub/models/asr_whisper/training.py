"""Training declarations of ``asr_whisper`` and ``asr_whisper_base`` (import no torch)."""

from __future__ import annotations

import dataclasses

from voicehub.training.spec import DataContract, ManifestField, ModelTrainingSpec, SupportLevel

_REASON = (
    "the native encoder-decoder gives teacher-forced logits for a 30 s log-mel window and a token prefix, "
    "so it fine-tunes on transcribed utterances with token cross-entropy"
)
_DATA = DataContract(required_fields=(ManifestField.TEXT,), sample_rate=16000, max_duration_s=30.0)

TRAINING_SPEC = ModelTrainingSpec(
    model_type="asr_whisper",
    support=SupportLevel.NATIVE,
    reason=_REASON,
    family="sequence_to_sequence",
    objective="cross_entropy",
    data=_DATA,
    # The usual small-data recipe: adapt the decoder, keep the audio encoder as trained.
    frozen_parts=("encoder.",),
    checkpoint_kind="openai_whisper",
    export_path="save_pretrained",
    hooks="voicehub.models.asr_whisper.training_hooks:WhisperSeq2SeqHooks",
)
"""Whisper tiny.en: decoder fine-tuning with the encoder frozen."""

BASE_TRAINING_SPEC = dataclasses.replace(TRAINING_SPEC, model_type="asr_whisper_base")
"""Whisper base (multilingual; the English start sequence is used): decoder fine-tuning, encoder frozen."""

__all__ = ["BASE_TRAINING_SPEC", "TRAINING_SPEC"]

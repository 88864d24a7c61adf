"""Training declaration of ``sv_ge2e`` (imports no torch; the hooks live in ``training_hooks``)."""

from __future__ import annotations

from voicehub.training.spec import DataContract, ManifestField, ModelTrainingSpec, SupportLevel

TRAINING_SPEC = ModelTrainingSpec(
    model_type="sv_ge2e",
    support=SupportLevel.NATIVE,
    reason="the GE2E encoder computes its 40-band mel partials in torch and embeds them with an LSTM, so it "
    "fine-tunes from raw 16 kHz audio (training skips the inference-time WebRTC silence trimming: give it "
    "speech clips)",
    family="speaker_classification",
    objective="additive_margin_softmax",
    data=DataContract(required_fields=(ManifestField.SPEAKER,), sample_rate=16000),
    # The GE2E loss's similarity scale and bias: unused by the additive-margin softmax head.
    frozen_parts=("similarity_",),
    checkpoint_kind="state_dict",
    export_path="save_pretrained",
    hooks="voicehub.models.sv_ge2e.training_hooks:GE2EEmbeddingHooks",
)
"""Speaker classification with an additive-margin softmax head on the unit-norm GE2E embeddings."""

__all__ = ["TRAINING_SPEC"]

"""Training declaration of ``sv_xvector`` (imports no torch; the hooks live in ``training_hooks``)."""

from __future__ import annotations

from voicehub.training.spec import DataContract, ManifestField, ModelTrainingSpec, SupportLevel

TRAINING_SPEC = ModelTrainingSpec(
    model_type="sv_xvector",
    support=SupportLevel.NATIVE,
    reason="the x-vector encoder is a torch module from raw 16 kHz audio (its log-mel front end inside) to an "
    "embedding; it has no pretrained weights and is meant to be trained",
    family="speaker_classification",
    objective="additive_margin_softmax",
    data=DataContract(required_fields=(ManifestField.SPEAKER,), sample_rate=16000),
    checkpoint_kind="hyperion",
    export_path="save_pretrained",
    hooks="voicehub.models.sv_xvector.training_hooks:XVectorEmbeddingHooks",
)
"""Speaker classification over the manifest's speakers with an additive-margin softmax head."""

__all__ = ["TRAINING_SPEC"]

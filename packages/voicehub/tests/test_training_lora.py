"""LoRA fine-tuning of Whisper tiny.en on real LibriVox utterances through the training-mode ``lora`` pass."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from voicehub import AutoModel
from voicehub.training import AutoTrainingAdapter, Trainer, TrainerConfig, get_training_spec
from voicehub_training_data import librivox_records

STEPS = 4


def _lora_model() -> tuple[object, object]:
    model = AutoModel.from_pretrained(model_type="asr_whisper")
    result = model.apply_optimization_plan(("lora",), mode="training")
    return model, result


@pytest.mark.slow
def test_lora_lowers_the_loss_reloads_exactly_and_merges_into_a_plain_checkpoint(tmp_path: Path) -> None:
    records = librivox_records(("0880", "0930"))
    spec = get_training_spec("asr_whisper")
    model, plan = _lora_model()  # every Linear but the output projection tied to the token embedding
    adapter = AutoTrainingAdapter.from_host(model, spec, records=records)  # type: ignore[arg-type]
    config = TrainerConfig(max_steps=STEPS, batch_size=2, learning_rate=1e-3, checkpoint_at_end=False)
    trainer = Trainer(
        adapter, config, train_records=records, eval_records=records, output_dir=tmp_path, optimization=plan
    )  # type: ignore[arg-type]
    trained_names = {name for name, p in adapter.module.named_parameters() if any(p is q for q in trainer.parameters)}
    assert trained_names and all(name.rsplit(".", 1)[1] in ("lora_a", "lora_b") for name in trained_names)
    assert not any(name.startswith("graph.encoder.") for name in trained_names)  # the declared frozen part
    before = trainer.evaluate()["eval_loss"]
    result = trainer.fit()
    after = result.metrics["eval_loss"]
    print(f"LoRA tiny.en eval loss: {before:.4f} -> {after:.4f} after {STEPS} steps")
    assert after < 0.8 * before, (before, after)

    batch = adapter.collate(records)
    with torch.no_grad():
        reference = adapter.module.graph(
            adapter.hooks.features(batch.audio.waveform, batch.audio.lengths), batch.tokens
        )

    adapters = {k: v for k, v in adapter.graph.state_dict().items() if k.rsplit(".", 1)[1] in ("lora_a", "lora_b")}
    torch.save(adapters, tmp_path / "adapters.pt")
    fresh, _ = _lora_model()
    missing, unexpected = fresh.runtime.module.load_state_dict(  # type: ignore[attr-defined]
        torch.load(tmp_path / "adapters.pt", weights_only=True), strict=False
    )
    assert not unexpected and all(k.rsplit(".", 1)[1] not in ("lora_a", "lora_b") for k in missing)
    with torch.no_grad():
        reloaded = fresh.runtime.module(adapter.hooks.features(batch.audio.waveform, batch.audio.lengths), batch.tokens)  # type: ignore[attr-defined]
    assert torch.equal(reloaded, reference)

    merged = plan.portable_state_dict()  # type: ignore[attr-defined]
    plain = AutoModel.from_pretrained(model_type="asr_whisper").load_for_training()
    plain.runtime.module.load_state_dict(merged, strict=True)
    with torch.no_grad():
        exported = plain.runtime.module(adapter.hooks.features(batch.audio.waveform, batch.audio.lengths), batch.tokens)
    assert float((exported - reference).abs().max()) < 1e-3


def test_resume_refuses_a_checkpoint_written_under_another_optimization_plan(tmp_path: Path) -> None:
    from voicehub.training import ResumeMismatchError
    from voicehub_training_data import speaker_records

    records = speaker_records(2, 1)
    spec = get_training_spec("sv_xvector")
    config = TrainerConfig(max_steps=1, batch_size=2, learning_rate=1e-3)
    model = AutoModel.from_pretrained(model_type="sv_xvector")
    plan = model.apply_optimization_plan(("lora",), mode="training")
    adapter = AutoTrainingAdapter.from_host(model, spec, records=records)
    trainer = Trainer(adapter, config, train_records=records, output_dir=tmp_path, optimization=plan)
    trained = {name for name, p in adapter.module.named_parameters() if any(p is q for q in trainer.parameters)}
    assert trained == {"graph.embedding.lora_a", "graph.embedding.lora_b", "head.weight"}  # adapters + the AM head
    trainer.fit()
    plain = AutoModel.from_pretrained(model_type="sv_xvector")
    adapter = AutoTrainingAdapter.from_host(plain, spec, records=records)
    with pytest.raises(ResumeMismatchError, match=r"optimization: saved \[\{'configuration'"):
        Trainer(adapter, config, train_records=records, output_dir=tmp_path).fit()

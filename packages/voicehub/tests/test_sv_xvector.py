"""The ``sv_xvector`` wrapper: no pretrained weights, train -> save_pretrained -> from_pretrained -> embed/verify."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from voicehub.architectures.xvector import XVectorConfig
from voicehub.core import CheckpointError, ConfigError, SpeakerOutput, load_audio
from voicehub.models.sv_xvector.config import SVXVectorConfig
from voicehub.models.sv_xvector.wrapper import XVectorSpeakerVerifier

ROOT = Path(__file__).resolve().parents[3]
SYNTHETIC = ROOT / "tests" / "data" / "synthetic"
SPEAKERS = ("flite_slt", "flite_awb", "espeak_us_m1")


def test_inference_without_a_checkpoint_explains_there_are_no_pretrained_weights() -> None:
    model = XVectorSpeakerVerifier(device="cpu")
    with pytest.raises(CheckpointError, match=r"no pretrained weights.*load_for_training"):
        model.embed(SYNTHETIC / "flite_slt_1.flac")


def test_train_save_reload_and_embed_round_trip(tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = XVectorSpeakerVerifier(
        SVXVectorConfig(encoder=XVectorConfig(channels=32, embedding_dim=16, num_classes=3)), device="cpu"
    )
    runtime = model.load_for_training().runtime.module
    assert runtime.training and runtime.config.num_classes == 3
    waves = [load_audio(SYNTHETIC / f"{s}_{n}.flac").samples[:12000] for s in SPEAKERS for n in (1, 2)]
    batch = torch.from_numpy(np.stack(waves))
    labels = torch.tensor([0, 0, 1, 1, 2, 2])
    losses = []
    for _ in range(2):
        runtime.zero_grad()
        loss = runtime.loss(batch, labels)
        loss.backward()
        with torch.no_grad():
            for group in runtime.trainable_param_groups():
                for param in group["params"]:
                    param.add_(param.grad, alpha=-0.05)
        losses.append(float(loss.detach()))
    assert losses[1] < losses[0]
    model.load()  # back to inference, same weights
    files = [SYNTHETIC / "flite_slt_3.flac", SYNTHETIC / "espeak_us_m1_4.flac"]
    together = model.embed(files)
    assert all(isinstance(o, SpeakerOutput) and o.embedding.shape == (16,) for o in together)
    alone = model.embed(files[1])
    assert np.abs(together[1].embedding - alone.embedding).max() < 1e-4  # padded batch == single
    saved = model.save_pretrained(tmp_path / "xv")
    assert (saved / "encoder" / "config.json").is_file()
    reloaded = XVectorSpeakerVerifier.from_pretrained(saved, device="cpu")
    again = reloaded.embed(files)
    for first, second in zip(together, again, strict=True):
        np.testing.assert_array_equal(first.embedding, second.embedding)
    decision = reloaded.verify(files[0], files[1])
    assert decision.scoring == "cosine" and decision.threshold == 0.5
    assert decision.score == pytest.approx(
        float(again[0].embedding @ again[1].embedding)
        / float(np.linalg.norm(again[0].embedding) * np.linalg.norm(again[1].embedding)),
        abs=1e-6,
    )


def test_a_saved_directory_of_another_model_is_refused(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(CheckpointError, match=r"empty: no x-vector checkpoint"):
        XVectorSpeakerVerifier.from_pretrained(tmp_path / "empty", device="cpu").load()


def test_saving_again_into_the_same_directory_replaces_the_encoder_and_keeps_other_files(tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = XVectorSpeakerVerifier(SVXVectorConfig(encoder=XVectorConfig(channels=32, embedding_dim=16)), device="cpu")
    model.load_for_training()
    model.load()
    target = model.save_pretrained(tmp_path / "xv")
    (target / "notes.txt").write_text("mine")
    with torch.no_grad():
        model.runtime.module.embedding.bias.add_(1.0)  # a different encoder, saved over the first
    model.save_pretrained(target)
    assert sorted(p.name for p in target.iterdir()) == [
        ".voicehub-saved.json",
        "config.json",
        "encoder",
        "inference_options.json",
        "notes.txt",
    ]
    clip = SYNTHETIC / "flite_slt_3.flac"
    reloaded = XVectorSpeakerVerifier.from_pretrained(target, device="cpu")
    np.testing.assert_array_equal(reloaded.embed(clip).embedding, model.embed(clip).embedding)
    assert [p.name for p in tmp_path.iterdir()] == ["xv"]  # no staging or retired directory left


def test_a_version_1_config_with_copied_encoder_fields_migrates_to_the_nested_graph_config() -> None:
    old = {
        "type": "sv_xvector",
        "model_type": "sv_xvector",
        "schema_version": 1,
        "sample_rate": 16000,
        "channels": 64,
        "embedding_dim": 32,
        "num_classes": 5,
    }
    config = SVXVectorConfig.from_dict(old)
    assert config.encoder == XVectorConfig(channels=64, embedding_dim=32, num_classes=5)
    assert config.sample_rate == 16000 and SVXVectorConfig.from_json(config.to_json()) == config
    with pytest.raises(ConfigError, match="sample_rate must be 16000"):
        SVXVectorConfig.from_dict({**old, "sample_rate": 8000})


@pytest.mark.slow
def test_sv_xvector_scores_with_a_plda_backend_like_every_sv_model(tmp_path: Path) -> None:
    """The PLDA back-end lives with the task: an x-vector model fits, attaches, saves and reloads one."""
    torch.manual_seed(0)
    model = XVectorSpeakerVerifier(SVXVectorConfig(encoder=XVectorConfig(channels=64, embedding_dim=32)), device="cpu")
    model.load_for_training()
    model.load()
    clips = sorted(SYNTHETIC.glob("*.flac"))
    labels = [path.stem.rsplit("_", 1)[0] for path in clips]
    backend = model.fit_backend([str(p) for p in clips], labels, calibrate=False)
    a, b = model.embed([SYNTHETIC / "flite_slt_1.flac", SYNTHETIC / "flite_slt_2.flac"])
    decision = model.score_embeddings(a, b)
    assert decision.scoring == "plda" and decision.threshold == 0.0
    assert decision.score == pytest.approx(float(backend.score(a.embedding, b.embedding)[0, 0]), abs=1e-12)
    assert model.score_embeddings(a, b, scoring="cosine").scoring == "cosine"
    saved = model.save_pretrained(tmp_path / "xv")
    assert sorted(p.name for p in (saved / "backend").iterdir()) == ["plda.h5", "transform.h5"]
    reloaded = XVectorSpeakerVerifier.from_pretrained(saved, device="cpu")
    assert reloaded.backend is None  # nothing is read before the load
    again = reloaded.verify(SYNTHETIC / "flite_slt_1.flac", SYNTHETIC / "flite_slt_2.flac")
    assert reloaded.backend is not None and again.scoring == "plda"
    assert again.score == pytest.approx(decision.score, abs=1e-9)

"""ECAPA-style x-vector: training steps on real speech, padding invariance, the HyperTorchModel battery,
and the stored version-1 checkpoint (``tests/data/xvector_v1_legacy.pth``, see its generator script)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from voicehub.architectures.errors import CheckpointMismatchError
from voicehub.architectures.xvector import XVector, XVectorConfig
from voicehub.components import MelSpectrogramConfig
from voicehub.core import AudioError, ConfigError, UnknownConfigKeyError, load_audio
from voicehub.hyperion.errors import HyperionFileError
from voicehub.hyperion.torch import HyperTorchModel

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "tests" / "data"
LEGACY = Path(__file__).resolve().parent / "data" / "xvector_v1_legacy.pth"
SPEAKERS = ("flite_slt", "flite_awb", "espeak_us_m1", "espeak_gb_f3")


def _small_config(**changes: object) -> XVectorConfig:
    frontend = MelSpectrogramConfig(
        n_fft=512, win_length=400, num_mel_bins=24, f_min=20.0, f_max=7600.0, mel_scale="htk", mel_norm=None, log=True
    )
    fields: dict[str, object] = {
        "frontend": frontend, "channels": 32, "dilations": (2, 3), "res2net_scale": 4, "se_bottleneck": 16,
        "aggregation_channels": 64, "attention_channels": 16, "embedding_dim": 16, "num_classes": 4,
    }  # fmt: skip
    return XVectorConfig(**(fields | changes))  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def speech_batch() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """12 real synthetic-voice utterances of 4 speakers, 1.5 s or less, zero-padded."""
    waves, labels = [], []
    for label, speaker in enumerate(SPEAKERS):
        for n in (1, 2, 3):
            waves.append(
                torch.from_numpy(load_audio(DATA / "synthetic" / f"{speaker}_{n}.flac").samples[: 24000 - 800 * n])
            )
            labels.append(label)
    lengths = torch.tensor([len(w) for w in waves])
    batch = torch.stack([nn_pad(w, int(lengths.max())) for w in waves])
    return batch, lengths, torch.tensor(labels)


def nn_pad(wave: torch.Tensor, size: int) -> torch.Tensor:
    return torch.nn.functional.pad(wave, (0, size - wave.shape[0]))


def test_a_few_sgd_steps_on_real_speech_reduce_the_aam_loss(speech_batch: tuple[torch.Tensor, ...]) -> None:
    batch, lengths, labels = speech_batch
    torch.manual_seed(0)
    model = XVector(_small_config())
    model.train()
    losses = []
    for _ in range(5):
        model.zero_grad()
        loss = model.loss(batch, labels, lengths)
        loss.backward()
        with torch.no_grad():  # plain SGD over the model's parameter groups
            for group in model.trainable_param_groups():
                for param in group["params"]:
                    param.add_(param.grad, alpha=-0.05)
        losses.append(float(loss.detach()))
    assert losses[-1] < 0.3 * losses[0], losses


def test_batched_embeddings_equal_one_by_one_despite_padding(speech_batch: tuple[torch.Tensor, ...]) -> None:
    batch, lengths, _ = speech_batch
    torch.manual_seed(1)
    model = XVector(_small_config()).eval()
    with torch.no_grad():
        together = model(batch, lengths)
        apart = torch.cat([model(batch[i : i + 1, : int(n)]) for i, n in enumerate(lengths)])
    assert together.shape == (12, 16) and together.dtype == torch.float32 and together.device == model.device
    assert (together - apart).abs().max() < 1e-4


def test_frozen_and_embedding_only_train_modes(speech_batch: tuple[torch.Tensor, ...]) -> None:
    model = XVector(_small_config())
    model.set_train_mode("ft-embed-affine")
    trainable = {name for name, p in model.named_parameters() if p.requires_grad}
    assert trainable == {"embedding.weight", "embedding.bias", "head_weight"}
    model.set_train_mode("frozen")
    model.train()
    assert not model.training and not model.pool_norm.training


def test_config_round_trip_keeps_defaults_and_nested_frontend() -> None:
    default = XVectorConfig()
    assert (default.channels, default.embedding_dim, default.frontend.num_mel_bins) == (512, 192, 80)
    model = XVector(_small_config(bias_weight_decay=0.0))
    cfg = model.get_config()
    assert cfg["schema_version"] == 2 and cfg["cos_scale"] == 30.0 and cfg["frontend"]["mel_scale"] == "htk"
    assert XVector.from_config(cfg).config == model.config
    with pytest.raises(UnknownConfigKeyError, match="known keys"):
        XVector.from_config(cfg | {"chanels": 8})


@pytest.mark.parametrize(
    ("changes", "message"),
    [({"channels": 30}, "divisible"), ({"dilations": ()}, "dilations"), ({"margin": 2.0}, "margin")],
)
def test_invalid_config_raises_naming_field(changes: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        _small_config(**changes)


def test_forward_errors_and_headless_model() -> None:
    model = XVector(_small_config(num_classes=0)).eval()
    assert model.head_weight is None
    with pytest.raises(AudioError, match=r"waveform \(batch, num_samples\), got \(16000,\)"):
        model(torch.zeros(16000))
    with pytest.raises(ConfigError, match="num_classes > 0"):
        model.logits(torch.zeros(2, 16))
    with pytest.raises(AudioError, match="lengths"):
        model(torch.zeros(2, 16000), torch.tensor([16000]))


@pytest.mark.slow
def test_save_and_auto_load_in_fresh_process_is_bit_exact(tmp_path: Path) -> None:
    torch.manual_seed(2)
    model = XVector(_small_config()).eval()
    wave = torch.from_numpy(load_audio(DATA / "librivox" / "sense_and_sensibility_01_austen_64kb-0880.wav").samples)
    with torch.no_grad():
        reference = model(wave[None])
    torch.save(reference, tmp_path / "ref.pt")
    paths = [model.save(tmp_path / "xv_dir"), model.save(tmp_path / "xv.pth")]
    for path in paths:
        loaded = XVector.load(path)
        for key, value in model.state_dict().items():
            assert torch.equal(value, loaded.state_dict()[key]), key
    script = f"""
import torch
from voicehub.hyperion.torch import HyperTorchModel
torch.set_num_threads({torch.get_num_threads()})  # same float summation order as the parent
from voicehub.core import load_audio
wav_path = {str(DATA / "librivox" / "sense_and_sensibility_01_austen_64kb-0880.wav")!r}
wave = torch.from_numpy(load_audio(wav_path).samples)
for path in {[str(p) for p in paths]!r}:
    model = HyperTorchModel.auto_load(path)
    assert type(model).__name__ == "XVector" and model.config.num_classes == 4
    with torch.no_grad():
        out = model(wave[None])
    assert torch.equal(out, torch.load({str(tmp_path / "ref.pt")!r}, weights_only=True)), (out,)
print("ok")
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "ok"


# ----------------------------------------------------------------------------- stored old artifact
def test_stored_version_1_checkpoint_is_migrated() -> None:
    raw = torch.load(LEGACY, weights_only=True)
    assert "s" in raw["model_cfg"] and "module.frontend.filters" in raw["model_state_dict"]
    model = HyperTorchModel.auto_load(LEGACY)
    assert isinstance(model, XVector)
    assert model.config.cos_scale == 20.0 and model.config.dilations == (2, 3)
    state = model.state_dict()
    stored = {k.removeprefix("module."): v for k, v in raw["model_state_dict"].items()}
    assert set(stored) - set(state) == {"frontend.window", "frontend.filters"}
    for key, value in state.items():
        assert torch.equal(value, stored[key]), key
    assert torch.allclose(model.frontend.filters, stored["frontend.filters"])
    wave = torch.from_numpy(load_audio(DATA / "librivox" / "sense_and_sensibility_01_austen_64kb-0880.wav").samples)
    with torch.no_grad():
        out = model(wave[None])[0]
    assert (out - raw["reference_embedding"]).abs().max() < 1e-5


def test_version_1_checkpoint_with_another_front_end_is_refused(tmp_path: Path) -> None:
    raw = torch.load(LEGACY, weights_only=True)
    raw["model_state_dict"]["module.frontend.filters"] = raw["model_state_dict"]["module.frontend.filters"] * 2
    path = tmp_path / "xv_v1_other_frontend.pth"
    torch.save(raw, path)
    with pytest.raises(CheckpointMismatchError, match=r"xv_v1_other_frontend\.pth: stored frontend\.filters"):
        HyperTorchModel.auto_load(path)


def test_version_1_config_with_both_scale_keys_is_refused(tmp_path: Path) -> None:
    raw = torch.load(LEGACY, weights_only=True)
    raw["model_cfg"]["cos_scale"] = 30.0
    path = tmp_path / "xv_v1_both.pth"
    torch.save(raw, path)
    with pytest.raises(HyperionFileError, match=r"xv_v1_both\.pth: model_cfg: .*both 's' and 'cos_scale'"):
        XVector.load(path)

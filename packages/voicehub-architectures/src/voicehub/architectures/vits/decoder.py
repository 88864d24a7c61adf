"""The HiFi-GAN decoder of VITS: latent frames (batch, C, T) -> waveform (batch, T * hop_length).

Upsampling transposed convolutions, each followed by multi-receptive-field residual blocks (Kong et al.
2020, "HiFi-GAN", section 2.1; VITS uses it as its decoder, Kim et al. 2021, section 2.4). The
convolutions run as (1, k) 2-D convolutions on channels-last input (:class:`TimeConv1d`), which oneDNN
executes faster on the CPU than 1-D ones; parameters keep the Conv1d shapes of the checkpoints.

Inference on the CPU in float32 (no autograd) takes a oneDNN path (:func:`onednn_usable`): each
convolution's weight is reordered into oneDNN's blocked layout once and kept (rebuilt when the weight
changes), the residual addition is fused into the convolution as a post-op writing into the residual
buffer, the final tanh into the last convolution, the leaky ReLUs reuse one scratch buffer, the upsampling
writes into a kept buffer (:meth:`TimeConvTranspose1d.onednn_phases`, one item at a time), and the
padding of a bucketed length is cleared by zeroing the tail instead of multiplying by a mask. Same
arithmetic, fewer passes over 8 MB activations, no per-call weight reorders and, for one item with
type-2 residual blocks (Piper's medium voices), no fresh stage-sized buffer after the first call of
a length (a type-1 block's first convolution still returns a new tensor); outputs equal the plain
path up to float rounding.
"""

from __future__ import annotations

import functools
import math
import threading
from collections.abc import Callable, Sequence
from typing import cast

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from voicehub.architectures.parallel import idle_threads_sleep, map_single_threaded
from voicehub.architectures.vits.config import VITSConfig
from voicehub.architectures.vits.layers import PointwiseConv1d, onednn_usable, sequence_mask

LRELU_SLOPE = 0.1
"""Leaky-ReLU slope inside the HiFi-GAN decoder (the last activation uses PyTorch's default 0.01)."""

POLYPHASE_BLOCK = 8
"""Samples per step of :meth:`TimeConv1d.onednn_polyphase` (measured fastest of 4, 8 and 16)."""

PACKED_VARIANTS_KEPT = 8
"""Packs of one weight kept for different input shapes (:meth:`TimeConvTranspose1d.onednn` and
:meth:`TimeConvTranspose1d.onednn_phases`, which the decoder uses), the least recently used dropped
first: two tiles of a stage and the lengths of sentences in rotation
(:data:`~voicehub.architectures.vits.model.SHAPE_BUCKET`, :data:`TILE_BUCKET`), without holding one
pack per length ever seen. Bound for the joe-medium voice: 8 x 2.6 MB for its three upsampling layers.
A length that missed repacks the three (~0.5 ms, measured 0.36 + 0.10 + 0.04 ms on two threads)."""

TILED_MIN_FRAMES = 64
"""Latent frames from which one item is decoded in time tiles on several threads
(:meth:`Generator._forward_tiled`); shorter inputs take the one-pass path."""

TILE_BUCKET = 8
"""Latent frames: a tile of :meth:`Generator._forward_tiled` is rounded up to a multiple of this.
oneDNN builds its kernels per input shape (75-120 ms for a new decoder length); rounded tiles repeat
from call to call, and rounding each tile by 8 frames wastes less than rounding the whole signal by
32 (:data:`~voicehub.architectures.vits.model.SHAPE_BUCKET`): a 236-frame sentence on two threads
decodes 2 x 120 frames instead of 256."""

WORKSPACE_MAX_BYTES = 32 * 2**20
"""Largest activation buffer the oneDNN path keeps between calls, per name and thread (32 MB holds
the last stage of a ~11 s sentence at 22 kHz): five on the one-pass path (a stage's activated input,
scratch, block output, sum and upsampled input); a thread decoding in tiles keeps those and the
tile's input, and the caller of :meth:`Generator._forward_tiled` two stage outputs. A fresh buffer
costs its first touch in page faults on every call: glibc returns a freed buffer at the top of its
heap to the system, and the next call faults it in again (2.2 us a 4 kB page in isolation on this
VM, 2026-12-03; a 2.8 s sentence took ~4000 faults a call with fresh upsampled activations, and
0.963x the time without them, the two alternated in one process); ONNX Runtime keeps its buffers
in an arena for the same reason. Longer sentences get fresh buffers."""


class _PackedWeight:
    """A weight (times a scale) prepared for oneDNN (reordered, or rearranged), keyed by the source
    tensor's storage and version, and by a ``variant`` (the input shape a pack was made for, where the
    caller asks) with up to :data:`PACKED_VARIANTS_KEPT` variants kept, the least recently used dropped.

    Never saved, copied or pickled: a copy of the module starts empty and packs again on first use.
    """

    __slots__ = ("key", "lock", "packs")

    def __init__(self) -> None:
        self.key: tuple[int, int, float] | None = None
        self.packs: dict[tuple[int, ...], Tensor] = {}
        self.lock = threading.Lock()

    def get(
        self, weight: Tensor, scale: float, pack: Callable[[Tensor], Tensor], variant: tuple[int, ...] = ()
    ) -> Tensor:
        """The packed ``weight * scale`` (the weight, unsqueezed to (C_out, C_in, 1, k) or (C_in, C_out,
        1, k), handed to ``pack``) for ``variant``; a changed weight or scale drops every variant."""
        key = (weight.data_ptr(), weight._version, scale)
        with self.lock:
            if self.key != key:
                self.key, self.packs = key, {}
            packed = self.packs.pop(variant, None)
            if packed is not None:
                self.packs[variant] = packed  # the most recently used is last
        if packed is None:
            source = weight.detach().unsqueeze(2)
            packed = pack(source if scale == 1.0 else source * scale)
            with self.lock:
                if self.key == key:
                    if len(self.packs) >= PACKED_VARIANTS_KEPT:
                        del self.packs[next(iter(self.packs))]  # the least recently used
                    self.packs[variant] = packed
        return packed

    def __deepcopy__(self, memo: dict[int, object]) -> _PackedWeight:
        return _PackedWeight()

    def __reduce__(self) -> tuple[type[_PackedWeight], tuple[()]]:
        return (_PackedWeight, ())


class _Workspace(threading.local):
    """Activation buffers of the oneDNN path, one set per thread (concurrent calls on one model do
    not share them). Never saved, copied or pickled: a copy starts empty."""

    def __init__(self) -> None:
        self.buffers: dict[str, Tensor] = {}

    def __deepcopy__(self, memo: dict[int, object]) -> _Workspace:
        return _Workspace()

    def __reduce__(self) -> tuple[type[_Workspace], tuple[()]]:
        return (_Workspace, ())


def _polyphase_weight(weight: Tensor, padding: int, block: int) -> Tensor:
    """The (block, block * C_in, 1, 3) weight of :meth:`TimeConv1d.onednn_polyphase` from a
    (1, C_in, 1, k) one: output sample ``i`` of a block takes input sample ``j`` of the block at
    offset ``m - 1`` (m = 0, 1, 2) through tap ``block * (m - 1) + j - i + padding`` when it is in
    0..k-1, else zero. Input channels are ordered (sample, channel), as in channels-last memory."""
    taps = weight[0, :, 0]  # (C_in, k)
    channels, kernel_size = taps.shape
    out = weight.new_zeros(block, block, channels, 3)  # (i, j, channel, m)
    for i in range(block):
        for j in range(block):
            for m in range(3):
                tap = block * (m - 1) + j - i + padding
                if 0 <= tap < kernel_size:
                    out[i, j, :, m] = taps[:, tap]
    return out.reshape(block, block * channels, 1, 3)


def _phase_weight(weight: Tensor, stride: int) -> Tensor:
    """The (stride * C_out, C_in, 1, 2) weight of :meth:`TimeConvTranspose1d.onednn_phases` from a
    transposed convolution's (C_in, C_out, 1, 2 * stride) one: output channel ``u * C_out + c`` (phase
    ``u`` of a block of ``stride`` samples, channel ``c``) takes input sample ``q - 1 + t`` through tap
    ``(1 - t) * stride + u`` (t = 0, 1)."""
    c_in, c_out = weight.shape[0], weight.shape[1]
    taps = weight[:, :, 0].reshape(c_in, c_out, 2, stride)  # tap k = a * stride + u
    return taps.permute(3, 1, 0, 2).flip(-1).reshape(stride * c_out, c_in, 1, 2).contiguous()


class TimeConv1d(nn.Conv1d):
    """A Conv1d (same parameters) evaluated as a (1, k) Conv2d on channels-last (batch, C, 1, T) input.

    oneDNN runs channels-last 2-D convolutions without reordering activations to a blocked layout
    and back at every layer; on the decoder's long, narrow signals (32 channels x 90k samples) this
    is 2-3x faster than ``conv1d`` on the CPU, for the same arithmetic.
    """

    def forward(self, x: Tensor) -> Tensor:
        return F.conv2d(
            x,
            self.weight.unsqueeze(2),
            self.bias,
            (1, self.stride[0]),
            (0, int(self.padding[0])),
            (1, self.dilation[0]),
            self.groups,
        )

    def _onednn_args(self) -> tuple[list[int], list[int], list[int], int]:
        return [0, int(self.padding[0])], [1, self.stride[0]], [1, self.dilation[0]], self.groups

    def _packed(self, x: Tensor, scale: float = 1.0) -> Tensor:
        if "_packed_weight" not in self.__dict__:
            self._packed_weight = _PackedWeight()
        padding, stride, dilation, groups = self._onednn_args()
        return self._packed_weight.get(
            self.weight,
            scale,
            lambda w: torch.ops.mkldnn._reorder_convolution_weight(w, padding, stride, dilation, groups, list(x.shape)),
        )

    def onednn(
        self, x: Tensor, activation: str = "none", scalars: Sequence[float] = (), *, scale: float = 1.0
    ) -> Tensor:
        """:meth:`forward` of ``x * scale`` with a fused ``activation`` ("none", "tanh", "leaky_relu" with
        ``scalars`` [slope]); the scale is folded into the packed weight.

        ``x`` is channels-last (batch, C_in, 1, T) and :func:`onednn_usable`; the output is channels-last.
        """
        padding, stride, dilation, groups = self._onednn_args()
        out: Tensor = torch.ops.mkldnn._convolution_pointwise(
            x, self._packed(x, scale), self.bias, padding, stride, dilation, groups, activation, list(scalars), ""
        )
        return out

    def polyphase_ready(self, x: Tensor) -> bool:
        """Whether :meth:`onednn_polyphase` can compute this convolution on ``x`` (batch, C_in, 1, T):
        one output channel, stride 1, no dilation or groups, "same" zero padding (an odd kernel
        reaching at most one block to either side) and ``T`` a multiple of :data:`POLYPHASE_BLOCK`."""
        padding, kernel_size = self.padding[0], self.kernel_size[0]
        return (
            self.out_channels == 1
            and self.stride[0] == 1
            and self.dilation[0] == 1
            and self.groups == 1
            and self.padding_mode == "zeros"
            and isinstance(padding, int)
            and 2 * padding == kernel_size - 1
            and padding <= POLYPHASE_BLOCK
            and x.shape[3] % POLYPHASE_BLOCK == 0
        )

    def onednn_polyphase(self, x: Tensor, activation: str = "none", *, scale: float = 1.0) -> Tensor:
        """:meth:`onednn` for one output channel, computed as a convolution over blocks of samples.

        oneDNN runs a one-output-channel convolution at ~3 GFLOP/s where the decoder's other
        convolutions reach 55-70 (HiFi-GAN's ``conv_post``, 32 -> 1 channel, k = 7, over 65536
        samples: ~5.5 ms on one AVX2 core). Channels-last (batch, C, 1, T) is a (T, C) matrix in
        memory, so it is also a (T / b, b * C) one: a signal of ``T / b`` steps, each holding ``b``
        consecutive samples (b = :data:`POLYPHASE_BLOCK`). Every output block depends on its own
        input block and its two neighbours, so the convolution is a k = 3, ``b * C`` -> ``b``
        channel convolution over blocks, whose output, channels-last, is the (T,) waveform in
        order. It does ~3.4x the multiply-adds (the blocked weight is mostly zeros) in a shape
        oneDNN runs well: measured 3.0-3.1 ms against 5.3-5.4 ms on one core and 2.2-3.0 against
        3.2-5.5 ms on two (interleaved, min of 40, two runs; 4- and 16-sample blocks: 4.0 and 3.7 ms
        on one core; one (T, C) x (C, k) GEMM and a sum of its k shifted diagonals: 2.8-4.2 ms for
        the GEMM alone, BLAS being slow at k = 7 columns). The sums are the same, and measured
        equal to the bit.

        Args:
            x: float32 channels-last (batch, C_in, 1, T), :meth:`polyphase_ready`.
            activation: "none" or "tanh", fused.
            scale: folded into the packed weight, as in :meth:`onednn`.

        Returns:
            float32 (batch, T).
        """
        batch, channels, _, length = x.shape
        block = POLYPHASE_BLOCK
        blocks = x.permute(0, 2, 3, 1).reshape(batch, length // block, block * channels).transpose(1, 2).unsqueeze(2)
        padding, stride, dilation = [0, 1], [1, 1], [1, 1]
        if "_packed_polyphase" not in self.__dict__:
            self._packed_polyphase = _PackedWeight()
        weight = self._packed_polyphase.get(
            self.weight,
            scale,
            lambda w: torch.ops.mkldnn._reorder_convolution_weight(
                _polyphase_weight(w, int(self.padding[0]), block), padding, stride, dilation, 1, list(blocks.shape)
            ),
        )
        bias = None if self.bias is None else self.bias.detach().expand(block).contiguous()
        out: Tensor = torch.ops.mkldnn._convolution_pointwise(
            blocks, weight, bias, padding, stride, dilation, 1, activation, [], ""
        )
        return out.permute(0, 2, 3, 1).reshape(batch, length)

    def onednn_add_(self, x: Tensor, residual: Tensor) -> Tensor:
        """``residual += forward(x)``, the sum fused into the convolution as a oneDNN post-op; returns ``residual``."""
        padding, stride, dilation, groups = self._onednn_args()
        torch.ops.mkldnn._convolution_pointwise_(
            residual, x, self._packed(x), self.bias, padding, stride, dilation, groups, "add", None, None, [], None
        )
        return residual


class TimeConvTranspose1d(nn.ConvTranspose1d):
    """A ConvTranspose1d evaluated as a (1, k) transposed Conv2d on channels-last input (see :class:`TimeConv1d`)."""

    def forward(self, x: Tensor, output_size: list[int] | None = None) -> Tensor:
        """(batch, C_in, 1, T) channels-last -> (batch, C_out, 1, T_out); ``output_size`` picks the
        output padding as :class:`torch.nn.ConvTranspose1d` does (its last entry is T_out).

        Raises:
            ValueError: for an ``output_size`` that no output padding reaches (torch's message).
        """
        output_padding = self._output_padding(
            x[:, :, 0],  # (batch, C_in, T): the sizes nn.ConvTranspose1d reads
            output_size,
            list(self.stride),
            [int(self.padding[0])],
            list(self.kernel_size),
            1,
            list(self.dilation),
        )
        return F.conv_transpose2d(
            x,
            self.weight.unsqueeze(2),
            self.bias,
            (1, self.stride[0]),
            (0, int(self.padding[0])),
            (0, output_padding[0]),
            self.groups,
            (1, self.dilation[0]),
        )

    def onednn(self, x: Tensor, *, scale: float = 1.0) -> Tensor:
        """:meth:`forward` of ``x * scale`` through oneDNN's transposed convolution (any batch, groups and
        padding), the weight packed once per input shape and thread count.

        oneDNN 3.13's transposed convolution runs HiFi-GAN's upsampling at 60-75 GFLOP/s on one AVX2
        core, as fast as its regular convolution. The same layer as a 2-tap one into a kept buffer
        (:meth:`onednn_phases`, zeroing included) took 1.03-1.05x its time per layer in a tight loop
        where neither page-faults (2026-12-03, two threads, AVX-512, minima of 60: 0.39 against 0.37,
        0.72 against 0.69 and 0.75 against 0.71 ms for a 160-frame sentence's three layers). The decoder takes
        :meth:`onednn_phases` where it applies (one item), for its output buffer, not for speed.

        oneDNN picks the weight's blocked layout by input shape and threads, and converts a weight
        packed for another layout at every call by a generic reorder. The joe-medium voice's
        256 -> 128, k = 16 layer on one thread, packed on 20 frames, took it on 5, 6, 9, 11, 12, ...
        and every length from 51 frames on (packed on 256 frames: on 1-4, 7, 8, 10, ... 50): 46 ms
        a call, against 3.6 ms for the layer on 256 frames. Measured, a decoder call after one on 20
        frames, one thread, min of 15: 101.8 -> 65.1 ms on 64 frames, 233.8 -> 190.9 on 256; on two threads, where
        these lengths share a layout, 36.2 -> 37.7 and 128.8 -> 137.0 (the new shape's pack, within
        noise). A new shape costs the reorder from the plain layout (0.03-0.33 ms per layer). The
        model's own decoder lengths (multiples of 32 frames, 32-1024 scanned) and the tiles of
        :meth:`Generator._forward_tiled` all fell in one layout on this voice, one or two threads:
        there the per-shape packs cost those reorders and save nothing; they guard other lengths
        (direct calls) and other voices' shapes.
        """
        if "_packed_weight" not in self.__dict__:
            self._packed_weight = _PackedWeight()
        padding, output_padding = [0, int(self.padding[0])], [0, self.output_padding[0]]
        stride, dilation = [1, self.stride[0]], [1, self.dilation[0]]
        weight = self._packed_weight.get(
            self.weight,
            scale,
            lambda w: torch.ops.mkldnn._reorder_convolution_transpose_weight(
                w, padding, output_padding, stride, dilation, self.groups, list(x.shape)
            ),
            (*x.shape, torch.get_num_threads()),
        )
        out: Tensor = torch.ops.mkldnn._convolution_transpose_pointwise(
            x, weight, self.bias, padding, output_padding, stride, dilation, self.groups, "none", [], ""
        )
        return out

    def phases_ready(self) -> bool:
        """Whether :meth:`onednn_phases` computes this layer: one group, no dilation, zero padding of at
        most one stride, no output padding and a kernel of two strides (HiFi-GAN's upsampling layers)."""
        stride, padding = self.stride[0], self.padding[0]
        return (
            self.groups == 1
            and self.dilation[0] == 1
            and self.padding_mode == "zeros"
            and isinstance(padding, int)
            and 0 <= padding <= stride
            and self.output_padding[0] == 0
            and self.kernel_size[0] == 2 * stride
        )

    def onednn_phases(self, x: Tensor, out: Tensor, *, scale: float = 1.0) -> Tensor:
        """:meth:`onednn` written into the caller's buffer ``out``, as a regular convolution.

        With a kernel of two strides ``s``, output sample ``q * s + u - padding`` (0 <= u < s) depends
        on input samples ``q - 1`` and ``q`` only: the layer is a 2-tap convolution from C_in to
        ``s * C_out`` channels (a block of C_out output channels per phase ``u``,
        :func:`_phase_weight`) over the input padded by one sample on each side, whose channels-last
        (batch, s * C_out, 1, T + 1) output is, in memory, the channels-last (batch, C_out, 1,
        (T + 1) * s) upsampled signal shifted by ``padding`` samples. The same multiply-adds as the
        transposed convolution. Written into ``out`` (zeroed, then the convolution added as a oneDNN
        sum post-op), the output needs no fresh 1-8 MB tensor per call, whose pages the allocator
        returned to the system after the previous call and the next one faulted in again (see
        :data:`WORKSPACE_MAX_BYTES`; ONNX Runtime keeps its buffers in an arena). For one item the
        result is a dense channels-last tensor; for a batch with padding, rows with gaps between them.

        Args:
            x: float32 channels-last (batch, C_in, 1, T), :func:`onednn_usable`, and :meth:`phases_ready`.
            out: float32 channels-last (batch, C_out, 1, (T + 1) * stride) buffer (overwritten).
            scale: folded into the packed weight, as in :meth:`onednn`.

        Returns:
            the (batch, C_out, 1, T_out) view of ``out`` holding the layer's output, T_out = (T + 1) *
            stride - 2 * padding.
        """
        batch, _, _, length = x.shape
        stride, shift = self.stride[0], int(self.padding[0])
        blocks = out.permute(0, 2, 3, 1).view(batch, 1, length + 1, stride * self.out_channels).permute(0, 3, 1, 2)
        if "_packed_phases" not in self.__dict__:
            self._packed_phases = _PackedWeight()
        padding, unit = [0, 1], [1, 1]
        weight = self._packed_phases.get(
            self.weight,
            scale,
            lambda w: torch.ops.mkldnn._reorder_convolution_weight(
                _phase_weight(w, stride), padding, unit, unit, 1, list(x.shape)
            ),
            (*x.shape, torch.get_num_threads()),
        )
        bias = None if self.bias is None else self.bias.detach().repeat(stride)
        torch.ops.mkldnn._convolution_pointwise_(
            blocks.zero_(), x, weight, bias, padding, unit, unit, 1, "add", None, None, [], None
        )
        return out[:, :, :, shift : (length + 1) * stride - shift]


class ResBlock(nn.Module):
    """HiFi-GAN residual block: type 1 (dilated conv + plain conv per dilation) or type 2 (dilated convs)."""

    def __init__(self, channels: int, kernel_size: int, dilations: Sequence[int], kind: str) -> None:
        super().__init__()

        def conv(dilation: int) -> nn.Conv1d:
            return TimeConv1d(
                channels, channels, kernel_size, dilation=dilation, padding=(kernel_size - 1) * dilation // 2
            )

        self.kind = kind
        if kind == "1":
            self.convs1 = nn.ModuleList(conv(d) for d in dilations)
            self.convs2 = nn.ModuleList(conv(1) for _ in dilations)
        else:
            self.convs = nn.ModuleList(conv(d) for d in dilations)

    def forward(self, x: Tensor, mask: Tensor | None) -> Tensor:
        # Each convolution's fresh output takes the residual in place: at 32 x 90k samples every avoided
        # allocation saves a page-faulting 11 MB buffer.
        def masked(t: Tensor) -> Tensor:
            return t if mask is None else t.mul_(mask)

        if self.kind == "1":
            for conv1, conv2 in zip(self.convs1, self.convs2, strict=True):
                xt = F.leaky_relu_(conv1(masked(F.leaky_relu(x, LRELU_SLOPE))), LRELU_SLOPE)
                x = conv2(masked(xt)).add_(x)
        else:
            for conv in self.convs:
                x = conv(masked(F.leaky_relu(x, LRELU_SLOPE))).add_(x)
        return x

    def onednn(
        self, x: Tensor, activated: Tensor, scratch: Tensor, out: Tensor, clear: Callable[[Tensor], Tensor]
    ) -> Tensor:
        """:meth:`forward` on the oneDNN path, written into ``out``; ``x`` and ``activated`` are kept.

        Args:
            x: float32 channels-last (batch, C, 1, T).
            activated: ``clear(leaky_relu(x))``, shared by the blocks of a stage.
            scratch: a buffer like ``x`` for the later activated inputs (overwritten).
            out: a buffer like ``x`` for the result (overwritten; returned), or ``x`` itself when the
                caller no longer needs it (then no copy is made).
            clear: zeroes the padded tail of a (batch, C, 1, T) tensor in place and returns it (the
                mask of :meth:`forward`).
        """
        slope = [LRELU_SLOPE]
        # The copy stays (measured): oneDNN's binary-add post-op (``_convolution_pointwise.binary``, reading
        # x) returns a fresh tensor whose first touch page-faults, which made a last stage (32 channels x
        # 65536 samples) slower, 87.6 against 71.5 ms on one core (min of 20); even with malloc told to keep
        # freed memory (not a library's setting) it was a wash (63.3 against 66.6 ms at 32 channels, 65.6
        # against 60.9 at 64). And oneDNN fuses only ReLU, not leaky ReLU, after a sum, so the leaky ReLUs
        # cannot join the convolutions' residual adds.
        y = x if out is x else out.copy_(x)
        if self.kind == "1":
            for i, (conv1, conv2) in enumerate(zip(self.convs1, self.convs2, strict=True)):
                source = activated if i == 0 else clear(torch.ops.aten.leaky_relu.out(y, LRELU_SLOPE, out=scratch))
                activated_1 = cast(TimeConv1d, conv1).onednn(source, "leaky_relu", slope)
                cast(TimeConv1d, conv2).onednn_add_(clear(activated_1), y)
            return y
        for i, conv in enumerate(self.convs):
            source = activated if i == 0 else clear(torch.ops.aten.leaky_relu.out(y, LRELU_SLOPE, out=scratch))
            cast(TimeConv1d, conv).onednn_add_(source, y)
        return y


class Generator(nn.Module):
    """HiFi-GAN generator: latent frames (batch, inter_channels, T_y) -> waveform (batch, T_y * hop).

    Activations are kept as channels-last (batch, C, 1, T) tensors (see :class:`TimeConv1d`).
    """

    def __init__(self, config: VITSConfig) -> None:
        super().__init__()
        self.rates = config.upsample_rates
        self.num_kernels = len(config.resblock_kernel_sizes)
        channels = config.upsample_initial_channel
        self.conv_pre = TimeConv1d(config.inter_channels, channels, 7, padding=3)
        self.ups = nn.ModuleList()
        self.resblocks = nn.ModuleList()
        for rate, kernel in zip(config.upsample_rates, config.upsample_kernel_sizes, strict=True):
            self.ups.append(TimeConvTranspose1d(channels, channels // 2, kernel, rate, padding=(kernel - rate) // 2))
            channels //= 2
            for size, dilations in zip(config.resblock_kernel_sizes, config.resblock_dilation_sizes, strict=True):
                self.resblocks.append(ResBlock(channels, size, dilations, config.resblock))
        self.conv_post = TimeConv1d(channels, 1, 7, padding=3, bias=False)
        if config.speaker_channels:
            self.cond = PointwiseConv1d(config.speaker_channels, config.upsample_initial_channel, 1)

    def forward(
        self, z: Tensor, g: Tensor | None, frame_lengths: Tensor | None = None, threads: int | None = None
    ) -> Tensor:
        """Decode latent frames; ``frame_lengths`` (batch,) masks the padding of a ragged batch.

        One item of at least :data:`TILED_MIN_FRAMES` frames with two or more ``threads`` (default:
        the intra-op threads; a pool worker, which has one, passes the threads it may share the work
        with), when idle OpenMP threads sleep
        (:func:`~voicehub.architectures.parallel.idle_threads_sleep`), is decoded in time tiles on the
        pool (:meth:`_forward_tiled`); otherwise in one pass.
        """
        if onednn_usable(z) and self._onednn_modules():
            threads = torch.get_num_threads() if threads is None else threads
            if z.shape[0] == 1 and threads > 1 and z.shape[2] >= TILED_MIN_FRAMES and idle_threads_sleep():
                return self._forward_tiled(z, g, frame_lengths, threads)
            return self._forward_onednn(z, g, frame_lengths)
        mask = None
        if frame_lengths is not None:
            mask = sequence_mask(frame_lengths, z.shape[2]).unsqueeze(2)  # (batch, 1, 1, T)
        z = z.unsqueeze(2).contiguous(memory_format=torch.channels_last)
        x = self.conv_pre(z if mask is None else z * mask)
        if g is not None:
            x = x + self.cond(g).unsqueeze(2)
        for i, (rate, up) in enumerate(zip(self.rates, self.ups, strict=True)):
            x = F.leaky_relu_(x, LRELU_SLOPE)  # x is this loop's own tensor: in place is safe
            x = up(x if mask is None else x.mul_(mask))
            if mask is not None:
                mask = mask.repeat_interleave(rate, dim=3)
            blocks = self.resblocks[i * self.num_kernels : (i + 1) * self.num_kernels]
            total = blocks[0](x, mask)
            for block in blocks[1:]:
                total = total.add_(block(x, mask))
            x = total.div_(self.num_kernels)
        x = F.leaky_relu_(x)
        return torch.tanh_(self.conv_post(x if mask is None else x.mul_(mask)))[:, 0, 0]

    def _onednn_modules(self) -> bool:
        """Whether every convolution is still this module's own kind (a pass may have replaced some)."""
        return (
            all(isinstance(m, TimeConv1d) for m in (self.conv_pre, self.conv_post))
            and all(type(m) is TimeConvTranspose1d for m in self.ups)
            and all(
                isinstance(c, TimeConv1d)
                for block in self.resblocks
                for c in block.modules()
                if not isinstance(c, (ResBlock, nn.ModuleList))
            )
        )

    def _workspace(self, name: str, like: Tensor, *, width: int | None = None, channels: int | None = None) -> Tensor:
        """A channels-last float32 buffer shaped like ``like`` (with ``width`` samples and ``channels``
        channels, where given; contents undefined), kept between calls of this thread up to
        :data:`WORKSPACE_MAX_BYTES` (not a parameter or buffer: never saved). A larger request replaces
        the kept buffer; views of the old one stay valid."""
        batch, like_channels, height, like_width = like.shape
        width = like_width if width is None else width
        channels = like_channels if channels is None else channels
        size = batch * channels * height * width
        if size * like.element_size() > WORKSPACE_MAX_BYTES:
            return torch.empty(batch, height, width, channels, dtype=like.dtype, device=like.device).permute(0, 3, 1, 2)
        workspace: _Workspace = self.__dict__.setdefault("_onednn_workspace", _Workspace())
        kept = workspace.buffers
        flat = kept.get(name)
        if flat is None or flat.numel() < size or flat.device != like.device or flat.dtype != like.dtype:
            with torch.inference_mode(False):  # a normal tensor: writable in and outside inference mode
                flat = kept[name] = torch.empty(size, dtype=like.dtype, device=like.device)
        return flat[:size].view(batch, height, width, channels).permute(0, 3, 1, 2)

    def _forward_onednn(self, z: Tensor, g: Tensor | None, frame_lengths: Tensor | None) -> Tensor:
        """:meth:`forward` on the oneDNN path (see the module docstring); the same result."""
        lengths = None if frame_lengths is None else frame_lengths.tolist()
        samples_per_frame = 1

        def clear(t: Tensor) -> Tensor:
            if lengths is not None:
                for row, length in enumerate(lengths):
                    t[row, :, :, length * samples_per_frame :] = 0
            return t

        x = torch.empty(z.shape[0], z.shape[1], 1, z.shape[2], memory_format=torch.channels_last)
        x = self.conv_pre.onednn(clear(x.copy_(z.unsqueeze(2))))
        if g is not None:
            x = x.add_(self.cond(g).unsqueeze(2))
        # x holds num_kernels times a stage's output: leaky ReLU commutes with a positive scale, so the
        # division is folded into the next convolution's packed weight.
        scale = 1.0
        for i, rate in enumerate(self.rates):
            x = self._upsample(i, clear(F.leaky_relu_(x, LRELU_SLOPE)), scale)
            samples_per_frame *= rate
            x = self._stage_blocks(i, x, clear)
            scale = 1.0 / self.num_kernels
        return self._post(clear(F.leaky_relu_(x)), scale)

    def _upsample(self, stage: int, x: Tensor, scale: float) -> Tensor:
        """Stage ``stage``'s upsampling of the activated ``x * scale`` (channels-last, oneDNN path), into
        this thread's ``"upsampled"`` buffer where the layer allows
        (:meth:`TimeConvTranspose1d.onednn_phases`) and ``x`` holds one item: the result must be a
        dense channels-last tensor, for the residual sums fused into it in place, and a batch's rows
        cut out of the buffer would leave gaps between them."""
        up = cast(TimeConvTranspose1d, self.ups[stage])
        if not up.phases_ready() or (x.shape[0] > 1 and up.padding[0] != 0):
            return up.onednn(x, scale=scale)
        out = self._workspace("upsampled", x, channels=up.out_channels, width=(x.shape[3] + 1) * up.stride[0])
        return up.onednn_phases(x, out, scale=scale)

    def _stage_blocks(self, stage: int, x: Tensor, clear: Callable[[Tensor], Tensor]) -> Tensor:
        """The sum of stage ``stage``'s residual blocks on its upsampled ``x`` (channels-last, oneDNN
        path; ``x`` is overwritten), with ``clear`` zeroing what lies outside the signal."""
        activated = clear(torch.ops.aten.leaky_relu.out(x, LRELU_SLOPE, out=self._workspace("activated", x)))
        scratch, block_out = self._workspace("scratch", x), self._workspace("block", x)
        blocks = [cast(ResBlock, b) for b in self.resblocks[stage * self.num_kernels : (stage + 1) * self.num_kernels]]
        total = blocks[0].onednn(x, activated, scratch, self._workspace("total", x), clear)
        for j, block in enumerate(blocks[1:], start=2):
            # The stage's last block may overwrite x (its own convolution's output): one copy fewer.
            total = total.add_(block.onednn(x, activated, scratch, x if j == len(blocks) else block_out, clear))
        return total

    def _post(self, x: Tensor, scale: float) -> Tensor:
        """``tanh(conv_post(x * scale))`` of the activated last stage (1, C, 1, T) -> waveform (1, T)."""
        if self.conv_post.polyphase_ready(x):
            return self.conv_post.onednn_polyphase(x, "tanh", scale=scale)
        return self.conv_post.onednn(x, "tanh", scale=scale)[:, 0, 0]

    def _stage_context(self, stage: int) -> int:
        """Samples on each side of a stage output sample that it depends on through the stage's
        residual blocks (the widest block's chain of half-widths), plus ``conv_post`` after the last."""
        blocks = self.resblocks[stage * self.num_kernels : (stage + 1) * self.num_kernels]
        context = max(
            sum((c.kernel_size[0] - 1) * c.dilation[0] // 2 for c in block.modules() if isinstance(c, nn.Conv1d))
            for block in blocks
        )
        if stage == len(self.rates) - 1:
            context += (self.conv_post.kernel_size[0] - 1) // 2
        return context

    def _forward_tiled(self, z: Tensor, g: Tensor | None, frame_lengths: Tensor | None, threads: int) -> Tensor:
        """:meth:`_forward_onednn` of one item with each stage cut in time into ``threads`` tiles, one per
        thread with one intra-op thread (:func:`~voicehub.architectures.parallel.map_single_threaded`).
        The tiles cover the ``frame_lengths[0]`` signal frames, each rounded up to :data:`TILE_BUCKET`
        frames (the padding of ``z`` beyond the signal is not decoded); the output has the one-pass
        path's length, zeros after the signal.

        A tile reads its part of the stage input plus ``ceil((context + K) / rate)`` samples on each
        side that has a neighbouring tile (none at the ends of the input, where the convolutions' zero
        padding is what the whole stage sees there too), runs the upsampling and the residual blocks
        on that, and keeps the samples whose inputs all lay inside: the same arithmetic as the whole
        stage. Per stage the threads wake once instead of once per operator; on a shared or
        virtualized CPU a sleeping OpenMP thread takes a fraction of a millisecond to wake, paid at
        each of ~55 operators.
        """
        valid = int(frame_lengths[0]) if frame_lengths is not None else z.shape[2]
        tile = -(-valid // threads)
        tile = -(-tile // TILE_BUCKET) * TILE_BUCKET
        x = torch.empty(1, z.shape[1], 1, tile * threads, memory_format=torch.channels_last)
        x[:, :, 0, :valid] = z[:, :, :valid]
        x[:, :, :, valid:] = 0
        x = self.conv_pre.onednn(x)
        if g is not None:
            x = x.add_(self.cond(g).unsqueeze(2))
        x[:, :, :, valid:] = 0
        scale = 1.0
        samples = z.shape[2] * math.prod(self.rates)  # the one-pass path's output length
        for stage, rate in enumerate(self.rates):
            length_in = x.shape[3]
            cuts = [length_in * i // threads for i in range(threads + 1)]  # tiles of equal length
            if stage == len(self.rates) - 1:
                out = torch.empty(1, max(length_in * rate, samples))
                out[:, length_in * rate :] = 0
            else:
                channels = cast(TimeConvTranspose1d, self.ups[stage]).out_channels
                # Kept between calls (this thread's); stages alternate between two, read one, write the other.
                out = self._workspace(f"tiled_{stage % 2}", x, channels=channels, width=length_in * rate)
            tiles = [(cuts[i], cuts[i + 1]) for i in range(threads)]
            map_single_threaded(functools.partial(self._decode_tile, x, out, stage, scale, valid), tiles, threads)
            x, scale, valid = out, 1.0 / self.num_kernels, valid * rate
        return x[:, :samples]

    def _decode_tile(
        self, x: Tensor, out: Tensor, stage: int, scale: float, valid_in: int, tile: tuple[int, int]
    ) -> None:
        """Stage ``stage`` of :meth:`_forward_tiled` for input samples ``tile`` = [start, end) of ``x``
        (its first ``valid_in`` samples are signal, the rest padding), written into ``out`` (the next
        stage's input, or the waveform after the last stage)."""
        start, end = tile
        rate, up = self.rates[stage], cast(TimeConvTranspose1d, self.ups[stage])
        halo = -(-(self._stage_context(stage) + up.kernel_size[0]) // rate)  # input samples on each side
        # No halo at an end of the whole input: the convolutions' own zero padding stands in for it
        # (the one-pass path's zeros beyond the signal), and the tile computes nothing it throws away.
        first = start - (halo if start > 0 else 0)
        last = end + (halo if end < x.shape[3] else 0)
        source = self._workspace("tile_in", x, width=last - first)
        hi = min(last, valid_in)  # the padding of a bucketed length reads as zeros, as in the one-pass path
        if hi > first:
            source[:, :, :, : hi - first] = x[:, :, :, first:hi]
        source[:, :, :, max(0, hi - first) :] = 0
        offset = first * rate  # the signal's index of the tile's first upsampled sample
        keep_to = max(0, valid_in * rate - offset)

        def clear(t: Tensor) -> Tensor:  # zeros after the signal, as the one-pass path's masks
            if keep_to < t.shape[3]:
                t[:, :, :, keep_to:] = 0
            return t

        upsampled = clear(self._upsample(stage, F.leaky_relu_(source, LRELU_SLOPE), scale))
        total = self._stage_blocks(stage, upsampled, clear)
        kept = slice(start * rate - offset, end * rate - offset)
        if stage < len(self.rates) - 1:
            out[:, :, :, start * rate : end * rate] = total[:, :, :, kept]
            return
        out[:, start * rate : end * rate] = self._post(clear(F.leaky_relu_(total)), 1.0 / self.num_kernels)[:, kept]


__all__ = [
    "LRELU_SLOPE",
    "PACKED_VARIANTS_KEPT",
    "POLYPHASE_BLOCK",
    "Generator",
    "ResBlock",
    "TimeConv1d",
    "TimeConvTranspose1d",
]

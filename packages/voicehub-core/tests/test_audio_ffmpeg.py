"""The FFmpeg fallback of audio decoding (PyAV): m4a and webm made from committed speech at test time."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from voicehub.core import AudioDecodeError, load_audio

CLIP = "librivox/sense_and_sensibility_01_austen_64kb-0880.wav"  # 47840 samples at 16 kHz


def encode_with_pyav(samples: np.ndarray, sample_rate: int, target: Path, codec: str) -> Path:
    """Encode mono float32 ``samples`` into ``target`` (container from its suffix) with PyAV."""
    import av

    with av.open(str(target), mode="w") as container:
        stream = container.add_stream(codec, rate=sample_rate, layout="mono")
        frame = av.AudioFrame.from_ndarray(samples[np.newaxis, :].astype(np.float32), format="fltp", layout="mono")
        frame.sample_rate = sample_rate
        for packet in stream.encode(frame):
            container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)
    return target


def _aligned_correlation(reference: np.ndarray, decoded: np.ndarray) -> tuple[float, int]:
    """Best normalized correlation of ``decoded`` against ``reference`` over shifts of up to 4096 samples."""
    best, best_shift = -1.0, 0
    for shift in range(0, 4096, 16):
        part = decoded[shift : shift + reference.size]
        n = min(part.size, reference.size)
        ref = reference[:n]
        value = float(np.dot(ref, part[:n]) / (np.linalg.norm(ref) * np.linalg.norm(part[:n]) + 1e-12))
        if value > best:
            best, best_shift = value, shift
    return best, best_shift


@pytest.mark.parametrize(("suffix", "codec", "rate"), [(".m4a", "aac", 16000), (".webm", "libopus", 48000)])
def test_load_audio_decodes_m4a_and_webm_through_pyav(
    data_dir: Path, tmp_path: Path, suffix: str, codec: str, rate: int
) -> None:
    reference = load_audio(data_dir / CLIP)
    source = reference.samples if rate == 16000 else reference.with_sample_rate(rate).samples
    encoded = encode_with_pyav(source, rate, tmp_path / f"speech{suffix}", codec)
    decoded = load_audio(encoded)
    assert decoded.sample_rate == rate
    # Codecs add priming samples and pad the last frame: at most a few thousand samples more.
    assert source.size <= decoded.num_samples <= source.size + 4096
    correlation, _ = _aligned_correlation(source, decoded.samples)
    assert correlation > 0.97  # the same speech, through a lossy codec
    back = decoded.with_sample_rate(16000)
    assert back.sample_rate == 16000 and abs(back.num_samples - reference.num_samples) <= 4096 * 16000 // rate


def test_load_audio_without_pyav_names_the_extra(data_dir: Path, tmp_path: Path) -> None:
    encoded = encode_with_pyav(load_audio(data_dir / CLIP).samples, 16000, tmp_path / "speech.m4a", "aac")
    script = (
        "import sys; sys.modules['av'] = None\n"
        "from voicehub.core import load_audio, AudioDecodeError\n"
        "try:\n"
        f"    load_audio({str(encoded)!r})\n"
        "except AudioDecodeError as err:\n"
        "    print(err)\n"
    )
    message = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, text=True).stdout
    assert 'pip install "voicehub[av]"' in message
    assert "speech.m4a" in message and "PyAV" in message


def test_load_audio_of_random_bytes_reports_both_decoders(tmp_path: Path) -> None:
    target = tmp_path / "noise.m4a"
    target.write_bytes(np.random.default_rng(0).integers(0, 256, 4096, dtype=np.uint8).tobytes())
    with pytest.raises(AudioDecodeError, match=r"noise\.m4a: cannot decode as audio \(libsndfile: .*; FFmpeg: "):
        load_audio(target)


@pytest.mark.parametrize("block_samples", [1000, 48000])
def test_blocks_and_header_of_a_webm_match_the_whole_file_decode(
    data_dir: Path, tmp_path: Path, block_samples: int
) -> None:
    """What libsndfile refuses streams through FFmpeg too: the blocks equal the whole-file decode."""
    from voicehub.core import audio_file_info, iter_audio_blocks

    reference = load_audio(data_dir / CLIP)
    encoded = encode_with_pyav(reference.with_sample_rate(48000).samples, 48000, tmp_path / "speech.webm", "libopus")
    whole = load_audio(encoded)
    info = audio_file_info(encoded)
    assert (info.sample_rate, info.num_channels) == (48000, 1)
    assert abs(info.duration_s - whole.duration_s) < 0.05  # the container's duration, not a decode
    blocks = list(iter_audio_blocks(encoded, block_samples=block_samples))
    assert all(block.size == block_samples for block in blocks[:-1]) and 0 < blocks[-1].size <= block_samples
    np.testing.assert_array_equal(np.concatenate(blocks), whole.samples)
    resampled = np.concatenate(list(iter_audio_blocks(encoded, block_samples=block_samples, target_sample_rate=16000)))
    np.testing.assert_allclose(resampled, whole.with_sample_rate(16000).samples, atol=1e-4)

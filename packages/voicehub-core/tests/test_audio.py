"""Audio I/O on real speech: decoding, downmix, resampling, validation and clear errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import numpy.fft as fft
import pytest

from voicehub.core import (
    AudioDecodeError,
    AudioError,
    SampleRateError,
    VoiceHubError,
    Waveform,
    load_audio,
    load_audio_batch,
    pcm_to_float,
    resample,
    save_audio,
)

UTTERANCE_SAMPLES = {
    "0870": 113600,
    "0880": 47840,
    "0890": 84800,
    "0920": 96800,
    "0930": 52640,
}


@pytest.mark.parametrize(("clip", "num_samples"), sorted(UTTERANCE_SAMPLES.items()))
def test_load_audio_gives_known_duration_to_the_sample(data_dir: Path, clip: str, num_samples: int) -> None:
    waveform = load_audio(data_dir / "librivox" / f"sense_and_sensibility_01_austen_64kb-{clip}.wav")
    assert waveform.sample_rate == 16000
    assert waveform.num_samples == num_samples
    assert waveform.duration_s == pytest.approx(num_samples / 16000)
    assert waveform.samples.dtype == np.float32
    assert 0.01 < float(np.abs(waveform.samples).max()) <= 1.0


def test_int16_pcm_is_scaled_by_full_scale(librivox_wav: Path) -> None:
    raw = np.frombuffer(librivox_wav.read_bytes()[44:], dtype="<i2")
    waveform = load_audio(raw, sample_rate=16000)
    np.testing.assert_array_equal(waveform.samples, raw.astype(np.float32) / 32768.0)
    np.testing.assert_array_equal(waveform.samples, load_audio(librivox_wav).samples)


def test_headerless_raw_file_loads_as_array_with_its_rate(data_dir: Path) -> None:
    raw = np.fromfile(data_dir / "goforward.raw", dtype="<i2")
    waveform = load_audio((raw, 16000))
    assert waveform.num_samples == 44580
    assert waveform.duration_s == pytest.approx(2.78625)


def test_pcm_to_float_scales_each_integer_type() -> None:
    assert pcm_to_float(np.array([-32768, 16384], dtype=np.int16)).tolist() == [-1.0, 0.5]
    assert pcm_to_float(np.array([0, 128, 255], dtype=np.uint8)).tolist() == [-1.0, 0.0, 127 / 128]
    assert pcm_to_float(np.array([-128, 64], dtype=np.int8)).tolist() == [-1.0, 0.5]
    with pytest.raises(AudioError, match="dtype bool"):
        pcm_to_float(np.array([True, False]))


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint16, np.uint32, np.uint64])
def test_wide_integer_samples_are_refused_with_how_to_scale_them(librivox_wav: Path, dtype: type) -> None:
    pcm16 = np.fromfile(librivox_wav, dtype="<i2", offset=44)[:16000]
    widened = np.array(pcm16.tolist()) if dtype is np.int64 else pcm16.astype(np.int64).clip(0).astype(dtype)
    assert widened.dtype == np.dtype(dtype)
    with pytest.raises(AudioError, match=rf"dtype {np.dtype(dtype).name} are ambiguous.*astype\(np\.int16\)"):
        load_audio((widened, 16000))
    assert load_audio((pcm16, 16000)).samples.max() == pytest.approx(pcm16.max() / 32768)


def test_a_wav_header_with_seven_bits_per_sample_is_refused(librivox_wav: Path, tmp_path: Path) -> None:
    import soundfile

    eight_bit = tmp_path / "eight.wav"
    soundfile.write(eight_bit, load_audio(librivox_wav).samples[:16000], 16000, subtype="PCM_U8")
    data = bytearray(eight_bit.read_bytes())
    fmt = data.index(b"fmt ")
    assert data[fmt + 22] == 8  # bits per sample: fmt chunk id (4) + size (4) + 14 bytes of fields
    data[fmt + 22] = 7
    seven_bit = tmp_path / "seven.wav"
    seven_bit.write_bytes(bytes(data))
    assert load_audio(eight_bit).num_samples == 16000
    with pytest.raises(AudioError, match="declares 7 bits per sample"):
        load_audio(seven_bit)


def test_flac_and_ogg_round_trip_and_mp3_decodes(librivox_wav: Path, data_dir: Path, tmp_path: Path) -> None:
    original = load_audio(librivox_wav)
    for suffix in (".flac", ".wav"):
        path = save_audio(tmp_path / f"copy{suffix}", original.samples, 16000)
        again = load_audio(path)
        assert again.num_samples == original.num_samples
        # 16-bit PCM in both formats: the round trip is exact
        np.testing.assert_array_equal(again.samples, original.samples)
    ogg = load_audio(save_audio(tmp_path / "copy.ogg", original.samples, 16000))
    assert abs(ogg.num_samples - original.num_samples) < 16000 // 100
    mp3 = load_audio(data_dir / "silero" / "test.mp3", target_sample_rate=16000)
    assert mp3.sample_rate == 16000
    assert mp3.duration_s == pytest.approx(111744 / 44100, abs=1e-3)


def test_stereo_is_downmixed_by_channel_mean(librivox_wav: Path, tmp_path: Path) -> None:
    mono = load_audio(librivox_wav).samples
    stereo = np.stack([mono, np.zeros_like(mono)])
    from_array = load_audio(stereo, sample_rate=16000)
    np.testing.assert_allclose(from_array.samples, mono / 2, atol=1e-7)
    from_file = load_audio(save_audio(tmp_path / "stereo.wav", stereo, 16000, subtype="FLOAT"))
    np.testing.assert_allclose(from_file.samples, mono / 2, atol=1e-7)


def test_loading_a_long_file_allocates_about_the_output_size(data_dir: Path, tmp_path: Path) -> None:
    """A mono file decodes straight into the returned array; stereo downmixes without a full float64 copy."""
    import tracemalloc

    speech = load_audio(data_dir / "silero" / "test.wav").samples  # 60 s at 16 kHz
    long = np.tile(speech, 5)  # 5 minutes, 19.2 MB as float32
    mono_path = save_audio(tmp_path / "long.wav", long, 16000)
    stereo_path = save_audio(tmp_path / "long_stereo.wav", np.stack([long, -0.5 * long]), 16000)
    for path, channels in ((mono_path, 1), (stereo_path, 2)):
        tracemalloc.start()
        try:
            waveform = load_audio(path)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        output = waveform.samples.nbytes
        assert waveform.num_samples == long.shape[0]
        # mono: the decoded buffer is the output; stereo: the decoded (2, n) buffer plus the output.
        assert peak <= (channels + (channels > 1)) * output * 1.05 + 4_000_000, (path.name, peak / output)
    np.testing.assert_allclose(waveform.samples, 0.25 * long, atol=1e-4)


def test_transposed_multichannel_array_is_refused_with_the_fix(librivox_wav: Path) -> None:
    mono = load_audio(librivox_wav).samples
    with pytest.raises(AudioError, match="transpose"):
        load_audio(np.stack([mono, mono], axis=1), sample_rate=16000)


def test_resample_round_trip_16k_8k_16k_keeps_the_passband(data_dir: Path) -> None:
    """Below 3.4 kHz (inside the 8 kHz passband) the round trip is within 5e-4 relative RMS."""

    def lowpass(x: np.ndarray, cutoff_hz: float) -> np.ndarray:
        spectrum = fft.rfft(x)
        spectrum[fft.rfftfreq(x.shape[0], 1 / 16000) > cutoff_hz] = 0
        return fft.irfft(spectrum, x.shape[0])

    for clip in UTTERANCE_SAMPLES:
        x = load_audio(data_dir / "librivox" / f"sense_and_sensibility_01_austen_64kb-{clip}.wav").samples
        down = resample(x, 16000, 8000)
        assert down.shape[0] == x.shape[0] // 2
        y = resample(down, 8000, 16000)
        assert y.shape == x.shape
        a, b = lowpass(x.astype(np.float64), 3400), lowpass(y.astype(np.float64), 3400)
        relative_rms = np.sqrt(np.mean((a - b) ** 2) / np.mean(a**2))
        assert relative_rms < 5e-4
        assert np.abs(a - b).max() < 5e-3
        # the full-band signal is kept too, apart from the speech energy above 4 kHz
        assert 10 * np.log10(np.sum(x**2) / np.sum((x - y) ** 2)) > 10


def test_target_sample_rate_resamples_files_and_waveforms(librivox_wav: Path) -> None:
    at_8k = load_audio(librivox_wav, target_sample_rate=8000)
    assert (at_8k.sample_rate, at_8k.num_samples) == (8000, 23920)
    assert at_8k.with_sample_rate(8000) is at_8k


def test_array_without_sample_rate_is_refused() -> None:
    with pytest.raises(SampleRateError, match="sample_rate=<Hz>"):
        load_audio(np.zeros(100, dtype=np.float32))


def test_conflicting_sample_rate_is_refused(librivox_wav: Path) -> None:
    with pytest.raises(SampleRateError, match="conflicts with the file's 16000 Hz") as info:
        load_audio(librivox_wav, sample_rate=8000)
    assert info.value.expected == (16000,)
    assert info.value.actual == 8000
    with pytest.raises(SampleRateError, match="conflicts"):
        load_audio((np.zeros(10, dtype=np.float32), 16000), sample_rate=8000)


@pytest.mark.parametrize("bad_rate", [0, -16000, 16000.0, True])
def test_invalid_sample_rate_values_are_refused(bad_rate: object) -> None:
    with pytest.raises(SampleRateError, match="positive integer"):
        load_audio(np.zeros(10, dtype=np.float32), sample_rate=bad_rate)  # type: ignore[arg-type]


@pytest.mark.parametrize(("rate", "hint"), [(16, "kHz instead of Hz"), (999, "kHz instead of Hz"), (10**7, "")])
def test_implausible_sample_rates_are_refused_before_any_work(rate: int, hint: str) -> None:
    with pytest.raises(SampleRateError, match=f"outside the audio range 1000..768000 Hz.*{hint}") as info:
        load_audio(np.zeros(47840, dtype=np.float32), sample_rate=rate, target_sample_rate=16000)
    assert info.value.actual == rate


def test_float_samples_at_integer_scale_are_refused_with_the_fix(librivox_wav: Path) -> None:
    raw = np.frombuffer(librivox_wav.read_bytes()[44:], dtype="<i2")
    with pytest.raises(AudioError, match=r"float samples reach .*divide by 32768 or pass the int16 array"):
        load_audio(raw.astype(np.float32), sample_rate=16000)
    # slightly over full scale (clipped float audio) is still accepted
    assert load_audio(np.array([1.5, -1.2], dtype=np.float32), sample_rate=16000).num_samples == 2


def test_half_precision_tensors_are_widened() -> None:
    import torch

    samples = torch.linspace(-0.5, 0.5, 1600)
    for dtype in (torch.bfloat16, torch.float16):
        waveform = load_audio(samples.to(dtype), sample_rate=16000)
        np.testing.assert_array_equal(waveform.samples, samples.to(dtype).float().numpy())
    with pytest.raises(AudioError, match="meta tensor holds no samples"):
        load_audio(torch.empty(10, device="meta"), sample_rate=16000)


def test_misordered_tuples_and_number_lists_get_the_right_form_in_the_message() -> None:
    samples = np.zeros(160, dtype=np.float32)
    with pytest.raises(AudioError, match=r"the tuple form is \(array, sample_rate\), array first"):
        load_audio((16000, samples))
    with pytest.raises(AudioError, match=r"holds numbers; pass one waveform as np.asarray"):
        load_audio_batch([0.0, 0.1, 0.2], sample_rate=16000)


def test_truncated_file_is_refused_naming_the_file(librivox_wav: Path, tmp_path: Path) -> None:
    data = librivox_wav.read_bytes()
    truncated = tmp_path / "truncated.wav"
    truncated.write_bytes(data[: len(data) // 2])
    with pytest.raises(AudioDecodeError, match=r"truncated\.wav: file is truncated") as info:
        load_audio(truncated)
    assert info.value.source == str(truncated)
    flac = save_audio(tmp_path / "whole.flac", load_audio(librivox_wav).samples, 16000)
    cut = tmp_path / "truncated.flac"
    cut.write_bytes(flac.read_bytes()[: flac.stat().st_size // 2])
    with pytest.raises(AudioDecodeError, match=r"truncated\.flac"):
        load_audio(cut)


def test_empty_and_non_audio_and_missing_files_are_refused(tmp_path: Path) -> None:
    empty = tmp_path / "empty.wav"
    empty.write_bytes(b"")
    with pytest.raises(AudioDecodeError, match=r"empty\.wav: file is empty"):
        load_audio(empty)
    text = tmp_path / "notes.wav"
    text.write_text("this is not audio\n" * 20)
    with pytest.raises(AudioDecodeError, match=r"notes\.wav: cannot decode as audio"):
        load_audio(text)
    with pytest.raises(AudioDecodeError, match="no such audio file"):
        load_audio(tmp_path / "missing.flac")


def test_nan_and_empty_arrays_are_refused() -> None:
    samples = np.zeros(1600, dtype=np.float32)
    samples[123] = np.nan
    with pytest.raises(AudioError, match=r"non-finite sample.*index 123"):
        load_audio(samples, sample_rate=16000)
    with pytest.raises(AudioError, match="empty"):
        load_audio(np.zeros(0, dtype=np.float32), sample_rate=16000)
    assert issubclass(AudioError, VoiceHubError) and issubclass(AudioError, ValueError)


def test_batches_keep_order_and_name_the_bad_item(librivox_wav: Path) -> None:
    waveforms, is_batch = load_audio_batch([librivox_wav, (np.ones(8000, dtype=np.float32) * 0.1, 8000)])
    assert is_batch
    assert [w.num_samples for w in waveforms] == [47840, 8000]
    single, is_batch = load_audio_batch(librivox_wav)
    assert not is_batch and single[0].num_samples == 47840
    with pytest.raises(AudioError, match="batch item 1"):
        load_audio_batch([librivox_wav, np.zeros(10, dtype=np.float32)])
    with pytest.raises(AudioError, match="empty batch"):
        load_audio_batch([])


def test_save_audio_leaves_no_partial_file_on_error(tmp_path: Path) -> None:
    target = tmp_path / "out.wav"
    with pytest.raises(AudioError, match="non-finite"):
        save_audio(target, np.array([0.0, np.inf], dtype=np.float32), 16000)
    with pytest.raises(AudioError, match=r"unknown audio file suffix '\.unknownformat'"):
        save_audio(tmp_path / "out.unknownformat", np.zeros(10, dtype=np.float32), 16000)
    with pytest.raises(AudioError, match="cannot write audio"):
        save_audio(tmp_path / "out.wav", np.zeros(10, dtype=np.float32), 16000, subtype="NOT_A_SUBTYPE")
    assert list(tmp_path.iterdir()) == []


def test_save_audio_replaces_atomically_and_keeps_the_file_mode(librivox_wav: Path, tmp_path: Path) -> None:
    import os
    import stat

    target = tmp_path / "out.wav"
    save_audio(target, np.zeros(160, dtype=np.float32), 16000)
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~umask
    os.chmod(target, 0o640)
    link = tmp_path / "link.wav"
    link.symlink_to(target)
    save_audio(link, load_audio(librivox_wav).samples, 16000)
    assert link.is_symlink() and stat.S_IMODE(target.stat().st_mode) == 0o640
    assert load_audio(target).num_samples == 47840
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.wav", "out.wav"]


def test_waveform_validates_its_fields() -> None:
    with pytest.raises(AudioError, match="float32"):
        Waveform(samples=np.zeros(4), sample_rate=16000)  # type: ignore[arg-type]
    with pytest.raises(AudioError, match=r"\(num_samples,\)"):
        Waveform(samples=np.zeros((2, 4), dtype=np.float32), sample_rate=16000)


def test_load_raw_pcm_reads_s16le_and_refuses_odd_byte_counts(tmp_path: Path) -> None:
    from voicehub.core import is_raw_pcm, load_raw_pcm

    raw = Path(__file__).resolve().parents[3] / "tests" / "data" / "goforward.raw"  # real speech, s16le 16 kHz
    assert is_raw_pcm(raw) and is_raw_pcm("x.PCM") and not is_raw_pcm("x.wav")
    waveform = load_raw_pcm(raw, sample_rate=16000)
    pcm = np.frombuffer(raw.read_bytes(), dtype="<i2")
    assert waveform.sample_rate == 16000 and waveform.num_samples == pcm.size and waveform.source == str(raw)
    np.testing.assert_array_equal(waveform.samples, (pcm / 32768.0).astype(np.float32))
    odd = tmp_path / "odd.raw"
    odd.write_bytes(raw.read_bytes()[:101])
    with pytest.raises(AudioDecodeError, match="101 bytes is not a whole number of 16-bit samples"):
        load_raw_pcm(odd, sample_rate=16000)
    with pytest.raises(SampleRateError, match="positive integer"):
        load_raw_pcm(raw, sample_rate=0)


def test_check_sample_rate_names_both_rates_and_the_fix() -> None:
    from voicehub.core import check_sample_rate

    assert check_sample_rate(np.int64(8000), supported=(16000, 8000)) == 8000
    message = r"clip\.wav: Model runs at \[16000, 8000\] Hz, got 22050 Hz and off; fix it"
    with pytest.raises(SampleRateError, match=message) as info:
        check_sample_rate(22050, source="clip.wav", supported=(16000, 8000), runs="Model", why="off", fix="fix it")
    assert info.value.expected == (16000, 8000) and info.value.actual == 22050
    with pytest.raises(SampleRateError, match="kHz instead of Hz"):
        check_sample_rate(16, source="clip.wav")
    with pytest.raises(SampleRateError, match="positive integer in Hz, got True"):
        check_sample_rate(True)

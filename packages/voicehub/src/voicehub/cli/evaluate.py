"""``voicehub evaluate asr MANIFEST``: word error rate (jiwer) and real-time factor of an ASR model."""

from __future__ import annotations

import logging
import re
import sys
import time
from pathlib import Path
from typing import Any

import click

from voicehub.cli._inputs import cli_model_type, default_model_help, resolve_cli_options
from voicehub.cli._options import CommonOptions, common_options
from voicehub.core import strict_json
from voicehub.core.errors import VoiceHubError
from voicehub.core.tasks import SpeechTask

_LOG = logging.getLogger(__name__)

_PUNCTUATION = re.compile(r"[^\w\s']|(?<!\w)'|'(?!\w)")


def normalise_text(text: str) -> str:
    """Basic English normalisation for scoring: lower case, hyphens as spaces, punctuation dropped, spaces collapsed.

    Simpler than openai-whisper's ``EnglishTextNormalizer`` (no number or spelling standardisation):
    ``"Mr."`` stays ``"mr"``, ``"10"`` is not ``"ten"``.
    """
    lowered = text.lower().replace("-", " ")
    return " ".join(_PUNCTUATION.sub(" ", lowered).split())


def read_manifest(path: Path) -> list[tuple[Path, str]]:
    """``audio<TAB>reference text`` lines (blank lines and ``#`` comments skipped); relative paths from the manifest.

    Raises:
        click.UsageError: for a line without a tab or a missing audio file, naming the line.
    """
    entries = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        audio, tab, reference = line.partition("\t")
        if not tab:
            raise click.UsageError(f"{path}:{number}: expected 'audio path<TAB>reference text', got {line!r}")
        file = Path(audio) if Path(audio).is_absolute() else path.parent / audio
        if not file.is_file():
            raise click.UsageError(f"{path}:{number}: no such audio file {file}")
        entries.append((file, reference))
    if not entries:
        raise click.UsageError(f"{path}: no entries")
    return entries


@click.group("evaluate")
def evaluate_group() -> None:
    """Score models on your own data."""


@evaluate_group.command("asr")
@click.argument("manifest", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--model",
    "model_type",
    default=None,
    metavar="MODEL_TYPE",
    help=f"ASR model (default: {default_model_help(SpeechTask.AUTOMATIC_SPEECH_RECOGNITION)}).",
)
@click.option("--source", default=None, help="Checkpoint source (file, directory, hf:owner/name).")
@click.option("--language", default=None, help="Language code of the speech.")
@click.option("--beam-size", type=int, default=None, help="Beams at temperature 0 (default 1: greedy).")
@click.option("--batch-size", type=int, default=8, show_default=True, help="Files transcribed together.")
@click.option("--json", "as_json", is_flag=True, help="Print strict JSON (WER, counts, RTF, per-file results).")
@common_options
def evaluate_asr_command(
    manifest: Path,
    model_type: str | None,
    source: str | None,
    language: str | None,
    beam_size: int | None,
    batch_size: int,
    as_json: bool,
    common: CommonOptions,
) -> None:
    """Transcribe the files of MANIFEST (audio<TAB>reference lines) and print the WER and the real-time factor.

    WER is jiwer's corpus word error rate after :func:`normalise_text`; RTF is transcription time
    (model loading excluded) over audio duration.
    """
    import jiwer

    from voicehub.auto import AutoModelForSpeechRecognition
    from voicehub.core.audio import AudioLike, Waveform, load_audio

    entries = read_manifest(manifest)
    overrides: dict[str, object] = {"batch_size": batch_size}
    if language is not None:
        overrides["language"] = language
    if beam_size is not None:
        overrides["beam_size"] = beam_size
    try:
        model_type = cli_model_type(SpeechTask.AUTOMATIC_SPEECH_RECOGNITION, model_type, source)
        model = AutoModelForSpeechRecognition.from_pretrained(source, model_type=model_type, device=common.device)
        options = resolve_cli_options(model, overrides, {})  # a usage error naming the flag
        model.load()
    except VoiceHubError as err:
        raise click.ClickException(str(err)) from err
    waveforms: list[AudioLike] = []
    failures: list[str] = []
    decoded: list[tuple[Path, str]] = []
    for path, text in entries:  # an undecodable file is reported; the others are still scored
        try:
            waveforms.append(load_audio(path))
            decoded.append((path, text))
        except VoiceHubError as err:
            failures.append(str(err))
    if not decoded:
        for message in failures:
            _LOG.error("%s", message)
        raise click.ClickException(f"no file of {manifest} could be decoded; nothing to score")
    entries = decoded
    try:
        started = time.perf_counter()
        outputs = model.transcribe(waveforms, options=options)
        elapsed_s = time.perf_counter() - started
    except VoiceHubError as err:
        raise click.ClickException(str(err)) from err
    references = [normalise_text(text) for _, text in entries]
    hypotheses = [normalise_text(output.text) for output in outputs]
    scored = jiwer.process_words(references, hypotheses)
    audio_s = sum(w.duration_s for w in waveforms if isinstance(w, Waveform))
    report = {
        "model_type": model.model_type,
        "files": len(entries),
        "failed_files": len(failures),
        "reference_words": sum(len(r.split()) for r in references),
        "wer": scored.wer,
        "substitutions": scored.substitutions,
        "deletions": scored.deletions,
        "insertions": scored.insertions,
        "audio_s": audio_s,
        "rtf": elapsed_s / audio_s if audio_s > 0 else 0.0,
    }
    results = [
        {"audio": str(path), "reference": ref, "hypothesis": hyp}
        for (path, _), ref, hyp in zip(entries, references, hypotheses, strict=True)
    ]
    for message in failures:
        _LOG.error("%s", message)
    if as_json:
        click.echo(strict_json.dumps({**report, "results": results, "errors": failures}, indent=2))
    else:
        _print_report(report, results, failures)
    if failures:
        raise click.exceptions.Exit(1)


def _print_report(report: dict[str, Any], results: list[dict[str, str]], failures: list[str]) -> None:
    """The human-readable report: the files with errors, then one summary line."""
    for item in results:
        if item["reference"] != item["hypothesis"]:
            click.echo(f"{item['audio']}\n  ref: {item['reference']}\n  hyp: {item['hypothesis']}", file=sys.stdout)
    files = report["files"]
    failed = f"; {len(failures)} more could not be decoded" if failures else ""
    click.echo(
        f"{report['model_type']}: WER {100 * report['wer']:.2f} % on {report['reference_words']} words of {files} "
        f"file{'s' if files != 1 else ''}{failed} (S {report['substitutions']}, D {report['deletions']}, "
        f"I {report['insertions']}); RTF {report['rtf']:.3f} over {report['audio_s']:.1f} s of audio"
    )


__all__ = ["evaluate_asr_command", "evaluate_group", "normalise_text", "read_manifest"]

"""What ``voicehub embed`` and ``voicehub verify`` share: loading the model, embedding one file, help texts."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click

from voicehub.cli._inputs import audio_input, cli_model_type, default_model_help
from voicehub.core.errors import VoiceHubError
from voicehub.core.outputs import SpeakerOutput
from voicehub.core.tasks import SpeechTask
from voicehub.speaker_verification import PreTrainedSVModel

DEFAULT_MODEL = default_model_help(SpeechTask.SPEAKER_VERIFICATION)
MODEL_HELP = (
    f"A registered speaker-verification model type or alias (default: {DEFAULT_MODEL}); see "
    "`voicehub models --task sv`."
)
SOURCE_HELP = (
    "Checkpoint source (file, directory, hf:owner/name); default: the model's own. A weight file is read as "
    f"--model (default: {DEFAULT_MODEL})."
)


def load_model(
    model_type: str | None, source: str | None, backend: Path | None, *, device: str = "auto"
) -> PreTrainedSVModel[Any, Any, Any]:
    """Load the speaker-verification model the flags name, on ``--device``, with ``--backend`` attached.

    Raises:
        VoiceHubError: for an unknown model, a missing checkpoint or a directory without a back-end.
    """
    from voicehub.auto import AutoModelForSpeakerVerification

    model_type = cli_model_type(SpeechTask.SPEAKER_VERIFICATION, model_type, source)
    model = AutoModelForSpeakerVerification.from_pretrained(source, model_type=model_type, device=device)
    model.load()  # a missing checkpoint (or a model without pretrained weights) is reported once, up front
    if backend is not None:
        model.set_backend(backend)  # every SV model scores with a PLDA back-end (voicehub.speaker_verification)
    return model


def embedding_record(output: SpeakerOutput) -> dict[str, Any]:
    return {
        "source": output.source,
        "duration_s": output.duration_s,
        "embedding_dim": output.embedding_dim,
        "embedding": [float(v) for v in output.embedding],
        "metadata": dict(output.metadata),
    }


NO_TRIM_HELP = (
    "Embed the audio as it is, without silence trimming (for clips in which the VAD finds no speech; models "
    "without the trim_silence option refuse it)."
)


def trim_override(model: PreTrainedSVModel[Any, Any, Any], no_trim: bool) -> dict[str, object]:
    """``{"trim_silence": False}`` for --no-trim-silence, validated against the model's options."""
    if not no_trim:
        return {}
    if "trim_silence" not in model.options_class.known_keys():
        raise click.UsageError(f"--no-trim-silence: model {model.model_type!r} has no silence trimming to switch off")
    return {"trim_silence": False}


def embed_file(
    model: PreTrainedSVModel[Any, Any, Any], path: Path, sample_rate: int | None, overrides: Mapping[str, object]
) -> tuple[SpeakerOutput | None, str]:
    """Embed one file: ``(output, "")``, or ``(None, message)`` naming the file when it fails."""
    try:
        return model.embed(audio_input(path, sample_rate), options=model.resolve_options(**overrides)), ""
    except VoiceHubError as err:
        message = str(err)
        return None, message if str(path) in message else f"{path}: {message}"
    except Exception as err:  # an unexpected failure: report it for this file and go on with the others
        return None, f"{path}: unexpected {type(err).__name__}: {err} (please report this as a bug)"


__all__ = [
    "DEFAULT_MODEL",
    "MODEL_HELP",
    "NO_TRIM_HELP",
    "SOURCE_HELP",
    "embed_file",
    "embedding_record",
    "load_model",
    "trim_override",
]

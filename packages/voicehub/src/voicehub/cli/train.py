"""``voicehub train CONFIG``: fine-tune or train a registered model from a run config file.

The config (TOML, JSON or YAML; see :mod:`voicehub.training.run_config`) names the model, the
manifests, the strategy and the hyper-parameters. The manifests are validated against the
model's data contract before anything loads (every bad row is listed at once); the run resumes
from the newest valid checkpoint in ``output_dir`` unless ``--no-resume``; at the end the trained
model is exported with ``save_pretrained`` into ``output_dir/model``. With ``strategy = "ddp"``
start it under torchrun: ``torchrun --nproc-per-node 2 -m voicehub train run.toml``.
"""

from __future__ import annotations

import logging
import math
import os
from pathlib import Path
from typing import TYPE_CHECKING

import click

from voicehub.cli._options import CommonOptions, common_options
from voicehub.core.errors import VoiceHubError
from voicehub.core.files import check_output_directory

if TYPE_CHECKING:
    from voicehub.training.run_config import TrainingRunConfig

logger = logging.getLogger("voicehub.cli.train")

METRICS_FILE = "metrics.jsonl"
EXPORT_DIR = "model"


def _check_strategy(config: TrainingRunConfig) -> None:
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    if config.strategy == "ddp" and world_size < 2:
        raise click.UsageError(
            "strategy 'ddp' needs several processes: start with torchrun --nproc-per-node N -m voicehub train CONFIG "
            '(or set strategy = "single")'
        )
    if config.strategy == "single" and world_size > 1:
        raise click.UsageError(f"strategy 'single' but torchrun started {world_size} processes; set strategy = \"ddp\"")


@click.command("train")
@click.argument("config_path", metavar="CONFIG", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--resume/--no-resume", default=True, show_default=True, help="Continue from the newest valid checkpoint."
)
@common_options
def train_command(config_path: Path, resume: bool, common: CommonOptions) -> None:
    """Train the model a CONFIG file (.toml, .json, .yaml) describes; see docs/training.md."""
    # The training layer imports torch: only this command pays for it, not `voicehub models`.
    from voicehub.auto import AutoModel
    from voicehub.training import (
        AutoTrainingAdapter,
        EarlyStopping,
        JSONLMetricsLog,
        ProgressBar,
        Trainer,
        TrainerCallback,
        get_training_spec,
        read_manifest,
    )
    from voicehub.training.run_config import load_run_config

    try:
        config = load_run_config(config_path)
        _check_strategy(config)
        output_dir = check_output_directory(config.output_dir, what="training output_dir")  # before any model load
        spec = get_training_spec(config.model)
        spec.require_trainable()
        contract = spec.data_contract
        train_records = read_manifest(config.train_manifest, contract)
        eval_records = read_manifest(config.eval_manifest, contract) if config.eval_manifest is not None else ()
        model = AutoModel.from_pretrained(config.source, model_type=spec.model_type, device=common.device)
        adapter = AutoTrainingAdapter.from_host(model, spec, records=train_records, frozen_parts=config.frozen_parts)
        callbacks: list[TrainerCallback] = [
            ProgressBar(disable=not common.show_progress()),
            JSONLMetricsLog(output_dir / METRICS_FILE),
        ]
        if config.early_stopping_patience:
            callbacks.append(EarlyStopping(patience=config.early_stopping_patience))
        trainer = Trainer(
            adapter,
            config.trainer,
            train_records=train_records,
            eval_records=eval_records,
            output_dir=output_dir,
            callbacks=callbacks,
        )
        result = trainer.fit(resume=resume)
        exported = None
        if config.export and trainer.is_main:
            exported = model.save_pretrained(output_dir / EXPORT_DIR)
    except VoiceHubError as err:
        raise click.ClickException(str(err)) from err
    if not trainer.is_main:
        return
    if result.already_complete:  # nothing ran: no loss to report
        summary = (
            f"{spec.model_type}: the run in {output_dir} was already complete at step {result.step} (max_steps "
            f"{config.trainer.max_steps}); nothing trained (raise max_steps to train further)"
        )
    else:
        summary = f"trained {spec.model_type} to step {result.step}: loss {result.metrics.get('loss', math.nan):.4f}"
    if "eval_loss" in result.metrics:
        summary += f", eval_loss {result.metrics['eval_loss']:.4f}"
    if result.resumed_from is not None and not result.already_complete:
        summary += f" (resumed from step {result.resumed_from})"
    if result.stop_reason is not None:
        summary += f"; stopped: {result.stop_reason}"
    click.echo(summary)
    if result.checkpoint is not None:
        click.echo(f"checkpoint: {result.checkpoint}")
    if exported is not None:
        click.echo(f"model: {exported}")


__all__ = ["train_command"]

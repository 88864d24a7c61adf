"""The file that describes a training run (``voicehub train CONFIG``): model, data, strategy, hyper-parameters.

Example (TOML; the same keys in JSON or YAML)::

    model = "vad_silero"
    train_manifest = "data/train.jsonl"      # paths are relative to this file
    eval_manifest = "data/valid.jsonl"
    output_dir = "runs/vad"
    strategy = "single"                      # or "ddp": start with torchrun --nproc-per-node N

    [trainer]
    max_steps = 200
    batch_size = 8
    learning_rate = 1e-4
    scheduler = "cosine"
    warmup_steps = 20
    checkpoint_every_steps = 50
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
from pathlib import Path
from typing import Any, ClassVar, Literal

from voicehub.core import strict_json
from voicehub.core.config import Config
from voicehub.core.errors import ConfigError
from voicehub.core.lazy import import_optional
from voicehub.training.trainer import TrainerConfig


@dataclasses.dataclass(frozen=True, kw_only=True)
class TrainingRunConfig(Config):
    """One training run (closed: unknown keys are refused, listing the known ones).

    Attributes:
        model: a registered model type or alias.
        source: the checkpoint to start from (``None``: the model's registered default).
        train_manifest: JSONL manifest of the training records.
        eval_manifest: JSONL manifest of the evaluation records, if any.
        output_dir: checkpoints, ``metrics.jsonl`` and the exported model (``model/``) go here.
        strategy: ``single`` (one process) or ``ddp`` (DistributedDataParallel; launch with torchrun).
        frozen_parts: parameter-name prefixes to freeze instead of the model's declared ones.
        early_stopping_patience: stop after this many evaluations without improvement (0: never).
        export: write the trained model with ``save_pretrained`` into ``output_dir/model`` at the end.
        trainer: the :class:`~voicehub.training.TrainerConfig`.
    """

    config_type: ClassVar[str] = "training_run"

    model: str
    source: str | None = None
    train_manifest: str
    eval_manifest: str | None = None
    output_dir: str
    strategy: Literal["single", "ddp"] = "single"
    frozen_parts: tuple[str, ...] | None = None
    early_stopping_patience: int = 0
    export: bool = True
    trainer: TrainerConfig

    def validate(self) -> None:
        """Check ranges.

        Raises:
            ConfigError: for a negative patience or empty paths.
        """
        super().validate()
        if self.early_stopping_patience < 0:
            raise ConfigError(
                f"training_run.early_stopping_patience: expected >= 0, got {self.early_stopping_patience}",
                key="early_stopping_patience",
            )
        for name in ("model", "train_manifest", "output_dir"):
            if not getattr(self, name).strip():
                raise ConfigError(f"training_run.{name}: must not be empty", key=name)

    def resolved(self, base: Path) -> TrainingRunConfig:
        """A copy whose relative paths (manifests, output, a local source) are resolved against ``base``."""

        def resolve(value: str | None) -> str | None:
            if value is None or ":" in value.split("/")[0] or Path(value).is_absolute():
                return value  # absolute, or a scheme such as hf: / dist:
            return str((base / value).resolve())

        return dataclasses.replace(
            self,
            source=resolve(self.source),
            train_manifest=str(resolve(self.train_manifest)),
            eval_manifest=resolve(self.eval_manifest),
            output_dir=str(resolve(self.output_dir)),
        )


def load_run_config(path: str | os.PathLike[str]) -> TrainingRunConfig:
    """Read a run config from ``.json``, ``.toml``, ``.yaml`` or ``.yml``; relative paths resolve against its folder.

    Raises:
        ConfigError: for an unreadable file, another suffix, a syntax error, or invalid keys and values.
        OptionalDependencyError: for YAML without PyYAML installed.
    """
    file = Path(path)
    suffix = file.suffix.lower()
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"{file}: cannot read the training config: {err}", config_type="training_run") from err
    try:
        data: Any
        if suffix == ".json":
            data = strict_json.loads(text)
        elif suffix == ".toml":
            data = tomllib.loads(text)
        elif suffix in (".yaml", ".yml"):
            yaml = import_optional(
                "yaml", purpose="reading a YAML training config", install_hint='pip install "voicehub-training[yaml]"'
            )
            data = yaml.safe_load(text)
        else:
            raise ConfigError(
                f"{file}: unknown config format {suffix or '(no suffix)'!r}; use .toml, .json, .yaml or .yml",
                config_type="training_run",
            )
    except ConfigError:
        raise
    except Exception as err:  # tomllib, yaml and strict JSON each raise their own syntax error
        raise ConfigError(f"{file}: not valid {suffix[1:].upper()}: {err}", config_type="training_run") from err
    if not isinstance(data, dict):
        raise ConfigError(f"{file}: expected a table of settings at the top level", config_type="training_run")
    try:
        config = TrainingRunConfig.from_dict(data)
    except ConfigError as err:
        raise ConfigError(f"{file}: {err}", config_type="training_run", key=err.key) from err
    return config.resolved(file.parent.resolve())


__all__ = ["TrainingRunConfig", "load_run_config"]

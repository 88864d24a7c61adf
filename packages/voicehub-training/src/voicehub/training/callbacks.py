"""Trainer callbacks: early stopping, a JSONL metrics log and a progress bar.

A callback subclasses :class:`TrainerCallback` and overrides the hooks it needs. Hooks run on
every rank with metrics already reduced over the ranks; callbacks that write (the log, the bar)
act on rank 0 only (``trainer.is_main``).
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from voicehub.core import strict_json
from voicehub.core.files import write_text_atomic
from voicehub.training.errors import TrainingError

if TYPE_CHECKING:
    from voicehub.training.trainer import Trainer

Metrics = dict[str, float]


class TrainerCallback:
    """Base class: every hook does nothing."""

    def on_train_start(self, trainer: Trainer) -> None:
        """Before the first step (after a resume has restored the state)."""

    def on_step_end(self, trainer: Trainer, metrics: Metrics) -> None:
        """After each optimizer step; ``metrics`` has ``loss``, ``learning_rate``, ``grad_norm``."""

    def on_evaluate(self, trainer: Trainer, metrics: Metrics) -> None:
        """After an evaluation; ``metrics`` has ``eval_loss``."""

    def on_checkpoint(self, trainer: Trainer, path: Path) -> None:
        """After a checkpoint was written (on every rank, after the barrier)."""

    def on_train_end(self, trainer: Trainer) -> None:
        """After the last step (also when stopped early)."""


class EarlyStopping(TrainerCallback):
    """Stop when an evaluation metric has not improved for ``patience`` evaluations.

    Args:
        metric: the metric to watch (``"eval_loss"``).
        patience: evaluations without improvement before stopping (>= 1).
        min_delta: smallest decrease that counts as an improvement.
        mode: ``"min"`` (a loss) or ``"max"`` (an accuracy).

    Raises:
        TrainingError: for a patience < 1, a negative delta or an unknown mode.
    """

    def __init__(self, metric: str = "eval_loss", *, patience: int = 3, min_delta: float = 0.0, mode: str = "min"):
        if patience < 1 or min_delta < 0 or mode not in ("min", "max"):
            raise TrainingError(
                f"early stopping: expected patience >= 1, min_delta >= 0, mode 'min' or 'max', got "
                f"{patience}, {min_delta}, {mode!r}"
            )
        self.metric = metric
        self.patience = patience
        self.min_delta = min_delta
        self.mode = mode
        self.best = math.inf if mode == "min" else -math.inf
        self.bad_evaluations = 0

    def on_evaluate(self, trainer: Trainer, metrics: Metrics) -> None:
        """Count evaluations without improvement; ask the trainer to stop after ``patience`` of them."""
        if self.metric not in metrics:
            raise TrainingError(f"early stopping watches {self.metric!r}, the evaluation gave {sorted(metrics)}")
        value = metrics[self.metric]
        improved = value < self.best - self.min_delta if self.mode == "min" else value > self.best + self.min_delta
        if improved:
            self.best, self.bad_evaluations = value, 0
            return
        self.bad_evaluations += 1
        if self.bad_evaluations >= self.patience:
            trainer.request_stop(f"{self.metric} did not improve for {self.patience} evaluation(s)")

    def state_dict(self) -> dict[str, Any]:
        """What a resume restores."""
        return {"best": self.best, "bad_evaluations": self.bad_evaluations}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict`."""
        self.best = float(state["best"])
        self.bad_evaluations = int(state["bad_evaluations"])


class JSONLMetricsLog(TrainerCallback):
    """Append one strict-JSON line per step and per evaluation to ``path`` (rank 0 only).

    Lines: ``{"event": "step", "step": 3, "epoch": 0, "loss": ..., "learning_rate": ...}`` and
    ``{"event": "evaluate", "step": ..., "eval_loss": ...}``. Each line is appended, flushed and
    synced, so a killed run keeps what it logged (at worst its last line is cut, and skipped when
    read); a resumed run first drops lines beyond its step, rewriting the file atomically
    (:func:`voicehub.core.files.write_text_atomic`), so a kill then leaves the old log or the new one.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def on_train_start(self, trainer: Trainer) -> None:
        """Drop lines logged after the step being resumed from (they will be logged again)."""
        if not trainer.is_main or not self.path.exists():
            return
        kept = []
        for line in self.path.read_text(encoding="utf-8").splitlines():
            try:
                row = strict_json.loads(line)
            except ValueError:
                continue  # a line cut by a kill
            if isinstance(row, dict) and isinstance(row.get("step"), int) and row["step"] <= trainer.state.step:
                kept.append(line + "\n")
        write_text_atomic(self.path, "".join(kept), what="metrics log")

    def _write(self, trainer: Trainer, event: str, metrics: Metrics) -> None:
        if not trainer.is_main:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        row: dict[str, object] = {"event": event, "step": trainer.state.step, "epoch": trainer.state.epoch}
        row.update({k: v for k, v in metrics.items() if math.isfinite(v)})
        with self.path.open("a", encoding="utf-8") as file:
            file.write(strict_json.dumps(row) + "\n")
            file.flush()
            os.fsync(file.fileno())

    def on_step_end(self, trainer: Trainer, metrics: Metrics) -> None:
        """Log the step's metrics."""
        self._write(trainer, "step", metrics)

    def on_evaluate(self, trainer: Trainer, metrics: Metrics) -> None:
        """Log the evaluation's metrics."""
        self._write(trainer, "evaluate", metrics)


class ProgressBar(TrainerCallback):
    """A tqdm bar over optimizer steps with the latest loss (rank 0 only; off when not a terminal unless forced).

    Args:
        disable: ``None`` shows it only on a terminal; ``True`` hides it; ``False`` always shows it.
    """

    def __init__(self, *, disable: bool | None = None) -> None:
        self.disable = disable
        self._bar: Any = None

    def on_train_start(self, trainer: Trainer) -> None:
        """Open the bar at the resumed step."""
        if not trainer.is_main:
            return
        from tqdm.auto import tqdm

        self._bar = tqdm(
            total=trainer.config.max_steps, initial=trainer.state.step, unit="step", disable=self.disable, desc="train"
        )

    def on_step_end(self, trainer: Trainer, metrics: Metrics) -> None:
        """Advance by one step and show the loss."""
        if self._bar is not None:
            self._bar.set_postfix(loss=f"{metrics['loss']:.4f}", refresh=False)
            self._bar.update(1)

    def on_train_end(self, trainer: Trainer) -> None:
        """Close the bar."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None


__all__ = ["EarlyStopping", "JSONLMetricsLog", "Metrics", "ProgressBar", "TrainerCallback"]

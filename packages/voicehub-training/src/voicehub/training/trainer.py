"""The :class:`Trainer`: the loop, callbacks, checkpoint timing, exact resume and the strategy.

One optimizer step consumes ``grad_accumulation_steps`` micro-batches of ``batch_size`` records
per rank, in the order of a :class:`~voicehub.training.batching.LengthBucketBatchSampler`
(fixed by ``seed`` and the epoch). The trainer clips the gradient norm, steps AdamW and the
learning-rate schedule, evaluates every ``eval_every_steps`` steps and checkpoints every
``checkpoint_every_steps`` steps, when stopped early, and at the end.

Exact resume: a checkpoint holds the trainable module, the optimizer and scheduler, every
rank's random streams (torch, NumPy, Python) and the data position (epoch, next micro-batch),
plus the training plan (model, family, frozen parts, trainable shapes, data, hyper-parameters,
world size). Resuming restores all of it, so a run stopped after step k and resumed ends with
the same tensors, bit for bit, as a run that never stopped (single process, CPU); a checkpoint
of another plan is refused with the differences.

Strategy: one process, or DistributedDataParallel when started by ``torchrun`` (the module is
wrapped, each rank reads its slice of every global batch, gradients are averaged, metrics are
reduced, and only rank 0 writes files, between barriers).

Losses are weighted by item count: every family's loss is a mean over its micro-batch's
records, so each micro-batch's loss is scaled by its share of the step's records
(``records on this rank / (records in the step / ranks)``) before the backward pass. DDP's
gradient average then equals the per-record mean over the whole step, as one process with the
same global batch computes it, also when a global batch does not split evenly over the ranks or
the accumulated micro-batches differ in size (for an even split the scale is exactly
``1 / grad_accumulation_steps``, as before). The reported ``loss`` is the same per-record mean.

Data loading: the records of each micro-batch are read and decoded (``adapter.collate``) in
``data_workers`` torch ``DataLoader`` worker processes, ahead of the step that uses them
(``prefetch_batches`` per worker), so the training thread runs only the model. The workers get
the same index lists the loop consumes, in order, from the run's position (epoch, next
micro-batch), so the batches, and a resumed run, are the same as when decoding on the training
thread (``data_workers = 0``); a collate error is raised again on the training thread as itself.

A rank that stalls (a hung data read, a dead peer) ends the run after
``TrainerConfig.distributed_timeout_s`` with :class:`~voicehub.training.errors.DistributedTimeoutError`
on the ranks still running, instead of torch's default wait of 30 minutes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import io
import math
import os
import re
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, BinaryIO, ClassVar, Literal

import torch
from torch import nn

from voicehub.core import strict_json
from voicehub.core.config import Config
from voicehub.core.errors import ConfigError
from voicehub.core.files import check_output_directory
from voicehub.optimization import OptimizationMode, OptimizationResult
from voicehub.training._loading import _collate, _CollateFailure, _RankBatches, _Records
from voicehub.training.adapters.base import TrainingAdapter, TrainingBatch
from voicehub.training.batching import LengthBucketBatchSampler
from voicehub.training.callbacks import EarlyStopping, Metrics, TrainerCallback
from voicehub.training.checkpoints import Checkpoint, CheckpointStore
from voicehub.training.distributed import DistributedContext
from voicehub.training.errors import NonFiniteLossError, ResumeMismatchError, TrainingCheckpointError, TrainingError
from voicehub.training.manifest import ManifestRecord
from voicehub.training.precision import autocast_context, grad_scaler
from voicehub.training.rng import capture_rng_state, restore_rng_state, seed_everything

MODEL_FILE = "model.pt"
OPTIMIZER_FILE = "optimizer.pt"
RNG_FILE = "rng.pt"
STATE_FILE = "trainer_state.json"
CHECKPOINT_DIR = "checkpoints"

_NOT_PLAN = (
    "eval_every_steps",
    "checkpoint_every_steps",
    "checkpoint_at_end",
    "keep_checkpoints",
    "distributed_timeout_s",
    "data_workers",
    "prefetch_batches",
)
"""Settings a resumed run may change (they do not alter the trajectory)."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class TrainerConfig(Config):
    """Hyper-parameters and schedule of a run (closed: unknown keys are refused).

    Attributes:
        max_steps: optimizer steps to reach.
        batch_size: records per micro-batch on one rank (global batch: x ranks x accumulation).
        grad_accumulation_steps: micro-batches per optimizer step.
        learning_rate: peak AdamW learning rate.
        weight_decay: AdamW decoupled weight decay.
        adam_beta1, adam_beta2, adam_eps: AdamW moments and epsilon.
        max_grad_norm: clip the global gradient L2 norm to this; ``None`` does not clip.
        scheduler: ``constant``, ``linear`` (to 0 at ``max_steps``) or ``cosine`` (to 0), after
            ``warmup_steps`` of linear warm-up from 0.
        warmup_steps: warm-up steps.
        eval_every_steps: evaluate every N steps (0: only at the end, when eval records are given).
        checkpoint_every_steps: checkpoint every N steps (0: only at the end or when stopped).
        checkpoint_at_end: also checkpoint when the run ends or is stopped (off for smoke runs
            whose model is exported with ``save_pretrained`` instead).
        keep_checkpoints: newest checkpoints kept (older ones are deleted after a save).
        seed: seeds the random streams and the data order.
        bucket_batches: global batches per length-sorting pool of the sampler.
        precision: ``float32``; ``bfloat16`` autocast on devices that support it; or ``float16``
            (alias ``fp16``) autocast with a :class:`torch.amp.GradScaler` (dynamic loss scale,
            saved in checkpoints; a step whose gradients overflow is skipped and the scale halves).
        initial_loss_scale: the float16 gradient scaler's first loss scale (it then halves on
            every overflow and doubles after 2000 clean steps).
        non_finite_loss: what a NaN or infinite loss (or float32 gradient norm) does: ``stop``
            raises :class:`~voicehub.training.errors.NonFiniteLossError` naming the step, the
            records and the value; ``skip`` drops the step's gradients and goes on (the step
            counts, the weights and the optimizer state stay as they were). Either way nothing
            non-finite is applied or checkpointed.
        data_workers: worker processes that read and decode the micro-batches ahead of the step
            (a torch ``DataLoader``); ``0`` decodes on the training thread.
        prefetch_batches: micro-batches each data worker prepares ahead.
        distributed_timeout_s: seconds a rank waits for the others in a collective operation
            (the process group's timeout; DDP only) before the run ends with
            :class:`~voicehub.training.errors.DistributedTimeoutError` (torch's default is 30
            minutes). Raise it for steps that take longer, or for a slow first step.
    """

    config_type: ClassVar[str] = "trainer"

    max_steps: int
    batch_size: int = 4
    grad_accumulation_steps: int = 1
    learning_rate: float = 1e-4
    weight_decay: float = 0.0
    adam_beta1: float = 0.9
    adam_beta2: float = 0.999
    adam_eps: float = 1e-8
    max_grad_norm: float | None = 1.0
    scheduler: Literal["constant", "linear", "cosine"] = "constant"
    warmup_steps: int = 0
    eval_every_steps: int = 0
    checkpoint_every_steps: int = 0
    checkpoint_at_end: bool = True
    keep_checkpoints: int = 2
    seed: int = 0
    bucket_batches: int = 8
    precision: Literal["float32", "bfloat16", "float16", "fp16"] = "float32"
    initial_loss_scale: float = 65536.0
    non_finite_loss: Literal["stop", "skip"] = "stop"
    distributed_timeout_s: float = 300.0
    data_workers: int = 1
    prefetch_batches: int = 2

    def validate(self) -> None:
        """Check ranges.

        Raises:
            ConfigError: naming the field, the allowed range and the value.
        """
        super().validate()
        positive = (
            "max_steps",
            "batch_size",
            "grad_accumulation_steps",
            "keep_checkpoints",
            "bucket_batches",
            "prefetch_batches",
        )
        for name in positive:
            if getattr(self, name) < 1:
                raise ConfigError(f"trainer.{name}: expected >= 1, got {getattr(self, name)}", key=name)
        for name in ("warmup_steps", "eval_every_steps", "checkpoint_every_steps", "weight_decay", "data_workers"):
            if getattr(self, name) < 0:
                raise ConfigError(f"trainer.{name}: expected >= 0, got {getattr(self, name)}", key=name)
        if not self.learning_rate > 0 or not 0 <= self.adam_beta1 < 1 or not 0 <= self.adam_beta2 < 1:
            raise ConfigError(
                f"trainer: expected learning_rate > 0 and betas in [0, 1), got {self.learning_rate}, "
                f"{self.adam_beta1}, {self.adam_beta2}"
            )
        if not 0 < self.initial_loss_scale < math.inf:
            raise ConfigError(
                f"trainer.initial_loss_scale: expected a finite value > 0, got {self.initial_loss_scale}",
                key="initial_loss_scale",
            )
        if not 0 < self.distributed_timeout_s < math.inf:
            raise ConfigError(
                f"trainer.distributed_timeout_s: expected a finite number of seconds > 0, got "
                f"{self.distributed_timeout_s}",
                key="distributed_timeout_s",
            )
        if self.max_grad_norm is not None and not self.max_grad_norm > 0:
            raise ConfigError(
                f"trainer.max_grad_norm: expected > 0 or null, got {self.max_grad_norm}", key="max_grad_norm"
            )


def learning_rate_factor(config: TrainerConfig) -> Callable[[int], float]:
    """The schedule as a multiplier of ``learning_rate`` for 0-based step ``step``."""

    def factor(step: int) -> float:
        if step < config.warmup_steps:
            return (step + 1) / (config.warmup_steps + 1)
        if config.scheduler == "constant":
            return 1.0
        span = max(config.max_steps - config.warmup_steps, 1)
        progress = min((step - config.warmup_steps) / span, 1.0)
        if config.scheduler == "linear":
            return 1.0 - progress
        return 0.5 * (1.0 + math.cos(math.pi * progress))

    return factor


@dataclasses.dataclass(slots=True, kw_only=True)
class TrainerState:
    """Where a run is.

    Attributes:
        step: optimizer steps completed.
        epoch: current epoch of the sampler.
        batch_index: next micro-batch of the epoch (this rank's batch list).
        skipped_steps: steps not applied (non-finite loss with ``non_finite_loss="skip"``, or a
            float16 gradient overflow).
    """

    step: int = 0
    epoch: int = 0
    batch_index: int = 0
    skipped_steps: int = 0


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class TrainResult:
    """What :meth:`Trainer.fit` did.

    Attributes:
        step: optimizer steps completed.
        resumed_from: the step the run resumed from (``None`` for a fresh run).
        stop_reason: why it stopped before ``max_steps`` (``None`` when it reached them).
        metrics: the last step's metrics (and the last evaluation's); empty when this call ran
            no step (:attr:`already_complete`).
        checkpoint: the last checkpoint written, or, when this call wrote none, the one it
            resumed from (``None`` on ranks other than 0).
    """

    step: int
    resumed_from: int | None
    stop_reason: str | None
    metrics: Metrics
    checkpoint: Path | None

    @property
    def already_complete(self) -> bool:
        """Whether the run had reached ``max_steps`` before this call, which therefore ran no step."""
        return self.resumed_from is not None and self.step == self.resumed_from


def _records_digest(records: Sequence[ManifestRecord]) -> str:
    digest = hashlib.sha256()
    for record in records:
        digest.update(strict_json.dumps(record.to_dict()).encode("utf-8") + b"\n")
    return digest.hexdigest()


def _torch_writer(value: object) -> Callable[[BinaryIO], None]:
    def write(file: BinaryIO) -> None:
        torch.save(value, file)

    return write


def _bytes_writer(data: bytes) -> Callable[[BinaryIO], None]:
    def write(file: BinaryIO) -> None:
        file.write(data)

    return write


class Trainer:
    """Trains a family adapter's module on manifest records (see the module docstring).

    Args:
        adapter: the family adapter (from :class:`~voicehub.training.AutoTrainingAdapter`).
        config: the run's :class:`TrainerConfig`.
        train_records: training records (validated manifests).
        eval_records: evaluation records (may be empty).
        output_dir: where checkpoints go (``output_dir/checkpoints``), written by rank 0 only.
        callbacks: :class:`~voicehub.training.callbacks.TrainerCallback` objects, in call order.
        optimization: the training-mode optimization plan applied to the model before the adapter
            was built (``model.apply_optimization_plan(("lora",), mode="training")``): its pass
            routes the graph's optimizer parameters (a ``lora`` plan: the adapters only), and its
            passes and their configuration are part of the training plan a resume must match.

    Raises:
        TrainingError: for no training records, a module without trainable parameters, or an
            optimization plan applied in inference mode or already restored.
        OutputPathError: when ``output_dir`` exists and is not a directory (a file, ``/dev/null``)
            or cannot be written, before any step.
    """

    def __init__(
        self,
        adapter: TrainingAdapter,
        config: TrainerConfig,
        *,
        train_records: Sequence[ManifestRecord],
        eval_records: Sequence[ManifestRecord] = (),
        output_dir: str | os.PathLike[str],
        callbacks: Sequence[TrainerCallback] = (),
        optimization: OptimizationResult | None = None,
    ) -> None:
        if not train_records:
            raise TrainingError("no training records; give a manifest with at least one row")
        self.adapter = adapter
        self.config = config
        self.train_records = tuple(train_records)
        self.eval_records = tuple(eval_records)
        self.output_dir = check_output_directory(output_dir, what="training output_dir")
        self.callbacks = tuple(callbacks)
        self.module = adapter.module
        self.optimization = optimization
        self.parameters = self._optimizer_parameters()
        if not self.parameters:
            raise TrainingError(f"{adapter.spec.model_type}: every parameter is frozen; nothing to train")
        self.device = self.parameters[0].device
        self.store = CheckpointStore(self.output_dir / CHECKPOINT_DIR)
        self._resumed_checkpoint: Path | None = None
        self.state = TrainerState()
        self._stop_reason: str | None = None
        self._scaler: torch.amp.GradScaler | None = None
        self.dist = DistributedContext()

    def _optimizer_parameters(self) -> list[nn.Parameter]:
        """Trainable parameters: the plan's routing for the graph (if a plan is given), plus the adapter's heads."""
        if self.optimization is None:
            return [p for p in self.module.parameters() if p.requires_grad]
        if self.optimization.restored or self.optimization.context.mode is not OptimizationMode.TRAINING:
            raise TrainingError(
                "the optimization plan given to the Trainer must be active and applied with mode='training'; "
                "apply it with model.apply_optimization_plan(plan, mode='training') before building the adapter"
            )
        routed = {id(p) for p in self.optimization.optimizer_parameters()}
        in_graph = {id(p) for p in self.adapter.graph.parameters()}
        return [p for p in self.module.parameters() if p.requires_grad and (id(p) in routed or id(p) not in in_graph)]

    # ------------------------------------------------------------------ public
    @property
    def is_main(self) -> bool:
        """Whether this process is rank 0 (the one that writes)."""
        return self.dist.is_main

    def request_stop(self, reason: str) -> None:
        """Stop after the current step (a checkpoint is written); callbacks call this."""
        self._stop_reason = reason

    def plan(self) -> dict[str, Any]:
        """The training plan a checkpoint records and a resume must match."""
        hyper = {k: v for k, v in self.config.to_dict().items() if k not in _NOT_PLAN}
        if self.config.scheduler == "constant" and self.config.warmup_steps == 0:
            hyper.pop("max_steps")  # the trajectory does not depend on it: a run may be extended
        passes = []
        if self.optimization is not None:
            for entry in self.optimization.manifest()["passes"]:
                passes.append({"name": entry["name"], "configuration": entry["configuration"]})
        return {
            "adapter": self.adapter.describe(),
            "optimization": passes,
            "trainer": hyper,
            "train_records": _records_digest(self.train_records),
            "world_size": self.dist.world_size,
        }

    def fit(self, *, resume: bool = True) -> TrainResult:
        """Train to ``max_steps`` (or until a callback stops the run).

        Args:
            resume: continue from the newest valid checkpoint in ``output_dir`` when there is one;
                ``False`` refuses an output directory that already holds checkpoints.

        Returns:
            A :class:`TrainResult`.

        Raises:
            ResumeMismatchError: for a checkpoint written with another plan.
            TrainingError: for ``resume=False`` on a directory with checkpoints.
        """
        self.dist = DistributedContext.from_environment(device=self.device, timeout_s=self.config.distributed_timeout_s)
        try:
            with self.dist.stall_guard(self.config.distributed_timeout_s, where=lambda: f"step {self.state.step + 1}"):
                return self._fit(resume=resume)
        finally:
            self.dist.close()

    # ------------------------------------------------------------------ the loop
    def _fit(self, *, resume: bool) -> TrainResult:
        config = self.config
        self.state = TrainerState()
        self._stop_reason = None
        seed_everything(config.seed + self.dist.rank)
        optimizer = torch.optim.AdamW(
            self.parameters,
            lr=config.learning_rate,
            betas=(config.adam_beta1, config.adam_beta2),
            eps=config.adam_eps,
            weight_decay=config.weight_decay,
        )
        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, learning_rate_factor(config))
        self._scaler = grad_scaler(config.precision, self.device, initial_scale=config.initial_loss_scale)
        sampler = LengthBucketBatchSampler(
            [record.duration_s for record in self.train_records],
            batch_size=config.batch_size,
            seed=config.seed,
            bucket_batches=config.bucket_batches,
            num_replicas=self.dist.world_size,
            rank=self.dist.rank,
        )
        resumed_from = None
        last_checkpoint: Path | None = None
        if resume:
            resumed_from = self._resume(optimizer, scheduler)
            if resumed_from is not None and self.is_main:
                last_checkpoint = self._resumed_checkpoint
        else:
            self._refuse_existing()
        model: nn.Module = self.module
        if self.dist.enabled:
            model = nn.parallel.DistributedDataParallel(self.module)
        self.module.train()
        for callback in self.callbacks:
            callback.on_train_start(self)
        batches = sampler.global_batches(self.state.epoch)
        loaded = self._micro_batches(sampler)
        try:
            return self._loop(model, optimizer, scheduler, sampler, batches, loaded, resumed_from, last_checkpoint)
        finally:
            del loaded  # ends the data workers

    def _micro_batches(self, sampler: LengthBucketBatchSampler) -> Iterator[TrainingBatch | _CollateFailure]:
        """This rank's collated micro-batches from the run's position on, decoded by the data workers."""
        from torch.utils.data import DataLoader

        workers = self.config.data_workers
        loader = DataLoader(
            _Records(self.train_records),
            batch_sampler=_RankBatches(sampler, self.state.epoch, self.state.batch_index, self.dist),
            collate_fn=functools.partial(_collate, self.adapter),
            num_workers=workers,
            prefetch_factor=self.config.prefetch_batches if workers else None,
        )
        return iter(loader)

    def _loop(
        self,
        model: nn.Module,
        optimizer: torch.optim.Optimizer,
        scheduler: torch.optim.lr_scheduler.LRScheduler,
        sampler: LengthBucketBatchSampler,
        batches: list[list[int]],
        loaded: Iterator[TrainingBatch | _CollateFailure],
        resumed_from: int | None,
        last_checkpoint: Path | None,
    ) -> TrainResult:
        config = self.config
        world_size = self.dist.world_size
        metrics: Metrics = {}
        while self.state.step < config.max_steps and self._stop_reason is None:
            micro_batches: list[list[int]] = []  # the step's global batches: every rank knows their sizes
            for _ in range(config.grad_accumulation_steps):
                if self.state.batch_index >= len(batches):
                    self.state.epoch += 1
                    self.state.batch_index = 0
                    batches = sampler.global_batches(self.state.epoch)
                micro_batches.append(batches[self.state.batch_index])
                self.state.batch_index += 1
            step_records = sum(len(global_batch) for global_batch in micro_batches)
            loss_sum = 0.0  # sum over this rank's records of their losses
            step_batches: list[tuple[list[int], float]] = []
            for micro, global_batch in enumerate(micro_batches):
                indices = global_batch[self.dist.rank :: world_size]
                collated = next(loaded)  # the data workers decode the same index lists, in this order
                if isinstance(collated, _CollateFailure):
                    raise collated.error
                batch = collated.to(self.device)
                last_micro = micro == config.grad_accumulation_steps - 1
                sync = contextlib.nullcontext() if last_micro or not self.dist.enabled else model.no_sync()  # type: ignore[operator]
                # the share of the step this micro-batch's mean stands for; DDP then averages over the ranks
                share = step_records / (len(indices) * world_size)
                with sync:
                    with self._autocast():
                        loss = model(batch)["loss"]
                    scaled = loss / share
                    (self._scaler.scale(scaled) if self._scaler is not None else scaled).backward()
                loss_sum += float(loss.detach()) * len(indices)
                step_batches.append((indices, float(loss.detach())))
            mean_loss = self.dist.sum([loss_sum])[0] / step_records  # per record, the same on every rank
            learning_rate = float(optimizer.param_groups[0]["lr"])
            applied, grad_norm = self._apply_step(optimizer, mean_loss, step_batches)
            with warnings.catch_warnings():  # a skipped step still advances the schedule (torch warns)
                warnings.filterwarnings("ignore", re.escape("Detected call of `lr_scheduler.step()`"), UserWarning)
                scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            self.state.step += 1
            self.state.skipped_steps += 0 if applied else 1
            metrics = {"loss": mean_loss, "learning_rate": learning_rate, "grad_norm": grad_norm}
            if self.state.skipped_steps or self._scaler is not None:  # from the first skip on
                metrics["skipped_steps"] = float(self.state.skipped_steps)
            if self._scaler is not None:
                metrics["loss_scale"] = float(self._scaler.get_scale())
            for callback in self.callbacks:
                callback.on_step_end(self, metrics)
            at_end = self.state.step >= config.max_steps
            if self.eval_records and (
                (config.eval_every_steps and self.state.step % config.eval_every_steps == 0) or at_end
            ):
                evaluation = self.evaluate()
                metrics = {**metrics, **evaluation}
                for callback in self.callbacks:
                    callback.on_evaluate(self, evaluation)
            due = config.checkpoint_every_steps and self.state.step % config.checkpoint_every_steps == 0
            if due or (config.checkpoint_at_end and (at_end or self._stop_reason is not None)):
                last_checkpoint = self._save(optimizer, scheduler)
        for callback in self.callbacks:
            callback.on_train_end(self)
        return TrainResult(
            step=self.state.step,
            resumed_from=resumed_from,
            stop_reason=self._stop_reason,
            metrics=metrics,
            checkpoint=last_checkpoint if self.is_main else None,
        )

    def _autocast(self) -> contextlib.AbstractContextManager[object]:
        return autocast_context(self.config.precision, self.device)

    def _apply_step(
        self, optimizer: torch.optim.Optimizer, mean_loss: float, step_batches: list[tuple[list[int], float]]
    ) -> tuple[bool, float]:
        """Clip and step (through the float16 scaler if any); ``(applied, gradient norm)``.

        A non-finite loss, or a non-finite float32 gradient norm (the same on every rank: the loss is
        reduced, the gradients all-reduced), stops the run or skips the step per ``non_finite_loss``;
        the scaler itself skips a float16 step whose gradients overflowed.

        Raises:
            NonFiniteLossError: with ``non_finite_loss="stop"``, before anything is applied.
        """
        max_norm = self.config.max_grad_norm if self.config.max_grad_norm is not None else math.inf
        if math.isfinite(mean_loss) and self._scaler is not None:
            self._scaler.unscale_(optimizer)
            grad_norm = float(torch.nn.utils.clip_grad_norm_(self.parameters, max_norm))
            scale = self._scaler.get_scale()
            self._scaler.step(optimizer)  # skips the step when a gradient is inf or NaN
            self._scaler.update()
            return self._scaler.get_scale() >= scale, grad_norm
        grad_norm = math.nan
        if math.isfinite(mean_loss):
            grad_norm = float(torch.nn.utils.clip_grad_norm_(self.parameters, max_norm))
            if math.isfinite(grad_norm):
                optimizer.step()
                return True, grad_norm
        error = self._non_finite_error(mean_loss, grad_norm, step_batches)
        if self.config.non_finite_loss == "stop":
            raise error
        return False, grad_norm

    def _non_finite_error(
        self, mean_loss: float, grad_norm: float, step_batches: list[tuple[list[int], float]]
    ) -> NonFiniteLossError:
        bad = [indices for indices, loss in step_batches if not math.isfinite(loss)]
        chosen = bad or [indices for indices, _ in step_batches]
        batches = tuple((i, str(self.train_records[i].audio_path)) for indices in chosen for i in indices)
        shown = ", ".join(f"#{i} {Path(path).name}" for i, path in batches[:8]) + (" ..." if len(batches) > 8 else "")
        step = self.state.step + 1
        if math.isfinite(mean_loss):
            what, value = f"the loss is {mean_loss:.6g} but the gradient norm is {grad_norm}", grad_norm
            where = f"records of the step on rank {self.dist.rank}: {shown}"
        else:
            what, value = f"the loss is {mean_loss}", mean_loss
            origin = "" if bad else f" (on another rank; rank {self.dist.rank} had {shown})"
            where = f"non-finite batch records: {shown}" if bad else f"records{origin}"
        return NonFiniteLossError(
            f"step {step}: {what}; {where}. The step was not applied and no checkpoint was written (the last one "
            f"is still valid). Check those records (silent or corrupt audio, empty labels), lower learning_rate, "
            f"or set trainer.non_finite_loss = 'skip' to drop such steps",
            step=step,
            loss=value,
            batches=batches,
        )

    def evaluate(self) -> Metrics:
        """Mean loss over the evaluation records (each rank its slice; reduced), without gradients.

        Rank ``r`` of ``n`` scores records ``r, r + n, r + 2n, ...`` (the unwrapped module: no
        collective call per batch, so ranks may run different numbers of batches); the summed
        losses and counts are then reduced, so every record counts exactly once whatever the
        number of records, ranks and batch size.

        Returns:
            ``{"eval_loss": ...}`` (utterance-weighted mean).
        """
        mine = list(range(self.dist.rank, len(self.eval_records), self.dist.world_size))
        batches: list[list[int]] = []
        if mine:
            sampler = LengthBucketBatchSampler(
                [self.eval_records[i].duration_s for i in mine],
                batch_size=self.config.batch_size,
                shuffle=False,
                bucket_batches=1,
            )
            batches = [[mine[i] for i in local] for local in sampler.batches(0)]
        total, count = 0.0, 0.0
        was_training = self.module.training
        self.module.eval()
        try:
            with torch.no_grad(), self._autocast():
                for indices in batches:
                    batch: TrainingBatch = self.adapter.collate([self.eval_records[i] for i in indices])
                    loss = self.module(batch.to(self.device))["loss"]
                    total += float(loss) * batch.size
                    count += batch.size
        finally:
            self.module.train(was_training)
        total, count = self.dist.sum([total, count])
        return {"eval_loss": total / max(count, 1.0)}

    # ------------------------------------------------------------------ checkpoints
    def _callback_states(self) -> list[object]:
        states: list[object] = []
        for callback in self.callbacks:
            if isinstance(callback, EarlyStopping):
                state = callback.state_dict()
                states.append({**state, "best": state["best"] if math.isfinite(state["best"]) else None})
            else:
                states.append(None)
        return states

    def _save(self, optimizer: torch.optim.Optimizer, scheduler: torch.optim.lr_scheduler.LRScheduler) -> Path | None:
        bad = [name for name, p in self.module.named_parameters() if not bool(torch.isfinite(p.detach()).all())]
        if bad:
            raise TrainingError(
                f"step {self.state.step}: {len(bad)} parameter tensor(s) hold NaN or inf values "
                f"({', '.join(bad[:3])}); no checkpoint was written (the last one is still valid); "
                f"lower learning_rate or check the data"
            )
        rng_states = self.dist.gather(capture_rng_state())
        path: Path | None = None
        if self.is_main:
            state = {
                **dataclasses.asdict(self.state),
                "plan": self.plan(),
                "callbacks": self._callback_states(),
            }
            checkpoint = self.store.save(
                self.state.step,
                {
                    MODEL_FILE: _torch_writer(self.module.state_dict()),
                    OPTIMIZER_FILE: _torch_writer(self._optimizer_state(optimizer, scheduler)),
                    RNG_FILE: _torch_writer({"ranks": rng_states}),
                    STATE_FILE: _bytes_writer(strict_json.dumps(state, indent=2).encode("utf-8")),
                },
            )
            self.store.prune(self.config.keep_checkpoints)
            path = checkpoint.path
        self.dist.barrier()
        shared = self.dist.broadcast(str(path) if path is not None else None)
        for callback in self.callbacks:
            callback.on_checkpoint(self, Path(str(shared)))
        return path

    def _optimizer_state(
        self, optimizer: torch.optim.Optimizer, scheduler: torch.optim.lr_scheduler.LRScheduler
    ) -> dict[str, Any]:
        state: dict[str, Any] = {"optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict()}
        if self._scaler is not None:
            state["grad_scaler"] = self._scaler.state_dict()
        return state

    def _refuse_existing(self) -> None:
        if self.store.candidates():
            raise TrainingError(
                f"{self.store.directory} already holds checkpoints; resume (resume=True, or --resume) or choose "
                f"another output directory"
            )

    def _resume(self, optimizer: torch.optim.Optimizer, scheduler: torch.optim.lr_scheduler.LRScheduler) -> int | None:
        found: Checkpoint | None = None
        if self.is_main:
            found = self.store.latest()
        chosen = self.dist.broadcast(str(found.path) if found is not None else None)
        if chosen is None:
            return None
        checkpoint = found if found is not None else self.store.verify(Path(str(chosen)))
        self._resumed_checkpoint = checkpoint.path
        try:
            state = strict_json.loads(checkpoint.file(STATE_FILE).read_bytes())
        except ValueError as err:
            raise TrainingCheckpointError(
                f"{checkpoint.path}: unreadable {STATE_FILE}: {err}", path=checkpoint.path
            ) from err
        differences = tuple(_differences(state["plan"], strict_json.loads(strict_json.dumps(self.plan()))))
        if differences:
            raise ResumeMismatchError(checkpoint.path, differences)
        self.module.load_state_dict(self._load(checkpoint, MODEL_FILE))
        saved = self._load(checkpoint, OPTIMIZER_FILE)
        optimizer.load_state_dict(saved["optimizer"])
        scheduler.load_state_dict(saved["scheduler"])
        if self._scaler is not None:
            if "grad_scaler" not in saved:
                raise TrainingCheckpointError(
                    f"{checkpoint.path}: {OPTIMIZER_FILE} has no float16 gradient-scaler state; it was not written by "
                    f"a float16 run; start a new run in another output directory",
                    path=checkpoint.path,
                )
            self._scaler.load_state_dict(saved["grad_scaler"])
        restore_rng_state(self._load(checkpoint, RNG_FILE)["ranks"][self.dist.rank])
        self.state = TrainerState(
            step=state["step"],
            epoch=state["epoch"],
            batch_index=state["batch_index"],
            skipped_steps=state.get("skipped_steps", 0),
        )
        for callback, callback_state in zip(self.callbacks, state["callbacks"], strict=False):
            if isinstance(callback, EarlyStopping) and callback_state is not None:
                best = callback_state["best"]
                callback.load_state_dict(
                    {
                        **callback_state,
                        "best": best if best is not None else (math.inf if callback.mode == "min" else -math.inf),
                    }
                )
        return checkpoint.step

    def _load(self, checkpoint: Checkpoint, name: str) -> Any:
        data = checkpoint.file(name).read_bytes()
        try:
            return torch.load(io.BytesIO(data), map_location=self.device, weights_only=True)
        except Exception as err:  # torch raises several types for a damaged pickle
            raise TrainingCheckpointError(
                f"{checkpoint.path}: cannot load {name}: {err}", path=checkpoint.path
            ) from err


def _differences(saved: Any, current: Any, prefix: str = "") -> Iterator[tuple[str, object, object]]:
    if isinstance(saved, dict) and isinstance(current, dict):
        for key in sorted(set(saved) | set(current)):
            yield from _differences(saved.get(key), current.get(key), f"{prefix}.{key}" if prefix else key)
    elif saved != current:
        yield (prefix, saved, current)


__all__ = ["TrainResult", "Trainer", "TrainerConfig", "TrainerState", "learning_rate_factor"]

"""What ``fit`` trains with, and its sync points (notebooks 08 and 11; paper §5).

:func:`start_training` builds everything once, before the first step — the seeds, the model, the optimizer and
its schedule, the state of a resumed run, ``torch.compile`` and the DDP wrapper — into a :class:`Training`;
:func:`~transformer_course.train.loop.fit` then runs its epochs on it. Two of its methods are the loop's sync
points: :meth:`Training.check` reads the losses and weight maxima kept on the device (one transfer) and stops
the run at the first that is not finite; :meth:`Training.checkpoint_last` checks, then writes ``last.pt``.
"""

from __future__ import annotations

import math
import os
import random
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import torch
from torch import nn

from ..checkpoint import unwrap
from ..config import Config, check_fits_in_memory
from ..data import PAD, TrainingData
from ..integrity import first_non_finite, tensors
from ..model import build_model
from .budget import BudgetPlanner
from .distributed import Distributed
from .ema import EMA
from .loss import LabelSmoothingLoss
from .options import RunOptions
from .schedule import make_optimizer, make_scheduler
from .state import RunState, restore_run, save_last
from .step import PendingChecks, TrainingDiverged

__all__ = ["Training", "resolved_options", "start_training", "training_device"]


@dataclass
class Training:
    """A run in progress: what it trains, where it stands, what it was asked to do."""

    config: Config
    data: TrainingData
    options: RunOptions  # as fit was given them, the defaults filled in (resolved_options)
    model: nn.Module  # compiled and DDP-wrapped where asked; unwrap(model) is the plain Transformer
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LRScheduler
    loss_fn: LabelSmoothingLoss
    run: RunState  # the counters and the history, saved in last.pt
    saved_rng: dict | None  # a resumed run's random states, set once its first epoch's batches are set up
    last_good: tuple[Path, int] | None  # (path, step) of a checkpoint known good: written from finite weights
    pending: PendingChecks  # losses and weight maxima not yet read back from the device
    planner: BudgetPlanner  # the length of a schedule="budget" run
    dist: Distributed
    writer: bool  # this process writes the files (the main one, with an out_dir)
    accumulate: int  # micro-batches per optimizer step
    after_step: Callable[[int, nn.Module], None] | None  # a test's hook, called after every optimizer step
    ema: EMA | None = None  # Config.ema_decay > 0: the running average of the weights (train/ema.py)

    @property
    def out(self) -> Path | None:
        return self.options.out_dir

    @property
    def device(self) -> torch.device:
        return self.options.device

    def diverged(self, what: str) -> TrainingDiverged:
        """The error that stops the run: what went wrong, where, the last good checkpoint, what to change."""
        if self.last_good is not None:
            path, step = self.last_good
            good = f"The last good checkpoint is {path} (step {step}; written from weights checked finite)"
        elif self.out is None:
            good = "No checkpoint exists (no out_dir)"
        else:
            good = f"No good checkpoint exists: none was written in {self.out} before this step"
        return TrainingDiverged(
            f"{what} (epoch {self.run.epoch + 1}); stopped without saving. {good}. "
            f"Lower lr_factor (now {self.config.lr_factor}), raise warmup (now {self.config.warmup}) or set clip_norm."
        )

    def check(self) -> None:
        """The sync point: read the pending losses and weight maxima (one transfer), add the losses to
        the logging window, and stop at the first step whose loss or update was not finite."""
        losses, weights = self.pending.read()
        for _, value in losses:
            self.run.window.add_loss(value)
        bad_loss = next(((step, v) for step, v in losses if not math.isfinite(v)), None)
        bad_update = next((step for step, v in weights if not math.isfinite(v)), None)
        if bad_loss is not None and (bad_update is None or bad_loss[0] <= bad_update):
            raise self.diverged(f"the loss became {bad_loss[1]} at step {bad_loss[0]}")  # before that step's update
        if bad_update is not None:
            bad = first_non_finite(unwrap(self.model).named_parameters())  # which weight (it stays non-finite)
            raise self.diverged(f"the update of step {bad_update} made the weight '{bad}' NaN or infinite")

    def checkpoint_last(self) -> None:
        """Check every loss and weight since the last check and the optimizer state, then write ``last.pt``."""
        self.check()
        bad = first_non_finite(tensors(self.optimizer.state_dict()))
        if bad is not None:
            raise self.diverged(f"the optimizer state '{bad}' became NaN or infinite after step {self.run.step}")
        if self.writer:
            save_last(
                self.out / "last.pt",
                self.run,
                self.model,
                self.config,
                self.data,
                self.optimizer,
                self.scheduler,
                self.ema,
            )
            self.last_good = (self.out / "last.pt", self.run.step)


def resolved_options(options: RunOptions, config: Config, dist: Distributed) -> RunOptions:
    """``options`` with nothing left to choose: the out_dir a Path, the epochs ``config.epochs`` unless given,
    the device (:func:`training_device`), autocast on CUDA only unless given, progress on the main process only."""
    device = training_device(options.device, dist)
    return replace(
        options,
        out_dir=Path(options.out_dir) if options.out_dir is not None else None,
        epochs=config.epochs if options.epochs is None else options.epochs,
        device=device,
        autocast=device.type == "cuda" if options.autocast is None else options.autocast,
        progress=options.progress and dist.is_main,
    )


def training_device(device: str | torch.device | None, dist: Distributed) -> torch.device:
    """``device``, else CUDA when there is one, else the CPU; under DDP each process takes its own GPU."""
    device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    if device.type == "cuda" and dist.enabled:
        device = torch.device("cuda", dist.local_rank)
    return device


def start_training(
    config: Config,
    data: TrainingData,
    options: RunOptions,
    dist: Distributed,
    writer: bool,
    optimizer_factory: Callable[[nn.Module], torch.optim.Optimizer] | None = None,
    after_step: Callable[[int, nn.Module], None] | None = None,
) -> Training:
    """Seed, build the model, its optimizer and schedule, put back ``out_dir/last.pt`` when resuming, compile
    and wrap for DDP where asked. ``options``: resolved (:func:`resolved_options`)."""
    device, out = options.device, options.out_dir
    on_gpu = torch.cuda.get_device_properties(device).total_memory if device.type == "cuda" else None
    check_fits_in_memory(config, len(data.src_vocab), len(data.tgt_vocab), on_gpu)  # before a byte is allocated
    torch.manual_seed(config.seed)
    random.seed(config.seed)
    model = build_model(config, len(data.src_vocab), len(data.tgt_vocab)).to(device)
    optimizer = (optimizer_factory or make_optimizer)(model)
    scheduler = make_scheduler(optimizer, config)
    ema = EMA(model, config.ema_decay) if config.ema_decay > 0 else None  # starts as the initial weights
    run, saved_rng, last_good = RunState(), None, None
    if options.resume:
        run, saved_rng = restore_run(out / "last.pt", config, data, model, optimizer, scheduler, ema)
        last_good = (out / "last.pt", run.step)  # its checksums matched and its values are finite
    if options.compile:
        os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", "/tmp/torchinductor_cache")
        # Length-bucketed batches change shape at almost every step: dynamic=True compiles one graph with
        # symbolic sizes instead of one per shape (benchmarks/compile_vs_eager.py).
        model = torch.compile(model, dynamic=True)
    if dist.enabled:
        model = nn.parallel.DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)
    loss_fn = LabelSmoothingLoss(config.label_smoothing, PAD, reduction="sum", fused=config.fused_loss)
    accumulate = max(1, config.accumulate)
    budget = options.max_minutes if options.budget_minutes is None else options.budget_minutes
    planner = BudgetPlanner(scheduler, data, options.epochs, accumulate, options.max_steps, budget, dist)
    return Training(
        config=config, data=data, options=options, model=model, optimizer=optimizer, scheduler=scheduler,
        loss_fn=loss_fn, run=run, saved_rng=saved_rng, last_good=last_good, pending=PendingChecks(),
        planner=planner, dist=dist, writer=writer, accumulate=accumulate, after_step=after_step, ema=ema,
    )  # fmt: skip

"""The training loop, ``fit`` (notebooks 08 and 11; paper §5).

The loop notebook 08 teaches — forward, loss, backward, optimizer step, schedule step — with what a real
run adds around it, each as a small named step:

    for each epoch:
        for each group of ≤ config.accumulate micro-batches:       one optimizer step
            for each micro-batch of the group:                     the inner accumulation loop
                forward, loss per target token, backward           (gradients add up)
            clip, optimizer step, schedule step, keep max |weight| on the device
            on log steps: read the kept losses and weights (one sync), log · save last.pt · stop
        every validate_every epochs: validate · best.pt, epoch-NNN.pt, last.pt, history, loss plot

Gradient accumulation (as nanoGPT's ``train.py`` does it) makes one update out of several micro-batches,
so an update can see a larger batch than fits in memory. Under DDP only the last micro-batch of a group
all-reduces the gradients (the others run under ``no_sync()``): one all-reduce per update, and every
rank steps with the same averaged gradient.

A run never calls a broken model good: the loss of every micro-batch and the weights after every update
are checked to be finite, and a NaN or ±inf stops the run with :class:`TrainingDiverged` before anything
is written (the checks are kept on the device and read in one transfer on log steps, before each save and at
each epoch end — no step waits for the device otherwise; see :mod:`.step`), naming the last checkpoint that is good (written from weights checked finite) or saying that
none exists. The run folder is locked while the run writes to it (:mod:`.folder`); a run killed at any
moment, even by SIGKILL, resumes from ``last.pt`` to the same weights and history as a run that never stopped.
"""

from __future__ import annotations

import contextlib
import math
import os
import random
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from ..checkpoint import unwrap
from ..config import Config
from ..data import PAD, TrainingData
from ..files import crash_point
from ..integrity import first_non_finite, tensors
from ..layers import token_ids_checked
from ..model import Transformer, build_model
from ..rng import set_rng_states
from .budget import BudgetPlanner
from .distributed import Distributed, setup_distributed
from .folder import claimed_run_folder
from .history import LogWindow
from .loss import LabelSmoothingLoss
from .schedule import make_optimizer, make_scheduler
from .state import RunState, check_run_inputs, end_epoch, restore_run, save_last
from .step import (
    PendingChecks,
    TrainingDiverged,
    accumulation_groups,
    loss_on_batch,
    optimizer_step,
    prepare_batch,
    validation_loss,
)

__all__ = ["FitResult", "fit"]


@dataclass
class FitResult:
    model: Transformer  # the trained model, unwrapped, in eval mode
    history: list[dict]
    step: int
    epoch: int
    out_dir: Path | None
    train_seconds: float
    stopped_by: str  # "epochs", "max_steps" or "max_minutes"


def fit(
    config: Config,
    data: TrainingData,
    out_dir: str | Path | None = None,
    *,
    epochs: int | None = None,
    max_minutes: float | None = None,
    max_steps: int | None = None,
    budget_minutes: float | None = None,
    resume: bool = False,
    overwrite: bool = False,
    device: str | torch.device | None = None,
    compile: bool = False,
    autocast: bool | None = None,
    save_every: int | None = None,
    log_every: int = 10,
    keep_epochs: bool = True,
    progress: bool = True,
    dist: Distributed | None = None,
    optimizer_factory: Callable[[nn.Module], torch.optim.Optimizer] | None = None,
    after_step: Callable[[int, nn.Module], None] | None = None,
) -> FitResult:
    """Train a model of ``config`` on ``data``.

    Stops after ``epochs`` (default ``config.epochs``), ``max_steps`` optimizer steps or ``max_minutes``
    of training time (counted over resumes), whichever comes first. With ``out_dir`` it writes
    ``last.pt`` (every ``save_every`` steps, each epoch end and at the stop), ``epoch-NNN.pt`` (model only,
    for averaging), ``best.pt`` (lowest validation loss), ``history.json``/``.csv`` and ``loss.png``.
    ``resume=True`` continues from ``out_dir/last.pt`` exactly where it stopped (only a ``last.pt`` of that
    folder's own run: ``resume="adopt"`` continues one copied from another run as a new run). A folder that
    already holds a run is refused unless ``resume`` or ``overwrite=True`` (which removes the files fit wrote
    there) is given; the check is made holding the lock. ``out_dir`` is locked
    while the run writes to it (a second run on it raises :class:`~transformer_course.checkpoint.RunLockedError`).
    A NaN or infinite loss or weight raises :class:`TrainingDiverged` before anything is written; the loss and
    weights are read back from the device only on log steps, before saves and at epoch ends (one sync each;
    every step when ``after_step`` is given, so that the callback never sees weights not checked finite).

    With ``config.schedule == "budget"`` the schedule's length is planned from ``epochs``/``max_steps``, or
    with a time budget from the step rate of the first seconds; ``budget_minutes`` (default ``max_minutes``)
    is the time it plans for, for a run stopped early on purpose and resumed (notebook 11's two phases).
    A run resumed with a longer budget stretches its decay to the new end.

    ``autocast``: None runs the forward pass in bfloat16 mixed precision on CUDA and in float32 elsewhere;
    True or False forces it on or off (True on a CPU rehearses the GPU path). ``optimizer_factory``
    replaces :func:`~transformer_course.train.make_optimizer` (the paper's Adam), e.g. with plain SGD in a
    test; ``after_step(step, model)`` is called after every optimizer step with the plain (unwrapped) model.
    """
    dist = dist or setup_distributed()
    device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    if device.type == "cuda" and dist.enabled:
        device = torch.device("cuda", dist.local_rank)
    out = Path(out_dir) if out_dir is not None else None
    if resume and out is None:
        raise ValueError("resume=True needs the out_dir of the run to resume")
    writer = out is not None and dist.is_main  # one process writes the files, holding the folder's lock
    epochs = config.epochs if epochs is None else epochs
    autocast = device.type == "cuda" if autocast is None else autocast
    check_run_inputs(config, data)  # a config that says subwords needs the data's tokenizer
    # the lock and the check that out holds no run (unless resume / overwrite) are one step (train/folder.py)
    with claimed_run_folder(out, resume, overwrite) if writer else contextlib.nullcontext():
        torch.manual_seed(config.seed)
        random.seed(config.seed)
        model = build_model(config, len(data.src_vocab), len(data.tgt_vocab)).to(device)
        optimizer = (optimizer_factory or make_optimizer)(model)
        scheduler = make_scheduler(optimizer, config)
        run, saved_rng, last_good = RunState(), None, None  # last_good: (path, step) of a checkpoint known good
        if resume:
            run, saved_rng = restore_run(out / "last.pt", config, data, model, optimizer, scheduler)
            last_good = (out / "last.pt", run.step)  # its checksums matched and its values are finite
        if compile:
            os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", "/tmp/torchinductor_cache")
            # Length-bucketed batches change shape at almost every step: dynamic=True compiles one graph with
            # symbolic sizes instead of one per shape (benchmarks/compile_vs_eager.py).
            model = torch.compile(model, dynamic=True)
        if dist.enabled:
            model = nn.parallel.DistributedDataParallel(
                model, device_ids=[device.index] if device.type == "cuda" else None
            )
        loss_fn = LabelSmoothingLoss(config.label_smoothing, PAD, reduction="sum")
        accumulate = max(1, config.accumulate)
        pending = PendingChecks()  # losses and weight maxima not yet read back from the device
        budget = max_minutes if budget_minutes is None else budget_minutes
        planner = BudgetPlanner(scheduler, data, epochs, accumulate, max_steps, budget, dist, device)

        def diverged(what: str) -> TrainingDiverged:
            return _diverged(what, run, config, out, last_good)

        def check() -> None:
            """The sync point: read the pending losses and weight maxima (one transfer), add the losses to
            the logging window, and stop at the first step whose loss or update was not finite."""
            losses, weights = pending.read()
            for _, value in losses:
                run.window.add_loss(value)
            bad_loss = next(((step, v) for step, v in losses if not math.isfinite(v)), None)
            bad_update = next((step for step, v in weights if not math.isfinite(v)), None)
            if bad_loss is not None and (bad_update is None or bad_loss[0] <= bad_update):
                raise diverged(f"the loss became {bad_loss[1]} at step {bad_loss[0]}")  # before that step's update
            if bad_update is not None:
                bad = first_non_finite(unwrap(model).named_parameters())  # which weight (it stays non-finite)
                raise diverged(f"the update of step {bad_update} made the weight '{bad}' NaN or infinite")

        def checkpoint_last() -> None:
            nonlocal last_good
            check()  # every loss and weight since the last check is finite before anything is written
            bad = first_non_finite(tensors(optimizer.state_dict()))
            if bad is not None:
                raise diverged(f"the optimizer state '{bad}' became NaN or infinite after step {run.step}")
            if writer:
                save_last(out / "last.pt", run, model, config, data, optimizer, scheduler)
                last_good = (out / "last.pt", run.step)

        stopped_by = None
        model.train()
        while run.epoch < epochs and stopped_by is None:
            batches = data.train_batches(run.epoch, run.batch_in_epoch)
            if saved_rng is not None:  # after the sampler has set up this epoch, as in the straight run
                set_rng_states(saved_rng)
                saved_rng = None
            bar = _progress(batches, data.batches_per_epoch(run.epoch), run, epochs, progress and dist.is_main)
            tick = time.monotonic()
            # Groups start at multiples of `accumulate` within the epoch. A run saves only after an optimizer
            # step, so it resumes at a group boundary and forms the same groups as a run that never stopped.
            for group in accumulation_groups(bar, accumulate):
                for i, batch in enumerate(group):  # the inner accumulation loop
                    batch = prepare_batch(batch, model, run.window, device)  # ids checked, tokens counted, moved
                    # Only the group's last micro-batch all-reduces, a short last group's too; the others
                    # add their gradients up locally under no_sync().
                    sync = i == len(group) - 1
                    with model.no_sync() if dist.enabled and not sync else contextlib.nullcontext():
                        with token_ids_checked():  # prepare_batch checked them: no read-back in the embeddings
                            loss_sum = loss_on_batch(model, batch, loss_fn, autocast)  # summed over target tokens
                        # The update follows the mean over the group of each micro-batch's loss per token. A
                        # short last group is divided by its own length, not by `accumulate`: each update is
                        # then the same kind of mean and takes a full-size step wherever the epoch ends
                        # (dividing by `accumulate` would shrink that one update by len(group) / accumulate).
                        (loss_sum / max(int(batch.n_tokens), 1) / len(group)).backward()
                    pending.add_loss(run.step + 1, loss_sum)  # checked finite at the next check(), no sync now
                    run.batch_in_epoch += 1
                crash_point("train-step")  # a test hook (files.crash_point): gradients computed, no update yet
                optimizer_step(model, optimizer, scheduler, config.clip_norm)
                run.step += 1
                pending.add_weights(run.step, model)  # max |weight|, checked finite at the next check()
                log_step = run.step % log_every == 0
                synced = log_step or after_step is not None or planner.wants_sync(run)
                if synced:
                    check()  # a sync point: only on log steps (and where a callback or the plan needs one)
                now = time.monotonic()
                run.train_seconds, tick = run.train_seconds + now - tick, now
                planner.after_step(run, synced, log_step)
                if after_step is not None:
                    after_step(run.step, unwrap(model))
                if log_step:
                    _log(run, scheduler.get_last_lr()[0], bar if progress and dist.is_main else None)
                if save_every and run.step % save_every == 0:
                    checkpoint_last()
                    tick = time.monotonic()  # saving is not training time
                stopped_by = _stop_reason(run, max_steps, max_minutes, dist, log_step, device)
                if stopped_by is not None:
                    break
            if stopped_by is None:  # the epoch ended
                run.epoch, run.batch_in_epoch = run.epoch + 1, 0
                if run.epoch % config.validate_every and run.epoch < epochs:
                    continue  # not an epoch to validate after (config.validate_every): train on
            check()  # before validation and the epoch's files: every step of the epoch was finite
            val_loss = validation_loss(model, data.val_batches(), loss_fn, device, dist, autocast)
            if not math.isfinite(val_loss):
                raise diverged(f"the validation loss became {val_loss} after step {run.step}")
            lr = scheduler.get_last_lr()[0]
            end_epoch(run, val_loss, lr, stopped_by is None, model, config, data, out if writer else None, keep_epochs)
            checkpoint_last()
            if progress and dist.is_main:
                print(
                    f"epoch {run.history[-1]['epoch']}: step {run.step}, validation loss {val_loss:.4f}, "
                    f"{run.train_seconds / 60:.1f} min",
                    flush=True,
                )
            if dist.enabled:
                torch.distributed.barrier()
        model = unwrap(model).eval()
        return FitResult(model, run.history, run.step, run.epoch, out, run.train_seconds, stopped_by or "epochs")


def _log(run: RunState, lr: float, bar) -> None:
    """One history row for the steps since the last one; the window starts again."""
    entry = run.window.row(run.step, run.epoch + 1, lr, run.train_seconds)
    run.history.append(entry)
    run.window = LogWindow(start_seconds=run.train_seconds)
    if bar is not None:
        bar.set_postfix(loss=f"{entry['loss']:.3f}", lr=f"{entry['lr']:.2e}", tok_s=f"{entry['tokens_per_s']:.0f}")


def _stop_reason(
    run: RunState, max_steps: int | None, max_minutes: float | None, dist: Distributed, log_step: bool, device
) -> str | None:
    """ "max_steps" or "max_minutes" when the run must stop after this step, else None."""
    if max_steps is not None and run.step >= max_steps:
        return "max_steps"
    over = max_minutes is not None and run.train_seconds >= 60 * max_minutes
    if dist.enabled and max_minutes is not None:
        # Every rank must stop at the same step: rank 0's clock decides, read on log steps only (the same
        # steps on every rank), so that the broadcast is no sync per step.
        if not log_step:
            return None
        flag = torch.tensor([float(over)], device=device if device.type == "cuda" else "cpu")
        torch.distributed.broadcast(flag, src=0)
        over = bool(flag.item())
    return "max_minutes" if over else None


def _diverged(what: str, run: RunState, config: Config, out: Path | None, last_good) -> TrainingDiverged:
    if last_good is not None:
        good = f"The last good checkpoint is {last_good[0]} (step {last_good[1]}; written from weights checked finite)"
    elif out is None:
        good = "No checkpoint exists (no out_dir)"
    else:
        good = f"No good checkpoint exists: none was written in {out} before this step"
    return TrainingDiverged(
        f"{what} (epoch {run.epoch + 1}); stopped without saving. {good}. "
        f"Lower lr_factor (now {config.lr_factor}), raise warmup (now {config.warmup}) or set clip_norm."
    )


def _progress(batches, total: int | None, run: RunState, epochs: int, enabled: bool):
    """A tqdm bar around the epoch's batches (started at the batch a resumed run continues from)."""
    if not enabled:
        return batches
    from tqdm.auto import tqdm

    # In a log file (not a terminal) redraw rarely, so that the log stays readable.
    return tqdm(
        batches,
        total=total,
        initial=run.batch_in_epoch,
        desc=f"epoch {run.epoch + 1}/{epochs}",
        unit="batch",
        dynamic_ncols=True,
        mininterval=0.1 if sys.stderr.isatty() else 30.0,
    )

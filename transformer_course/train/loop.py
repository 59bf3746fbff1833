"""The training loop, ``fit`` (notebooks 08 and 11; paper §5).

The loop notebook 08 teaches — forward, loss, backward, optimizer step, schedule step — with what a real
run adds around it. It reads top to bottom, each part a function named for what it does:

    fit(config, data, RunOptions(...))
        start_training             seed, model, optimizer, schedule, resume from last.pt, compile, DDP  (.training)
        train_epochs               epoch after epoch, until the epochs are done or a limit stops the run
            train_epoch            for each group of ≤ config.accumulate micro-batches, one optimizer step:
                accumulate_gradients   forward, loss per target token, backward for each micro-batch (they add up)
                optimizer_step         clip, update, the next rate (learning_rate, in .schedule) · the EMA
                check_update           max |weight| kept on the device; on log steps Training.check reads
                                       the kept losses and weights (one sync) · then log · last.pt · stop?
            validate_and_save      every validate_every epochs and at the stop: validation · best.pt,
                                   epoch-NNN.pt, last.pt, history (with Config.ema_decay: the EMA's
                                   validation, ema.pt, best-ema.pt)

Gradient accumulation (as nanoGPT's ``train.py`` does it) makes one update out of several micro-batches,
so an update can see a larger batch than fits in memory. Under DDP only the last micro-batch of a group
all-reduces the gradients (the others run under ``no_sync()``): one all-reduce per update, and every
rank steps with the same averaged gradient.

A run never calls a broken model good: the loss of every micro-batch and the weights after every update
are checked to be finite, and a NaN or ±inf stops the run with :class:`TrainingDiverged` before anything
is written (the checks are kept on the device and read in one transfer on log steps, before each save and at
each epoch end — no step waits for the device otherwise; see :mod:`.step`), naming the last checkpoint that
is good (written from weights checked finite) or saying that none exists. The run folder is locked while the
run writes to it (:mod:`.folder`); a run killed at any moment, even by SIGKILL, resumes from ``last.pt`` to the same weights and history as a run that never stopped.
"""

from __future__ import annotations

import contextlib
import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from ..checkpoint import unwrap
from ..config import Config
from ..data import Batch, TrainingData
from ..data.batching import word_dropout
from ..files import crash_point
from ..layers import token_ids_checked
from ..model import Transformer
from ..rng import set_rng_states
from .distributed import Distributed, broadcast_from_main, setup_distributed
from .folder import claimed_run_folder
from .history import LogWindow
from .options import RunOptions
from .state import RunState, check_run_inputs, end_epoch
from .step import accumulation_groups, loss_on_batch, optimizer_step, prepare_batch, validation_loss
from .training import Training, resolved_options, start_training

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
    ema: Transformer | None = None  # with Config.ema_decay: the EMA of the weights, in eval mode


def fit(
    config: Config,
    data: TrainingData,
    options: RunOptions | None = None,
    *,
    dist: Distributed | None = None,
    optimizer_factory: Callable[[nn.Module], torch.optim.Optimizer] | None = None,
    after_step: Callable[[int, nn.Module], None] | None = None,
) -> FitResult:
    """Train a model of ``config`` on ``data``; ``options`` (:class:`RunOptions`) say where the run writes, how
    long it runs and on what: ``fit(config, data, RunOptions("runs/toy", max_minutes=5))``.

    It stops after ``options.epochs`` (default ``config.epochs``), ``max_steps`` optimizer steps or
    ``max_minutes`` of training time (counted over resumes), whichever comes first. With an ``out_dir`` it writes
    ``last.pt`` (every ``save_every`` steps, each epoch end and at the stop), ``epoch-NNN.pt`` (model only, for
    averaging), ``best.pt`` (lowest validation loss), ``history.json``/``.csv`` and ``loss.png``.
    ``resume=True`` continues from ``out_dir/last.pt`` exactly where it stopped (only a ``last.pt`` of that
    folder's own run: ``resume="adopt"`` continues one copied from another run as a new run). A folder that
    already holds a run is refused unless ``resume`` or ``overwrite=True`` (which removes the files fit wrote
    there) is given; the check is made holding the lock. ``out_dir`` is locked while the run writes to it (a
    second run on it raises :class:`~transformer_course.checkpoint.RunLockedError`).
    A NaN or infinite loss or weight raises :class:`TrainingDiverged` before anything is written; the loss and
    weights are read back from the device only on log steps, before saves and at epoch ends (one sync each;
    every step when ``after_step`` is given, so that the callback never sees weights not checked finite).

    With ``config.schedule == "budget"`` the schedule's length is planned from ``epochs``/``max_steps``, or
    with a time budget from the step rate of the first seconds; ``budget_minutes`` (default ``max_minutes``)
    is the time it plans for, for a run stopped early on purpose and resumed (notebook 11's two phases).
    A run resumed with a longer budget stretches its decay to the new end.

    Three hooks, for tests and tools: ``dist`` replaces the process group read from ``torchrun``'s environment
    (:func:`~transformer_course.train.setup_distributed`); ``optimizer_factory(model)`` replaces
    :func:`~transformer_course.train.make_optimizer` (the paper's Adam), e.g. with plain SGD;
    ``after_step(step, model)`` is called after every optimizer step with the plain (unwrapped) model.
    """
    if options is not None and not isinstance(options, RunOptions):
        raise TypeError(
            f"fit's third argument is a RunOptions, got {type(options).__name__}; "
            f"write fit(config, data, RunOptions(out_dir={options!r}, …))"
        )
    dist = dist or setup_distributed()
    options = resolved_options(options or RunOptions(), config, dist)  # the defaults filled in: device, epochs …
    check_run_inputs(config, data)  # a config that says subwords needs the data's tokenizer
    writer = options.out_dir is not None and dist.is_main  # one process writes the files, holding the folder's lock
    # the lock and the check that out_dir holds no run (unless resume / overwrite) are one step (train/folder.py)
    with claimed_run_folder(options.out_dir, options.resume, options.overwrite) if writer else contextlib.nullcontext():
        t = start_training(config, data, options, dist, writer, optimizer_factory, after_step)
        stopped_by = train_epochs(t)
        run = t.run
        ema = t.ema.model if t.ema is not None else None
        model = unwrap(t.model).eval()
        return FitResult(model, run.history, run.step, run.epoch, t.out, run.train_seconds, stopped_by, ema)


def train_epochs(t: Training) -> str:
    """Epoch after epoch until ``epochs`` are done or a limit stops the run; validate and save after every
    ``config.validate_every``-th epoch and at the stop. Returns why the run stopped."""
    stopped_by = None
    t.model.train()
    while t.run.epoch < t.options.epochs and stopped_by is None:
        stopped_by = train_epoch(t)
        if stopped_by is None:  # the epoch ended
            t.run.epoch, t.run.batch_in_epoch = t.run.epoch + 1, 0
            if t.run.epoch % t.config.validate_every and t.run.epoch < t.options.epochs:
                continue  # not an epoch to validate after (config.validate_every): train on
        validate_and_save(t, epoch_done=stopped_by is None)
    return stopped_by or "epochs"


def train_epoch(t: Training) -> str | None:
    """The optimizer steps of one epoch (from where a resumed run stopped). Returns why the run stops
    ("max_steps", "max_minutes") when it stops inside the epoch, else None."""
    run, options = t.run, t.options
    batches = t.data.train_batches(run.epoch, run.batch_in_epoch)
    if t.saved_rng is not None:  # after the sampler has set up this epoch, as in the straight run
        set_rng_states(t.saved_rng)
        t.saved_rng = None
    bar = _progress(batches, t.data.batches_per_epoch(run.epoch), run, options.epochs, options.progress)
    tick = time.monotonic()
    # Groups start at multiples of `accumulate` within the epoch. A run saves only after an optimizer
    # step, so it resumes at a group boundary and forms the same groups as a run that never stopped.
    for group in accumulation_groups(bar, t.accumulate):
        accumulate_gradients(t, group)  # forward, loss, backward for each micro-batch: the gradients add up
        crash_point("train-step")  # a test hook (files.crash_point): gradients computed, no update yet
        optimizer_step(t.model, t.optimizer, t.scheduler, t.config.clip_norm)  # clip, update, the next rate
        if t.ema is not None:
            t.ema.update()  # ema ← decay · ema + (1 − decay) · weights, on the device
        run.step += 1
        log_step = run.step % options.log_every == 0
        synced = check_update(t, log_step)  # max |weight| kept on the device; read back on sync points only
        now = time.monotonic()
        run.train_seconds, tick = run.train_seconds + now - tick, now
        t.planner.after_step(run, synced, log_step)  # schedule="budget": the run's length from its step rate
        if t.after_step is not None:
            t.after_step(run.step, unwrap(t.model))
        if log_step:
            _log(run, t.scheduler.get_last_lr()[0], bar if options.progress else None)
        if options.save_every and run.step % options.save_every == 0:
            t.checkpoint_last()
            tick = time.monotonic()  # saving is not training time
        stopped_by = _stop_reason(run, options, t.dist, log_step)
        if stopped_by is not None:
            return stopped_by
    return None


def accumulate_gradients(t: Training, group: list[Batch]) -> None:
    """Forward, loss per target token, backward for each micro-batch of one group: the gradients add up."""
    for i, batch in enumerate(group):  # the inner accumulation loop
        if t.config.word_dropout > 0:  # training only: some input words become <unk> (the host's RNG, saved)
            batch = word_dropout(batch, t.config.word_dropout, t.config.word_dropout_on)
        batch = prepare_batch(batch, t.model, t.run.window, t.device)  # ids checked, tokens counted, moved
        # Only the group's last micro-batch all-reduces, a short last group's too; the others
        # add their gradients up locally under no_sync().
        sync = i == len(group) - 1
        with t.model.no_sync() if t.dist.enabled and not sync else contextlib.nullcontext():
            with token_ids_checked():  # prepare_batch checked them: no read-back in the embeddings
                loss_sum = loss_on_batch(t.model, batch, t.loss_fn, t.options.autocast, t.config.rdrop)  # summed
            # The update follows the mean over the group of each micro-batch's loss per token. A
            # short last group is divided by its own length, not by `accumulate`: each update is
            # then the same kind of mean and takes a full-size step wherever the epoch ends
            # (dividing by `accumulate` would shrink that one update by len(group) / accumulate).
            (loss_sum / max(int(batch.n_tokens), 1) / len(group)).backward()
        t.pending.add_loss(t.run.step + 1, loss_sum)  # checked finite at the next check(), no sync now
        t.run.batch_in_epoch += 1


def check_update(t: Training, log_step: bool) -> bool:
    """Keep the update's largest |weight| on the device; on a sync point — a log step, every step with an
    ``after_step`` hook, where the budget plan measures — read every pending check back (one transfer) and stop
    at the first loss or weight that is not finite. Returns whether this step was a sync point."""
    t.pending.add_weights(t.run.step, t.model)  # max |weight|, checked finite at the next check()
    synced = log_step or t.after_step is not None or t.planner.wants_sync(t.run)
    if synced:
        t.check()  # a sync point: only on log steps (and where a callback or the plan needs one)
    return synced


def validate_and_save(t: Training, epoch_done: bool) -> None:
    """The validation loss (checked finite), the history row, best.pt, epoch-NNN.pt and last.pt."""
    run = t.run
    t.check()  # before validation and the epoch's files: every step of the epoch was finite
    val_loss = validation_loss(t.model, t.data.val_batches(), t.loss_fn, t.device, t.dist, t.options.autocast)
    if not math.isfinite(val_loss):
        raise t.diverged(f"the validation loss became {val_loss} after step {run.step}")
    ema, ema_val = (t.ema.model if t.ema is not None else None), None
    if ema is not None:  # the EMA's weights on the same batches
        ema_val = validation_loss(ema, t.data.val_batches(), t.loss_fn, t.device, t.dist, t.options.autocast)
        if not math.isfinite(ema_val):
            raise t.diverged(f"the EMA's validation loss became {ema_val} after step {run.step}")
    lr = t.scheduler.get_last_lr()[0]
    out = t.out if t.writer else None
    end_epoch(run, val_loss, lr, epoch_done, t.model, t.config, t.data, out, t.options.keep_epochs, ema, ema_val)
    t.checkpoint_last()
    if t.options.progress:
        print(
            f"epoch {run.history[-1]['epoch']}: step {run.step}, validation loss {val_loss:.4f}"
            + (f" (EMA {ema_val:.4f})" if ema is not None else "")
            + f", {run.train_seconds / 60:.1f} min",
            flush=True,
        )
    if t.dist.enabled:
        torch.distributed.barrier()


def _log(run: RunState, lr: float, bar) -> None:
    """One history row for the steps since the last one; the window starts again."""
    entry = run.window.row(run.step, run.epoch + 1, lr, run.train_seconds)
    run.history.append(entry)
    run.window = LogWindow(start_seconds=run.train_seconds)
    if bar is not None:
        bar.set_postfix(loss=f"{entry['loss']:.3f}", lr=f"{entry['lr']:.2e}", tok_s=f"{entry['tokens_per_s']:.0f}")


def _stop_reason(run: RunState, options: RunOptions, dist: Distributed, log_step: bool) -> str | None:
    """ "max_steps" or "max_minutes" when the run must stop after this step, else None."""
    max_steps, max_minutes = options.max_steps, options.max_minutes
    if max_steps is not None and run.step >= max_steps:
        return "max_steps"
    over = max_minutes is not None and run.train_seconds >= 60 * max_minutes
    if dist.enabled and max_minutes is not None:
        # Every rank must stop at the same step: rank 0's clock decides, read on log steps only (the same
        # steps on every rank), so that the broadcast is no sync per step.
        if not log_step:
            return None
        over = bool(broadcast_from_main([float(over)], dist)[0])
    return "max_minutes" if over else None


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

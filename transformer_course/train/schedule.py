"""The optimizer and the learning-rate schedule (notebook 08; paper §5.3).

"We used the Adam optimizer with β1 = 0.9, β2 = 0.98 and ε = 10^-9. We varied the learning rate over
the course of training, according to the formula
lrate = d_model^-0.5 · min(step_num^-0.5, step_num · warmup_steps^-1.5)." (§5.3)

The paper's warmup is counted in steps; a run bounded by minutes does not know its step count in advance.
``schedule="budget"`` (:class:`BudgetSchedule`) plans it: the run's length in steps comes from its epochs or
``max_steps``, or, with a time budget, from the step rate measured in its first seconds (:func:`plan_steps`);
the rate then rises linearly for ``warmup_fraction`` of the planned steps to the peak of the config's Noam
schedule and falls linearly to 0 at the planned end, so a 5-minute GPU run and a 45-minute CPU run both warm
up, peak and decay inside their budget.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import nn

from ..config import Config

__all__ = [
    "BudgetSchedule",
    "make_optimizer",
    "make_scheduler",
    "noam_lambda",
    "noam_peak",
    "noam_rate",
    "plan_steps",
    "refresh_rate",
]


def noam_rate(step: int, d_model: int, warmup: int, factor: float = 1.0) -> float:
    """The paper's learning rate at ``step`` (counted from 1): factor · d_model^-0.5 · min(step^-0.5, step · warmup^-1.5).

    It rises linearly for ``warmup`` steps, peaks at ``factor · (d_model · warmup)^-0.5``, then decays
    as 1/√step.
    """
    if step < 1:
        raise ValueError(f"the Noam schedule counts steps from 1, got step={step}")
    if warmup < 1:
        raise ValueError(f"warmup must be at least 1 step, got warmup={warmup}")
    return factor * d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)


def noam_lambda(d_model: int, warmup: int, factor: float = 1.0) -> Callable[[int], float]:
    """The multiplier for ``LambdaLR``: after ``k`` optimizer steps the rate is ``noam_rate(k + 1)``,
    so the first update uses ``noam_rate(1)`` (the optimizer's base lr must be 1.0)."""
    return lambda k: noam_rate(k + 1, d_model, warmup, factor)


def noam_peak(d_model: int, warmup: int, factor: float = 1.0) -> float:
    """The Noam schedule's highest rate, reached at step ``warmup``: factor · (d_model · warmup)^-0.5."""
    return noam_rate(warmup, d_model, warmup, factor)


class BudgetSchedule:
    """The multiplier for ``LambdaLR`` of ``schedule="budget"``: a linear warmup over ``warmup`` steps to
    ``peak``, then a linear decay that reaches 0 just after step ``total`` (the last planned update still
    moves), once :meth:`plan` has fixed both; a run that outlives its plan takes no further steps' worth of
    learning rate (0).

    Until then (the first seconds of a time-bounded run, while its step rate is measured) it rises as the
    Noam schedule does, ``peak · step / probe_warmup``. It is an object, not a lambda, so ``LambdaLR`` saves
    its plan in ``state_dict()``: a resumed run continues with the plan of the run it continues.
    """

    def __init__(self, peak: float, probe_warmup: int, warmup_fraction: float) -> None:
        self.peak, self.probe_warmup, self.warmup_fraction = peak, probe_warmup, warmup_fraction
        self.warmup: int | None = None  # planned steps of warmup
        self.total: int | None = None  # planned steps of the whole run
        self.budget_seconds: float | None = None  # the time budget planned for (None: planned from steps)
        self.rate: float | None = None  # the measured steps per second (None: planned from steps)

    @property
    def planned(self) -> bool:
        return self.total is not None

    def plan(self, total: int, done: int = 0, budget_seconds: float | None = None, rate: float | None = None) -> None:
        """Fix the run's length at ``total`` steps, ``done`` of which are taken: the warmup is
        ``warmup_fraction`` of ``total`` (at least ``done + 1`` steps, so the rate does not drop)."""
        total = max(int(total), done + 2, 2)
        self.total, self.budget_seconds, self.rate = total, budget_seconds, rate
        self.warmup = min(max(round(self.warmup_fraction * total), done + 1, 1), total - 1)

    def stretch(self, total: int, done: int, budget_seconds: float | None = None) -> None:
        """A resumed run with a longer (or shorter) budget: the decay now ends at ``total``; a warmup that is
        over stays over, one still under way is planned again for the new length."""
        self.total = max(int(total), done, 2)  # at `done`: the run ends at this step, the next rate is 0
        self.budget_seconds = budget_seconds
        if self.warmup > done:
            self.warmup = min(max(round(self.warmup_fraction * self.total), done + 1, 1), self.total - 1)
        self.warmup = min(self.warmup, self.total - 1)

    def __call__(self, k: int) -> float:
        step = k + 1  # LambdaLR counts updates from 0; the rate of update k is the schedule's at step k + 1
        if not self.planned:
            return self.peak * min(1.0, step / self.probe_warmup)
        if step <= self.warmup:
            return self.peak * step / self.warmup
        return self.peak * max(0.0, (self.total + 1 - step) / (self.total + 1 - self.warmup))  # 0 after the last


def plan_steps(
    done: int, seconds: float, since: tuple[int, float], budget_seconds: float, step_limit: int | None = None
) -> int:
    """The steps a time-bounded run will take in all: the ``done`` so far plus the rest of ``budget_seconds``
    at the rate measured since ``since`` = (step, seconds) — ``(done − since_step) / (seconds − since_seconds)``
    steps per second — and never more than ``step_limit``. ``fit`` starts measuring after its first step,
    which warms up allocators and kernels."""
    since_step, since_seconds = since
    if done <= since_step or seconds <= since_seconds:
        raise ValueError(
            f"a step rate needs time and steps after the start of the measurement, got {done} steps at "
            f"{seconds} s since step {since_step} at {since_seconds} s"
        )
    rate = (done - since_step) / (seconds - since_seconds)  # steps per second
    total = done + math.floor(rate * max(budget_seconds - seconds, 0.0))
    return total if step_limit is None else min(total, step_limit)


def refresh_rate(scheduler: torch.optim.lr_scheduler.LambdaLR) -> None:
    """Set the optimizer's rate to what the (re-planned) schedule says for the next update."""
    rates = [base * lam(scheduler.last_epoch) for base, lam in zip(scheduler.base_lrs, scheduler.lr_lambdas)]
    for group, rate in zip(scheduler.optimizer.param_groups, rates):
        group["lr"] = rate
    scheduler._last_lr = rates  # what get_last_lr() returns


def make_optimizer(model: nn.Module) -> torch.optim.Adam:
    """Adam with β1 = 0.9, β2 = 0.98, ε = 1e-9 and base lr 1.0 (the schedule gives the real rate)."""
    return torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)


def make_scheduler(optimizer: torch.optim.Optimizer, config: Config) -> torch.optim.lr_scheduler.LambdaLR:
    """The schedule of ``config`` as a ``LambdaLR``: the Noam schedule (d_model, warmup, lr_factor), or with
    ``schedule="budget"`` a :class:`BudgetSchedule` with the same peak (``fit`` plans its length)."""
    if config.schedule == "budget":
        peak = noam_peak(config.d_model, config.warmup, config.lr_factor)
        return torch.optim.lr_scheduler.LambdaLR(optimizer, BudgetSchedule(peak, config.warmup, config.warmup_fraction))
    return torch.optim.lr_scheduler.LambdaLR(optimizer, noam_lambda(config.d_model, config.warmup, config.lr_factor))

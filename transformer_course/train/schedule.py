"""The optimizer and the learning-rate schedule (notebook 08; paper §5.3).

"We used the Adam optimizer with β1 = 0.9, β2 = 0.98 and ε = 10^-9. We varied the learning rate over
the course of training, according to the formula
lrate = d_model^-0.5 · min(step_num^-0.5, step_num · warmup_steps^-1.5)." (§5.3)

:func:`learning_rate` is the whole schedule in one function: the rate of each update, which the scheduler
gives the optimizer (:func:`make_scheduler`: a ``LambdaLR`` on an Adam whose base rate is 1.0) and which
notebook 08 plots. The paper's warmup is counted in steps; a run bounded by minutes does not know its step
count in advance. ``schedule="budget"`` plans it: the run's length in steps comes from its epochs or
``max_steps``, or, with a time budget, from the step rate measured in its first seconds (:func:`plan_steps`);
the rate then rises linearly for ``warmup_fraction`` of the planned steps to the peak of the config's Noam
schedule and falls linearly to 0 at the planned end, so a 5-minute GPU run and a 45-minute CPU run both warm
up, peak and decay inside their budget. The plan is a :class:`BudgetSchedule`, saved in ``last.pt``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import nn

from ..config import Config

__all__ = [
    "BudgetSchedule",
    "learning_rate",
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


def learning_rate(step: int, config: Config, plan: BudgetSchedule | None = None) -> float:
    """The learning rate of update ``step`` (counted from 1) under ``config.schedule``.

    "noam", the paper's (§5.3): lr_factor · d_model^-0.5 · min(step^-0.5, step · warmup^-1.5) — a linear rise
    for ``warmup`` steps to the peak lr_factor · (d_model · warmup)^-0.5, then a decay as 1/√step.
    "budget": a linear rise over ``plan.warmup`` steps to the same peak, then a linear fall that reaches 0 just
    after step ``plan.total`` (the last planned update still moves). ``fit`` makes the plan; until it exists
    (the first seconds of a time-bounded run, while its step rate is measured) the rate rises as the Noam
    schedule's does, and stays at its peak.
    """
    if config.schedule == "noam":
        return noam_rate(step, config.d_model, config.warmup, config.lr_factor)
    if step < 1:
        raise ValueError(f"the schedule counts steps from 1, got step={step}")
    peak = noam_peak(config.d_model, config.warmup, config.lr_factor)
    if plan is None or not plan.planned:
        return peak * min(1.0, step / config.warmup)
    if step <= plan.warmup:
        return peak * step / plan.warmup  # the warmup
    return peak * max(0.0, (plan.total + 1 - step) / (plan.total + 1 - plan.warmup))  # the decay; 0 after the end


class BudgetSchedule:
    """The plan of a ``schedule="budget"`` run, and its multiplier for ``LambdaLR``: the rate of update
    ``k + 1`` is ``learning_rate(k + 1, config, plan)``.

    ``warmup`` and ``total`` (the planned steps of warmup and of the whole run) are None until :meth:`plan`
    fixes them. It is an object, not a lambda, so ``LambdaLR`` saves its ``__dict__`` — the plan — in
    ``state_dict()``, and a resumed run continues with the plan of the run it continues. The config sits in a
    slot, outside ``__dict__``: ``last.pt`` keeps the plain numbers, and the config has a field of its own there.
    """

    __slots__ = ("config", "__dict__")

    def __init__(self, config: Config) -> None:
        self.config = config
        # the config's, kept in the saved state beside the plan
        self.peak = noam_peak(config.d_model, config.warmup, config.lr_factor)
        self.probe_warmup, self.warmup_fraction = config.warmup, config.warmup_fraction
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
        return learning_rate(k + 1, self.config, self)  # LambdaLR counts updates from 0, the schedule from 1


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
    """``config``'s schedule as a ``LambdaLR`` on an optimizer whose base rate is 1.0: after ``k`` updates the
    rate is :func:`learning_rate` ``(k + 1, config)`` (with ``schedule="budget"``, of the run's
    :class:`BudgetSchedule`, whose length ``fit`` plans)."""
    if config.schedule == "budget":
        return torch.optim.lr_scheduler.LambdaLR(optimizer, BudgetSchedule(config))
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda k: learning_rate(k + 1, config))

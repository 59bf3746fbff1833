"""How long a ``schedule="budget"`` run is: planned from its epochs or steps, or measured from the step rate of
its first seconds when the run is bounded by minutes (:class:`~.schedule.BudgetSchedule` is the schedule,
:func:`~.loop.fit` calls the planner on its sync points)."""

from __future__ import annotations

import math

from .distributed import broadcast_from_main
from .schedule import BudgetSchedule, plan_steps, refresh_rate
from .state import RunState

__all__ = ["BudgetPlanner"]


class BudgetPlanner:
    """Plans the length of a ``schedule="budget"`` run (:class:`~.schedule.BudgetSchedule`).

    Without a time budget the length is known before the first step: the steps of its epochs (or
    ``max_steps``). With one it is measured: the step rate from the end of this process's first step
    (allocators and kernels warmed up) until 2 % of the budget has passed (at least 3 steps), both ends at a
    sync point so that a GPU's queue is drained. Then, on every log step, the end is planned again from the rate
    of the last 20 % of the budget, so a machine that slows down or speeds up mid-run still decays to 0 at the
    end of its minutes (the warmup, once over, stays over). Under DDP rank 0's plan is given to every rank, on
    log steps (the same steps on every rank). A resumed run keeps its saved plan, stretched at once by the
    measured rate if it was given another budget, and re-planned from its own steps as it goes on."""

    PROBE_SHARE = 0.02  # of the time budget, spent measuring the step rate before the first plan (≥ 3 steps)
    WINDOW_SHARE = 0.2  # later plans use the step rate over this share of the budget, the most recent

    def __init__(self, scheduler, data, epochs, accumulate, max_steps, max_minutes, dist) -> None:
        lam = scheduler.lr_lambdas[0]
        self.schedule = lam if isinstance(lam, BudgetSchedule) else None
        self.budget = None if max_minutes is None else 60.0 * max_minutes
        self.scheduler, self.dist = scheduler, dist
        self.marks: list[tuple[int, float]] = []  # (step, training seconds) at this process's sync points
        self.active = self.schedule is not None and self.budget is not None  # planned from the clock
        if self.schedule is None:
            return  # the Noam schedule: nothing to plan
        per_epoch = [data.batches_per_epoch(e) for e in range(epochs)]
        limits = [] if max_steps is None else [max_steps]
        if all(n is not None for n in per_epoch):
            limits.append(sum(-(-n // accumulate) for n in per_epoch))  # one step per group of `accumulate`
        self.limit = min(limits) if limits else None
        if self.schedule.planned:  # a resumed run: its plan, stretched if it was given another budget
            self._resumed(scheduler.last_epoch)
        elif self.budget is None:
            if self.limit is None:
                raise ValueError(
                    "schedule='budget' needs to know the run's length: pass max_steps or max_minutes, or data "
                    "whose batches_per_epoch is known"
                )
            self.schedule.plan(self.limit)
            refresh_rate(scheduler)  # the first update's rate, from the plan

    def _resumed(self, done: int) -> None:
        plan = self.schedule
        if self.budget is not None and plan.rate is not None and plan.budget_seconds != self.budget:
            total = plan.total + math.floor(plan.rate * (self.budget - plan.budget_seconds))  # the rate measured
            plan.stretch(total if self.limit is None else min(total, self.limit), done, self.budget)
        elif self.budget is None and plan.rate is None and self.limit is not None and self.limit != plan.total:
            plan.stretch(self.limit, done)  # planned from its steps, resumed with other epochs / max_steps
        else:
            return
        refresh_rate(self.scheduler)

    def _probe_done(self, run: RunState) -> bool:
        steps, seconds = run.step - self.marks[0][0], run.train_seconds - self.marks[0][1]
        return steps >= 3 and seconds >= self.PROBE_SHARE * self.budget

    def wants_sync(self, run: RunState) -> bool:
        """Both ends of the first measurement are sync points, so that the clock sees the device's time: the
        first step, and the first step after the probe time has passed. Later plans use log steps."""
        if not self.active or self.schedule.planned:
            return False
        return not self.marks or self._probe_done(run)

    def _estimate(self, run: RunState) -> tuple[int, float]:
        """(planned steps, steps per second) from the rate since the oldest mark inside the window."""
        recent = [m for m in self.marks[:-1] if run.train_seconds - m[1] <= self.WINDOW_SHARE * self.budget]
        since = recent[0] if recent else self.marks[-2]
        self.marks = self.marks[self.marks.index(since) :]  # older marks are no longer needed
        rate = (run.step - since[0]) / max(run.train_seconds - since[1], 1e-9)
        return plan_steps(run.step, run.train_seconds, since, self.budget, self.limit), rate

    def after_step(self, run: RunState, synced: bool, log_step: bool) -> None:
        """At a sync point: mark the clock; plan once the probe is done, plan again on log steps."""
        if not self.active or not synced:
            return
        self.marks.append((run.step, run.train_seconds))
        if len(self.marks) == 1:
            return  # the measurement starts after this process's first step
        planned = self.schedule.planned
        if (planned or self.dist.enabled) and not log_step:
            return
        total, rate = self._estimate(run) if planned or self._probe_done(run) else (0, 0.0)
        if self.dist.enabled:  # every rank follows rank 0's plan
            total, rate = broadcast_from_main([float(total), rate], self.dist)
            total = int(total)
        if not total:
            return
        if planned:
            self.schedule.stretch(total, run.step, self.budget)
            self.schedule.rate = rate
        else:
            self.schedule.plan(total, done=run.step, budget_seconds=self.budget, rate=rate)
        refresh_rate(self.scheduler)  # the next update's rate follows the plan

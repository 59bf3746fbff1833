"""schedule="budget": the run's length is planned (from its epochs, or from the step rate measured in the first
seconds of a --max-minutes run), then a linear warmup to the Noam peak and a linear decay to 0 at the end."""

import math
import types
from pathlib import Path

import pytest
import torch

from transformer_course.config import get_preset
from transformer_course.train import (
    RunOptions,
    fit,
    load_checkpoint,
    loop,
    make_optimizer,
    make_scheduler,
    noam_rate,
    toy_data,
)
from transformer_course.train.schedule import BudgetSchedule, learning_rate, noam_peak, plan_steps

BUDGET = get_preset("toy-copy").replace(schedule="budget", warmup_fraction=0.2)

pytestmark = pytest.mark.usefixtures("one_thread")  # tiny models: see tests/conftest.py


def rates_of(schedule: BudgetSchedule, steps: int) -> list[float]:
    return [schedule(k) for k in range(steps)]  # the rate of update k + 1


def test_the_peak_is_the_noam_schedules_peak():
    assert noam_peak(512, 4000) == noam_rate(4000, 512, 4000) == max(noam_rate(s, 512, 4000) for s in range(1, 9000))


def test_before_its_plan_the_schedule_rises_as_the_noam_schedule_does():
    config = BUDGET.replace(d_model=64, warmup=100, lr_factor=1.0)
    schedule = BudgetSchedule(config)
    assert schedule.peak == noam_peak(64, 100)
    for k in range(100):
        assert math.isclose(schedule(k), noam_rate(k + 1, 64, 100), rel_tol=1e-12)
        assert schedule(k) == learning_rate(k + 1, config)  # no plan yet: the same numbers as without one


def test_a_plan_warms_up_linearly_to_the_peak_then_decays_linearly_to_zero_after_the_last_step():
    config = BUDGET.replace(warmup=50, warmup_fraction=0.1)
    peak = noam_peak(config.d_model, config.warmup, config.lr_factor)
    schedule = BudgetSchedule(config)
    schedule.plan(100)
    assert (schedule.warmup, schedule.total) == (10, 100)
    rates = rates_of(schedule, 102)  # steps 1 … 102
    assert rates[:10] == pytest.approx([peak * s / 10 for s in range(1, 11)])  # peak at step 10
    assert max(rates) == rates[9] == peak
    assert rates[10:100] == pytest.approx([peak * (101 - s) / 91 for s in range(11, 101)])  # a straight line
    assert rates[99] > 0 and rates[100] == rates[101] == 0.0  # the last planned update moves; after it, nothing
    assert rates == [learning_rate(s, config, schedule) for s in range(1, 103)]  # the one function, as plotted


def test_a_plan_made_late_never_lowers_the_rate_during_warmup():
    schedule = BudgetSchedule(BUDGET.replace(warmup=1000, warmup_fraction=0.1))
    schedule.plan(120, done=30)  # 10 % of 120 is 12 steps, but 30 are taken: warm up until step 31
    assert schedule.warmup == 31 and schedule(30) == schedule.peak


def test_the_saved_plan_holds_plain_numbers_only():
    """The config stays outside the state LambdaLR saves: last.pt loads with weights_only=True."""
    scheduler = make_scheduler(make_optimizer(torch.nn.Linear(2, 2)), BUDGET)
    saved = scheduler.state_dict()["lr_lambdas"][0]
    assert set(saved) == {"peak", "probe_warmup", "warmup_fraction", "warmup", "total", "budget_seconds", "rate"}


@pytest.mark.parametrize(
    "done, seconds, since, budget, limit", [(10, 5.0, (1, 0.5), 60.0, None), (4, 2, (1, 1), 10, 6)]
)
def test_plan_steps_is_the_measured_rate_times_the_time_left(done, seconds, since, budget, limit):
    rate = (done - since[0]) / (seconds - since[1])
    expected = done + math.floor(rate * (budget - seconds))
    assert plan_steps(done, seconds, since, budget, limit) == (expected if limit is None else min(expected, limit))


def test_plan_steps_needs_a_measurement():
    with pytest.raises(ValueError, match="a step rate needs time and steps"):
        plan_steps(1, 1.0, (1, 1.0), 60.0)


def test_the_plan_is_saved_with_the_scheduler_state():
    model = torch.nn.Linear(2, 2)
    scheduler = make_scheduler(make_optimizer(model), BUDGET)
    scheduler.lr_lambdas[0].plan(500, done=3)
    fresh = make_scheduler(make_optimizer(model), BUDGET)
    fresh.load_state_dict(scheduler.state_dict())
    assert (fresh.lr_lambdas[0].warmup, fresh.lr_lambdas[0].total) == (100, 500)


def rates_during(run_fit) -> list[float]:
    """The learning rate of every update of a fit call (read from the optimizer as the update happens)."""
    rates = []
    real = loop.optimizer_step

    def recording_step(model, optimizer, *args):
        rates.append(optimizer.param_groups[0]["lr"])
        real(model, optimizer, *args)

    loop.optimizer_step = recording_step
    try:
        result = run_fit()
    finally:
        loop.optimizer_step = real
    return rates, result


@pytest.mark.slow
def test_without_a_time_budget_the_plan_is_the_runs_epochs():
    data = toy_data(n_train=320, batch_size=32)  # 10 batches per epoch
    rates, result = rates_during(lambda: fit(BUDGET, data, RunOptions(epochs=3, progress=False)))
    peak = noam_peak(BUDGET.d_model, BUDGET.warmup, BUDGET.lr_factor)
    assert result.step == len(rates) == 30
    assert rates[5] == pytest.approx(peak) and max(rates) == pytest.approx(peak)  # warmup: 20 % of 30 steps
    assert rates[-1] == pytest.approx(peak / 25) and rates == sorted(rates[:6]) + sorted(rates[6:], reverse=True)


def test_max_steps_bounds_the_plan():
    rates, result = rates_during(
        lambda: fit(BUDGET, toy_data(n_train=320, batch_size=32), RunOptions(max_steps=10, progress=False))
    )
    peak = noam_peak(BUDGET.d_model, BUDGET.warmup, BUDGET.lr_factor)
    assert result.step == 10 and rates[1] == pytest.approx(peak) and rates[-1] == pytest.approx(peak / 9)


class FakeClock:
    """time.monotonic for fit: every call advances by `tick` seconds (one call per step, one per epoch start)."""

    def __init__(self, tick: float) -> None:
        self.now, self.tick = 0.0, tick

    def monotonic(self) -> float:
        self.now += self.tick
        return self.now


@pytest.mark.slow
def test_a_time_budget_is_planned_from_the_measured_step_rate_and_decays_inside_it(monkeypatch):
    monkeypatch.setattr(loop, "time", types.SimpleNamespace(monotonic=FakeClock(0.5).monotonic))  # 2 steps/s
    data = toy_data(n_train=3200, batch_size=32)  # 100 batches per epoch
    rates, result = rates_during(lambda: fit(BUDGET, data, RunOptions(epochs=5, max_minutes=1.0, progress=False)))
    # 2 % of 60 s is 1.2 s: measured from the end of step 1 (0.5 s) to the end of step 5 (2.5 s), the first
    # sync point after 1.2 s: 2 steps/s → 5 + 2 × 57.5 = 120 steps in all
    assert result.stopped_by == "max_minutes" and result.step == len(rates) == 120
    peak = noam_peak(BUDGET.d_model, BUDGET.warmup, BUDGET.lr_factor)
    assert rates[:5] == pytest.approx(
        [noam_rate(s, BUDGET.d_model, BUDGET.warmup, BUDGET.lr_factor) for s in range(1, 6)]
    )
    assert rates[5] == pytest.approx(peak * 6 / 24)  # step 6: the plan's warmup of 24 steps (20 % of 120)
    assert max(rates) == pytest.approx(peak) == rates[23]
    assert rates[-1] == pytest.approx(peak / 97) and rates[-1] < 0.02 * peak  # decayed inside the budget


class Interrupted(Exception):
    pass


def interrupt_at(step: int):
    def after_step(k, model):
        if k == step:
            raise Interrupted

    return after_step


@pytest.mark.slow
def test_a_resumed_budget_run_keeps_its_plan_and_ends_like_a_run_that_never_stopped(tmp_path):
    data = toy_data(n_train=320, batch_size=32)
    straight = fit(BUDGET, data, RunOptions(tmp_path / "a", epochs=2, progress=False))
    with pytest.raises(Interrupted):  # killed at step 8; last.pt holds step 7
        fit(
            BUDGET, data, RunOptions(tmp_path / "b", epochs=2, save_every=7, progress=False), after_step=interrupt_at(8)
        )
    saved = torch.load(tmp_path / "b" / "last.pt", weights_only=True)["scheduler"]["lr_lambdas"][0]
    assert (saved["warmup"], saved["total"]) == (4, 20) and load_checkpoint(tmp_path / "b" / "last.pt").step == 7
    resumed = fit(BUDGET, data, RunOptions(tmp_path / "b", epochs=2, resume=True, progress=False))
    assert resumed.step == straight.step == 20
    for (name, a), b in zip(straight.model.state_dict().items(), resumed.model.state_dict().values()):
        torch.testing.assert_close(a, b, rtol=0, atol=0, msg=name)


@pytest.mark.slow
def test_budget_minutes_plans_for_the_whole_run_when_it_stops_early_on_purpose(monkeypatch):
    monkeypatch.setattr(loop, "time", types.SimpleNamespace(monotonic=FakeClock(0.5).monotonic))  # 2 steps/s
    data = toy_data(n_train=3200, batch_size=32)
    rates, result = rates_during(
        lambda: fit(BUDGET, data, RunOptions(epochs=5, max_minutes=0.5, budget_minutes=1.0, progress=False))
    )
    peak = noam_peak(BUDGET.d_model, BUDGET.warmup, BUDGET.lr_factor)
    assert result.step == 60 and rates[5] == pytest.approx(peak * 6 / 24)  # planned for 120 steps, stopped at 60
    assert rates[-1] == pytest.approx(peak * (121 - 60) / 97)  # half-way down the decay


@pytest.mark.slow
def test_a_run_resumed_with_a_longer_budget_stretches_its_decay_to_the_new_end(tmp_path, monkeypatch):
    clock = FakeClock(0.5)
    monkeypatch.setattr(loop, "time", types.SimpleNamespace(monotonic=clock.monotonic))
    data = toy_data(n_train=3200, batch_size=32)
    fit(
        BUDGET, data, RunOptions(tmp_path, epochs=5, max_minutes=0.5, progress=False)
    )  # planned for 60 steps at 2 steps/s
    planned = torch.load(tmp_path / "last.pt", weights_only=True)["scheduler"]["lr_lambdas"][0]
    assert (planned["total"], planned["warmup"], planned["rate"]) == (60, 12, 2.0)
    rates, result = rates_during(
        lambda: fit(BUDGET, data, RunOptions(tmp_path, epochs=5, max_minutes=1.0, resume=True, progress=False))
    )
    peak = noam_peak(BUDGET.d_model, BUDGET.warmup, BUDGET.lr_factor)
    assert result.step == 120 and rates[0] == pytest.approx(peak * (121 - 61) / (121 - 12))  # the same warmup
    assert rates[-1] == pytest.approx(peak / (121 - 12))


class SlowingClock(FakeClock):
    """Half a second per step for the first 40 calls, then a second per step: a machine that gets busy."""

    def monotonic(self) -> float:
        self.calls = getattr(self, "calls", 0) + 1
        self.now += self.tick if self.calls <= 40 else 2 * self.tick
        return self.now


@pytest.mark.slow
def test_a_machine_that_slows_down_mid_run_still_decays_to_the_end_of_its_minutes(monkeypatch):
    monkeypatch.setattr(loop, "time", types.SimpleNamespace(monotonic=SlowingClock(0.5).monotonic))
    data = toy_data(n_train=3200, batch_size=32)
    rates, result = rates_during(lambda: fit(BUDGET, data, RunOptions(epochs=5, max_minutes=1.0, progress=False)))
    peak = noam_peak(BUDGET.d_model, BUDGET.warmup, BUDGET.lr_factor)
    assert result.stopped_by == "max_minutes" and result.step == 80  # 40 steps in 20 s, then 40 in 40 s
    # planned for 120 steps at first; re-planned every 10 steps from the recent rate, it still ends low
    assert max(rates) == pytest.approx(peak) and rates[-1] < 0.1 * peak


@pytest.mark.slow
def test_validate_every_validates_after_every_nth_epoch_and_at_the_stop(tmp_path):
    config = get_preset("toy-copy").replace(validate_every=2)
    result = fit(config, toy_data(n_train=64, batch_size=32), RunOptions(tmp_path, epochs=5, progress=False))
    assert [h["epoch"] for h in result.history if h["val_loss"] is not None] == [2, 4, 5]  # 5: the last epoch
    assert sorted(p.name for p in tmp_path.glob("epoch-*.pt")) == ["epoch-002.pt", "epoch-004.pt", "epoch-005.pt"]


def budget_ddp_worker(rank: int, world_size: int, port: int, out_dir: str) -> None:
    import json
    import os

    os.environ.update(
        MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world_size), LOCAL_RANK=str(rank)
    )
    torch.set_num_threads(1)
    seen, rates = {}, []

    def adam(model):
        seen["optimizer"] = make_optimizer(model)
        return seen["optimizer"]

    data = toy_data(n_train=640, batch_size=16, rank=rank, world_size=world_size)
    fit(
        BUDGET,
        data,
        RunOptions(max_steps=30, budget_minutes=0.05, log_every=5, device="cpu", progress=False),
        optimizer_factory=adam,
        after_step=lambda step, model: rates.append(seen["optimizer"].param_groups[0]["lr"]),
    )
    (Path(out_dir) / f"rates-{rank}.json").write_text(json.dumps(rates))
    torch.distributed.destroy_process_group()


@pytest.mark.slow
def test_under_ddp_every_rank_follows_rank_0s_plan(tmp_path):
    import json
    import socket

    import torch.multiprocessing as mp

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.start_processes(budget_ddp_worker, args=(2, port, str(tmp_path)), nprocs=2, join=True, start_method="spawn")
    rates = [json.loads((tmp_path / f"rates-{r}.json").read_text()) for r in range(2)]
    assert rates[0] == rates[1] and len(rates[0]) == 20  # the same rate at every step on both ranks
    noam = [noam_rate(s, BUDGET.d_model, BUDGET.warmup, BUDGET.lr_factor) for s in range(1, 21)]
    assert rates[0] != pytest.approx(noam)  # planned (from a 3-second budget), not the probe's Noam ramp

"""No host sync in the steady-state training step: fit reads numbers back from the device only on log steps
(and where a save, the end of an epoch or a callback needs them), yet every promise still holds: a
non-finite loss or weight stops the run before anything is saved, and bad token ids get their clear error.

A GPU has the real check, ``torch.cuda.set_sync_debug_mode("error")``. On a CPU nothing syncs, so the test
counts instead every call that would be one on a GPU: ``Tensor.item``, ``tolist``, ``__bool__``, ``__int__``,
``__float__``, ``__index__`` (what ``if t:``, ``int(t)``, ``float(t)`` and ``range(t)`` call)."""

import contextlib

import pytest
import torch

from transformer_course.config import get_preset
from transformer_course.train import RunOptions, TrainingDiverged, fit, loop, toy_data
from transformer_course.train import step as step_module

TOY = get_preset("toy-copy")
READS = ("item", "tolist", "__bool__", "__int__", "__float__", "__index__")

pytestmark = pytest.mark.usefixtures("one_thread")  # tiny models: see tests/conftest.py


class ReadCounter:
    """Counts reads of tensor values by the host while `on`, except those that are no device sync on a GPU:
    the host side of a batch (the data pipeline's collate and ``prepare_batch``'s checks and token counts read
    the batch before it moves to the device) and the optimizer's step counters (Adam keeps them on the host
    unless it is built with ``capturable=True``)."""

    def __init__(self, monkeypatch, optimizer_holder: dict) -> None:
        self.count, self.on, self.paused, self.holder = 0, False, 0, optimizer_holder
        for name in READS:
            real = getattr(torch.Tensor, name)
            monkeypatch.setattr(torch.Tensor, name, self._counting(real))
        monkeypatch.setattr(loop, "prepare_batch", self.uncounted(step_module.prepare_batch))

    def uncounted(self, function):
        def call(*args, **kwargs):
            self.paused += 1
            try:
                return function(*args, **kwargs)
            finally:
                self.paused -= 1

        return call

    def uncounted_batches(self, train_batches):
        """The data's batch stream, made (collated on the host) with the counter paused."""

        def batches(epoch, start=0):
            stream = train_batches(epoch, start)
            while True:
                batch = self.uncounted(next)(stream, None)
                if batch is None:
                    return
                yield batch

        return batches

    def _host_step_counter(self, t) -> bool:
        optimizer = self.holder.get("optimizer")
        return optimizer is not None and any(s.get("step") is t for s in optimizer.state.values())

    def _counting(self, real):
        counter = self

        def read(t, *args, **kwargs):
            if counter.on and not counter.paused and not counter._host_step_counter(t):
                counter.count += 1
            return real(t, *args, **kwargs)

        return read


def reads_per_step(monkeypatch, log_every: int, steps: int, config=TOY, **fit_args) -> list[int]:
    """The value reads between the start of one optimizer step and the next: the end of step k (its checks,
    log, save) and the forward and backward passes of step k + 1. Index k - 1 belongs to step k."""
    holder: dict = {}
    counter = ReadCounter(monkeypatch, holder)
    marks = []
    real = loop.optimizer_step

    def marking_step(model, optimizer, *args):
        holder["optimizer"] = optimizer
        marks.append(counter.count)
        counter.on = True  # from the first optimizer step on: the first forward pass is not steady state
        real(model, optimizer, *args)

    monkeypatch.setattr(loop, "optimizer_step", marking_step)
    data = toy_data(n_train=32 * steps, batch_size=32)
    data.train_batches = counter.uncounted_batches(data.train_batches)
    fit(config, data, RunOptions(max_steps=steps, log_every=log_every, **fit_args))
    counter.on = False
    return [b - a for a, b in zip(marks, marks[1:])]


def test_the_steady_state_step_reads_nothing_back_and_a_log_step_reads_once(monkeypatch):
    reads = reads_per_step(monkeypatch, log_every=5, steps=16, progress=False)
    assert len(reads) == 15  # steps 1 … 15 (each with the forward and backward pass of the next)
    assert {k + 1: n for k, n in enumerate(reads) if n} == {5: 1, 10: 1, 15: 1}  # one transfer per log step


def test_the_ema_word_dropout_and_r_drop_add_no_read_back_to_a_step(monkeypatch):
    config = TOY.replace(dropout=0.1, ema_decay=0.99, word_dropout=0.1, rdrop=0.5)
    reads = reads_per_step(monkeypatch, log_every=5, steps=11, config=config, progress=False)
    assert {k + 1: n for k, n in enumerate(reads) if n} == {5: 1, 10: 1}


def test_the_sync_free_step_trains_the_same_weights_as_before(monkeypatch):
    """The same run logged every step (a sync each step) and every 8 steps: the same numbers."""
    data = toy_data(n_train=320, batch_size=32)
    every_step = fit(TOY, data, RunOptions(epochs=1, log_every=1, progress=False))
    rarely = fit(TOY, data, RunOptions(epochs=1, log_every=8, progress=False))
    for a, b in zip(every_step.model.parameters(), rarely.model.parameters()):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    losses = [h["loss"] for h in every_step.history if h["loss"] is not None]
    assert rarely.history[0]["loss"] == pytest.approx(sum(losses[:8]) / 8, rel=0.05)  # the window's mean


def test_a_nan_loss_between_log_steps_is_named_at_its_step_and_nothing_after_it_is_saved(tmp_path, monkeypatch):
    real = loop.loss_on_batch
    calls = {"n": 0}

    def loss_that_breaks_at_call_3(*args):
        calls["n"] += 1
        loss = real(*args)
        return loss * float("inf") if calls["n"] == 3 else loss

    monkeypatch.setattr(loop, "loss_on_batch", loss_that_breaks_at_call_3)
    with pytest.raises(TrainingDiverged, match=r"the loss became inf at step 3 .*No good checkpoint exists"):
        fit(TOY, toy_data(n_train=640, batch_size=32), RunOptions(tmp_path, log_every=10, save_every=5, progress=False))
    assert list(tmp_path.glob("*.pt")) == []  # found at the save of step 5, before it was written


def test_a_bad_token_id_still_gets_its_clear_error_from_fit():
    data = toy_data(n_train=64, batch_size=32)
    batches = data.train_batches

    def with_a_bad_id(epoch, start=0):
        for batch in batches(epoch, start):
            batch.src[0, 0] = 10_000
            yield batch

    data.train_batches = with_a_bad_id
    with pytest.raises(ValueError, match=r"token ids must lie in \[0, \d+\) .* got values from \d+ to 10000"):
        fit(TOY, data, RunOptions(max_steps=1, progress=False))


def test_embeddings_outside_fit_still_check_every_call():
    from transformer_course.layers import Embeddings, token_ids_checked

    emb = Embeddings(10, 4)
    with pytest.raises(ValueError, match=r"token ids must lie in \[0, 10\)"):
        emb(torch.tensor([[3, 10]]))
    with token_ids_checked():  # the caller promises it checked them (fit does, on the host)
        emb(torch.tensor([[3, 9]]))
    with pytest.raises(ValueError, match=r"token ids must lie in \[0, 10\)"):
        emb(torch.tensor([[-1]]))  # the promise ends with the block


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA: torch.cuda.set_sync_debug_mode")
def test_on_a_gpu_no_steady_state_step_synchronizes(monkeypatch):
    """Between log steps every CUDA call that would synchronize raises (set_sync_debug_mode("error"))."""
    log_every = 4
    real = loop.optimizer_step
    steps = {"n": 0}

    def step_then_arm(model, optimizer, *args):
        real(model, optimizer, *args)
        steps["n"] += 1
        # what follows this step until the next one: its checks (a sync on log steps) and the next forward
        torch.cuda.set_sync_debug_mode("default" if steps["n"] % log_every == 0 else "error")

    monkeypatch.setattr(loop, "optimizer_step", step_then_arm)
    with contextlib.ExitStack() as stack:
        stack.callback(torch.cuda.set_sync_debug_mode, "default")
        fit(
            TOY,
            toy_data(n_train=32 * 12, batch_size=32),
            RunOptions(max_steps=12, log_every=log_every, device="cuda", progress=False),
        )
    assert steps["n"] == 12


@pytest.mark.parametrize("fused", [True, False], ids=["get_total_norm", "older torch"])
def test_pending_checks_find_a_non_finite_weight_and_loss_at_their_steps(monkeypatch, fused):
    from transformer_course.train.step import PendingChecks

    if not fused:  # torch < 2.6 has no nn.utils.get_total_norm
        monkeypatch.delattr(torch.nn.utils, "get_total_norm")
    model = torch.nn.Linear(3, 2)
    pending = PendingChecks()
    largest = max(p.abs().max().item() for p in model.parameters())
    pending.add_loss(1, torch.tensor(2.5))
    pending.add_weights(1, model)
    with torch.no_grad():
        model.bias[1] = float("-inf")
    pending.add_loss(2, torch.tensor(float("nan")))
    pending.add_weights(2, model)
    losses, weights = pending.read()
    assert losses[0] == (1, 2.5) and losses[1][0] == 2 and losses[1][1] != losses[1][1]  # NaN
    assert weights[0][0] == 1 and weights[0][1] == pytest.approx(largest)
    assert weights[1] == (2, float("inf")) and len(pending) == 0

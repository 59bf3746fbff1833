"""The training loop: loss, schedule, optimizer, accumulation, clipping, history, NaN stop, toy model."""

import json

import pytest
import torch
import torch.nn.functional as F

from transformer_course import train
from transformer_course.config import get_preset
from transformer_course.data import PAD, collate, toy_pairs
from transformer_course.train import (
    LabelSmoothingLoss,
    TrainingDiverged,
    fit,
    load_checkpoint,
    make_optimizer,
    make_scheduler,
    noam_rate,
    toy_data,
    train_toy_model,
)

TOY = get_preset("toy-copy")


pytestmark = pytest.mark.usefixtures("one_thread")  # tiny models: see tests/conftest.py


def logits_and_target_with_padding():
    logits = torch.randn(3, 5, 11)  # (B, T, V)
    target = torch.randint(4, 11, (3, 5))  # (B, T)
    target[0, 3:] = PAD
    target[2, 1:] = PAD
    return logits, target


@pytest.mark.parametrize("smoothing", [0.0, 0.1, 0.3])
def test_label_smoothing_mean_equals_pytorch_cross_entropy(smoothing):
    logits, target = logits_and_target_with_padding()
    expected = F.cross_entropy(logits.view(-1, 11), target.view(-1), label_smoothing=smoothing, ignore_index=PAD)
    torch.testing.assert_close(LabelSmoothingLoss(smoothing, PAD)(logits, target), expected)


def test_label_smoothing_sum_equals_pytorch_cross_entropy_sum():
    logits, target = logits_and_target_with_padding()
    expected = F.cross_entropy(
        logits.view(-1, 11), target.view(-1), label_smoothing=0.1, ignore_index=PAD, reduction="sum"
    )
    torch.testing.assert_close(LabelSmoothingLoss(0.1, PAD, reduction="sum")(logits, target), expected)


def test_label_smoothing_gives_padding_no_gradient():
    logits, target = logits_and_target_with_padding()
    logits.requires_grad_(True)
    LabelSmoothingLoss(0.1, PAD, reduction="sum")(logits, target).backward()
    assert logits.grad[target == PAD].abs().sum() == 0
    assert logits.grad[target != PAD].abs().sum() > 0


def test_label_smoothing_rejects_a_probability_outside_0_1():
    with pytest.raises(ValueError, match="label smoothing must be in"):
        LabelSmoothingLoss(1.5)


def test_noam_rate_matches_the_paper_formula_at_known_steps():
    d_model, warmup = 512, 4000
    for step in (1, 100, 3999, 4000, 4001, 100_000):
        expected = d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)
        assert noam_rate(step, d_model, warmup) == pytest.approx(expected)
    # the peak lies at step = warmup: (d_model · warmup)^-0.5
    assert noam_rate(4000, 512, 4000) == pytest.approx((512 * 4000) ** -0.5)
    assert noam_rate(4000, 512, 4000) > max(noam_rate(3999, 512, 4000), noam_rate(4001, 512, 4000))


def test_scheduler_gives_the_optimizer_the_noam_rate_of_each_update():
    config = get_preset("multi30k-cpu")  # d_model 256, warmup 150, lr_factor 0.2: peak ≈ 1e-3
    model = torch.nn.Linear(2, 2)
    optimizer = make_optimizer(model)
    scheduler = make_scheduler(optimizer, config)
    seen = []
    for _ in range(300):
        seen.append(optimizer.param_groups[0]["lr"])  # the rate the next update uses
        optimizer.step()
        scheduler.step()
    for k in (1, 2, 150, 151, 300):  # k-th update (from 1)
        expected = 0.2 * 256**-0.5 * min(k**-0.5, k * 150**-1.5)
        assert seen[k - 1] == pytest.approx(expected)
    assert max(seen) == pytest.approx(1.02e-3, rel=0.01)


def test_optimizer_is_adam_with_the_papers_betas_and_epsilon():
    optimizer = make_optimizer(torch.nn.Linear(2, 2))
    assert isinstance(optimizer, torch.optim.Adam)
    assert optimizer.defaults["betas"] == (0.9, 0.98) and optimizer.defaults["eps"] == 1e-9


def test_gradient_accumulation_of_two_halves_equals_one_full_batch(monkeypatch):
    # Plain SGD, so that an update is proportional to the gradient (Adam's m/√v turns rounding noise in
    # near-zero gradients into full-size steps); fixed-length sequences, so both halves hold as many tokens.
    monkeypatch.setattr(train, "make_optimizer", lambda model: torch.optim.SGD(model.parameters(), lr=1.0))
    full = fit(TOY, toy_data(min_len=6, max_len=6, batch_size=32, n_train=320), max_steps=4, progress=False)
    halves = fit(
        TOY.replace(accumulate=2),
        toy_data(min_len=6, max_len=6, batch_size=16, n_train=320),
        max_steps=4,
        progress=False,
    )
    assert full.step == halves.step == 4
    for a, b in zip(full.model.state_dict().values(), halves.model.state_dict().values()):
        torch.testing.assert_close(a, b)


def test_clipping_limits_the_gradient_norm_of_each_update():
    model = torch.nn.Linear(3, 3)
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda k: 1.0)
    before = [p.detach().clone() for p in model.parameters()]
    for p in model.parameters():
        p.grad = torch.full_like(p, 100.0)
    train._optimizer_step(model, optimizer, scheduler, clip_norm=0.5)
    change = torch.cat([(b - p.detach()).flatten() for b, p in zip(before, model.parameters())])
    assert change.norm().item() == pytest.approx(0.5, rel=1e-4)  # SGD with lr 1: the step is the clipped gradient


def test_fit_writes_history_json_csv_and_loss_plot(tmp_path):
    fit(TOY, toy_data(n_train=320, batch_size=32), tmp_path, epochs=2, log_every=5, progress=False)
    history = json.loads((tmp_path / "history.json").read_text())
    val_rows = [h for h in history if h["val_loss"] is not None]
    train_rows = [h for h in history if h["loss"] is not None]
    assert [h["epoch"] for h in val_rows] == [1, 2]
    assert len(train_rows) == 2 * 10 // 5 and all(h["tokens_per_s"] > 0 and h["lr"] > 0 for h in train_rows)
    assert (tmp_path / "history.csv").read_text().splitlines()[
        0
    ] == "step,epoch,loss,lr,tokens_per_s,val_loss,elapsed_s"
    assert (tmp_path / "loss.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert sorted(p.name for p in tmp_path.glob("*.pt")) == ["best.pt", "epoch-001.pt", "epoch-002.pt", "last.pt"]


def test_nan_loss_stops_with_a_clear_message_and_keeps_the_last_good_checkpoint(tmp_path, monkeypatch):
    real = train.loss_on_batch
    calls = {"n": 0}

    def loss_that_breaks_at_call_5(*args):
        calls["n"] += 1
        loss = real(*args)
        return loss * float("nan") if calls["n"] == 5 else loss

    monkeypatch.setattr(train, "loss_on_batch", loss_that_breaks_at_call_5)
    with pytest.raises(TrainingDiverged, match=r"loss became nan at step 5.*last good checkpoint.*last\.pt"):
        fit(TOY, toy_data(n_train=640, batch_size=32), tmp_path, save_every=2, progress=False)
    checkpoint = load_checkpoint(tmp_path / "last.pt")
    assert checkpoint.step == 4
    assert all(torch.isfinite(p).all() for p in checkpoint.model.parameters())


def test_max_minutes_stops_the_run_and_says_why():
    result = fit(TOY, toy_data(n_train=640, batch_size=32), max_minutes=0, progress=False)
    assert result.stopped_by == "max_minutes" and result.step == 1


def test_train_toy_model_learns_to_copy():
    model = train_toy_model("copy", seed=1)
    batch = collate(toy_pairs("copy", 200, 14, 4, 10, seed=123))  # sequences it has not seen
    with torch.no_grad():
        predicted = model.generator(model(batch.src, batch.tgt_in, batch.src_mask, batch.tgt_mask)).argmax(-1)
    real = batch.tgt_out != PAD
    accuracy = ((predicted == batch.tgt_out) & real).sum() / real.sum()
    assert not model.training
    assert accuracy > 0.95


def test_train_toy_model_rejects_an_unknown_task():
    with pytest.raises(ValueError, match="'copy' or 'reverse'"):
        train_toy_model("sort")

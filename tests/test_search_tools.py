"""The tools of the small-model search: the EMA of the weights, averaging around the best epoch, word dropout,
the choice among a run's checkpoints by validation, and the search script."""

import json
from pathlib import Path

import pytest
import torch

from transformer_course import cli
from transformer_course.checkpoint import epochs_around_best, load_checkpoint
from transformer_course.config import get_preset
from transformer_course.data import BOS, EOS, PAD, UNK, collate
from transformer_course.data.batching import word_dropout
from transformer_course.model import build_model
from transformer_course.train import RunOptions, fit, toy_data

pytestmark = pytest.mark.usefixtures("one_thread")  # tiny models: see tests/conftest.py

CONFIG = get_preset("toy-copy").replace(dropout=0.1)


def cli_error(capsys, *argv) -> str:
    assert cli.main([str(a) for a in argv]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


def data():
    return toy_data(n_train=320, batch_size=32)  # 10 batches per epoch


# ---- the EMA of the weights ---------------------------------------------------------------------------------


def test_the_ema_is_the_average_of_the_weights_after_each_step_computed_by_brute_force(tmp_path):
    config, decay = CONFIG.replace(ema_decay=0.9), 0.9
    d = data()
    torch.manual_seed(config.seed)  # fit draws the initial weights so: the EMA starts from them
    initial = build_model(config, len(d.src_vocab), len(d.tgt_vocab)).state_dict()
    expected = {k: v.double().clone() for k, v in initial.items() if v.is_floating_point()}

    def after_step(step, model):  # the brute force: every tensor, in float64, step by step
        for name, value in model.state_dict().items():
            if name in expected:
                expected[name] = decay * expected[name] + (1 - decay) * value.double()

    result = fit(config, d, RunOptions(tmp_path / "run", max_steps=15, progress=False), after_step=after_step)
    ema = result.ema.state_dict()
    for name, value in expected.items():
        torch.testing.assert_close(ema[name].double(), value, rtol=0, atol=1e-6, msg=name)
    raw = result.model.state_dict()
    assert any(not torch.equal(ema[k], raw[k]) for k in expected)  # not the raw weights
    assert not result.ema.training


def test_the_ema_is_validated_beside_the_raw_weights_and_saved_as_checkpoints_evaluate_loads(tmp_path):
    result = fit(CONFIG.replace(ema_decay=0.8), data(), RunOptions(tmp_path, epochs=2, progress=False))
    rows = [r for r in result.history if r["val_loss"] is not None]
    assert len(rows) == 2 and all(r["ema_val_loss"] is not None for r in rows)
    assert all(r["ema_val_loss"] != r["val_loss"] for r in rows)
    ema = load_checkpoint(tmp_path / "ema.pt")  # a normal model checkpoint
    for name, value in result.ema.state_dict().items():
        assert torch.equal(ema.model.state_dict()[name], value), name
    best = load_checkpoint(tmp_path / "best-ema.pt")
    assert best.state["val_loss"] == min(r["ema_val_loss"] for r in rows)
    assert "ema" in torch.load(tmp_path / "last.pt", weights_only=True)


def test_a_run_without_ema_writes_no_ema_files_and_no_ema_column(tmp_path):
    result = fit(CONFIG, data(), RunOptions(tmp_path, epochs=1, progress=False))
    assert result.ema is None
    assert not (tmp_path / "ema.pt").exists() and not (tmp_path / "best-ema.pt").exists()
    assert all("ema_val_loss" not in r for r in result.history)
    assert "ema" not in torch.load(tmp_path / "last.pt", weights_only=True)


@pytest.mark.slow
def test_a_run_with_ema_stopped_and_resumed_equals_a_straight_run_ema_included(tmp_path):
    config = CONFIG.replace(ema_decay=0.95, word_dropout=0.2)
    straight = fit(config, data(), RunOptions(tmp_path / "straight", epochs=3, progress=False))
    fit(config, data(), RunOptions(tmp_path / "split", epochs=3, max_steps=14, progress=False))  # mid-epoch 2
    resumed = fit(config, data(), RunOptions(tmp_path / "split", epochs=3, resume=True, progress=False))
    assert resumed.step == straight.step == 30
    for a, b in ((resumed.model, straight.model), (resumed.ema, straight.ema)):
        for (name, x), (_, y) in zip(a.state_dict().items(), b.state_dict().items()):
            assert torch.equal(x, y), name
    # the validations at each epoch's end (the split run validated at its stop too, mid-epoch 2)
    val = lambda h: {r["step"]: (r["val_loss"], r["ema_val_loss"]) for r in h if r["val_loss"] is not None}  # noqa: E731
    ends = val(straight.history)
    assert sorted(ends) == [10, 20, 30] and {s: val(resumed.history)[s] for s in ends} == ends
    for name in ("ema.pt", "best-ema.pt"):
        a, b = (load_checkpoint(tmp_path / run / name) for run in ("split", "straight"))
        assert a.state["val_loss"] == b.state["val_loss"] and a.step == b.step, name


def test_ema_decay_outside_0_1_is_refused_in_one_line():
    with pytest.raises(ValueError, match=r"ema_decay=1.0 is outside \[0, 1\)"):
        CONFIG.replace(ema_decay=1.0)


# ---- word dropout ---------------------------------------------------------------------------------------------


def batch():
    return collate([([5, 6, 7, 8, 9, 10], [11, 12, 13]), ([5, 6], [7, 8, 9, 10, 11, 12])] * 50)


@pytest.mark.parametrize("on", ["both", "source", "target"])
def test_word_dropout_replaces_words_by_unk_at_its_rate_and_never_pad_bos_eos(on):
    before = batch()
    after = word_dropout(before, 0.3, on, generator=torch.Generator().manual_seed(0))
    for name, touched in (("src", on in ("both", "source")), ("tgt_in", on in ("both", "target"))):
        old, new = getattr(before, name), getattr(after, name)
        changed = old != new
        words = (old != PAD) & (old != BOS) & (old != EOS)
        if not touched:
            assert not changed.any(), name
            continue
        assert (new[changed] == UNK).all() and not (changed & ~words).any(), name  # only words, only to <unk>
        assert 0.2 < changed.sum().item() / words.sum().item() < 0.4, name
    assert torch.equal(after.tgt_out, before.tgt_out) and after.n_tokens == before.n_tokens
    assert torch.equal(after.src_mask, before.src_mask) and torch.equal(after.tgt_mask, before.tgt_mask)


def seen_batches(monkeypatch):
    """The batches the training steps and the validation hand the model, recorded."""
    from transformer_course.train import loop, step

    seen = {"train": [], "val": []}
    real = step.loss_on_batch

    def recording(kind):
        def loss_on_batch(model, batch, loss_fn, autocast=False, rdrop=0.0):
            seen[kind].append(batch.src.clone())
            return real(model, batch, loss_fn, autocast, rdrop)

        return loss_on_batch

    monkeypatch.setattr(loop, "loss_on_batch", recording("train"))
    monkeypatch.setattr(step, "loss_on_batch", recording("val"))
    return seen


def test_word_dropout_is_on_the_batches_a_step_sees_and_off_in_validation(monkeypatch):
    d = data()
    seen = seen_batches(monkeypatch)
    fit(CONFIG.replace(word_dropout=0.25, word_dropout_on="source"), d, RunOptions(epochs=1, progress=False))
    clean = [b.src for b in d.train_batches(0, 0)]
    assert len(seen["train"]) == len(clean) == 10
    unk = sum(int((s == UNK).sum()) for s in seen["train"])
    words = sum(int((c > EOS).sum()) for c in clean)
    assert 0.15 < unk / words < 0.35
    for s, c in zip(seen["train"], clean):
        assert torch.equal(s[s != UNK], c[s != UNK])  # the rest as the data gave it
    assert seen["val"] and not any((s == UNK).any() for s in seen["val"])  # validation: the data as it is


def test_a_run_with_the_new_options_off_trains_exactly_as_without_them(tmp_path):
    off = CONFIG.replace(ema_decay=0.0, word_dropout=0.0, word_dropout_on="target")
    a = fit(CONFIG, data(), RunOptions(max_steps=5, progress=False))
    b = fit(off, data(), RunOptions(max_steps=5, progress=False))
    for (name, x), (_, y) in zip(a.model.state_dict().items(), b.model.state_dict().items()):
        assert torch.equal(x, y), name


# ---- averaging around the best epoch ----------------------------------------------------------------------


def fake_history(losses):
    """history.json rows as fit writes them: a training row, then the validation row of each epoch."""
    rows = []
    for epoch, loss in enumerate(losses, start=1):
        rows.append({"step": epoch * 10 - 5, "epoch": epoch, "loss": 3.0, "val_loss": None})
        rows.append({"step": epoch * 10, "epoch": epoch, "loss": None, "val_loss": loss})
    return rows


@pytest.mark.parametrize(
    ("k", "epochs"),
    [
        (1, [4]),
        (3, [3, 4, 5]),
        (4, [2, 3, 4, 5]),
        (5, [2, 3, 4, 5, 6]),
        (9, [1, 2, 3, 4, 5, 6]),
        (20, [1, 2, 3, 4, 5, 6]),
    ],
)
def test_epochs_around_best_are_centred_on_the_lowest_validation_loss_within_the_run(k, epochs):
    paths = [Path(f"run/epoch-{e:03d}.pt") for e in range(1, 7)]
    best, chosen = epochs_around_best(fake_history([3.0, 2.5, 2.2, 2.0, 2.1, 2.3]), paths, k)
    assert best == 4 and chosen == [Path(f"run/epoch-{e:03d}.pt") for e in epochs]


def test_average_around_best_averages_those_epochs_and_records_them(tmp_path, capsys):
    fit(CONFIG, toy_data(n_train=64, batch_size=32), RunOptions(tmp_path, epochs=6, progress=False))
    (tmp_path / "history.json").write_text(json.dumps(fake_history([3.0, 2.5, 2.2, 2.3, 2.4, 2.6])))  # best: 3
    assert cli.main(["average", "--run", str(tmp_path), "--around-best", "3"]) == 0
    assert "best epoch by validation loss: 3" in capsys.readouterr().out
    averaged = load_checkpoint(tmp_path / "averaged-around-best-3.pt")
    names = [p.split("/")[-1] for p in averaged.state["averaged_from"]]
    assert names == ["epoch-002.pt", "epoch-003.pt", "epoch-004.pt"]
    epochs = [load_checkpoint(tmp_path / n).model.state_dict() for n in names]
    for name, value in averaged.model.state_dict().items():  # the mean, computed here
        if value.is_floating_point():
            torch.testing.assert_close(value, sum(e[name] for e in epochs) / 3, rtol=0, atol=1e-6, msg=name)
    with pytest.raises(SystemExit):  # one or the other
        cli.main(["average", "--run", str(tmp_path), "--around-best", "3", "--last", "2"])


def test_average_around_best_refuses_a_history_without_validation_in_one_line(tmp_path, capsys):
    fit(CONFIG, toy_data(n_train=64, batch_size=32), RunOptions(tmp_path, epochs=2, progress=False))
    (tmp_path / "history.json").write_text(json.dumps([{"step": 1, "epoch": 1, "loss": 2.0, "val_loss": None}]))
    assert "holds no validation loss" in cli_error(capsys, "average", "--run", tmp_path, "--around-best", "3")


# ---- the choice by validation ----------------------------------------------------------------------------


def test_choose_scores_every_candidate_on_validation_and_records_the_lowest(tmp_path, capsys):
    config = CONFIG.replace(ema_decay=0.9)
    d = toy_data(n_train=320, seed=config.seed)  # choose rebuilds toy_data(task, seed=seed): the same validation
    fit(config, d, RunOptions(tmp_path, epochs=3, progress=False))
    assert cli.main(["average", "--run", str(tmp_path), "--last", "2"]) == 0
    assert cli.main(["choose", "--run", str(tmp_path)]) == 0
    record = json.loads((tmp_path / "chosen.json").read_text())
    assert set(record["scores"]) == {"best", "best-ema", "averaged-last-2"}
    assert record["by"] == "val_loss" and record["split"] == "val"
    assert record["chosen"] == min(record["scores"], key=record["scores"].get)
    for label in ("best", "best-ema"):  # the same number fit recorded when it validated them
        assert record["scores"][label] == pytest.approx(load_checkpoint(tmp_path / f"{label}.pt").state["val_loss"])
    assert f"chosen: {record['chosen']}" in capsys.readouterr().out


def test_a_run_folder_given_as_checkpoint_is_the_one_choose_chose(tmp_path, capsys):
    from transformer_course.train.choose import checkpoint_or_chosen

    fit(
        CONFIG.replace(ema_decay=0.9),
        toy_data(n_train=64, batch_size=32),
        RunOptions(tmp_path, epochs=1, progress=False),
    )
    for command in (["evaluate", "--checkpoint", tmp_path], ["translate", "--checkpoint", tmp_path, "1 2 3"]):
        assert f"choose --run {tmp_path}" in cli_error(capsys, *command)  # no chosen.json yet: one line, what to run
    assert cli.main(["choose", "--run", str(tmp_path)]) == 0
    label = json.loads((tmp_path / "chosen.json").read_text())["chosen"]
    assert checkpoint_or_chosen(tmp_path) == tmp_path / f"{label}.pt"
    assert checkpoint_or_chosen(tmp_path / "best.pt") == tmp_path / "best.pt"  # a file is itself
    (tmp_path / f"{label}.pt").unlink()
    assert f"chose {label}, but" in cli_error(capsys, "evaluate", "--checkpoint", tmp_path)


def test_choose_in_a_folder_without_checkpoints_is_one_line(tmp_path, capsys):
    assert "holds none of best.pt" in cli_error(capsys, "choose", "--run", tmp_path)


# ---- R-Drop ------------------------------------------------------------------------------------------------


def test_rdrop_loss_is_the_mean_smoothed_loss_plus_alpha_times_the_symmetric_kl_computed_by_hand():
    import torch.nn.functional as F

    from transformer_course.train import LabelSmoothingLoss
    from transformer_course.train.step import rdrop_loss

    torch.manual_seed(0)
    logits = torch.randn(6, 5, 11, dtype=torch.float64)  # two passes of a batch of 3, 5 positions, 11 words
    target = torch.randint(4, 11, (3, 5))
    target[0, 3:] = PAD
    target[2, 1:] = PAD
    loss_fn = LabelSmoothingLoss(0.1, PAD, reduction="sum")
    got = rdrop_loss(logits, target, loss_fn, alpha=0.7)
    ce = sum(
        F.cross_entropy(
            half.reshape(-1, 11), target.reshape(-1), label_smoothing=0.1, ignore_index=PAD, reduction="sum"
        )
        for half in logits.chunk(2)
    )
    kl = 0.0
    for b in range(3):
        for t in range(5):
            if target[b, t] == PAD:
                continue
            p, q = logits[b, t].softmax(-1), logits[b + 3, t].softmax(-1)
            kl += float((p * (p / q).log()).sum() + (q * (q / p).log()).sum())
    torch.testing.assert_close(
        got.double(), torch.tensor(ce / 2 + 0.7 * kl / 2, dtype=torch.float64), rtol=1e-5, atol=1e-5
    )


def test_rdrop_without_dropout_is_the_plain_loss_and_with_dropout_changes_the_training():
    from transformer_course.train import LabelSmoothingLoss, loss_on_batch

    d = data()
    batch = next(iter(d.train_batches(0)))
    model = build_model(CONFIG.replace(dropout=0.0), len(d.src_vocab), len(d.tgt_vocab)).train()
    loss_fn = LabelSmoothingLoss(0.1, PAD, reduction="sum")
    torch.testing.assert_close(loss_on_batch(model, batch, loss_fn, rdrop=1.0), loss_on_batch(model, batch, loss_fn))
    plain = fit(CONFIG, data(), RunOptions(max_steps=3, progress=False))
    rdrop = fit(CONFIG.replace(rdrop=1.0), data(), RunOptions(max_steps=3, progress=False))
    assert any(not torch.equal(a, b) for a, b in zip(plain.model.parameters(), rdrop.model.parameters()))
    assert all(torch.isfinite(p).all() for p in rdrop.model.parameters())


def test_every_new_option_is_set_from_the_command_line():
    from transformer_course.overrides import apply_overrides

    sets = ["ema_decay=0.999", "word_dropout=0.1", "word_dropout_on=source", "rdrop=0.5"]
    config = apply_overrides(get_preset("multi30k-cpu"), sets)
    assert (config.ema_decay, config.word_dropout, config.word_dropout_on, config.rdrop) == (0.999, 0.1, "source", 0.5)
    with pytest.raises(ValueError, match="word_dropout_on must be one of"):
        apply_overrides(get_preset("multi30k-cpu"), ["word_dropout_on=decoder"])


def test_choose_by_bleu_takes_the_highest_validation_bleu_and_never_reads_test(tmp_path, monkeypatch):
    from transformer_course import evaluate

    fit(
        CONFIG.replace(ema_decay=0.9),
        toy_data(n_train=64, batch_size=32),
        RunOptions(tmp_path, epochs=1, progress=False),
    )
    asked = []

    def fake_bleu(checkpoint, split, beam, root, limit, progress=True, length_penalty=None):  # one score per file
        asked.append((Path(checkpoint).name, split, beam, length_penalty))
        return type("Result", (), {"bleu": {"best.pt": 20.0, "best-ema.pt": 30.0}[Path(checkpoint).name]})()

    monkeypatch.setattr(evaluate, "evaluate_checkpoint", fake_bleu)
    assert cli.main(["choose", "--run", str(tmp_path), "--by", "bleu", "--beam", "4"]) == 0
    record = json.loads((tmp_path / "chosen.json").read_text())
    assert record["chosen"] == "best-ema" and record["beam_size"] == 4 and record["by"] == "bleu"
    assert "length_penalty" not in record  # each checkpoint's own α
    assert sorted(asked) == [("best-ema.pt", "val", 4, None), ("best.pt", "val", 4, None)]
    asked.clear()
    assert cli.main(["choose", "--run", str(tmp_path), "--by", "bleu", "--beam", "4", "--length-penalty", "1.2"]) == 0
    assert json.loads((tmp_path / "chosen.json").read_text())["length_penalty"] == 1.2
    assert sorted(asked) == [("best-ema.pt", "val", 4, 1.2), ("best.pt", "val", 4, 1.2)]
    assert cli.main(["choose", "--run", str(tmp_path), "--by", "bleu", "--length-penalty", "-1"]) == 1  # one line

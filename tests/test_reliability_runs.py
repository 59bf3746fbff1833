"""Reliability, round 2 (docs/reliability.md): a run has an identity, and nothing writes over a run.

fit claims its folder (the lock and the "holds a run?" check in one step), a new run gets a run id, every
checkpoint carries it with the data's fingerprint; resuming and averaging accept only one run's files. Each test
is one input of the audit."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from transformer_course import cli
from transformer_course.checkpoint import CheckpointError, average_checkpoints, load_checkpoint, save_checkpoint
from transformer_course.config import get_preset
from transformer_course.data import toy_data, toy_vocab
from transformer_course.model import build_model
from transformer_course.train import RunOptions, fit
from transformer_course.train.state import RUN_FILE, restore_run

TOY = get_preset("toy-copy")
pytestmark = pytest.mark.usefixtures("one_thread")  # tiny models: see tests/conftest.py


def cli_error(capsys, *argv) -> str:
    assert cli.main([str(a) for a in argv]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


def short_run(out: Path, **kwargs):
    return fit(TOY, toy_data(), RunOptions(out, max_steps=2, progress=False, **kwargs))


@pytest.mark.slow
def test_every_checkpoint_of_a_run_carries_its_run_id_and_data_fingerprint(tmp_path):
    fit(TOY, toy_data(n_train=64, batch_size=32), RunOptions(tmp_path, epochs=2, save_every=1, progress=False))
    run_id = json.loads((tmp_path / RUN_FILE).read_text())["run_id"]
    states = {p.name: torch.load(p, weights_only=True) for p in sorted(tmp_path.glob("*.pt"))}
    assert sorted(states) == ["best.pt", "epoch-001.pt", "epoch-002.pt", "last.pt"]
    assert {s["run_id"] for s in states.values()} == {run_id} and len(run_id) == 16
    assert len({s["data_fingerprint"] for s in states.values()}) == 1


@pytest.mark.slow
def test_fit_refuses_a_folder_that_holds_a_run_unless_told_to_resume_or_overwrite(tmp_path):
    short_run(tmp_path)
    before = (tmp_path / "last.pt").read_bytes()
    with pytest.raises(ValueError, match="already holds a run; pass --resume"):
        short_run(tmp_path)
    assert (tmp_path / "last.pt").read_bytes() == before
    old_id = json.loads((tmp_path / RUN_FILE).read_text())["run_id"]
    (tmp_path / "epoch-009.pt").write_bytes(before)  # a file of the old run that the new one will not write
    (tmp_path / "notes.txt").write_text("mine")
    short_run(tmp_path, overwrite=True)
    assert json.loads((tmp_path / RUN_FILE).read_text())["run_id"] != old_id
    assert not (tmp_path / "epoch-009.pt").exists() and (tmp_path / "notes.txt").read_text() == "mine"


@pytest.mark.slow
def test_a_second_run_that_loads_data_slowly_cannot_overwrite_a_first_run_that_finished_meanwhile(
    tmp_path, capsys, monkeypatch
):
    out = tmp_path / "run"
    real_toy_data = toy_data

    def slow_data(*args, **kwargs):  # while the second run loads its data, the first run ends in the same folder
        short_run(out)
        return real_toy_data(*args, **kwargs)

    monkeypatch.setattr("transformer_course.data.toy_data", slow_data)
    err = cli_error(capsys, "train", "--preset", "toy-copy", "--out", out, "--max-steps", "2", "--no-progress")
    assert "already holds a run" in err
    assert load_checkpoint(out / "last.pt").step == 2


@pytest.mark.slow
def test_resume_refuses_a_last_pt_copied_from_another_run_and_adopt_takes_it_as_a_new_run(tmp_path, capsys):
    first, second = tmp_path / "first", tmp_path / "second"
    short_run(first)
    short_run(second)
    shutil.copyfile(first / "last.pt", second / "last.pt")
    with pytest.raises(CheckpointError, match="belongs to another run"):
        fit(TOY, toy_data(), RunOptions(second, max_steps=4, resume=True, progress=False))
    err = cli_error(capsys, "train", "--preset", "toy-copy", "--out", second, "--resume", "--no-progress")
    assert "another run" in err and "--adopt" in err
    assert (
        cli.main(
            [
                "train",
                "--preset",
                "toy-copy",
                "--out",
                str(second),
                "--resume",
                "--adopt",
                "--max-steps",
                "4",
                "--no-progress",
            ]
        )
        == 0
    )
    folder = json.loads((second / RUN_FILE).read_text())
    first_id = json.loads((first / RUN_FILE).read_text())["run_id"]
    assert folder["adopted_from"] == first_id and folder["run_id"] != first_id and "adopt" not in folder
    assert torch.load(second / "last.pt", weights_only=True)["run_id"] == folder["run_id"]
    assert fit(TOY, toy_data(), RunOptions(second, max_steps=6, resume=True, progress=False)).step == 6  # now its own


def test_adopt_without_resume_is_one_line(tmp_path, capsys):
    assert "--resume" in cli_error(capsys, "train", "--preset", "toy-copy", "--out", tmp_path / "r", "--adopt")


@pytest.mark.slow
def test_average_refuses_epoch_files_of_two_runs(tmp_path, capsys):
    first, second = tmp_path / "first", tmp_path / "second"
    for out in (first, second):
        fit(TOY, toy_data(n_train=64, batch_size=32), RunOptions(out, epochs=2, progress=False))
    shutil.copyfile(first / "epoch-001.pt", second / "epoch-001.pt")
    with pytest.raises(CheckpointError, match="different training runs"):
        average_checkpoints([second / "epoch-001.pt", second / "epoch-002.pt"])
    assert "different training runs" in cli_error(capsys, "average", "--run", second, "--last", "2")


def bpe_checkpoint_without_its_tokenizer(path: Path, **kwargs) -> Path:
    """A subword checkpoint whose tokenizer entry was deleted and its checksums recomputed."""
    config = TOY.replace(tokenizer="bpe", shared_vocab=True)
    vocab = toy_vocab(14)
    return save_checkpoint(path, build_model(config, 14, 14), config, vocab, vocab, **kwargs)


def test_a_subword_checkpoint_without_its_tokenizer_is_refused_not_loaded_as_words(tmp_path, capsys):
    path = bpe_checkpoint_without_its_tokenizer(tmp_path / "best.pt")
    with pytest.raises(CheckpointError, match="carries no subword tokenizer"):
        load_checkpoint(path)
    assert "no subword tokenizer" in cli_error(capsys, "translate", "--checkpoint", path, "ein Mann")


def test_resume_applies_every_check_load_checkpoint_applies(tmp_path):
    config = TOY.replace(tokenizer="bpe", shared_vocab=True)
    data = toy_data()
    model = build_model(config, 14, 14)
    from transformer_course.train import make_optimizer, make_scheduler

    optimizer = make_optimizer(model)
    scheduler = make_scheduler(optimizer, config)
    path = bpe_checkpoint_without_its_tokenizer(tmp_path / "last.pt", optimizer=optimizer, scheduler=scheduler)
    with pytest.raises(CheckpointError) as by_load:
        load_checkpoint(path)
    with pytest.raises(CheckpointError) as by_resume:
        restore_run(path, config, data, model, optimizer, scheduler)
    assert str(by_resume.value) == str(by_load.value)


def test_fit_refuses_a_subword_config_with_data_that_has_no_tokenizer(tmp_path):
    with pytest.raises(ValueError, match="tokenizer='bpe' but the data has no subword tokenizer"):
        fit(
            TOY.replace(tokenizer="bpe", shared_vocab=True),
            toy_data(),
            RunOptions(tmp_path, max_steps=1, progress=False),
        )
    assert not (tmp_path / "last.pt").exists()


def test_train_out_a_file_is_one_line_naming_it(tmp_path, capsys):
    (tmp_path / "file").write_text("x")
    err = cli_error(capsys, "train", "--preset", "toy-copy", "--out", tmp_path / "file")
    assert "is a file" in err and "Errno" not in err

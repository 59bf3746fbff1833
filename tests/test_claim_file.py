"""A command that writes one file claims it first: a new file, or its own earlier output, never anything else.

``average --out`` and ``evaluate --json`` go through :func:`transformer_course.files.claim_file`, as the builders
of folders go through ``claim_folder``: a run's last.pt or best.pt, an epoch checkpoint, a stranger's file, a
folder or a symbolic link is refused in one line before any work, and left as it was.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from transformer_course import cli
from transformer_course.checkpoint import average_checkpoints, is_averaged_checkpoint, save_checkpoint
from transformer_course.config import get_preset
from transformer_course.data import toy_vocab
from transformer_course.files import DestinationError, claim_file
from transformer_course.model import build_model


def toy_checkpoint(path: Path) -> Path:
    vocab = toy_vocab(14)
    return save_checkpoint(path, build_model(get_preset("toy-copy"), 14, 14), get_preset("toy-copy"), vocab, vocab)


@pytest.fixture
def run(tmp_path) -> Path:
    """A run folder as train leaves it: three epoch checkpoints, last.pt, best.pt and run.json."""
    for name in ("epoch-001.pt", "epoch-002.pt", "epoch-003.pt", "last.pt", "best.pt"):
        toy_checkpoint(tmp_path / name)
    (tmp_path / "run.json").write_text("{}")
    return tmp_path


def cli_error(capsys, *argv) -> str:
    assert cli.main([str(a) for a in argv]) == 1
    err = capsys.readouterr().err
    assert err.strip() and err.strip().count("\n") == 0 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize("name", ["last.pt", "best.pt", "run.json", "notes.txt"])
def test_average_never_replaces_a_file_it_did_not_write(run, capsys, name):
    target = run / name
    if not target.exists():
        target.write_text("the teacher's notes\n")
    before = target.read_bytes()
    err = cli_error(capsys, "average", "--run", run, "--last", "2", "--out", target)
    assert "was not written by average" in err and "--out" in err
    assert target.read_bytes() == before  # a run whose last.pt is replaced can no longer resume


def test_average_replaces_its_own_earlier_average(run):
    assert cli.main(["average", "--run", str(run), "--last", "2"]) == 0
    out = run / "averaged-last-2.pt"
    assert is_averaged_checkpoint(out) and not is_averaged_checkpoint(run / "last.pt")
    assert cli.main(["average", "--run", str(run), "--last", "2"]) == 0  # the same command again
    assert cli.main(["average", "--run", str(run), "--last", "3", "--out", str(out)]) == 0


def test_average_refuses_in_the_api_too_before_reading(run):
    with pytest.raises(DestinationError, match="was not written by average"):
        average_checkpoints([run / "epoch-002.pt", run / "epoch-003.pt"], run / "best.pt")


def test_average_refuses_a_folder_and_a_symbolic_link_as_out(run, capsys):
    (run / "sub").mkdir()
    assert "is a folder" in cli_error(capsys, "average", "--run", run, "--out", run / "sub")
    (run / "link.pt").symlink_to(run / "best.pt")
    assert "symbolic link" in cli_error(capsys, "average", "--run", run, "--out", run / "link.pt")


@pytest.mark.parametrize("target", ["loop", "dangling"])
def test_an_epoch_name_that_leads_to_no_file_is_one_line(run, capsys, target):
    link = run / "epoch-009.pt"
    link.symlink_to(link if target == "loop" else run / "gone.pt")
    err = cli_error(capsys, "average", "--run", run, "--last", "2")
    assert "epoch-009.pt is not a file" in err


def test_evaluate_json_refuses_a_checkpoint_of_the_run_before_any_work(run, capsys, monkeypatch):
    import transformer_course.evaluate as evaluate

    monkeypatch.setattr(evaluate, "evaluate_checkpoint", lambda *a, **k: pytest.fail("translated before the check"))
    before = (run / "epoch-001.pt").read_bytes()
    err = cli_error(capsys, "evaluate", "--checkpoint", run / "best.pt", "--json", run / "epoch-001.pt")
    assert "was not written by evaluate --json" in err
    assert (run / "epoch-001.pt").read_bytes() == before


def test_claim_file_takes_a_new_file_and_its_own_output_only(tmp_path):
    claim_file(tmp_path / "new.json", "evaluate --json", lambda p: False)  # new: fine
    own = tmp_path / "report.json"
    own.write_text(json.dumps({"checkpoint": "a", "split": "test", "beam_size": 1, "bleu": 1.0, "hypotheses": []}))
    claim_file(own, "evaluate --json", cli.is_evaluation_report)
    (tmp_path / "broken.json").write_text("{not json")
    with pytest.raises(DestinationError, match="was not written by evaluate --json"):
        claim_file(tmp_path / "broken.json", "evaluate --json", cli.is_evaluation_report)
    with pytest.raises(DestinationError, match="empty"):
        claim_file("", "average", lambda p: True)
    (tmp_path / "file").write_text("x")
    with pytest.raises(DestinationError, match="is a file"):
        claim_file(tmp_path / "file" / "out.pt", "average", lambda p: True)


def test_evaluate_json_under_a_file_is_refused_before_any_work(run, capsys, monkeypatch):
    import transformer_course.evaluate as evaluate

    monkeypatch.setattr(evaluate, "evaluate_checkpoint", lambda *a, **k: pytest.fail("translated before the check"))
    (run / "notes").write_text("x")
    err = cli_error(capsys, "evaluate", "--checkpoint", run / "best.pt", "--json", run / "notes" / "report.json")
    assert "is a file" in err and "Errno" not in err

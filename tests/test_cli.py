"""The command line, run as a learner runs it: ``python -m transformer_course …`` in a subprocess."""

import subprocess
import sys

import pytest

from transformer_course.cli import build_parser, main


def run(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "transformer_course", *args], capture_output=True, text=True, cwd=cwd, timeout=300
    )


@pytest.mark.parametrize("command", ["download", "train", "evaluate", "translate", "average"])
def test_every_command_has_help(command, capsys):
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args([command, "--help"])
    assert exit_.value.code == 0
    assert "usage: python -m transformer_course " + command in capsys.readouterr().out


FLAGS = {
    "download": ["--root", "--deadline"],
    "train": [
        "--preset",
        "--epochs",
        "--max-minutes",
        "--max-steps",
        "--out",
        "--resume",
        "--root",
        "--device",
        "--compile",
        "--save-every",
        "--limit",
        "--threads",
        "--no-progress",
    ],
    "evaluate": [
        "--checkpoint",
        "--split",
        "--beam",
        "--length-penalty",
        "--limit",
        "--root",
        "--samples",
        "--json",
        "--no-progress",
    ],
    "translate": ["--checkpoint", "--beam"],
    "average": ["--run", "--last", "--around-best", "--out"],
    "choose": ["--run", "--by", "--beam", "--length-penalty", "--root", "--limit", "--device"],
}


@pytest.mark.parametrize("command", FLAGS)
def test_every_command_keeps_its_options(command, capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args([command, "--help"])
    shown = capsys.readouterr().out
    assert [flag for flag in FLAGS[command] if flag not in shown] == []


@pytest.mark.slow
def test_help_runs_as_a_module():
    result = run("--help")
    assert result.returncode == 0
    assert all(c in result.stdout for c in ("download", "train", "evaluate", "translate"))


@pytest.mark.slow
def test_unknown_preset_exits_1_with_one_line_naming_the_presets():
    result = run("train", "--preset", "big")
    assert result.returncode == 1
    assert result.stderr.strip().count("\n") == 0
    assert "unknown preset 'big'" in result.stderr and "toy-copy" in result.stderr


@pytest.mark.slow
def test_missing_checkpoint_exits_1_with_one_line_saying_how_to_make_one(tmp_path):
    result = run("translate", "--checkpoint", str(tmp_path / "none.pt"), "Ein Mann.")
    assert result.returncode == 1
    assert result.stderr.strip().count("\n") == 0 and "python -m transformer_course train" in result.stderr


@pytest.mark.slow
def test_an_unknown_option_exits_2():
    assert run("evaluate", "--checkpoint", "x.pt", "--beams", "4").returncode == 2


@pytest.mark.slow
def test_train_then_refuse_to_overwrite_then_resume_then_translate(tmp_path):
    out = tmp_path / "run"
    first = run("train", "--preset", "toy-copy", "--max-steps", "5", "--out", str(out))
    assert first.returncode == 0, first.stderr
    assert {"last.pt", "best.pt", "history.json", "history.csv", "loss.png"} <= {p.name for p in out.iterdir()}

    again = run("train", "--preset", "toy-copy", "--max-steps", "5", "--out", str(out))
    assert again.returncode == 1 and "--resume" in again.stderr and again.stderr.strip().count("\n") == 0

    resumed = run("train", "--preset", "toy-copy", "--max-steps", "8", "--out", str(out), "--resume", "--no-progress")
    assert resumed.returncode == 0, resumed.stderr
    assert "8 steps" in resumed.stdout

    translated = run("translate", "--checkpoint", str(out / "last.pt"), "--beam", "2", "4 5 6", "7 8")
    assert translated.returncode == 0, translated.stderr
    assert (
        len(translated.stdout.rstrip("\n").split("\n")) == 2
    )  # one line per sentence (an untrained model may print "")


@pytest.mark.slow
def test_a_negative_beam_exits_1(tmp_path):
    result = run("translate", "--checkpoint", str(tmp_path / "x.pt"), "--beam", "0", "Hallo")
    assert result.returncode == 1 and "--beam must be at least 1" in result.stderr


def test_the_classroom_command_hands_over_to_the_classroom_build(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["classroom", "--help"])
    assert exit_info.value.code == 0
    assert "usage: python -m transformer_course classroom" in capsys.readouterr().out

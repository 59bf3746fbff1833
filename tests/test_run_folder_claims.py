"""What train leaves in its folder when it refuses or fails, and which folder a last.pt may resume in.

- A config too big for the machine is refused in one line before any tensor is allocated, with nothing written.
- A run that fails before its first checkpoint leaves no run.json, and removes the folder it made.
- A folder without run.json is a foreign folder unless another checkpoint of the run in it proves last.pt its own:
  a last.pt copied in alone resumes only as a new run (--adopt).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from transformer_course.config import check_fits_in_memory, get_preset, training_bytes
from transformer_course.model import build_model, count_parameters


def train(*args, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "transformer_course", "train", "--preset", "toy-copy", "--no-progress", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
    )


def one_line_error(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 1, done.stderr[-2000:]
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("error: "), done.stderr[-2000:]
    return done.stderr


@pytest.mark.parametrize(
    "preset, changes, vocab",
    [
        ("multi30k-cpu", {}, (8000, 7000)),
        ("multi30k-base", {}, (8000, 7000)),
        ("multi30k-cpu", {"tie_embeddings": "none"}, (8000, 7000)),
        ("multi30k-cpu", {"tie_embeddings": "all", "shared_vocab": True}, (8000, 8000)),
    ],
)
def test_the_parameter_estimate_is_the_models_count_to_within_one_percent_from_below(preset, changes, vocab):
    config = get_preset(preset).replace(**changes)
    estimate, _ = training_bytes(config, *vocab)
    real = count_parameters(build_model(config, *vocab))
    assert 0.99 * real <= estimate <= real  # biases and LayerNorms left out: a lower bound


def test_a_model_too_big_for_the_machine_is_one_line_naming_what_to_shrink():
    config = get_preset("multi30k-cpu").replace(N=64, d_model=16384, d_ff=65536, h=16)
    with pytest.raises(ValueError, match=r"481,298 M parameters.*make N, d_model, d_ff or tokens_per_batch smaller"):
        check_fits_in_memory(config, 8000, 8000, available=24 * 2**30)
    check_fits_in_memory(get_preset("multi30k-cpu"), 8000, 8000, available=24 * 2**30)  # the default fits


@pytest.mark.slow
def test_train_refuses_a_huge_config_before_allocating_and_writes_nothing(tmp_path):
    done = train("--set", "N=64", "--set", "d_model=16384", "--set", "d_ff=65536", "--set", "h=16", "--out", "run",
                 cwd=tmp_path)  # fmt: skip
    assert "GiB" in one_line_error(done) and not (tmp_path / "run").exists()


@pytest.mark.slow
def test_a_run_that_fails_before_its_first_checkpoint_leaves_no_identity_and_no_folder(tmp_path):
    done = train("--set", "max_len=1", "--max-steps", "5", "--out", "run", cwd=tmp_path)
    assert "max_len" in one_line_error(done) and not (tmp_path / "run").exists()
    (tmp_path / "kept").mkdir()
    (tmp_path / "kept" / "notes.txt").write_text("mine")
    one_line_error(train("--set", "max_len=1", "--max-steps", "5", "--out", "kept", cwd=tmp_path))
    assert sorted(p.name for p in (tmp_path / "kept").iterdir()) == ["notes.txt"]  # no run.json left


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("runs")
    done = train("--max-steps", "20", "--epochs", "1", "--out", "first", cwd=folder)
    assert done.returncode == 0, done.stderr[-2000:]
    return folder / "first"


@pytest.mark.slow
def test_a_last_pt_copied_alone_into_a_folder_without_run_json_is_refused(finished_run, tmp_path):
    (tmp_path / "other").mkdir()
    shutil.copy(finished_run / "last.pt", tmp_path / "other" / "last.pt")
    err = one_line_error(train("--resume", "--out", "other", "--epochs", "2", cwd=tmp_path))
    assert "has no run.json" in err and "--resume --adopt" in err
    assert not (tmp_path / "other" / "run.json").exists()
    done = train("--resume", "--adopt", "--out", "other", "--epochs", "2", cwd=tmp_path)  # as a new run: fine
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.slow
def test_a_run_folder_that_lost_its_run_json_resumes_when_its_own_files_prove_it(finished_run, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(finished_run, copy)
    (copy / "run.json").unlink()
    done = train("--resume", "--out", "copy", "--epochs", "2", cwd=tmp_path)  # best.pt carries the same run id
    assert done.returncode == 0, done.stderr[-2000:]
    assert (copy / "run.json").read_text() == (finished_run / "run.json").read_text()

"""Reliability of checkpoints, training runs and run folders, and the kill -9 guarantee (docs/reliability.md):
a checkpoint is written only from finite weights, carries checksums of its tensors,
is one self-consistent unit, a run folder is locked, and a run killed at any moment resumes exactly."""

import io
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch

from transformer_course import cli
from transformer_course.checkpoint import FORMAT, RunLockedError, resolve_model
from transformer_course.config import get_preset
from transformer_course.data import Vocab, VocabMismatchError
from transformer_course.decode import translate
from transformer_course.files import CRASH_AT, TEMP_SUFFIX
from transformer_course.model import build_model
from transformer_course.train import (
    CheckpointError,
    RunOptions,
    TrainingDiverged,
    average_checkpoints,
    fit,
    load_checkpoint,
    loop,
    read_checkpoint,
    save_checkpoint,
    toy_data,
    toy_vocab,
)

TOY = get_preset("toy-copy")
CONFIG = TOY.replace(dropout=0.1)  # dropout: exact resume also needs the random number generator states
ABSURD = TOY.replace(lr_factor=1e6)  # Adam at 10⁶ × the Noam rate: the weights become NaN within 6 steps

pytestmark = pytest.mark.usefixtures("one_thread")  # tiny models: see tests/conftest.py


def toy_checkpoint(path: Path, config=CONFIG, src_vocab=None, tgt_vocab=None, **kwargs) -> Path:
    vocab = toy_vocab(14)
    model = build_model(config, 14, 14)
    return save_checkpoint(path, model, config, src_vocab or vocab, tgt_vocab or vocab, **kwargs)


def finite(path: Path) -> bool:
    return all(torch.isfinite(p).all() for p in load_checkpoint(path).model.parameters())


def old_style_nan_checkpoint(path: Path) -> Path:
    """A file as the code before the fix wrote it after a divergence: format v1, no checksums, NaN weights."""
    state = torch.load(toy_checkpoint(path), weights_only=True)
    state["model"]["encoder.layers.0.feed_forward.w_1.weight"][0, 0] = float("nan")
    state["format"] = "transformer_course/checkpoint-v1"
    del state["checksums"]
    torch.save(state, path)
    return path


def cli_error(capsys, *argv) -> str:
    """Run the command line; it must end with exit code 1 and one line on stderr, which is returned."""
    assert cli.main(list(argv)) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


# 1. A checkpoint is written only from finite weights; a diverged run names a good one, or says there is none.


@pytest.mark.slow
def test_divergence_names_a_last_good_checkpoint_whose_weights_are_finite(tmp_path):
    with pytest.raises(TrainingDiverged, match=r"last good checkpoint is (\S+last\.pt) \(step (\d+)") as caught:
        fit(ABSURD, toy_data(n_train=320, batch_size=32), RunOptions(tmp_path, epochs=3, save_every=1, progress=False))
    named = Path(str(caught.value).split("last good checkpoint is ")[1].split(" (step")[0])
    assert named == tmp_path / "last.pt" and finite(named)
    assert all(finite(p) for p in tmp_path.glob("*.pt"))  # no file of the run holds NaN


def test_a_nan_update_at_the_last_step_of_an_epoch_writes_no_epoch_last_or_best_file(tmp_path):
    # 6 batches: the weights of this run become NaN at the 6th update, the epoch's last (found before the fix)
    with pytest.raises(TrainingDiverged, match="NaN or infinite.*No good checkpoint exists"):
        fit(ABSURD, toy_data(n_train=192, batch_size=32), RunOptions(tmp_path, epochs=1, progress=False))
    assert sorted(p.name for p in tmp_path.glob("*.pt")) == []


@pytest.mark.slow
def test_an_update_that_makes_a_weight_nan_is_caught_at_that_step(tmp_path, monkeypatch):
    real = loop.optimizer_step
    steps = {"n": 0}

    def step_that_breaks_at_step_10(model, *args):
        real(model, *args)
        steps["n"] += 1
        if steps["n"] == 10:  # the last update of epoch 1 (10 batches), its loss finite
            next(model.parameters()).data[0, 0] = float("nan")

    monkeypatch.setattr(loop, "optimizer_step", step_that_breaks_at_step_10)
    with pytest.raises(TrainingDiverged, match=r"update of step 10 made the weight '[^']+' NaN.*step 8"):
        fit(TOY, toy_data(n_train=320, batch_size=32), RunOptions(tmp_path, epochs=2, save_every=4, progress=False))
    assert sorted(p.name for p in tmp_path.glob("*.pt")) == ["last.pt"]  # no epoch-001.pt, no best.pt
    assert load_checkpoint(tmp_path / "last.pt").step == 8 and finite(tmp_path / "last.pt")


def test_a_non_finite_validation_loss_stops_the_run_before_the_epoch_files(tmp_path, monkeypatch):
    monkeypatch.setattr(loop, "validation_loss", lambda *args: float("inf"))
    with pytest.raises(TrainingDiverged, match=r"validation loss became inf after step 2.*step 2"):
        fit(TOY, toy_data(n_train=64, batch_size=32), RunOptions(tmp_path, epochs=1, save_every=2, progress=False))
    assert sorted(p.name for p in tmp_path.glob("*.pt")) == ["last.pt"]  # saved at step 2, before validation


def test_save_checkpoint_refuses_non_finite_weights_and_keeps_the_previous_file(tmp_path):
    vocab = toy_vocab(14)
    model = build_model(CONFIG, 14, 14)
    save_checkpoint(tmp_path / "c.pt", model, CONFIG, vocab, vocab, step=1)
    before = (tmp_path / "c.pt").read_bytes()
    with torch.no_grad():
        model.generator.proj.bias[3] = float("inf")
    with pytest.raises(CheckpointError, match=r"refusing to write .*c\.pt.*generator\.proj\.bias.*NaN or infinite"):
        save_checkpoint(tmp_path / "c.pt", model, CONFIG, vocab, vocab, step=2)
    assert (tmp_path / "c.pt").read_bytes() == before and os.listdir(tmp_path) == ["c.pt"]


def test_a_nan_file_is_refused_by_load_average_translate_and_resolve(tmp_path):
    bad, good = old_style_nan_checkpoint(tmp_path / "bad.pt"), toy_checkpoint(tmp_path / "good.pt")
    message = r"bad\.pt cannot be used: the tensor 'model/encoder\.layers\.0\.feed_forward\.w_1\.weight' holds NaN"
    with pytest.raises(CheckpointError, match=message):
        load_checkpoint(bad)
    with pytest.raises(CheckpointError, match=message):
        read_checkpoint(bad)  # the raw dictionary too
    with pytest.raises(CheckpointError, match=message):
        average_checkpoints([good, bad])
    with pytest.raises(CheckpointError, match=message):
        translate(bad, ["a b c"], src_lang="en")
    with pytest.raises(CheckpointError, match=message):
        resolve_model(str(bad))


def test_the_command_line_refuses_to_translate_with_or_average_a_nan_file_in_one_line(tmp_path, capsys):
    run = tmp_path / "run"
    toy_checkpoint(run / "epoch-001.pt")
    old_style_nan_checkpoint(run / "epoch-002.pt")
    assert "epoch-002.pt cannot be used" in cli_error(capsys, "average", "--run", str(run), "--last", "2")
    assert "epoch-002.pt cannot be used" in cli_error(
        capsys, "translate", "--checkpoint", str(run / "epoch-002.pt"), "a"
    )
    assert not list(run.glob("averaged*"))


@pytest.mark.slow
def test_resume_from_a_last_pt_with_nan_weights_refuses_with_one_line(tmp_path, capsys):
    fit(TOY, toy_data(), RunOptions(tmp_path, max_steps=2, progress=False))  # the CLI's toy data: toy_data() defaults
    state = torch.load(tmp_path / "last.pt", weights_only=True)
    state["model"]["generator.proj.bias"][0] = float("nan")  # as the code before the fix could write it
    state["format"] = "transformer_course/checkpoint-v1"
    del state["checksums"]
    torch.save(state, tmp_path / "last.pt")
    with pytest.raises(CheckpointError, match="last.pt cannot be used: .*holds NaN"):
        fit(TOY, toy_data(), RunOptions(tmp_path, max_steps=4, resume=True, progress=False))
    err = cli_error(capsys, "train", "--preset", "toy-copy", "--out", str(tmp_path), "--resume", "--no-progress")
    assert "last.pt" in err and "NaN" in err


# 2. Checksums of every tensor, verified on load; damaged or foreign files: one line naming the file.


def test_flipped_bytes_inside_a_tensor_are_found_and_the_tensor_named(tmp_path, capsys):
    path = toy_checkpoint(tmp_path / "c.pt")
    name = "encoder.layers.1.feed_forward.w_2.weight"
    weight = load_checkpoint(path).model.state_dict()[name]
    raw = bytearray(path.read_bytes())
    at = raw.find(weight.numpy().tobytes())  # torch.save stores a tensor's bytes as they are
    assert at > 0
    for i in range(at + 1000, at + 1064):  # 64 bytes in the middle of the tensor
        raw[i] ^= 0x55
    path.write_bytes(raw)
    with pytest.raises(CheckpointError, match=rf"c\.pt cannot be used: the bytes of tensor 'model/{name}' do not"):
        load_checkpoint(path)
    err = cli_error(capsys, "translate", "--checkpoint", str(path), "a b")
    assert str(path) in err and name in err


def damaged(kind: str, path: Path, good: bytes) -> None:
    if kind == "empty":
        path.write_bytes(b"")
    elif kind == "text":
        path.write_text("this is not a checkpoint\n")
    elif kind == "only the format key":
        torch.save({"format": FORMAT}, path)
    elif kind == "half a file":
        path.write_bytes(good[: len(good) // 2])
    elif kind == "the first 10 kB":  # torch.load said "[Errno 22] Invalid argument" here, naming no file
        path.write_bytes(good[:10_000])
    elif kind == "a list":
        torch.save([1, 2, 3], path)
    elif kind == "weights not tensors":
        state = torch.load(io.BytesIO(good), weights_only=True)
        state["model"] = {"w": 3}
        torch.save(state, path)
    elif kind == "no checksums":
        state = torch.load(io.BytesIO(good), weights_only=True)
        del state["checksums"]
        torch.save(state, path)
    elif kind == "an edited vocabulary":
        state = torch.load(io.BytesIO(good), weights_only=True)
        state["src_vocab"]["itos"][5], state["src_vocab"]["itos"][6] = "x", "y"
        torch.save(state, path)


KINDS = [
    "empty",
    "text",
    "only the format key",
    "half a file",
    "the first 10 kB",
    "a list",
    "weights not tensors",
    "no checksums",
    "an edited vocabulary",
]


@pytest.mark.parametrize("kind", KINDS)
def test_a_damaged_or_foreign_file_is_one_checkpoint_error_naming_the_file(tmp_path, kind):
    good = toy_checkpoint(tmp_path / "good.pt").read_bytes()
    path = tmp_path / "damaged.pt"
    damaged(kind, path, good)
    with pytest.raises(CheckpointError) as caught:
        load_checkpoint(path)
    message = str(caught.value)
    assert str(path) in message and "\n" not in message


def test_the_command_line_reports_a_damaged_checkpoint_in_one_line(tmp_path, capsys):
    good = toy_checkpoint(tmp_path / "good.pt").read_bytes()
    for kind in ("empty", "text", "only the format key", "half a file", "the first 10 kB"):
        damaged(kind, tmp_path / "damaged.pt", good)
        assert str(tmp_path / "damaged.pt") in cli_error(
            capsys, "translate", "--checkpoint", str(tmp_path / "damaged.pt"), "a"
        )


def test_refusing_a_malicious_pickle_never_advises_weights_only_false(tmp_path):
    marker = tmp_path / "ran"

    class Payload:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    torch.save({"format": FORMAT, "model": {}, "payload": Payload()}, tmp_path / "evil.pt")
    with pytest.raises(CheckpointError, match=r"refusing to load .*evil\.pt.*could run arbitrary code") as caught:
        load_checkpoint(tmp_path / "evil.pt")
    message = str(caught.value)
    assert "weights_only=False" not in message.replace(" ", "") and "safe_globals" not in message
    assert "posix.system" in message or "system" in message  # what was refused
    assert not marker.exists()


def forged(path: Path, **config_changes) -> Path:
    """A checkpoint whose config was edited after writing (and its checksums recomputed: a forgery)."""
    from transformer_course.integrity import checksums

    state = torch.load(toy_checkpoint(path), weights_only=True)
    state["config"].update(config_changes)
    state["checksums"] = checksums(state)
    torch.save(state, path)
    return path


def test_a_config_claiming_a_million_layers_is_refused_before_building_the_model(tmp_path):
    start = time.monotonic()
    with pytest.raises(CheckpointError, match=r"c\.pt cannot be used: N=1000000"):  # by Config.validate's bounds
        load_checkpoint(forged(tmp_path / "c.pt", N=10**6))
    assert time.monotonic() - start < 10  # building 10⁶ layers took minutes before the fix


def test_a_config_that_disagrees_with_the_weights_is_refused_before_building(tmp_path):
    # within the config's bounds, but not the model whose weights the file holds
    with pytest.raises(
        CheckpointError, match=r"c\.pt cannot be used: its config says N=3 layers but its weights hold 2"
    ):
        load_checkpoint(forged(tmp_path / "c.pt", N=3))
    with pytest.raises(
        CheckpointError, match=r"the weight '.*w_1\.weight' has shape \(128, 64\), .*needs \(4096, 64\)"
    ):
        load_checkpoint(forged(tmp_path / "c.pt", d_ff=4096))


def test_a_config_asking_for_a_billion_positions_is_refused_before_allocating(tmp_path):
    # The sinusoidal table is not stored (it is computed), so only the config's bounds (Config.validate) can
    # refuse it: 10⁹ positions × 64 dimensions × 4 bytes × 2 tables would be 512 GB.
    start = time.monotonic()
    with pytest.raises(CheckpointError, match="max_len"):
        load_checkpoint(forged(tmp_path / "c.pt", max_len=10**9))
    assert time.monotonic() - start < 10


# 3. A checkpoint is one unit: what combines checkpoints checks that they agree.


def shuffled_vocab(n: int = 14) -> Vocab:
    """The same size and specials as toy_vocab(n), other words at the same ids."""
    itos = toy_vocab(n).itos
    return Vocab(itos[:4] + list(reversed(itos[4:])))


def test_averaging_refuses_checkpoints_with_different_vocabularies_of_the_same_size(tmp_path):
    a = toy_checkpoint(tmp_path / "a.pt")
    b = toy_checkpoint(tmp_path / "b.pt", src_vocab=shuffled_vocab(), tgt_vocab=shuffled_vocab())
    with pytest.raises(CheckpointError, match=r"b\.pt comes from a different model .*source vocabularies differ"):
        average_checkpoints([a, b])


def test_averaging_refuses_checkpoints_with_different_configs_or_languages(tmp_path):
    a = toy_checkpoint(tmp_path / "a.pt")
    b = toy_checkpoint(tmp_path / "b.pt", config=CONFIG.replace(dropout=0.3))  # same shapes, other config
    with pytest.raises(CheckpointError, match=r"configs differ \(dropout: 0\.1 vs 0\.3\)"):
        average_checkpoints([a, b])
    c = toy_checkpoint(tmp_path / "c.pt", src_lang="en", tgt_lang="de")
    with pytest.raises(CheckpointError, match="languages differ"):
        average_checkpoints([a, c])


def test_translate_refuses_a_vocabulary_other_than_the_checkpoints(tmp_path):
    path = toy_checkpoint(tmp_path / "c.pt")
    with pytest.raises(
        VocabMismatchError, match=r"src_vocab \(14 tokens, fingerprint \w+\) is not .*Leave src_vocab out"
    ):
        translate(path, ["a b"], src_vocab=shuffled_vocab(), src_lang="en")
    with pytest.raises(VocabMismatchError, match="tgt_vocab"):
        resolve_model(load_checkpoint(path), tgt_vocab=shuffled_vocab())
    same = Vocab(list(toy_vocab(14).itos))  # an equal copy is the same vocabulary
    assert resolve_model(path, src_vocab=same).src_vocab == same


def test_a_bare_model_refuses_a_vocabulary_of_another_size():
    model = build_model(CONFIG, 14, 14)
    with pytest.raises(VocabMismatchError, match="src_vocab has 16 tokens but the model was built for 14"):
        resolve_model(model, toy_vocab(16), toy_vocab(14))


# 5. Files: unpredictable, symlink-safe temporary names; stale temporary files swept; a locked run folder.


@pytest.mark.slow
def test_symlinks_planted_at_predictable_names_are_not_followed(tmp_path):
    out, victim = tmp_path / "run", tmp_path / "victim.txt"
    out.mkdir()
    victim.write_text("precious")
    names = ["last.pt.tmp", ".last.pt.tmp", "last.pt.part", "last.pt~", "history.json.tmp", ".history.json.tmp"]
    for name in names + ["last.pt", "history.json"]:
        (out / name).symlink_to(victim)
    fit(TOY, toy_data(n_train=64, batch_size=32), RunOptions(out, epochs=1, save_every=1, progress=False))
    assert victim.read_text() == "precious"
    assert not (out / "last.pt").is_symlink() and finite(out / "last.pt")  # replaced, not written through
    assert all((out / name).is_symlink() for name in names)  # left alone


@pytest.mark.slow
def test_stale_temporary_files_of_a_killed_run_are_removed_when_the_next_run_starts(tmp_path):
    fit(TOY, toy_data(n_train=64, batch_size=32), RunOptions(tmp_path, max_steps=1, progress=False))
    stale = [tmp_path / f".{name}.k3j9x2{TEMP_SUFFIX}" for name in ("last.pt", "epoch-001.pt", "history.json")]
    foreign = tmp_path / f".notes.txt.a8f2{TEMP_SUFFIX}"  # not a file a run writes: left alone
    for p in stale + [foreign]:
        p.write_bytes(b"half")
    fit(TOY, toy_data(n_train=64, batch_size=32), RunOptions(tmp_path, max_steps=2, resume=True, progress=False))
    assert not any(p.exists() for p in stale) and foreign.exists()


HOLD_THE_LOCK = textwrap.dedent("""
    import sys, time
    from transformer_course.train.folder import locked_run_folder
    with locked_run_folder(sys.argv[1]):
        print("locked", flush=True)
        time.sleep(600)
""")


@pytest.mark.slow
def test_a_second_run_on_a_locked_folder_fails_at_once_naming_the_folder_and_the_pid(tmp_path, capsys):
    holder = subprocess.Popen([sys.executable, "-c", HOLD_THE_LOCK, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(RunLockedError, match=rf"{tmp_path} is in use by another training run \(pid {holder.pid}\)"):
            fit(TOY, toy_data(n_train=64, batch_size=32), RunOptions(tmp_path, max_steps=1, progress=False))
        err = cli_error(capsys, "train", "--preset", "toy-copy", "--out", str(tmp_path), "--no-progress")
        assert str(tmp_path) in err and f"pid {holder.pid}" in err
        assert not (tmp_path / "last.pt").exists()
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    # The operating system released the lock of the killed process: the folder can be used again.
    fit(TOY, toy_data(n_train=64, batch_size=32), RunOptions(tmp_path, max_steps=1, progress=False))


def test_a_symlink_planted_at_the_lock_file_is_refused_not_followed(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / ".lock").symlink_to(victim)
    with pytest.raises(RunLockedError, match=r"lock file .*\.lock .*must be a plain file"):
        fit(TOY, toy_data(n_train=64, batch_size=32), RunOptions(tmp_path / "run", max_steps=1, progress=False))
    assert victim.read_text() == "precious"


@pytest.mark.slow
def test_the_lock_is_released_when_a_run_fails_and_held_while_it_runs(tmp_path):
    def second_run(step, model):
        with pytest.raises(RunLockedError, match=f"pid {os.getpid()}"):
            fit(TOY, toy_data(n_train=64, batch_size=32), RunOptions(tmp_path, max_steps=1, progress=False))
        raise KeyboardInterrupt  # the first run ends with an exception

    with pytest.raises(KeyboardInterrupt):
        fit(
            TOY,
            toy_data(n_train=64, batch_size=32),
            RunOptions(tmp_path, max_steps=1, progress=False),
            after_step=second_run,
        )
    fit(TOY, toy_data(n_train=64, batch_size=32), RunOptions(tmp_path, max_steps=1, progress=False))  # released


# 7 and the kill -9 guarantee: a run killed at any moment resumes to the same weights and history.


def comparable(history: list[dict], training_rows_only: bool = False) -> list[dict]:
    """History rows without the timing columns (which differ from run to run)."""
    rows = [row for row in history if row["loss"] is not None or not training_rows_only]
    return [{k: v for k, v in row.items() if k not in ("tokens_per_s", "elapsed_s")} for row in rows]


def small_data():
    return toy_data(n_train=320, batch_size=32)  # 10 batches per epoch


RUN = dict(epochs=2, save_every=4, log_every=3, progress=False)  # windows of 3 steps, saves every 4


@pytest.mark.slow
def test_the_first_loss_logged_after_a_resume_covers_the_same_steps_as_an_uninterrupted_run(tmp_path):
    straight = fit(CONFIG, small_data(), RunOptions(tmp_path / "straight", **RUN))
    fit(
        CONFIG, small_data(), RunOptions(tmp_path / "split", max_steps=4, **RUN)
    )  # stops after step 4, mid-window (4..6)
    resumed = fit(CONFIG, small_data(), RunOptions(tmp_path / "split", resume=True, **RUN))
    # (the split run also validated when it stopped at step 4: one more validation row)
    assert comparable(resumed.history, True) == comparable(straight.history, True)


KILLED_RUN = textwrap.dedent("""
    import sys
    import torch
    torch.set_num_threads(1)  # as in the test process, so that the numbers match bit for bit
    from transformer_course.config import get_preset
    from transformer_course.train import RunOptions, fit, toy_data
    config = get_preset("toy-copy").replace(dropout=0.1)
    fit(config, toy_data(n_train=320, batch_size=32),
        RunOptions(sys.argv[1], epochs=2, save_every=4, log_every=3, progress=False))
""")


@pytest.fixture(scope="module")
def straight_run(tmp_path_factory):
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        out = tmp_path_factory.mktemp("straight")
        return out, fit(CONFIG, small_data(), RunOptions(out, **RUN))
    finally:
        torch.set_num_threads(threads)


# Writes of this run: last.pt at steps 4 and 8 (1, 2); at the end of epoch 1 best.pt (3), epoch-001.pt (4),
# last.pt (5); last.pt at 12 and 16 (6, 7); at the end of epoch 2 best.pt, epoch-002.pt, last.pt (8–10).
KILL_POINTS = [
    "train-step:7",  # in the middle of step 7: gradients computed, weights not updated
    "checkpoint-write:2",  # inside the write of last.pt at step 8
    "checkpoint-write:4",  # inside the write of epoch-001.pt, after best.pt was written
    "validation:1",  # in the middle of epoch 1's validation
    "train-step:13",  # in epoch 2, after the epoch-end files
]


@pytest.mark.slow  # five training processes, each killed
@pytest.mark.parametrize("kill_at", KILL_POINTS)
def test_a_run_killed_at_any_moment_resumes_bit_identical_to_an_uninterrupted_run(tmp_path, kill_at, straight_run):
    run = tmp_path / "killed"
    env = {**os.environ, CRASH_AT: kill_at}
    child = subprocess.run([sys.executable, "-c", KILLED_RUN, str(run)], env=env, timeout=600)
    assert child.returncode == -signal.SIGKILL, f"the run was not killed at {kill_at}"
    left = list(run.glob(f".*{TEMP_SUFFIX}"))  # the half-done write's temporary file
    assert len(left) == (1 if kill_at.startswith("checkpoint-write") else 0) and (run / ".lock").exists()
    resumed = fit(CONFIG, small_data(), RunOptions(run, resume=True, **RUN))
    out, straight = straight_run
    assert resumed.step == straight.step == 20
    for name, value in straight.model.state_dict().items():
        assert torch.equal(resumed.model.state_dict()[name], value), name
    assert comparable(resumed.history) == comparable(straight.history)
    assert comparable(json.loads((run / "history.json").read_text())) == comparable(straight.history)
    for name in ("best.pt", "epoch-001.pt", "epoch-002.pt"):
        for key, value in load_checkpoint(out / name).model.state_dict().items():
            assert torch.equal(load_checkpoint(run / name).model.state_dict()[key], value), (name, key)
    assert not list(run.glob(f".*{TEMP_SUFFIX}")) and not (run / ".lock").exists()  # swept; the lock released


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (Linux), a device that is always full")
def test_a_full_disk_while_writing_a_checkpoint_is_one_line_naming_the_file(tmp_path, monkeypatch):
    path = toy_checkpoint(tmp_path / "c.pt")
    before = path.read_bytes()
    real_fdopen = os.fdopen

    def full_disk(fd, mode="r", *args, **kwargs):  # atomic_write's temporary file, on a disk with no room
        os.close(fd)
        return real_fdopen(os.open("/dev/full", os.O_WRONLY), mode, *args, **kwargs)

    monkeypatch.setattr(os, "fdopen", full_disk)
    with pytest.raises(OSError, match=r"could not write .*c\.pt: .*full disk.*left as it was") as caught:
        toy_checkpoint(path)
    monkeypatch.undo()
    assert "inline_container" not in str(caught.value) and "\n" not in str(caught.value)
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["c.pt"]

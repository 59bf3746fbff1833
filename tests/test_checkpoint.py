"""Checkpoints: what they hold, safe loading, atomic writes, exact resume (also after SIGKILL), averaging."""

import ast
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

import transformer_course
from transformer_course import train
from transformer_course.checkpoint import Resolved, resolve_model
from transformer_course.config import get_preset
from transformer_course.data import Vocab, VocabMismatchError
from transformer_course.files import CRASH_AT
from transformer_course.model import build_model
from transformer_course.train import (
    CheckpointError,
    RunOptions,
    average_checkpoints,
    fit,
    load_checkpoint,
    make_optimizer,
    make_scheduler,
    save_checkpoint,
    toy_data,
    toy_vocab,
)

# dropout > 0, so that exact resume also needs the random number generator states
CONFIG = get_preset("toy-copy").replace(dropout=0.1)


pytestmark = pytest.mark.usefixtures("one_thread")  # tiny models: see tests/conftest.py


def data():
    return toy_data(n_train=1600, batch_size=32)  # 50 batches per epoch


def assert_same_parameters(a, b):
    for (name, x), (_, y) in zip(a.state_dict().items(), b.state_dict().items()):
        assert torch.equal(x, y), name


@pytest.mark.slow
def test_checkpoint_holds_model_config_vocabularies_optimizer_scheduler_step_epoch_and_rng(tmp_path):
    vocab = toy_vocab(14)
    model = build_model(CONFIG, len(vocab), len(vocab))
    optimizer = make_optimizer(model)
    scheduler = make_scheduler(optimizer, CONFIG)
    save_checkpoint(tmp_path / "c.pt", model, CONFIG, vocab, vocab, optimizer, scheduler, step=7, epoch=2)
    raw = torch.load(tmp_path / "c.pt", weights_only=True)
    assert {"model", "config", "src_vocab", "tgt_vocab", "optimizer", "scheduler", "step", "epoch", "rng"} <= set(raw)
    loaded = load_checkpoint(tmp_path / "c.pt")
    assert_same_parameters(loaded.model, model)
    assert not loaded.model.training
    assert loaded.config == CONFIG and loaded.src_vocab == vocab and loaded.tgt_vocab == vocab
    assert (loaded.step, loaded.epoch) == (7, 2)


def test_a_checkpoint_holding_an_arbitrary_pickled_object_is_refused(tmp_path):
    class Payload:
        def __reduce__(self):
            return (os.system, ("echo should-never-run",))

    torch.save({"format": "transformer_course/checkpoint-v1", "model": {}, "payload": Payload()}, tmp_path / "bad.pt")
    with pytest.raises(CheckpointError, match="refusing to load .*could run arbitrary code"):
        load_checkpoint(tmp_path / "bad.pt")


def test_a_missing_checkpoint_says_how_to_make_one(tmp_path):
    with pytest.raises(FileNotFoundError, match="python -m transformer_course train"):
        load_checkpoint(tmp_path / "nothing.pt")


def test_a_failed_write_leaves_the_previous_checkpoint_intact(tmp_path, monkeypatch):
    vocab = toy_vocab(14)
    model = build_model(CONFIG, len(vocab), len(vocab))
    save_checkpoint(tmp_path / "c.pt", model, CONFIG, vocab, vocab, step=1)
    before = (tmp_path / "c.pt").read_bytes()

    def disk_full(*args, **kwargs):
        raise OSError("No space left on device")

    monkeypatch.setattr(torch, "save", disk_full)
    with pytest.raises(OSError):
        save_checkpoint(tmp_path / "c.pt", model, CONFIG, vocab, vocab, step=2)
    assert (tmp_path / "c.pt").read_bytes() == before
    assert os.listdir(tmp_path) == ["c.pt"]  # no temporary file left behind


@pytest.mark.slow
def test_resume_k_steps_then_k_more_equals_2k_steps_straight(tmp_path):
    straight = fit(CONFIG, data(), RunOptions(tmp_path / "straight", max_steps=12, progress=False))
    fit(CONFIG, data(), RunOptions(tmp_path / "split", max_steps=6, progress=False))  # stops mid-epoch at batch 6
    assert load_checkpoint(tmp_path / "split" / "last.pt").state["batch_in_epoch"] == 6
    resumed = fit(CONFIG, data(), RunOptions(tmp_path / "split", max_steps=12, resume=True, progress=False))
    assert resumed.step == straight.step == 12
    assert_same_parameters(resumed.model, straight.model)


@pytest.mark.slow
def test_resume_across_an_epoch_boundary_with_accumulation_equals_straight(tmp_path):
    config = CONFIG.replace(accumulate=2)
    small = lambda: toy_data(n_train=320, batch_size=32)  # noqa: E731  10 batches = 5 updates per epoch
    straight = fit(config, small(), RunOptions(tmp_path / "straight", epochs=3, progress=False))
    fit(config, small(), RunOptions(tmp_path / "split", epochs=3, max_steps=7, progress=False))
    resumed = fit(config, small(), RunOptions(tmp_path / "split", epochs=3, resume=True, progress=False))
    assert resumed.step == straight.step == 15
    assert_same_parameters(resumed.model, straight.model)


@pytest.mark.slow
def test_resume_mid_epoch_before_a_short_accumulation_group_equals_straight(tmp_path):
    config = CONFIG.replace(accumulate=3)
    small = lambda: toy_data(n_train=224, batch_size=32)  # noqa: E731  7 batches: groups of 3, 3 and 1
    straight = fit(config, small(), RunOptions(tmp_path / "straight", epochs=2, progress=False))
    fit(config, small(), RunOptions(tmp_path / "split", epochs=2, max_steps=2, progress=False))
    assert load_checkpoint(tmp_path / "split" / "last.pt").state["batch_in_epoch"] == 6  # the short group next
    resumed = fit(config, small(), RunOptions(tmp_path / "split", epochs=2, resume=True, progress=False))
    assert resumed.step == straight.step == 6
    assert_same_parameters(resumed.model, straight.model)


@pytest.mark.slow
def test_resume_refuses_a_different_config(tmp_path):
    fit(CONFIG, data(), RunOptions(tmp_path, max_steps=2, progress=False))
    with pytest.raises(CheckpointError, match="different config"):
        fit(CONFIG.replace(warmup=7), data(), RunOptions(tmp_path, max_steps=4, resume=True, progress=False))


KILLED_RUN = textwrap.dedent("""
    import sys
    import torch
    torch.set_num_threads(1)  # as in this test process, so that the numbers match bit for bit
    from transformer_course.config import get_preset
    from transformer_course.train import RunOptions, fit, toy_data
    config = get_preset("toy-copy").replace(dropout=0.1)
    fit(config, toy_data(n_train=1600, batch_size=32), RunOptions(sys.argv[1], max_steps=10_000, save_every=3, progress=False))
""")


@pytest.mark.slow
def test_resume_after_sigkill_mid_epoch_equals_a_straight_run(tmp_path):
    """The run kills itself with SIGKILL in the middle of step 8 (files.crash_point, TC_CRASH_AT), so the moment
    is the same every time: last.pt is step 6's (save_every=3), 6 batches into the 50 of epoch 1."""
    run = tmp_path / "killed"
    env = {**os.environ, CRASH_AT: "train-step:8"}  # gradients of step 8 computed, weights not yet updated
    child = subprocess.run([sys.executable, "-c", KILLED_RUN, str(run)], env=env, timeout=600)
    assert child.returncode == -signal.SIGKILL, "the run was not killed at step 8"
    state = load_checkpoint(run / "last.pt").state
    assert (state["step"], state["batch_in_epoch"]) == (6, 6)  # killed mid-epoch, after the save at step 6
    target = state["step"] + 5
    resumed = fit(CONFIG, data(), RunOptions(run, max_steps=target, resume=True, progress=False))
    straight = fit(CONFIG, data(), RunOptions(tmp_path / "straight", max_steps=target, progress=False))
    assert_same_parameters(resumed.model, straight.model)


@pytest.mark.slow
def test_averaging_checkpoints_gives_the_mean_of_their_parameters(tmp_path):
    fit(CONFIG, toy_data(n_train=320, batch_size=32), RunOptions(tmp_path, epochs=3, progress=False))
    paths = train.epoch_checkpoints(tmp_path)
    assert [p.name for p in paths] == ["epoch-001.pt", "epoch-002.pt", "epoch-003.pt"]
    averaged = average_checkpoints(paths[-2:], tmp_path / "avg.pt")
    second, third = load_checkpoint(paths[1]).model, load_checkpoint(paths[2]).model
    expected = {k: (v + third.state_dict()[k]) / 2 for k, v in second.state_dict().items()}
    for name, value in averaged.model.state_dict().items():
        torch.testing.assert_close(value, expected[name])
    torch.testing.assert_close(
        load_checkpoint(tmp_path / "avg.pt").model.state_dict()["generator.proj.bias"], expected["generator.proj.bias"]
    )


def test_averaging_refuses_checkpoints_of_different_models(tmp_path):
    vocab = toy_vocab(14)
    for name, config in (("a.pt", CONFIG), ("b.pt", CONFIG.replace(d_ff=64))):
        save_checkpoint(tmp_path / name, build_model(config, 14, 14), config, vocab, vocab)
    with pytest.raises(CheckpointError, match="different model"):
        average_checkpoints([tmp_path / "a.pt", tmp_path / "b.pt"])


def test_a_checkpoint_stores_its_languages_and_old_files_without_them_load_as_german_to_english(tmp_path):
    vocab = toy_vocab(14)
    model = build_model(CONFIG, len(vocab), len(vocab))
    save_checkpoint(tmp_path / "en-de.pt", model, CONFIG, vocab, vocab, src_lang="en", tgt_lang="de")
    loaded = load_checkpoint(tmp_path / "en-de.pt")
    assert (loaded.src_lang, loaded.tgt_lang) == ("en", "de")
    assert (loaded.state["src_lang"], loaded.state["tgt_lang"]) == ("en", "de")

    old = torch.load(tmp_path / "en-de.pt", weights_only=True)
    del old["src_lang"], old["tgt_lang"]  # as written before languages were stored,
    old["format"] = "transformer_course/checkpoint-v1"  # which was also before checksums were stored
    del old["checksums"]
    torch.save(old, tmp_path / "old.pt")
    loaded = load_checkpoint(tmp_path / "old.pt")
    assert (loaded.src_lang, loaded.tgt_lang) == ("de", "en")  # Multi30k's direction


def test_resolve_model_takes_a_path_a_checkpoint_or_a_model_with_its_vocabularies(tmp_path):
    vocab, other = toy_vocab(14), toy_vocab(16)
    model = build_model(CONFIG, len(vocab), len(vocab))
    path = save_checkpoint(tmp_path / "c.pt", model, CONFIG, vocab, vocab, src_lang="en", tgt_lang="fr")

    from_path = resolve_model(path)
    assert isinstance(from_path, Resolved)
    assert_same_parameters(from_path.model, model)
    assert (from_path.src_vocab, from_path.tgt_vocab, from_path.src_lang, from_path.tgt_lang) == (
        vocab,
        vocab,
        "en",
        "fr",
    )
    assert resolve_model(str(path)).src_lang == "en"  # a string path too

    checkpoint = load_checkpoint(path)
    resolved_model, src_vocab, tgt_vocab, src_lang, tgt_lang = resolve_model(checkpoint)  # unpacks like a tuple
    assert resolved_model is checkpoint.model and (src_vocab, tgt_vocab, src_lang, tgt_lang) == (
        vocab,
        vocab,
        "en",
        "fr",
    )
    copy = Vocab(list(vocab.itos))
    assert resolve_model(checkpoint, tgt_vocab=copy).tgt_vocab is copy  # the same vocabulary given: used
    with pytest.raises(VocabMismatchError, match="tgt_vocab .* is not the tgt vocabulary"):
        resolve_model(checkpoint, tgt_vocab=other)  # another one would give its ids other words

    wider = build_model(CONFIG.replace(tie_embeddings="decoder"), len(vocab), len(other))
    bare = resolve_model(wider, vocab, other)
    assert bare.model is wider and (bare.src_vocab, bare.tgt_vocab) == (vocab, other)
    assert (bare.src_lang, bare.tgt_lang) == ("de", "en")  # a bare model: Multi30k's languages


def test_resolve_model_says_what_to_pass_when_it_cannot_resolve(tmp_path):
    model = build_model(CONFIG, 14, 14)
    with pytest.raises(ValueError, match="pass src_vocab= and tgt_vocab="):
        resolve_model(model, toy_vocab(14))
    with pytest.raises(TypeError, match="expected a checkpoint path, a Checkpoint or a model, got int"):
        resolve_model(3)
    with pytest.raises(FileNotFoundError, match="python -m transformer_course train"):
        resolve_model(tmp_path / "missing.pt")


def module_file(module: str) -> Path | None:
    """The source file of a package module (``a.b`` → a/b.py or a/b/__init__.py), None if there is none."""
    path = Path(transformer_course.__file__).parent.parent.joinpath(*module.split("."))
    for candidate in (path.with_suffix(".py"), path / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def package_imports(module: str) -> set[str]:
    """The package modules ``module`` imports, at the top or inside functions (read from its source)."""
    path = module_file(module)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:  # from .x import y, from ..x import y
                base = package.rsplit(".", node.level - 1)[0]
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            candidates = [target, *(f"{target}.{alias.name}" for alias in node.names)]  # y may be a module
        elif isinstance(node, ast.Import):
            candidates = [alias.name for alias in node.names]
        else:
            continue
        found |= {c for c in candidates if c.startswith("transformer_course.") and module_file(c)}
    return found


def everything_imported_by(module: str) -> set[str]:
    seen, todo = set(), [module]
    while todo:  # directly or through other package modules
        current = todo.pop()
        if current not in seen:
            seen.add(current)
            todo += package_imports(current)
    return seen


@pytest.mark.slow
def test_the_import_reader_sees_training_code_where_it_is_imported():
    assert "transformer_course.train" in everything_imported_by("transformer_course.cli")  # a function-level import


@pytest.mark.parametrize(
    "module", ["transformer_course.checkpoint", "transformer_course.decode", "transformer_course.evaluate"]
)
def test_checkpoints_decoding_and_evaluation_need_no_training_code(module):
    seen = everything_imported_by(module)
    assert not [m for m in seen if m == "transformer_course.train" or m.startswith("transformer_course.train.")]
    assert "transformer_course.checkpoint" in seen

"""The language model on the command line (notebook 12): ``train --preset gpt-cpu`` writes lm.pt, ``generate``
continues a prompt from it, and every bad value or wrong file is one line; and the LM's training loop and
checkpoint underneath."""

import subprocess
import sys

import pytest
import torch

from transformer_course.cli import main
from transformer_course.config import get_preset
from transformer_course.data.captions import Captions, caption_stream
from transformer_course.data.subword import SubwordTokenizer
from transformer_course.integrity import CheckpointError
from transformer_course.train.lm import build_lm, lm_perplexity, lm_rate, load_lm, save_lm, train_lm

TINY = ["--set", "N=1", "--set", "d_model=16", "--set", "d_ff=32", "--set", "h=2", "--set", "n_kv_heads=1"]
TINY += ["--set", "subword_vocab=300", "--set", "context=16", "--set", "tokens_per_batch=128"]


def run(*args):
    return subprocess.run(
        [sys.executable, "-m", "transformer_course", *args], capture_output=True, text=True, timeout=600
    )


def tiny_data() -> Captions:
    texts = ["a dog runs on the grass .", "a cat sits on a mat .", "two men ride bikes .", "a girl eats ."] * 5
    tokenizer = SubwordTokenizer.train(texts, 80)
    return Captions(tokenizer, *(caption_stream(tokenizer, texts) for _ in range(3)))


TINY_CONFIG = get_preset("gpt-cpu").replace(N=1, d_model=16, d_ff=32, h=2, n_kv_heads=1, context=16)


def test_the_rate_rises_over_the_warmup_then_falls_to_zero_at_the_end():
    rates = [lm_rate(step, 1e-3, 10, 100) for step in range(1, 102)]
    assert rates[9] == pytest.approx(1e-3) and rates[0] == pytest.approx(1e-4)
    assert all(a < b for a, b in zip(rates[:9], rates[1:10])) and all(a > b for a, b in zip(rates[9:100], rates[10:]))
    assert rates[99] > 0 and rates[100] == 0.0


def test_training_lowers_the_held_out_perplexity_and_one_seed_gives_one_model():
    data = tiny_data()
    models = []
    for _ in range(2):
        torch.manual_seed(0)
        model = build_lm(TINY_CONFIG, data.vocab_size)
        before = lm_perplexity(model, data.eval_rows("valid", 4, 16))
        result = train_lm(model, data, steps=60, lr=1e-2, batch_size=8, context=16, log_every=20)
        models.append(model)
    assert result.steps == 60 and [r["step"] for r in result.history] == [20, 40, 60]
    assert result.valid_perplexity < before / 3
    for a, b in zip(models[0].parameters(), models[1].parameters()):
        assert torch.equal(a, b)


def test_perplexity_is_exp_of_the_mean_loss_over_every_prediction():
    data = tiny_data()
    torch.manual_seed(0)
    model = build_lm(TINY_CONFIG, data.vocab_size).eval()
    stream, context, log_p = data.valid, 7, []
    with torch.no_grad():
        for j in range(1, len(stream)):  # id j, read after the ids of its row before it: rows start every 7 ids
            start = (j - 1) // context * context
            log_p.append(model(stream[None, start:j])[0, -1].log_softmax(-1)[stream[j]])
    expected = torch.exp(-torch.stack(log_p).mean()).item()
    assert lm_perplexity(model, data.eval_rows("valid", 3, context)) == pytest.approx(expected, rel=1e-5)


def test_a_budget_is_required_and_checked():
    model, data = build_lm(TINY_CONFIG, 80), tiny_data()
    for kwargs, match in [(dict(), "needs a budget"), (dict(steps=0), "steps must be"), (dict(minutes=-1), "minutes")]:
        with pytest.raises(ValueError, match=match):
            train_lm(model, data, **kwargs)


def test_a_time_budget_plans_its_steps_and_stops():
    data = tiny_data()
    torch.manual_seed(0)
    result = train_lm(build_lm(TINY_CONFIG, data.vocab_size), data, minutes=0.02, batch_size=4, context=16)
    assert result.steps >= 3 and result.history[-1]["step"] == result.steps
    assert result.history[-1]["lr"] < max(r["lr"] for r in result.history) or len(result.history) == 1


def test_the_checkpoint_loads_the_same_model_and_refuses_other_files(tmp_path):
    data = tiny_data()
    torch.manual_seed(0)
    model = build_lm(TINY_CONFIG, data.vocab_size).eval()
    save_lm(tmp_path / "lm.pt", model, TINY_CONFIG, data.tokenizer, [])
    loaded, config, tokenizer = load_lm(tmp_path / "lm.pt")
    assert config == TINY_CONFIG and tokenizer == data.tokenizer
    with torch.no_grad():
        assert torch.equal(loaded(data.test[None, :20]), model(data.test[None, :20]))
    (tmp_path / "junk.pt").write_bytes(b"not a checkpoint")
    state = torch.load(tmp_path / "lm.pt", weights_only=True)
    state["model"]["embed.lut.weight"][0, 0] += 1.0  # an edited weight
    torch.save(state, tmp_path / "edited.pt")
    for path, match in [
        (tmp_path / "missing.pt", "does not exist"),
        (tmp_path / "junk.pt", "refusing to load|not a readable"),
        (tmp_path / "edited.pt", "do not match its checksums"),
    ]:
        with pytest.raises((CheckpointError, FileNotFoundError), match=match):
            load_lm(path)


def test_a_translation_checkpoint_given_to_load_lm_says_so(tmp_path):
    from transformer_course.checkpoint import save_checkpoint
    from transformer_course.data import SPECIALS, Vocab
    from transformer_course.model import make_model

    vocab = Vocab(SPECIALS + ["a", "b"])
    model = make_model(6, 6, N=1, d_model=8, d_ff=16, h=2)
    save_checkpoint(tmp_path / "best.pt", model, model.config, vocab, vocab, rng=False)
    with pytest.raises(CheckpointError, match="is a translation checkpoint"):
        load_lm(tmp_path / "best.pt")


# ---- the commands --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args, match",
    [
        (["--temperature", "-1"], "--temperature must be a finite number >= 0"),
        (["--temperature", "nan"], "--temperature must be a finite number >= 0"),
        (["--top-k", "0"], "--top-k must be a whole number >= 1"),
        (["--top-p", "1.5"], r"--top-p must be a probability in \(0, 1\]"),
        (["--top-p", "0"], r"--top-p must be a probability in \(0, 1\]"),
        (["--steps", "0"], "--steps must be a whole number >= 1"),
        (["--samples", "-2"], "--samples must be a whole number >= 1"),
        (["--seed", "-1"], "--seed must be a whole number >= 0"),
    ],
)
def test_a_bad_generate_option_is_one_line_before_the_checkpoint_is_read(args, match, tmp_path, capsys):
    assert main(["generate", "--checkpoint", str(tmp_path / "missing.pt"), *args]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1
    assert __import__("re").search(match, err), err


def test_generate_with_a_missing_or_translation_checkpoint_is_one_line(tmp_path, capsys):
    from transformer_course.checkpoint import save_checkpoint
    from transformer_course.data import SPECIALS, Vocab
    from transformer_course.model import make_model

    assert main(["generate", "--checkpoint", str(tmp_path / "missing.pt")]) == 1
    assert "does not exist" in capsys.readouterr().err
    vocab = Vocab(SPECIALS + ["a", "b"])
    model = make_model(6, 6, N=1, d_model=8, d_ff=16, h=2)
    save_checkpoint(tmp_path / "best.pt", model, model.config, vocab, vocab, rng=False)
    assert main(["generate", "--checkpoint", str(tmp_path / "best.pt")]) == 1
    err = capsys.readouterr().err
    assert "is a translation checkpoint" in err and err.count("\n") == 1


def test_train_refuses_translation_only_options_for_a_language_model(tmp_path, capsys):
    assert main(["train", "--preset", "gpt-cpu", "--out", str(tmp_path / "run"), "--resume"]) == 1
    err = capsys.readouterr().err
    assert "--resume applies to translation presets only" in err and err.count("\n") == 1
    assert not (tmp_path / "run").exists()


@pytest.mark.slow
def test_train_a_tiny_language_model_then_generate_from_it(tmp_path):
    from transformer_course.data.download import MIRROR_ENV

    if not __import__("os").environ.get(MIRROR_ENV) and not __import__("pathlib").Path("data/train.en.gz").exists():
        pytest.skip(f"needs Multi30k's English captions: set {MIRROR_ENV} to a folder holding them")
    out = tmp_path / "gpt"
    trained = run("train", "--preset", "gpt-cpu", *TINY, "--max-steps", "20", "--limit", "300",
                  "--root", str(tmp_path / "data"), "--out", str(out), "--no-progress", "--threads", "1")  # fmt: skip
    assert trained.returncode == 0, trained.stderr
    assert (out / "lm.pt").is_file() and (out / "history.json").is_file() and "validation perplexity" in trained.stdout
    again = run("train", "--preset", "gpt-cpu", "--out", str(out), "--no-progress")
    assert again.returncode == 1 and "already holds a language model" in again.stderr
    args = ["generate", "--checkpoint", str(out / "lm.pt"), "--prompt", "A dog", "--steps", "8"]
    first = run(*args, "--seed", "3", "--samples", "3", "--top-k", "20", "--top-p", "0.9")
    assert first.returncode == 0, first.stderr
    lines = first.stdout.splitlines()
    assert len(lines) == 3 and all(line.startswith("A dog") for line in lines)
    assert run(*args, "--seed", "3", "--samples", "3", "--top-k", "20", "--top-p", "0.9").stdout == first.stdout
    greedy = run(*args, "--temperature", "0", "--samples", "2")
    assert greedy.returncode == 0 and len(set(greedy.stdout.splitlines())) == 1  # greedy: both the same
    too_long = run(*args, "--steps", "300")
    assert too_long.returncode == 1 and "exceed the model's" in too_long.stderr

"""Reliability, round 2 (docs/reliability.md): every value is checked at the boundary, in the API as on the
command line, and an expected failure is one line naming its cause. Each test is one input of the audit."""

from __future__ import annotations

import gzip
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import transformer_course as tc
from transformer_course import cli
from transformer_course.config import MAX_LENGTH_PENALTY, Config
from transformer_course.data import BOS, EOS, load_pairs, toy_vocab
from transformer_course.decode import beam_search, greedy_decode, translate

REPO = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.usefixtures("one_thread")  # tiny models: see tests/conftest.py


@pytest.fixture
def tiny_model():
    torch.manual_seed(0)
    return tc.make_model(14, 14, N=1, d_model=16, d_ff=32, h=2, dropout=0.0, max_len=64).eval()


def cli_error(capsys, *argv) -> str:
    assert cli.main([str(a) for a in argv]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


# Decoding options: finite and in range, at every public entry (translate, beam_search).

BAD_ALPHAS = [math.nan, math.inf, -math.inf, -1e308, -0.5, 1e308, MAX_LENGTH_PENALTY * 1.5, "0.6", True]


@pytest.mark.parametrize("alpha", BAD_ALPHAS, ids=repr)
def test_translate_refuses_a_length_penalty_out_of_range(tiny_model, alpha):
    vocab = toy_vocab(14)
    with pytest.raises(ValueError, match="length_penalty must be"):
        translate(tiny_model, ["4 5 6"], beam_size=2, length_penalty=alpha, src_vocab=vocab, tgt_vocab=vocab)


@pytest.mark.parametrize("alpha", BAD_ALPHAS, ids=repr)
def test_beam_search_refuses_a_length_penalty_out_of_range(tiny_model, alpha):
    with pytest.raises(ValueError, match="length_penalty must be"):
        beam_search(tiny_model, torch.tensor([[4, 5, 6]]), None, 10, BOS, EOS, beam_size=2, length_penalty=alpha)


@pytest.mark.parametrize("alpha", [0, 0.6, MAX_LENGTH_PENALTY])
def test_the_length_penalties_in_range_decode(tiny_model, alpha):
    out = beam_search(tiny_model, torch.tensor([[4, 5, 6]]), None, 10, BOS, EOS, beam_size=2, length_penalty=alpha)
    assert out[0, 0].item() == BOS


def test_a_config_caps_the_length_penalty_as_the_decoders_do():
    with pytest.raises(ValueError, match="length_penalty must be a finite number >= 0"):
        Config(length_penalty=MAX_LENGTH_PENALTY * 2).validate()


# Sentences: str of valid Unicode, one line naming the item.


@pytest.mark.parametrize(
    "sentences, named",
    [
        ([None], "sentence 0 is None"),
        (["gut", 123], "sentence 1 is 123"),
        (["ein \udcff Mann"], "sentence 0 is not valid"),
    ],
    ids=["None", "int", "lone-surrogate"],
)
def test_translate_refuses_a_sentence_that_is_not_valid_text_naming_it(tiny_model, sentences, named):
    vocab = toy_vocab(14)
    with pytest.raises(ValueError, match=named):
        translate(tiny_model, sentences, src_vocab=vocab, tgt_vocab=vocab)


@pytest.mark.slow
def test_an_invalid_utf8_byte_on_the_command_line_is_one_line(tmp_path):
    from transformer_course.checkpoint import save_checkpoint
    from transformer_course.config import get_preset
    from transformer_course.model import build_model

    vocab = toy_vocab(14)
    path = save_checkpoint(
        tmp_path / "m.pt", build_model(get_preset("toy-copy"), 14, 14), get_preset("toy-copy"), vocab, vocab
    )
    done = subprocess.run(
        [sys.executable, "-m", "transformer_course", "translate", "--checkpoint", str(path), b"ein \xff Mann"],
        capture_output=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(REPO), "LC_ALL": "C.UTF-8"},
    )
    err = done.stderr.decode("utf-8", "replace").strip()
    assert done.returncode == 1 and len(err.splitlines()) == 1 and "not valid Unicode" in err, err


# The model itself: a 1-D input gets the decoders' error.


def test_model_encode_and_forward_refuse_a_one_dimensional_source_like_the_decoders(tiny_model):
    message = r"shape \(batch, src_len\), got shape \(3,\).*unsqueeze\(0\)"
    with pytest.raises(ValueError, match=message):
        tiny_model.encode(torch.tensor([4, 5, 6]), None)
    with pytest.raises(ValueError, match=message):
        tiny_model(torch.tensor([4, 5, 6]), torch.tensor([[2, 4]]), None, None)
    with pytest.raises(ValueError, match=r"tgt must be token ids of shape \(batch, tgt_len\)"):
        tiny_model(torch.tensor([[4, 5, 6]]), torch.tensor([2, 4]), None, None)
    with pytest.raises(ValueError, match=message):
        greedy_decode(tiny_model, torch.tensor([4, 5, 6]), None, 10, BOS, EOS)


# Tokenizer training sizes: capped as Config caps them.


def test_subword_training_refuses_a_vocabulary_above_the_configs_cap_before_the_library_runs():
    pytest.importorskip("tokenizers")
    from transformer_course.config import LIMITS
    from transformer_course.data.subword import SubwordTokenizer

    with pytest.raises(ValueError, match=f"vocab_size={10**9} is above"):
        SubwordTokenizer.train(["ein Mann", "a man"], vocab_size=10**9)
    with pytest.raises(ValueError):
        Config(tokenizer="bpe", shared_vocab=True, subword_vocab=LIMITS["subword_vocab"][1] + 1).validate()


# Data files: a read error names the file and what to do.


def corpus(tmp_path: Path, de: bytes, en: bytes = b"a man\n") -> Path:
    (tmp_path / "train.de.gz").write_bytes(de)
    (tmp_path / "train.en.gz").write_bytes(gzip.compress(en))
    return tmp_path


@pytest.mark.parametrize(
    "content, cause",
    [
        (gzip.compress(b"ein Mann\n" * 50)[:-12], "truncated"),
        (gzip.compress("ein Männer\n".encode("latin-1")), "not UTF-8"),
        (b"ein Mann\n", "not a gzip file"),
    ],
    ids=["truncated-gzip", "latin-1", "not-gzip"],
)
def test_a_damaged_data_file_read_without_download_names_the_file_and_what_to_do(tmp_path, content, cause):
    root = corpus(tmp_path, content)
    with pytest.raises(ValueError, match=cause) as caught:
        load_pairs("train", root, download=False)
    message = str(caught.value)
    assert str(root / "train.de.gz") in message and "download" in message and "\n" not in message


# The command line: options that do not apply are refused; threads bounded by the machine.


@pytest.mark.parametrize("option", [["--limit", "10"], ["--root", "elsewhere"]], ids=["limit", "root"])
def test_multi30k_only_options_are_refused_for_a_toy_preset(tmp_path, capsys, option):
    err = cli_error(capsys, "train", "--preset", "toy-copy", "--out", tmp_path / "run", *option)
    assert option[0] in err and "Multi30k" in err and not (tmp_path / "run").exists()


def test_threads_beyond_the_machines_cores_are_refused_in_one_line(tmp_path, capsys):
    cores = os.cpu_count() or 1
    err = cli_error(capsys, "train", "--preset", "toy-copy", "--out", tmp_path / "run", "--threads", cores + 1)
    assert f"{cores} CPU cores" in err and not (tmp_path / "run").exists()

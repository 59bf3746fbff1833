"""Languages a user can get wrong: a checkpoint's language pair, and the TC_LANG variable.

A checkpoint whose source and target languages are the same (or not language codes) is refused in one line, when
written and when read; TC_LANG naming no language of the course says so in one line and keeps English; a message
template given too few values names them instead of a bare KeyError.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from transformer_course.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from transformer_course.config import get_preset
from transformer_course.data import toy_vocab
from transformer_course.i18n import t
from transformer_course.integrity import checksums
from transformer_course.model import build_model

CONFIG = get_preset("toy-copy")


def write(path, **languages):
    vocab = toy_vocab(14)
    return save_checkpoint(path, build_model(CONFIG, 14, 14), CONFIG, vocab, vocab, **languages)


@pytest.mark.parametrize(
    "languages, words",
    [
        ({"src_lang": "de", "tgt_lang": "de"}, "both 'de'"),
        ({"src_lang": "../x", "tgt_lang": "en"}, "not a language code"),
    ],
)
def test_a_checkpoint_is_never_written_with_a_language_pair_that_is_no_translation(tmp_path, languages, words):
    with pytest.raises(ValueError, match=words):
        write(tmp_path / "c.pt", **languages)
    assert not (tmp_path / "c.pt").exists()


def test_a_checkpoint_file_whose_languages_are_the_same_is_refused_in_one_line(tmp_path, capsys):
    path = write(tmp_path / "c.pt")
    state = torch.load(path, weights_only=True)
    state["tgt_lang"] = "de"
    state.pop("checksums")
    state["checksums"] = checksums(state)  # a file written so by a tool of one's own: whole, but no translation
    torch.save(state, path)
    with pytest.raises(CheckpointError, match="source and target languages are both 'de'"):
        load_checkpoint(path)
    from transformer_course import cli

    assert cli.main(["translate", "--checkpoint", str(path), "a b"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1


def test_a_hand_made_state_with_equal_languages_names_them(tmp_path):
    from transformer_course.checkpoint import check_usable

    path = write(tmp_path / "c.pt")
    state = torch.load(path, weights_only=True)
    state["src_lang"] = state["tgt_lang"] = "en"
    with pytest.raises(CheckpointError, match="source and target languages are both 'en'"):
        check_usable(state, path)


def test_tc_lang_naming_no_course_language_says_so_and_keeps_english():
    code = "import transformer_course.i18n as i; print(i.get_language())"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env={"TC_LANG": "fr", "PATH": ""}, timeout=120
    )
    assert done.stdout.strip() == "en"
    assert "TC_LANG='fr' is not a language of the course (en, zh)" in done.stderr and "Traceback" not in done.stderr


def test_a_message_given_too_few_values_names_them():
    with pytest.raises(ValueError, match="needs got, what: pass them"):
        t("{what} differs: {got}", shape=1)
    assert t("{what} is {n:,}", what="it", n=2000) == "it is 2,000"
    assert t("a dict such as {{'q': 1}} for {what}", what="x") == "a dict such as {'q': 1} for x"

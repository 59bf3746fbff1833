"""The 中文版 notebooks run top to bottom in fast mode, in ``notebooks/zh/``, exactly as the English ones do.

Each ``notebooks/zh/NN_*.ipynb`` is executed with nbclient in fast mode (``TC_FAST=1``) in its own folder, with
the ``python3`` kernel, by the English tests' ``run_in_fast_mode`` (tests/helpers.py): one way to run a
notebook, for both languages. All twelve run as committed: about 7 minutes together on the busy 2-core development machine
(08, the longest, 2.5 minutes), about what the English twelve take; solved, a subset runs (02 and 08, see
ZH_SOLVED), since the English solved run covers the same code cells. Run only these with ``pytest -m notebooks``.

What running them adds to the English runs, since their code cells are the English ones character for
character (tests/test_zh_edition.py): the first cell's ``set_language("zh")``, after which every checker
prints its Chinese message and hint and every chart draws its Chinese labels (with a CJK font, or the warning
and English labels without one); and the folder, one level deeper, where ``course_path`` must find data/,
runs/ and figures/ and the learner's files go to ``notebooks/zh/my_transformer/``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import NOTEBOOKS_DIR, check_as_committed, check_solved, run_in_fast_mode

ZH_NOTEBOOKS = sorted((NOTEBOOKS_DIR / "zh").glob("[0-9][0-9]_*.ipynb"))


@pytest.mark.notebooks
@pytest.mark.parametrize("path", ZH_NOTEBOOKS, ids=[f"zh-{p.stem}" for p in ZH_NOTEBOOKS])
def test_zh_notebook_runs_as_committed_in_fast_mode(path: Path, monkeypatch, tmp_path):
    check_as_committed(path, run_in_fast_mode(path, monkeypatch, tmp_path))


# Solved, in Chinese: a subset, for CI time (the English run solves all twelve, with the same code cells): 02, whose
# build cell the learner writes first, and 08, which trains the learner-written model and says whose code it is.
ZH_SOLVED = [p for p in ZH_NOTEBOOKS if p.name[:2] in ("02", "08")]


@pytest.mark.notebooks
@pytest.mark.parametrize("path", ZH_SOLVED, ids=[f"zh-solved-{p.stem}" for p in ZH_SOLVED])
def test_zh_notebook_runs_solved_in_fast_mode(path: Path, monkeypatch, tmp_path):
    check_solved(path, run_in_fast_mode(path, monkeypatch, tmp_path, solved=True))


def test_every_english_notebook_is_executed_in_chinese_too():
    english = sorted(p.name for p in NOTEBOOKS_DIR.glob("[0-9][0-9]_*.ipynb"))
    assert [p.name for p in ZH_NOTEBOOKS] == english, "notebooks/zh/ should hold one notebook per English notebook"

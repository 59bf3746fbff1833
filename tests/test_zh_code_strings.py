"""The 中文版's code cells print, draw and raise Chinese: no English sentence is left in a string a reader sees.

A zh code cell is its English cell with Chinese comments and Chinese strings (course_tools/edition/zh.py and its
table zh_comments.json). A string literal in a zh code cell that holds no 汉字 but reads as English prose (two
English words or more, outside the ``{}`` of an f-string and outside a shape such as ``(batch, heads, q, k)``) is
a sentence the reader would meet in English: it is listed, unless :data:`READ_BY_CODE` names it as a string that
code reads (a key, a prompt, a template the package translates), where a Chinese form would break the code.
"""

from __future__ import annotations

import json
import re
import tokenize
from pathlib import Path

import pytest

from course_tools.edition import zh

ZH_NOTEBOOKS = sorted(zh.ZH.glob("[0-9][0-9]_*.ipynb"))
HAN = re.compile(r"[\u4e00-\u9fff]")
# one English word as it stands in a sentence: letters (a hyphen inside), an opening bracket or quote before,
# punctuation after; "tab:blue", "tgt_in", "my_transformer/" and "d_k" are code, not words
WORD = re.compile(r"^[(\[“\"'‘|]*[A-Za-z]{2,}[A-Za-z'’]*(?:-[A-Za-z]+)*[,.;:!?)\]”’]*$")
MATH = {"sin", "cos", "exp", "ln", "log", "min", "max", "softmax", "tanh"}  # a formula's functions: not words
SHAPE = re.compile(r"\((?:\s*[\w.]+\s*,)+\s*[\w.]+\s*\)")  # (batch, heads, q, k): names as the code writes them

# Strings that code reads, kept in English on purpose (notebook, the literal as written): each with its reason.
READ_BY_CODE = {
    # matplotlib's own values for where a legend or an annotation goes
    ("*", '"upper right"'),
    ("*", '"lower right"'),
    ("*", '"offset points"'),
    # keys of a dict that the cell looks up with a key it builds from English parts (f"{name}, variant"), where
    # "learner" and "package" are keys read elsewhere too
    ("08", '"learner, variant"'),
    ("08", '"package, variant"'),
    # the input of a model or a tokenizer: German sentences to translate or split, English text to split or continue
    ("11", "\"A dog's toy isn't red.\""),
    ("11", '"Ein Schneemobil fährt durch den Schnee."'),
    ("10", '"Ein kleines Mädchen spielt mit einem roten Ball im Park."'),
    ("12", '"A man in a"'),
    # titles the package's chart_text finds by their English words (transformer_course/viz/labels.py NOTEBOOK_TITLES):
    # drawn in Chinese where a CJK font is installed, in English, never as boxes, where none is
    ("01", '"sentence 0: target mask (hover me)"'),
    ("08", '"tgt_mask of sentence 1 (rows: query, columns: key)"'),
    ("10", '"German (key)"'),
    ("10", '"English so far (query)"'),
    ("12", '"{kind}, layer {layer}, head {head}"'),
    ("12", '"{kind}: layer × head ({queries} queries × {keys} keys)"'),
    # a shell command the reader types as it is
    ("00", '"    python -m transformer_course download\\n"'),
}


def _literal_text(literal: str) -> str:
    """The text of a string literal as a reader sees it: quotes and prefix off, f-string fields and shapes out."""
    body = re.sub(r"^[rRbBuUfF]*('''|\"\"\"|'|\")", "", literal)
    body = re.sub(r"('''|\"\"\"|'|\")$", "", body)
    body = re.sub(r"\{[^{}]*\}", " ", body).replace("\\n", " ")
    return SHAPE.sub(" ", body)


def reads_as_english(literal: str) -> bool:
    """No 汉字 and two English words or more."""
    if HAN.search(literal):
        return False
    pieces = _literal_text(literal).split()
    return sum(1 for piece in pieces if WORD.match(piece) and re.sub(r"\W", "", piece).lower() not in MATH) >= 2


def english_strings(notebook: Path) -> list[str]:
    """``cell id, line: literal`` for each string of a zh code cell that reads as English (docstrings aside)."""
    found = []
    for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]:
        if cell["cell_type"] != "code":
            continue
        tokens = zh._tokens("".join(cell["source"])) or []
        for index, token in enumerate(tokens):
            if (
                token.type == tokenize.STRING
                and (notebook.name[:2], token.string) not in READ_BY_CODE
                and ("*", token.string) not in READ_BY_CODE
                and reads_as_english(token.string)
                and not zh._docstring(token, tokens[:index], tokens[index + 1 :])
            ):
                found.append(f"{cell.get('id')}, line {token.start[0]}: {token.string}")
    return found


@pytest.mark.parametrize("notebook", ZH_NOTEBOOKS, ids=[p.stem for p in ZH_NOTEBOOKS])
def test_the_zh_code_cells_show_no_english_sentence(notebook):
    found = english_strings(notebook)
    assert not found, (
        f"{notebook.name}: English strings a reader sees; add their Chinese to course_tools/edition/zh_comments.json "
        "and run `python -m course_tools.edition.zh sync`:\n" + "\n".join(found)
    )


def test_every_allowed_string_is_still_in_its_notebook():
    """An entry of READ_BY_CODE that no code cell holds any more is stale: the list stays short and true."""
    sources = {p.name[:2]: p.read_text(encoding="utf-8") for p in ZH_NOTEBOOKS}
    stale = [
        literal
        for number, literal in READ_BY_CODE
        if not any(
            json.dumps(literal, ensure_ascii=False)[1:-1] in source
            for name, source in sources.items()
            if number in ("*", name)
        )
    ]
    assert not stale, stale


def test_the_check_tells_english_prose_from_code_and_chinese():
    for english in ('"the counts match"', 'f"loss {x:.3f} after {n} steps"', '"✅ same weights"', "'no warmup'"):
        assert reads_as_english(english), english
    for not_prose in (
        '"tab:blue"',
        '"tgt_in\\n"',
        '"= (batch, heads, q, k)"',
        'f"{a} {b}"',
        '"figures/architecture.svg"',
        '"n = d = 512"',
        '"(sin 0 = 0, cos 0 = 1)"',
        '"步数 (steps)"',
        '"cuda"',
    ):
        assert not reads_as_english(not_prose), not_prose

"""The 中文版's writing rules: notebooks/zh/STYLE.md, checked on every piece of Chinese text.

The Chinese text is: the zh notebooks' markdown cells, the checkers' Chinese messages
(``transformer_course/exercises/zh/*.json``), the README's 中文版 section, the 术语表 and the style sheet itself.

- one paragraph per source line: no line break between two CJK characters (or CJK punctuation) inside a
  paragraph, a list item or a block quote; headings, list items, table rows and code blocks start lines
  of their own (Jupyter, GitHub and the HTML edition render such a break as a space between two 汉字);
- no word the 术语表 lists under 避免 in the checkers' messages (``test_zh_edition.py`` checks the prose);
- the rules of STYLE.md a script can see: “…” around Chinese text (never ASCII quotes or 「」); the labels
  **在课程中的位置。**, **问答题。** and **下一步：** where the English cell has *Where this sits.*,
  *Questions.* and *Next:*; 问答题 (not 问题) in an exercise's heading and as a question's number.

The last tests run each rule on made-up text, both ways, to show it can fail.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from transformer_course.i18n import load_catalogue

from helpers import (
    ENGLISH,
    GLOSSARY_ZH,
    REPO,
    ZH,
    avoided_uses,
    cell_source,
    chinese_texts,
    parse_glossary,
    prose_lines,
    readme_section,
)

STYLE_ZH = ZH / "STYLE.md"
CATALOGUES = sorted((REPO / "transformer_course" / "exercises" / "zh").glob("*.json"))
CJK_TEXT = "\u3000-\u303f\u4e00-\u9fff\uff00-\uffef“”‘’…—"  # 汉字, CJK and full-width punctuation, “” ‘’ … —
CJK_END = re.compile(f"[{CJK_TEXT}]$")
CJK_START = re.compile(f"^[{CJK_TEXT}]")
HAN = re.compile(r"[\u4e00-\u9fff]")
BLOCK_START = re.compile(r"^\s*(#|\||[-*+]\s|\d+[.)]\s|```|~~~|\$\$|<|!\[|---|\*\*\*)")
QUOTE = re.compile(r"^\s*>\s?")
ENGLISH_LABELS = {
    "**Where this sits.**": "**在课程中的位置。**",
    "**Questions.**": "**问答题。**",
    "**Next:**": "**下一步：**",
}


def catalogue_texts() -> list[tuple[str, str]]:
    """Every Chinese message of the checkers: (module and the message's id or English template, the Chinese one)."""
    texts = []
    for path in CATALOGUES:
        for key, chinese in load_catalogue(path.stem).items():
            texts.append((f"exercises/zh/{path.name} {key[:50]!r}", chinese))
    return texts


def all_texts() -> list[tuple[str, str]]:
    texts = [(where, markdown) for where, markdown, _ in chinese_texts()]
    texts += [(p.relative_to(REPO).as_posix(), p.read_text(encoding="utf-8")) for p in (GLOSSARY_ZH, STYLE_ZH)]
    return texts + catalogue_texts()


def broken_paragraphs(where: str, markdown: str) -> list[str]:
    """Lines that continue a paragraph (a list item's, a block quote's) after a line break between two CJK
    characters. A line that starts a block of its own (heading, list item, table row, fence, math, HTML),
    a blank line, and a line ending in a hard break (two spaces or a backslash) end the paragraph."""
    found, fenced, previous = [], False, None
    for number, raw in enumerate(markdown.splitlines(), 1):
        if raw.lstrip().startswith(("```", "~~~")):
            fenced, previous = not fenced, None
            continue
        quoted = bool(QUOTE.match(raw))
        line = QUOTE.sub("", raw) if quoted else raw
        if fenced or not line.strip():
            previous = None
            continue
        starts_block = bool(BLOCK_START.match(line)) or (previous is not None and previous[1] != quoted)
        if previous is not None and not starts_block:
            before, _ = previous
            if CJK_END.search(before.rstrip()) and CJK_START.search(line.strip()):
                found.append(f"{where} line {number}: join “{before.strip()[-12:]}” and “{line.strip()[:12]}”")
        ends = line.endswith(("  ", "\\")) or line.lstrip().startswith(("#", "|"))
        previous = None if ends else (line, quoted)
    return found


def style_problems(where: str, text: str) -> list[str]:
    """The STYLE.md rules a script can check on one text: quotation marks and the quiz's name."""
    found = []
    for line in prose_lines(text):
        for quoted in re.findall(r'"([^"]*)"', line):
            if HAN.search(quoted):
                found.append(f'{where}: "{quoted}" → “{quoted}” (Chinese quotation marks around Chinese text)')
        if "「" in line or "」" in line:
            found.append(f"{where}: 「」 → “” in: {line.strip()}")
        if re.search(r"问题\s*\d|\*\*问题[。：]\*\*", line) or (
            line.startswith("#") and "练习" in line and "问题" in line
        ):
            found.append(f"{where}: 问题 → 问答题 (a quiz question; STYLE.md) in: {line.strip()}")
    return found


def label_problems(english: Path, zh: Path) -> list[str]:
    """Where the English cell has a label of ENGLISH_LABELS, its zh twin (same cell id) must have the zh label."""
    twins = {c.get("id"): cell_source(c) for c in json.loads(zh.read_text(encoding="utf-8"))["cells"]}
    found = []
    for cell in json.loads(english.read_text(encoding="utf-8"))["cells"]:
        for label, chinese in ENGLISH_LABELS.items():
            if cell["cell_type"] == "markdown" and label in cell_source(cell):
                if chinese not in twins.get(cell.get("id"), ""):
                    found.append(f"{zh.name} cell {cell.get('id')}: the English has {label}, write {chinese}")
    return found


# ---- the rules on the files ------------------------------------------------------------------------------------


def test_chinese_paragraphs_are_one_line_each():
    found = [problem for where, text in all_texts() for problem in broken_paragraphs(where, text)]
    assert not found, f"{len(found)} line breaks inside a Chinese paragraph (STYLE.md):\n" + "\n".join(found)


def test_the_checkers_messages_use_no_avoided_variant():
    found = avoided_uses(catalogue_texts(), parse_glossary(GLOSSARY_ZH))
    assert not found, f"{len(found)} uses of variants that notebooks/zh/GLOSSARY.md avoids:\n" + "\n".join(found)


def test_chinese_text_follows_the_style_sheet():
    found = [
        problem
        for where, text in all_texts()
        if where != "notebooks/zh/STYLE.md"
        for problem in style_problems(where, text)
    ]
    assert not found, f"{len(found)} departures from notebooks/zh/STYLE.md:\n" + "\n".join(found)


@pytest.mark.parametrize("english", ENGLISH, ids=[p.stem for p in ENGLISH])
def test_the_zh_notebooks_use_the_style_sheets_labels(english):
    zh = ZH / english.name
    if not zh.exists():
        pytest.fail(f"{zh.relative_to(REPO)} is missing")
    found = label_problems(english, zh)
    assert not found, "\n".join(found)


def test_the_style_sheet_is_linked_from_the_glossary_and_the_readme():
    assert STYLE_ZH.exists(), "notebooks/zh/STYLE.md: the 中文版 style sheet"
    assert "](STYLE.md)" in GLOSSARY_ZH.read_text(encoding="utf-8")
    assert "](notebooks/zh/STYLE.md)" in readme_section()


# ---- each rule can fail: made-up text -----------------------------------------------------------------------


def test_a_line_break_between_two_chinese_characters_is_found_in_paragraphs_items_and_quotes():
    text = "比值远大于 1，\n所以差别很大。\n\n- 第一项很长，\n  接着写。\n\n> 译：这种顺序性\n> 使训练无法并行。"
    assert broken_paragraphs("x", text) == [
        "x line 2: join “比值远大于 1，” and “所以差别很大。”",
        "x line 5: join “- 第一项很长，” and “接着写。”",
        "x line 8: join “译：这种顺序性” and “使训练无法并行。”",
    ]


def test_lines_of_their_own_and_english_wraps_are_not_broken_paragraphs():
    text = (
        "## 标题\n正文一段。\n- 第一项。\n- 第二项。\n| 表 | 格 |\n|---|---|\n| 一 | 二 |\n"
        "```\n# 代码\n注释。\n```\n强制换行。  \n下一行。\n\n英文结尾 the\nend 英文开头。\n"
        "> English quote\n> 译：中文。\n中文在引用之后。\n\n$$x$$\n公式之后。"
    )
    assert broken_paragraphs("x", text) == []


def test_the_style_check_finds_ascii_quotes_corner_brackets_and_the_quizs_old_name():
    found = style_problems(
        "x",
        '把"不看未来"写进掩码。\n「引号」\n**问题。** 回答。\n### 练习 3 · 三个问题\n问题 2（分数）\n'
        '论文说 "attend to all positions"。`"代码"` 不算。\n这个问题很难。',
    )
    assert found == [
        'x: "不看未来" → “不看未来” (Chinese quotation marks around Chinese text)',
        "x: 「」 → “” in: 「引号」",
        "x: 问题 → 问答题 (a quiz question; STYLE.md) in: **问题。** 回答。",
        "x: 问题 → 问答题 (a quiz question; STYLE.md) in: ### 练习 3 · 三个问题",
        "x: 问题 → 问答题 (a quiz question; STYLE.md) in: 问题 2（分数）",
    ]


def test_the_label_check_finds_a_zh_cell_without_the_label(tmp_path):
    def notebook(path: Path, sources: list[str]) -> Path:
        cells = [{"cell_type": "markdown", "id": f"c{i}", "metadata": {}, "source": s} for i, s in enumerate(sources)]
        path.write_text(json.dumps({"cells": cells}), encoding="utf-8")
        return path

    english = notebook(tmp_path / "en.ipynb", ["**Where this sits.** Here.", "**Questions.** q1", "**Next:** [01]"])
    zh = notebook(tmp_path / "zh.ipynb", ["**本篇在课程中的位置。** 这里。", "**问答题。** q1", "**下一篇：** [01]"])
    assert label_problems(english, zh) == [
        "zh.ipynb cell c0: the English has **Where this sits.**, write **在课程中的位置。**",
        "zh.ipynb cell c2: the English has **Next:**, write **下一步：**",
    ]


def test_the_glossary_avoids_the_style_sheets_rejected_words():
    found = avoided_uses(
        [("x", "课程包里的基础模型；结构图的训练代价。检查一下，再看下一篇。可以注意键；被掩码的位置；编码器栈。")],
        parse_glossary(GLOSSARY_ZH),
    )
    words = sorted(line.split("'")[1] for line in found)
    assert words == sorted(["课程包", "基础模型", "结构图", "训练代价", "检查", "下一篇", "可以注意", "被掩码", "栈"])
    spared = avoided_uses(
        [("x", "检查器和检查点；单元格；LSTM 是循环单元；被掩码掩蔽的键；每个头各自关注不同的位置。")],
        parse_glossary(GLOSSARY_ZH),
    )
    assert spared == []


# ---- punctuation, headings, glosses: the rules added to the sheet ----------------------------------------------

HAN_OR_CJK_PUNCT = "\u4e00-\u9fff\u3000-\u303f\uff00-\uffef“”"
# a half-width , ; : ? ! or ( ) touching Chinese text on its left and followed by Chinese (after one space, if any)
HALF_WIDTH = re.compile(r"[\u4e00-\u9fff][,;:?!](?= ?[\u4e00-\u9fff])|[\u4e00-\u9fff]\((?=[^)]*[\u4e00-\u9fff])")
# one em dash alone (not the pair ——), "--", or a spaced - or – between Chinese text
WRONG_DASH = re.compile(
    rf"(?<![—\"] )(?<!—)—(?!—)|(?<=[{HAN_OR_CJK_PUNCT}]) ?--+ ?(?=[{HAN_OR_CJK_PUNCT}])|"
    rf"(?<=[{HAN_OR_CJK_PUNCT}]) [-–] (?=[{HAN_OR_CJK_PUNCT}])|(?<=[{HAN_OR_CJK_PUNCT}])–|–(?=[{HAN_OR_CJK_PUNCT}])"
)
# a space between a 汉字 and full-width punctuation or another 汉字: 标题是 “BLEU”, “A” 这一行, 完成 下载
SPACED_PUNCTUATION = re.compile(
    r"[\u4e00-\u9fff] [“（，。；：！？]|[”），。；：！？] [\u4e00-\u9fff]|(?<! )[\u4e00-\u9fff] [\u4e00-\u9fff](?! )"
)
NUMBERED_HEADING = re.compile(r"^#{2,3} \d+ ?[·、）)] ?|^#{2,3} \d+\.(?! )")
EXERCISE_LABEL = re.compile(r"练习 ?\d+ ?(?:——|—|–|-|：|\.) ?")
# an English gloss right after a Chinese term: 词元（token）, 前馈网络（feed-forward network，FFN）, 填充掩码（padding mask；笔记本 01）
GLOSS = re.compile(r"(?<=[\u4e00-\u9fff*”])（([A-Za-z][A-Za-z\-/ ']*[A-Za-z])(?:[，；][^（）]*)?）")


# `code` or $math$ touching a 汉字: 属于它的$d_k$ 列 (a space goes between Chinese and code, as between Chinese and English)
INLINE_CODE = re.compile(r"`[^`\n]+`|\$[^$\n]+\$")


def glued_code(where: str, text: str) -> list[str]:
    """Inline code or math written right against a 汉字, outside fenced code blocks (spans read left to right)."""
    found, fenced = [], False
    for line in text.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            continue
        for span in [] if fenced else INLINE_CODE.finditer(line):
            before, after = line[span.start() - 1 : span.start()], line[span.end() : span.end() + 1]
            if HAN.match(before) or HAN.match(after):
                found.append(f"{where}: a space between Chinese and {span[0]!r} in: {line.strip()}")
    return found


def punctuation_problems(where: str, text: str) -> list[str]:
    """The sheet's punctuation and heading rules on one text (code, math and link targets left out):
    one dash style (——), full-width punctuation inside Chinese sentences, no 的的, the heading styles."""
    found = glued_code(where, text)
    for line in prose_lines(text):
        if set(line.strip()) <= set("|-: "):
            continue  # a table's rule line
        for match in WRONG_DASH.finditer(line):
            found.append(f"{where}: {match[0].strip()!r} → —— (one dash style) in: {line.strip()}")
        for match in HALF_WIDTH.finditer(line):
            found.append(
                f"{where}: half-width {match[0][-1]!r} inside a Chinese sentence (full width) in: {line.strip()}"
            )
        for match in SPACED_PUNCTUATION.finditer(line):
            found.append(
                f"{where}: no space beside full-width punctuation or between two 汉字: {match[0]!r} in: {line.strip()}"
            )
        for match in re.finditer(r"[\u4e00-\u9fff][A-Za-z0-9]|[A-Za-z0-9][\u4e00-\u9fff]", line):
            found.append(f"{where}: a space between Chinese and English or a number: {match[0]!r} in: {line.strip()}")
        if "的的" in line:
            found.append(f"{where}: 的的 in: {line.strip()}")
        if NUMBERED_HEADING.match(line):
            found.append(f"{where}: a numbered heading is written “## N. 标题” in: {line.strip()}")
        if EXERCISE_LABEL.search(line):
            found.append(f"{where}: an exercise is labelled “练习 N · 标题” in: {line.strip()}")
    return found


def repeated_glosses(texts: list[tuple[str, str]]) -> list[str]:
    """An English gloss 词元（token） seen again after its first use, the texts read in order (the book's order)."""
    first, found = {}, []
    for where, text in texts:
        for line in prose_lines(text):
            for match in GLOSS.finditer(line):
                key = match[1].lower()
                if key in first:
                    found.append(f"{where}: {match[0]} was glossed first in {first[key]}; write the Chinese only")
                else:
                    first[key] = where
    return found


def chart_label_texts() -> list[tuple[str, str]]:
    """The Chinese words on the charts (transformer_course/viz/labels.py ZH), of the graded verdict and of the
    HTML edition's and the slides' own pages (course_tools/edition/contents.py)."""
    from course_tools.classroom.zh_verdict import ZH as VERDICT
    from course_tools.edition.contents import WORDS
    from transformer_course.viz.labels import ZH as LABELS

    return (
        [(f"viz/labels.py {k!r}", v) for k, v in LABELS.items()]
        + [(f"classroom/zh_verdict.py {k[:30]!r}", v) for k, v in VERDICT.items()]
        + [(f"edition/contents.py {k!r}", v) for k, v in WORDS["zh"].items()]
    )


def book_texts() -> list[tuple[str, str]]:
    """The notebooks' markdown in the course's order (00, 01, …): where a gloss is used first."""
    return [(where, markdown) for where, markdown, _ in chinese_texts() if ".ipynb cell" in where]


def test_chinese_text_has_one_dash_full_width_punctuation_and_the_sheets_headings():
    texts = [t for t in all_texts() if t[0] != "notebooks/zh/STYLE.md"] + chart_label_texts()
    found = [problem for where, text in texts for problem in punctuation_problems(where, text)]
    assert not found, f"{len(found)} departures from notebooks/zh/STYLE.md:\n" + "\n".join(found)


def test_an_english_gloss_is_given_once_in_the_whole_course():
    found = repeated_glosses(book_texts())
    assert not found, f"{len(found)} glosses repeated after their first use:\n" + "\n".join(found)


def test_the_chart_labels_use_no_avoided_variant():
    found = avoided_uses(chart_label_texts(), parse_glossary(GLOSSARY_ZH))
    assert not found, f"{len(found)} chart labels use variants the glossary avoids:\n" + "\n".join(found)


def test_the_punctuation_check_finds_each_wrong_dash_half_width_mark_heading_and_的的():
    found = punctuation_problems(
        "x",
        "注意力—按权重读取。\n注意力 -- 按权重读取。\n注意力 - 按权重读取。\n查询,键和值。\n比值(很大)。\n"
        "我们的的模型。\n## 1 · 标题\n**练习 2 — 核。**\n标题是 “BLEU”。\n依次完成 下载。\n属于它的$d_k$ 列。\n把词元id 变成向量。\n"
        '注意力——按权重读取。\n> "text." — §3.2\n笔记本 02–07，0.5，`a, b`，$x(y)$。\n|---|---|\n## 3. 学习率\n**练习 2 · 核。**',
    )
    assert [line.split(" in: ")[0] for line in found] == [
        "x: a space between Chinese and '$d_k$'",
        "x: '—' → —— (one dash style)",
        "x: '--' → —— (one dash style)",
        "x: '-' → —— (one dash style)",
        "x: half-width ',' inside a Chinese sentence (full width)",
        "x: half-width '(' inside a Chinese sentence (full width)",
        "x: 的的",
        "x: a numbered heading is written “## N. 标题”",
        "x: '—' → —— (one dash style)",
        "x: an exercise is labelled “练习 N · 标题”",
        "x: no space beside full-width punctuation or between two 汉字: '是 “'",
        "x: no space beside full-width punctuation or between two 汉字: '成 下'",
        "x: a space between Chinese and English or a number: '元i'",
    ]


def test_the_gloss_check_finds_a_gloss_repeated_in_a_later_notebook():
    texts = [
        ("00 cell a", "模型看到的是词元（token）。自注意力（self-attention）很快。"),
        ("01 cell b", "每个词元（token）都有 id；`词元（token）` 在代码里不算。填充掩码（padding mask，先看这里）。"),
        ("02 cell c", "前馈网络（feed-forward network，FFN）；自注意力（Self-Attention）。"),
        ("03 cell d", "填充掩码（padding mask；笔记本 01）。"),
    ]
    assert repeated_glosses(texts) == [
        "01 cell b: （token） was glossed first in 00 cell a; write the Chinese only",
        "02 cell c: （Self-Attention） was glossed first in 00 cell a; write the Chinese only",
        "03 cell d: （padding mask；笔记本 01） was glossed first in 01 cell b; write the Chinese only",
    ]


def test_the_chart_label_check_finds_an_avoided_variant():
    found = avoided_uses([("viz/labels.py 'diagonality'", "对角性"), ("x", "热力图")], parse_glossary(GLOSSARY_ZH))
    assert [line.split(" (write")[0] for line in found] == [
        "viz/labels.py 'diagonality': '对角性'",
        "x: '热力图'",
    ]

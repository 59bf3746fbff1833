"""The notebooks' text as a class sees it: no sentence points at the reference solutions.

The self-study notebooks link their solutions module ("Solutions: [solutions/nb02_attention.py](…) (after
trying!)", 中文版 "参考答案：[…](…)（请先自己尝试！）") and say how to bring in a reference file
(``tc.learner.use_reference``). A class has none of that on disk: the hub install holds no solution
(:mod:`.hub`) and the teacher shares the solutions after grading. So

- :func:`released_cell` rewrites a markdown cell of the nbgrader build (``convert_notebook`` calls it for each
  one): each such sentence says that the teacher shares the solutions after grading;
- :func:`released_markdown` with ``drop=True`` removes those sentences instead: the slide decks
  (:mod:`course_tools.edition.slides`), which are presented in class, never name the solutions folder;
- :func:`released_code` drops a checker cell's comments that point there (``# Stuck? … notebooks/solutions/``).

Sentences the course writes are matched whole (English and 中文版); any other link into ``solutions/`` or code
span naming it becomes a plain noun ("the reference solutions"), so nothing in the result names the folder.
"""

from __future__ import annotations

import re

__all__ = ["CLASSROOM_NOTE", "names_solutions", "released_cell", "released_code", "released_markdown"]

CJK = re.compile(r"[\u4e00-\u9fff]")
LINK = r"\[[^\]\n]*\]\(\s*<?(?:\.\./)*(?:notebooks/)?solutions/[^)\n]*\)"  # [text](solutions/…) or (../solutions/…)
CODE = r"`[^`\n]*\bsolutions/[^`\n]*`"  # `notebooks/solutions/my_transformer/`
MENTION = re.compile(r"\bsolutions/")  # what a link into the folder, a code span or a path naming it holds

# The course's sentences that point at the solutions, by language: (pattern, what a class reads instead).
CLASSROOM_NOTE = {
    "en": "Solutions: your teacher shares them after grading.",
    "zh": "参考答案：批改之后由老师发给大家。",
}
STUCK = {
    "en": "Stuck? Ask your teacher; the reference solutions are shared after grading.",
    "zh": "卡住了？可以问老师；参考答案在批改之后发给大家。",
}
EN_BUILD_FILE = r"(?:, and the build cell's\s+reference file is " + LINK + ")?"
EN_USE_REFERENCE = (
    r"Stuck on one\? A commented line under its checker, `tc\.learner\.use_reference\(\.\.\.\)`,\s+brings in the "
    r"reference from `solutions/` on purpose, and notebook 08 then says that file is the reference,\s+not yours\."
)
ZH_USE_REFERENCE = (
    r"卡住了？检查器下方有一行被注释掉的 `tc\.learner\.use_reference\(\.\.\.\)`，取消注释就会有意地从 `solutions/` "
    r"换上参考答案，笔记本 08 也会说明那个文件是参考答案，而不是你写的。"
)
SENTENCES = {
    "en": [
        (rf"Solutions:\s*{LINK}\s*\(after trying!\)\.", CLASSROOM_NOTE["en"]),
        (rf"Reference solutions live in {LINK}, beside the notebooks — look only after trying\.", CLASSROOM_NOTE["en"]),
        (rf"Stuck\? The reference solutions are in {LINK}{EN_BUILD_FILE}\.", STUCK["en"]),
        (EN_USE_REFERENCE, STUCK["en"]),
    ],
    "zh": [
        (rf"参考答案：{LINK}（请先自己(?:尝试|动手试试)！）。", CLASSROOM_NOTE["zh"]),
        (rf"参考答案在 `notebooks/` 下的 {LINK} 文件夹里——先自己尝试，再去看。", CLASSROOM_NOTE["zh"]),
        (rf"卡住了？参考答案在 {LINK}(?:，构建单元格的参考文件在 {LINK})?。", STUCK["zh"]),
        (ZH_USE_REFERENCE, STUCK["zh"]),
    ],
}
NOUNS = {  # any other mention: a link, then a code span (`notebooks/solutions/my_transformer/`), then a bare path
    "en": ["the reference solutions", "the course's reference files", "the reference solutions"],
    "zh": ["参考答案", "课程的参考文件", "参考答案"],
}


def names_solutions(text: str) -> bool:
    """True when ``text`` names the solutions folder: a link into it, a code span or a path with ``solutions/``."""
    return MENTION.search(text) is not None


def released_markdown(text: str, drop: bool = False) -> str:
    """``text`` (a markdown cell) with every sentence that points at the reference solutions rewritten to say
    that the teacher shares them after grading, or, with ``drop``, removed; other mentions of the folder become
    a plain noun. The 中文版's wording is used where the text is Chinese."""
    language, ending = ("zh" if CJK.search(text) else "en"), text[len(text.rstrip("\n")) :]
    for pattern, replacement in SENTENCES[language]:
        text = re.sub(pattern, "\x00" if drop else replacement, text)  # (no backslash in the replacements)
    if drop:  # a line that held only the sentence goes; elsewhere the sentence goes with the space before it
        text = re.sub(r"(?m)^[ \t]*\x00[ \t]*\n", "", text)
        text = re.sub(r"(?m)^([ \t]*)\x00[ \t]*", r"\1", text)
        text = re.sub(r"\n{3,}", "\n\n", re.sub(r"[ \t]*\x00", "", text)).rstrip("\n") + ending
    link, code, path = NOUNS[language]
    text = re.sub(LINK, link, text)
    text = re.sub(r" ?" + CODE + r" ?" if language == "zh" else CODE, code, text)
    text = re.sub(r"(?:\.\./|notebooks/)*\bsolutions/[\w./-]*", path, text)
    return text


def released_cell(cell):
    """A cell of the class's notebook: a markdown cell's text as :func:`released_markdown` gives it (the cell is
    changed and returned); any other cell as it is."""
    if cell.get("cell_type") == "markdown":
        cell["source"] = released_markdown(cell["source"])
    return cell


def released_code(source: str) -> str:
    """A code cell's source without the comments that point at the reference solutions: each run of full-line
    comments that names ``solutions/`` or ``use_reference`` goes whole (the self-study checker cells' "# Stuck?
    This replaces your file with the reference from notebooks/solutions/ …" and the commented call under it)."""
    kept, block = [], []
    for line in [*source.split("\n"), None]:
        if line is not None and line.lstrip().startswith("#"):
            block.append(line)
            continue
        if not any(MENTION.search(comment) or "use_reference" in comment for comment in block):
            kept += block
        block = []
        kept += [line] if line is not None else []
    return "\n".join(kept).rstrip()

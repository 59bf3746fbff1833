"""The 中文版 (notebooks/zh/) shares its code with the English notebooks: this module keeps it that way.

A Chinese notebook has the same file name, the same cells in the same order with the same ids and types as
its English notebook. Its code cells are the English code cells, token for token, except that the first code
cell ends with :data:`LANGUAGE_LINES` (checker messages and chart labels in Chinese), that comments are
Chinese and that a string shown to the reader may be Chinese: :func:`to_chinese` puts in the translations of
:data:`COMMENTS_FILE` (English comment or string → Chinese, written once for every notebook and for the build
cells that ``learner_files`` writes), and :func:`same_code` compares two cells ignoring comments and the
strings a translation made Chinese, so a changed name, number, operator or English string is still found.

    python -m course_tools.edition.zh new 04      # start notebooks/zh/04_*.ipynb: English markdown, zh code
    python -m course_tools.edition.zh sync        # copy every English code cell into its zh notebook
    python -m course_tools.edition.zh check       # list what differs (exit status 1 if anything does)
"""

from __future__ import annotations

import argparse
import ast
import copy
import functools
import io
import json
import re
import sys
import tokenize
from pathlib import Path

__all__ = [
    "COMMENTS_FILE",
    "LANGUAGE_LINES",
    "check",
    "code_tokens",
    "differences",
    "fields",
    "is_language_line",
    "main",
    "new",
    "same_code",
    "strip_language",
    "sync",
    "to_chinese",
    "translations",
]

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
ZH = NOTEBOOKS / "zh"
LANGUAGE_LINES = (
    "from transformer_course.i18n import set_language  # 中文版",
    'set_language("zh")  # 检查器消息和图表标签用中文',
)


COMMENTS_FILE = Path(__file__).resolve().parent / "zh_comments.json"
# Chinese text: 汉字, and full-width punctuation (，：（）) written for a Chinese reader
HAN = re.compile(r"[\u4e00-\u9fff\u3000-\u303f\uff01-\uff5e]")
MAGIC = re.compile(r"^\s*[%!]")  # %%writefile, %time, !pip: IPython's lines, not Python


@functools.cache
def translations(path: Path = COMMENTS_FILE) -> tuple[dict[str, str], dict[str, str]]:
    """``(comments, strings)`` of the table: an English comment's text (after ``# ``) → its Chinese text, and a
    string literal as written in the code (quotes and prefix included) → the Chinese literal."""
    table = json.loads(path.read_text(encoding="utf-8"))
    return table.get("comments", {}), table.get("strings", {})


def _tokens(source: str) -> list[tokenize.TokenInfo] | None:
    """The Python tokens of a cell, IPython's magic and shell lines left blank; None if it does not tokenize."""
    python = "".join("\n" if MAGIC.match(line) else line for line in source.splitlines(keepends=True))
    try:
        return list(tokenize.generate_tokens(io.StringIO(python).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return None


def to_chinese(source: str, table: tuple[dict[str, str], dict[str, str]] | None = None) -> str:
    """``source`` with every comment, every shown string (a title, a label: not a bare word) and every docstring
    found in the table replaced by its Chinese text; the code itself untouched. A cell that does not tokenize is
    returned as it is."""
    comments, strings = table or translations()
    tokens = _tokens(source)
    if tokens is None:
        return source
    lines = source.splitlines(keepends=True)
    edits = []
    for index, token in enumerate(tokens):
        if token.type == tokenize.COMMENT:
            text = token.string[1:].strip()
            if text in comments:
                edits.append((token.start, token.end, "# " + comments[text]))
        elif (
            token.type == tokenize.STRING
            and token.string in strings
            and (
                _docstring(token, tokens[:index], tokens[index + 1 :])
                or _shown(token, tokens[max(0, index - 2) : index])
            )
        ):
            edits.append((token.start, token.end, strings[token.string]))
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    for (row, start), (end_row, end), text in reversed(edits):  # from the end, so earlier offsets stay right
        source = source[: offsets[row - 1] + start] + text + source[offsets[end_row - 1] + end :]
    return source


def _docstring(token: tokenize.TokenInfo, before: list[tokenize.TokenInfo], after: list[tokenize.TokenInfo]) -> bool:
    """A triple-quoted string that is a statement of its own (a docstring): text for the reader, never read by
    code (a triple-quoted value after ``y =`` is not a docstring)."""
    skip = (tokenize.NL, tokenize.COMMENT)
    previous = [t for t in before if t.type not in skip][-1:]
    following = [t for t in after if t.type not in skip][:1]
    starts = not previous or previous[0].type in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT)
    ends = bool(following) and following[0].type in (tokenize.NEWLINE, tokenize.ENDMARKER)
    return token.string.startswith(('"""', "'''")) and starts and ends


LABELS = {"set_title", "set_xlabel", "set_ylabel", "suptitle", "title", "xlabel", "ylabel", "label"}


def _shown(token: tokenize.TokenInfo, before: list[tokenize.TokenInfo] = ()) -> bool:
    """A string the table may translate: on one line, and not a bare word unless it is written straight into a
    chart's label (``ax.set_xlabel("step")``, ``label="train"``). Elsewhere a word such as "loss", "step" or
    "noam" may be a key or a setting that code reads, so a table entry for it is not applied there."""
    text = re.sub(r"^[rRbBuUfF]*(['\"])(.*)\1$", r"\2", token.string)
    labelled = len(before) == 2 and before[0].string in LABELS and before[1].string in ("(", "=")
    return token.start[0] == token.end[0] and (labelled or not text.isidentifier())


def code_tokens(source: str) -> list[tuple[str, ...]]:
    """What must be equal in an English code cell and its zh twin: its magic lines and its Python tokens,
    comments left out and a string written in Chinese (it holds a 汉字) read as a placeholder that keeps the
    replacement fields of an f-string (:func:`fields`): the words may change, the code inside ``{}`` may not."""
    lines = [("magic", line.strip()) for line in source.splitlines() if MAGIC.match(line)]
    tokens = _tokens(source)
    if tokens is None:
        return lines + [("text", line.rstrip()) for line in source.splitlines() if not MAGIC.match(line)]
    skipped = (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER)
    for token in tokens:
        if token.type in skipped:
            continue
        if token.type == tokenize.STRING and HAN.search(token.string):
            lines.append(("string", "中文", *fields(token.string)))
        else:
            lines.append((tokenize.tok_name[token.type], token.string))
    return lines


def fields(literal: str) -> tuple[str, ...]:
    """The replacement fields of an f-string literal, in order: each expression with its conversion and format
    spec (``f"{x!r:>8}"`` → ``("FormattedValue(...)",)``, read through :mod:`ast`, so spacing does not count);
    ``()`` for a plain string. A literal that does not parse stands for itself."""
    if not re.match(r"^[rRbBuU]*[fF]", literal):
        return ()
    try:
        node = ast.parse(literal, mode="eval").body
    except SyntaxError:
        return (literal,)
    values = node.values if isinstance(node, ast.JoinedStr) else []
    return tuple(ast.dump(value) for value in values if isinstance(value, ast.FormattedValue))


def same_code(english: str, chinese: str) -> bool:
    """True when the two cells differ only in comments and in strings the zh cell writes in Chinese (and in the
    language lines); layout inside a line is compared too, through the tokens' order, not their columns. A
    Chinese f-string must keep the English one's replacement fields: the same expressions and format specs, in
    the same order."""
    english, chinese = strip_language(english), strip_language(chinese)
    if english == chinese:
        return True
    ours, theirs = code_tokens(english), code_tokens(chinese)
    if len(ours) != len(theirs) or _layout(english) != _layout(chinese):
        return False
    # a Chinese string stands for an English string with the same replacement fields; every other token is equal
    return all(
        a == b or (b[:2] == ("string", "中文") and a[0] == "STRING" and fields(a[1]) == b[2:])
        for a, b in zip(ours, theirs)
    )


def _layout(source: str) -> list[str]:
    """Each line's indentation and whether it holds code: a moved line or a changed indent is a difference."""
    tokens = _tokens(source)
    if tokens is None:
        return source.splitlines()
    code_rows = {t.start[0] for t in tokens if t.type not in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE)}
    lines = source.splitlines()
    return [re.match(r"\s*", line)[0] + ("code" if n in code_rows else "") for n, line in enumerate(lines, 1)]


def is_language_line(line: str) -> bool:
    """True for a line that only selects the language (the one kind of line a zh code cell may add)."""
    return line.rstrip("\n") in LANGUAGE_LINES


def strip_language(source: str) -> str:
    """A code cell's source without its language-selecting lines."""
    return "".join(line for line in source.splitlines(keepends=True) if not is_language_line(line)).rstrip("\n")


def _source(cell: dict) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def _with_language(source: str) -> str:
    return source.rstrip("\n") + "\n" + "\n".join(LANGUAGE_LINES)


def _read(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _write(path: Path, notebook: dict) -> None:
    for cell in notebook["cells"]:  # sources as lists of lines, as Jupyter writes them
        cell["source"] = _source(cell).splitlines(keepends=True)
    path.write_text(json.dumps(notebook, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


def _english(number: str) -> Path:
    found = sorted(NOTEBOOKS.glob(f"{number}_*.ipynb"))
    if not found:
        raise SystemExit(f"no English notebook notebooks/{number}_*.ipynb")
    return found[0]


def _code_cell(cell: dict, first: bool) -> dict:
    cell = copy.deepcopy(cell)
    cell["outputs"], cell["execution_count"] = [], None
    source = to_chinese(_source(cell))
    cell["source"] = _with_language(source) if first else source
    return cell


def new(number: str, overwrite: bool = False) -> Path:
    """Start the zh notebook of English notebook ``number``: every cell copied (markdown still English)."""
    english = _english(number)
    target = ZH / english.name
    if target.exists() and not overwrite:
        raise SystemExit(f"{target} exists; edit it, or run `sync` to refresh its code cells")
    notebook = _read(english)
    first = True
    cells = []
    for cell in notebook["cells"]:
        if cell["cell_type"] == "code":
            cells.append(_code_cell(cell, first))
            first = False
        else:
            cells.append(copy.deepcopy(cell))
    notebook["cells"] = cells
    ZH.mkdir(parents=True, exist_ok=True)
    _write(target, notebook)
    return target


def sync(english: Path) -> list[str]:
    """Make the zh notebook's code cells the English ones (by cell id); keep its Chinese markdown. A markdown
    cell new in English is copied in English (``check`` then reports it untranslated). Returns what changed."""
    target = ZH / english.name
    en, zh = _read(english), _read(target)
    translated = {cell.get("id"): cell for cell in zh["cells"] if cell["cell_type"] != "code"}
    changes, cells, first = [], [], True
    for cell in en["cells"]:
        if cell["cell_type"] == "code":
            cells.append(_code_cell(cell, first))
            first = False
        elif cell.get("id") in translated:
            kept = copy.deepcopy(translated[cell["id"]])
            kept["metadata"] = copy.deepcopy(cell.get("metadata", {}))
            cells.append(kept)
        else:
            changes.append(f"{target.name}: new markdown cell {cell.get('id')} copied in English")
            cells.append(copy.deepcopy(cell))
    if [_source(c) for c in cells] != [_source(c) for c in zh["cells"]]:
        changes.append(f"{target.name}: code cells synced")
    zh["cells"] = cells
    _write(target, zh)
    return changes


def differences(english: Path) -> list[str]:
    """Why the zh notebook of ``english`` does not match it (empty when it does)."""
    target = ZH / english.name
    if not target.exists():
        return [f"{target.relative_to(NOTEBOOKS.parent)} is missing"]
    en, zh = _read(english)["cells"], _read(target)["cells"]
    problems = []
    if [(c.get("id"), c["cell_type"]) for c in en] != [(c.get("id"), c["cell_type"]) for c in zh]:
        return [f"{target.name}: cells (ids, types, order) differ from {english.name}; run `sync`"]
    first = True
    for a, b in zip(en, zh):
        if a["cell_type"] == "code":
            if first and not all(line in _source(b).splitlines() for line in LANGUAGE_LINES):
                problems.append(f"{target.name}: the first code cell must end with the language lines")
            first = False
            if not same_code(_source(a), _source(b)):
                problems.append(f"{target.name}: code cell {b.get('id')} differs from English; run `sync`")
            if b.get("outputs"):
                problems.append(f"{target.name}: code cell {b.get('id')} has outputs")
        elif _source(a).strip() and _source(a) == _source(b):
            problems.append(f"{target.name}: markdown cell {b.get('id')} is not translated")
    return problems


def check() -> list[str]:
    return [p for english in sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")) for p in differences(english)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m course_tools.edition.zh", description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=["new", "sync", "check"])
    parser.add_argument("numbers", nargs="*", help="notebook numbers such as 04 (default: all)")
    args = parser.parse_args(argv)
    englishes = [_english(n) for n in args.numbers] or sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
    if args.command == "new":
        for english in englishes:
            print(f"wrote {new(english.name[:2])}")
        return 0
    if args.command == "sync":
        for english in englishes:
            if (ZH / english.name).exists():
                print("\n".join(sync(english)) or f"{english.name}: in sync")
        return 0
    problems = [p for english in englishes for p in differences(english)]
    print("\n".join(problems) or "the zh notebooks match the English ones")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

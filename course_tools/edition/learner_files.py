"""The learner's files are cut from the package: the model is written once, in ``transformer_course``.

Notebooks 02–07 each end with a build cell, ``%%writefile my_transformer/<file>.py``, that the learner completes
(the scaffold); ``notebooks/solutions/my_transformer/<file>.py`` holds its answer (the solution). Both are cut
from **marked regions** of the package's own model modules (``attention.py``, ``layers.py``, ``model.py``), so a
model feature is written in one place. d2l marks notebook code ``#@save`` for its library; here the package is
the source and the marks say what a learner's file takes from it:

    # learner file: multi_head.py      a region of multi_head.py begins (column 0) …
    # end learner file                 … and ends; a file's regions follow each other in the package's order
    # package only: begin / end        lines the learner's file leaves out (the cache, the fast path, checks)
    code  # package only               one line the learner's file leaves out
    # learner: CODE                    the learner's file has CODE in place of the next statement
    # exercise: HINT                   the scaffold keeps the signature, the docstring and these hints and
                                       ends the body with ``raise NotImplementedError``; the solution drops them

Type annotations are dropped from the learner's signatures. Each file begins with its docstring and imports
(:data:`HEADERS`).

    python -m course_tools.edition.learner_files sync    # write the solutions and every build cell (en, zh)
    python -m course_tools.edition.learner_files check   # list what differs (exit status 1 if anything does)
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import re
import sys
import tokenize
from pathlib import Path

from transformer_course.provenance import FILES, SOURCES

__all__ = [
    "HEADERS",
    "build_cell",
    "check",
    "cut_region",
    "differences",
    "learner_file",
    "main",
    "regions",
    "scaffold",
    "solution",
    "sync",
]

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "transformer_course"
NOTEBOOKS = ROOT / "notebooks"
SOLUTIONS = NOTEBOOKS / "solutions" / "my_transformer"
LINE_LENGTH = 120

# each file's docstring and imports: what it needs besides the package's regions
HEADERS = {
    "attention.py": '''"""Scaled dot-product attention, written in notebook 02 (paper §3.2.1, equation 1)."""

import math

import torch''',
    "multi_head.py": '''"""Multi-head attention, written in notebook 03 (paper §3.2.2)."""

import torch.nn.functional as F
from torch import nn

from .attention import scaled_dot_product_attention  # yours, from notebook 02''',
    "norm_residual.py": '''"""LayerNorm and the residual connection around every sub-layer, written in notebook 04 (paper §3.1, §5.4)."""

import torch
from torch import nn''',
    "embeddings.py": '''"""Notebook 05: token embeddings × √d_model, the positional encoding (sinusoidal or learned), the position-wise FFN."""

import math

import torch
from torch import nn''',
    "encoder.py": '''"""Notebook 06: the encoder layer and the encoder stack (§3.1)."""

import copy

from torch import nn

from .embeddings import PositionwiseFeedForward
from .multi_head import MultiHeadAttention
from .norm_residual import LayerNorm, ResidualConnection''',
    "decoder.py": '''"""Notebook 07: the decoder layer and stack, the generator, and the whole encoder-decoder model (§3)."""

from torch import nn

from .embeddings import Embeddings, PositionalEncoding, PositionwiseFeedForward
from .encoder import Encoder, EncoderLayer, clones, final_norm
from .multi_head import MultiHeadAttention
from .norm_residual import ResidualConnection''',
}

BEGIN = re.compile(r"^# learner file: (\w+\.py)$")
END = "# end learner file"
ONLY_BEGIN, ONLY_END = "# package only: begin", "# package only: end"
ONLY_LINE = re.compile(r"\s+# package only$")
LEARNER = re.compile(r"^(\s*)# learner: (.*)$")
EXERCISE = re.compile(r"^(\s*)# exercise:(.*)$")


def regions(file: str) -> list[str]:
    """The package's regions of ``file``, as written in the package (marks included), in order."""
    found = []
    for module in dict.fromkeys(SOURCES.values()):
        lines = (PACKAGE / f"{module}.py").read_text(encoding="utf-8").splitlines()
        inside = None
        for number, line in enumerate(lines, 1):
            begin = BEGIN.match(line)
            if begin:
                if inside is not None:
                    raise ValueError(f"{module}.py:{number}: a region begins inside the region of {inside[0]}")
                inside = (begin.group(1), [])
            elif line.strip() == END:
                if inside is None:
                    raise ValueError(f"{module}.py:{number}: '{END}' outside a region")
                if inside[0] == file:
                    found.append("\n".join(inside[1]).strip("\n"))
                inside = None
            elif inside is not None:
                inside[1].append(line)
        if inside is not None:
            raise ValueError(f"{module}.py: the region of {inside[0]} has no '{END}'")
    return found


def _statement_ends(lines: list[str]) -> dict[int, int]:
    """Line index → the index of the last line of the statement that begins there."""
    ends, start = {}, None
    for token in tokenize.generate_tokens(io.StringIO("\n".join(lines) + "\n").readline):
        if token.type in (tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER):
            continue
        if start is None:
            start = token.start[0] - 1
        if token.type == tokenize.NEWLINE:
            ends[start], start = token.start[0] - 1, None
    return ends


def _learners_lines(region: str) -> list[str]:
    """The region with the package-only lines dropped and the learner's lines put in (exercise marks kept)."""
    lines, out, skipping, replace_next = region.splitlines(), [], False, None
    ends = _statement_ends(lines)
    index = 0
    while index < len(lines):
        line = lines[index]
        if line.strip() == ONLY_BEGIN:
            skipping = True
        elif line.strip() == ONLY_END:
            skipping = False
        elif skipping or ONLY_LINE.search(line):
            pass
        elif LEARNER.match(line):
            indent, code = LEARNER.match(line).groups()
            out.append(indent + code)
            replace_next = True
        elif replace_next and line.strip():
            index = ends.get(index, index)  # the package's statement, all its lines
            replace_next = None
        else:
            out.append(line)
        index += 1
    return out


def _plain_signatures(text: str) -> str:
    """``text`` with every ``def`` header rewritten without type annotations (one line when it fits)."""
    tree = ast.parse(text)
    lines = text.splitlines()
    functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    for node in sorted(functions, key=lambda n: n.lineno, reverse=True):
        first, last = node.lineno - 1, node.body[0].lineno - 2
        while not lines[last].strip() or lines[last].lstrip().startswith("#"):
            last -= 1
        indent = lines[first][: len(lines[first]) - len(lines[first].lstrip())]
        args = node.args
        plain = [*args.posonlyargs, *args.args]
        defaults = [None] * (len(plain) - len(args.defaults)) + list(args.defaults)
        params = [a.arg + (f"={ast.get_source_segment(text, d)}" if d else "") for a, d in zip(plain, defaults)]
        if args.vararg:
            params.append("*" + args.vararg.arg)
        elif args.kwonlyargs:
            params.append("*")
        for a, d in zip(args.kwonlyargs, args.kw_defaults):
            params.append(a.arg + (f"={ast.get_source_segment(text, d)}" if d else ""))
        if args.kwarg:
            params.append("**" + args.kwarg.arg)
        header = [f"{indent}def {node.name}({', '.join(params)}):"]
        if len(header[0]) > LINE_LENGTH:
            header = [f"{indent}def {node.name}(", *(f"{indent}    {p}," for p in params), f"{indent}):"]
        lines[first : last + 1] = header
    return "\n".join(lines)


def cut_region(region: str, as_scaffold: bool) -> str:
    """One region of the package as the learner's file has it: the scaffold (hints, ``raise NotImplementedError``)
    or the solution."""
    text = _plain_signatures("\n".join(_learners_lines(region)))
    lines = text.splitlines()
    if as_scaffold:
        tree = ast.parse(text)
        functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        for node in sorted(functions, key=lambda n: n.lineno, reverse=True):
            body = range(node.lineno, node.end_lineno)  # line indices after the def line
            marks = [i for i in body if EXERCISE.match(lines[i])]
            if not marks:
                continue
            indent = EXERCISE.match(lines[marks[0]]).group(1)
            texts = [EXERCISE.match(lines[i]).group(2).removeprefix(" ").rstrip() for i in marks]
            hints = [f"{indent}# {text}" for text in texts if text.strip()]
            lines[marks[0] : node.end_lineno] = [*hints, f"{indent}raise NotImplementedError"]
    else:
        lines = [line for line in lines if not EXERCISE.match(line)]
    return "\n".join(lines)


def learner_file(file: str, as_scaffold: bool) -> str:
    """The text of ``my_transformer/<file>``: the scaffold of its build cell, or the solution."""
    if file not in HEADERS:
        raise ValueError(f"unknown file {file!r}; the learner writes {', '.join(HEADERS)}")
    found = regions(file)
    if not found:
        raise ValueError(f"no region '# learner file: {file}' in transformer_course/{SOURCES[file]}.py")
    body = "\n\n\n".join(cut_region(region, as_scaffold) for region in found)
    return f"{HEADERS[file]}\n\n\n{body}\n"


def solution(file: str) -> str:
    """``notebooks/solutions/my_transformer/<file>``: the learner's file complete."""
    return learner_file(file, as_scaffold=False)


def scaffold(file: str) -> str:
    """The text the build cell of ``file`` writes: signatures, docstrings, hints, ``raise NotImplementedError``."""
    return learner_file(file, as_scaffold=True)


def _notebooks(file: str) -> list[Path]:
    return [NOTEBOOKS / FILES[file], NOTEBOOKS / "zh" / FILES[file]]


def build_cell(notebook: dict, file: str) -> dict | None:
    """The cell of ``notebook`` (its JSON) whose first line is ``%%writefile my_transformer/<file>``, or None."""
    for cell in notebook["cells"]:
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        if cell["cell_type"] == "code" and source.partition("\n")[0].strip() == f"%%writefile my_transformer/{file}":
            return cell
    return None


def _cell_text(file: str, notebook: Path | None = None) -> str:
    """The build cell of ``file``; in a 中文版 notebook (``notebooks/zh/``) its comments come from the zh comment
    table (``course_tools/edition/zh_comments.json``, :func:`course_tools.edition.zh.to_chinese`)."""
    text = f"%%writefile my_transformer/{file}\n{scaffold(file).rstrip()}"
    if notebook is not None and notebook.parent.name == "zh":
        from .zh import to_chinese

        text = to_chinese(text)
    return text


def differences() -> list[str]:
    """One line per file (solution or build cell) that is not what the package's regions give."""
    found = []
    for file in FILES:
        path = SOLUTIONS / file
        if not path.is_file() or path.read_text(encoding="utf-8") != solution(file):
            found.append(f"{path.relative_to(ROOT)}: not the package's regions of {file}")
        for path in _notebooks(file):
            cell = build_cell(json.loads(path.read_text(encoding="utf-8")), file) if path.is_file() else None
            if cell is None:
                found.append(f"{path.relative_to(ROOT)}: no build cell %%writefile my_transformer/{file}")
            elif "".join(cell["source"]).rstrip() != _cell_text(file, path):
                found.append(f"{path.relative_to(ROOT)}: the build cell of {file} is not the package's scaffold")
    return found


def sync() -> list[str]:
    """Write every solution and fill every build cell (English and 中文) from the package. Returns what changed."""
    changed = []
    SOLUTIONS.mkdir(parents=True, exist_ok=True)
    for file in FILES:
        path = SOLUTIONS / file
        if not path.is_file() or path.read_text(encoding="utf-8") != solution(file):
            path.write_text(solution(file), encoding="utf-8")
            changed.append(str(path.relative_to(ROOT)))
        for path in _notebooks(file):
            notebook = json.loads(path.read_text(encoding="utf-8"))
            cell = build_cell(notebook, file)
            if cell is None:
                raise ValueError(f"{path.relative_to(ROOT)} has no build cell %%writefile my_transformer/{file}")
            if "".join(cell["source"]).rstrip() != _cell_text(file, path):
                cell["source"] = _cell_text(file, path).splitlines(keepends=True)
                path.write_text(json.dumps(notebook, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
                changed.append(str(path.relative_to(ROOT)))
    return changed


def check() -> list[str]:
    """What ``check`` prints: :func:`differences`."""
    return differences()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m course_tools.edition.learner_files", description=__doc__.split("\n")[0]
    )
    parser.add_argument("command", choices=["sync", "check"])
    args = parser.parse_args(argv)
    if args.command == "sync":
        for line in sync():
            print(f"wrote {line}")
        return 0
    problems = check()
    for line in problems:
        print(line)
    if problems:
        print("run: python -m course_tools.edition.learner_files sync", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())

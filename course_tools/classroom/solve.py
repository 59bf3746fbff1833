"""The solved course: each committed notebook with its blanks filled from ``notebooks/solutions/``.

A learner receives the notebooks with blanks: build cells (``%%writefile my_transformer/<file>.py``) whose
stubs end with ``raise NotImplementedError``, exercise stubs, and answers ``name = ...``. Solving a notebook
fills every blank the way the classroom build fills its solution regions (:mod:`course_tools.classroom`,
the same code), without the markers:

- a build cell's stubs get the bodies of ``solutions/my_transformer/<file>.py`` (so the solved cell writes
  that file: tests/test_solve.py checks it is the same program);
- an exercise stub gets the body of its reference in ``solutions/nbNN_*.py``;
- the answer lines ``name = ...`` are followed by ``name = <the reference answer>``.

Every other line stays as the learner sees it, checker calls included. The solved notebooks are what the HTML
edition shows and what ``make test`` runs as the second way through the course (every check ✅).

    python -m course_tools.classroom.solve OUT              # notebooks/*.ipynb → OUT/*.ipynb, solved
    python -m course_tools.classroom.solve OUT --notebooks notebooks/zh --only 02 03
"""

from __future__ import annotations

import argparse
import ast
import copy
import sys
from pathlib import Path

from transformer_course.files import atomic_write_text

from .build_cells import build_file, build_references, build_stubs
from .cells import read_notebook, split_line
from .convert import BEGIN, END, _Notebook
from .reference import ConventionError, ReferenceModule, find_reference_module

__all__ = ["solve_cell_source", "solve_notebook", "solve_notebooks", "solved_course", "main"]


def _unmarked(text: str) -> str:
    """``text`` without the lines ``### BEGIN SOLUTION`` / ``### END SOLUTION``."""
    return "\n".join(line for line in text.split("\n") if line.strip() not in (BEGIN, END))


def solve_cell_source(source: str, reference_text: str, name: str = "build cell") -> str:
    """One build cell's text solved with the reference file's text (``solutions/my_transformer/<file>.py``)."""
    import nbformat

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)])
    file = build_file(source)
    if file is None:
        raise ConventionError(f"{name}: not a build cell (its first line is not %%writefile my_transformer/<file>.py)")
    reference = ReferenceModule(Path(file), reference_text, ast.parse(reference_text))
    return solve_notebook(nb, name, None, {file: reference}).cells[0].source


def solve_notebook(nb, name: str, reference: ReferenceModule | None, builds: dict[str, ReferenceModule]):
    """A copy of ``nb`` (named ``name``, "02_attention.ipynb") with every blank filled: build cells from
    ``builds`` (file → its reference), exercise stubs and answers from ``reference`` (its solutions module)."""
    state = _Notebook(nb, name, reference)
    solved = copy.deepcopy(nb)
    for index, cell in enumerate(solved.cells):
        if cell.cell_type != "code":
            continue
        file = build_file(cell.source)
        if file is not None and build_stubs(cell.source):
            if file not in builds:
                raise ConventionError(f"{state.where(index)}: no reference solutions/my_transformer/{file}")
            first, _, body = cell.source.partition("\n")
            text, _ = state.solution_source(index, body, builds[file])
            cell.source = f"{first}\n{_unmarked(text)}"
            continue
        tree = state.trees[index]
        if tree is None:
            continue
        kinds = state.kinds(index, tree)
        if not {"stub", "answer"} & set(kinds):
            continue
        if reference is None:
            raise ConventionError(f"{state.where(index)}: an exercise, but no solutions module for {name}")
        lines = cell.source.split("\n")
        split = split_line(lines, tree.body[kinds.index("check")]) if "check" in kinds else len(lines)
        exercise, check = "\n".join(lines[:split]), "\n".join(lines[split:])
        text, _ = state.solution_source(index, exercise)
        cell.source = _unmarked(text) + ("\n" + check if check else "")
    return solved


def _has_exercise_stubs(nb) -> bool:
    """A code cell (not a build cell) with a stub or an answer ``name = ...``."""
    from .cells import is_stub_raise, parse_cell, placeholder_name

    trees = [parse_cell(c.source) for c in nb.cells if c.cell_type == "code"]
    nodes = [n for tree in trees if tree is not None for n in ast.walk(tree)]
    return any(is_stub_raise(n) or (isinstance(n, ast.stmt) and placeholder_name(n)) for n in nodes)


def solve_notebooks(
    out: str | Path,
    notebooks: str | Path = "notebooks",
    solutions: str | Path | None = None,
    only: list[str] | None = None,
) -> list[Path]:
    """Write the solved copy of each selected notebook of ``notebooks`` into ``out`` (same names); the
    solutions are ``solutions`` (default: ``notebooks/solutions``, for ``notebooks/zh`` too). Returns the paths."""
    import nbformat

    notebooks, out = Path(notebooks), Path(out)
    if solutions is None:
        solutions = notebooks / "solutions"
        if not solutions.is_dir() and (notebooks.parent / "solutions").is_dir():  # notebooks/zh
            solutions = notebooks.parent / "solutions"
    solutions = Path(solutions)
    if out.resolve() == notebooks.resolve():
        raise ValueError(f"{out} is the notebooks' own folder: write the solved course somewhere else")
    solved = []
    paths = sorted(notebooks.glob("[0-9][0-9]_*.ipynb"))
    paths = [p for p in paths if not only or any(p.name.startswith(n) for n in only)]
    if not paths:
        raise FileNotFoundError(f"no course notebooks (00_….ipynb) in {notebooks}" + (f" match {only}" if only else ""))
    for path in paths:
        nb = read_notebook(path)
        builds = (
            build_references(nb, solutions)
            if any(c.cell_type == "code" and build_stubs(c.source) for c in nb.cells)
            else {}
        )
        reference = None
        if _has_exercise_stubs(nb):
            reference = ReferenceModule.read(find_reference_module(solutions, path.name[:2]))
        result = solve_notebook(nb, path.name, reference, builds)
        out.mkdir(parents=True, exist_ok=True)
        atomic_write_text(out / path.name, nbformat.writes(result) + "\n")
        solved.append(out / path.name)
    return solved


def solved_course(notebooks: str | Path, workdir: str | Path, solutions: str | Path | None = None) -> Path:
    """The solved course, ready to run: a copy of the course's layout in ``workdir`` (the package, data/, runs/,
    figures/ and solutions/ linked in) whose notebook folder holds the solved copy of every notebook of
    ``notebooks`` and a ``my_transformer/`` written by their solved build cells, so that any one of them runs on
    its own as after the notebooks before it. Returns that folder (``…/notebooks`` or ``…/notebooks/zh``)."""
    from transformer_course.learner import FILES
    from transformer_course.paths import course_root

    notebooks, workdir = Path(notebooks).resolve(), Path(workdir)
    zh = notebooks.name == "zh"
    english = notebooks.parent if zh else notebooks
    here = workdir / "notebooks" / "zh" if zh else workdir / "notebooks"
    here.mkdir(parents=True, exist_ok=True)
    try:
        root = course_root(english)
    except FileNotFoundError:  # notebooks outside a course: only their own folder
        root = None
    if root is not None:
        for name in ("transformer_course", "data", "runs", "pyproject.toml"):
            if (root / name).exists() and not (workdir / name).exists():
                (workdir / name).symlink_to(root / name)
    for name in ("figures", "solutions", "GLOSSARY.md"):
        if (english / name).exists() and not (workdir / "notebooks" / name).exists():
            (workdir / "notebooks" / name).symlink_to(english / name)
    if solutions is None and (english / "solutions").is_dir():
        solutions = english / "solutions"
    paths = solve_notebooks(here, notebooks, solutions)
    for path in paths:
        for cell in read_notebook(path).cells:
            file = build_file(cell.source) if cell.cell_type == "code" else None
            if file in FILES:
                (here / "my_transformer").mkdir(exist_ok=True)
                (here / "my_transformer" / "__init__.py").touch()
                (here / "my_transformer" / file).write_text(cell.source.partition("\n")[2] + "\n", encoding="utf-8")
    return here


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m course_tools.classroom.solve",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("out", metavar="OUT", help="folder for the solved notebooks")
    parser.add_argument("--notebooks", default="notebooks", help="folder of the course notebooks (default: notebooks)")
    parser.add_argument("--solutions", help="folder of the reference solutions (default: NOTEBOOKS/solutions)")
    parser.add_argument("--only", nargs="+", metavar="NN", help="only notebooks whose names start with these")
    args = parser.parse_args(argv)
    try:
        paths = solve_notebooks(args.out, args.notebooks, args.solutions, args.only)
    except (ConventionError, FileNotFoundError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(f"wrote {len(paths)} solved notebook(s) to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

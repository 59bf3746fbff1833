"""Build cells: ``%%writefile my_transformer/<file>.py`` cells whose stubs the learner writes, graded
and solved like exercise stubs, with ``notebooks/solutions/my_transformer/<file>.py`` as their reference.

The cell stays a ``%%writefile`` cell; the code below its first line is read as one module of its own (its names
are bound by its own imports, not by the notebook's), and each stub's body is filled from the reference's.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from .cells import is_stub_raise, nbgrader_metadata, parse_cell
from .reference import ConventionError, ReferenceModule

__all__ = ["BUILD_CELL", "build_file", "build_references", "build_stubs", "learner_files", "solve_build_cell"]

BUILD_CELL = re.compile(r"^%%writefile\s+my_transformer/(\w+\.py)\s*$")


def build_file(source: str) -> str | None:
    """``attention.py`` when ``source`` is a build cell (its first line ``%%writefile my_transformer/attention.py``)."""
    match = BUILD_CELL.match(source.partition("\n")[0])
    return match.group(1) if match else None


def build_stubs(source: str) -> list[str]:
    """The top-level names of a build cell that hold a stub (a body ending with ``raise NotImplementedError``)."""
    tree = parse_cell(source.partition("\n")[2]) if build_file(source) is not None else None
    if tree is None:
        return []
    return [
        s.name
        for s in tree.body
        if isinstance(s, (ast.FunctionDef, ast.ClassDef)) and any(map(is_stub_raise, ast.walk(s)))
    ]


def build_references(nb, solutions: str | Path) -> dict[str, ReferenceModule]:
    """The references of the notebook's build cells that hold stubs: file → ``solutions/my_transformer/<file>``."""
    found = {}
    for cell in nb.cells:
        file = build_file(cell.source) if cell.cell_type == "code" else None
        if file is not None and build_stubs(cell.source):
            path = Path(solutions) / "my_transformer" / file
            if not path.is_file():
                raise ConventionError(
                    f"{file}: the build cell has stubs but {path} is not there; add the complete file (or pass --solutions)"
                )
            found[file] = ReferenceModule.read(path)
    return found


def solve_build_cell(state, index: int, cell, file: str, references: dict[str, ReferenceModule], name: str):
    """Put the reference code of each stub of the build ``cell`` (notebook ``name``, cell ``index``) between the
    solution markers, in place, and make it a solution cell; ``state``: the notebook's conversion. Returns its
    grade id and the names it writes."""
    if file not in references:
        raise ConventionError(
            f"{state.where(index)}: a build cell of my_transformer/{file}, but no reference "
            f"solutions/my_transformer/{file}; add the complete file there"
        )
    first, _, body = cell.source.partition("\n")
    try:
        text, names = state.solution_source(index, body, references[file])
    except ConventionError as error:
        if str(error).startswith(name):
            raise
        raise ConventionError(f"{state.where(index)}: {error}") from None
    cell.source = f"{first}\n{text}"
    grade_id = state.grade_id(file.removesuffix(".py"))
    cell.metadata["nbgrader"] = nbgrader_metadata(grade_id, solution=True)
    return grade_id, names


def learner_files(notebook: Path, notebooks: Path) -> dict[str, str]:
    """An assignment that imports ``my_transformer`` gets the files the notebooks before it write, as marked
    fallbacks (the package's code with the learner's API, :func:`transformer_course.learner.fallback_text`;
    never a reference answer), so it runs on its own in nbgrader and names them "fallback", not the student's:
    ``{"my_transformer/name.py": text}``, with the package's ``__init__.py``."""
    from transformer_course.learner import FILES, fallback_text

    if "my_transformer" not in notebook.read_text(encoding="utf-8"):
        return {}
    files = {}
    for name, source in FILES.items():
        if source[:2] >= notebook.name[:2] or not (notebooks / source).exists():
            continue
        files["my_transformer/__init__.py"] = ""
        files[f"my_transformer/{name}"] = fallback_text(name)
    return files

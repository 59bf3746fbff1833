"""What the classroom tests share: nbgrader run as an instructor would, a submission made of the reference
solutions (or of the untouched release with a cheat in a cell of the student's own), its scores from the gradebook
and its feedback page."""

from __future__ import annotations

import ast
import html
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat

from course_tools.classroom import build_course  # noqa: F401  (the tests build their course with it)
from course_tools.classroom.build_cells import build_file
from course_tools.classroom.course import default_solutions

NOTEBOOKS_DIR = Path(__file__).resolve().parent.parent / "notebooks"
SOLUTIONS_DIR = default_solutions(NOTEBOOKS_DIR)
BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"


NBGRADER_LIMIT_S = 900  # a whole nbgrader command; beyond this the grader itself hangs, which is a failure


def solution_regions(source: str) -> list[str]:
    """The code between each BEGIN/END SOLUTION pair of a cell."""
    return [m.group(1) for m in re.finditer(rf"{BEGIN}\n(.*?)\n[ \t]*{END}", source, re.S)]


# Cheats: code a student could put in a cell of their own, after the cell that imports the checkers, to
# get the points without the work. Each must score 0 on every cell, the exercises being left undone.
CHEATS = {
    # a rebound `ex` that passes everything and forges a result nbgrader would read as points
    "rebind": """
class AlwaysRight:
    def __getattr__(self, name):
        def check(*args, **kwargs):
            get_ipython().displayhook(1)
            return True
        return check
ex = AlwaysRight()
""",
    # the checker module's own functions and the shared Result / run_check replaced
    "monkeypatch": """
import transformer_course.exercises as exercises
for name in dir(ex):
    if name.startswith("check_"):
        setattr(ex, name, lambda *args, **kwargs: True)
exercises.Result.__bool__ = lambda self: True
exercises.run_check = lambda *args, **kwargs: True
""",
    # every checker module in sys.modules replaced by a fake, and imported again from there
    "sys_modules": """
import sys, types, importlib
fake = types.ModuleType(ex.__name__)
fake.__getattr__ = lambda name: (lambda *args, **kwargs: True)
for name in [n for n in sys.modules if n.startswith("transformer_course.exercises")]:
    sys.modules[name] = fake
ex = importlib.import_module(ex.__name__)
""",
}


# the exercises answered with what the checker module or the package exports under the same name
ATTRIBUTES = """
import transformer_course
for name in NAMES:
    found = getattr(ex, name, None) or getattr(ex, name.upper(), None) or getattr(transformer_course, name, None)
    if found is not None:
        globals()[name] = found
"""


def nbgrader(course: Path, *args: str) -> subprocess.CompletedProcess:
    """Run ``nbgrader ARGS`` in the course folder, as an instructor would, with this environment's tools."""
    env = dict(os.environ, TC_FAST="1", MPLCONFIGDIR=str(course.parent / "mpl"))
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"  # nbgrader runs `alembic`
    done = subprocess.run(
        [sys.executable, "-m", "nbgrader", *args],
        cwd=course,
        env=env,
        capture_output=True,
        text=True,
        timeout=NBGRADER_LIMIT_S,
    )
    log = done.stdout + done.stderr
    first_error = log[max(log.find("Traceback"), 0) :][:4000]  # nbgrader logs each failure's traceback, then goes on
    assert done.returncode == 0, f"nbgrader {' '.join(args)} failed:\n{first_error}\n[...]\n{log[-2000:]}"
    return done


def fill(release_source: str, codes: list[str]) -> str:
    """What a learner does: replace each `# YOUR CODE HERE` / `raise NotImplementedError()` of a cell by code."""
    stubs = list(re.finditer(r"^([ \t]*)# YOUR CODE HERE\n[ \t]*raise NotImplementedError\(\)$", release_source, re.M))
    assert len(stubs) == len(codes), f"{len(codes)} answers for {len(stubs)} stubs in:\n{release_source}"
    for stub, code in reversed(list(zip(stubs, codes))):
        body = "\n".join(stub.group(1) + line if line else "" for line in code.splitlines())
        release_source = release_source[: stub.start()] + body + release_source[stub.end() :]
    return release_source


def dedent_region(region: str) -> str:
    indent = re.match(r"[ \t]*", region).group(0)
    return "\n".join(line.removeprefix(indent) for line in region.splitlines())


def submit(course: Path, student: str, assignment: str, changes: dict[str, str] | None = None) -> None:
    """The released notebook with every exercise filled in with the reference code, except ``changes``
    (function name → the body written instead), saved as nbgrader expects: submitted/<student>/<assignment>/."""
    [released] = (course / "release" / assignment).glob("*.ipynb")
    source = nbformat.read(course / "source" / assignment / released.name, as_version=4)
    reference = {c.metadata["nbgrader"]["grade_id"]: c.source for c in source.cells if "nbgrader" in c.metadata}
    nb = nbformat.read(released, as_version=4)
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution"):
            regions = [dedent_region(r) for r in solution_regions(reference[meta["grade_id"]])]
            text = reference[meta["grade_id"]]
            text = text.partition("\n")[2] if build_file(text) is not None else text  # a build cell: the file's code
            defined = [n.name for n in ast.parse(text).body if isinstance(n, ast.FunctionDef)]
            changed = [changes[name] for name in defined if name in (changes or {})]
            cell.source = fill(cell.source, changed if changed and len(regions) == 1 else regions)
    path = course / "submitted" / student / assignment / released.name
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)


def submit_release(course: Path, student: str, assignment: str, cheat: str | None = None) -> None:
    """The released notebook, exercises untouched, with ``cheat`` in a cell of the student's own after the cell
    that imports the checkers (ATTRIBUTES: after each exercise cell, for that cell's names)."""
    [released] = (course / "release" / assignment).glob("*.ipynb")
    nb = nbformat.read(released, as_version=4)
    cells = []
    for cell in nb.cells:
        cells.append(cell)
        meta = cell.metadata.get("nbgrader", {})
        if cheat == "attributes" and meta.get("solution"):
            names = [n.name for n in ast.parse(re.sub(r"^%%.*", "", cell.source)).body if hasattr(n, "name")]
            names += [
                n.targets[0].id for n in ast.parse(re.sub(r"^%%.*", "", cell.source)).body if isinstance(n, ast.Assign)
            ]
            cells.append(nbformat.v4.new_code_cell(f"NAMES = {names!r}\n{ATTRIBUTES}"))
        elif cheat in CHEATS and cell.cell_type == "code" and "transformer_course.exercises import" in cell.source:
            cells.append(nbformat.v4.new_code_cell(CHEATS[cheat]))
    assert cheat is None or len(cells) > len(nb.cells), f"no place for the cheat {cheat} in {released.name}"
    nb.cells = cells
    path = course / "submitted" / student / assignment / released.name
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)


def scores(course: Path, assignment: str, student: str) -> tuple[float, float, dict[str, float]]:
    """(score, max score, {grade_id: score}) of one submission, from nbgrader's gradebook database."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "transformer_course") as gradebook:
        submission = gradebook.find_submission(assignment, student)
        cells = {grade.name: grade.score for notebook in submission.notebooks for grade in notebook.grades}
        return submission.score, submission.max_score, cells


def feedback(course: Path, student: str, assignment: str) -> str:
    [page] = (course / "feedback" / student / assignment).glob("*.html")
    return html.unescape(page.read_text(encoding="utf-8"))

"""Reading a notebook's code cells for the classroom build: exercises (stubs, ``name = ...`` answers), checker
calls, and how a checker cell becomes an nbgrader graded cell (the convention is in
:mod:`course_tools.classroom`).
"""

from __future__ import annotations

import ast
import hashlib
import pprint
import re
import textwrap
from pathlib import Path

import transformer_course

from .reference import ConventionError
from .release_text import released_code
from .verdict import PLACEHOLDER_PATTERN, strip_digests

__all__ = [
    "POINTS_RULE",
    "checker_aliases",
    "checker_modules",
    "fixed_answers",
    "graded_source",
    "is_check",
    "is_stub_raise",
    "nbgrader_metadata",
    "parse_cell",
    "placeholder_name",
    "points_of",
    "python_lines",
    "read_notebook",
    "split_line",
    "validate_checks",
]

EXERCISES_MODULE = "transformer_course.exercises"
POINTS_RULE = (
    "each checker call is worth 2 points when it is given a function or class the learner writes, "
    "1 point when it is given answers (name = ...), and a quiz (check_quiz) 1 point per answer; "
    "a graded cell scores the points of the checks that pass (partial credit)."
)
CHECKERS = (
    Path(transformer_course.__file__).resolve().parent / "exercises"
)  # the checker modules the course is built with


def read_notebook(path: str | Path):
    """The notebook at ``path`` (nbformat 4). A file that is not a notebook (damaged JSON, a truncated download, a
    JSON file of another shape) raises ValueError with one line that names it."""
    import nbformat

    try:
        return nbformat.read(path, as_version=4)
    except (ValueError, KeyError, TypeError, AttributeError, nbformat.ValidationError) as error:
        problem = (str(error).strip().splitlines() or [type(error).__name__])[0][:200]
        raise ValueError(
            f"{path} is not a notebook Jupyter can open ({problem}); restore it (git checkout -- {path}) "
            "or save it again from Jupyter"
        ) from None


def python_lines(source: str) -> str:
    """A cell's text with its line magics (``%time``, ``!pip``) read as ``pass``, line for line."""
    return "\n".join(re.sub(r"^(\s*)[%!].*$", r"\1pass", line) for line in source.split("\n"))


def parse_cell(source: str) -> ast.Module | None:
    """A code cell's syntax tree; line magics (``%time``, ``!pip``) read as ``pass``; None for a ``%%`` cell magic
    or a cell that is not Python."""
    if source.lstrip().startswith("%%"):
        return None
    try:
        return ast.parse(python_lines(source))
    except SyntaxError:
        return None


def is_stub_raise(node: ast.AST) -> bool:
    """``raise NotImplementedError`` or ``raise NotImplementedError(...)``."""
    exc = node.exc if isinstance(node, ast.Raise) else None
    exc = exc.func if isinstance(exc, ast.Call) else exc
    return isinstance(exc, ast.Name) and exc.id == "NotImplementedError"


def _has_placeholder(expr: ast.AST) -> bool:
    """``...`` as the value or as an element of a literal tuple, list, set or dict: an answer to fill in."""
    if isinstance(expr, ast.Constant):
        return expr.value is Ellipsis
    if isinstance(expr, (ast.Tuple, ast.List, ast.Set)):
        return any(_has_placeholder(e) for e in expr.elts)
    if isinstance(expr, ast.Dict):
        return any(_has_placeholder(e) for e in expr.values if e is not None)
    return False


def placeholder_name(stmt: ast.stmt) -> str | None:
    """``name`` when ``stmt`` is an answer to fill in, ``name = ...`` (at a cell's top level), else None."""
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
        return stmt.targets[0].id if _has_placeholder(stmt.value) else None
    return None


def checker_modules(trees: list[ast.Module]) -> dict[str, str]:
    """Names bound to an exercises module, and the module: ``{"ex": "nb01_masks"}`` for
    ``from transformer_course.exercises import nb01_masks as ex``."""
    modules = {}
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == EXERCISES_MODULE:
                modules |= {a.asname or a.name: a.name for a in node.names}
            elif isinstance(node, ast.Import):
                modules |= {
                    a.asname: a.name.removeprefix(EXERCISES_MODULE + ".")
                    for a in node.names
                    if a.asname and a.name.startswith(EXERCISES_MODULE + ".")
                }
    return modules


def checker_aliases(trees: list[ast.Module]) -> set[str]:
    """Names bound to an exercises module: ``ex`` in ``from transformer_course.exercises import nb01_masks as ex``."""
    return set(checker_modules(trees))


def points_of(call: ast.Call, to_write: set[str]) -> int:
    """The points of one checker call (:data:`POINTS_RULE`): 2 when it is given a function or class the learner
    writes (``to_write``), else 1."""
    arguments = [*call.args, *(k.value for k in call.keywords)]
    return 2 if any(isinstance(a, ast.Name) and a.id in to_write for a in arguments) else 1


def _offset(lines: list[str], lineno: int, col: int) -> int:
    """ast's (1-based line, UTF-8 byte column) → an index into "\n".join(lines)."""
    before = sum(len(line) + 1 for line in lines[: lineno - 1])
    return before + len(lines[lineno - 1].encode("utf-8")[:col].decode("utf-8"))


def _unconditional(stmt: ast.stmt) -> set[int]:
    """ids of the expressions of a top-level statement that run whenever the statement runs."""
    roots = {
        ast.Expr: lambda s: [s.value],
        ast.Assign: lambda s: [s.value],
        ast.AnnAssign: lambda s: [s.value] if s.value else [],
        ast.If: lambda s: [s.test],
        ast.Assert: lambda s: [s.test],
    }.get(type(stmt), lambda s: [])(stmt)
    seen, todo = set(), list(roots)
    while todo:
        expr = todo.pop()
        seen.add(id(expr))
        if isinstance(expr, ast.BoolOp):
            todo.append(expr.values[0])  # the others may be skipped by `and` / `or`
        elif isinstance(expr, ast.Call):
            todo += [*expr.args, *(k.value for k in expr.keywords)]
        elif isinstance(expr, (ast.UnaryOp, ast.Starred, ast.FormattedValue)):
            todo.append(getattr(expr, "operand", None) or expr.value)
        elif isinstance(expr, (ast.BinOp, ast.Compare)):
            todo.append(expr.left)
        elif isinstance(expr, (ast.Tuple, ast.List, ast.JoinedStr)):
            todo += list(getattr(expr, "elts", None) or expr.values)
    return seen


def is_check(node: ast.AST, aliases: set[str]) -> bool:
    """``ex.check_…(…)``, ``ex`` one of ``aliases`` (names bound to an exercises module)."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id in aliases
        and node.func.attr.startswith("check_")
    )


def validate_checks(where: str, stmt: ast.stmt, aliases: set[str]) -> None:
    """A top-level statement's checker calls must each run exactly once, on names, not on ``...`` to fill in."""
    safe = _unconditional(stmt)
    for call in (n for n in ast.walk(stmt) if is_check(n, aliases)):
        text = f"{call.func.value.id}.{call.func.attr}(...)"
        if any(is_check(n, aliases) for arg in [*call.args, *call.keywords] for n in ast.walk(arg)):
            raise ConventionError(f"{where}: a checker call inside {text}; call them one by one")
        if any(isinstance(n, ast.Constant) and n.value is Ellipsis for n in ast.walk(call)):
            raise ConventionError(
                f"{where}: {text} is given a `...` to fill in, but checker cells are read-only in "
                "the classroom; write the answers as `name = ...` lines above it and pass the names"
            )
        if id(call) not in safe:
            raise ConventionError(
                f"{where}: {text} sits where it may not run (in a loop, a function, an `if` body "
                "or after `and`/`or`); make it a statement of its own or the condition of an `if`"
            )


def fixed_answers(text: str, aliases: set[str]) -> list[str]:
    """Names given to a checker that the same (read-only) cell assigns a literal value: in the classroom the learner
    could not change them (``predicted = {"q": None}`` then ``ex.check_shapes(predicted)``)."""
    tree = ast.parse(python_lines(text))
    literal = set()
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and all(isinstance(t, ast.Name) for t in stmt.targets):
            try:
                ast.literal_eval(stmt.value)
            except ValueError:
                continue
            literal |= {t.id for t in stmt.targets}
    given = {
        a.id
        for n in ast.walk(tree)
        if is_check(n, aliases)
        for a in [*n.args, *(k.value for k in n.keywords)]
        if isinstance(a, ast.Name)
    }
    return sorted(literal & given)


HIDDEN = """### BEGIN HIDDEN TESTS
def _tc_grade(cell):  # the grade, from fresh copies of the checkers (course_tools/classroom/verdict.py)
    import importlib.util, sys
    finders = [getattr(finder, "find_spec", None) for finder in sys.meta_path]
    home, tools = (
        next(s for find in finders if find and (s := find(name, None))).submodule_search_locations[0]
        for name in ("transformer_course", "course_tools")
    )
    spec = importlib.util.spec_from_file_location("_tc_verdict", f"{{tools}}/classroom/verdict.py")
    verdict = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(verdict)
    return verdict.grade(home, globals(), cell)
_tc_score = _tc_grade(
{cell}
)
### END HIDDEN TESTS"""


def checker_digests(module: str) -> tuple[list[str], str]:
    """The answer digests of a checker module (what the hub wheel leaves out) and the SHA-256 of its file."""
    text = (CHECKERS / f"{module}.py").read_text(encoding="utf-8")
    if re.search(PLACEHOLDER_PATTERN, text):
        raise ConventionError(
            f"{CHECKERS / module}.py holds no answer digests (a hub wheel?): build the course with the full "
            "package (pip install -e . from the repository)"
        )
    return strip_digests(text)[1], hashlib.sha256(text.encode("utf-8")).hexdigest()


def graded_source(
    text: str,
    modules: dict[str, str],
    to_write: set[str],
    answers: set[str] = frozenset(),
) -> tuple[str, int, list[str], list[str]]:
    """A checker part of a cell as a graded cell: a hidden test first, which grades the cell with fresh copies of
    the checkers (:mod:`.verdict`: partial credit, nothing the student's cells rebound), then the cell's own text,
    the self-check the student runs while working; a cell that checks answers only (``name = ...``) runs it
    inside ``sealed()``, so that it tells the answers' form, not whether they are right. Returns the source, its
    points, the checkers called and the names given to them; a comment naming the solutions folder is dropped."""
    text = released_code(text)
    aliases = set(modules)
    tree = ast.parse(python_lines(text))
    calls = sorted((n for n in ast.walk(tree) if is_check(n, aliases)), key=lambda n: (n.lineno, n.col_offset))
    plan, checked, answer_only = [], [], True
    for call in calls:
        given = [a.id for a in [*call.args, *(k.value for k in call.keywords)] if isinstance(a, ast.Name)]
        checked += given
        answer_only = answer_only and bool(given) and set(given) <= set(answers)
        quiz = call.func.attr == "check_quiz" and call.keywords and not call.args
        plan.append([call.func.attr, len(call.keywords) if quiz else points_of(call, to_write)])
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} & aliases
    cell = {"text": python_lines(text), "aliases": {a: modules[a] for a in sorted(used)}, "calls": plan}
    found = {m: checker_digests(m) for m in sorted(set(cell["aliases"].values()))}
    cell["digests"] = {m: d for m, (d, _) in found.items()}
    cell["sha"] = {m: sha for m, (_, sha) in found.items()}
    points = sum(p for _, p in plan)
    unit = f"{points} point{'s' if points > 1 else ''}"
    if answer_only:
        header = (
            f"# graded cell, {unit}: here only your answers' form is checked; whether they are right, "
            "when your work is graded"
        )
        visible = "from transformer_course.exercises import sealed\n\nwith sealed():\n" + textwrap.indent(
            text.strip("\n"), "    "
        )
    else:
        header = f"# graded cell, {unit}: run it to check your work; the same checks, run afresh, grade it"
        visible = text.strip("\n")
    hidden = HIDDEN.format(cell=textwrap.indent(pprint.pformat(cell, width=110, sort_dicts=False), "    "))
    return "\n".join([header, hidden, visible]), points, [c.func.attr for c in calls], checked


def nbgrader_metadata(grade_id: str, solution: bool = False, points: int | None = None) -> dict:
    """nbgrader's cell metadata (schema 3): a solution cell the learner edits, or a locked graded cell."""
    graded = points is not None
    extra = {"points": points} if graded else {}
    return {
        "grade": graded,
        "grade_id": grade_id,
        "locked": graded,
        **extra,
        "schema_version": 3,
        "solution": solution,
        "task": False,
    }


def split_line(lines: list[str], stmt: ast.stmt) -> int:
    """The 0-based line where the checker part of a cell starts: the statement, with the comments just above it."""
    start = stmt.lineno - 1
    while start > 0 and lines[start - 1].strip().startswith("#"):
        start -= 1
    return start

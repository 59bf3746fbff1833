"""One course notebook → one nbgrader *source* notebook (the convention is in :mod:`course_tools.classroom`).

Exercise cells become solution cells: the learner's lines, then the reference code between ``### BEGIN SOLUTION``
and ``### END SOLUTION`` (nbgrader's release hides it). Checker cells become read-only graded cells, graded by a
hidden test (:mod:`.verdict`); a cell holding both is split in two. Markdown loses its solution links."""

from __future__ import annotations

import ast
import copy
import re
from dataclasses import dataclass, field

from .build_cells import build_file, build_stubs, solve_build_cell
from .cells import (
    checker_modules,
    fixed_answers,
    graded_source,
    is_check,
    is_stub_raise,
    nbgrader_metadata,
    parse_cell,
    placeholder_name,
    python_lines,
    split_line,
    validate_checks,
)
from .reference import (
    BUILTINS,
    ConventionError,
    ReferenceModule,
    loaded_names,
    parameter_names,
    stored_names,
    top_level_names,
)
from .release_text import released_cell

__all__ = ["Conversion", "GradedCell", "SolutionCell", "build_file", "build_stubs", "convert_notebook"]

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"


@dataclass
class SolutionCell:  # its names: what the learner writes in it (functions, classes, answers)
    grade_id: str
    names: list[str]


@dataclass
class GradedCell:
    grade_id: str
    points: int
    checks: list[str]  # the checkers it calls
    given: list[str]  # the names it gives them: the exercises it grades


@dataclass
class Conversion:
    """The source notebook (an nbformat NotebookNode) and what it grades."""

    notebook: object
    solutions: list[SolutionCell] = field(default_factory=list)
    graded: list[GradedCell] = field(default_factory=list)

    @property
    def points(self) -> int:
        return sum(cell.points for cell in self.graded)


class _Notebook:
    """The conversion of one notebook; ``where(index)`` names a cell in error messages."""

    def __init__(self, nb, name: str, reference: ReferenceModule | None):
        self.nb, self.name, self.reference = nb, name, reference
        self.number = name[:2]
        self.trees = [parse_cell(c.source) if c.cell_type == "code" else None for c in nb.cells]
        self.modules = checker_modules([t for t in self.trees if t is not None])
        self.aliases = set(self.modules)
        self.to_write: set[str] = set()  # functions and classes the learner writes
        self.answers: set[str] = set()  # `name = ...` placeholders
        self.checked: set[str] = set()  # names passed to a checker
        self.grade_ids: set[str] = set()
        self.given: dict[str, list[tuple[str, str | None]]] = {}  # answer → (checker subject, keyword or None)
        for node in (n for t in self.trees if t is not None for n in ast.walk(t) if is_check(n, self.aliases)):
            subject = node.func.attr.removeprefix("check_")
            for key, arg in [*((None, a) for a in node.args), *((k.arg, k.value) for k in node.keywords)]:
                if isinstance(arg, ast.Name):
                    self.given.setdefault(arg.id, []).append((subject, key))

    def where(self, index: int) -> str:
        cell_id = self.nb.cells[index].get("id")
        return f"{self.name} cell {index}" + (f" (id {cell_id})" if cell_id else "")

    def grade_id(self, name: str) -> str:
        base = re.sub(r"[^A-Za-z0-9_-]", "_", f"nb{self.number}-{name}")
        grade_id, n = base, 1
        while grade_id in self.grade_ids:
            n += 1
            grade_id = f"{base}-{n}"
        self.grade_ids.add(grade_id)
        return grade_id

    def bound_before(self, index: int) -> set[str]:
        """Names the notebook's cells up to ``index`` bind at top level (imports, functions, variables)."""
        return top_level_names([s for t in self.trees[: index + 1] if t is not None for s in t.body])

    # --- what a cell holds ------------------------------------------------------------------------------------
    def kinds(self, index: int, tree: ast.Module) -> list[str]:
        """One word per top-level statement: "stub", "answer", "check" or "other"; errors for broken conventions."""
        kinds = []
        for stmt in tree.body:
            checks = [n for n in ast.walk(stmt) if is_check(n, self.aliases)]
            stub = isinstance(stmt, (ast.FunctionDef, ast.ClassDef)) and any(map(is_stub_raise, ast.walk(stmt)))
            if checks:
                validate_checks(self.where(index), stmt, self.aliases)
                kinds.append("check")
            elif stub:
                kinds.append("stub")
            elif placeholder_name(stmt):
                kinds.append("answer")
            elif any(map(is_stub_raise, ast.walk(stmt))):
                raise ConventionError(
                    f"{self.where(index)}: `raise NotImplementedError` outside a function or class stub (line "
                    f"{stmt.lineno}); an exercise is a `def`/`class` whose body ends with it"
                )
            else:
                kinds.append("other")
        if "check" in kinds and any(k in ("stub", "answer") for k in kinds[kinds.index("check") :]):
            raise ConventionError(
                f"{self.where(index)}: an exercise comes after a checker call in the same cell; "
                "put the exercise first (or in its own cell) and the checker after it"
            )
        return kinds

    # --- solution cells ----------------------------------------------------------------------------------------
    def solution_source(self, index: int, text: str, reference: ReferenceModule | None = None) -> tuple[str, list[str]]:
        """The exercise part of a cell with the reference code between the markers, and the names written;
        ``reference``: a build cell's file (``solutions/my_transformer/<file>``), bound by its own imports."""
        tree, saved = ast.parse(python_lines(text)), self.reference
        bound = top_level_names(tree.body) if reference is not None else self.bound_before(index)
        self.reference = reference or saved
        try:
            return self.solution_source_in(index, text.split("\n"), tree, bound)
        finally:
            self.reference = saved

    def solution_source_in(self, index: int, lines: list[str], tree: ast.Module, bound: set[str]):
        edits: list[tuple[int, int, list[str]]] = []  # (first line, last line + 1, replacement), 0-based
        names: list[str] = []
        group: list[ast.Assign] = []
        for stmt in [*tree.body, None]:
            name = placeholder_name(stmt) if stmt is not None else None
            if name:
                group.append(stmt)
                continue
            if group:  # answers: keep the learner's `name = ...` lines, the reference values after them
                answers = [placeholder_name(s) for s in group]
                values = [(n, self.reference.value(n, self.given.get(n, []))) for n in answers]
                needed = loaded_names([v for _, v in values]) - BUILTINS
                body = [f"{n} = {self.reference.segment(v)}" for n, v in values]
                edits.append((group[-1].end_lineno, group[-1].end_lineno, self.region(index, "", needed, bound, body)))
                names += [n for n, _ in values]
                self.answers |= {n for n, _ in values}
                group = []
            if isinstance(stmt, ast.FunctionDef) and any(map(is_stub_raise, ast.walk(stmt))):
                reference = self.reference.definition(stmt.name, ast.FunctionDef)
                edits.append(self.function_edit(index, lines, stmt, reference, bound))
                names.append(stmt.name)
            elif isinstance(stmt, ast.ClassDef) and any(map(is_stub_raise, ast.walk(stmt))):
                reference = self.reference.definition(stmt.name, ast.ClassDef)
                edits += self.class_edits(index, lines, stmt, reference, bound)
                names.append(stmt.name)
        self.to_write |= {n for n in names if n not in self.answers}
        for first, stop, replacement in sorted(edits, reverse=True):
            lines[first:stop] = replacement
        return "\n".join(lines), names

    def region(self, index: int, indent: str, needed: set[str], bound: set[str], body: list[str]) -> list[str]:
        """The marked solution region: the imports the reference code needs that the notebook lacks, then the code."""
        imports = self.reference.imports()
        helpers = sorted(needed & self.reference.defined() - bound - set(imports))
        if helpers:
            raise ConventionError(
                f"{self.where(index)}: the reference code uses {', '.join(helpers)} from {self.reference.path.name}, "
                "which the notebook does not define; define it in the notebook or inline it in the reference"
            )
        extra = [indent + imports[n] for n in sorted(needed - bound) if n in imports]
        return [indent + BEGIN, *extra, *body, indent + END]

    def function_edit(self, index, lines, stub: ast.FunctionDef, reference: ast.FunctionDef, bound):
        """Replace the stub's ``raise NotImplementedError`` line by the reference body (minus what the stub shows)."""
        if parameter_names(stub) != parameter_names(reference):
            raise ConventionError(
                f"{self.where(index)}: {stub.name}({', '.join(parameter_names(stub))}) and the reference "
                f"{stub.name}({', '.join(parameter_names(reference))}) in {self.reference.path.name} name their "
                "parameters differently; use the same names"
            )
        body = stub.body[1:] if ast.get_docstring(stub) is not None else stub.body
        raise_stmt, shown = body[-1], body[:-1]
        if not is_stub_raise(raise_stmt) or raise_stmt.lineno == stub.lineno:
            raise ConventionError(
                f"{self.where(index)}: the stub {stub.name} must end with `raise NotImplementedError` on a line of "
                "its own (after the docstring and any lines the learner keeps)"
            )
        line = lines[raise_stmt.lineno - 1]
        indent = line[: len(line) - len(line.lstrip())]
        ref_body = reference.body[1:] if ast.get_docstring(reference) is not None else reference.body
        if [ast.dump(s) for s in ref_body[: len(shown)]] != [ast.dump(s) for s in shown] or len(ref_body) == len(shown):
            raise ConventionError(
                f"{self.where(index)}: the lines of the stub {stub.name} before `raise NotImplementedError` must be the "
                f"first lines of the reference in {self.reference.path.name}, followed by the rest of the solution"
            )
        rest = ref_body[len(shown) :]
        needed = loaded_names(rest) - stored_names([reference]) - BUILTINS
        code = self.reference.statements_text(rest, indent)
        return raise_stmt.lineno - 1, raise_stmt.end_lineno, self.region(index, indent, needed, bound, code)

    def class_edits(self, index, lines, stub: ast.ClassDef, reference: ast.ClassDef, bound):
        """Each stub method that raises NotImplementedError gets the reference method's body."""
        methods = {s.name: s for s in reference.body if isinstance(s, ast.FunctionDef)}
        stubbed = {s.name for s in stub.body if isinstance(s, ast.FunctionDef)}
        missing = sorted(set(methods) - stubbed)
        if missing:
            raise ConventionError(
                f"{self.where(index)}: the reference class {stub.name} has methods the stub lacks: "
                f"{', '.join(missing)}; add them to the stub (ending with `raise NotImplementedError`)"
            )
        edits = []
        for method in stub.body:
            if isinstance(method, ast.FunctionDef) and any(map(is_stub_raise, ast.walk(method))):
                if method.name not in methods:
                    raise ConventionError(
                        f"{self.where(index)}: the reference class {stub.name} has no method {method.name}; "
                        "give stub and reference the same methods"
                    )
                edits.append(self.function_edit(index, lines, method, methods[method.name], bound))
        return edits


def convert_notebook(
    nb, name: str, reference: ReferenceModule | None, build_references: dict[str, ReferenceModule] | None = None
) -> Conversion:
    """Convert ``nb`` (an nbformat v4 notebook, left unchanged) named ``name`` ("01_masks.ipynb") with its reference
    solutions (None when it has no exercises) into an nbgrader source notebook; ``build_references``: file → the
    reference of a build cell, whose stubs become solution regions too (:mod:`.build_cells`)."""
    state = _Notebook(nb, name, reference)
    result = Conversion(copy.deepcopy(nb))
    result.notebook.cells = []
    builds: list[SolutionCell] = []  # the build cells: one name of each must be checked
    for index, cell in enumerate(nb.cells):
        cell = copy.deepcopy(cell)
        if cell.cell_type != "code":
            result.notebook.cells.append(released_cell(cell))  # markdown: no link to the solutions (release_text)
            continue
        cell.outputs, cell.execution_count = [], None
        tree = state.trees[index]
        file = build_file(cell.source)
        if file is not None and build_stubs(cell.source):  # a build cell: its stubs are solution regions
            builds.append(SolutionCell(*solve_build_cell(state, index, cell, file, build_references or {}, name)))
            result.notebook.cells.append(cell), result.solutions.append(builds[-1])
            continue
        if tree is None:
            if "NotImplementedError" in cell.source or any(f"{a}.check_" in cell.source for a in state.aliases):
                raise ConventionError(
                    f"{state.where(index)}: an exercise or checker in a cell that is not plain Python (a %% magic?); "
                    "exercises and checkers go in plain Python cells"
                )
            result.notebook.cells.append(cell)
            continue
        kinds = state.kinds(index, tree)
        if not {"stub", "answer", "check"} & set(kinds):
            result.notebook.cells.append(cell)
            continue
        if {"stub", "answer"} & set(kinds) and reference is None:
            raise ConventionError(f"{state.where(index)}: an exercise, but no solutions module for {name}")
        lines = cell.source.split("\n")
        split = split_line(lines, tree.body[kinds.index("check")]) if "check" in kinds else len(lines)
        exercise_text, check_text = "\n".join(lines[:split]).strip("\n"), "\n".join(lines[split:]).strip("\n")
        source = None
        if exercise_text:
            try:
                source, names = state.solution_source(index, exercise_text)
            except ConventionError as error:
                if str(error).startswith(name):
                    raise
                raise ConventionError(f"{state.where(index)}: {error}") from None
            if not names:  # setup lines before a checker (imports, data): they stay with it, read-only
                check_text, source = "\n".join([exercise_text, check_text]), None
            if source is not None:
                solution = copy.deepcopy(cell)
                solution.source = source
                grade_id = state.grade_id(names[0])
                solution.metadata["nbgrader"] = nbgrader_metadata(grade_id, solution=True)
                result.notebook.cells.append(solution)
                result.solutions.append(SolutionCell(grade_id, names))
        if check_text:
            graded = copy.deepcopy(cell)
            if source is not None and graded.get("id"):  # split in two: the graded half gets an id of its own
                graded.id = f"{graded.id}-graded"[-64:]
            if fixed := fixed_answers(check_text, state.aliases):
                raise ConventionError(
                    f"{state.where(index)}: {', '.join(fixed)} is written in the checker's cell, which is read-only in "
                    "the classroom; make it an answer line `name = ...` (or with `...` entries) above the checker call"
                )
            made = graded_source(check_text, state.modules, state.to_write, state.answers)
            graded.source, points, checks, checked = made
            state.checked |= set(checked)
            grade_id = state.grade_id(checks[0])
            graded.metadata["nbgrader"] = nbgrader_metadata(grade_id, points=points)
            result.notebook.cells.append(graded)
            result.graded.append(GradedCell(grade_id, points, checks, checked))
    unchecked = sorted((state.to_write - {n for b in builds for n in b.names} | state.answers) - state.checked)
    unchecked += [f"{b.names[0]} (or another name of its cell)" for b in builds if not set(b.names) & state.checked]
    if unchecked:
        raise ConventionError(
            f"{name}: no checker is given {', '.join(unchecked)}, so nothing grades it; "
            "pass each exercise to a checker (ex.check_...(name)) in a cell after it"
        )
    return result

"""No answer in reach: nothing a learner imports passes a checker.

For every checker module ``transformer_course/exercises/nbNN_*.py`` this feeds every attribute of the module
(public and private, module-level, and the values one level down inside its dict, list, tuple and set
constants), and the package's functions and classes that share a name with what the learner writes in that
notebook (``transformer_course.<name>``, and the package's own piece of a learner's file, e.g.
``transformer_course.model.<name>``, what a fallback imports), to every ``check_*`` function
of the module, in each parameter position (a quiz checker: each of its questions), with the other parameters
filled with the reference answers from ``notebooks/solutions/nbNN_*.py``. Every such call must fail.

A leak is reported as ``module.check_x(param=<attribute>) passed``. A module known to leak can be listed in
KNOWN_LEAKS (strict xfail: a listed module that stops leaking fails here, so the list cannot go stale).
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import importlib.util
import inspect
import io
from pathlib import Path

import pytest

import transformer_course as tc
from transformer_course import attention, layers, model
from transformer_course.learner import NAMES

REPO = Path(__file__).resolve().parent.parent
SOLUTIONS = REPO / "notebooks" / "solutions"
NOTEBOOKS = REPO / "notebooks"
MODULES = sorted(p.stem for p in (REPO / "transformer_course" / "exercises").glob("nb[0-9][0-9]_*.py"))
BUILD_FILES = {"02": ["attention.py"], "03": ["multi_head.py"], "04": ["norm_residual.py"], "05": ["embeddings.py"]}
BUILD_FILES |= {"06": ["encoder.py"], "07": ["decoder.py"]}

# Checker modules known to leak (none). strict=True: a listed module that no longer leaks fails here.
KNOWN_LEAKS: set[str] = set()


def solutions_module(name: str):
    """notebooks/solutions/<name>.py, run as a module (the reference answers), or None."""
    path = SOLUTIONS / f"{name}.py"
    if not path.is_file():
        return None
    spec = importlib.util.spec_from_file_location(f"_reference_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def learner_names(number: str) -> set[str]:
    """What the learner writes in notebook ``number``: its stubs' names, its answers' names, its build files' names."""
    import nbformat

    from course_tools.classroom.cells import is_stub_raise, parse_cell, placeholder_name

    names = {n for file in BUILD_FILES.get(number, []) for n in NAMES[file]}
    for path in NOTEBOOKS.glob(f"{number}_*.ipynb"):
        for cell in nbformat.read(path, as_version=4).cells:
            tree = parse_cell(cell.source) if cell.cell_type == "code" else None
            for stmt in tree.body if tree is not None else []:
                if isinstance(stmt, (ast.FunctionDef, ast.ClassDef)) and any(map(is_stub_raise, ast.walk(stmt))):
                    names.add(stmt.name)
                elif placeholder_name(stmt):
                    names.add(placeholder_name(stmt))
    return names


def candidates(module, number: str) -> list[tuple[str, object]]:
    """(label, value): every attribute, the values one level down in its containers, the package's namesakes."""
    found = []
    for name, value in vars(module).items():
        if name.startswith("__") and name.endswith("__"):
            continue
        found.append((name, value))
        if isinstance(value, dict):
            found += [(f"{name}[{k!r}]", v) for k, v in value.items()]
            found += [(f"{name} key {k!r}", k) for k in value]
        elif isinstance(value, (list, tuple, set, frozenset)):
            found += [(f"{name}[{i}]", v) for i, v in enumerate(value)]
    for name in sorted(learner_names(number)):
        for owner in (tc, attention, layers, model):
            if hasattr(owner, name):
                found.append((f"{owner.__name__}.{name}", getattr(owner, name)))
    return found


def reference_value(solutions, checker: str, parameter: str):
    """The reference answer for ``parameter`` of ``checker`` (``check_x``): solutions' ``parameter``,
    ``PARAMETER``, ``x``, ``X``, or ``QUIZ[parameter]``; ``...`` when it has none."""
    subject = checker.removeprefix("check_")
    for name in (parameter, parameter.upper(), subject, subject.upper()):
        if solutions is not None and hasattr(solutions, name):
            return getattr(solutions, name)
    quiz = getattr(solutions, "QUIZ", {}) if solutions is not None else {}
    return quiz.get(parameter, ...)


def positions(module, checker, solutions) -> list[str]:
    """The parameters to feed: the named ones; for ``**answers``, the quiz's questions (the solutions' QUIZ keys, or
    else the module's QUESTIONS keys: a module's QUESTIONS may hold locked answers of other exercises too)."""
    names = []
    for parameter in inspect.signature(checker).parameters.values():
        if parameter.kind is inspect.Parameter.VAR_KEYWORD:
            names += list(getattr(solutions, "QUIZ", None) or getattr(module, "QUESTIONS", {}))
        elif parameter.kind is not inspect.Parameter.VAR_POSITIONAL:
            names.append(parameter.name)
    return names


def call(checker, answers: dict) -> bool:
    """The checker's verdict on ``answers`` (printed lines swallowed; an exception is a fail)."""
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            return bool(checker(**answers))
        except Exception:
            return False


def leaks(name: str) -> list[str]:
    module = importlib.import_module(f"transformer_course.exercises.{name}")
    solutions = solutions_module(name)
    checkers = {n: f for n, f in vars(module).items() if n.startswith("check_") and inspect.isfunction(f)}
    found = []
    for label, value in candidates(module, name[2:4]):
        for checker_name, checker in checkers.items():
            params = positions(module, checker, solutions)
            reference = {p: reference_value(solutions, checker_name, p) for p in params}
            for param in params:
                if call(checker, {**reference, param: value}):
                    found.append(f"{name}.{checker_name}({param}={label}) passed")
            if len(params) > 1 and call(checker, dict.fromkeys(params, value)):
                found.append(f"{name}.{checker_name}(every parameter = {label}) passed")
    return found


@pytest.mark.slow
@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.xfail(strict=True, reason="rewrite not landed yet"))
        if n in KNOWN_LEAKS
        else n
        for n in MODULES
    ],
)
def test_no_attribute_of_a_checker_module_passes_its_checkers(name):
    found = leaks(name)
    assert not found, f"{len(found)} answer(s) in reach in {name}:\n" + "\n".join(found)


def test_the_probe_finds_a_planted_answer(monkeypatch):
    """The probe itself: an answer planted in a checker module is found."""
    module = importlib.import_module("transformer_course.exercises.nb00_introduction")
    solutions = solutions_module("nb00_introduction")
    monkeypatch.setattr(module, "_planted", solutions.attention_layer_macs, raising=False)
    assert "nb00_introduction.check_attention_layer_macs(attention_layer_macs=_planted) passed" in leaks(
        "nb00_introduction"
    )

"""Grading a teacher can trust, in-process: sealed answers (exercises/seal.py) and the hidden tests'
verdict (classroom/verdict.py). The same, end to end with the real nbgrader, is in tests/test_classroom.py."""

from __future__ import annotations

import ast
import sys
import types
from pathlib import Path

import pytest

import transformer_course
from course_tools.classroom import verdict
from course_tools.classroom.cells import checker_digests, checker_modules, is_check, parse_cell, placeholder_name
from transformer_course.exercises import nb01_masks, nb02_attention, seal, sealed, unsealed

HOME = str(Path(transformer_course.__file__).parent)
RIGHT = {"q1": 2, "q2": "b", "q3": 2560}  # notebooks/solutions/nb01_masks.py's QUIZ
QUIZ_CELL = {
    "text": "ex.check_quiz(q1=q1, q2=q2, q3=q3);",
    "aliases": {"ex": "nb01_masks"},
    "calls": [["check_quiz", 3]],
}
# checkers given answers that are not a small set to try one by one: inputs the learner builds to expose a bug
NOT_ENUMERABLE = {"check_exposing_inputs", "check_counterexample", "check_exposes_bug"}


def test_sealed_answers_tell_their_form_but_never_whether_they_are_right(capsys):
    with sealed():
        right = nb01_masks.check_quiz(**RIGHT)
        wrong = nb01_masks.check_quiz(q1=3, q2="a", q3=1)
        form = nb01_masks.check_quiz(q1="two", q2="z", q3=...)
    out = capsys.readouterr().out
    assert not right and right.sealed and wrong.sealed and not form and "✅" not in out
    assert repr(right) == repr(wrong)  # a right and a wrong answer look the same
    lines = out.splitlines()
    assert sum(line.startswith("🔒 q") for line in lines) == 6  # right and wrong: noted
    assert any("❌ q1" in line and "number" in line for line in lines)  # the form is told
    assert any("❌ q2" in line and "one of the letters" in line for line in lines)
    assert any("❌ q3" in line and "not done yet" in line for line in lines)
    assert nb01_masks.check_quiz(**RIGHT)  # outside the block: the self-study checker, at once


def test_an_install_with_the_sealed_marker_seals_answers_until_unsealed(tmp_path, monkeypatch, capsys):
    marker = tmp_path / "SEALED"
    marker.touch()
    monkeypatch.setattr(seal, "MARKER", marker)
    assert nb02_attention.check_bug_lines([1]).sealed
    with unsealed():
        result = nb02_attention.check_bug_lines([1])
    assert not result and not result.sealed and "❌" in capsys.readouterr().out


def test_a_digest_the_hub_wheel_left_out_gives_no_verdict(monkeypatch, capsys):
    from transformer_course.exercises import Choice, check_question

    question = Choice(key="t-q", salt="sealed:0", letters="ab", locked={})
    with unsealed():
        assert check_question("q", question, "a").sealed
    assert "🔒" in capsys.readouterr().out


def test_the_hub_wheels_placeholders_go_back_to_the_very_file_the_course_was_built_with():
    text = (Path(HOME) / "exercises" / "nb02_attention.py").read_text(encoding="utf-8")
    stripped, digests = verdict.strip_digests(text)
    assert len(digests) >= 4 and not any(d in stripped for d in digests)
    assert verdict.restore_digests(stripped, digests) == text
    assert checker_digests("nb02_attention") == (digests, __import__("hashlib").sha256(text.encode()).hexdigest())


def answer_only_checkers() -> dict[str, set[str]]:
    """module → the checkers a notebook gives only answers (``name = ...``) to."""
    found: dict[str, set[str]] = {}
    import nbformat

    for path in sorted((Path(HOME).parent / "notebooks").glob("[01]*.ipynb")):
        trees = [
            t
            for c in nbformat.read(path, as_version=4).cells
            if c.cell_type == "code"
            for t in [parse_cell(c.source)]
            if t
        ]
        modules = checker_modules(trees)
        answers = {placeholder_name(s) for t in trees for s in t.body} - {None}
        for node in (n for t in trees for n in ast.walk(t) if is_check(n, set(modules))):
            given = [a.id for a in [*node.args, *(k.value for k in node.keywords)] if isinstance(a, ast.Name)]
            if given and set(given) <= answers:
                found.setdefault(modules[node.func.value.id], set()).add(node.func.attr)
    return found


def test_every_checker_of_answers_is_marked_so_that_it_can_be_sealed():
    import importlib

    found = answer_only_checkers()
    assert sum(map(len, found.values())) >= 20
    unmarked = [
        f"{module}.{name}"
        for module, names in found.items()
        for name in sorted(names - NOT_ENUMERABLE)
        if not getattr(
            getattr(importlib.import_module(f"transformer_course.exercises.{module}"), name), "answer_check", False
        )
    ]
    assert not unmarked, f"mark these @answer_check (exercises/seal.py): {unmarked}"


# --- the verdict of a graded cell -----------------------------------------------------------------------------------


class AlwaysRight:
    def __getattr__(self, name):
        return lambda *args, **kwargs: True


def test_the_verdict_grades_each_answer_with_fresh_checkers_and_gives_partial_credit(capsys):
    assert verdict.grade(HOME, dict(RIGHT, ex=nb01_masks), QUIZ_CELL) == 3
    assert verdict.grade(HOME, dict(RIGHT, q2="a", ex=nb01_masks), QUIZ_CELL) == 2
    assert verdict.grade(HOME, {"ex": nb01_masks, "q1": ..., "q2": ..., "q3": ...}, QUIZ_CELL) == 0
    out = capsys.readouterr().out
    assert "graded: 3 of 3 points" in out and "graded: 2 of 3 points" in out and "graded: 0 of 3 points" in out


def test_a_rebound_ex_a_monkeypatched_checker_and_a_fake_sys_modules_entry_score_zero(monkeypatch, capsys):
    wrong = {"q1": 0, "q2": "a", "q3": 0}
    assert verdict.grade(HOME, dict(wrong, ex=AlwaysRight()), QUIZ_CELL) == 0
    monkeypatch.setattr(nb01_masks, "check_quiz", lambda **answers: True)
    monkeypatch.setattr(transformer_course.exercises.Result, "__bool__", lambda self: True)
    assert verdict.grade(HOME, dict(wrong, ex=nb01_masks), QUIZ_CELL) == 0
    fake = types.ModuleType("transformer_course.exercises.nb01_masks")
    fake.__getattr__ = lambda name: lambda *args, **kwargs: True
    monkeypatch.setitem(sys.modules, "transformer_course.exercises.nb01_masks", fake)
    monkeypatch.setitem(sys.modules, "transformer_course.exercises", fake)
    assert verdict.grade(HOME, dict(wrong, ex=fake), QUIZ_CELL) == 0
    assert sys.modules["transformer_course.exercises.nb01_masks"] is fake  # the student's modules come back
    assert "graded: 0 of 3 points" in capsys.readouterr().out


def test_what_the_students_code_prints_or_displays_cannot_become_the_cells_result(monkeypatch, capsys):
    shown = []
    shell = types.SimpleNamespace(displayhook=lambda value: shown.append(value))
    monkeypatch.setattr(verdict, "_shell", lambda: shell)

    def local_mask(size, window):  # forges a result and writes to stderr, then is wrong
        sys.displayhook(2)
        shell.displayhook(2)
        print("noise", file=sys.stderr)
        raise RuntimeError("wrong")

    cell = {
        "text": "ex.check_local_mask(local_mask)",
        "aliases": {"ex": "nb01_masks"},
        "calls": [["check_local_mask", 2]],
    }
    assert verdict.grade(HOME, {"ex": nb01_masks, "local_mask": local_mask}, cell) == 0
    assert shown == [0]  # only the grade is displayed
    out, err = capsys.readouterr()
    assert err == "" and "noise" in out and "graded: 0 of 2 points" in out


def test_a_name_the_cell_needs_that_is_not_defined_scores_zero_with_one_line(capsys):
    cell = {
        "text": "ex.check_local_mask(local_mask)",
        "aliases": {"ex": "nb01_masks"},
        "calls": [["check_local_mask", 2]],
    }
    assert verdict.grade(HOME, {"ex": nb01_masks}, cell) == 0
    assert "local_mask is not defined: run the cell that defines it, then this one" in capsys.readouterr().out


def test_a_checker_file_that_is_not_the_one_the_course_was_built_with_is_refused(tmp_path, capsys):
    home = tmp_path / "transformer_course"
    import shutil

    shutil.copytree(HOME, home, ignore=shutil.ignore_patterns("__pycache__"))
    checker = home / "exercises" / "nb01_masks.py"
    stripped, digests = verdict.strip_digests(checker.read_text(encoding="utf-8"))
    checker.write_text(stripped + "\n# changed\n", encoding="utf-8")
    cell = dict(QUIZ_CELL, digests={"nb01_masks": digests}, sha={"nb01_masks": checker_digests("nb01_masks")[1]})
    assert verdict.grade(str(home), dict(RIGHT, ex=nb01_masks), cell) == 0
    assert "is not the checker this course was built with" in capsys.readouterr().out
    checker.write_text(stripped, encoding="utf-8")
    assert verdict.grade(str(home), dict(RIGHT, ex=nb01_masks), cell) == 3  # the hub wheel's file: graded right


@pytest.mark.parametrize("student_language", ["en", "zh"])
def test_the_verdict_speaks_the_notebooks_language(student_language, capsys):
    from transformer_course import i18n

    before = i18n.get_language()
    i18n.set_language(student_language)
    try:
        verdict.grade(HOME, dict(RIGHT, ex=nb01_masks), QUIZ_CELL)
    finally:
        i18n.set_language(before)
    out = capsys.readouterr().out
    assert ("批改结果" in out) == (student_language == "zh")


def test_a_cell_that_imports_its_checkers_itself_is_still_graded_with_the_fresh_copy(capsys):
    text = "from transformer_course.exercises import nb01_masks as ex\nex.check_quiz(q1=q1, q2=q2, q3=q3)"
    cell = dict(QUIZ_CELL, text=text)
    assert verdict.grade(HOME, dict(RIGHT, ex=AlwaysRight()), cell) == 3
    assert verdict.grade(HOME, {"ex": nb01_masks, "q1": 0, "q2": "a", "q3": 0}, cell) == 0

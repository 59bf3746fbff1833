"""The grade of one graded cell, computed by the cell's hidden test with fresh copies of the checkers.

In the nbgrader source a graded cell starts with a hidden test (``### BEGIN HIDDEN TESTS``, stripped from the
release, put back by ``nbgrader autograde``) that finds this file through the import system's finders (not through
``sys.modules``), loads it by path and calls :func:`grade`. So the grade never goes through a name the student's
cells could have rebound: :func:`grade`

- imports ``transformer_course`` afresh from its files, with the student's copies of its modules set aside (a
  rebound ``ex``, a monkeypatched checker, a replaced ``sys.modules`` entry are not used), answers unsealed, and,
  where the installation left a checker's digests out (the hub wheel), the digests the hidden test carries put back
  (the restored file must hash to the one the course was built with);
- runs the cell's own statements with each checker alias bound to the fresh module, the student's code inside the
  checks with its output captured (their prints come back as text; nothing it prints or displays can become the
  cell's result, nor reach stderr, which zeroes a cell);
- scores each check: its points when it passes; a quiz (``check_quiz``) one point per answer, each checked alone;
- prints ``graded: s of m points`` and makes ``s`` the cell's result (an ``execute_result``, the first output nbgrader
  reads: partial credit), before the cell's visible part runs.

This module imports nothing of the package at its top: it is loaded as a file. What it cannot stop (a student who
patches Python itself: ``builtins``, ``importlib``, the kernel) is said in docs/teaching.md.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.util
import io
import os
import sys

__all__ = [
    "FEEDBACK_CONFIG",
    "DIGEST_PATTERN",
    "PACKAGE",
    "PLACEHOLDER_PATTERN",
    "fresh_package",
    "grade",
    "restore_digests",
    "strip_digests",
]

PACKAGE = "transformer_course"
FEEDBACK_CONFIG = [  # nbgrader_config.py's lines: the feedback shows each cell's grade and hints, not its hidden test
    "# The feedback shows what each graded cell printed (its points and the checkers' hints), not its hidden test,",
    "# which holds the answers' digests.",
    "from nbgrader.preprocessors import ClearHiddenTests, GetGrades",
    "from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor",
    "c.GenerateFeedback.preprocessors = [GetGrades, CSSHTMLHeaderPreprocessor, ClearHiddenTests]",
]
DIGEST_PATTERN = r'"([0-9a-f]{24})"'  # a question's salt in a checker module (answer_key, questions(…, q1="…"))
PLACEHOLDER_PATTERN = r'"sealed:(\d+)"'  # the same, left out of the hub wheel


def _ours(name: str) -> bool:
    return name == PACKAGE or name.startswith(PACKAGE + ".")


def strip_digests(text: str) -> tuple[str, list[str]]:
    """A checker module's text with each answer digest replaced by ``"sealed:N"`` (the hub wheel), and the digests."""
    import re

    digests: list[str] = []

    def placeholder(match) -> str:
        digests.append(match.group(1))
        return f'"sealed:{len(digests) - 1}"'

    return re.sub(DIGEST_PATTERN, placeholder, text), digests


def restore_digests(text: str, digests: list[str] | None) -> str:
    """``text`` with each ``"sealed:N"`` placeholder of the hub wheel replaced by ``digests[N]``."""
    import re

    if not re.search(PLACEHOLDER_PATTERN, text):
        return text
    if not digests:
        raise RuntimeError("this checker's answers were left out of the installed package, and the test carries none")
    return re.sub(PLACEHOLDER_PATTERN, lambda m: f'"{digests[int(m.group(1))]}"', text)


def _load_restored(home: str, module: str, digests: list[str] | None, sha: str | None):
    """Import ``transformer_course.exercises.<module>`` from its file, digests put back, checked against ``sha``."""
    path = os.path.join(home, "exercises", module + ".py")
    with open(path, encoding="utf-8") as file:
        text = file.read()
    restored = restore_digests(text, digests)
    if restored is not text and sha and hashlib.sha256(restored.encode("utf-8")).hexdigest() != sha:
        raise RuntimeError(
            f"{path} is not the checker this course was built with: install the same transformer_course version "
            "for grading as for `python -m transformer_course classroom`"
        )
    name = f"{PACKAGE}.exercises.{module}"
    spec = importlib.util.spec_from_file_location(name, path)
    fresh = importlib.util.module_from_spec(spec)
    sys.modules[name] = fresh
    exec(compile(restored, path, "exec"), fresh.__dict__)
    return fresh


@contextlib.contextmanager
def fresh_package(home: str, modules: list[str], digests: dict | None = None, shas: dict | None = None):
    """Yield ``{module: fresh checker module}``, imported afresh from ``home``; inside the block the fresh copies
    are what ``sys.modules`` holds (a checker's own late imports find them), after it the student's come back."""
    saved = {name: sys.modules.pop(name) for name in [n for n in sys.modules if _ours(n)]}
    try:
        spec = importlib.util.spec_from_file_location(
            PACKAGE, os.path.join(home, "__init__.py"), submodule_search_locations=[home]
        )
        package = importlib.util.module_from_spec(spec)
        sys.modules[PACKAGE] = package
        spec.loader.exec_module(package)
        importlib.import_module(f"{PACKAGE}.exercises")
        checkers = {
            m: _load_restored(home, m, (digests or {}).get(m), (shas or {}).get(m)) for m in dict.fromkeys(modules)
        }
        language = getattr(saved.get(f"{PACKAGE}.i18n"), "get_language", lambda: "en")
        i18n = sys.modules[f"{PACKAGE}.i18n"]
        zh = importlib.util.spec_from_file_location(
            "_tc_verdict_zh", os.path.join(os.path.dirname(__file__), "zh_verdict.py")
        )
        catalogue = importlib.util.module_from_spec(zh)
        zh.loader.exec_module(catalogue)
        i18n.register("zh", catalogue.ZH)
        try:
            i18n.set_language(language())
        except Exception:  # a student's broken i18n: grade in English
            pass
        with sys.modules[f"{PACKAGE}.exercises.seal"].unsealed():
            yield checkers
    finally:
        for name in [n for n in sys.modules if _ours(n)]:
            del sys.modules[name]
        sys.modules.update(saved)


class _Checks:
    """A checker module as the cell's alias sees it: each ``check_…`` call is recorded with its Result, and, in the
    sandbox (``recorder``: judge.Recorder), what the check observed is written for the grader to replay."""

    def __init__(self, module, record, recorder=None):
        self._module, self._record, self._recorder = module, record, recorder

    def __getattr__(self, name):
        target = getattr(self._module, name)
        if not name.startswith("check_") or not callable(target):
            return target
        results = []

        def run(target, args, kwargs):
            if name == "check_quiz" and kwargs and not args:  # one point per answer: each answer checked alone
                each = [target(**{key: value}) for key, value in kwargs.items()]
                passed = sum(bool(r) for r in each)
                self._record.append((name, passed))
                results.append(each[-1])
                return passed
            result = target(*args, **kwargs)
            self._record.append((name, None if bool(result) else 0))
            results.append(result)
            return bool(result)

        def call(*args, **kwargs):
            if self._recorder is None:
                run(target, args, kwargs)
            else:
                self._recorder.run(name, target, args, kwargs, run)
            return results[-1] if results else None

        return call


def _recorder(cell: dict, language: str):
    """In the sandbox (``TC_RECORDS`` set): judge.py, loaded by path like this file, records each check."""
    folder = os.environ.get("TC_RECORDS")
    if not folder:
        return None
    spec = importlib.util.spec_from_file_location("_tc_judge", os.path.join(os.path.dirname(__file__), "judge.py"))
    judge = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(judge)
    return judge.Recorder(folder, cell, language)


@contextlib.contextmanager
def _captured(shell):
    """stdout and stderr into one buffer, and no display hook: nothing run inside can become the cell's result."""
    buffer = io.StringIO()
    hooks = (sys.displayhook, getattr(shell, "displayhook", None))
    sys.displayhook = lambda value: value is None or print(repr(value), file=buffer)
    if shell is not None:
        shell.displayhook = sys.displayhook
    try:
        with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer):
            yield buffer
    finally:
        sys.displayhook = hooks[0]
        if shell is not None:
            shell.displayhook = hooks[1]


def _shell():
    try:
        from IPython import get_ipython

        return get_ipython()
    except ImportError:
        return None


def grade(home: str, namespace: dict, cell: dict) -> float:
    """Grade one cell. ``cell``: ``text`` (the cell's checker statements), ``aliases`` (name → checker module,
    e.g. ``{"ex": "nb01_masks"}``), ``calls`` (``[checker, points]`` in order), ``digests`` and ``sha`` (module →
    the digests the hub wheel leaves out, and the hash of the file with them). Prints the grade and returns it;
    in IPython it is also displayed as the cell's result (nbgrader's partial credit)."""
    shell = _shell()
    record: list[tuple[str, int | None]] = []
    problem = None
    with _captured(shell) as output:
        try:
            with fresh_package(home, list(cell["aliases"].values()), cell.get("digests"), cell.get("sha")) as mods:
                t = sys.modules[f"{PACKAGE}.i18n"].t
                scope = dict(namespace)
                recorder = _recorder(cell, sys.modules[f"{PACKAGE}.i18n"].get_language())
                checks = {alias: _Checks(mods[module], record, recorder) for alias, module in cell["aliases"].items()}
                scope.update(checks)
                try:
                    exec(compile(_keeping(cell["text"], set(cell["aliases"])), "<graded cell>", "exec"), scope)
                except NameError as error:
                    problem = t(
                        "{name} is not defined: run the cell that defines it, then this one",
                        name=getattr(error, "name", None) or str(error),
                    )
                except Exception as error:  # the student's code outside a checker, or a broken import
                    problem = t(
                        "this cell's checks could not run: {error_type}: {error}",
                        error_type=type(error).__name__,
                        error=error,
                    )
                score, points = _score(cell["calls"], record)
                summary = t("graded: {score} of {points} points", score=_number(score), points=points)
        except Exception as error:  # the package could not be loaded afresh: say so, score 0
            problem, score, summary = f"{type(error).__name__}: {error}", 0, f"graded: 0 of {_total(cell)} points"
    text = output.getvalue().rstrip()
    print("\n".join(line for line in [text, problem, summary] if line))
    if shell is not None:
        _display(shell.displayhook, _number(score))
    return score


def _display(hook, value) -> None:
    """Show ``value`` as the cell's result (an ``execute_result``: the first one is what nbgrader reads as the
    points), even when the cell's last line ends with ``;`` (which makes IPython's display hook quiet)."""
    hook.quiet = lambda: False
    try:
        hook(value)
    finally:
        del hook.quiet


def _keeping(text: str, aliases: set[str]):
    """The cell's statements as a syntax tree, without the imports that would bind a checker alias again (a cell
    may import its checkers itself: ``from transformer_course.exercises import nb06_encoder as ex``); the fresh
    copy bound to that alias stays."""
    import ast

    tree = ast.parse(text)
    for i, node in enumerate(tree.body):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            node.names = [a for a in node.names if (a.asname or a.name.split(".")[0]) not in aliases]
            if not node.names:
                tree.body[i] = ast.copy_location(ast.Pass(), node)
    return tree


def _score(calls: list, record: list) -> tuple[float, int]:
    """The points of the recorded checks that passed, matched in order to the cell's calls, and the total."""
    total, score, recorded = 0, 0, list(record)
    for checker, points in calls:
        total += points
        for i, (name, passed) in enumerate(recorded):
            if name == checker:
                score += points if passed is None else passed
                del recorded[i]
                break
    return min(score, total), total


def _total(cell: dict) -> int:
    return sum(points for _, points in cell["calls"])


def _number(value: float) -> int | float:
    return int(value) if float(value).is_integer() else float(value)

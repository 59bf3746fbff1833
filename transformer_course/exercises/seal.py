"""Sealed answers: in a class, an answer (a quiz letter, bug lines, a number) is checked only when the work is graded.

A self-learner's checker says at once whether an answer is right, and why. In an nbgrader class that makes every
answer exercise an oracle: try each letter, each line, until one passes. So a checker of *answers* (not of code the
learner writes) is marked :func:`answer_check`, and while answers are **sealed** it reports only what is wrong with
the answer's *form* (not a letter, not a list of line numbers, not a number: a :class:`FormHint`), and otherwise
"🔒 noted: checked when your work is graded". Code checks (a function, a class, a build cell) keep every hint.

Answers are sealed inside ``with sealed():`` (the classroom release wraps its answer checks in it) and everywhere in
an installation that holds the marker file ``transformer_course/exercises/SEALED`` (the hub wheel of
``python -m transformer_course classroom OUT --hub``). The graded hidden tests check the answers with fresh copies
of the checkers inside :func:`unsealed`; in the hub wheel the answers' digests and the quizzes' salts are not in
the files at all (``"sealed:N"`` placeholders, :mod:`course_tools.classroom.verdict`), so nothing on the hub can
tell a right answer from a wrong one, nor unlock a quiz's texts (:mod:`.answer_key`).
"""

from __future__ import annotations

import contextvars
import functools
from contextlib import contextmanager
from pathlib import Path

from ..i18n import messages

t, lazy_t = messages("seal")

__all__ = [
    "MARKER",
    "SEALED_MESSAGE",
    "PLACEHOLDER",
    "Sealed",
    "answer_check",
    "answers_sealed",
    "in_answer_check",
    "sealed",
    "unsealed",
]

MARKER = Path(__file__).with_name("SEALED")  # present in the hub wheel only
PLACEHOLDER = "sealed:"  # a digest the hub wheel left out: "sealed:0", "sealed:1", …
SEALED_MESSAGE = lazy_t("noted_whether_right")

_sealed: contextvars.ContextVar[bool | None] = contextvars.ContextVar("tc_sealed", default=None)
_answer_check: contextvars.ContextVar[bool] = contextvars.ContextVar("tc_answer_check", default=False)


class Sealed(Exception):
    """Raised where a checker would compare an answer with a digest the hub wheel left out."""


def answers_sealed() -> bool:
    """True inside :func:`sealed`, or in an installation with the SEALED marker (unless inside :func:`unsealed`)."""
    state = _sealed.get()
    return MARKER.exists() if state is None else state


@contextmanager
def _answers(state: bool):
    token = _sealed.set(state)
    try:
        yield
    finally:
        _sealed.reset(token)


def sealed():
    """Check answers' form only inside the block (the classroom release's answer cells run in it)."""
    return _answers(True)


def unsealed():
    """Check answers in full inside the block, whatever the installation (the graded hidden tests)."""
    return _answers(False)


def in_answer_check() -> bool:
    """True while a checker marked :func:`answer_check` runs with its answers sealed."""
    return _answer_check.get()


def answer_check(checker):
    """Mark a checker of answers (``name = ...`` lines, not code): while answers are sealed, it reports their form
    only (a blank ``...`` is reported as not done yet: that tells nothing about the right answer)."""

    @functools.wraps(checker)
    def wrapper(*args, **kwargs):
        if not answers_sealed():
            return checker(*args, **kwargs)
        token = _answer_check.set(True)
        try:
            return checker(*args, **kwargs)
        finally:
            _answer_check.reset(token)

    wrapper.answer_check = True
    return wrapper

"""Auto-checkers for the notebooks' exercises.

Each notebook's exercises live in a module of this package named after the notebook
(``transformer_course.exercises.nb01_masks`` …); the reference solutions live beside the notebooks, in
``notebooks/solutions/`` (look there only after trying; they are not part of the installed package). A checker calls the learner's
function on small inputs, compares with the expected answer and prints one clear line:
a pass, or a hint that names what was wrong (a shape, a value, a mask the wrong way round).
It never shows a bare traceback.

    from transformer_course.exercises import nb01_masks as ex
    ex.check_local_mask(local_mask)   # prints "✅ ..." or "❌ ... hint"

Every message is data: an id of the module's catalogues (``exercises/en/<module>.json`` and its translation in
``exercises/zh/``), shown by the module's own ``t`` or ``lazy_t`` (:func:`transformer_course.i18n.messages`);
``exercises/README.md`` says where each text lives and how to add one.
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import os
import random
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch

from ..i18n import LazyText, messages
from .seal import SEALED_MESSAGE, Sealed, answer_check, in_answer_check, sealed, unsealed

t, lazy_t = messages("common")

__all__ = [
    "FormHint",
    "Hint",
    "Result",
    "answer_check",
    "sealed",
    "unsealed",
    "run_check",
    "checker",
    "expect_tensor",
    "shown",
    "divmod_index",
    "same",
    "known_mistake",
    "as_number",
    "as_int",
    "as_sequence",
    "as_shape",
    "as_choice",
    "as_mask",
    "Choice",
    "Numeric",
    "Lines",
    "unlocked_text",
    "check_question",
    "check_quiz",
    "questions",
    "quiz_checker",
    "print_numbered",
    "keep_global_rng",
]


class Hint(Exception):
    """Raised inside a checker to say what the learner should look at."""


class FormHint(Hint):
    """A hint about an answer's form (not a letter, not a number, not done yet): shown even while answers are
    sealed (:mod:`.seal`), since it says nothing about which answer is right."""


@dataclass
class Result:
    name: str
    passed: bool
    message: str
    sealed: bool = False  # an answer noted, to be checked when the work is graded (:mod:`.seal`)
    told: bool = field(default=False, repr=False, compare=False)  # form, blank or error: shown even when sealed

    def __bool__(self) -> bool:
        return self.passed

    def __repr__(self) -> str:  # shown by Jupyter when a checker is the last line of a cell
        mark = "🔒" if self.sealed else "✅" if self.passed else "❌"
        return t("mark_name_message", mark=mark, name=self.name, message=self.message)


def run_check(name: str, check: Callable[[], object], success: str | None = None) -> Result:
    """Run ``check``; a Hint or any error of the learner's code becomes a one-line message. ``name`` and
    ``success`` are messages already put through ``t()``; ``success`` defaults to "passed", and a text ``check``
    returns (an explanation the attempt unlocked) takes its place. Inside a sealed
    :func:`~.seal.answer_check` only a :class:`FormHint`, a blank or an error is told; a pass or any other hint
    becomes "🔒 noted" (:mod:`.seal`)."""
    result = _run(name, check, success)
    if result.sealed or (in_answer_check() and not result.told):
        result = Result(name, False, str(SEALED_MESSAGE), sealed=True)
    print(repr(result))
    return result


def checker(name: str | LazyText, success: str | LazyText | None = None) -> Callable:
    """Decorate a check: its body raises a :class:`Hint` where the learner's answer is wrong; a call runs the body
    through :func:`run_check` under ``name`` (a text made with ``lazy_t``, or a code name) and returns the
    :class:`Result`, ``success`` (default "passed") when it passes, or the text the body returns (an explanation
    the right answer unlocked).

        @checker(lazy_t("local_mask"), lazy_t("passed_each_position"))
        def check_local_mask(local_mask): ...
    """

    def decorate(body: Callable[..., None]) -> Callable[..., Result]:
        @functools.wraps(body)
        def check(*args, **kwargs) -> Result:
            said = None if success is None else str(success)
            return run_check(str(name), lambda: body(*args, **kwargs), said)

        return check

    return decorate


def _run(name: str, check: Callable[[], object], success: str | None) -> Result:
    try:
        with keep_global_rng():  # a checker draws its own inputs and leaves the learner's random state as it was
            said = check()
    except Sealed:  # a digest the hub wheel left out: only the graded hidden test can tell
        return Result(name, False, str(SEALED_MESSAGE), sealed=True)
    except FormHint as hint:
        return _told(Result(name, False, str(hint)))
    except Hint as hint:
        return Result(name, False, str(hint))
    except NotImplementedError:
        return _told(Result(name, False, t("not_done_yet")))
    except Exception as error:  # the learner's code failed: say where, not the whole traceback
        frame = _learner_frame(error)
        if frame is None:  # raised inside the package (a checker's comparison): not the learner's line
            message = t("result_could_not", error_type=type(error).__name__, error=error)
        else:
            message = t("code_raised_line", error_type=type(error).__name__, error=error, line=frame.lineno)
        return _told(Result(name, False, message))
    if isinstance(said, (str, LazyText)):  # a body that returns a text passes with it (what the answer unlocked)
        success = str(said)
    return Result(name, True, t("passed") if success is None else success)


def _told(result: Result) -> Result:
    """The result marked as one that may be shown while answers are sealed (form, blank, error: not the verdict)."""
    result.told = True
    return result


_PACKAGE_DIR = Path(__file__).resolve().parents[1]


def _learner_frame(error: BaseException):
    """The deepest traceback frame outside the ``transformer_course`` package and torch (the learner's line), or None."""
    for frame in reversed(traceback.extract_tb(error.__traceback__)):
        path = Path(frame.filename)
        try:
            path.resolve().relative_to(_PACKAGE_DIR)
            continue
        except (ValueError, OSError):
            pass
        if f"{os.sep}torch{os.sep}" in frame.filename:
            continue
        return frame
    return None


@contextlib.contextmanager
def keep_global_rng():
    """Run the block, then put torch's (CPU) and Python's random generators back as they were."""
    python_state = random.getstate()
    with torch.random.fork_rng(devices=[]):
        yield
    random.setstate(python_state)


def expect_tensor(got, expected: torch.Tensor, what: str, atol=1e-5, rtol=1e-4, mistakes: dict | None = None) -> None:
    """Raise a Hint naming the first difference between ``got`` and ``expected``: type, shape, dtype, values.

    Floats are compared at the wider of the two dtypes (a correct float64 result is correct), and wrong values are
    printed with as many digits as it takes to see them differ. A result that agrees with a float64 reference only
    as far as float32 can (a ``.float()`` inside, a float32 constant) is said to be that, dtypes named.
    ``mistakes`` (hint → the tensor a plausible slip gives): a result equal to one of them is named by its hint."""
    hint = known_mistake(got, expected, mistakes or {}, atol)
    if hint is not None:
        raise Hint(t("what_hint", what=what, hint=hint))
    if not isinstance(got, torch.Tensor):
        raise Hint(t("torch_tensor_got", what=what, type=type(got).__name__))
    if got.shape != expected.shape:
        raise Hint(t("shape_expected", what=what, got=tuple(got.shape), expected=tuple(expected.shape)))
    if expected.dtype == torch.bool:
        if got.dtype != torch.bool:
            raise Hint(t("boolean_tensor_true", what=what, dtype=got.dtype))
        if torch.equal(got, ~expected):
            raise Hint(t("inverted_true_mean", what=what))
        if not torch.equal(got, expected):
            index = (got != expected).nonzero()[0].tolist()
            mine, want = got[tuple(index)].item(), expected[tuple(index)].item()
            raise Hint(t("differs_index_got", what=what, index=index, got=mine, expected=want))
        return
    wider = torch.promote_types(got.dtype, expected.dtype) if got.is_floating_point() else expected.dtype
    mine, want = got.detach().to(wider), expected.detach().to(wider)
    if torch.allclose(mine, want, atol=atol, rtol=rtol):
        return
    gap = (mine - want).abs()
    if expected.dtype == torch.float64 and got.is_floating_point() and torch.allclose(mine, want, atol=1e-5, rtol=1e-4):
        if got.dtype != expected.dtype:
            raise Hint(t("float32_inside_dtype", what=what, got_dtype=got.dtype, expected_dtype=expected.dtype,
                         gap=float(gap.max())))  # fmt: skip
        raise Hint(t("float32_inside", what=what, gap=float(gap.max()), dtype=expected.dtype))
    index = divmod_index(int(gap.double().nan_to_num(float("inf")).argmax()), expected.shape)
    a, b = mine[tuple(index)].item(), want[tuple(index)].item()
    raise Hint(t("wrong_values_at", what=what, index=index, got=shown(a, b), expected=shown(b, a)))


def digits(value: float, other: float) -> int:
    """Significant digits that tell ``value`` from ``other``: 4, or more when they differ only further right."""
    gap, size = abs(value - other), max(abs(value), abs(other))
    if not math.isfinite(gap) or gap == 0 or size == 0:
        return 4
    return max(4, min(17, math.ceil(math.log10(size / gap)) + 2))


def shown(value: float, other: float) -> str:
    """``value`` with the digits that tell it from ``other``."""
    return f"{value:.{digits(value, other)}g}"


def divmod_index(flat: int, shape) -> list[int]:
    index = []
    for size in reversed(shape):
        flat, rest = divmod(flat, size)
        index.append(rest)
    return list(reversed(index))


def same(got, expected: torch.Tensor, atol: float = 1e-5, rtol: float = 1e-4) -> bool:
    """True when ``got`` is a tensor of ``expected``'s shape and values (within float tolerance)."""
    return (
        isinstance(got, torch.Tensor)
        and got.shape == expected.shape
        and torch.allclose(got.to(expected.dtype), expected, atol=atol, rtol=rtol)
    )


def known_mistake(got, expected: torch.Tensor, mistakes: dict[str, torch.Tensor], atol: float = 1e-5) -> str | None:
    """When ``got`` is wrong but equals one of the plausible wrong answers in ``mistakes`` (hint → tensor),
    that answer's hint; otherwise None."""
    if isinstance(got, torch.Tensor) and got.shape == expected.shape and not same(got, expected, atol):
        for hint, value in mistakes.items():
            if same(got, value, atol):
                return hint
    return None


def as_number(got, what: str) -> float:
    """A learner's number as a float. Accepts a Python int or float, a numpy scalar, or a tensor/array
    holding one number (``.item()`` not needed); anything else raises a Hint that says what came."""
    import numbers

    if isinstance(got, bool) or type(got).__name__ in ("bool", "bool_"):  # Python or numpy booleans
        raise FormHint(t("number_got_boolean", what=what, got=got))
    if isinstance(got, numbers.Real):  # int, float and numpy's integer and float scalars
        return float(got)
    if isinstance(got, torch.Tensor) or type(got).__name__ == "ndarray":
        if str(got.dtype) in ("torch.bool", "bool"):
            raise FormHint(t("number_got_boolean_type", what=what, type=type(got).__name__))
        size = got.numel() if isinstance(got, torch.Tensor) else got.size
        if size == 1:
            return float(got.item())
        raise FormHint(t("number_got_shape", what=what, type=type(got).__name__, shape=tuple(got.shape)))
    raise FormHint(t("number_int_float", what=what, type=type(got).__name__, got=got)[:200])


def as_int(got, what: str) -> int:
    """Like :func:`as_number`, for a whole number (a count, a size): 12.0 passes as 12, 12.5 does not."""
    value = as_number(got, what)
    if not value.is_integer():
        raise FormHint(t("whole_number_got", what=what, value=value))
    return int(value)


def as_sequence(got, length: int | None, what: str) -> list:
    """A learner's tuple or list (either is fine) as a list, of ``length`` items when that is given."""
    if not isinstance(got, (tuple, list)):
        raise FormHint(t("tuple_list_got", what=what, type=type(got).__name__))
    if length is not None and len(got) != length:
        raise FormHint(t("items_got", what=what, length=length, got=len(got)))
    return list(got)


def as_shape(got, what: str) -> tuple[int, ...]:
    """A learner's shape as a tuple of ints: a tuple, a list or a torch.Size of whole numbers."""
    return tuple(as_int(n, t("item", what=what, i=i)) for i, n in enumerate(as_sequence(got, None, what)))


def as_choice(got, choices: str, what: str) -> str:
    """A multiple-choice answer as one lower-case letter: 'b', 'B', ' b ', '(b)' and 'b)' all give 'b'."""
    if not isinstance(got, str):
        raise FormHint(t("answer_letter_string", what=what, example=choices[0], type=type(got).__name__))
    letter = got.strip().strip("().").strip().lower()
    if len(letter) != 1 or letter not in choices:
        raise FormHint(t("answer_letters_got", what=what, letters=", ".join(choices), got=got))
    return letter


def as_mask(got, expected_shape: tuple[int, ...], what: str) -> torch.Tensor:
    """A learner's mask as a boolean tensor, True = may attend. Accepts a boolean tensor, or a tensor of
    any integer or float dtype holding only 0 and 1 (1 = may attend). An additive mask (0 = allowed,
    −inf = blocked, the other convention) and any other values raise a Hint, as does a wrong shape."""
    if not isinstance(got, torch.Tensor):
        raise FormHint(t("torch_tensor_got", what=what, type=type(got).__name__))
    if tuple(got.shape) != tuple(expected_shape):
        raise FormHint(t("shape_expected", what=what, got=tuple(got.shape), expected=tuple(expected_shape)))
    if got.dtype == torch.bool:
        return got
    if got.is_floating_point() and torch.isinf(got).any():
        raise FormHint(t("additive_mask_not_boolean", what=what))
    if not bool(((got == 0) | (got == 1)).all()):
        raise FormHint(t("holds_values_other", what=what))
    return got != 0


def unlocked_text(entry: dict) -> str:
    """An unlocked entry's text in the language of the moment (English when it has none in that language)."""
    from ..i18n import get_language

    texts = entry["text"]
    return texts.get(get_language(), texts["en"])


def _unlocked(salt: str, key: str, form: str, locked: dict[str, str]) -> dict | None:
    """The entry of ``locked`` that the attempt ``form`` unlocks, or None when it unlocks none (:mod:`.answer_key`).
    Raises :class:`~.seal.Sealed` where the hub wheel left the question's salt out: nothing there is unlocked."""
    from .answer_key import derive, tag, unlock
    from .seal import PLACEHOLDER

    if str(salt).startswith(PLACEHOLDER):
        raise Sealed()  # run_check says "🔒 noted" (seal.SEALED_MESSAGE)
    derived = derive(salt, key, form)
    found = locked.get(tag(derived))
    return None if found is None else unlock(derived, found)


@dataclass
class Choice:
    """A multiple-choice question: its ``letters`` and, for every one of them, an entry locked with that letter
    (:mod:`.answer_key`): the right letter's says why it is right, each wrong one's what it mixes up, and only
    the attempt tells which is which. ``salt`` (24 hex digits, kept in the checker module) salts the keys.

        Choice(key="nb02-q1", salt="<24 hex digits>", letters="abcd", locked={"<tag>": "<locked text>", ...})
    """

    key: str
    salt: str
    letters: str
    locked: dict[str, str] = field(repr=False)

    def __post_init__(self) -> None:
        self.letters = "".join(sorted(set(self.letters)))

    def unlock(self, letter: str) -> dict | None:
        from .answer_key import canonical

        return _unlocked(self.salt, self.key, canonical(letter), self.locked)


@dataclass
class Numeric:
    """A question with a number for answer: entries locked with the buckets of the right number (its
    explanation) and of plausible wrong ones (each with its hint), on a logarithmic grid of width ``rel_tol``
    (``course_tools.quiz.number_forms``); ``otherwise`` is said of any other number."""

    key: str
    salt: str
    locked: dict[str, str] = field(repr=False)
    rel_tol: float = 1e-3
    otherwise: str | LazyText = lazy_t("not_number_work")

    def unlock(self, got: float) -> dict | None:
        import math

        from .answer_key import number_form

        if not math.isfinite(got):
            return None
        return _unlocked(self.salt, self.key, number_form(got, self.rel_tol), self.locked)


@dataclass
class Lines:
    """A find-the-bug exercise: which of the lines 1 … ``lines`` are wrong. One entry is locked with the set of
    wrong lines (what the fix is), and one with each line (why it is fine, or a nudge towards its bug when it is
    left out), so that no key names a line."""

    key: str
    salt: str
    lines: int
    locked: dict[str, str] = field(repr=False)

    def unlock(self, answer) -> dict | None:
        from .answer_key import canonical

        return _unlocked(self.salt, self.key, canonical(answer), self.locked)


def questions(module: str, texts: Callable[..., LazyText], **salts: str) -> dict[str, Choice | Numeric | Lines]:
    """A notebook's quiz, ``{name: question}``: the questions are data, ``exercises/questions/<module>.json``, their
    hints locked with the answers (:mod:`.answer_key`); only each question's salt is given here, 24 hex digits
    (``questions("nb01_masks", lazy_t, q1="<24 hex digits>", q2="<24 hex digits>")``).

    A question holds ``key``, ``locked`` (tag → locked entry) and either ``letters`` (a multiple choice),
    ``lines`` (the number of lines of a find-the-bug exercise) or ``rel_tol`` and ``otherwise`` (a message id of
    the module: what to say of a number no entry knows)."""
    table = json.loads((Path(__file__).with_name("questions") / f"{module}.json").read_text(encoding="utf-8"))
    if set(table) != set(salts):
        raise ValueError(f"questions/{module}.json has {sorted(table)}, but digests were given for {sorted(salts)}")
    made: dict[str, Choice | Numeric | Lines] = {}
    for name, q in table.items():
        if "letters" in q:
            made[name] = Choice(q["key"], salts[name], q["letters"], q["locked"])
        elif "lines" in q:
            made[name] = Lines(q["key"], salts[name], q["lines"], q["locked"])
        else:
            otherwise = texts(q["otherwise"]) if "otherwise" in q else Numeric.otherwise
            made[name] = Numeric(q["key"], salts[name], q["locked"], q.get("rel_tol", 1e-3), otherwise)
    return made


def check_question(name: str, question: Choice | Numeric, answer) -> Result:
    """Check one answer to a ``Choice`` (a letter: 'b', 'B', '(b)') or a ``Numeric`` question (a Python
    or numpy number, or a one-number tensor). ``...`` (the notebook's blank) counts as not done yet. A right
    answer unlocks its explanation, a known wrong one its hint."""

    def check() -> str:
        if answer is ... or answer is None:
            raise FormHint(t("not_done_yet_replace"))
        if isinstance(question, Choice):
            entry = question.unlock(as_choice(answer, question.letters, t("answer")))
            if entry is None:
                raise Hint(t("not_read_question"))
        else:
            got = as_number(answer, t("answer"))
            entry = question.unlock(got)
            if entry is None:
                raise Hint(t("got_otherwise", got=got, otherwise=question.otherwise))
        if not entry["right"]:
            raise Hint(unlocked_text(entry))
        return t("right", why=unlocked_text(entry))

    return run_check(name, check)


def check_quiz(questions: dict[str, Choice | Numeric], answers: dict) -> Result:
    """Check several answers at once (``answers``: question name → answer), one printed line each; the
    returned Result passes when every answer is right. A name that is not a question raises a Hint line."""
    unknown = sorted(set(answers) - set(questions))
    results = [check_question(name, questions[name], answers[name]) for name in questions if name in answers]
    if unknown:

        def name_unknown():
            raise Hint(t("no_question_named", unknown=", ".join(unknown), questions=", ".join(questions)))

        results.append(run_check(t("quiz"), name_unknown))
    right = sum(r.passed for r in results)
    if any(r.sealed for r in results):
        return Result(t("quiz"), False, str(SEALED_MESSAGE), sealed=True)
    return Result(t("quiz"), bool(results) and right == len(results), t("quiz_score", right=right, total=len(results)))


def print_numbered(obj) -> None:
    """Print the source of a function or class with line numbers (line 1 = its def or class line), for
    find-the-bug exercises that ask for line numbers."""
    import inspect

    for number, line in enumerate(inspect.getsource(obj).rstrip().splitlines(), start=1):
        print(f"{number:2d}  {line}")


def quiz_checker(questions: dict[str, Choice | Numeric]) -> Callable[..., Result]:
    """A notebook's ``check_quiz(q1=…, q2=…)``: the answers given to ``questions``, checked by :func:`check_quiz`."""

    def check_answers(**answers) -> Result:
        """``check_quiz(q1=..., q2=..., ...)``: your answers by question name (a letter as a string, or a number);
        prints one line per answer and returns a Result that passes when every one is right."""
        return check_quiz(questions, answers)

    check_answers.__name__ = check_answers.__qualname__ = "check_quiz"
    return answer_check(check_answers)

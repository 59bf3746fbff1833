"""Auto-checkers for the notebooks' exercises.

Each notebook's exercises live in a module of this package named after the notebook
(``transformer_course.exercises.nb01_masks`` …); the reference solutions live beside the notebooks, in
``notebooks/solutions/`` (look there only after trying; they are not part of the installed package). A checker calls the learner's
function on small inputs, compares with the expected answer and prints one clear line:
a pass, or a hint that names what was wrong (a shape, a value, a mask the wrong way round).
It never shows a bare traceback.

    from transformer_course.exercises import nb01_masks as ex
    ex.check_local_mask(local_mask)   # prints "✅ ..." or "❌ ... hint"
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from dataclasses import dataclass

import torch

__all__ = [
    "Hint",
    "Result",
    "run_check",
    "expect_tensor",
    "divmod_index",
    "same",
    "name_known_mistake",
    "as_number",
    "as_int",
    "as_sequence",
    "as_shape",
    "as_choice",
    "as_mask",
    "Choice",
    "Numeric",
    "check_question",
    "check_quiz",
    "print_numbered",
]


class Hint(Exception):
    """Raised inside a checker to say what the learner should look at."""


@dataclass
class Result:
    name: str
    passed: bool
    message: str

    def __bool__(self) -> bool:
        return self.passed

    def __repr__(self) -> str:  # shown by Jupyter when a checker is the last line of a cell
        return f"{'✅' if self.passed else '❌'} {self.name}: {self.message}"


def run_check(name: str, check: Callable[[], None], success: str = "passed") -> Result:
    """Run ``check``; a Hint or any error of the learner's code becomes a one-line message."""
    try:
        check()
    except Hint as hint:
        result = Result(name, False, str(hint))
    except NotImplementedError:
        result = Result(
            name, False, "not done yet: write your code (or answer) in place of `raise NotImplementedError` or `...`"
        )
    except Exception as error:  # the learner's code failed: say where, not the whole traceback
        frame = traceback.extract_tb(error.__traceback__)[-1]
        result = Result(name, False, f"your code raised {type(error).__name__}: {error} (line {frame.lineno})")
    else:
        result = Result(name, True, success)
    print(repr(result))
    return result


def expect_tensor(got, expected: torch.Tensor, what: str, atol: float = 1e-5, rtol: float = 1e-4) -> None:
    """Raise a Hint naming the first difference between ``got`` and ``expected``: type, shape, dtype, values."""
    if not isinstance(got, torch.Tensor):
        raise Hint(f"{what} should be a torch.Tensor, got {type(got).__name__}")
    if got.shape != expected.shape:
        raise Hint(f"{what} has shape {tuple(got.shape)}, expected {tuple(expected.shape)}")
    if expected.dtype == torch.bool and got.dtype != torch.bool:
        raise Hint(f"{what} should be a boolean tensor (True = may attend), got dtype {got.dtype}")
    if expected.dtype == torch.bool:
        if torch.equal(got, ~expected):
            raise Hint(f"{what} is inverted: True should mean 'may attend'")
        if not torch.equal(got, expected):
            wrong = (got != expected).nonzero()[0].tolist()
            raise Hint(
                f"{what} differs at index {wrong}: got {got[tuple(wrong)].item()}, "
                f"expected {expected[tuple(wrong)].item()}"
            )
        return
    got = got.to(expected.dtype)
    if not torch.allclose(got, expected, atol=atol, rtol=rtol):
        diff = (got - expected).abs()
        index = tuple(divmod_index(int(diff.argmax()), expected.shape))
        raise Hint(
            f"{what} has the right shape but wrong values: at index {list(index)} got "
            f"{got[index].item():.4f}, expected {expected[index].item():.4f}"
        )


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


def name_known_mistake(
    got, expected: torch.Tensor, mistakes: dict[str, torch.Tensor], atol: float = 1e-5, message: str = "{}"
) -> None:
    """If ``got`` is wrong but equals one of the plausible wrong answers in ``mistakes`` (hint → tensor),
    raise a Hint with that answer's hint (put into ``message``)."""
    if isinstance(got, torch.Tensor) and got.shape == expected.shape and not same(got, expected, atol):
        for hint, value in mistakes.items():
            if same(got, value, atol):
                raise Hint(message.format(hint))


def as_number(got, what: str) -> float:
    """A learner's number as a float. Accepts a Python int or float, a numpy scalar, or a tensor/array
    holding one number (``.item()`` not needed); anything else raises a Hint that says what came."""
    import numbers

    if isinstance(got, bool) or type(got).__name__ in ("bool", "bool_"):  # Python or numpy booleans
        raise Hint(f"{what} should be a number, got the boolean {got}")
    if isinstance(got, numbers.Real):  # int, float and numpy's integer and float scalars
        return float(got)
    if isinstance(got, torch.Tensor) or type(got).__name__ == "ndarray":
        if str(got.dtype) in ("torch.bool", "bool"):
            raise Hint(f"{what} should be a number, got a boolean {type(got).__name__}")
        size = got.numel() if isinstance(got, torch.Tensor) else got.size
        if size == 1:
            return float(got.item())
        raise Hint(f"{what} should be one number, got {type(got).__name__} of shape {tuple(got.shape)}")
    raise Hint(f"{what} should be a number (int or float), got {type(got).__name__}: {got!r}"[:200])


def as_int(got, what: str) -> int:
    """Like :func:`as_number`, for a whole number (a count, a size): 12.0 passes as 12, 12.5 does not."""
    value = as_number(got, what)
    if not value.is_integer():
        raise Hint(f"{what} should be a whole number, got {value}")
    return int(value)


def as_sequence(got, length: int | None, what: str) -> list:
    """A learner's tuple or list (either is fine) as a list, of ``length`` items when that is given."""
    if not isinstance(got, (tuple, list)):
        raise Hint(f"{what} should be a tuple or a list, got {type(got).__name__}")
    if length is not None and len(got) != length:
        raise Hint(f"{what} should have {length} items, got {len(got)}")
    return list(got)


def as_shape(got, what: str) -> tuple[int, ...]:
    """A learner's shape as a tuple of ints: a tuple, a list or a torch.Size of whole numbers."""
    return tuple(as_int(n, f"{what}, item {i}") for i, n in enumerate(as_sequence(got, None, what)))


def as_choice(got, choices: str, what: str) -> str:
    """A multiple-choice answer as one lower-case letter: 'b', 'B', ' b ', '(b)' and 'b)' all give 'b'."""
    if not isinstance(got, str):
        raise Hint(f"{what}: answer with one letter as a string, e.g. '{choices[0]}', got {type(got).__name__}")
    letter = got.strip().strip("().").strip().lower()
    if len(letter) != 1 or letter not in choices:
        raise Hint(f"{what}: answer with one of the letters {', '.join(choices)}, got {got!r}")
    return letter


def as_mask(got, expected_shape: tuple[int, ...], what: str) -> torch.Tensor:
    """A learner's mask as a boolean tensor, True = may attend. Accepts a boolean tensor, or a tensor of
    any integer or float dtype holding only 0 and 1 (1 = may attend). An additive mask (0 = allowed,
    −inf = blocked, the other convention) and any other values raise a Hint, as does a wrong shape."""
    if not isinstance(got, torch.Tensor):
        raise Hint(f"{what} should be a torch.Tensor, got {type(got).__name__}")
    if tuple(got.shape) != tuple(expected_shape):
        raise Hint(f"{what} has shape {tuple(got.shape)}, expected {tuple(expected_shape)}")
    if got.dtype == torch.bool:
        return got
    if got.is_floating_point() and torch.isinf(got).any():
        raise Hint(
            f"{what} is an additive mask (0 = allowed, −inf = blocked, as nn.Transformer's); return True "
            "(or 1) where the query may attend and False (or 0) where it may not"
        )
    if not bool(((got == 0) | (got == 1)).all()):
        raise Hint(f"{what} holds values other than 0 and 1: a mask is True/1 = may attend, False/0 = may not")
    return got != 0


@dataclass
class Choice:
    """A multiple-choice question: the right letter, why it is right, and a hint for each wrong letter."""

    correct: str
    why: str
    wrong: dict[str, str]

    @property
    def letters(self) -> str:
        return "".join(sorted({self.correct, *self.wrong}))


@dataclass
class Numeric:
    """A question with a number for answer: the value, why, and plausible wrong values with their hints."""

    value: float
    why: str
    mistakes: dict[str, float]
    rel_tol: float = 1e-3
    otherwise: str = "not this number; work it out again step by step"


def check_question(name: str, question: Choice | Numeric, answer) -> Result:
    """Check one answer to a ``Choice`` (a letter: 'b', 'B', '(b)') or a ``Numeric`` question (a Python
    or numpy number, or a one-number tensor). ``...`` (the notebook's blank) counts as not done yet."""
    import math

    def check():
        if answer is ... or answer is None:
            raise Hint("not done yet: replace the `...` with your answer")
        if isinstance(question, Choice):
            letter = as_choice(answer, question.letters, "answer")
            if letter != question.correct:
                raise Hint(question.wrong[letter])
            return
        got = as_number(answer, "answer")
        if math.isclose(got, question.value, rel_tol=question.rel_tol, abs_tol=1e-12):
            return
        for hint, value in question.mistakes.items():
            if math.isclose(got, value, rel_tol=question.rel_tol, abs_tol=1e-12):
                raise Hint(hint)
        raise Hint(f"{got:g}: {question.otherwise}")

    return run_check(name, check, f"right: {question.why}")


def check_quiz(questions: dict[str, Choice | Numeric], answers: dict) -> Result:
    """Check several answers at once (``answers``: question name → answer), one printed line each; the
    returned Result passes when every answer is right. A name that is not a question raises a Hint line."""
    unknown = sorted(set(answers) - set(questions))
    results = [check_question(name, questions[name], answers[name]) for name in questions if name in answers]
    if unknown:

        def name_unknown():
            raise Hint(f"no question named {', '.join(unknown)}: the questions are {', '.join(questions)}")

        results.append(run_check("quiz", name_unknown))
    right = sum(r.passed for r in results)
    return Result("quiz", bool(results) and right == len(results), f"{right} of {len(results)} right")


def print_numbered(obj) -> None:
    """Print the source of a function or class with line numbers (line 1 = its def or class line), for
    find-the-bug exercises that ask for line numbers."""
    import inspect

    for number, line in enumerate(inspect.getsource(obj).rstrip().splitlines(), start=1):
        print(f"{number:2d}  {line}")

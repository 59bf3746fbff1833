"""Auto-checkers for the notebooks' exercises.

Each notebook's exercises live in a module of this package named after the notebook
(``transformer_course.exercises.nb01_masks`` …); the reference solutions live in
``transformer_course.solutions`` (look there only after trying). A checker calls the learner's
function on small inputs, compares with the expected answer and prints one clear line:
a pass, or a hint that names what was wrong (a shape, a value, a mask the wrong way round).
It never shows a bare traceback.

    from transformer_course.exercises import nb01_masks as ex
    ex.check_padding_mask(my_padding_mask)   # prints "✅ ..." or "❌ ... hint"
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from dataclasses import dataclass

import torch


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
        result = Result(name, False, "not done yet: replace the `raise NotImplementedError` with your code")
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

"""Values compared the way the checkers of notebooks 02–07 compare them: at the wider of two float dtypes, wrong
values printed with the digits that show the difference, a result computed in float32 inside a float64 check named,
and a layer built without its bias named."""

from __future__ import annotations

import math

import torch

from ..i18n import messages
from . import Hint, divmod_index, expect_tensor, known_mistake

t, lazy_t = messages("compare")

__all__ = ["close", "digits", "expect_values", "missing_biases", "shown"]


def digits(value: float, other: float) -> int:
    """Significant digits that tell ``value`` from ``other``: 4, or more when they differ only further right."""
    gap, size = abs(value - other), max(abs(value), abs(other))
    if not math.isfinite(gap) or gap == 0 or size == 0:
        return 4
    return max(4, min(17, math.ceil(math.log10(size / gap)) + 2))


def shown(value: float, other: float) -> str:
    return f"{value:.{digits(value, other)}g}"


def close(got, want, atol=1e-5, rtol=1e-4) -> bool:
    """``got`` is a tensor of ``want``'s shape and values, compared at the wider of the two float dtypes."""
    if not isinstance(got, torch.Tensor) or got.shape != want.shape or not got.is_floating_point():
        return False
    wider = torch.promote_types(got.dtype, want.dtype)
    return bool(torch.allclose(got.to(wider), want.to(wider), atol=atol, rtol=rtol, equal_nan=False))


def expect_values(
    got, expected: torch.Tensor, what: str, atol: float = 1e-5, rtol: float = 1e-4, mistakes: dict | None = None
) -> None:
    """:func:`~transformer_course.exercises.expect_tensor` (type, shape, dtype, values), except that wrong values are
    printed with as many digits as it takes to see them differ, and a result that agrees with a float64 reference
    only as far as float32 can (a ``.float()`` inside, a float32 constant) is said to be that, dtypes named.
    ``mistakes`` (hint → the tensor a plausible slip gives): a result equal to one of them is named by its hint."""
    hint = known_mistake(got, expected, mistakes or {}, atol)
    if hint is not None:
        raise Hint(t("what_hint", what=what, hint=hint))
    if (
        isinstance(got, torch.Tensor)
        and got.shape == expected.shape
        and got.is_floating_point()
        and expected.is_floating_point()
    ):
        wider = torch.promote_types(got.dtype, expected.dtype)
        mine, want = got.detach().to(wider), expected.detach().to(wider)
        if not torch.allclose(mine, want, atol=atol, rtol=rtol):
            gap = (mine - want).abs()
            if expected.dtype == torch.float64 and torch.allclose(mine, want, atol=1e-5, rtol=1e-4):
                if got.dtype != expected.dtype:
                    raise Hint(
                        t(
                            "float32_inside_dtype",
                            what=what,
                            got_dtype=got.dtype,
                            expected_dtype=expected.dtype,
                            gap=float(gap.max()),
                        )
                    )
                raise Hint(t("float32_inside", what=what, gap=float(gap.max()), dtype=expected.dtype))
            index = divmod_index(int(gap.nan_to_num(float("inf")).argmax()), expected.shape)
            a, b = mine[tuple(index)].item(), want[tuple(index)].item()
            raise Hint(t("wrong_values_at", what=what, index=index, got=shown(a, b), expected=shown(b, a)))
    expect_tensor(got, expected, what, atol=atol, rtol=rtol)


def missing_biases(what: str, missing) -> None:
    """Raise a Hint when the only parameters missing are biases: a layer built with ``bias=False``."""
    missing = sorted(missing)
    if missing and all(name.endswith("bias") for name in missing):
        raise Hint(t("built_without_bias", what=what, missing=", ".join(missing)))

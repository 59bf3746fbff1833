"""The comparisons the checkers of notebooks 02–07 share besides :func:`~transformer_course.exercises.expect_tensor`:
two results close at the wider of their float dtypes, and a layer built without its bias named."""

from __future__ import annotations

import torch

from ..i18n import messages
from . import Hint

t, lazy_t = messages("compare")

__all__ = ["close", "missing_biases"]


def close(got, want, atol=1e-5, rtol=1e-4) -> bool:
    """``got`` is a tensor of ``want``'s shape and values, compared at the wider of the two float dtypes."""
    if not isinstance(got, torch.Tensor) or got.shape != want.shape or not got.is_floating_point():
        return False
    wider = torch.promote_types(got.dtype, want.dtype)
    return bool(torch.allclose(got.to(wider), want.to(wider), atol=atol, rtol=rtol, equal_nan=False))


def missing_biases(what: str, missing) -> None:
    """Raise a Hint when the only parameters missing are biases: a layer built with ``bias=False``."""
    missing = sorted(missing)
    if missing and all(name.endswith("bias") for name in missing):
        raise Hint(t("built_without_bias", what=what, missing=", ".join(missing)))

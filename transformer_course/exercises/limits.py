"""A limit on the tensors a learner's code may make while a checker runs it (notebooks 00, 01 and 03): an exercise that
asks to *count* numbers gets a line saying so, not a kernel killed for memory."""

from __future__ import annotations

import math

import torch
from torch.overrides import TorchFunctionMode

from ..i18n import messages
from . import Hint

t, lazy_t = messages("limits")

__all__ = ["TooBig", "too_big_to_build"]


class TooBig(TorchFunctionMode):
    """Refuses any tensor of more than ``limit`` numbers (a factory's size, or the broadcast of an operation's
    tensors) before it is made, so that a learner who builds what an exercise asks to count gets a line that
    says so instead of a kernel killed for memory."""

    def __init__(self, what: str, limit: int):
        super().__init__()
        self.what, self.limit = what, limit

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        ints = [int(a) for a in args if isinstance(a, int) and not isinstance(a, bool)]
        shape = kwargs.get("size") or next((a for a in args if isinstance(a, (tuple, list, torch.Size))), None)
        numel = 0
        if name in ("empty", "zeros", "ones", "full", "rand", "randn", "randint", "eye"):
            dims = list(shape) if shape is not None else ints[-2:] if name == "eye" else ints
            if name == "randint" and shape is None:
                dims = []
            numel = math.prod(int(n) for n in dims) if dims and all(isinstance(n, int) for n in dims) else 0
        elif name == "arange" and ints:
            numel = max(abs(n) for n in ints)
        tensors = [a.shape for a in args if isinstance(a, torch.Tensor)]
        if tensors:
            try:
                numel = max(numel, math.prod(torch.broadcast_shapes(*tensors)))
            except RuntimeError:
                pass
        if numel > self.limit:
            raise Hint(t("tensor_too_big", what=self.what, numel=numel))
        return func(*args, **kwargs)


def too_big_to_build(what: str, limit: int = 10**8) -> TooBig:
    """``with too_big_to_build("allowed_pairs(…)"): …``: the block may not make a tensor of over ``limit`` numbers."""
    return TooBig(what, limit)

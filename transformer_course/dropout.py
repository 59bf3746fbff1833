"""Dropout whose mask costs less to draw on a CPU (``Config.fast_dropout``).

``nn.Dropout`` draws its mask with ``bernoulli_``, one random number per element, slowly on a CPU: the
``multi30k-cpu`` train step with it takes about a fifth longer (``python benchmarks/gemm_fraction.py`` prints
the figure, docs/results.md records it). :class:`FastDropout` draws one 64-bit word from PyTorch's own
generator for every four elements and compares each 16-bit quarter of it with a threshold:

- an element is dropped with probability ``p`` rounded to a multiple of 2⁻¹⁶ (0.1 becomes 6,554 / 65,536 =
  0.100006), and the kept ones are scaled by 1 / (1 − that probability), so the expected output is the input;
- the words come from ``torch.random``'s generator, so ``torch.manual_seed`` makes the masks repeatable, and
  the masks do not depend on the number of threads;
- the backward pass multiplies by the same mask (autograd keeps it, as it keeps ``nn.Dropout``'s).

It is an ``nn.Dropout`` (the same ``p``; ``inplace=True`` refused), and behaves exactly like one in eval
mode, with ``p = 0``, off the CPU (a GPU's fused dropout kernel is fast already) and inside ``torch.compile``
(whose generated code draws its own random numbers). The masks differ from ``nn.Dropout``'s, draw for draw, so
a run trained with it is a different sample of the same training procedure, not a bit-identical rerun.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

__all__ = ["FastDropout", "fast_dropout", "use_fast_dropout"]

_LEVELS = 1 << 16  # each element compares one 16-bit field


def fast_dropout(x: Tensor, p: float, generator: torch.Generator | None = None) -> Tensor:
    """``x`` with each element zeroed with probability ``p`` (rounded to a multiple of 2⁻¹⁶), the others scaled
    by 1 / (1 − that probability). A training-mode dropout for CPU tensors; see the module's docstring."""
    if not 0.0 <= p < 1.0:
        raise ValueError(f"dropout p={p} is outside [0, 1); use a probability such as 0.1 (the paper's P_drop)")
    if not x.is_floating_point():
        raise ValueError(f"dropout needs a floating-point tensor, got dtype {x.dtype}")
    dropped = round(p * _LEVELS)  # of the 65,536 values a field takes, this many mean "drop"
    if dropped == 0 or x.numel() == 0:
        return x * 1.0  # a new tensor, as F.dropout returns
    n = x.numel()
    words = torch.empty((n + 3) // 4, dtype=torch.int64, device=x.device)
    words.random_(-(2**63), None, generator=generator)  # the full 64-bit range: four uniform 16-bit fields
    fields = words.view(torch.int16)[:n].view(x.shape)  # uniform on [-32768, 32767]
    keep = fields.ge(dropped - _LEVELS // 2)  # P(keep) = (65536 - dropped) / 65536
    scale = _LEVELS / (_LEVELS - dropped)
    return x * keep.to(x.dtype).mul_(scale)  # autograd keeps the scaled mask for the backward pass


class FastDropout(nn.Dropout):
    """``nn.Dropout`` with the cheaper mask of :func:`fast_dropout` in training mode on a CPU."""

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        if inplace:
            raise ValueError("FastDropout has no in-place form; use inplace=False (nn.Dropout's default)")
        super().__init__(p, inplace=False)

    def forward(self, x: Tensor) -> Tensor:
        if (
            not self.training
            or self.p == 0.0
            or x.device.type != "cpu"
            or not x.is_floating_point()
            or torch.compiler.is_compiling()
        ):
            return F.dropout(x, self.p, self.training)
        return fast_dropout(x, self.p)


def use_fast_dropout(model: nn.Module) -> int:
    """Replace every ``nn.Dropout`` inside ``model`` (exactly that class, not a subclass, and not in-place) by
    a :class:`FastDropout` of the same ``p``, in place; return how many were replaced."""
    swapped = 0
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if type(child) is nn.Dropout and not child.inplace:
                replacement = FastDropout(child.p)
                replacement.train(child.training)
                setattr(parent, name, replacement)
                swapped += 1
    return swapped

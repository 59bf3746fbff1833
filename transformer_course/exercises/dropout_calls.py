"""The dropout calls of the learner's code, recorded (notebooks 02–07): a checker judges dropout by where it acts, at
which rate and in which mode, never by the package's random zeros."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

__all__ = ["DROPOUT_WATCH", "Dropout", "DropoutCalls"]


@dataclass
class Dropout:
    """One dropout call: what it got (a copy, taken before the call), what it gave, its rate and its mode."""

    input: torch.Tensor
    output: torch.Tensor
    p: float
    training: bool

    @property
    def drops(self) -> bool:
        return self.training and self.p > 0


DROPOUTS = (F.dropout, torch.dropout, torch.dropout_)


class DropoutCalls(TorchFunctionMode):
    """Records every dropout the code run inside calls (``nn.Dropout``, ``F.dropout``, ``torch.dropout``), whatever
    draws its mask: a checker can then see where dropout acted, at which rate and in which mode, without asking for
    the package's random zeros (a loop over heads draws them in another order, and is right)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[Dropout] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func not in DROPOUTS:
            return func(*args, **kwargs)
        x = args[0] if args else kwargs.get("input")
        before = x.detach().clone() if isinstance(x, torch.Tensor) else x
        out = func(*args, **kwargs)
        rest = dict(zip(("p", "training") if func is F.dropout else ("p", "train"), args[1:]))
        rest.update(kwargs)
        p = float(rest.get("p", 0.5))
        training = bool(rest.get("training", rest.get("train", True)))
        self.calls.append(Dropout(before, out.detach() if isinstance(out, torch.Tensor) else out, p, training))
        return out

    @property
    def dropping(self) -> list[Dropout]:
        """The calls that zeroed something: training mode and a rate above 0."""
        return [call for call in self.calls if call.drops]


# what no_shortcuts must let through: the recorder runs inside the learner's code, but it is the checker's
DROPOUT_WATCH = f"{__name__}.DropoutCalls"

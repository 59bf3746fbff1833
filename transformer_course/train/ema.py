"""An exponential moving average (EMA) of the weights, kept beside the trained model (``Config.ema_decay``).

After every optimizer step each floating-point weight and buffer of the EMA model moves a step ``1 − decay``
towards the trained model's:

    ema ← decay · ema + (1 − decay) · weight          (one fused lerp over all tensors, on the device: no sync)

It starts as the model's initial weights. ``fit`` validates it at each validation beside the raw weights,
writes it as ``ema.pt`` (a model-only checkpoint that ``evaluate`` and ``translate`` load like ``best.pt``) and
``best-ema.pt`` (lowest EMA validation loss), and keeps it in ``last.pt``, so a resumed run continues the same
average. Polyak and Juditsky (1992) average the iterates; Kaddour et al. (2022) compare EMA with averaging.
"""

from __future__ import annotations

import copy

import torch
from torch import nn

from ..checkpoint import unwrap

__all__ = ["EMA"]


class EMA:
    """The running average of ``model``'s weights with ``decay`` (0 < decay < 1)."""

    def __init__(self, model: nn.Module, decay: float) -> None:
        if not 0.0 < decay < 1.0:
            raise ValueError(f"an EMA's decay must be in (0, 1), got decay={decay!r}; e.g. 0.999")
        self.decay = decay
        self.model = copy.deepcopy(unwrap(model)).eval().requires_grad_(False)  # no gradients, no dropout
        self._pairs = self._floating(model)

    def _floating(self, model: nn.Module) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        """(the EMA's tensors, the model's) for every floating-point parameter and buffer, in the same order."""
        # named_parameters/named_buffers list a tied matrix once (a state_dict would name it twice: two lerps)
        tensors = lambda m: {**dict(m.named_parameters()), **dict(m.named_buffers())}  # noqa: E731
        mine, theirs = tensors(self.model), tensors(unwrap(model))
        names = [name for name, value in mine.items() if value.is_floating_point()]
        return [mine[n].detach() for n in names], [theirs[n].detach() for n in names]

    @torch.no_grad()
    def update(self) -> None:
        """ema += (1 − decay) · (weight − ema) for every tensor at once (the model passed to the constructor)."""
        ema, weights = self._pairs
        torch._foreach_lerp_(ema, weights, 1.0 - self.decay)

    def state_dict(self) -> dict:
        return self.model.state_dict()

    def load_state_dict(self, state: dict) -> None:
        self.model.load_state_dict(state)  # copies into the same tensors: the pairs stay valid

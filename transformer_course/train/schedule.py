"""The optimizer and the learning-rate schedule (notebook 08; paper §5.3).

"We used the Adam optimizer with β1 = 0.9, β2 = 0.98 and ε = 10^-9. We varied the learning rate over
the course of training, according to the formula
lrate = d_model^-0.5 · min(step_num^-0.5, step_num · warmup_steps^-1.5)." (§5.3)
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from ..config import Config

__all__ = ["make_optimizer", "make_scheduler", "noam_lambda", "noam_rate"]


def noam_rate(step: int, d_model: int, warmup: int, factor: float = 1.0) -> float:
    """The paper's learning rate at ``step`` (counted from 1): factor · d_model^-0.5 · min(step^-0.5, step · warmup^-1.5).

    It rises linearly for ``warmup`` steps, peaks at ``factor · (d_model · warmup)^-0.5``, then decays
    as 1/√step.
    """
    if step < 1:
        raise ValueError(f"the Noam schedule counts steps from 1, got step={step}")
    if warmup < 1:
        raise ValueError(f"warmup must be at least 1 step, got warmup={warmup}")
    return factor * d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)


def noam_lambda(d_model: int, warmup: int, factor: float = 1.0) -> Callable[[int], float]:
    """The multiplier for ``LambdaLR``: after ``k`` optimizer steps the rate is ``noam_rate(k + 1)``,
    so the first update uses ``noam_rate(1)`` (the optimizer's base lr must be 1.0)."""
    return lambda k: noam_rate(k + 1, d_model, warmup, factor)


def make_optimizer(model: nn.Module) -> torch.optim.Adam:
    """Adam with β1 = 0.9, β2 = 0.98, ε = 1e-9 and base lr 1.0 (the schedule gives the real rate)."""
    return torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)


def make_scheduler(optimizer: torch.optim.Optimizer, config: Config) -> torch.optim.lr_scheduler.LambdaLR:
    """The Noam schedule of ``config`` (d_model, warmup, lr_factor) as a ``LambdaLR``."""
    return torch.optim.lr_scheduler.LambdaLR(optimizer, noam_lambda(config.d_model, config.warmup, config.lr_factor))

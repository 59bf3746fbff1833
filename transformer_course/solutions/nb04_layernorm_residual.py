"""Reference solutions for notebook 04 (LayerNorm and residual connections; paper §3.1, §5.4)."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor


def layer_norm(x: Tensor, gamma: Tensor, beta: Tensor, eps: float = 1e-5) -> Tensor:
    """γ · (x − mean) / √(var + ε) + β over the last dimension; the biased variance, as nn.LayerNorm."""
    mean = x.mean(dim=-1, keepdim=True)  # (..., 1)
    var = x.var(dim=-1, unbiased=False, keepdim=True)  # (..., 1)
    return gamma * (x - mean) / torch.sqrt(var + eps) + beta  # (..., features)


def residual(
    x: Tensor, sublayer: Callable[[Tensor], Tensor], norm: Callable[[Tensor], Tensor], norm_first: bool
) -> Tensor:
    """post-LN (the paper): LayerNorm(x + Sublayer(x)); pre-LN: x + Sublayer(LayerNorm(x))."""
    if norm_first:
        return x + sublayer(norm(x))
    return norm(x + sublayer(x))

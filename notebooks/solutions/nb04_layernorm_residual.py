"""Reference solutions for notebook 04 (LayerNorm and residual connections; paper §3.1, §5.4).

The build cell's reference, my_transformer/norm_residual.py (LayerNorm, ResidualConnection with post-LN and
pre-LN), is in notebooks/solutions/my_transformer/norm_residual.py."""

from __future__ import annotations

import torch
from torch import Tensor


def rms_norm(x: Tensor, gamma: Tensor, eps: float = 1e-5) -> Tensor:
    """Exercise 1: x / √(mean(x²) + ε) · γ over the last dimension (Zhang & Sennrich, 2019); no mean, no β."""
    mean_square = x.pow(2).mean(dim=-1, keepdim=True)  # (..., 1)
    return gamma * x / torch.sqrt(mean_square + eps)  # (..., features)


# Exercise 2: values near 1,000 with a spread of 0.1. In float32, x² ≈ 1,000,000 keeps about 7 digits, so
# E[x²] − E[x]² (line 13) loses the variance (0.0125) in rounding; here it even comes out negative, so
# FusedLayerNorm returns NaN where LayerNorm returns numbers.
counterexample = torch.tensor([[1000.0, 1000.1, 1000.2, 1000.3]])  # (1, 4)
bug_line = 13  # var = mean_square - mean * mean: compute it as ((x - mean) ** 2).mean(-1), i.e. x.var(unbiased=False)


def layer_norm_parameter_count(N: int, d_model: int, norm_first: bool) -> int:
    """Exercise 3: an Add & Norm per sub-layer (2 per encoder layer, 3 per decoder layer), plus a final
    LayerNorm per stack in pre-LN; each LayerNorm has γ and β of d_model numbers."""
    norms = N * 2 + N * 3
    if norm_first:
        norms += 2  # encoder.norm and decoder.norm
    return norms * 2 * d_model


# The questions: q1 Σ y² of a LayerNorm output with γ = 1, β = 0 and d = 512 features (mean 0, biased variance 1,
# so the sum is d); q2 the post-LN stack with zero sub-layers gives LayerNorm(x) (LayerNorm of a normalised row
# changes it by ~ε only).
QUIZ = {"q1": 512, "q2": "b"}

"""Reference solutions for notebook 04 (LayerNorm and residual connections; paper §3.1, §5.4)."""

from __future__ import annotations

import torch
from torch import Tensor, nn


def rms_norm(x: Tensor, gamma: Tensor, eps: float = 1e-5) -> Tensor:
    """Exercise 1: x / √(mean(x²) + ε) · γ over the last dimension (Zhang & Sennrich, 2019); no mean, no β."""
    mean_square = x.pow(2).mean(dim=-1, keepdim=True)  # (..., 1)
    return gamma * x / torch.sqrt(mean_square + eps)  # (..., features)


# Exercise 2: line 10 adds norm(x) where the residual must carry x itself; line 11 drops out the whole sum,
# residual included, where the paper drops only the sub-layer's output (§5.4).
bug_lines = [10, 11]


class FixedResidualConnection(nn.Module):
    def __init__(self, d_model, dropout, norm_first=False):
        super().__init__()
        self.norm = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)
        self.norm_first = norm_first

    def forward(self, x, sublayer):
        if self.norm_first:
            return x + self.dropout(sublayer(self.norm(x)))
        return self.norm(x + self.dropout(sublayer(x)))


def layer_norm_parameter_count(N: int, d_model: int, norm_first: bool) -> int:
    """Exercise 3: an Add & Norm per sub-layer (2 per encoder layer, 3 per decoder layer), plus a final
    LayerNorm per stack in pre-LN; each LayerNorm has γ and β of d_model numbers."""
    norms = N * 2 + N * 3
    if norm_first:
        norms += 2  # encoder.norm and decoder.norm
    return norms * 2 * d_model


question_batch_norm = "b"
question_warmup = "a"

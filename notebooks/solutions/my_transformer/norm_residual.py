"""LayerNorm and the residual connection around every sub-layer, written in notebook 04 (paper §3.1, §5.4)."""

import torch
from torch import nn


class LayerNorm(nn.Module):
    """γ · (x − mean) / √(var + ε) + β over the last dimension (Ba et al., 2016): the numbers of nn.LayerNorm."""

    def __init__(self, features, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(features))  # γ, (features,)
        self.bias = nn.Parameter(torch.zeros(features))  # β, (features,)

    def forward(self, x):
        """x (..., features) → (..., features): each position normalised over its own features.

        mean and variance over the last dimension only (keepdim=True keeps them broadcastable), the biased
        variance (divide by n), ε inside the square root, then the gain self.weight and the bias self.bias."""
        mean = x.mean(dim=-1, keepdim=True)  # (..., 1): one mean per position
        var = x.var(dim=-1, unbiased=False, keepdim=True)  # (..., 1): the biased variance
        return self.weight * (x - mean) / torch.sqrt(var + self.eps) + self.bias  # (..., features)


class ResidualConnection(nn.Module):
    """post-LN (the paper): LayerNorm(x + Dropout(Sublayer(x))); pre-LN: x + Dropout(Sublayer(LayerNorm(x)))."""

    def __init__(self, d_model, dropout, norm_first=False):
        super().__init__()
        self.norm = LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)  # on the sub-layer's output only (§5.4)
        self.norm_first = norm_first

    def forward(self, x, sublayer):
        """x (batch, len, d_model) → (batch, len, d_model); sublayer: a function that keeps that shape.

        norm_first=False (post-LN, the paper): LayerNorm(x + Dropout(Sublayer(x))).
        norm_first=True (pre-LN): x + Dropout(Sublayer(LayerNorm(x))).
        Use self.norm and self.dropout; dropout acts on the sub-layer's output only."""
        if self.norm_first:
            return x + self.dropout(sublayer(self.norm(x)))  # pre-LN
        return self.norm(x + self.dropout(sublayer(x)))  # post-LN, the paper

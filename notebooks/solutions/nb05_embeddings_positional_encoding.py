"""Reference solutions of notebook 05's exercises (embeddings and positional encoding; §3.4, §3.5).
Try the exercises first."""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn


def pe_dot(k: int, d_model: int) -> float:
    """PE(pos) · PE(pos + k) = Σ_i [sin(ω_i pos) sin(ω_i (pos + k)) + cos(ω_i pos) cos(ω_i (pos + k))]
    = Σ_i cos(ω_i k), one term per (sin, cos) pair: no pos left in it."""
    return sum(math.cos(k / 10000 ** (2 * i / d_model)) for i in range(d_model // 2))


class LearnedPositionalEncoding(nn.Module):
    """One trained vector per position (Table 3, row E): x + table[:len], then dropout."""

    def __init__(self, d_model: int, dropout: float, max_len: int = 512) -> None:
        super().__init__()
        self.table = nn.Parameter(torch.randn(max_len, d_model) * 0.02)  # (max_len, d_model), trained
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        length = x.size(1)
        if length > self.table.size(0):
            raise ValueError(f"a sequence of {length} tokens is longer than max_len={self.table.size(0)}")
        return self.dropout(x + self.table[:length])  # (B, L, d_model) + (L, d_model)


# the quiz: q1 the longest wavelength for d_model = 512 (in positions), q2 and q3 multiple choice
QUIZ = {"q1": 2 * math.pi * 10000 ** (510 / 512), "q2": "b", "q3": "b"}

"""Reference solutions of notebook 05's exercises (embeddings and positional encoding; §3.4, §3.5).
Try the exercises first.

The build cell's reference, my_transformer/embeddings.py (Embeddings, sinusoidal_table, PositionalEncoding with
kind="sinusoidal" and kind="learned", PositionwiseFeedForward), is in notebooks/solutions/my_transformer/embeddings.py."""

from __future__ import annotations

import math

import torch
from torch import Tensor


def pe_dot(k: int, d_model: int) -> float:
    """PE(pos) · PE(pos + k) = Σ_i [sin(ω_i pos) sin(ω_i (pos + k)) + cos(ω_i pos) cos(ω_i (pos + k))]
    = Σ_i cos(ω_i k), one term per (sin, cos) pair: no pos left in it, and no table needed."""
    return sum(math.cos(k / 10000 ** (2 * i / d_model)) for i in range(d_model // 2))


def rotate(x: Tensor) -> Tensor:
    """Exercise 2, rotary positions (Su et al., 2021): pair (2i, 2i + 1) of position p turned by the angle p·ω_i."""
    length, d_model = x.size(1), x.size(2)
    pos = torch.arange(length, dtype=torch.float32)[:, None]  # (len, 1)
    omega = 1 / 10000 ** (torch.arange(0, d_model, 2, dtype=torch.float32) / d_model)  # (d_model/2,)
    cos, sin = torch.cos(pos * omega), torch.sin(pos * omega)  # (len, d_model/2) each
    even, odd = x[..., 0::2], x[..., 1::2]  # (batch, len, d_model/2) each
    out = torch.empty_like(x)
    out[..., 0::2] = even * cos - odd * sin
    out[..., 1::2] = even * sin + odd * cos
    return out  # (batch, len, d_model)


# the quiz: q1 the longest wavelength for d_model = 512, in positions; q2 the two mean-pooled sentence vectors are
# equal; q3 the expected squared length of (word vector × √d_model + positional vector) for d_model = 512:
# d_model (word) + d_model/2 (positions) + 0 (the cross term averages out)
QUIZ = {"q1": 2 * math.pi * 10000 ** (510 / 512), "q2": "b", "q3": 768}

"""Reference solutions for notebook 05 (embeddings and positional encoding; paper §3.4, §3.5)."""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn


def positional_encoding(max_len: int, d_model: int) -> Tensor:
    """PE(pos, 2i) = sin(pos / 10000^(2i/d_model)), PE(pos, 2i+1) = cos(pos / 10000^(2i/d_model))."""
    pos = torch.arange(max_len, dtype=torch.float32)[:, None]  # (max_len, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float32)  # (d_model/2,)  the even column indices 2i
    angle = pos / 10000 ** (two_i / d_model)  # (max_len, d_model/2)
    pe = torch.zeros(max_len, d_model)
    pe[:, 0::2] = torch.sin(angle)  # even columns
    pe[:, 1::2] = torch.cos(angle)  # odd columns
    return pe


def embed(tokens: Tensor, lut: nn.Embedding, pe: Tensor) -> Tensor:
    """Token ids (batch, len) → lut(tokens) · √d_model + PE[:len]: (batch, len, d_model)."""
    d_model = lut.embedding_dim
    return lut(tokens) * math.sqrt(d_model) + pe[: tokens.size(1)]  # (B, L, d_model)


def shift_matrix(k: int, d_model: int) -> Tensor:
    """The (d_model, d_model) matrix M with PE(pos + k) = M @ PE(pos) for every pos (§3.5).

    One 2×2 rotation per (sin, cos) pair of columns: sin(a + b) = sin a cos b + cos a sin b,
    cos(a + b) = cos a cos b − sin a sin b.
    """
    M = torch.zeros(d_model, d_model)
    for i in range(d_model // 2):
        w = 1 / 10000 ** (2 * i / d_model)  # the frequency of pair i
        c, s = math.cos(k * w), math.sin(k * w)
        M[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = torch.tensor([[c, s], [-s, c]])
    return M

"""Reference solutions of notebook 06's exercises (the encoder; §3.1, §3.2.3, §4). Try the exercises first."""

from __future__ import annotations

import torch
from torch import Tensor

# Exercise 1: without the mask, every query of the padded sentence also reads the two <pad> keys (its real
# positions and its pad positions all change); sentence 0 has no <pad>, so nothing changes there.
CHANGES = [[False, False, False, False, False], [True, True, True, True, True]]


def local_window_mask(src: Tensor, pad: int, w: int) -> Tensor:
    """(batch, 1, S, S): query q may attend to key k when k is not <pad> and |q − k| ≤ w (§4)."""
    positions = torch.arange(src.size(1))
    near = (positions[:, None] - positions[None, :]).abs() <= w  # (S, S): the centred window
    return near & (src != pad)[:, None, None, :]  # (S, S) & (B, 1, 1, S) → (B, 1, S, S)


def encoder_parameter_count(N: int, d_model: int, d_ff: int) -> int:
    """Parameters of N encoder layers (no embeddings): attention, FFN and two LayerNorms per layer."""
    attention = 4 * d_model * d_model + 4 * d_model  # W^Q, W^K, W^V, W^O (d_model × d_model each) + biases
    ffn = d_model * d_ff + d_ff + d_ff * d_model + d_model  # W_1, b_1, W_2, b_2
    norms = 2 * (2 * d_model)  # two LayerNorms, each γ and β
    return N * (attention + ffn + norms)


QUIZ = {"q1": "b", "q2": 3, "q3": 12}

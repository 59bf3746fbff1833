"""Reference solutions of notebook 06's exercises (the encoder; §3.1, §3.2.3, §4). Try the exercises first."""

from __future__ import annotations

from torch import Tensor

# Exercise 1: without the mask, every query of the padded sentence also reads the two <pad> keys (its real
# positions and its pad positions all change); sentence 0 has no <pad>, so nothing changes there.
CHANGES = [[False, False, False, False, False], [True, True, True, True, True]]


def left_padded_positions(src: Tensor, pad: int) -> Tensor:
    """(batch, S) seat numbers: each real token's index among the real tokens of its sentence (0 for the first),
    so <pad> in front of a sentence move no seat; a <pad> gets 0 or the seat before it (any seat would do: no
    query reads a <pad> key)."""
    real = (src != pad).long()  # (B, S): 1 for a real token
    return (real.cumsum(dim=1) - 1).clamp(min=0)  # (B, S): 0, 1, 2, … counted over the real tokens only


def encoder_parameter_count(N: int, d_model: int, d_ff: int) -> int:
    """Parameters of N encoder layers (no embeddings): attention, FFN and two LayerNorms per layer."""
    attention = 4 * d_model * d_model + 4 * d_model  # W^Q, W^K, W^V, W^O (d_model × d_model each) + biases
    ffn = d_model * d_ff + d_ff + d_ff * d_model + d_model  # W_1, b_1, W_2, b_2
    norms = 2 * (2 * d_model)  # two LayerNorms, each γ and β
    return N * (attention + ffn + norms)


# q1: the 6 entries are one layer, and parameters() lists a shared tensor once: 4·512² + 4·512 (attention)
# + 2·512·2048 + 2048 + 512 (FFN) + 2·2·512 (two LayerNorms) = 3,152,384. q3: 2 per pre-LN layer × 6 + 1 at the end.
QUIZ = {"q1": 3152384, "q2": 3, "q3": 13}

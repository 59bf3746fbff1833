"""Reference solutions for notebook 06 (the encoder; paper §3.1, §3.2.3, §3.3)."""

from __future__ import annotations

from collections.abc import Callable

from torch import Tensor


def encoder_layer(
    x: Tensor, src_mask: Tensor, self_attn: Callable, feed_forward: Callable, norm_1: Callable, norm_2: Callable
) -> Tensor:
    """One post-LN encoder layer: x = LayerNorm(x + SelfAttn(x)); x = LayerNorm(x + FFN(x))."""
    x = norm_1(x + self_attn(x, mask=src_mask))  # (B, S, d_model)
    return norm_2(x + feed_forward(x))  # (B, S, d_model)


def encoder_parameter_count(N: int, d_model: int, d_ff: int) -> int:
    """Parameters of N encoder layers (no embeddings): attention, FFN and two LayerNorms per layer."""
    attention = 4 * d_model * d_model + 4 * d_model  # W^Q, W^K, W^V, W^O (d_model × d_model each) + biases
    ffn = d_model * d_ff + d_ff + d_ff * d_model + d_model  # W_1, b_1, W_2, b_2
    norms = 2 * (2 * d_model)  # two LayerNorms, each γ and β
    return N * (attention + ffn + norms)

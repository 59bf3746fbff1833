"""Reference solutions of notebook 03's exercises (multi-head attention, §3.2.2)."""

import torch


def split_heads(x: torch.Tensor, heads: int) -> torch.Tensor:
    batch, length, d_model = x.shape
    return x.view(batch, length, heads, d_model // heads).transpose(1, 2)  # (batch, heads, len, d_k)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    batch, heads, length, d_k = x.shape
    return x.transpose(1, 2).reshape(batch, length, heads * d_k)  # (batch, len, d_model)


def mha_parameter_count(d_model: int, heads: int) -> int:
    return 4 * (d_model * d_model + d_model)  # W^Q, W^K, W^V, W^O with their biases; heads do not change it

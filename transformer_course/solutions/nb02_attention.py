"""Reference solutions of notebook 02's exercises (scaled dot-product attention, §3.2.1)."""

import math

import torch


def attention(query, key, value, mask=None):
    d_k = query.size(-1)
    scores = query @ key.transpose(-2, -1) / math.sqrt(d_k)  # (..., q_len, k_len)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))  # True = may attend
    weights = scores.softmax(dim=-1)  # each row sums to 1
    return weights @ value, weights  # (..., q_len, d_v), (..., q_len, k_len)


def dot_product_std(d_k: int, samples: int = 10_000) -> float:
    q = torch.randn(samples, d_k)  # entries with mean 0 and variance 1
    k = torch.randn(samples, d_k)
    return (q * k).sum(-1).std().item()  # ≈ √d_k

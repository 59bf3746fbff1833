"""Scaled dot-product attention, written in notebook 02 (paper §3.2.1, equation 1)."""

import math

import torch


def scaled_dot_product_attention(query, key, value, mask=None, dropout=None):
    """softmax(Q Kᵀ / √d_k) V.

    query (..., q_len, d_k), key (..., k_len, d_k), value (..., k_len, d_v); mask boolean, True = may attend,
    broadcastable to (..., q_len, k_len); dropout an nn.Dropout or None, applied to the weights.
    Returns the output (..., q_len, d_v) and the weights (..., q_len, k_len).
    """
    d_k = query.size(-1)
    scores = query @ key.transpose(-2, -1) / math.sqrt(d_k)  # (..., q_len, k_len)
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)  # most negative float: no NaN rows
    weights = scores.softmax(dim=-1)  # (..., q_len, k_len), each row sums to 1
    if dropout is not None:
        weights = dropout(weights)  # zeroes some weights while training (notebook 04)
    return weights @ value, weights  # (..., q_len, d_v), (..., q_len, k_len)

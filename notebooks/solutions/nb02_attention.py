"""Reference solutions of notebook 02's exercises (scaled dot-product attention, §3.2.1)."""

import math

import torch


def attention(query, key, value, mask=None, dropout=None):
    """The function of my_transformer/attention.py, as the notebook writes it (not an exercise)."""
    d_k = query.size(-1)
    scores = query @ key.transpose(-2, -1) / math.sqrt(d_k)  # (..., q_len, k_len)
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)  # True = may attend
    weights = scores.softmax(dim=-1)  # each row sums to 1
    if dropout is not None:
        weights = dropout(weights)
    return weights @ value, weights  # (..., q_len, d_v), (..., q_len, k_len)


def additive_attention(query, key, value, W_q, W_k, w_v, mask=None):
    """Exercise 1: score(q_i, k_j) = w_vᵀ tanh(q_i W_q + k_j W_k) (Bahdanau et al., 2014), no scaling."""
    features = (query @ W_q)[:, :, None, :] + (key @ W_k)[:, None, :, :]  # (batch, q_len, k_len, d_hidden)
    scores = torch.tanh(features) @ w_v  # (batch, q_len, k_len)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = scores.softmax(dim=-1)  # (batch, q_len, k_len)
    return weights @ value, weights  # (batch, q_len, d_v), (batch, q_len, k_len)


# Exercise 2: line 2 reads k_len (key.size(-2)) instead of d_k; line 6 hides the keys that may be attended
# (masked_fill(~mask, ...)); line 7 normalises over the queries (softmax(dim=-1)).
bug_lines = [2, 6, 7]


def fixed_attention(query, key, value, mask=None):
    d_k = key.size(-1)
    scores = query @ key.transpose(-2, -1)
    scores = scores / d_k**0.5
    if mask is not None:
        scores = scores.masked_fill(~mask, -1e9)
    weights = scores.softmax(dim=-1)
    return weights @ value, weights


def weights_bytes(batch, heads, q_len, k_len, bytes_per_number=4):
    """Exercise 3: one weight per (query, key) pair, per head, per sentence."""
    return batch * heads * q_len * k_len * bytes_per_number


question_scaling = "c"
question_mask_sum = "b"
question_additive = "d"

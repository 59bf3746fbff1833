"""Reference solutions of notebook 03's exercises (multi-head attention, §3.2.2). Try the exercises first."""

import math

import torch


def predicted_shapes(batch, T, S, d_model, heads):
    """Exercise 1: cross-attention, T queries from the target, S keys and values from the memory."""
    d_k = d_model // heads
    return {
        "q": (batch, heads, T, d_k),  # the queries come from the target, cut into heads
        "k": (batch, heads, S, d_k),  # the keys come from the source (the encoder's memory)
        "weights": (batch, heads, T, S),  # one row per query, one column per key, in every head
        "heads_out": (batch, heads, T, d_k),  # one weighted average of the values per query
        "output": (batch, T, d_model),  # merged and projected by W^O
    }


def attention_parameter_count(d_model, heads, d_k, d_v):
    """Exercise 2: W^Q and W^K are d_model × heads·d_k, W^V is d_model × heads·d_v, W^O is heads·d_v × d_model."""
    w_q = w_k = d_model * heads * d_k + heads * d_k  # weight + bias
    w_v = d_model * heads * d_v + heads * d_v
    w_o = heads * d_v * d_model + d_model
    return w_q + w_k + w_v + w_o


def grouped_query_attention(query, key, value, mask=None):
    """Exercise 3: query (B, heads, T, d_k); key, value (B, groups, S, d_k); neighbouring query heads share one."""
    share = query.size(1) // key.size(1)  # query heads per key/value head
    key = key.repeat_interleave(share, dim=1)  # (B, heads, S, d_k): heads 0 … share−1 get group 0, …
    value = value.repeat_interleave(share, dim=1)  # (B, heads, S, d_k)
    scores = query @ key.transpose(-2, -1) / math.sqrt(query.size(-1))  # (B, heads, T, S)
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = scores.softmax(dim=-1)  # (B, heads, T, S)
    return weights @ value, weights  # (B, heads, T, d_k), (B, heads, T, S)


question_gqa_parameters = 512 * 512 + 2 * 512 * (2 * 64)  # W^Q full; W^K and W^V with 2 heads of d_k = 64
question_cross = "b"

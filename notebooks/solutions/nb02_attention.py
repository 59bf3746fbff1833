"""Reference solutions of notebook 02's exercises (scaled dot-product attention, §3.2.1)."""

import math

import torch


def additive_attention(query, key, value, W_q, W_k, w_v, mask=None):
    """Exercise 1: score(q_i, k_j) = w_vᵀ tanh(q_i W_q + k_j W_k) (Bahdanau et al., 2014), no scaling."""
    features = (query @ W_q)[:, :, None, :] + (key @ W_k)[:, None, :, :]  # (batch, q_len, k_len, d_hidden)
    scores = torch.tanh(features) @ w_v  # (batch, q_len, k_len)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = scores.softmax(dim=-1)  # (batch, q_len, k_len)
    return weights @ value, weights  # (batch, q_len, d_v), (batch, q_len, k_len)


# Exercise 2 (a): line 2 scales by √d_v (value.size(-1)) instead of √d_k (query.size(-1)); line 5 fills with -inf,
# so a query that may see no key gets exp(-inf) / 0 = NaN; line 6 subtracts the largest score of the whole
# (q_len, k_len) matrix, not of each row, so a row whose scores lie far below another row's underflows to 0 / 0.
bug_lines = [2, 5, 6]

# Exercise 2 (b): one input per bug, each on which the paper's formula is exact.
cases = [
    (torch.randn(1, 2, 4), torch.randn(1, 3, 4), torch.randn(1, 3, 2)),  # d_v = 2 ≠ d_k = 4: line 2
    (  # query 1 may see no key: -inf everywhere in its row gives 0 / 0 (line 5)
        torch.randn(1, 2, 4),
        torch.randn(1, 3, 4),
        torch.randn(1, 3, 4),
        torch.tensor([[[True, True, True], [False, False, False]]]),
    ),
    (  # row 0's scores (150, 0, 0) lie 150 above row 1's (0, 0, 0): exp(−150) underflows in row 1 (line 6)
        torch.tensor([[[300.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]]]),
        torch.eye(3, 4)[None],
        torch.randn(1, 3, 4),
    ),
]


def longest_sentence(memory_bytes, batch, heads, bytes_per_number=4):
    """Exercise 3: self-attention's weights are batch · heads · n · n numbers (q_len = k_len = n): the largest whole
    n with batch · heads · n² · bytes_per_number ≤ memory_bytes."""
    return math.isqrt(memory_bytes // (batch * heads * bytes_per_number))


question_scaling = 2 * 2 * 256**0.5 / 256**0.5  # std of q_i k_i is 2 · 2; of the sum √256 times that; scaled: 4
question_mask_sum = 2 / (2 * math.e + 2)  # scores + mask = 1, 1, 0, 0: the pads keep 2 / (2e + 2)
question_saturation = 1 / (1 + math.exp(-2))  # scaled scores +1 and −1

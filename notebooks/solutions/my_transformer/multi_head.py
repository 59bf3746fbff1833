"""Multi-head attention, written in notebook 03 (paper §3.2.2)."""

import torch.nn.functional as F
from torch import nn

from .attention import scaled_dot_product_attention  # yours, from notebook 02


class MultiHeadAttention(nn.Module):
    """MultiHead(Q, K, V) = Concat(head_1, …, head_h) W^O, head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V)."""

    def __init__(self, d_model, heads, dropout=0.0):
        super().__init__()
        if d_model % heads != 0:
            raise ValueError(f"d_model={d_model} is not divisible by heads={heads}; choose a multiple of heads")
        self.heads, self.d_k = heads, d_model // heads
        self.in_proj = nn.Linear(d_model, 3 * d_model)  # rows: W^Q, W^K, W^V of all heads
        self.out_proj = nn.Linear(d_model, d_model)  # W^O
        self.dropout = nn.Dropout(dropout)  # on the attention weights
        self.weights = None  # (batch, heads, q_len, k_len) of the last call

    def split_heads(self, x):
        """(batch, len, d_model) → (batch, heads, len, d_k): head i gets features i·d_k … (i+1)·d_k − 1."""
        batch, length, _ = x.shape
        return x.view(batch, length, self.heads, self.d_k).transpose(1, 2)  # (batch, heads, len, d_k)

    def merge_heads(self, x):
        """(batch, heads, len, d_k) → (batch, len, heads·d_k): the Concat of the formula."""
        batch, _, length, _ = x.shape
        return x.transpose(1, 2).reshape(batch, length, self.heads * self.d_k)  # (batch, len, d_model)

    def forward(self, query, key, value, mask=None):
        """query (batch, q_len, d_model), key and value (batch, k_len, d_model); mask True = may attend,
        broadcastable to (batch, heads, q_len, k_len). Keeps the weights in self.weights (detached).
        Returns (batch, q_len, d_model)."""
        w_q, w_k, w_v = self.in_proj.weight.chunk(3)  # 3 × (d_model, d_model)
        b_q, b_k, b_v = self.in_proj.bias.chunk(3)  # 3 × (d_model,)
        q = self.split_heads(F.linear(query, w_q, b_q))  # (batch, heads, q_len, d_k)
        k = self.split_heads(F.linear(key, w_k, b_k))  # (batch, heads, k_len, d_k)
        v = self.split_heads(F.linear(value, w_v, b_v))  # (batch, heads, k_len, d_k)
        x, weights = scaled_dot_product_attention(q, k, v, mask, self.dropout)  # (batch, heads, q_len, d_k)
        self.weights = weights.detach()  # (batch, heads, q_len, k_len)
        return self.out_proj(self.merge_heads(x))  # (batch, q_len, d_model)

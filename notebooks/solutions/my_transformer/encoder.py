"""Notebook 06: the encoder layer and the encoder stack (§3.1)."""

import copy

from torch import nn

from .embeddings import PositionwiseFeedForward
from .multi_head import MultiHeadAttention
from .norm_residual import LayerNorm, ResidualConnection


def clones(layer, N):
    """N deep copies of ``layer`` in an nn.ModuleList: N layers of one shape, each with its own weights."""
    return nn.ModuleList([copy.deepcopy(layer) for _ in range(N)])


def final_norm(d_model, norm_first):
    """What a stack puts after its last layer: a LayerNorm(d_model) for pre-LN (``norm_first=True``); nothing
    (``nn.Identity()``) for post-LN, whose last layer already ends with one."""
    return LayerNorm(d_model) if norm_first else nn.Identity()


class EncoderLayer(nn.Module):
    """Self-attention, then the FFN, each inside a residual connection (post-LN, or pre-LN)."""

    def __init__(self, d_model, heads, d_ff, dropout, norm_first=False):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, heads)
        self.feed_forward = PositionwiseFeedForward(d_model, d_ff)
        self.sublayer = nn.ModuleList([ResidualConnection(d_model, dropout, norm_first) for _ in range(2)])
        self.d_model, self.norm_first = d_model, norm_first

    def forward(self, x, src_mask):
        """x (batch, S, d_model), src_mask (batch, 1, 1, S), True = may attend → (batch, S, d_model)."""
        x = self.sublayer[0](x, lambda x: self.self_attn(x, x, x, src_mask))  # (B, S, d_model): Q = K = V = x
        return self.sublayer[1](x, self.feed_forward)  # (B, S, d_model)


class Encoder(nn.Module):
    """N copies of one layer, each with its own weights; a pre-LN stack ends with one more LayerNorm."""

    def __init__(self, layer, N):
        super().__init__()
        self.layers = clones(layer, N)
        self.norm = final_norm(layer.d_model, layer.norm_first)

    def forward(self, x, src_mask):
        """x (batch, S, d_model), src_mask (batch, 1, 1, S) → memory (batch, S, d_model)."""
        for layer in self.layers:
            x = layer(x, src_mask)  # (B, S, d_model) → (B, S, d_model)
        return self.norm(x)

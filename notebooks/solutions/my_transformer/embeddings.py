"""Notebook 05: token embeddings × √d_model, the sinusoidal positional encoding, the position-wise FFN."""

import math

import torch
from torch import nn


class Embeddings(nn.Module):
    """Token ids → vectors, multiplied by √d_model (§3.4)."""

    def __init__(self, vocab, d_model):
        super().__init__()
        self.lut = nn.Embedding(vocab, d_model)  # the (vocab, d_model) table
        self.d_model = d_model

    def forward(self, tokens):
        return self.lut(tokens) * math.sqrt(self.d_model)  # (B, L) → (B, L, d_model)


class PositionalEncoding(nn.Module):
    """Adds a position table to the embeddings, then dropout (§5.4): the sinusoids of §3.5, or learned ones."""

    def __init__(self, d_model, dropout, max_len=512, kind="sinusoidal"):
        super().__init__()
        if kind not in ("sinusoidal", "learned"):
            raise ValueError(f"positional kind must be 'sinusoidal' or 'learned', got {kind!r}")
        self.kind = kind
        self.dropout = nn.Dropout(dropout)
        if kind == "learned":
            self.table = nn.Parameter(self.learned_table(max_len, d_model))  # trained with the model
        else:
            # A buffer moves with .to(device) but is not trained; persistent=False keeps it out of the state_dict.
            self.register_buffer("table", self.sinusoidal_table(max_len, d_model), persistent=False)

    def sinusoidal_table(self, max_len, d_model):
        """PE(pos, 2i) = sin(pos / 10000^(2i/d_model)), PE(pos, 2i+1) = cos(…): (max_len, d_model)."""
        pos = torch.arange(max_len, dtype=torch.float32)[:, None]  # (max_len, 1)
        two_i = torch.arange(0, d_model, 2, dtype=torch.float32)  # (d_model/2,): 0, 2, 4, …
        angle = pos / 10000 ** (two_i / d_model)  # (max_len, d_model/2)
        table = torch.zeros(max_len, d_model)
        table[:, 0::2] = torch.sin(angle)  # even columns: sin
        table[:, 1::2] = torch.cos(angle)  # odd columns: cos
        return table

    def learned_table(self, max_len, d_model):
        """One vector per position, drawn from N(0, 0.02²) (the package's start): (max_len, d_model)."""
        return torch.randn(max_len, d_model) * 0.02

    def forward(self, x):
        return self.dropout(x + self.table[: x.size(1)])  # (B, L, d_model) + (L, d_model)


class PositionwiseFeedForward(nn.Module):
    """FFN(x) = max(0, x W_1 + b_1) W_2 + b_2 at every position alike (§3.3)."""

    def __init__(self, d_model, d_ff, dropout=0.0):
        super().__init__()
        self.w_1 = nn.Linear(d_model, d_ff)
        self.w_2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)  # on the hidden layer; 0 by default, as in the paper

    def forward(self, x):
        return self.w_2(self.dropout(torch.relu(self.w_1(x))))  # (B, L, d_model) → (B, L, d_ff) → (B, L, d_model)

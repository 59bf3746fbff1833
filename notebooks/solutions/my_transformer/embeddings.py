"""Notebook 05: token embeddings × √d_model, the positional encoding (sinusoidal or learned), the position-wise FFN."""

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
        """tokens (batch, len) of ids → (batch, len, d_model): each id's row of self.lut, times √d_model."""
        return self.lut(tokens) * math.sqrt(self.d_model)  # (B, L) → (B, L, d_model)


def sinusoidal_table(max_len, d_model):
    """The (max_len, d_model) table of §3.5: PE(pos, 2i) = sin(pos / 10000^(2i/d_model)) in the even columns,
    PE(pos, 2i+1) = cos(pos / 10000^(2i/d_model)) in the odd columns, for pos = 0 … max_len − 1."""
    pos = torch.arange(max_len, dtype=torch.float32)[:, None]  # (max_len, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float32)  # (d_model/2,): 0, 2, 4, …
    angle = pos * torch.exp(two_i * (-math.log(10000.0) / d_model))  # pos / 10000^(2i/d_model): (max_len, d_model/2)
    table = torch.zeros(max_len, d_model)
    table[:, 0::2] = torch.sin(angle)  # even columns: sin
    table[:, 1::2] = torch.cos(angle)  # odd columns: cos
    return table


class PositionalEncoding(nn.Module):
    """Adds a (max_len, d_model) table of positions to the embeddings, then dropout (§3.5, §5.4).

    kind="sinusoidal": the paper's fixed table; kind="learned": one trained vector per position (Table 3, row E)."""

    def __init__(self, d_model, dropout, max_len=512, kind="sinusoidal"):
        super().__init__()
        if kind not in ("sinusoidal", "learned"):
            raise ValueError(f"positional kind must be 'sinusoidal' or 'learned', got {kind!r}")
        self.kind, self.max_len = kind, max_len
        self.dropout = nn.Dropout(dropout)
        self.make_table(d_model, max_len)  # sets self.table

    def make_table(self, d_model, max_len):
        """Set self.table, of shape (max_len, d_model), named "table" either way (weights copy by name):

        kind="sinusoidal": sinusoidal_table(max_len, d_model) as a buffer, register_buffer(..., persistent=False):
        it moves with .to(device), is not trained and not saved (it can always be computed again);
        kind="learned": an nn.Parameter the optimizer trains, drawn from a normal distribution with mean 0 and
        standard deviation 0.02 (small next to the word vectors)."""
        if self.kind == "sinusoidal":
            self.register_buffer("table", sinusoidal_table(max_len, d_model), persistent=False)
        else:
            self.table = nn.Parameter(torch.randn(max_len, d_model) * 0.02)  # (max_len, d_model), trained

    def forward(self, x, start=0):
        """x (batch, len, d_model) holds positions start … start + len − 1 (start > 0 when decoding step by step).

        Return Dropout(x + the table's rows for those positions), shape (batch, len, d_model). A sequence that
        runs past max_len has no rows: raise a ValueError that names max_len."""
        end = start + x.size(1)
        if end > self.max_len:
            raise ValueError(
                f"sequence of length {end} is longer than the positional table (max_len={self.max_len}); "
                f"shorten the input or build the model with a larger max_len"
            )
        return self.dropout(x + self.table[start:end])  # (B, L, d_model) + (L, d_model)


class PositionwiseFeedForward(nn.Module):
    """FFN(x) = max(0, x W_1 + b_1) W_2 + b_2 at every position alike (§3.3)."""

    def __init__(self, d_model, d_ff, dropout=0.0):
        super().__init__()
        self.w_1 = nn.Linear(d_model, d_ff)
        self.w_2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)  # on the hidden layer; 0 by default, as in the paper

    def forward(self, x):
        """x (batch, len, d_model) → (batch, len, d_model) through a hidden layer of d_ff with ReLU;
        self.dropout acts on the hidden layer (after the ReLU, before w_2)."""
        return self.w_2(self.dropout(self.w_1(x).relu()))  # (B, L, d_model) → (B, L, d_ff) → (B, L, d_model)

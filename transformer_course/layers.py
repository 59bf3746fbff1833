"""The pieces around attention (notebooks 04 and 05; paper §3.1, §3.3, §3.4, §3.5, §5.4).

LayerNorm written out, the residual connection around every sub-layer (post-LN as in the paper,
or pre-LN), the position-wise feed-forward network, embeddings scaled by √d_model, and the
sinusoidal or learned positional encodings.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
from collections.abc import Callable, Iterator

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .attention import check_dropout

__all__ = [
    "layer_norm",
    "LayerNorm",
    "ResidualConnection",
    "PositionwiseFeedForward",
    "Embeddings",
    "sinusoidal_table",
    "PositionalEncoding",
    "check_positive",
    "check_token_range",
    "token_ids_checked",
]


def layer_norm(x: Tensor, weight: Tensor, bias: Tensor, eps: float = 1e-5) -> Tensor:
    """γ · (x − mean) / √(var + ε) + β over the last dimension, written out (the biased variance)."""
    mean = x.mean(dim=-1, keepdim=True)  # (..., 1)
    var = x.var(dim=-1, unbiased=False, keepdim=True)  # (..., 1)
    return weight * (x - mean) / torch.sqrt(var + eps) + bias  # (..., features)


class LayerNorm(nn.Module):
    """LayerNorm(x) = γ · (x − mean) / √(var + ε) + β over the last dimension (Ba et al., 2016).

    Same numbers as ``nn.LayerNorm``: the biased variance, ε inside the square root. Two paths, as in
    attention: :func:`layer_norm` written out (``fast=False``), or PyTorch's fused kernel
    ``F.layer_norm`` (the default; one pass over the data instead of seven, forward and backward).
    """

    def __init__(self, features: int, eps: float = 1e-5, fast: bool = True) -> None:
        super().__init__()
        check_positive(features=features)
        self.eps, self.fast = eps, fast
        self.weight = nn.Parameter(torch.ones(features))  # γ
        self.bias = nn.Parameter(torch.zeros(features))  # β

    def forward(self, x: Tensor) -> Tensor:
        if self.fast:
            return F.layer_norm(x, self.weight.shape, self.weight, self.bias, self.eps)
        return layer_norm(x, self.weight, self.bias, self.eps)


class ResidualConnection(nn.Module):
    """A residual connection around one sub-layer, with dropout and LayerNorm.

    post-LN (the paper, §3.1 and §5.4): LayerNorm(x + Dropout(Sublayer(x)))
    pre-LN  (many later models):        x + Dropout(Sublayer(LayerNorm(x)))
    """

    def __init__(self, d_model: int, dropout: float, norm_first: bool = False) -> None:
        super().__init__()
        check_dropout(dropout)
        self.norm = LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)
        self.norm_first = norm_first

    def forward(self, x: Tensor, sublayer: Callable[[Tensor], Tensor]) -> Tensor:
        if self.norm_first:
            return x + self.dropout(sublayer(self.norm(x)))
        return self.norm(x + self.dropout(sublayer(x)))


class PositionwiseFeedForward(nn.Module):
    """FFN(x) = max(0, x W_1 + b_1) W_2 + b_2, applied to every position alike (§3.3)."""

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0) -> None:
        super().__init__()
        check_positive(d_model=d_model, d_ff=d_ff)
        check_dropout(dropout)
        self.w_1 = nn.Linear(d_model, d_ff)
        self.w_2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        return self.w_2(self.dropout(self.w_1(x).relu()))  # (B, L, d_model) → (B, L, d_ff) → (B, L, d_model)


class Embeddings(nn.Module):
    """Token ids → vectors, multiplied by √d_model (§3.4)."""

    def __init__(self, vocab: int, d_model: int) -> None:
        super().__init__()
        check_positive(vocab=vocab, d_model=d_model)
        self.lut = nn.Embedding(vocab, d_model)
        self.vocab, self.d_model = vocab, d_model

    def forward(self, tokens: Tensor) -> Tensor:
        check_token_range(tokens, self.vocab)
        return self.lut(tokens) * math.sqrt(self.d_model)  # (B, L) → (B, L, d_model)


def sinusoidal_table(max_len: int, d_model: int) -> Tensor:
    """PE(pos, 2i) = sin(pos / 10000^(2i/d_model)), PE(pos, 2i+1) = cos(pos / 10000^(2i/d_model)). (max_len, d_model)"""
    check_positive(max_len=max_len, d_model=d_model)
    if d_model % 2:
        raise ValueError(f"sinusoidal positions need an even d_model (sin/cos pairs), got d_model={d_model}")
    position = torch.arange(max_len, dtype=torch.float32)[:, None]  # (max_len, 1)
    div_term = torch.exp(
        torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model)
    )  # (d_model/2,)
    table = torch.zeros(max_len, d_model)
    table[:, 0::2] = torch.sin(position * div_term)  # (max_len, d_model/2)
    table[:, 1::2] = torch.cos(position * div_term)
    return table


class PositionalEncoding(nn.Module):
    """Adds position information to the embeddings, then dropout (§3.5, §5.4).

    ``kind="sinusoidal"``: the fixed table of the paper; ``kind="learned"``: one trained vector per
    position (the paper's Table 3, row (E), finds them nearly identical).
    """

    def __init__(self, d_model: int, dropout: float, max_len: int = 512, kind: str = "sinusoidal") -> None:
        super().__init__()
        check_dropout(dropout)
        check_positive(d_model=d_model, max_len=max_len)
        self.kind, self.max_len = kind, max_len
        if kind == "sinusoidal":
            self.register_buffer("table", sinusoidal_table(max_len, d_model), persistent=False)
        elif kind == "learned":
            self.table = nn.Parameter(torch.randn(max_len, d_model) * 0.02)
        else:
            raise ValueError(f"positional kind must be 'sinusoidal' or 'learned', got {kind!r}")
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: Tensor, start: int = 0) -> Tensor:
        """x (batch, len, d_model) holds positions start .. start+len-1 (start > 0 when decoding step by step)."""
        end = start + x.size(1)
        if end > self.max_len:
            raise ValueError(
                f"sequence of length {end} is longer than the positional table (max_len={self.max_len}); "
                f"shorten the input or build the model with a larger max_len"
            )
        return self.dropout(x + self.table[start:end])  # (B, L, d_model)

    def at(self, x: Tensor, position: Tensor) -> Tensor:
        """x (batch, 1, d_model) holds the one position in the (1,) int64 tensor ``position``: a decoding step of an
        exported graph, which takes the position as an input tensor, not as a Python int to slice the table with.
        No length check: the caller keeps ``position`` below ``max_len``."""
        return self.dropout(x + self.table[position])  # (B, 1, d_model) + (1, d_model) → (B, 1, d_model)


def check_positive(**sizes: int) -> None:
    for name, value in sizes.items():
        if not isinstance(value, int) or value <= 0:
            raise ValueError(f"{name} must be a positive integer, got {name}={value!r}")


# True inside `token_ids_checked()`: the caller has checked the ids already (fit checks each batch on the host,
# before it moves to the device), so Embeddings need not read their min and max back from the device.
_IDS_CHECKED = contextvars.ContextVar("token_ids_checked", default=False)


@contextlib.contextmanager
def token_ids_checked() -> Iterator[None]:
    """Inside this block :class:`Embeddings` skip their range check: the caller promises it checked the ids
    (``fit`` runs :func:`check_token_range` once per batch, on the host tensors). On a GPU the check reads the
    ids' min and max back to the host, a sync on every call; on the host it costs no sync."""
    token = _IDS_CHECKED.set(True)
    try:
        yield
    finally:
        _IDS_CHECKED.reset(token)


def check_token_range(tokens: Tensor, vocab: int) -> None:
    """Raise ValueError unless ``tokens`` are integer ids in ``[0, vocab)``: the embeddings' range check (a
    (batch, length) tensor at the model's entry is :func:`transformer_course.masks.check_token_ids`'s)."""
    if tokens.dtype not in (torch.int64, torch.int32):
        raise ValueError(f"token ids must be an integer tensor (torch.long), got dtype {tokens.dtype}")
    if torch.compiler.is_compiling():  # .item() would break the compiled graph; eager runs check every call
        return
    if _IDS_CHECKED.get():  # checked by the caller, on the host (see token_ids_checked)
        return
    if tokens.numel() and (int(tokens.min()) < 0 or int(tokens.max()) >= vocab):
        raise ValueError(
            f"token ids must lie in [0, {vocab}) for a vocabulary of {vocab}, got values from "
            f"{int(tokens.min())} to {int(tokens.max())}; encode with the model's own vocabulary"
        )

"""The pieces around attention (notebooks 04 and 05; paper §3.1, §3.3, §3.4, §3.5, §5.4).

LayerNorm written out (``fast=False``) beside PyTorch's fused kernel (the default), the residual connection around
every sub-layer (post-LN as in the paper, or pre-LN), embeddings scaled by √d_model, the sinusoidal or learned
positional encodings, and the position-wise feed-forward network.

The switches later models flipped (notebook 12), each one :class:`~transformer_course.model.ModelConfig` field:
:class:`RMSNorm` (``norm="rms"``), :class:`SwiGLUFeedForward` (``ffn="swiglu"``) and the rotary positions
(``positional="rope"``: :func:`~transformer_course.attention.rotate` turns queries and keys inside attention;
:class:`RotaryPositions` stands where the table was and adds nothing).

The learner's ``my_transformer/norm_residual.py`` and ``embeddings.py`` (notebooks 04, 05) are cut from the regions
marked ``# learner file:`` here (``python -m course_tools.edition.learner_files sync``): the lines marked
``package only`` stay out of them.
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
    "LayerNorm",
    "ResidualConnection",
    "PositionwiseFeedForward",
    "Embeddings",
    "sinusoidal_table",
    "PositionalEncoding",
    "RMSNorm",
    "SwiGLUFeedForward",
    "swiglu_hidden",
    "RotaryPositions",
    "check_positive",
    "check_token_range",
    "token_ids_checked",
]


# learner file: norm_residual.py
class LayerNorm(nn.Module):
    """γ · (x − mean) / √(var + ε) + β over the last dimension (Ba et al., 2016): the numbers of nn.LayerNorm."""

    # learner: def __init__(self, features, eps=1e-5):
    def __init__(self, features: int, eps: float = 1e-5, fast: bool = True) -> None:
        super().__init__()
        check_positive(features=features)  # package only
        self.eps = eps
        self.fast = fast  # package only
        self.weight = nn.Parameter(torch.ones(features))  # γ, (features,)
        self.bias = nn.Parameter(torch.zeros(features))  # β, (features,)

    def forward(self, x: Tensor) -> Tensor:
        """x (..., features) → (..., features): each position normalised over its own features.

        mean and variance over the last dimension only (keepdim=True keeps them broadcastable), the biased
        variance (divide by n), ε inside the square root, then the gain self.weight and the bias self.bias."""
        # exercise: your code here: about 3 lines, with tensor operations (nn.LayerNorm and F.layer_norm do not count)
        # package only: begin
        if self.fast:  # PyTorch's fused kernel: one pass over the data instead of seven, forward and backward
            return F.layer_norm(x, self.weight.shape, self.weight, self.bias, self.eps)
        # package only: end
        mean = x.mean(dim=-1, keepdim=True)  # (..., 1): one mean per position
        var = x.var(dim=-1, unbiased=False, keepdim=True)  # (..., 1): the biased variance
        return self.weight * (x - mean) / torch.sqrt(var + self.eps) + self.bias  # (..., features)


class ResidualConnection(nn.Module):
    """post-LN (the paper): LayerNorm(x + Dropout(Sublayer(x))); pre-LN: x + Dropout(Sublayer(LayerNorm(x)))."""

    def __init__(self, d_model: int, dropout: float, norm_first: bool = False) -> None:
        super().__init__()
        check_dropout(dropout)  # package only
        self.norm = LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)  # on the sub-layer's output only (§5.4)
        self.norm_first = norm_first

    def forward(self, x: Tensor, sublayer: Callable[[Tensor], Tensor]) -> Tensor:
        """x (batch, len, d_model) → (batch, len, d_model); sublayer: a function that keeps that shape.

        norm_first=False (post-LN, the paper): LayerNorm(x + Dropout(Sublayer(x))).
        norm_first=True (pre-LN): x + Dropout(Sublayer(LayerNorm(x))).
        Use self.norm and self.dropout; dropout acts on the sub-layer's output only."""
        # exercise: your code here: both branches, one line each (if self.norm_first: … pre-LN, otherwise post-LN)
        if self.norm_first:
            return x + self.dropout(sublayer(self.norm(x)))  # pre-LN
        return self.norm(x + self.dropout(sublayer(x)))  # post-LN, the paper


# end learner file


# learner file: embeddings.py
class Embeddings(nn.Module):
    """Token ids → vectors, multiplied by √d_model (§3.4)."""

    def __init__(self, vocab: int, d_model: int) -> None:
        super().__init__()
        check_positive(vocab=vocab, d_model=d_model)  # package only
        self.lut = nn.Embedding(vocab, d_model)  # the (vocab, d_model) table
        self.d_model = d_model
        self.vocab = vocab  # package only

    def forward(self, tokens: Tensor) -> Tensor:
        """tokens (batch, len) of ids → (batch, len, d_model): each id's row of self.lut, times √d_model."""
        # exercise: your code here: one line
        check_token_range(tokens, self.vocab)  # package only
        return self.lut(tokens) * math.sqrt(self.d_model)  # (B, L) → (B, L, d_model)


def sinusoidal_table(max_len: int, d_model: int) -> Tensor:
    """The (max_len, d_model) table of §3.5: PE(pos, 2i) = sin(pos / 10000^(2i/d_model)) in the even columns,
    PE(pos, 2i+1) = cos(pos / 10000^(2i/d_model)) in the odd columns, for pos = 0 … max_len − 1."""
    # exercise: your code here: a (max_len, 1) column of positions, a (d_model/2,) row of 2i, their angles by
    # exercise: broadcasting, then sin into table[:, 0::2] and cos into table[:, 1::2] (about 7 lines, float32)
    # package only: begin
    check_positive(max_len=max_len, d_model=d_model)
    if d_model % 2:
        raise ValueError(f"sinusoidal positions need an even d_model (sin/cos pairs), got d_model={d_model}")
    # package only: end
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

    def __init__(self, d_model: int, dropout: float, max_len: int = 512, kind: str = "sinusoidal") -> None:
        super().__init__()
        # package only: begin
        check_dropout(dropout)
        check_positive(d_model=d_model, max_len=max_len)
        # package only: end
        if kind not in ("sinusoidal", "learned"):
            raise ValueError(f"positional kind must be 'sinusoidal' or 'learned', got {kind!r}")
        self.kind, self.max_len = kind, max_len
        self.dropout = nn.Dropout(dropout)
        self.make_table(d_model, max_len)  # sets self.table

    def make_table(self, d_model: int, max_len: int) -> None:
        """Set self.table, of shape (max_len, d_model), named "table" either way (weights copy by name):

        kind="sinusoidal": sinusoidal_table(max_len, d_model) as a buffer, register_buffer(..., persistent=False):
        it moves with .to(device), is not trained and not saved (it can always be computed again);
        kind="learned": an nn.Parameter the optimizer trains, drawn from a normal distribution with mean 0 and
        standard deviation 0.02 (small next to the word vectors)."""
        # exercise: your code here: one branch per kind (if self.kind == "sinusoidal": …), about 4 lines
        if self.kind == "sinusoidal":
            self.register_buffer("table", sinusoidal_table(max_len, d_model), persistent=False)
        else:
            self.table = nn.Parameter(torch.randn(max_len, d_model) * 0.02)  # (max_len, d_model), trained

    def forward(self, x: Tensor, start: int = 0) -> Tensor:
        """x (batch, len, d_model) holds positions start … start + len − 1 (start > 0 when decoding step by step).

        Return Dropout(x + the table's rows for those positions), shape (batch, len, d_model). A sequence that
        runs past max_len has no rows: raise a ValueError that names max_len."""
        # exercise: your code here: about 4 lines
        end = start + x.size(1)
        if end > self.max_len:
            raise ValueError(
                f"sequence of length {end} is longer than the positional table (max_len={self.max_len}); "
                f"shorten the input or build the model with a larger max_len"
            )
        return self.dropout(x + self.table[start:end])  # (B, L, d_model) + (L, d_model)

    # end learner file

    def at(self, x: Tensor, position: Tensor) -> Tensor:
        """x (batch, 1, d_model) holds the one position in the (1,) int64 tensor ``position``: a decoding step of an
        exported graph, which takes the position as an input tensor, not as a Python int to slice the table with.
        No length check: the caller keeps ``position`` below ``max_len``."""
        return self.dropout(x + self.table[position])  # (B, 1, d_model) + (1, d_model) → (B, 1, d_model)


# learner file: embeddings.py
class PositionwiseFeedForward(nn.Module):
    """FFN(x) = max(0, x W_1 + b_1) W_2 + b_2 at every position alike (§3.3)."""

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0) -> None:
        super().__init__()
        # package only: begin
        check_positive(d_model=d_model, d_ff=d_ff)
        check_dropout(dropout)
        # package only: end
        self.w_1 = nn.Linear(d_model, d_ff)
        self.w_2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)  # on the hidden layer; 0 by default, as in the paper

    def forward(self, x: Tensor) -> Tensor:
        """x (batch, len, d_model) → (batch, len, d_model) through a hidden layer of d_ff with ReLU;
        self.dropout acts on the hidden layer (after the ReLU, before w_2)."""
        # exercise: your code here: one line
        return self.w_2(self.dropout(self.w_1(x).relu()))  # (B, L, d_model) → (B, L, d_ff) → (B, L, d_model)


# end learner file


class RMSNorm(nn.Module):
    """γ · x / √(mean(x²) + ε) over the last dimension (Zhang & Sennrich, 2019): LayerNorm without the mean and
    without β, the numbers of ``torch.nn.RMSNorm``. ``norm="rms"`` puts it wherever the model had a LayerNorm."""

    def __init__(self, features: int, eps: float = 1e-5) -> None:
        super().__init__()
        check_positive(features=features)
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(features))  # γ, (features,)

    def forward(self, x: Tensor) -> Tensor:
        """x (..., features) → (..., features): each position divided by the root of its mean square."""
        rms = torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)  # (..., 1)
        return self.weight * x / rms  # (..., features)


def swiglu_hidden(d_model: int, d_ff: int) -> int:
    """The hidden size of a SwiGLU FFN with the parameters of the ReLU FFN (d_model, d_ff): SwiGLU has three
    matrices where ReLU has two, so 3·d·f' + 2·f' + d = 2·d·f + f + d (weights and biases), f' = f·(2d + 1) / (3d + 2)
    rounded to the nearest integer, about 2/3·d_ff (2048 → 1365 for d_model=512). The counts differ by less than
    (3·d_model + 2) / 2, half a hidden unit."""
    return max(1, round(d_ff * (2 * d_model + 1) / (3 * d_model + 2)))


class SwiGLUFeedForward(nn.Module):
    """FFN(x) = (Swish(x W_1 + b_1) ⊙ (x W_3 + b_3)) W_2 + b_2 (Shazeer, 2020), at the ReLU FFN's parameter count:
    the hidden size is :func:`swiglu_hidden` (d_model, d_ff). Swish is SiLU: z · sigmoid(z)."""

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0) -> None:
        super().__init__()
        check_positive(d_model=d_model, d_ff=d_ff)
        check_dropout(dropout)
        hidden = swiglu_hidden(d_model, d_ff)
        self.w_1 = nn.Linear(d_model, hidden)  # the gate
        self.w_3 = nn.Linear(d_model, hidden)  # the value the gate lets through
        self.w_2 = nn.Linear(hidden, d_model)
        self.dropout = nn.Dropout(dropout)  # on the hidden layer, as the ReLU FFN's

    def forward(self, x: Tensor) -> Tensor:
        """x (batch, len, d_model) → (batch, len, d_model) through the gated hidden layer."""
        hidden = F.silu(self.w_1(x)) * self.w_3(x)  # (B, L, hidden)
        return self.w_2(self.dropout(hidden))  # (B, L, d_model)


class RotaryPositions(nn.Module):
    """Where the positional table stood with ``positional="rope"``: the positions are turned into the queries and
    keys inside attention (:func:`~transformer_course.attention.rotate`), so nothing is added here; the dropout on the embeddings stays (§5.4),
    and so does the length check against ``max_len``."""

    kind = "rope"
    table = None  # no table: nothing to train or to save

    def __init__(self, d_model: int, dropout: float, max_len: int = 512) -> None:
        super().__init__()
        check_dropout(dropout)
        check_positive(d_model=d_model, max_len=max_len)
        self.max_len = max_len
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: Tensor, start: int = 0) -> Tensor:
        """x (batch, len, d_model) at positions start … start + len − 1 → Dropout(x), (batch, len, d_model)."""
        if start + x.size(1) > self.max_len:
            raise ValueError(
                f"sequence of length {start + x.size(1)} is longer than max_len={self.max_len}; "
                f"shorten the input or build the model with a larger max_len"
            )
        return self.dropout(x)

    def at(self, x: Tensor, position: Tensor) -> Tensor:
        """An exported decoding step's positions (see :meth:`PositionalEncoding.at`): Dropout(x)."""
        return self.dropout(x)


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

"""Scaled dot-product attention and multi-head attention (notebooks 02 and 03; paper §3.2).

Two paths compute the same numbers:

- the *readable* path, :func:`scaled_dot_product_attention`, writes the paper's formula out and
  returns the attention weights, for teaching and for heatmaps;
- the *fast* path calls :func:`torch.nn.functional.scaled_dot_product_attention`, which never
  materialises the weights in its fused kernels.

:class:`MultiHeadAttention` takes the fast path unless it is asked to keep its weights
(``keep_weights = True``, see :func:`transformer_course.viz.capture_attention`) or built with
``fast=False``; :func:`keeping_weights` sets that flag for a block of code and restores it. It also
takes an optional :class:`KVCache` so that a decoder can run one token at a time: self-attention
appends the new keys/values to the cache, cross-attention computes the encoder's keys/values once and
reuses them. :class:`FixedLengthCache` is the same cache for an exported graph (notebook 10), whose
tensors keep one shape from step to step.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .masks import check_mask

__all__ = [
    "scaled_dot_product_attention",
    "KVCache",
    "FixedLengthCache",
    "MultiHeadAttention",
    "keeping_weights",
    "check_dropout",
]


def scaled_dot_product_attention(
    query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None = None, dropout: nn.Module | None = None
) -> tuple[Tensor, Tensor]:
    """Attention(Q, K, V) = softmax(Q Kᵀ / √d_k) V, written out.

    query (..., q_len, d_k), key (..., k_len, d_k), value (..., k_len, d_v);
    mask broadcastable to (..., q_len, k_len), True = may attend.
    Returns the output (..., q_len, d_v) and the weights (..., q_len, k_len).
    """
    d_k = query.size(-1)
    scores = query @ key.transpose(-2, -1) / math.sqrt(d_k)  # (..., q_len, k_len)
    if mask is not None:
        # The most negative finite number, not -inf: a row with every key masked then gets
        # uniform weights instead of NaN (notebook 01 shows the pitfall).
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = scores.softmax(dim=-1)  # (..., q_len, k_len), each row sums to 1
    if dropout is not None:
        weights = dropout(weights)
    return weights @ value, weights  # (..., q_len, d_v), (..., q_len, k_len)


class KVCache:
    """The keys and values one attention layer has already computed, kept between decoding steps.

    ``key`` and ``value`` are (batch, heads, length, d_k), or None before the first step. ``from_memory``
    marks cross-attention's cache: its keys and values come from the encoder's memory, so once it holds
    them the attention needs no ``memory`` argument.
    """

    def __init__(self, from_memory: bool = False) -> None:
        self.key: Tensor | None = None
        self.value: Tensor | None = None
        self.from_memory = from_memory

    def __len__(self) -> int:
        return 0 if self.key is None else self.key.size(2)

    def update(self, key: Tensor, value: Tensor) -> tuple[Tensor, Tensor]:
        """Append this call's keys and values (batch, heads, T, d_k); return all of them (batch, heads, past + T, d_k)."""
        if self.key is not None:
            key = torch.cat([self.key, key], dim=2)  # (B, h, past + T, d_k)
            value = torch.cat([self.value, value], dim=2)
        self.key, self.value = key, value
        return key, value

    def reorder(self, index: Tensor) -> None:
        """Keep the rows ``index`` of the batch, in that order (beam search picks beams this way)."""
        if self.key is not None:
            self.key = self.key.index_select(0, index)
            self.value = self.value.index_select(0, index)


class FixedLengthCache:
    """A self-attention cache whose length L never changes, for a graph exported to ONNX (notebook 10).

    An exported graph takes the cache as an input and gives it back as an output, so it cannot grow as
    :class:`KVCache` does. ``key`` and ``value`` are (batch, heads, L, d_k): slot i holds position i.
    Step ``position`` (a (1,) int64 tensor, not a Python int, so that one graph serves every step) writes
    its key and value into slot ``position``; the slots after it hold nothing yet, and :meth:`mask` masks
    them (pass it as the self-attention mask).
    """

    from_memory = False  # a self-attention cache

    def __init__(self, key: Tensor, value: Tensor, position: Tensor) -> None:
        self.key, self.value, self.position = key, value, position  # (B, h, L, d_k), (B, h, L, d_k), (1,)

    def mask(self) -> Tensor:
        """(1, 1, 1, L): True = may attend, on this step's slot and the ones before it."""
        slots = torch.arange(self.key.size(2), device=self.key.device)  # (L,)
        return (slots <= self.position).view(1, 1, 1, -1)  # (1, 1, 1, L)

    def update(self, key: Tensor, value: Tensor) -> tuple[Tensor, Tensor]:
        """Write this step's key and value (batch, heads, 1, d_k) into slot ``position``; return all L slots."""
        slots = torch.arange(self.key.size(2), device=self.key.device)  # (L,)
        write = (slots == self.position).view(1, 1, -1, 1)  # (1, 1, L, 1): True on this step's slot
        self.key = torch.where(write, key, self.key)  # (B, h, L, d_k)
        self.value = torch.where(write, value, self.value)
        return self.key, self.value


class MultiHeadAttention(nn.Module):
    """MultiHead(Q, K, V) = Concat(head_1, …, head_h) W^O, head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V).

    The h projections of size d_k = d_model / h are stored as one (3·d_model, d_model) matrix,
    ``in_proj`` (rows: W^Q, then W^K, then W^V), the layout ``nn.MultiheadAttention`` uses too.
    """

    def __init__(self, d_model: int, heads: int, dropout: float = 0.0, fast: bool = True) -> None:
        super().__init__()
        if d_model <= 0 or heads <= 0:
            raise ValueError(f"d_model and heads must be positive, got d_model={d_model}, heads={heads}")
        if d_model % heads != 0:
            raise ValueError(
                f"d_model={d_model} is not divisible by heads={heads}; choose d_model as a multiple of "
                f"heads (e.g. d_model={heads * max(1, round(d_model / heads))})"
            )
        check_dropout(dropout)
        self.d_model, self.heads, self.d_k = d_model, heads, d_model // heads
        self.in_proj = nn.Linear(d_model, 3 * d_model)  # W^Q, W^K, W^V for all heads at once
        self.out_proj = nn.Linear(d_model, d_model)  # W^O
        self.dropout = nn.Dropout(dropout)
        self.fast = fast
        self.keep_weights = False  # set True to store the weights of the next calls in self.weights
        self.weights: Tensor | None = None  # (batch, heads, q_len, k_len) of the last call

    def split_heads(self, x: Tensor) -> Tensor:
        """(batch, len, d_model) → (batch, heads, len, d_k)."""
        batch, length, _ = x.shape
        return x.view(batch, length, self.heads, self.d_k).transpose(1, 2)  # (B, h, L, d_k)

    def split_heads_all(self, qkv: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """(batch, len, 3·d_model) → three (batch, heads, len, d_k) tensors for Q, K, V."""
        batch, length, _ = qkv.shape
        qkv = qkv.view(batch, length, 3, self.heads, self.d_k).permute(2, 0, 3, 1, 4)  # (3, B, h, L, d_k)
        q, k, v = qkv.unbind(0)  # unbind, not qkv[0], qkv[1], qkv[2]: its backward is one stack, not 3 zero-fills
        return q, k, v

    def memory_keys_values(self, memory: Tensor) -> tuple[Tensor, Tensor]:
        """Cross-attention's keys and values, projected from the memory (batch, S, d_model): 2 × (batch, heads, S, d_k)."""
        d = self.d_model
        kv = F.linear(memory, self.in_proj.weight[d:], self.in_proj.bias[d:])  # (B, S, 2·d_model)
        k, v = kv.chunk(2, dim=-1)  # 2 × (B, S, d_model)
        return self.split_heads(k), self.split_heads(v)  # 2 × (B, h, S, d_k)

    def merge_heads(self, x: Tensor) -> Tensor:
        """(batch, heads, len, d_k) → (batch, len, d_model): the Concat of the formula."""
        batch, _, length, _ = x.shape
        return x.transpose(1, 2).reshape(batch, length, self.d_model)  # (B, L, d_model)

    def forward(
        self, query: Tensor, memory: Tensor | None = None, mask: Tensor | None = None, cache: KVCache | None = None
    ) -> Tensor:
        """query (batch, q_len, d_model). ``memory`` (batch, k_len, d_model) gives the keys and values
        of cross-attention; None means self-attention (keys and values come from ``query``).

        With a ``cache``, self-attention adds this call's keys/values to it (``cache.update``) and attends
        over all of them; cross-attention projects ``memory`` on the first call only and reuses the result
        (a cross-attention cache that holds them already, ``from_memory``, needs no ``memory``).
        Returns (batch, q_len, d_model).
        """
        if query.dim() != 3 or query.size(-1) != self.d_model:
            raise ValueError(f"query must be (batch, len, d_model={self.d_model}), got shape {tuple(query.shape)}")
        d = self.d_model
        if memory is None and not (cache is not None and cache.from_memory):  # self-attention: Q, K, V in one product
            q, k, v = self.split_heads_all(self.in_proj(query))  # 3 × (B, h, T, d_k)
            if cache is not None:
                k, v = cache.update(k, v)  # 2 × (B, h, past + T, d_k); (B, h, L, d_k) for a FixedLengthCache
        else:  # cross-attention: queries from the decoder, keys and values from the encoder
            q = self.split_heads(F.linear(query, self.in_proj.weight[:d], self.in_proj.bias[:d]))  # (B, h, T, d_k)
            if cache is not None and cache.key is not None:
                k, v = cache.key, cache.value  # (B, h, S, d_k), computed at the first step
            elif memory is None:
                raise ValueError("cross-attention's cache is empty, so pass the memory (batch, src_len, d_model)")
            else:
                k, v = self.memory_keys_values(memory)  # 2 × (B, h, S, d_k)
                if cache is not None:
                    cache.key, cache.value = k, v
        if mask is not None:
            check_mask(mask, q.size(0), q.size(2), k.size(2))

        if self.keep_weights or not self.fast:
            x, weights = scaled_dot_product_attention(q, k, v, mask, self.dropout)  # (B, h, T, d_k)
            self.weights = weights.detach() if self.keep_weights else None
        else:
            p = self.dropout.p if self.training else 0.0
            x = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p)  # (B, h, T, d_k)
        return self.out_proj(self.merge_heads(x))  # (B, T, d_model)


@contextlib.contextmanager
def keeping_weights(module: nn.Module) -> Iterator[list[MultiHeadAttention]]:
    """Inside this block every :class:`MultiHeadAttention` in ``module`` takes its readable path and keeps the
    weights of its last call in ``.weights`` (read them inside the block). Each one's ``keep_weights`` and
    ``weights`` are restored afterwards, so training and decoding keep the fast path."""
    modules = [m for m in module.modules() if isinstance(m, MultiHeadAttention)]
    saved = [(m.keep_weights, m.weights) for m in modules]
    try:
        for m in modules:
            m.keep_weights = True
        yield modules
    finally:
        for m, (keep, weights) in zip(modules, saved):
            m.keep_weights, m.weights = keep, weights


def check_dropout(dropout: float) -> None:
    if not 0.0 <= dropout < 1.0:
        raise ValueError(f"dropout={dropout} is outside [0, 1); use a probability such as 0.1 (the paper's P_drop)")

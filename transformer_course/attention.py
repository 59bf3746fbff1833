"""Scaled dot-product attention and multi-head attention (notebooks 02 and 03; paper §3.2).

Two paths compute the same numbers:

- the *readable* path, :func:`scaled_dot_product_attention`, writes the paper's formula out and
  returns the attention weights, for teaching and for heatmaps;
- the *fast* path calls :func:`torch.nn.functional.scaled_dot_product_attention`, which never
  materialises the weights in its fused kernels.

:class:`MultiHeadAttention` is called as notebook 03 writes it, ``mha(query, key, value, mask)``; the package's
own calls pass ``key`` and ``value`` as the same tensor (``mha(x, x, x, mask)``, ``mha(x, memory, memory, mask)``)
or leave them out for self-attention (``mha(x, mask=mask)``), and these take :meth:`MultiHeadAttention.attend`,
beside the readable path: one fused Q/K/V product, the fast kernel unless the module keeps its weights. A module
keeps them (``keep_weights = True``, the default of a module built alone, as notebook 03's keeps them); the
models ``make_model`` builds do not, and :func:`keeping_weights` turns it on for a block of code (heatmaps,
:func:`transformer_course.viz.capture_attention`). It also takes an optional :class:`KVCache` so that a decoder
can run one token at a time: self-attention appends the new keys/values to the cache, cross-attention computes
the encoder's keys/values once and reuses them. :class:`FixedLengthCache` is the same cache for an exported graph
(notebook 10), whose tensors keep one shape from step to step.

Two switches of later models live on the package's path only (notebook 12): grouped-query attention
(``kv_heads`` < ``heads``: each group of heads/kv_heads query heads shares one key/value head, and the cache
keeps kv_heads heads), and rotary positions (``rotary=True``: :func:`rotate` turns
the queries and keys, not the values, at their positions, the cache's offset included).

The learner's ``my_transformer/attention.py`` and ``multi_head.py`` (notebooks 02, 03) are cut from the regions
marked ``# learner file:`` here (``python -m course_tools.edition.learner_files sync``): the lines marked
``package only`` stay out of them.
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
    "rotate",
]


# learner file: attention.py
def scaled_dot_product_attention(
    query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None = None, dropout: nn.Module | None = None
) -> tuple[Tensor, Tensor]:
    """softmax(Q Kᵀ / √d_k) V.

    query (..., q_len, d_k), key (..., k_len, d_k), value (..., k_len, d_v); mask boolean, True = may attend,
    broadcastable to (..., q_len, k_len); dropout an nn.Dropout or None, applied to the weights.
    Returns the output (..., q_len, d_v) and the weights (..., q_len, k_len).
    """
    # exercise: 1. the scores (..., q_len, k_len): every query against every key, divided by √d_k (d_k = query.size(-1))
    # exercise: 2. with a mask: where it is False, the most negative float, torch.finfo(scores.dtype).min
    # exercise: 3. the weights: a softmax over the keys; 4. with a dropout module: apply it to the weights
    # exercise: 5. return the output weights @ value and the weights
    d_k = query.size(-1)
    scores = query @ key.transpose(-2, -1) / math.sqrt(d_k)  # (..., q_len, k_len)
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)  # most negative float: no NaN rows
    weights = scores.softmax(dim=-1)  # (..., q_len, k_len), each row sums to 1
    if dropout is not None:
        weights = dropout(weights)  # zeroes some weights while training (notebook 04)
    return weights @ value, weights  # (..., q_len, d_v), (..., q_len, k_len)


# end learner file


def rotate(x: Tensor, positions: Tensor, base: float = 10000.0) -> Tensor:
    """Rotary positions (RoFormer, Su et al., 2021): x (..., T, d_k) holds positions ``positions`` (T,); each
    *adjacent pair* of features (x[2i], x[2i+1]) turns by the angle position · θ_i, θ_i = base^(−2i/d_k) (the
    sinusoidal table's frequencies). Applied to queries and keys, not values: q_m · k_n then depends on m − n only.
    Returns (..., T, d_k), the dtype of x."""
    d_k = x.size(-1)
    if d_k % 2:
        raise ValueError(f"rotary positions turn pairs of features, so d_k = d_model / h must be even, got d_k={d_k}")
    theta = base ** (-torch.arange(0, d_k, 2, device=x.device, dtype=torch.float32) / d_k)  # (d_k/2,)
    angle = positions.to(torch.float32)[:, None] * theta  # (T, d_k/2)
    cos, sin = angle.cos(), angle.sin()  # (T, d_k/2)
    even, odd = x[..., 0::2].float(), x[..., 1::2].float()  # (..., T, d_k/2): the pairs' two features
    turned = torch.stack([even * cos - odd * sin, even * sin + odd * cos], dim=-1)  # (..., T, d_k/2, 2)
    return turned.flatten(-2).to(x.dtype)  # (..., T, d_k): the pairs side by side again


class KVCache:
    """The keys and values one attention layer has already computed, kept between decoding steps.

    ``key`` and ``value`` are (batch, heads, length, d_k), or None before the first step. ``from_memory``
    marks cross-attention's cache: its keys and values come from the encoder's memory, so once it holds
    them the attention needs no ``memory`` argument.

    ``buffered=True`` is the decoders' fast path: self-attention's keys and values live in a buffer with room
    for more positions, doubled when full, so a step writes its new position in place where ``torch.cat``
    copies the whole past at every step; ``key`` and ``value`` are then views of the positions written.
    """

    def __init__(self, from_memory: bool = False, buffered: bool = False) -> None:
        self.key: Tensor | None = None
        self.value: Tensor | None = None
        self.from_memory = from_memory
        self.buffered = buffered
        self.buffer: tuple[Tensor, Tensor] | None = None  # buffered: (B, h, room, d_k) for keys and for values

    def __len__(self) -> int:
        return 0 if self.key is None else self.key.size(2)

    def update(self, key: Tensor, value: Tensor) -> tuple[Tensor, Tensor]:
        """Append this call's keys and values (batch, heads, T, d_k); return all of them (batch, heads, past + T, d_k)."""
        if self.buffered:
            return self.write(key, value)
        if self.key is not None:
            key = torch.cat([self.key, key], dim=2)  # (B, h, past + T, d_k)
            value = torch.cat([self.value, value], dim=2)
        self.key, self.value = key, value
        return key, value

    def write(self, key: Tensor, value: Tensor) -> tuple[Tensor, Tensor]:
        """:meth:`update` with a buffer: write the new positions after the past ones, doubling the room when full."""
        past, new = len(self), key.size(2)
        if self.buffer is None or past + new > self.buffer[0].size(2):  # full: twice the room, the past copied once
            room = max(2 * past, past + new, 16)
            self.buffer = tuple(x.new_empty(*x.shape[:2], room, x.size(3)) for x in (key, value))  # (B, h, room, d_k)
            if past:
                self.buffer[0][:, :, :past], self.buffer[1][:, :, :past] = self.key, self.value
        self.buffer[0][:, :, past : past + new] = key  # (B, h, T, d_k) in place
        self.buffer[1][:, :, past : past + new] = value
        self.key, self.value = (x[:, :, : past + new] for x in self.buffer)  # 2 × (B, h, past + T, d_k): views
        return self.key, self.value

    def reorder(self, index: Tensor) -> None:
        """Keep the rows ``index`` of the batch, in that order (beam search picks beams this way)."""
        if self.buffer is not None:  # the buffer's rows, and views of them
            self.buffer = tuple(x.index_select(0, index) for x in self.buffer)
            self.key, self.value = (x[:, :, : len(self)] for x in self.buffer)
        elif self.key is not None:
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


# learner file: multi_head.py
class MultiHeadAttention(nn.Module):
    """MultiHead(Q, K, V) = Concat(head_1, …, head_h) W^O, head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V)."""

    # learner: def __init__(self, d_model, heads, dropout=0.0):
    def __init__(
        self,
        d_model: int,
        heads: int,
        dropout: float = 0.0,
        fast: bool = True,
        kv_heads: int | None = None,
        rotary: bool = False,
    ) -> None:
        super().__init__()
        # package only: begin
        if d_model <= 0 or heads <= 0:
            raise ValueError(f"d_model and heads must be positive, got d_model={d_model}, heads={heads}")
        check_dropout(dropout)
        # package only: end
        if d_model % heads != 0:
            raise ValueError(f"d_model={d_model} is not divisible by heads={heads}; choose a multiple of heads")
        self.heads, self.d_k = heads, d_model // heads
        # package only: begin
        kv_heads = heads if kv_heads is None else kv_heads
        if not isinstance(kv_heads, int) or kv_heads <= 0 or heads % kv_heads:
            raise ValueError(f"n_kv_heads={kv_heads!r} does not divide h={heads} heads; choose a divisor of h (h: MHA)")
        self.kv_heads, self.rotary = kv_heads, rotary  # kv_heads < heads: grouped-query attention
        # package only: end
        # learner: self.in_proj = nn.Linear(d_model, 3 * d_model)  # rows: W^Q, W^K, W^V of all heads
        self.in_proj = nn.Linear(d_model, d_model + 2 * kv_heads * self.d_k)  # rows: W^Q, W^K, W^V of all heads
        self.out_proj = nn.Linear(d_model, d_model)  # W^O
        self.dropout = nn.Dropout(dropout)  # on the attention weights
        self.weights = None  # (batch, heads, q_len, k_len) of the last call
        # package only: begin
        self.d_model = d_model
        self.fast = fast  # False: every call takes the readable path
        self.keep_weights = True  # False (the models make_model builds): the fast path, which keeps no weights
        # package only: end

    def split_heads(self, x: Tensor) -> Tensor:
        """(batch, len, d_model) → (batch, heads, len, d_k): head i gets features i·d_k … (i+1)·d_k − 1."""
        # exercise: view as (batch, len, heads, d_k), then put the heads axis before the positions (section 2)
        batch, length, _ = x.shape
        return x.view(batch, length, self.heads, self.d_k).transpose(1, 2)  # (batch, heads, len, d_k)

    def merge_heads(self, x: Tensor) -> Tensor:
        """(batch, heads, len, d_k) → (batch, len, heads·d_k): the Concat of the formula."""
        # exercise: the reverse of split_heads: back to (batch, len, heads, d_k), then one reshape
        batch, _, length, _ = x.shape
        return x.transpose(1, 2).reshape(batch, length, self.heads * self.d_k)  # (batch, len, d_model)

    # learner: def forward(self, query, key, value, mask=None):
    def forward(
        self,
        query: Tensor,
        key: Tensor | None = None,
        value: Tensor | None = None,
        mask: Tensor | None = None,
        cache: KVCache | FixedLengthCache | None = None,
    ) -> Tensor:
        """query (batch, q_len, d_model), key and value (batch, k_len, d_model); mask True = may attend,
        broadcastable to (batch, heads, q_len, k_len). Keeps the weights in self.weights (detached).
        Returns (batch, q_len, d_model)."""
        # exercise: 1. project: Q from query, K from key, V from value, each with its third of self.in_proj
        # exercise:    (self.in_proj.weight.chunk(3), self.in_proj.bias.chunk(3) and F.linear(x, weight, bias))
        # exercise: 2. split each into heads; 3. attend with scaled_dot_product_attention(q, k, v, mask, self.dropout)
        # exercise: 4. keep the weights in self.weights, detached; 5. merge the heads and project with self.out_proj
        # package only: begin
        if query.dim() != 3 or query.size(-1) != self.d_model:
            raise ValueError(f"query must be (batch, len, d_model={self.d_model}), got shape {tuple(query.shape)}")
        if value is None or key is value or cache is not None:  # mha(x), mha(x, x, x), mha(x, memory, memory): fused
            return self.attend(query, None if key is None or key is query else key, mask, cache)
        if self.kv_heads != self.heads or self.rotary:
            raise ValueError("with n_kv_heads < h or rotary positions, pass key and value as one tensor: mha(x, m, m)")
        # package only: end
        w_q, w_k, w_v = self.in_proj.weight.chunk(3)  # 3 × (d_model, d_model)
        b_q, b_k, b_v = self.in_proj.bias.chunk(3)  # 3 × (d_model,)
        q = self.split_heads(F.linear(query, w_q, b_q))  # (batch, heads, q_len, d_k)
        k = self.split_heads(F.linear(key, w_k, b_k))  # (batch, heads, k_len, d_k)
        v = self.split_heads(F.linear(value, w_v, b_v))  # (batch, heads, k_len, d_k)
        x, weights = scaled_dot_product_attention(q, k, v, mask, self.dropout)  # (batch, heads, q_len, d_k)
        self.weights = weights.detach()  # (batch, heads, q_len, k_len)
        return self.out_proj(self.merge_heads(x))  # (batch, q_len, d_model)

    # end learner file

    def attend(
        self, query: Tensor, memory: Tensor | None, mask: Tensor | None, cache: KVCache | FixedLengthCache | None
    ) -> Tensor:
        """The package's path beside the readable one above, the same numbers: self-attention (``memory`` None)
        projects Q, K and V in one (3·d_model) product, cross-attention K and V from the memory in one; with a
        ``cache``, self-attention appends this call's keys/values and attends over all of them, cross-attention
        projects the memory on the first call only (a cache that holds them, ``from_memory``, needs no memory).
        ``F.scaled_dot_product_attention`` runs unless ``keep_weights`` or ``fast=False`` asks for the weights."""
        d = self.d_model
        if memory is None and not (cache is not None and cache.from_memory):  # self-attention: Q, K, V in one product
            q, k, v = self.split_heads_all(self.in_proj(query))  # (B, h, T, d_k), 2 × (B, kv_heads, T, d_k)
            if self.rotary:  # positions past … past + T − 1 turn queries and keys; the cache keeps turned keys
                positions = self.positions(cache, q.size(2), q.device)  # (T,)
                q, k = rotate(q, positions), rotate(k, positions)
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

        group = self.heads // self.kv_heads  # query heads per key/value head: 1 for multi-head attention
        if self.keep_weights or not self.fast:
            if group > 1:  # query head i reads key/value head i // group
                k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)  # 2 × (B, h, k_len, d_k)
            x, weights = scaled_dot_product_attention(q, k, v, mask, self.dropout)  # (B, h, T, d_k)
            self.weights = weights.detach()  # (B, h, T, k_len)
        else:
            p = self.dropout.p if self.training else 0.0
            gqa = group > 1  # the kernel reads key/value head i // group for query head i
            x = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p, enable_gqa=gqa)  # (B, h, T, d_k)
            self.weights = None
        return self.out_proj(self.merge_heads(x))  # (B, T, d_model)

    def split_heads_all(self, qkv: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """(batch, len, 3·d_model) → three (batch, heads, len, d_k) tensors for Q, K, V (K and V with kv_heads heads)."""
        batch, length, _ = qkv.shape
        if self.kv_heads != self.heads:  # grouped-query: Q has d_model features, K and V kv_heads·d_k each
            kv = self.kv_heads * self.d_k
            q, k, v = qkv.split([self.d_model, kv, kv], dim=-1)  # (B, L, d_model), 2 × (B, L, kv_heads·d_k)
            return self.split_heads(q), self.split_kv_heads(k), self.split_kv_heads(v)  # (B, h|kv_heads, L, d_k)
        qkv = qkv.view(batch, length, 3, self.heads, self.d_k).permute(2, 0, 3, 1, 4)  # (3, B, h, L, d_k)
        q, k, v = qkv.unbind(0)  # unbind, not qkv[0], qkv[1], qkv[2]: its backward is one stack, not 3 zero-fills
        return q, k, v

    def memory_keys_values(self, memory: Tensor) -> tuple[Tensor, Tensor]:
        """Cross-attention's keys and values, projected from the memory (batch, S, d_model): 2 × (batch, heads, S, d_k)."""
        d = self.d_model
        kv = F.linear(memory, self.in_proj.weight[d:], self.in_proj.bias[d:])  # (B, S, 2·d_model)
        k, v = kv.chunk(2, dim=-1)  # 2 × (B, S, kv_heads·d_k)
        return self.split_kv_heads(k), self.split_kv_heads(v)  # 2 × (B, kv_heads, S, d_k)

    def split_kv_heads(self, x: Tensor) -> Tensor:
        """(batch, len, kv_heads·d_k) → (batch, kv_heads, len, d_k): :meth:`split_heads` for keys and values."""
        batch, length, _ = x.shape
        return x.view(batch, length, self.kv_heads, self.d_k).transpose(1, 2)  # (batch, kv_heads, len, d_k)

    @staticmethod
    def positions(cache: KVCache | FixedLengthCache | None, length: int, device: torch.device) -> Tensor:
        """The positions (length,) of this call's queries: after the ones the cache holds (0 without a cache)."""
        steps = torch.arange(length, device=device)  # (length,)
        if isinstance(cache, FixedLengthCache):
            return cache.position.to(device) + steps  # a (1,) tensor: one exported graph serves every step
        return steps + (len(cache) if cache is not None else 0)


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

"""Switch one attention head off and see what changes (notebook 10; the explorer page does the same).

A head's output is its d_k columns of the merged heads, the input of W^O (paper §3.2.2: Concat(head_1, …,
head_h) W^O). Zeroing those columns removes the head and nothing else: every other head, the residual path and
W^O's bias stay. :func:`zero_head` does it with a forward pre-hook on the attention module's ``out_proj`` (W^O),
so it works whatever the attention's forward looks like inside, cached or not:

    with zero_head(model, "cross", layer=1, head=3):
        print(translate(model_checkpoint, ["Ein Hund läuft."]))

:func:`head_importance` ranks every head of one translation by how much switching it off lowers the
log-probability of that translation.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch
from torch import Tensor, nn

__all__ = ["KINDS", "attention_module", "head_importance", "sequence_log_prob", "zero_head"]

KINDS = ("encoder", "decoder", "cross")  # encoder self-attention, decoder self-attention, cross-attention


def attention_module(model: nn.Module, kind: str, layer: int) -> nn.Module:
    """The :class:`~transformer_course.attention.MultiHeadAttention` of ``kind`` in ``layer`` (0-based)."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {list(KINDS)}, got {kind!r}")
    stack = model.encoder.layers if kind == "encoder" else model.decoder.layers
    if not 0 <= layer < len(stack):
        raise ValueError(f"layer must be in 0 … {len(stack) - 1}, got {layer}")
    return stack[layer].cross_attn if kind == "cross" else stack[layer].self_attn


@contextlib.contextmanager
def zero_head(model: nn.Module, kind: str, layer: int, head: int) -> Iterator[nn.Module]:
    """Inside the ``with`` block, head ``head`` of the ``kind`` attention in ``layer`` outputs zeros: its d_k
    slice of W^O's input is zeroed by a forward pre-hook, removed when the block ends (even on an error)."""
    attention = attention_module(model, kind, layer)
    heads, d_k = attention.heads, attention.d_k
    if not 0 <= head < heads:
        raise ValueError(f"head must be in 0 … {heads - 1}, got {head}")

    def hook(_module: nn.Module, args: tuple[Tensor, ...]) -> tuple[Tensor, ...]:
        merged = args[0].clone()  # (batch, q_len, d_model): the heads side by side, head i in columns i·d_k …
        merged[..., head * d_k : (head + 1) * d_k] = 0
        return (merged, *args[1:])

    handle = attention.out_proj.register_forward_pre_hook(hook)
    try:
        yield model
    finally:
        handle.remove()


@torch.no_grad()
def sequence_log_prob(model: nn.Module, src_ids: list[int], tgt_ids: list[int]) -> float:
    """log p(tgt_ids[1:] | src_ids, tgt_ids[:1]) under ``model`` (teacher forcing, no dropout): ``tgt_ids`` starts
    with <s> and ends with </s> when the translation did."""
    from .data import PAD
    from .masks import padding_mask, subsequent_mask

    src, tgt = torch.tensor([src_ids]), torch.tensor([tgt_ids])
    src_mask = padding_mask(src, PAD)  # (1, 1, 1, S)
    memory = model.encode(src, src_mask)  # (1, S, d_model)
    hidden = model.decode(memory, src_mask, tgt[:, :-1], subsequent_mask(tgt.size(1) - 1))  # (1, T-1, d_model)
    log_probs = model.generator(hidden).log_softmax(dim=-1)  # (1, T-1, vocab)
    return float(log_probs[0].gather(-1, tgt[0, 1:, None]).sum())


def head_importance(model: nn.Module, src_ids: list[int], tgt_ids: list[int]) -> list[tuple[str, int, int, float]]:
    """Every head of ``model``, as ``(kind, layer, head, change)``, sorted by ``change``: the log-probability of
    the translation ``tgt_ids`` with that head switched off, minus with every head on. The most negative first:
    the heads this translation leans on most."""
    was_training = model.training
    model.eval()
    try:
        base = sequence_log_prob(model, src_ids, tgt_ids)
        rows = []
        for kind in KINDS:
            layers = len(model.encoder.layers if kind == "encoder" else model.decoder.layers)
            for layer in range(layers):
                for head in range(attention_module(model, kind, layer).heads):
                    with zero_head(model, kind, layer, head):
                        rows.append((kind, layer, head, sequence_log_prob(model, src_ids, tgt_ids) - base))
    finally:
        model.train(was_training)
    return sorted(rows, key=lambda row: row[3])

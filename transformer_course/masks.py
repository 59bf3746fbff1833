"""Masks: which positions may attend to which (notebook 01; paper §3.2.3).

Every mask in this package is a boolean tensor where **True means "may attend"**
and whose shape broadcasts to ``(batch, heads, q_len, k_len)``:

- padding mask of the source:     ``(batch, 1, 1, src_len)``
- subsequent (causal) mask:       ``(1, 1, tgt_len, tgt_len)``
- target mask (padding & causal): ``(batch, 1, tgt_len, tgt_len)``

This is the convention of ``torch.nn.functional.scaled_dot_product_attention``
(boolean ``attn_mask``: True = take part in attention). Note that
``nn.MultiheadAttention``'s ``key_padding_mask`` uses the opposite meaning.
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["padding_mask", "subsequent_mask", "target_mask", "check_mask", "check_token_ids"]


def padding_mask(tokens: Tensor, pad_idx: int) -> Tensor:
    """True where ``tokens`` is a real token, as keys for every query: (batch, 1, 1, len)."""
    if tokens.dim() != 2:
        raise ValueError(
            f"padding_mask expects token ids of shape (batch, len), got shape {tuple(tokens.shape)}; "
            "add a batch dimension with tokens.unsqueeze(0)"
        )
    return (tokens != pad_idx)[:, None, None, :]  # (B, 1, 1, S)


def subsequent_mask(size: int, device: torch.device | str | None = None) -> Tensor:
    """True on and below the diagonal: position i may attend to positions 0..i. Shape (1, 1, size, size)."""
    if size <= 0:
        raise ValueError(f"subsequent_mask needs a positive size, got size={size}")
    mask = torch.ones(size, size, dtype=torch.bool, device=device).tril()  # (T, T)
    return mask[None, None]  # (1, 1, T, T)


def target_mask(tgt: Tensor, pad_idx: int) -> Tensor:
    """Decoder self-attention mask: no padding keys and no future keys. Shape (batch, 1, len, len)."""
    return padding_mask(tgt, pad_idx) & subsequent_mask(tgt.size(-1), tgt.device)  # (B, 1, T, T)


def check_mask(mask: Tensor, batch: int, q_len: int, k_len: int, name: str = "mask") -> None:
    """Raise a ValueError a learner can act on if ``mask`` is not a boolean mask for these sizes."""
    if mask.dtype != torch.bool:
        raise ValueError(
            f"{name} must be a boolean tensor (True = may attend), got dtype {mask.dtype}; "
            f"build it with a comparison such as tokens != pad_idx, or call .bool()"
        )
    expected = (batch, "heads", q_len, k_len)
    if mask.dim() != 4:
        raise ValueError(
            f"{name} must have 4 dimensions broadcastable to (batch, heads, q_len, k_len) = {expected}, "
            f"got shape {tuple(mask.shape)}; a padding mask is (batch, 1, 1, k_len), "
            "see transformer_course.masks.padding_mask"
        )
    b, _, q, k = mask.shape
    if b not in (1, batch) or q not in (1, q_len) or k != k_len:
        raise ValueError(
            f"{name} of shape {tuple(mask.shape)} does not broadcast to (batch, heads, q_len, k_len) = "
            f"{expected}; its batch must be 1 or {batch}, its q_len 1 or {q_len}, its k_len {k_len}"
        )


def check_token_ids(tokens: Tensor, name: str = "src") -> None:
    """Raise the ValueError the decoders give when ``tokens`` is not a (batch, length) tensor of integer ids (a
    1-D sentence would otherwise fail deep inside attention with a shape error)."""
    if not isinstance(tokens, Tensor):
        raise TypeError(f"{name} must be a tensor of token ids, got {type(tokens).__name__}")
    if tokens.dim() != 2:
        raise ValueError(
            f"{name} must be token ids of shape (batch, {name}_len), got shape {tuple(tokens.shape)}; "
            f"for one sentence use {name}.unsqueeze(0)"
        )
    if tokens.is_floating_point() or tokens.is_complex() or tokens.dtype == torch.bool:
        raise ValueError(f"{name} must hold integer token ids (torch.long), got dtype {tokens.dtype}")

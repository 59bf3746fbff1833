"""What a head does, in numbers: entropy, diagonality, argmax alignment (notebook 10; paper §3.2, Figures 3–5).

Each statistic takes one head's weights (q, k) or a layer's (heads, q, k) and returns one number per head;
:func:`head_statistics` tabulates them for every (kind, layer, head) of an
:class:`~transformer_course.viz.capture.AttentionCapture`.
"""

from __future__ import annotations

import torch
from torch import Tensor

from .capture import KINDS, AttentionCapture

__all__ = [
    "argmax_alignment",
    "as_heads",
    "attention_entropy",
    "diagonal_positions",
    "diagonality",
    "head_statistics",
]


def as_heads(weights: Tensor) -> Tensor:
    """(q, k) or (heads, q, k) → (heads, q, k)."""
    if weights.dim() == 2:
        return weights[None]  # (1, q, k)
    if weights.dim() != 3:
        raise ValueError(f"attention weights must be (q, k) or (heads, q, k), got shape {tuple(weights.shape)}")
    return weights


def attention_entropy(weights: Tensor) -> Tensor:
    """Mean over queries of −Σ_j w_ij log w_ij, in nats, per head: (heads,).

    0 = every query looks at one key; log(k) = uniform over k keys. Masked keys (weight 0) add 0.
    """
    w = as_heads(weights).float()  # (h, q, k)
    plogp = torch.where(w > 0, w * w.clamp_min(1e-30).log(), torch.zeros_like(w))  # 0 · log 0 = 0
    return -plogp.sum(-1).mean(-1)  # (h,)


def diagonal_positions(q_len: int, k_len: int, offset: int = 0, anti: bool = False) -> tuple[Tensor, Tensor]:
    """Query rows i and key columns j on the diagonal j = i + offset (anti: j = k_len − 1 − i − offset), inside the matrix."""
    i = torch.arange(q_len)  # (q,)
    j = (k_len - 1 - i - offset) if anti else (i + offset)  # (q,)
    keep = (j >= 0) & (j < k_len)
    return i[keep], j[keep]


def diagonality(weights: Tensor, offset: int = 0, anti: bool = False) -> Tensor:
    """Mean attention weight on the diagonal j = i + offset (or the anti-diagonal), per head: (heads,).

    1 = each query attends only to "its" position (a copy task's cross-attention); ≈ 1/k for uniform rows.
    """
    w = as_heads(weights)  # (h, q, k)
    i, j = diagonal_positions(w.size(1), w.size(2), offset, anti)
    return w[:, i, j].mean(-1)  # (h,)


def argmax_alignment(weights: Tensor, offset: int = 0, anti: bool = False) -> Tensor:
    """Fraction of queries whose largest weight is on the diagonal j = i + offset (or the anti-diagonal): (heads,)."""
    w = as_heads(weights)  # (h, q, k)
    i, j = diagonal_positions(w.size(1), w.size(2), offset, anti)
    return (w[:, i].argmax(-1) == j).float().mean(-1)  # (h,)


def head_statistics(capture: AttentionCapture) -> list[dict]:
    """One row per (kind, layer, head): ``entropy`` (nats), ``diagonality`` and ``anti_diagonality``."""
    rows = []
    for kind in KINDS:
        for layer, w in enumerate(getattr(capture, kind)):  # (h, q, k)
            entropy, diag, anti = attention_entropy(w), diagonality(w), diagonality(w, anti=True)
            for head in range(w.size(0)):
                rows.append(
                    {
                        "kind": kind,
                        "layer": layer,
                        "head": head,
                        "entropy": round(float(entropy[head]), 4),
                        "diagonality": round(float(diag[head]), 4),
                        "anti_diagonality": round(float(anti[head]), 4),
                    }
                )
    return rows

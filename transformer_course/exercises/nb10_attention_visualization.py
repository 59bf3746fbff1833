"""Checkers for the exercises of notebook 10 (attention visualization; paper §3.2, Figures 3–5).

from transformer_course.exercises import nb10_attention_visualization as ex
ex.check_head_entropy(head_entropy)
ex.check_alignment(alignment)
"""

from __future__ import annotations

import math

import torch

from . import Hint, Result, expect_tensor, run_check


def _weights(seed: int, heads: int, q_len: int, k_len: int, causal: bool = False) -> torch.Tensor:
    """Random attention weights (heads, q_len, k_len); rows sum to 1; zeros above the diagonal if causal."""
    g = torch.Generator().manual_seed(seed)
    scores = 2.0 * torch.randn(heads, q_len, k_len, generator=g)  # (h, q, k)
    if causal:
        future = torch.ones(q_len, k_len, dtype=torch.bool).triu(1)  # (q, k): True = a future key
        scores = scores.masked_fill(future, float("-inf"))
    return scores.softmax(-1)  # (h, q, k)


def _entropy_by_hand(weights: torch.Tensor) -> torch.Tensor:
    """Mean over queries of −Σ_j w_ij ln w_ij, with 0 · ln 0 = 0, one plain loop per number: (heads,)."""
    heads, q_len, k_len = weights.shape
    out = torch.zeros(heads, dtype=torch.float64)
    for h in range(heads):
        total = 0.0
        for i in range(q_len):
            total -= sum(float(w) * math.log(float(w)) for w in weights[h, i] if w > 0)
        out[h] = total / q_len
    return out


def check_head_entropy(head_entropy) -> Result:
    """``head_entropy(weights)``: weights (heads, q, k) → (heads,), the mean entropy of each head's rows in nats."""

    def check():
        # a one-hot head (entropy 0) and a uniform head (entropy ln k) first: the easiest numbers to reason about
        k = 4
        simple = torch.stack([torch.eye(k), torch.full((k, k), 1 / k)])  # (2, k, k)
        got = head_entropy(simple)
        if isinstance(got, torch.Tensor) and got.shape == (2,) and torch.isnan(got).any():
            raise Hint(
                "your entropy is NaN for a head whose weights contain 0: 0 · log 0 must count as 0 "
                "(e.g. torch.where(w > 0, w * w.log(), 0) or w * w.clamp_min(1e-30).log())"
            )
        expected = torch.tensor([0.0, math.log(k)])
        if (
            isinstance(got, torch.Tensor)
            and got.shape == (2,)
            and torch.allclose(got.double(), expected.double() / math.log(2), atol=1e-4)
        ):
            raise Hint(
                "your values are in bits (log2); use the natural log (torch.log), so a uniform row over k keys gives ln k"
            )
        if (
            isinstance(got, torch.Tensor)
            and got.shape == (2,)
            and torch.allclose(got.double(), expected.double() * k, atol=1e-4)
        ):
            raise Hint("you summed the entropies of the rows; take their mean over the queries (.mean(-1))")
        expect_tensor(got, expected, "head_entropy(one-hot head, uniform head)")
        for seed, causal in ((0, False), (1, True)):
            w = _weights(seed, heads=3, q_len=5, k_len=6 if not causal else 5, causal=causal)  # (3, q, k)
            got = head_entropy(w)
            expected = _entropy_by_hand(w).float()
            if isinstance(got, torch.Tensor) and torch.isnan(got).any():
                raise Hint("NaN: masked keys have weight 0, and 0 · log 0 must count as 0")
            if isinstance(got, torch.Tensor) and got.shape == (3,):
                over_queries = -(w * w.clamp_min(1e-30).log()).sum(-2).mean(-1)  # entropy down the columns
                if (
                    not causal
                    and torch.allclose(got, over_queries, atol=1e-4)
                    and not torch.allclose(got, expected, atol=1e-4)
                ):
                    raise Hint(
                        "you summed over the queries (dim -2); each row (one query) is a distribution over keys: sum over dim -1"
                    )
            expect_tensor(
                got, expected, f"head_entropy(weights {tuple(w.shape)}{', causal' if causal else ''})", atol=1e-4
            )

    return run_check("head entropy", check, "passed: 0 for a one-hot head, ln k for a uniform one, 0 · log 0 = 0")


def _alignment_case() -> torch.Tensor:
    """Cross-attention (heads=3, T=4, S=5) where head 0 alone, the max over heads, and the head mean disagree."""
    w = torch.full((3, 4, 5), 0.02)
    # head mean: target i → source (4 - i) (a reversal); each of heads 1 and 2 puts 0.5 there
    for i in range(4):
        w[1, i, 4 - i] = w[2, i, 4 - i] = 0.5
        w[0, i, i] = 0.9  # head 0 alone says "diagonal", very sharply
    return w / w.sum(-1, keepdim=True)  # (3, 4, 5): rows sum to 1


def check_alignment(alignment) -> Result:
    """``alignment(cross)``: cross-attention (heads, T, S) → LongTensor (T,), for each target position the
    source position with the largest weight averaged over the heads."""

    def check():
        w = _alignment_case()  # (3, 4, 5)
        got = alignment(w)
        expected = torch.tensor([4, 3, 2, 1])
        if not isinstance(got, torch.Tensor):
            raise Hint(f"alignment should return a tensor of source positions, got {type(got).__name__}")
        if got.shape == (5,):
            raise Hint(
                "you got one entry per source position: take the argmax over the keys (dim -1), one per target query"
            )
        if got.shape == (3, 4):
            raise Hint("you got one row per head: average the heads first (weights.mean(0)), then take the argmax")
        if got.shape == (4,) and torch.equal(got.long(), torch.arange(4)):
            raise Hint("this is head 0 alone; average over all heads (mean over dim 0) before the argmax")
        if got.dtype.is_floating_point:
            raise Hint("return positions (a LongTensor from .argmax), not weights")
        expect_tensor(got, expected, "alignment(cross)")
        g = torch.Generator().manual_seed(3)
        w = torch.rand(2, 6, 7, generator=g).softmax(-1)  # (2, 6, 7)
        expect_tensor(alignment(w), w.mean(0).argmax(-1), "alignment(random cross-attention (2, 6, 7))")

    return run_check("alignment", check, "passed: one source position per target position, from the head mean")

"""Checkers for the exercises of notebook 02 (scaled dot-product attention; paper §3.2.1).

from transformer_course.exercises import nb02_attention as ex
ex.check_attention(attention)
ex.check_dot_product_std(dot_product_std)
"""

from __future__ import annotations

import math

import torch

from . import Hint, Result, expect_tensor, run_check


def _reference(query, key, value, mask=None):
    """softmax(Q Kᵀ / √d_k) V, one query row at a time (independent of the package)."""
    *lead, q_len, d_k = query.shape
    out = torch.zeros(*lead, q_len, value.size(-1))
    weights = torch.zeros(*lead, q_len, key.size(-2))
    for i in range(q_len):
        scores = (query[..., i : i + 1, :] * key).sum(-1) / math.sqrt(d_k)  # (..., k_len)
        if mask is not None:
            scores = scores.masked_fill(~mask[..., min(i, mask.size(-2) - 1), :], float("-inf"))
        w = scores.softmax(-1)  # (..., k_len)
        weights[..., i, :] = w
        out[..., i, :] = (w[..., None] * value).sum(-2)
    return out, weights


def _unpack(got, what):
    if not (isinstance(got, tuple) and len(got) == 2):
        raise Hint(f"{what} should return a pair (output, weights), got {type(got).__name__}")
    return got


def check_attention(attention) -> Result:
    """``attention(query, key, value, mask=None)`` → (output, weights) as in the paper's equation (1)."""

    def check():
        g = torch.Generator().manual_seed(0)
        q, k, v = (
            torch.randn(2, 3, 16, generator=g),
            torch.randn(2, 5, 16, generator=g),
            torch.randn(2, 5, 4, generator=g),
        )  # d_k = 16, d_v = 4
        out, weights = _unpack(attention(q, k, v), "attention(query, key, value)")
        want_out, want_w = _reference(q, k, v)
        if isinstance(weights, torch.Tensor) and weights.shape == want_w.shape:
            sums = weights.sum(-1)
            if not torch.allclose(sums, torch.ones_like(sums), atol=1e-4):
                raise Hint(
                    "the weights of each query (a row, over the keys) should sum to 1: "
                    "take the softmax over the last dimension, dim=-1"
                )
            for wrong_scale, name in ((1.0, "not scaled"), (16.0, "divided by d_k")):
                wrong = (q @ k.transpose(-2, -1) / wrong_scale).softmax(-1)
                if torch.allclose(weights, wrong, atol=1e-5):
                    raise Hint(
                        f"the scores are {name}: divide Q Kᵀ by √d_k = {math.sqrt(16):.0f} (d_k is query.size(-1))"
                    )
        expect_tensor(weights, want_w, "weights (batch, q_len, k_len)")
        expect_tensor(out, want_out, "output (batch, q_len, d_v)")

        mask = torch.tensor([[True, True, True, False, False], [True, True, True, True, True]])[:, None, :]  # (2, 1, 5)
        out, weights = _unpack(attention(q, k, v, mask), "attention(query, key, value, mask)")
        want_out, want_w = _reference(q, k, v, mask)
        if isinstance(weights, torch.Tensor) and weights.shape == want_w.shape:
            if torch.allclose(weights[0, :, :3], torch.zeros(3, 3), atol=1e-6):
                raise Hint(
                    "the mask is used the wrong way round: True means 'may attend', so fill the "
                    "scores where the mask is False (masked_fill(~mask, ...))"
                )
            if not torch.allclose(weights[0, :, 3:], torch.zeros(3, 2), atol=1e-6):
                raise Hint(
                    "with a mask, keys where the mask is False must get weight 0: fill their scores "
                    "with -inf (or a very negative number) before the softmax"
                )
        expect_tensor(weights, want_w, "weights with a mask")
        expect_tensor(out, want_out, "output with a mask")

    return run_check("scaled dot-product attention", check, "passed: softmax(Q Kᵀ / √d_k) V with masking")


def check_dot_product_std(dot_product_std) -> Result:
    """``dot_product_std(d_k, samples)``: the spread of q·k for random q, k with unit-variance entries."""

    def check():
        for d_k in (4, 64, 256):
            torch.manual_seed(d_k)
            got = dot_product_std(d_k, 20_000)
            if isinstance(got, torch.Tensor):
                got = got.item() if got.numel() == 1 else got
            if not isinstance(got, (int, float)):
                raise Hint(
                    f"dot_product_std({d_k}, samples) should return one number (use .item()), got {type(got).__name__}"
                )
            want = math.sqrt(d_k)
            if abs(got - d_k) < 0.1 * d_k and d_k != 1 and abs(got - want) > 0.1 * want:
                raise Hint(
                    f"dot_product_std({d_k}) returned {got:.2f} ≈ d_k: that is the variance; "
                    "return the standard deviation (.std())"
                )
            if abs(got - 1.0) < 0.1 and abs(got - want) > 0.1 * want:
                raise Hint(
                    f"dot_product_std({d_k}) returned {got:.2f} ≈ 1: measure the raw q·k, before any division by √d_k"
                )
            if abs(got - want) > 0.1 * want:
                raise Hint(
                    f"dot_product_std({d_k}) returned {got:.2f}, expected about √d_k = {want:.2f}: "
                    "draw q and k of shape (samples, d_k) with torch.randn, sum q*k over the last "
                    "dimension, and take .std()"
                )

    return run_check("spread of q·k", check, "passed: the standard deviation of q·k grows like √d_k")

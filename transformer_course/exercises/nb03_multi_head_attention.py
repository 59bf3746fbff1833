"""Checkers for the exercises of notebook 03 (multi-head attention; paper §3.2.2).

from transformer_course.exercises import nb03_multi_head_attention as ex
ex.check_split_heads(split_heads)
ex.check_merge_heads(merge_heads)
ex.check_parameter_count(mha_parameter_count)
"""

from __future__ import annotations

import torch

from . import Hint, Result, expect_tensor, run_check

BATCH, LENGTH, HEADS, D_K = 2, 3, 4, 5
D_MODEL = HEADS * D_K


def _expected_split(x: torch.Tensor, heads: int) -> torch.Tensor:
    """Head h of position t holds features h·d_k … (h+1)·d_k − 1 of that position (slices, no reshapes)."""
    batch, length, d_model = x.shape
    d_k = d_model // heads
    return torch.stack([x[:, :, h * d_k : (h + 1) * d_k] for h in range(heads)], dim=1)  # (B, h, L, d_k)


def check_split_heads(split_heads) -> Result:
    """``split_heads(x, heads)``: (batch, len, d_model) → (batch, heads, len, d_k)."""

    def check():
        x = torch.arange(BATCH * LENGTH * D_MODEL, dtype=torch.float).view(BATCH, LENGTH, D_MODEL)
        expected = _expected_split(x, HEADS)
        got = split_heads(x, HEADS)
        if isinstance(got, torch.Tensor) and got.shape == (BATCH, LENGTH, HEADS, D_K):
            raise Hint(
                f"split_heads returned shape {tuple(got.shape)} = (batch, len, heads, d_k): "
                "swap the len and heads dimensions with .transpose(1, 2)"
            )
        if isinstance(got, torch.Tensor) and got.shape == expected.shape and not torch.equal(got, expected):
            if torch.equal(got, x.view(BATCH, HEADS, LENGTH, D_K)):
                raise Hint(
                    "split_heads has the right shape but mixes positions: x.view(batch, heads, len, d_k) "
                    "cuts the whole sequence into pieces. View as (batch, len, heads, d_k) first, then "
                    ".transpose(1, 2)"
                )
        expect_tensor(got, expected, f"split_heads(x, heads={HEADS}) for d_model={D_MODEL}")

    return run_check("split heads", check, "passed: head h of each position holds features h·d_k to (h+1)·d_k")


def check_merge_heads(merge_heads) -> Result:
    """``merge_heads(x)``: (batch, heads, len, d_k) → (batch, len, heads · d_k), the inverse of split_heads."""

    def check():
        x = torch.arange(BATCH * LENGTH * D_MODEL, dtype=torch.float).view(BATCH, LENGTH, D_MODEL)
        heads = _expected_split(x, HEADS)  # (B, h, L, d_k)
        got = merge_heads(heads)
        if isinstance(got, torch.Tensor) and got.shape == x.shape and not torch.equal(got, x):
            if torch.equal(got, heads.reshape(BATCH, LENGTH, D_MODEL)):
                raise Hint(
                    "merge_heads has the right shape but merges the heads in the wrong order: "
                    "move the heads next to d_k first, x.transpose(1, 2), then reshape"
                )
        expect_tensor(got, x, "merge_heads(x) — it should undo split_heads")

    return run_check("merge heads", check, "passed: Concat(head_1, …, head_h) position by position")


def check_parameter_count(mha_parameter_count) -> Result:
    """``mha_parameter_count(d_model, heads)``: weights and biases of W^Q, W^K, W^V (all heads) and W^O."""

    def check():
        for d_model, heads in ((512, 8), (512, 1), (64, 4)):
            got = mha_parameter_count(d_model, heads)
            want = 4 * d_model * d_model + 4 * d_model
            if got == want:
                continue
            if got == 4 * d_model * d_model:
                raise Hint(
                    f"mha_parameter_count({d_model}, {heads}) = {got} counts the weights only: "
                    "each of the four projections also has a bias of size d_model"
                )
            if heads > 1 and got == heads * want:
                raise Hint(
                    f"mha_parameter_count({d_model}, {heads}) = {got} grows with the number of heads: "
                    "each head projects to d_k = d_model / heads, so all heads together are d_model wide"
                )
            raise Hint(
                f"mha_parameter_count({d_model}, {heads}) returned {got}, expected {want}: "
                "four d_model × d_model matrices (W^Q, W^K, W^V, W^O) and four biases of size d_model"
            )

    return run_check("parameter count", check, "passed: 4·d_model² + 4·d_model, whatever the number of heads")

"""Checkers for the exercises of notebook 01 (masks; paper §3.2.3).

from transformer_course.exercises import nb01_masks as ex
ex.check_padding_mask(padding_mask)
ex.check_subsequent_mask(subsequent_mask)
ex.check_target_mask(target_mask)
ex.check_local_mask(local_mask)
"""

from __future__ import annotations

import torch

from . import Hint, Result, expect_tensor, run_check

PAD = 0
TOKENS = torch.tensor([[5, 6, 7, PAD, PAD], [8, 9, 10, 11, 12], [13, PAD, PAD, PAD, PAD]])  # (3, 5)


def _expected_padding(tokens: torch.Tensor, pad_idx: int) -> torch.Tensor:
    batch, length = tokens.shape
    mask = torch.zeros(batch, 1, 1, length, dtype=torch.bool)
    for b in range(batch):
        for j in range(length):
            mask[b, 0, 0, j] = bool(tokens[b, j] != pad_idx)
    return mask


def _expected_subsequent(size: int) -> torch.Tensor:
    mask = torch.zeros(1, 1, size, size, dtype=torch.bool)
    for i in range(size):
        for j in range(size):
            mask[0, 0, i, j] = j <= i  # query i may see keys 0..i
    return mask


def _shape_hint(got, expected: torch.Tensor, what: str, layout: str) -> None:
    if isinstance(got, torch.Tensor) and got.shape != expected.shape:
        raise Hint(
            f"{what} has shape {tuple(got.shape)}, expected {tuple(expected.shape)} = {layout}; "
            "add the missing size-1 dimensions with mask[:, None, None, :] or .unsqueeze"
        )


def check_padding_mask(padding_mask) -> Result:
    """``padding_mask(tokens, pad_idx)``: (batch, 1, 1, len), True on real tokens."""

    def check():
        for pad_idx in (PAD, 7):  # a pad id other than 0 catches `tokens != 0` hard-coded
            expected = _expected_padding(TOKENS, pad_idx)
            got = padding_mask(TOKENS, pad_idx)
            _shape_hint(got, expected, "padding_mask(tokens, pad_idx)", "(batch, 1, 1, len)")
            if pad_idx != PAD and isinstance(got, torch.Tensor) and torch.equal(got, _expected_padding(TOKENS, PAD)):
                raise Hint("with pad_idx=7 your mask still hides the 0s: compare with pad_idx, not with 0")
            expect_tensor(got, expected, f"padding_mask(tokens, pad_idx={pad_idx})")

    return run_check("padding mask", check, "passed: True on real tokens, shape (batch, 1, 1, len)")


def check_subsequent_mask(subsequent_mask) -> Result:
    """``subsequent_mask(size)``: (1, 1, size, size), True on and below the diagonal."""

    def check():
        for size in (4, 6, 1):
            expected = _expected_subsequent(size)
            got = subsequent_mask(size)
            _shape_hint(got, expected, f"subsequent_mask({size})", "(1, 1, size, size)")
            if isinstance(got, torch.Tensor) and got.shape == expected.shape and got.dtype == torch.bool:
                square = got[0, 0]
                if size > 1 and torch.equal(square, expected[0, 0].T):
                    raise Hint(
                        f"subsequent_mask({size}) lets each position see the future and not the past: "
                        "use the lower triangle (torch.tril), row = query, column = key"
                    )
                if size > 1 and torch.equal(square, expected[0, 0].tril(-1)):
                    raise Hint(
                        f"subsequent_mask({size}) hides the diagonal: position i may attend to itself "
                        "(torch.tril with diagonal=0)"
                    )
            expect_tensor(got, expected, f"subsequent_mask({size})")

    return run_check("subsequent mask", check, "passed: position i sees positions 0..i")


def check_target_mask(target_mask) -> Result:
    """``target_mask(tgt, pad_idx)``: (batch, 1, len, len), True where the key is real and not in the future."""

    def check():
        expected = _expected_padding(TOKENS, PAD) & _expected_subsequent(TOKENS.size(1))  # (3, 1, 5, 5)
        got = target_mask(TOKENS, PAD)
        _shape_hint(got, expected, "target_mask(tgt, pad_idx)", "(batch, 1, len, len)")
        if isinstance(got, torch.Tensor) and got.shape == expected.shape and got.dtype == torch.bool:
            if torch.equal(got, _expected_subsequent(TOKENS.size(1)).expand_as(expected)):
                raise Hint("target_mask ignores padding: combine the causal mask with the padding mask (&)")
            if torch.equal(got, _expected_padding(TOKENS, PAD) | _expected_subsequent(TOKENS.size(1))):
                raise Hint(
                    "target_mask lets a query see keys allowed by either mask: a key must pass both (use &, not |)"
                )
        expect_tensor(got, expected, "target_mask(tgt, pad_idx)")

    return run_check("target mask", check, "passed: no padding keys and no future keys")


def _expected_local(size: int, window: int) -> torch.Tensor:
    mask = torch.zeros(1, 1, size, size, dtype=torch.bool)
    for i in range(size):
        for j in range(size):
            mask[0, 0, i, j] = 0 <= i - j < window  # itself and the window - 1 positions before it
    return mask


def check_local_mask(local_mask) -> Result:
    """``local_mask(size, window)``: (1, 1, size, size), query i may see keys i - window + 1 … i."""

    def check():
        for size, window in ((6, 3), (5, 1), (4, 4), (7, 2)):
            expected = _expected_local(size, window)
            got = local_mask(size, window)
            what = f"local_mask({size}, window={window})"
            _shape_hint(got, expected, what, "(1, 1, size, size)")
            if (
                isinstance(got, torch.Tensor)
                and got.shape == expected.shape
                and got.dtype == torch.bool
                and not torch.equal(got, expected)
            ):
                if torch.equal(got, _expected_local(size, window + 1)):
                    raise Hint(
                        f"{what} lets each query see {window + 1} keys: with window={window} a query sees "
                        f"itself and the {window - 1} keys before it"
                    )
                if torch.equal(got, _expected_local(size, window) | _expected_local(size, window).transpose(-2, -1)):
                    raise Hint(
                        f"{what} lets a query see keys after it: keep it causal (combine with the "
                        "lower triangle, torch.tril)"
                    )
            expect_tensor(got, expected, what)

    return run_check("local mask", check, "passed: each position sees itself and the window − 1 positions before it")

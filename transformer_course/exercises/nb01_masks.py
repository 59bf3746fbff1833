"""Checkers for the exercises of notebook 01 (masks; paper §3.2.3, restricted self-attention §4).

from transformer_course.exercises import nb01_masks as ex
ex.check_allowed_pairs(allowed_pairs)          # a closed form: the (query, key) pairs a target mask allows
ex.check_mask_from_lengths(mask_from_lengths)  # a padding mask from sentence lengths (d2l's valid_lens)
ex.check_window_mask(window_mask)              # a centred window for the encoder, with padding (§4)
ex.check_local_mask(local_mask)                # a causal window for the decoder
ex.check_quiz(q1=..., q2=..., q3=...)

Masks: a boolean tensor, True = may attend, or 0/1 numbers of any dtype (1 = may attend); both pass.
"""

from __future__ import annotations

import torch

from ..i18n import messages
from . import Hint, as_int, as_mask, checker, questions, quiz_checker
from .guard import read_only
from .limits import too_big_to_build

t, lazy_t = messages("nb01_masks")

__all__ = [
    "PAD",
    "TOKENS",
    "PAIR_CASES",
    "check_allowed_pairs",
    "LENGTH_CASES",
    "check_mask_from_lengths",
    "WINDOW_MISTAKES",
    "WINDOW_CASES",
    "check_window_mask",
    "check_local_mask",
    "QUESTIONS",
    "check_quiz",
]

PAD = 0


# The notebook's toy batch: "the cat sat", "a dog ran very fast", "hello", padded with 0 to length 5.
TOKENS = torch.tensor([[4, 5, 6, PAD, PAD], [7, 8, 9, 10, 11], [12, PAD, PAD, PAD, PAD]])  # (3, 5)


def _real(tokens: torch.Tensor, pad_idx: int) -> list[list[bool]]:
    return [[int(t) != pad_idx for t in row] for row in tokens]


def _compare(got: torch.Tensor, expected: torch.Tensor, what: str) -> None:
    if not torch.equal(got, expected):
        if torch.equal(got, ~expected):
            raise Hint(t("mask_inverted", what=what))
        index = (got != expected).nonzero()[0].tolist()
        raise Hint(
            t(
                "differs_index_got",
                what=what,
                index=index,
                got=bool(got[tuple(index)]),
                expected=bool(expected[tuple(index)]),
            )
        )


# ---- Exercise 1 (a closed form): how many (query, key) pairs does a sentence's target mask allow? -------------------

# (length, max_len): (4, 9) tells the mistakes apart, then the toy batch's sentences, then masks far too big to build (10¹² booleans)
PAIR_CASES = [(4, 9), (3, 5), (5, 5), (1, 5), (1, 1), (600_000, 1_000_000), (1_000_000, 1_000_000), (1, 1_000_000)]


@checker(lazy_t("allowed_pairs"), lazy_t("passed_only_real"))
def check_allowed_pairs(allowed_pairs):
    """``allowed_pairs(length, max_len)``: the number of True entries of the target mask of one sentence of
    ``length`` real tokens padded to ``max_len`` (``tc.target_mask``: causal and no pad keys), with whole-number
    arithmetic; the checker asks for masks of 10¹² entries, too big to build."""
    if allowed_pairs is ... or allowed_pairs is None:
        raise NotImplementedError
    for length, max_len in PAIR_CASES:
        what = f"allowed_pairs(length={length}, max_len={max_len})"
        with too_big_to_build(what):
            got = as_int(allowed_pairs(length, max_len), what)
        real, pads = length * (length + 1) // 2, (max_len - length) * length  # rows 0…L−1, then the pad rows
        if got == real + pads:
            continue
        mistakes = {
            max_len * (max_len + 1) // 2: t("ignored_padding_key"),
            max_len * length: t("ignored_causal_rule"),
            real: t("left_out_pad"),
            real - length + pads: t("hid_diagonal_query"),
        }
        hint = mistakes.get(got)
        if hint is not None:
            raise Hint(t("what_got_hint", what=what, got=got, hint=hint))
        raise Hint(t("not_right_draw", what=what, got=got))


# ---- Exercise 2: a padding mask from lengths (d2l's valid_lens) -----------------------------------------------------


def _from_lengths(lengths: list[int], max_len: int, keep) -> torch.Tensor:
    return torch.tensor([[bool(keep(j, n)) for j in range(max_len)] for n in lengths])  # (batch, max_len)


LENGTH_CASES = [([3, 5, 1], 5), ([2, 7, 4, 7], 8), ([1], 3)]


@checker(lazy_t("mask_lengths"), lazy_t("passed_torch_arange"))
def check_mask_from_lengths(mask_from_lengths):
    """``mask_from_lengths(lengths, max_len)``: lengths a (batch,) LongTensor → (batch, 1, 1, max_len),
    True (or 1) on the first ``lengths[b]`` positions of sentence b."""
    for lengths, max_len in LENGTH_CASES:
        what = f"mask_from_lengths(torch.tensor({lengths}), max_len={max_len})"
        got = mask_from_lengths(torch.tensor(lengths), max_len)
        expected = _from_lengths(lengths, max_len, lambda j, n: j < n)[:, None, None, :]  # (B, 1, 1, L)
        if isinstance(got, torch.Tensor) and got.shape != expected.shape:
            if got.shape == expected.shape[:1] + expected.shape[-1:]:
                raise Hint(t("shape_add_head", what=what, shape=tuple(got.shape)))
            if got.shape == (len(lengths), 1, max_len, 1):
                raise Hint(t("shape_masks_queries", what=what, shape=tuple(got.shape)))
        got = as_mask(got, tuple(expected.shape), what)
        if torch.equal(got, _from_lengths(lengths, max_len, lambda j, n: j <= n)[:, None, None, :]):
            raise Hint(t("lets_pad_through", what=what))
        _compare(got, expected, what)


# ---- Exercise 3: a centred window for the encoder (§4, restricted self-attention), with padding ---------------------


def _window(tokens: torch.Tensor, pad_idx: int, radius: int, rule) -> torch.Tensor:
    """(batch, 1, len, len): query i may see key j when ``rule(i, j, real, radius)`` (the checker gives the rule)."""
    size, masks = tokens.size(1), []
    for real in _real(tokens, pad_idx):
        masks.append(torch.tensor([[rule(i, j, real, radius) for j in range(size)] for i in range(size)]))
    return torch.stack(masks)[:, None]  # (batch, 1, len, len)


WINDOW_MISTAKES = {
    lazy_t("sees_only_past"): (lambda i, j, real, r: 0 <= i - j <= r and real[j]),
    lazy_t("window_too_narrow"): (lambda i, j, real, r: abs(i - j) < r and real[j]),
    lazy_t("window_too_wide"): (lambda i, j, real, r: abs(i - j) <= r + 1 and real[j]),
    lazy_t("pads_looked_combine"): (lambda i, j, real, r: abs(i - j) <= r),
    lazy_t("also_masked_pad"): (lambda i, j, real, r: abs(i - j) <= r and real[j] and real[i]),
}


WINDOW_CASES = [(TOKENS, PAD, 1), (torch.tensor([[3, 4, 5, 6, 7, 8, 9, 1, 1]]), 1, 2), (TOKENS, PAD, 0)]


@checker(lazy_t("window_mask"), lazy_t("passed_band_width"))
def check_window_mask(window_mask):
    """``window_mask(tokens, pad_idx, radius)`` → (batch, 1, len, len): True (or 1) where key j is a real
    token and |i − j| <= radius."""

    def in_window(i, j, real, radius):
        return abs(i - j) <= radius and real[j]

    for tokens, pad_idx, radius in WINDOW_CASES:
        what = f"window_mask(tokens {tuple(tokens.shape)}, pad_idx={pad_idx}, radius={radius})"
        expected = _window(tokens, pad_idx, radius, in_window)
        got = as_mask(window_mask(tokens.clone(), pad_idx, radius), tuple(expected.shape), what)
        if torch.equal(got, expected):
            continue
        if pad_idx != PAD and torch.equal(got, _window(tokens, PAD, radius, in_window)):
            raise Hint(t("compare_tokens_pad", what=what))
        for hint, rule in WINDOW_MISTAKES.items():
            if torch.equal(got, _window(tokens, pad_idx, radius, rule)):
                raise Hint(t("what_hint", what=what, hint=hint))
        _compare(got, expected, what)


# ---- Exercise 4: a causal window for the decoder --------------------------------------------------------------------


def _local(size: int, window: int, rule) -> torch.Tensor:
    return torch.tensor([[rule(i, j, window) for j in range(size)] for i in range(size)])[None, None]  # (1, 1, s, s)


@checker(lazy_t("local_mask"), lazy_t("passed_each_position"))
def check_local_mask(local_mask):
    """``local_mask(size, window)``: (1, 1, size, size), query i may see keys i − window + 1 … i."""
    for size, window in ((6, 3), (5, 1), (4, 4), (7, 2)):
        what = f"local_mask({size}, window={window})"
        expected = _local(size, window, lambda i, j, w: 0 <= i - j < w)
        got = local_mask(size, window)
        if isinstance(got, torch.Tensor) and got.shape == (size, size):
            raise Hint(t("shape_add_batch", what=what, shape=(size, size)))
        got = as_mask(got, tuple(expected.shape), what)
        if torch.equal(got, expected):
            continue
        if torch.equal(got, _local(size, window + 1, lambda i, j, w: 0 <= i - j < w)):
            raise Hint(t("lets_each_query", what=what, seen=window + 1, window=window, before=window - 1))
        if torch.equal(got, _local(size, window, lambda i, j, w: abs(i - j) < w)):
            raise Hint(t("lets_query_see", what=what))
        if torch.equal(got, _local(size, window, lambda i, j, w: 0 < i - j < w)):
            raise Hint(t("hides_diagonal_position", what=what))
        _compare(got, expected, what)


# ---- Questions ------------------------------------------------------------------------------------------------------

QUESTIONS = questions(
    "nb01_masks",
    lazy_t,
    q1="cab5ccad1e1a633ec6455fb9",
    q2="c1496610090d93d654b2832d",
    q3="e504a6686ec9675aa5e606b8",
)


check_quiz = quiz_checker(QUESTIONS)  # one line per question

read_only(__name__)  # what the checks use stays what it was at import (ex.no_shortcuts = … is refused)

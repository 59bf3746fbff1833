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

import math

import torch
from torch.overrides import TorchFunctionMode

from ..i18n import lazy_t, load_catalogue, register, t
from . import Choice, Hint, Numeric, Result, as_int, as_mask, run_check
from . import check_quiz as _check_quiz
from .seal import answer_check

register("zh", load_catalogue("nb01_masks"))

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


class _TooBig(TorchFunctionMode):
    """Refuses any tensor of more than ``limit`` numbers (a factory's size, or the broadcast of an operation's
    tensors) before it is made, so that a learner who builds what an exercise asks to count gets a line that
    says so instead of a kernel killed for memory."""

    def __init__(self, what: str, limit: int):
        super().__init__()
        self.what, self.limit = what, limit

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        ints = [int(a) for a in args if isinstance(a, int) and not isinstance(a, bool)]
        shape = kwargs.get("size") or next((a for a in args if isinstance(a, (tuple, list, torch.Size))), None)
        numel = 0
        if name in ("empty", "zeros", "ones", "full", "rand", "randn", "randint", "eye"):
            dims = list(shape) if shape is not None else ints[-2:] if name == "eye" else ints
            if name == "randint" and shape is None:
                dims = []
            numel = math.prod(int(n) for n in dims) if dims and all(isinstance(n, int) for n in dims) else 0
        elif name == "arange" and ints:
            numel = max(abs(n) for n in ints)
        tensors = [a.shape for a in args if isinstance(a, torch.Tensor)]
        if tensors:
            try:
                numel = max(numel, math.prod(torch.broadcast_shapes(*tensors)))
            except RuntimeError:
                pass
        if numel > self.limit:
            raise Hint(
                t(
                    "{what} makes a tensor of {numel:,} numbers: this size does not fit in memory, so count "
                    "with whole-number arithmetic instead of building it",
                    what=self.what,
                    numel=numel,
                )
            )
        return func(*args, **kwargs)


def _too_big_to_build(what: str, limit: int = 10**8) -> _TooBig:
    """``with _too_big_to_build("allowed_pairs(…)"): …``: the block may not make a tensor of over ``limit`` numbers."""
    return _TooBig(what, limit)


# The notebook's toy batch: "the cat sat", "a dog ran very fast", "hello", padded with 0 to length 5.
TOKENS = torch.tensor([[4, 5, 6, PAD, PAD], [7, 8, 9, 10, 11], [12, PAD, PAD, PAD, PAD]])  # (3, 5)


def _real(tokens: torch.Tensor, pad_idx: int) -> list[list[bool]]:
    return [[int(t) != pad_idx for t in row] for row in tokens]


def _compare(got: torch.Tensor, expected: torch.Tensor, what: str) -> None:
    if not torch.equal(got, expected):
        if torch.equal(got, ~expected):
            raise Hint(t("{what} is inverted: True (or 1) should mean 'may attend'", what=what))
        index = (got != expected).nonzero()[0].tolist()
        raise Hint(
            t(
                "{what} differs at index {index}: got {got}, expected {expected}",
                what=what,
                index=index,
                got=bool(got[tuple(index)]),
                expected=bool(expected[tuple(index)]),
            )
        )


# ---------------------------------------------------------------------------------------------------
# Exercise 1 (a closed form): how many (query, key) pairs does a sentence's target mask allow?

# (length, max_len): (4, 9) tells the mistakes apart, then the toy batch's sentences, then masks far too big to build (10¹² booleans)
PAIR_CASES = [(4, 9), (3, 5), (5, 5), (1, 5), (1, 1), (600_000, 1_000_000), (1_000_000, 1_000_000), (1, 1_000_000)]


def check_allowed_pairs(allowed_pairs) -> Result:
    """``allowed_pairs(length, max_len)``: the number of True entries of the target mask of one sentence of
    ``length`` real tokens padded to ``max_len`` (``tc.target_mask``: causal and no pad keys), with whole-number
    arithmetic; the checker asks for masks of 10¹² entries, too big to build."""

    def check():
        if allowed_pairs is ... or allowed_pairs is None:
            raise NotImplementedError
        for length, max_len in PAIR_CASES:
            what = f"allowed_pairs(length={length}, max_len={max_len})"
            with _too_big_to_build(what):
                got = as_int(allowed_pairs(length, max_len), what)
            real, pads = length * (length + 1) // 2, (max_len - length) * length  # rows 0…L−1, then the pad rows
            if got == real + pads:
                continue
            mistakes = {
                max_len * (max_len + 1) // 2: t(
                    "you ignored the padding: a key must also be a real token, so pads are never looked at"
                ),
                max_len * length: t("you ignored the causal rule: query i sees only keys 0…i"),
                real: t(
                    "you left out the pad queries: the target mask hides pad keys only, so a pad query still looks "
                    "at the real tokens before it"
                ),
                real - length + pads: t("you hid the diagonal: query i may attend to itself (keys 0…i, i included)"),
            }
            hint = mistakes.get(got)
            if hint is not None:
                raise Hint(t("{what} = {got:,}: {hint}", what=what, got=got, hint=hint))
            raise Hint(
                t(
                    "{what} = {got:,} is not right: draw a small case's table, rows = queries, columns = keys, "
                    "and count row by row",
                    what=what,
                    got=got,
                )
            )

    return run_check(t("allowed pairs"), check, t("passed: only real keys, only the past and the present"))


# ---------------------------------------------------------------------------------------------------
# Exercise 2: a padding mask from lengths (d2l's valid_lens)


def _from_lengths(lengths: list[int], max_len: int, keep) -> torch.Tensor:
    return torch.tensor([[bool(keep(j, n)) for j in range(max_len)] for n in lengths])  # (batch, max_len)


LENGTH_CASES = [([3, 5, 1], 5), ([2, 7, 4, 7], 8), ([1], 3)]


def check_mask_from_lengths(mask_from_lengths) -> Result:
    """``mask_from_lengths(lengths, max_len)``: lengths a (batch,) LongTensor → (batch, 1, 1, max_len),
    True (or 1) on the first ``lengths[b]`` positions of sentence b."""

    def check():
        for lengths, max_len in LENGTH_CASES:
            what = f"mask_from_lengths(torch.tensor({lengths}), max_len={max_len})"
            got = mask_from_lengths(torch.tensor(lengths), max_len)
            expected = _from_lengths(lengths, max_len, lambda j, n: j < n)[:, None, None, :]  # (B, 1, 1, L)
            if isinstance(got, torch.Tensor) and got.shape != expected.shape:
                if got.shape == expected.shape[:1] + expected.shape[-1:]:
                    raise Hint(
                        t(
                            "{what} has shape {shape}: add the head and query axes, "
                            "(batch, 1, 1, max_len), so that it broadcasts over heads and queries",
                            what=what,
                            shape=tuple(got.shape),
                        )
                    )
                if got.shape == (len(lengths), 1, max_len, 1):
                    raise Hint(
                        t(
                            "{what} has shape {shape}: that masks queries; the padding mask is about "
                            "keys, the last axis: (batch, 1, 1, max_len)",
                            what=what,
                            shape=tuple(got.shape),
                        )
                    )
            got = as_mask(got, tuple(expected.shape), what)
            if torch.equal(got, _from_lengths(lengths, max_len, lambda j, n: j <= n)[:, None, None, :]):
                raise Hint(
                    t("{what} lets one pad through: positions 0 … length − 1 are real (use <, not <=)", what=what)
                )
            _compare(got, expected, what)

    return run_check(
        t("mask from lengths"), check, t("passed: torch.arange(max_len) < lengths[:, None], as (B, 1, 1, L)")
    )


# ---------------------------------------------------------------------------------------------------
# Exercise 3: a centred window for the encoder (§4, restricted self-attention), with padding


def _window(tokens: torch.Tensor, pad_idx: int, radius: int, rule) -> torch.Tensor:
    """(batch, 1, len, len): query i may see key j when ``rule(i, j, real, radius)`` (the checker gives the rule)."""
    size, masks = tokens.size(1), []
    for real in _real(tokens, pad_idx):
        masks.append(torch.tensor([[rule(i, j, real, radius) for j in range(size)] for i in range(size)]))
    return torch.stack(masks)[:, None]  # (batch, 1, len, len)


WINDOW_MISTAKES = {
    lazy_t("it sees only the past: a centred window reaches radius positions on both sides (|i − j| <= radius)"): (
        lambda i, j, real, r: 0 <= i - j <= r and real[j]
    ),
    lazy_t("the window is one too narrow: |i − j| <= radius, so radius = 1 means 3 keys"): (
        lambda i, j, real, r: abs(i - j) < r and real[j]
    ),
    lazy_t("the window is one too wide: |i − j| <= radius, not radius + 1"): (
        lambda i, j, real, r: abs(i - j) <= r + 1 and real[j]
    ),
    lazy_t("pads are looked at: combine the window with the padding mask of the keys (&)"): (
        lambda i, j, real, r: abs(i - j) <= r
    ),
    lazy_t(
        "you also masked the pad queries: their rows are then empty, and an empty row gives NaN (section 6); "
        "mask keys only"
    ): (lambda i, j, real, r: abs(i - j) <= r and real[j] and real[i]),
}


WINDOW_CASES = [(TOKENS, PAD, 1), (torch.tensor([[3, 4, 5, 6, 7, 8, 9, 1, 1]]), 1, 2), (TOKENS, PAD, 0)]


def check_window_mask(window_mask) -> Result:
    """``window_mask(tokens, pad_idx, radius)`` → (batch, 1, len, len): True (or 1) where key j is a real
    token and |i − j| <= radius."""

    def in_window(i, j, real, radius):
        return abs(i - j) <= radius and real[j]

    def check():
        for tokens, pad_idx, radius in WINDOW_CASES:
            what = f"window_mask(tokens {tuple(tokens.shape)}, pad_idx={pad_idx}, radius={radius})"
            expected = _window(tokens, pad_idx, radius, in_window)
            got = as_mask(window_mask(tokens.clone(), pad_idx, radius), tuple(expected.shape), what)
            if torch.equal(got, expected):
                continue
            if pad_idx != PAD and torch.equal(got, _window(tokens, PAD, radius, in_window)):
                raise Hint(t("{what}: compare the tokens with pad_idx, not with 0", what=what))
            for hint, rule in WINDOW_MISTAKES.items():
                if torch.equal(got, _window(tokens, pad_idx, radius, rule)):
                    raise Hint(t("{what}: {hint}", what=what, hint=hint))
            _compare(got, expected, what)

    return run_check(t("window mask"), check, t("passed: a band of width 2·radius + 1 around each query, no pads"))


# ---------------------------------------------------------------------------------------------------
# Exercise 4: a causal window for the decoder


def _local(size: int, window: int, rule) -> torch.Tensor:
    return torch.tensor([[rule(i, j, window) for j in range(size)] for i in range(size)])[None, None]  # (1, 1, s, s)


def check_local_mask(local_mask) -> Result:
    """``local_mask(size, window)``: (1, 1, size, size), query i may see keys i − window + 1 … i."""

    def check():
        for size, window in ((6, 3), (5, 1), (4, 4), (7, 2)):
            what = f"local_mask({size}, window={window})"
            expected = _local(size, window, lambda i, j, w: 0 <= i - j < w)
            got = local_mask(size, window)
            if isinstance(got, torch.Tensor) and got.shape == (size, size):
                raise Hint(
                    t(
                        "{what} has shape {shape}: add the batch and head axes, (1, 1, size, size)",
                        what=what,
                        shape=(size, size),
                    )
                )
            got = as_mask(got, tuple(expected.shape), what)
            if torch.equal(got, expected):
                continue
            if torch.equal(got, _local(size, window + 1, lambda i, j, w: 0 <= i - j < w)):
                raise Hint(
                    t(
                        "{what} lets each query see {seen} keys: with window={window} a query sees "
                        "itself and the {before} keys before it",
                        what=what,
                        seen=window + 1,
                        window=window,
                        before=window - 1,
                    )
                )
            if torch.equal(got, _local(size, window, lambda i, j, w: abs(i - j) < w)):
                raise Hint(
                    t(
                        "{what} lets a query see keys after it: keep it causal (the lower triangle, torch.tril)",
                        what=what,
                    )
                )
            if torch.equal(got, _local(size, window, lambda i, j, w: 0 < i - j < w)):
                raise Hint(t("{what} hides the diagonal: a position may attend to itself", what=what))
            _compare(got, expected, what)

    return run_check(
        t("local mask"), check, t("passed: each position sees itself and the window − 1 positions before it")
    )


# ---------------------------------------------------------------------------------------------------
# Questions

QUESTIONS = {
    "q1": Numeric(
        key="nb01-q1",
        digests=("1300d5beb277c5893e85b0da",),
        why=lazy_t(
            "key_padding_mask's True means IGNORE: passed as it is, the mask hides the 3 words and leaves each query "
            "the 2 pads; pass ~src_mask[:, 0, 0]"
        ),
        mistakes={
            lazy_t(
                "that would be right with this course's convention; key_padding_mask's True means 'ignore', so "
                "the real words are hidden"
            ): 3,
            lazy_t("key_padding_mask hides every key marked True; which keys are False here?"): 5,
            lazy_t("PyTorch fills the True keys with −∞; the False ones, the pads, are still attended to"): 0,
        },
        rel_tol=0,
        otherwise=lazy_t("mark which keys are True in src_mask[0, 0, 0], then read True as 'ignore'"),
    ),
    "q2": Choice(
        key="nb01-q2",
        digest="8e2ec1838d3ab560ee2da1f3",
        letters="abc",
        why=lazy_t("key 0 is a real token and no query is before it, so every row, pad rows included, may see it"),
        wrong={
            "a": lazy_t("row 0 sees key 0, and so does every later row: the causal rule lets row i see keys 0…i"),
            "c": lazy_t(
                "the target mask hides pad KEYS, not pad queries: a pad row still sees the real tokens before it"
            ),
        },
    ),
    "q3": Numeric(
        key="nb01-q3",
        digests=("4a44108998794c59750882a9",),
        why=lazy_t("(64, 1, 1, 40) holds 64 · 40 = 2,560 booleans; broadcasting reuses them for 8 heads × 40 queries"),
        mistakes={
            lazy_t(
                "that is the size of the scores (64, 8, 40, 40); the mask stores size-1 axes for heads and queries"
            ): 64 * 8 * 40 * 40,
            lazy_t("the head axis has size 1 too: the mask is (64, 1, 1, 40), the same for every head"): 64 * 8 * 40,
            lazy_t("the query axis has size 1: the padding mask is about keys only, (64, 1, 1, 40)"): 64 * 40 * 40,
        },
        rel_tol=0,
        otherwise=lazy_t("count the numbers in a tensor of shape (batch, 1, 1, len)"),
    ),
}


@answer_check
def check_quiz(**answers) -> Result:
    """``check_quiz(q1=4, q2="a", q3=123)``: one line per question."""
    return _check_quiz(QUESTIONS, answers)

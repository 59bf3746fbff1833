"""Checkers for notebook 02 (scaled dot-product attention; paper §3.2.1).

    from transformer_course.exercises import nb02_attention as ex
    ex.check_attention(scaled_dot_product_attention)   # the function of my_transformer/attention.py
    ex.check_additive_attention(additive_attention)    # exercise 1: a variant (Bahdanau's additive attention)
    ex.check_bug_lines(bug_lines)                      # exercise 2: find the bugs in buggy_attention
    ex.check_weights_bytes(weights_bytes)              # exercise 3: estimate the memory of the weights
    ex.check_question_scaling("…"), ex.check_question_mask_sum("…"), ex.check_question_additive("…")

Numbers may come as Python, numpy or one-element tensor numbers; pairs and lists of lines as tuples or lists.
"""

from __future__ import annotations

import inspect
import math

import torch
from torch import nn

from ..i18n import lazy_t, register, t
from . import (
    Choice,
    Hint,
    Result,
    as_int,
    as_number,
    check_question,
    expect_tensor,
    print_numbered,  # noqa: F401 (the notebook calls ex.print_numbered)
    run_check,
)
from .zh.nb02_attention import ZH

register("zh", ZH)

__all__ = [
    "check_attention",
    "check_additive_attention",
    "buggy_attention",
    "BUG_LINES",
    "check_bug_lines",
    "check_weights_bytes",
    "SCALING",
    "MASK_SUM",
    "ADDITIVE",
    "check_question_scaling",
    "check_question_mask_sum",
    "check_question_additive",
]


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


def _pair(got, what):
    """(output, weights) as a tuple or a list."""
    if not isinstance(got, (tuple, list)):
        raise Hint(
            t(
                "{what} should return the pair (output, weights); it should be a tuple or a list, got {type}",
                what=what,
                type=type(got).__name__,
            )
        )
    if len(got) != 2:
        raise Hint(
            t(
                "{what} should return the pair (output, weights); it should have 2 items, got {count}",
                what=what,
                count=len(got),
            )
        )
    output, weights = got
    return output, weights


class _FixedDropout(nn.Dropout):
    """A stand-in for nn.Dropout(0.5) that drops every other number (and doubles the rest): reproducible."""

    def __init__(self) -> None:
        super().__init__(0.5)

    def forward(self, x):
        keep = (torch.arange(x.numel()) % 2 == 0).view(x.shape)
        return x * keep * 2.0


def _check_mask_direction(weights, want_w, mask_rows_kept: int):
    """Sentence 0 may attend to its first ``mask_rows_kept`` keys only: name an inverted or ignored mask."""
    if isinstance(weights, torch.Tensor) and weights.shape == want_w.shape:
        kept, hidden = weights[0, :, :mask_rows_kept], weights[0, :, mask_rows_kept:]
        if torch.allclose(kept, torch.zeros_like(kept), atol=1e-6):
            raise Hint(
                t(
                    "the mask is used the wrong way round: True means 'may attend', so fill the "
                    "scores where the mask is False (masked_fill(~mask, ...))"
                )
            )
        if not torch.allclose(hidden, torch.zeros_like(hidden), atol=1e-6):
            raise Hint(
                t(
                    "with a mask, keys where the mask is False must get weight 0: fill their scores "
                    "with -inf (or the most negative float) before the softmax, and do not add the mask"
                )
            )


def check_attention(attention) -> Result:
    """``attention(query, key, value, mask=None, dropout=None)`` → (output, weights), the paper's equation (1)."""

    def check():
        g = torch.Generator().manual_seed(0)
        q, k, v = (
            torch.randn(2, 3, 16, generator=g),
            torch.randn(2, 5, 16, generator=g),
            torch.randn(2, 5, 4, generator=g),
        )  # d_k = 16, d_v = 4
        out, weights = _pair(attention(q, k, v), "attention(query, key, value)")
        want_out, want_w = _reference(q, k, v)
        if isinstance(weights, torch.Tensor) and weights.shape == want_w.shape:
            sums = weights.sum(-1)
            if not torch.allclose(sums, torch.ones_like(sums), atol=1e-4):
                raise Hint(
                    t(
                        "the weights of each query (a row, over the keys) should sum to 1: "
                        "take the softmax over the last dimension, dim=-1"
                    )
                )
            for wrong_scale, name in ((1.0, t("not scaled")), (16.0, t("divided by d_k"))):
                wrong = (q @ k.transpose(-2, -1) / wrong_scale).softmax(-1)
                if torch.allclose(weights, wrong, atol=1e-5):
                    raise Hint(
                        t(
                            "the scores are {name}: divide Q Kᵀ by √d_k = {root:.0f} (d_k is query.size(-1))",
                            name=name,
                            root=math.sqrt(16),
                        )
                    )
        expect_tensor(weights, want_w, "weights (batch, q_len, k_len)")
        expect_tensor(out, want_out, "output (batch, q_len, d_v)")

        mask = torch.tensor([[True, True, True, False, False], [True, True, True, True, True]])[:, None, :]  # (2, 1, 5)
        out, weights = _pair(attention(q, k, v, mask), "attention(query, key, value, mask)")
        want_out, want_w = _reference(q, k, v, mask)
        _check_mask_direction(weights, want_w, 3)
        expect_tensor(weights, want_w, t("weights with a mask"))
        expect_tensor(out, want_out, t("output with a mask"))

        if "dropout" in inspect.signature(attention).parameters:
            out, _ = _pair(attention(q, k, v, mask, _FixedDropout()), "attention(query, key, value, mask, dropout)")
            if isinstance(out, torch.Tensor) and out.shape == want_out.shape:
                if torch.allclose(out, want_out, atol=1e-5):
                    raise Hint(t("the dropout module is not used: apply it to the weights, weights = dropout(weights)"))
                if torch.allclose(out, _FixedDropout()(want_out), atol=1e-5):
                    raise Hint(t("dropout is applied to the output; apply it to the weights, before weights @ value"))
            expect_tensor(out, _FixedDropout()(want_w) @ v, t("output with dropout on the weights"))

    return run_check(t("scaled dot-product attention"), check, t("passed: softmax(Q Kᵀ / √d_k) V with masking"))


# ---- exercise 1: additive attention ------------------------------------------------------------------


def _additive_reference(query, key, value, W_q, W_k, w_v, mask=None):
    """score(q_i, k_j) = w_vᵀ tanh(q_i W_q + k_j W_k), one (query, key) pair at a time."""
    batch, q_len, _ = query.shape
    k_len = key.size(1)
    scores = torch.zeros(batch, q_len, k_len)
    for b in range(batch):
        for i in range(q_len):
            for j in range(k_len):
                scores[b, i, j] = (w_v * torch.tanh(query[b, i] @ W_q + key[b, j] @ W_k)).sum()
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = scores.softmax(-1)  # (batch, q_len, k_len)
    return weights @ value, weights


def _additive_variants(query, key, W_q, W_k, w_v) -> dict[str, torch.Tensor]:
    """Weights of plausible wrong versions (no mask), each with the hint that names its mistake."""
    features = (query @ W_q)[:, :, None, :] + (key @ W_k)[:, None, :, :]  # (batch, q_len, k_len, d_hidden)
    scores = torch.tanh(features) @ w_v  # (batch, q_len, k_len)
    d_hidden = w_v.numel()
    variants = {
        t(
            "the tanh is missing: without it the query's part, q W_q · w_v, is the same for every key and "
            "cancels in the softmax, so every query gets the same weights"
        ): (features @ w_v).softmax(-1),
        t("the paper's additive attention uses tanh, not ReLU: w_vᵀ tanh(q W_q + k W_k)"): (
            features.relu() @ w_v
        ).softmax(-1),
    }
    for name, size in (
        ("d_hidden", d_hidden),
        (t("the key size"), key.size(-1)),
        (t("the query size"), query.size(-1)),
    ):
        variants[
            t(
                "the scores are divided by √({name}); additive attention is not scaled: 1/√d_k belongs to "
                "dot-product attention, whose scores grow with d_k",
                name=name,
            )
        ] = (scores / math.sqrt(size)).softmax(-1)
    return variants


def check_additive_attention(additive_attention) -> Result:
    """``additive_attention(query, key, value, W_q, W_k, w_v, mask=None)`` → (output, weights)."""

    def check():
        g = torch.Generator().manual_seed(2)
        # queries and keys of different sizes (6 and 5): additive attention allows it, dot products do not
        query, key, value = (
            torch.randn(2, 3, 6, generator=g),
            torch.randn(2, 4, 5, generator=g),
            torch.randn(2, 4, 2, generator=g),
        )
        W_q, W_k, w_v = (
            torch.randn(6, 7, generator=g) * 0.6,
            torch.randn(5, 7, generator=g) * 0.6,
            torch.randn(7, generator=g) * 1.5,
        )
        want_out, want_w = _additive_reference(query, key, value, W_q, W_k, w_v)
        out, weights = _pair(additive_attention(query, key, value, W_q, W_k, w_v), "additive_attention(...)")
        if isinstance(weights, torch.Tensor) and weights.shape == want_w.shape:
            sums = weights.sum(-1)
            if not torch.allclose(sums, torch.ones_like(sums), atol=1e-4):
                raise Hint(t("each query's weights (a row, over the keys) should sum to 1: softmax over dim=-1"))
            for hint, wrong in _additive_variants(query, key, W_q, W_k, w_v).items():
                if torch.allclose(weights, wrong, atol=1e-5):
                    raise Hint(hint)
        expect_tensor(weights, want_w, "weights (batch, q_len, k_len)")
        expect_tensor(out, want_out, "output (batch, q_len, d_v)")

        mask = torch.tensor([[True, True, False, False], [True, True, True, True]])[:, None, :]  # (2, 1, 4)
        want_out, want_w = _additive_reference(query, key, value, W_q, W_k, w_v, mask)
        out, weights = _pair(additive_attention(query, key, value, W_q, W_k, w_v, mask), t("with a mask, it"))
        _check_mask_direction(weights, want_w, 2)
        expect_tensor(weights, want_w, t("weights with a mask"))
        expect_tensor(out, want_out, t("output with a mask"))

    return run_check(t("additive attention"), check, t("passed: softmax(w_vᵀ tanh(q W_q + k W_k)) V, masked"))


# ---- exercise 2: find the bugs -----------------------------------------------------------------------


def buggy_attention(query, key, value, mask=None):
    d_k = key.size(-2)
    scores = query @ key.transpose(-2, -1)
    scores = scores / d_k**0.5
    if mask is not None:
        scores = scores.masked_fill(mask, -1e9)
    weights = scores.softmax(dim=-2)
    return weights @ value, weights


BUG_LINES = {2, 6, 7}  # line 1 is `def buggy_attention(...)`
_RIGHT_LINES = {
    1: lazy_t("line 1 is the signature; it is fine"),
    3: lazy_t("line 3 is right: key.transpose(-2, -1) is (…, d_k, k_len), so query @ it is (…, q_len, k_len)"),
    4: lazy_t("line 4 is right: d_k**0.5 is √d_k (line 4 only goes wrong if d_k itself is wrong)"),
    5: lazy_t("line 5 is right: no mask, nothing to hide"),
    8: lazy_t("line 8 is right: the output is weights @ value, and the weights are returned as they are"),
}
_MISSED = {
    2: lazy_t("one bug is still hidden: which size is d_k? Try buggy_attention with k_len ≠ d_k"),
    6: lazy_t(
        "one bug is still hidden: in the course's masks True means 'may attend'. Which keys does "
        "masked_fill(mask, …) hide? (-1e9 instead of -inf is fine: its weight is 0 after the softmax)"
    ),
    7: lazy_t("one bug is still hidden: over which axis must each query's weights sum to 1? Print weights.sum(-1)"),
}


def check_bug_lines(bug_lines) -> Result:
    """``bug_lines``: the numbers of the lines of ``buggy_attention`` that are wrong (a list, tuple or set)."""

    def check():
        if bug_lines is ... or bug_lines is None:
            raise Hint(t("not done yet: set bug_lines to the numbers of the wrong lines, e.g. [1, 5]"))
        if not isinstance(bug_lines, (list, tuple, set, frozenset)):
            raise Hint(
                t(
                    "bug_lines should be a list (or tuple, or set) of line numbers, got {type}",
                    type=type(bug_lines).__name__,
                )
            )
        lines = {as_int(n, t("each line number")) for n in bug_lines}
        outside = sorted(n for n in lines if not 1 <= n <= 8)
        if outside:
            raise Hint(t("buggy_attention has lines 1–8 (print_numbered shows them), got {outside}", outside=outside))
        for n in sorted(lines - BUG_LINES):
            raise Hint(_RIGHT_LINES[n])
        for n in sorted(BUG_LINES - lines):
            raise Hint(_MISSED[n])

    return run_check(t("find the bugs"), check, t("passed: lines 2 (d_k), 6 (mask direction) and 7 (softmax axis)"))


# ---- exercise 3: the memory of the weights -----------------------------------------------------------


def check_weights_bytes(weights_bytes) -> Result:
    """``weights_bytes(batch, heads, q_len, k_len, bytes_per_number=4)``: bytes of the weights tensor."""

    def check():
        for batch, heads, q_len, k_len, size in ((2, 8, 10, 12, 4), (32, 8, 100, 100, 4), (3, 1, 7, 5, 2)):
            what = f"weights_bytes({batch}, {heads}, {q_len}, {k_len}, bytes_per_number={size})"
            got = as_number(weights_bytes(batch, heads, q_len, k_len, bytes_per_number=size), what)
            numbers = batch * heads * q_len * k_len
            wrong = {
                numbers: t("counts numbers; multiply by bytes_per_number (4 for float32) for bytes"),
                numbers * size * 8: t("counts bits; a byte is 8 bits, and float32 takes 4 bytes"),
                batch * q_len * k_len * size: t("forgets the heads: each head has its own (q_len, k_len) weights"),
                heads * q_len * k_len * size: t("forgets the batch: each sentence has its own weights"),
                batch * heads * (q_len + k_len) * size: t(
                    "adds q_len and k_len: there is one weight per (query, key) pair, q_len × k_len of them"
                ),
            }
            if got != numbers * size:
                hint = wrong.get(got) or t("is not batch·heads·q_len·k_len·bytes_per_number")
                raise Hint(t("{what} = {got:g} {hint}", what=what, got=got, hint=hint))

    return run_check(t("memory of the weights"), check, t("passed: batch · heads · q_len · k_len · bytes_per_number"))


# ---- conceptual questions (answer: one letter; the shared check_question accepts 'c', 'C', '(c)') --------

SCALING = Choice(
    key="nb02-SCALING",
    digest="5afcefd9844e8b60de5ce7ff",
    letters="abcd",
    why=lazy_t("the scores spread out, the softmax saturates and its gradients vanish"),
    wrong={
        "a": lazy_t(
            "(a) is the common misconception: the softmax's gradient is diag(p) − p pᵀ, and with a one-hot "
            "p every entry of it is 0. Large scores make gradients vanish, not explode"
        ),
        "b": lazy_t(
            "(b): the softmax is unchanged if you add the same number to every score, not if you multiply "
            "them: large scores make it sharper (section 3's table)"
        ),
        "d": lazy_t("(d): the scores' mean stays 0; it is their spread, √d_k, that grows"),
    },
)
MASK_SUM = Choice(
    key="nb02-MASK_SUM",
    digest="21a40eca317c4ee1ac09fde5",
    letters="abcd",
    why=lazy_t("adding True/False adds 1 or 0, so the pads keep a weight above 0"),
    wrong={
        "a": lazy_t("(a): adding a boolean adds 1 or 0, never −∞: exp(score + 0) > 0, so the pads keep a weight"),
        "c": lazy_t("(c): NaN needs −∞ in every score of a row; a boolean added to scores is only 0 or 1"),
        "d": lazy_t(
            "(d): the sum runs fine (True counts as 1); the weights are just wrong. Run the misconception "
            "cell of section 4 to see them"
        ),
    },
)
ADDITIVE = Choice(
    key="nb02-ADDITIVE",
    digest="c05402e93a3807ef363f1e1a",
    letters="abcd",
    why=lazy_t("similar theoretical complexity, but matrix-product code makes dot products faster and leaner"),
    wrong={
        "a": lazy_t(
            "(a): the paper says the opposite for unscaled dot products: additive attention outperforms them "
            "for larger d_k (Britz et al., 2017), the reason for 1/√d_k"
        ),
        "b": lazy_t("(b): the paper calls the two similar in theoretical complexity; the difference is in practice"),
        "c": lazy_t("(c): any score can be masked before the softmax, additive ones too (exercise 1 does it)"),
    },
)


def check_question_scaling(answer) -> Result:
    """Without 1/√d_k, at a large d_k, what goes wrong?"""
    return check_question(t("question 1 (why √d_k)"), SCALING, answer)


def check_question_mask_sum(answer) -> Result:
    """scores + mask (boolean, True = may attend): what weight do the pad keys get?"""
    return check_question(t("question 2 (scores + mask)"), MASK_SUM, answer)


def check_question_additive(answer) -> Result:
    """What does §3.2.1 say about additive vs dot-product attention?"""
    return check_question(t("question 3 (additive vs dot-product)"), ADDITIVE, answer)

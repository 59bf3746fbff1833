"""Checkers for the exercises of notebook 06 (the encoder; paper §3.1, §3.2.3, §4).

from transformer_course.exercises import nb06_encoder as ex
ex.check_mask_effect(changes)                       # predict which outputs change without the padding mask
ex.check_local_window_mask(local_window_mask)       # a variant: restricted self-attention (§4)
ex.check_encoder_parameter_count(encoder_parameter_count)   # estimate the cost
ex.check_quiz(q1=q1, q2=q2, q3=q3)                  # three short questions (q1 = ... lines above it)

Numbers may be given as a Python int or float, a numpy scalar or a one-number tensor; tables of yes/no
answers as nested lists or tuples, a numpy array or a tensor, of booleans or of 0/1.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import torch
from torch import Tensor

from ..i18n import lazy_t, register, t
from ..masks import padding_mask
from ..model import Encoder, EncoderLayer, make_model
from . import Choice, Hint, Numeric, Result, as_int, as_mask, run_check
from . import check_quiz as _check_quiz
from .zh.nb06_encoder import ZH

register("zh", ZH)

__all__ = ["QUESTIONS", "check_encoder_parameter_count", "check_local_window_mask", "check_mask_effect", "check_quiz"]

PAD = 0
# the notebook's batch: sentence 0 has five real tokens, sentence 1 three real tokens and two <pad>
SRC = torch.tensor([[5, 6, 7, 8, 9], [5, 6, 7, PAD, PAD]])


# ---------------------------------------------------------------------------------------------------
# Exercise 1: predict which outputs change when the padding mask is left out


@functools.cache
def measured_changes() -> Tensor:
    """(batch, S) booleans: which encoder outputs move when ``src_mask`` is replaced by None, on ``SRC``."""
    with torch.random.fork_rng(devices=[]):  # the learner's random state is left as it was
        torch.manual_seed(6)
        model = make_model(20, 20, N=2, d_model=16, d_ff=32, h=4, dropout=0.0).eval()
    with torch.no_grad():
        masked = model.encode(SRC, padding_mask(SRC, PAD))  # (B, S, d_model)
        unmasked = model.encode(SRC, None)
    return (masked - unmasked).abs().amax(dim=-1) > 1e-4  # (B, S)


def _as_table(got, shape: tuple[int, ...], what: str) -> Tensor:
    """A yes/no table (nested lists or tuples, numpy array or tensor; booleans or 0/1) as a bool tensor."""
    if not isinstance(got, Tensor):
        try:
            got = torch.as_tensor(got.tolist() if hasattr(got, "tolist") else got)
        except (TypeError, ValueError, RuntimeError):
            raise Hint(
                t(
                    "{what} should be a {rows} × {columns} table (a list of lists) of True/False",
                    what=what,
                    rows=shape[0],
                    columns=shape[1],
                )
            ) from None
    return as_mask(got, shape, what)


def _change_mistakes(want: Tensor) -> dict[str, Tensor]:
    pads = SRC == PAD  # (B, S)
    has_pads = pads.any(dim=1, keepdim=True)  # (B, 1): the sentences that have <pad>
    return {
        t(
            "the real tokens of sentence 1 change too: without the mask their queries also read the two <pad> keys"
        ): pads,
        t(
            "the <pad> positions of sentence 1 are queries as well: with the mask they read the 3 real keys only, "
            "without it all 5 keys, so their outputs change too"
        ): ~pads & has_pads,
        t(
            "sentence 0 has no <pad>: its mask allows every key, so leaving it out changes nothing there"
        ): torch.ones_like(want),
        t(
            "leaving the mask out lets every query of sentence 1 read its two <pad> keys: its outputs change"
        ): torch.zeros_like(want),
    }


def check_mask_effect(changes) -> Result:
    """``changes``: a (2, 5) table, True where the encoder's output at (sentence, position) changes when
    the padding mask is left out (``model.encode(src, None)`` instead of ``model.encode(src, src_mask)``)."""

    def check():
        if changes is ... or changes is None:
            raise NotImplementedError
        got = _as_table(changes, tuple(SRC.shape), "changes")
        want = measured_changes()
        if torch.equal(got, want):
            return
        for hint, value in _change_mistakes(want).items():
            if torch.equal(got, value):
                raise Hint(hint)
        wrong = (got != want).nonzero()[0].tolist()
        raise Hint(
            t(
                "sentence {sentence}, position {position}: you said {said}; run both and compare",
                sentence=wrong[0],
                position=wrong[1],
                said=bool(got[tuple(wrong)]),
            )
        )

    return run_check(
        t("mask effect"), check, t("only the sentence that has <pad> changes, at every one of its positions")
    )


# ---------------------------------------------------------------------------------------------------
# Exercise 2: restricted self-attention, a centred window of w positions on each side (§4)

WINDOW_SRC = torch.tensor([[3, 4, 5, 6, 7, 8, 9], [3, 4, 5, 6, 7, PAD, PAD]])  # (2, 7)


def reference_window_mask(src: Tensor, pad: int, w: int) -> Tensor:
    """(batch, 1, S, S): True where key k is not <pad> and |q − k| ≤ w. Independent of the learner's code."""
    S = src.size(1)
    q, k = torch.arange(S)[:, None], torch.arange(S)[None, :]
    near = (q - k).abs() <= w  # (S, S)
    return near[None, None] & (src != pad)[:, None, None, :]  # (B, 1, S, S)


def _window_mistakes(src: Tensor, pad: int, w: int) -> dict[str, Tensor]:
    S = src.size(1)
    q, k = torch.arange(S)[:, None], torch.arange(S)[None, :]
    keys = (src != pad)[:, None, None, :]  # (B, 1, 1, S)
    return {
        t(
            "the window reaches back only: §4 centres it 'around the respective output position', w positions to "
            "each side"
        ): ((q - k >= 0) & (q - k <= w))[None, None] & keys,
        t("off by one: a window of w holds every key at distance ≤ w (w = 1: the word and its two neighbours)"): (
            (q - k).abs() < w
        )[None, None]
        & keys,
        t("a <pad> key inside the window must stay hidden: combine the window with the padding mask (&)"): (
            (q - k).abs() <= w
        )[None, None].expand(src.size(0), 1, S, S),
        t("the window is missing: that is the padding mask alone, broadcast over the queries"): keys.expand(
            src.size(0), 1, S, S
        ),
    }


def check_local_window_mask(local_window_mask: Callable[[Tensor, int, int], Tensor]) -> Result:
    """``local_window_mask(src, pad, w)`` → (batch, 1, S, S), True = may attend: key not <pad> and |q − k| ≤ w.
    A boolean tensor or a 0/1 tensor (1 = may attend)."""

    def check():
        for w in (1, 2, 0):
            src = WINDOW_SRC.clone()
            what = f"local_window_mask(src, pad={PAD}, w={w})"
            got = local_window_mask(src, PAD, w)
            want = reference_window_mask(src, PAD, w)
            if isinstance(got, Tensor) and tuple(got.shape) == (src.size(0), 7, 7):
                raise Hint(
                    t(
                        "{what} is (batch, S, S); add the heads axis, (batch, 1, S, S), so it broadcasts over heads",
                        what=what,
                    )
                )
            got = as_mask(got, tuple(want.shape), what)
            if torch.equal(got, want):
                continue
            if torch.equal(got, ~want):
                raise Hint(t("{what} is inverted: True should mean 'may attend'", what=what))
            for hint, value in _window_mistakes(src, PAD, w).items():
                if torch.equal(got, value):
                    raise Hint(t("{what}: {hint}", what=what, hint=hint))
            b, _, q, k = (got != want).nonzero()[0].tolist()
            raise Hint(
                t(
                    "{what}: sentence {b}, query {q}, key {k} should be {value}",
                    what=what,
                    b=b,
                    q=q,
                    k=k,
                    value=bool(want[b, 0, q, k]),
                )
            )

    return run_check(
        t("local window mask"), check, t("each word sees the real words at most w seats away, on both sides")
    )


# ---------------------------------------------------------------------------------------------------
# Exercise 3: how many parameters has the encoder?


def check_encoder_parameter_count(encoder_parameter_count: Callable[[int, int, int], int]) -> Result:
    """``encoder_parameter_count(N, d_model, d_ff)`` must equal the parameters of N encoder layers."""

    def check():
        for N, d_model, d_ff in ((1, 8, 16), (2, 16, 48), (6, 512, 2048)):
            stack = Encoder([EncoderLayer(d_model, 8, d_ff, 0.0) for _ in range(N)], d_model, norm_first=False)
            expected = sum(p.numel() for p in stack.parameters())
            what = f"encoder_parameter_count(N={N}, d_model={d_model}, d_ff={d_ff})"
            got = as_int(encoder_parameter_count(N, d_model, d_ff), what)
            if got == expected:
                continue
            d = d_model
            misses = {
                expected // N: t("that is one layer; the encoder has N of them"),
                expected - N * (4 * d + d_ff + d): t("the biases are missing (4 in attention, b_1 and b_2 in the FFN)"),
                expected - N * 4 * d: t("the two LayerNorms of each layer are missing (γ and β, d_model each)"),
                expected - N * 2 * d: t(
                    "each layer has two LayerNorms, each with γ and β (2 · d_model); you counted half"
                ),
                expected - N * (d * d + d): t(
                    "multi-head attention has four d_model × d_model projections: W^Q, W^K, W^V and the output W^O"
                ),
                expected - N * (d * d_ff + d_ff): t(
                    "the FFN has two matrices, W_1 (d_model × d_ff) and W_2 (d_ff × d_model)"
                ),
            }
            hint = misses.get(got) or t(
                "count, per layer: attention 4·d_model² + 4·d_model, FFN 2·d_model·d_ff + d_ff + d_model, "
                "two LayerNorms 2·2·d_model; then multiply by N"
            )
            raise Hint(
                t(
                    "{what} returned {got:,}, expected {expected:,}: {hint}",
                    what=what,
                    got=got,
                    expected=expected,
                    hint=hint,
                )
            )

    return run_check(
        "encoder_parameter_count",
        check,
        t("matches the package's Encoder for three sizes, the paper's base encoder included"),
    )


# ---------------------------------------------------------------------------------------------------
# Questions

QUESTIONS = {
    "q1": Choice(
        key="nb06-q1",
        digest="45f9292624ab38b44c66b6a5",
        letters="abc",
        why=lazy_t(
            "a module listed N times is one module: its weights are shared, so the stack has one layer's parameters"
        ),
        wrong={
            "a": lazy_t(
                "PyTorch accepts the same module several times in a ModuleList; nothing fails, which is why the "
                "mistake is easy to miss"
            ),
            "c": lazy_t(
                "the N entries are one object: training one trains all of them, and the parameter count is one "
                "layer's (count them with sum(p.numel() for p in encoder.parameters()))"
            ),
        },
    ),
    "q2": Numeric(
        key="nb06-q2",
        digests=("0c10046a54f7d9ac8b9f3c69", "e34bebb4c9edb8a3d78cd52c", "2e17b13172e6a2a3592a3beb"),
        why=lazy_t("each layer reaches w = 5 positions further: 5, 10, 15 ≥ 12 after 3 layers, the O(n/r) path of §4"),
        mistakes={
            lazy_t("12 / 5 = 2.4: round UP — after 2 layers the influence has reached 10 positions, not 12"): 2,
            lazy_t("each layer lets information travel w = 5 positions, not 1"): 12,
            lazy_t("one layer reaches only w = 5 positions away"): 1,
        },
        rel_tol=1e-9,
        otherwise=lazy_t("after L layers the output at position 12 can depend on inputs down to 12 − 5·L"),
    ),
    "q3": Numeric(
        key="nb06-q3",
        digests=("3a8461823e5f235480b950f0", "789c4fe153385e782c6a1e92", "f33826014bcd298ecc1d9e24"),
        why=lazy_t(
            "two per layer (after self-attention and after the FFN), six layers, and no extra one at the end of a "
            "post-LN stack"
        ),
        mistakes={
            lazy_t(
                "a post-LN stack ends without an extra LayerNorm (its last layer already ends with one); only a "
                "pre-LN stack adds one"
            ): 13,
            lazy_t("each layer has two: one after self-attention, one after the FFN"): 6,
            lazy_t(
                "that is the encoder and the decoder together, and the decoder has three per layer; count the "
                "encoder only"
            ): 30,
        },
        rel_tol=1e-9,
        otherwise=lazy_t("count the Add & Norm boxes of one encoder layer in Figure 1, then the layers"),
    ),
}


def check_quiz(**answers) -> Result:
    """``check_quiz(q1="b", q2=3, q3=12)``: one line per question."""
    return _check_quiz(QUESTIONS, answers)

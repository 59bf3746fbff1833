"""Checkers for notebook 03 (multi-head attention; paper §3.2.2, §3.2.3, §6.2).

    from transformer_course.exercises import nb03_multi_head_attention as ex
    ex.check_multi_head_attention(MultiHeadAttention)   # the class of my_transformer/multi_head.py
    ex.check_predicted_shapes(predicted)                # exercise 1: predict, then verify
    ex.check_attention_parameter_count(count)           # exercise 2: parameters when d_k, d_v are free
    ex.check_multiply_adds(multiply_adds)               # exercise 3: the cost of one call
    ex.check_question_heads("…"), ex.check_question_cross("…")

Shapes may come as tuples, lists or torch.Size; numbers as Python, numpy or one-element tensor numbers.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from ..i18n import lazy_t, register, t
from . import Choice, Hint, Result, as_int, as_shape, check_question, expect_tensor, run_check
from .zh.nb03_multi_head_attention import ZH

register("zh", ZH)

__all__ = [
    "SHAPES",
    "attention_parameter_count",
    "check_attention_parameter_count",
    "check_multi_head_attention",
    "check_multiply_adds",
    "check_predicted_shapes",
    "check_question_cross",
    "check_question_heads",
    "multiply_adds",
]

NAMES = {"in_proj.weight", "in_proj.bias", "out_proj.weight", "out_proj.bias"}


def _mha_reference(query, key, value, state, heads, mask=None, mistake=None):
    """MultiHead(Q, K, V) with the package's parameter layout; ``mistake`` switches in one plausible error."""
    d_model = query.size(-1)
    d_k = d_model // heads
    w, b = state["in_proj.weight"], state["in_proj.bias"]
    order = (1, 0, 2) if mistake == "kqv" else (0, 1, 2)  # which block of rows each of Q, K, V uses
    sources = (query, query, query) if mistake == "kv_from_query" else (query, key, value)
    q, k, v = (F.linear(x, w[i * d_model : (i + 1) * d_model], b[i * d_model : (i + 1) * d_model])
               for x, i in zip(sources, order))  # fmt: skip

    def split(t):  # (B, L, d_model) → (B, h, L, d_k)
        if mistake == "direct_view":
            return t.reshape(t.size(0), heads, t.size(1), d_k)
        return t.reshape(t.size(0), t.size(1), heads, d_k).transpose(1, 2)

    q, k, v = split(q), split(k), split(v)
    scale = math.sqrt(d_model if mistake == "sqrt_d_model" else d_k)
    scores = q @ k.transpose(-2, -1) / scale  # (B, h, T, S)
    if mask is not None and mistake != "no_mask":
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = scores.softmax(-1)
    x = weights @ v  # (B, h, T, d_k)
    if mistake == "merge_no_transpose":
        x = x.reshape(x.size(0), x.size(2), d_model)
    else:
        x = x.transpose(1, 2).reshape(x.size(0), x.size(2), d_model)  # (B, T, d_model)
    return F.linear(x, state["out_proj.weight"], state["out_proj.bias"]), weights


MISTAKES = {
    "direct_view": lazy_t(
        "the heads are split with one view (batch, heads, len, d_k), which cuts the sequence into "
        "pieces and mixes positions: view as (batch, len, heads, d_k), then .transpose(1, 2)"
    ),
    "merge_no_transpose": lazy_t(
        "the heads are merged in the wrong order: (batch, heads, len, d_k) must go back to "
        "(batch, len, heads, d_k) with .transpose(1, 2) before the reshape to (batch, len, d_model)"
    ),
    "kqv": lazy_t(
        "the rows of in_proj are used in the wrong order: rows 0 … d_model−1 are W^Q, then W^K, then W^V "
        "(nn.MultiheadAttention's layout)"
    ),
    "kv_from_query": lazy_t(
        "keys and values are computed from `query`: in cross-attention they come from the `key` "
        "and `value` arguments (the encoder's memory)"
    ),
    "sqrt_d_model": lazy_t(
        "the scores are divided by √d_model; each head works in d_k = d_model / heads dimensions, "
        "so divide by √d_k (notebook 02's function does it when it gets (batch, heads, len, d_k) tensors)"
    ),
    "no_mask": lazy_t("the mask is not passed on: keys where it is False must get weight 0"),
}


def check_multi_head_attention(MultiHeadAttention) -> Result:  # noqa: N803 (the learner's class)
    """``MultiHeadAttention(d_model, heads, dropout=0.0)``, ``forward(query, key, value, mask=None)``."""

    def check():
        d_model, heads = 12, 3
        torch.manual_seed(3)
        mha = MultiHeadAttention(d_model, heads, dropout=0.0).eval()
        names = set(mha.state_dict())
        if names != NAMES:
            raise Hint(
                t(
                    "the parameters should be named {names} (as the package's, so that weights can be "
                    "copied by name); missing {missing}, unexpected {unexpected}",
                    names=sorted(NAMES),
                    missing=sorted(NAMES - names),
                    unexpected=sorted(names - NAMES),
                )
            )
        state = {name: t.detach().clone() for name, t in mha.state_dict().items()}
        g = torch.Generator().manual_seed(3)
        tgt, memory = torch.randn(2, 4, d_model, generator=g), torch.randn(2, 6, d_model, generator=g)
        src_mask = torch.tensor([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1]], dtype=torch.bool)[:, None, None, :]
        causal = torch.ones(4, 4, dtype=torch.bool).tril()[None, None]  # (1, 1, T, T)
        cases = (
            (t("self-attention with a padding mask"), memory, memory, src_mask),
            (t("masked self-attention"), tgt, tgt, causal),
            (t("cross-attention"), tgt, memory, None),
            (t("cross-attention with a padding mask"), tgt, memory, src_mask),
        )
        for what, query, kv, mask in cases:
            with torch.no_grad():
                got = mha(query, kv, kv, mask)
            want, want_w = _mha_reference(query, kv, kv, state, heads, mask)
            if isinstance(got, torch.Tensor) and got.shape == want.shape and not torch.allclose(got, want, atol=1e-5):
                for mistake, hint in MISTAKES.items():
                    wrong, _ = _mha_reference(query, kv, kv, state, heads, mask, mistake)
                    if torch.allclose(got, wrong, atol=1e-5):
                        raise Hint(t("{what}: {hint}", what=what, hint=hint))
            expect_tensor(got, want, t("{what}: the output (batch, q_len, d_model)", what=what))
            expect_tensor(getattr(mha, "weights", None), want_w, f"{what}: self.weights (batch, heads, q_len, k_len)")
        try:
            MultiHeadAttention(10, 4)
        except Exception:
            return
        raise Hint(t("MultiHeadAttention(10, 4) should raise an error: d_model=10 is not divisible by heads=4"))

    return run_check("MultiHeadAttention", check, t("passed: self, masked and cross-attention, per-head weights kept"))


# ---- exercise 1: predict the shapes ------------------------------------------------------------------

B, T, S, D_MODEL, HEADS = 2, 4, 6, 512, 8
D_K = D_MODEL // HEADS
SHAPES = {
    "q": (B, HEADS, T, D_K),
    "k": (B, HEADS, S, D_K),
    "weights": (B, HEADS, T, S),
    "heads_out": (B, HEADS, T, D_K),
    "output": (B, T, D_MODEL),
}
SHAPE_MISTAKES = {
    ("q", (B, T, HEADS, D_K)): lazy_t("that is before the transpose: split_heads puts the heads before the positions"),
    ("q", (B, HEADS, T, D_MODEL)): lazy_t("each head has d_k = d_model / heads = 64 features, not d_model"),
    ("q", (B, T, D_MODEL)): lazy_t("that is before the split: the queries are cut into heads, (batch, heads, T, d_k)"),
    ("k", (B, HEADS, T, D_K)): lazy_t("keys come from the source, the encoder's memory: S = 6 positions, not T"),
    ("k", (B, S, HEADS, D_K)): lazy_t("that is before the transpose: heads come before positions"),
    ("weights", (B, HEADS, S, T)): lazy_t("rows are queries (the target, T), columns are keys (the source, S)"),
    ("weights", (B, T, S)): lazy_t("each head has its own weights: (batch, heads, T, S)"),
    ("weights", (B, HEADS, T, T)): lazy_t("cross-attention weights are not square: T queries against S keys"),
    ("heads_out", (B, HEADS, S, D_K)): lazy_t(
        "there is one output per query (T of them), an average over the S values"
    ),
    ("heads_out", (B, HEADS, T, S)): lazy_t("that is the weights; weights @ v has one d_v = 64 vector per query"),
    ("output", (B, S, D_MODEL)): lazy_t("the block returns one vector per query, the target's T positions"),
    ("output", (B, T, D_K)): lazy_t("merging the heads and W^O give back d_model = 512 features"),
    ("output", (B, HEADS, T, D_K)): lazy_t("that is before the merge: Concat and W^O give (batch, T, d_model)"),
}


def check_predicted_shapes(predicted) -> Result:
    """``predicted``: a dict with the shapes of 'q', 'k', 'weights', 'heads_out' and 'output'."""

    def check():
        if not isinstance(predicted, dict):
            raise Hint(
                t(
                    "predicted should be a dict such as {{'q': (…), 'k': (…), …}}, got {type}",
                    type=type(predicted).__name__,
                )
            )
        missing = [name for name in SHAPES if name not in predicted]
        if missing:
            raise Hint(
                t("predicted has no entry for {missing}; fill in all of {names}", missing=missing, names=list(SHAPES))
            )
        blank = [name for name in SHAPES if predicted[name] is ... or predicted[name] is None]
        if blank:
            raise Hint(
                t("not done yet: replace the `...` of {blank} with your predicted shapes, e.g. (1, 2, 3)", blank=blank)
            )
        for name, want in SHAPES.items():
            what = f"predicted[{name!r}]"
            got = as_shape(predicted[name], what)
            if got != want:
                hint = SHAPE_MISTAKES.get((name, got)) or t(
                    "expected {dims} dimensions, ending with the right sizes", dims=len(want)
                )
                raise Hint(t("{what} = {got}: {hint}", what=what, got=got, hint=hint))

    return run_check(t("predicted shapes"), check, t("passed: now run the next cell to see them measured"))


# ---- exercise 2: parameters with free d_k and d_v -----------------------------------------------------


def attention_parameter_count(d_model: int, heads: int, d_k: int, d_v: int) -> int:
    """W^Q, W^K (d_model × h·d_k), W^V (d_model × h·d_v), W^O (h·d_v × d_model), each with its bias."""
    return (
        2 * (d_model * heads * d_k + heads * d_k)
        + (d_model * heads * d_v + heads * d_v)
        + (heads * d_v * d_model + d_model)
    )


def check_attention_parameter_count(count) -> Result:
    """``count(d_model, heads, d_k, d_v)``: the parameters of one multi-head attention block."""

    def check():
        for d_model, heads, d_k, d_v in ((512, 8, 64, 64), (512, 8, 16, 64), (64, 4, 8, 24), (512, 1, 512, 512)):
            what = f"count(d_model={d_model}, heads={heads}, d_k={d_k}, d_v={d_v})"
            got = as_int(count(d_model, heads, d_k, d_v), what)
            want = attention_parameter_count(d_model, heads, d_k, d_v)
            if got == want:
                continue
            qk, v = heads * d_k, heads * d_v
            wrong = {
                4 * d_model * d_model + 4 * d_model: t(
                    "uses d_model × d_model for every projection; that holds only when heads·d_k = heads·d_v = "
                    "d_model. W^Q and W^K are d_model × heads·d_k, W^V d_model × heads·d_v"
                ),
                want - 2 * qk - v - d_model: t(
                    "counts the weights only: W^Q and W^K have biases of size heads·d_k, "
                    "W^V of size heads·d_v, W^O of size d_model"
                ),
                want - v * d_model + qk * d_model: t(
                    "sizes W^O by d_k; it takes the concatenated values, heads·d_v × d_model"
                ),
                attention_parameter_count(d_model, 1, d_k, d_v): t(
                    "counts one head: every head has its own "
                    "W_i^Q, W_i^K, W_i^V, so all heads together are heads·d_k (or heads·d_v) wide"
                ),
            }
            hint = wrong.get(got) or t("add up four matrices and four biases")
            raise Hint(t("{what} = {got}, expected {want}: {hint}", what=what, got=got, want=want, hint=hint))

    return run_check(t("parameter count"), check, t("passed: heads·d_k and heads·d_v set the widths, not d_model"))


# ---- exercise 3: multiply-adds of one call ------------------------------------------------------------


def multiply_adds(batch: int, q_len: int, k_len: int, d_model: int, heads: int) -> int:
    """One cross-attention call: project Q (q_len rows) and K, V (k_len rows), Q Kᵀ and weights @ V in every
    head (d_k = d_model / heads each), and W^O. Biases, scaling and softmax are not counted."""
    projections = batch * q_len * d_model * d_model + 2 * batch * k_len * d_model * d_model
    attention = 2 * batch * heads * q_len * k_len * (d_model // heads)
    return projections + attention + batch * q_len * d_model * d_model


def check_multiply_adds(count) -> Result:
    """``count(batch, q_len, k_len, d_model, heads)``: multiply-adds of one cross-attention call."""

    def check():
        for batch, q_len, k_len, d_model, heads in ((2, 3, 5, 16, 4), (1, 7, 2, 12, 3), (64, 30, 25, 512, 8)):
            what = f"count(batch={batch}, q_len={q_len}, k_len={k_len}, d_model={d_model}, heads={heads})"
            got = as_int(count(batch, q_len, k_len, d_model, heads), what)
            want = multiply_adds(batch, q_len, k_len, d_model, heads)
            if got == want:
                continue
            d2 = d_model * d_model
            core = 2 * batch * q_len * k_len * d_model
            wrong = {
                2 * want: t("counts FLOPs (a multiply and an add each); count each multiply-add once"),
                4 * batch * q_len * d2 + core: t(
                    "projects keys and values from q_len positions; in cross-attention "
                    "they come from the memory, k_len positions"
                ),
                want + (heads - 1) * core: t(
                    "uses d_model-long dot products in every head; each head's are d_k = d_model / heads long"
                ),
                want - batch * q_len * d2: t("leaves out W^O, the output projection"),
                want - core // 2: t("leaves out one of the two attention products, Q Kᵀ or weights @ V"),
            }
            hint = wrong.get(got) or t("add the four projections and two products")
            raise Hint(t("{what} = {got}, expected {want}: {hint}", what=what, got=got, want=want, hint=hint))

    return run_check(t("multiply-adds"), check, t("passed: 2·B·(T + S)·d_model² + 2·B·T·S·d_model"))


# ---- conceptual questions (answer: one letter; the shared check_question accepts 'b', 'B', '(b)') --------

HEADS = Choice(
    key="nb03-HEADS",
    digest="09c64885e8179e4d6e734d96",
    letters="abcd",
    why=lazy_t("one head is 0.9 BLEU worse than the best setting, and too many heads are worse too (§6.2)"),
    wrong={
        "a": lazy_t("(a): §6.2 says quality also drops off with too many heads (32 heads: 25.4 BLEU against 25.8)"),
        "c": lazy_t("(c): single-head attention is 0.9 BLEU worse than the best setting (§6.2, Table 3 (A))"),
        "d": lazy_t(
            "(d): every row of (A) has the same parameter count (exercise 2: heads·d_k stays 512), "
            "and one head scored lowest"
        ),
    },
)
CROSS = Choice(
    key="nb03-CROSS",
    digest="0a8db05e9f068919af5d24f5",
    letters="abcd",
    why=lazy_t("keys and values are the encoder's output, the memory, in every decoder layer"),
    wrong={
        "a": lazy_t("(a): the previous decoder layer gives the queries; keys and values come from the encoder"),
        "b": lazy_t("(b): the target side gives only the queries in cross-attention"),
        "d": lazy_t(
            "(d): the keys and values come from the encoder's final output (after all N layers), not from the "
            "source embeddings"
        ),
    },
)


def check_question_heads(answer) -> Result:
    """Table 3 rows (A): what did varying the number of heads at fixed computation show?"""
    return check_question(t("question 1 (how many heads)"), HEADS, answer)


def check_question_cross(answer) -> Result:
    """In cross-attention, where do keys and values come from?"""
    return check_question(t("question 2 (cross-attention)"), CROSS, answer)

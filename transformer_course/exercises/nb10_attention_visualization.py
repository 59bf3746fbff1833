"""Checkers for the exercises of notebook 10 (attention visualization; paper §3.2, Figures 3–5).

from transformer_course.exercises import nb10_attention_visualization as ex
ex.check_capture_shapes(encoder_shape, decoder_shape, cross_shape)  # predict the captured shapes
ex.check_head_entropy(head_entropy)
ex.check_alignment(alignment)
ex.check_quiz(q1=..., q2=..., q3=...)

Shapes may be tuples, lists or torch.Size; numbers a Python or numpy number or a one-number tensor.
"""

from __future__ import annotations

import math

import torch

from ..i18n import lazy_t, register, t
from . import Choice, Hint, Numeric, Result, as_shape, expect_tensor, run_check
from . import check_quiz as _check_quiz
from .zh.nb10_attention_visualization import ZH

register("zh", ZH)

__all__ = [
    "check_head_entropy",
    "check_alignment",
    "captured_shapes",
    "check_capture_shapes",
    "QUESTIONS",
    "check_quiz",
]


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
                t(
                    "your entropy is NaN for a head whose weights contain 0: 0 · log 0 must count as 0 "
                    "(e.g. torch.where(w > 0, w * w.log(), 0) or w * w.clamp_min(1e-30).log())"
                )
            )
        expected = torch.tensor([0.0, math.log(k)])
        if (
            isinstance(got, torch.Tensor)
            and got.shape == (2,)
            and torch.allclose(got.double(), expected.double() / math.log(2), atol=1e-4)
        ):
            raise Hint(
                t(
                    "your values are in bits (log2); use the natural log (torch.log), so a uniform row over k keys "
                    "gives ln k"
                )
            )
        if (
            isinstance(got, torch.Tensor)
            and got.shape == (2,)
            and torch.allclose(got.double(), expected.double() * k, atol=1e-4)
        ):
            raise Hint(t("you summed the entropies of the rows; take their mean over the queries (.mean(-1))"))
        expect_tensor(got, expected, t("head_entropy(one-hot head, uniform head)"))
        for seed, causal in ((0, False), (1, True)):
            w = _weights(seed, heads=3, q_len=5, k_len=6 if not causal else 5, causal=causal)  # (3, q, k)
            got = head_entropy(w)
            expected = _entropy_by_hand(w).float()
            if isinstance(got, torch.Tensor) and torch.isnan(got).any():
                raise Hint(t("NaN: masked keys have weight 0, and 0 · log 0 must count as 0"))
            if isinstance(got, torch.Tensor) and got.shape == (3,):
                over_queries = -(w * w.clamp_min(1e-30).log()).sum(-2).mean(-1)  # entropy down the columns
                if (
                    not causal
                    and torch.allclose(got.float(), over_queries, atol=1e-4)  # any float dtype is fine
                    and not torch.allclose(got.float(), expected, atol=1e-4)
                ):
                    raise Hint(
                        t(
                            "you summed over the queries (dim -2); each row (one query) is a distribution over keys: "
                            "sum over dim -1"
                        )
                    )
            what = (
                t("head_entropy(weights {shape}, causal)", shape=tuple(w.shape))
                if causal
                else f"head_entropy(weights {tuple(w.shape)})"
            )
            expect_tensor(got, expected, what, atol=1e-4)

    return run_check(t("head entropy"), check, t("passed: 0 for a one-hot head, ln k for a uniform one, 0 · log 0 = 0"))


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
            raise Hint(t("alignment should return a tensor of source positions, got {type}", type=type(got).__name__))
        if got.shape == (5,):
            raise Hint(
                t("you got one entry per source position: take the argmax over the keys (dim -1), one per target query")
            )
        if got.shape == (3, 4):
            raise Hint(t("you got one row per head: average the heads first (weights.mean(0)), then take the argmax"))
        if got.shape == (4,) and torch.equal(got.long(), torch.arange(4)):
            raise Hint(t("this is head 0 alone; average over all heads (mean over dim 0) before the argmax"))
        if got.dtype.is_floating_point:
            raise Hint(t("return positions (a LongTensor from .argmax), not weights"))
        expect_tensor(got, expected, "alignment(cross)")
        g = torch.Generator().manual_seed(3)
        w = torch.rand(2, 6, 7, generator=g).softmax(-1)  # (2, 6, 7)
        expect_tensor(alignment(w), w.mean(0).argmax(-1), t("alignment(random cross-attention (2, 6, 7))"))

    return run_check("alignment", check, t("passed: one source position per target position, from the head mean"))


# ---------------------------------------------------------------------------------------------------
# Exercise 1 (predict): the shapes viz.capture_attention returns

# The notebook's question: the toy model (2 layers, 4 heads) on a source of 6 symbols and a target of 4.
LAYERS, HEADS, SRC_LEN, TGT_LEN = 2, 4, 6, 4


def captured_shapes() -> dict[str, tuple[int, ...]]:
    """Run the package's capture on a model of the question's sizes and read the shapes of layer 0."""
    from ..model import make_model
    from ..viz import capture_attention

    torch.manual_seed(0)
    model = make_model(14, 14, N=LAYERS, d_model=16, d_ff=32, h=HEADS, dropout=0.0)
    src, tgt = list(range(4, 4 + SRC_LEN)), list(range(4, 4 + TGT_LEN))  # symbol ids, no specials
    capture = capture_attention(model, src, tgt)
    return {kind: tuple(getattr(capture, kind)[0].shape) for kind in ("encoder", "decoder", "cross")}


def _shape_mistakes(kind: str, want: tuple[int, ...]) -> dict[tuple[int, ...], str]:
    heads, q, k = want
    mistakes = {
        (1, *want): t("the capture keeps one sentence and drops the batch axis: (heads, q_len, k_len)"),
        (q, k): t("there is one (q_len, k_len) table per head: (heads, q_len, k_len)"),
        (heads, k, q): t("rows are queries, columns keys: (heads, q_len, k_len)"),
    }
    if kind in ("decoder", "cross"):
        forgot_bos = (heads, TGT_LEN, TGT_LEN if kind == "decoder" else k)
        mistakes[forgot_bos] = t(
            "the decoder reads <s> first (the target shifted right, notebook 08): its positions are the "
            "{symbols} target symbols plus <s>",
            symbols=TGT_LEN,
        )
    if kind == "decoder":
        mistakes[(heads, q, SRC_LEN)] = t("decoder self-attention's keys are target positions too, not source ones")
    return mistakes


def check_capture_shapes(encoder_shape, decoder_shape, cross_shape) -> Result:
    """The shapes of ``capture.encoder[0]``, ``capture.decoder[0]`` and ``capture.cross[0]`` for the toy
    model (2 layers, 4 heads) on a source of 6 symbols and a target of 4 (tuples, lists or torch.Size)."""

    def check():
        answers = {"encoder": encoder_shape, "decoder": decoder_shape, "cross": cross_shape}
        if any(a is ... for a in answers.values()):
            raise NotImplementedError
        want = captured_shapes()
        for kind, answer in answers.items():
            got = as_shape(answer, f"{kind}_shape")
            if got == want[kind]:
                continue
            hint = _shape_mistakes(kind, want[kind]).get(got) or t("count the heads, the queries and the keys again")
            raise Hint(t("{what} = {got}: {hint}", what=f"{kind}_shape", got=got, hint=hint))

    return run_check(
        t("captured shapes"), check, t("passed: (heads, q_len, k_len), and the decoder's axis has <s> in front")
    )


# ---------------------------------------------------------------------------------------------------
# Questions

QUESTIONS = {
    "q1": Choice(
        key="nb10-q1",
        digest="8c58e8990fb2f43c670ab813",
        letters="abc",
        why=lazy_t("the causal mask gives every future key −∞ before the softmax, so its weight is exactly 0"),
        wrong={
            "b": lazy_t(
                "masked scores are −∞ (or the smallest float), so after the softmax they are exactly 0, not small"
            ),
            "c": lazy_t("the mask is the same for every head: no head may look at the future"),
        },
    ),
    "q2": Numeric(
        key="nb10-q2",
        digests=("70ad3042eac40896699cfa90", "95c84ebbd3b6b9ff69417fb1", "5f8d841c9bbfcb8ca16d5e28"),
        why=lazy_t("a uniform row over 8 keys has entropy −8 · (1/8) ln(1/8) = ln 8 ≈ 2.079 nats"),
        mistakes={
            lazy_t("that is in bits (log base 2); the course measures entropy in nats (natural log)"): 3.0,
            lazy_t("that is the weight of each key, 1/8; the entropy is −Σ w ln w"): 1 / 8,
            lazy_t("that is the number of keys; the entropy of a uniform row is its logarithm"): 8.0,
        },
        rel_tol=1e-3,
        otherwise=lazy_t("use H = −Σ_j w_j ln w_j with w_j = 1/8 for each of the 8 keys"),
    ),
    "q3": Choice(
        key="nb10-q3",
        digest="949ef8894fe58c9df416d018",
        letters="abc",
        why=lazy_t(
            "a weight says where one head read; W^O, the other heads and later layers decide what is done with it"
        ),
        wrong={
            "a": lazy_t(
                "a heatmap cannot show why the model chose a word: the head's output is mixed with the other "
                "heads by W^O and changed by the feed-forward and later layers"
            ),
            "c": lazy_t("each head has its own weights; one head's 0.9 says nothing about what the other heads read"),
        },
    ),
}


def check_quiz(**answers) -> Result:
    """``check_quiz(q1="a", q2=1.23, q3="b")``: one line per question."""
    return _check_quiz(QUESTIONS, answers)

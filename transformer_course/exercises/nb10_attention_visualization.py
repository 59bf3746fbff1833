"""Checkers for the exercises of notebook 10 (attention visualization; paper §3.2, Figures 3–5).

from transformer_course.exercises import nb10_attention_visualization as ex
ex.check_capture_shapes(encoder_shape, decoder_shape, cross_shape)  # predict the captured shapes
ex.check_head_focus(head_focus)               # which heads focus, under a mask
ex.check_rollout(rollout)                     # attention rollout through the encoder layers
ex.check_quiz(q1=..., q2=..., q3=...)

Calling the package's own statistics (``viz.stats.attention_entropy`` …) is a shortcut.
"""

from __future__ import annotations

import math

import torch

from ..i18n import messages
from ..model import make_model as _PACKAGE_MAKE_MODEL  # the references, bound at import
from ..viz import capture_attention as _PACKAGE_CAPTURE
from . import Hint, as_shape, checker, expect_tensor, questions, quiz_checker
from .guard import no_shortcuts, read_only
from .seal import answer_check

t, lazy_t = messages("nb10_attention_visualization")

__all__ = ["check_head_focus", "check_rollout", "check_capture_shapes", "QUESTIONS", "check_quiz"]


def _weights(seed: int, heads: int, mask: torch.Tensor) -> torch.Tensor:
    """Random attention weights (heads, q_len, k_len) under ``mask`` (q_len, k_len), True = may attend: rows sum to 1,
    masked keys get exactly 0."""
    g = torch.Generator().manual_seed(seed)
    scores = 2.0 * torch.randn(heads, *mask.shape, generator=g)  # (h, q, k)
    return scores.masked_fill(~mask, float("-inf")).softmax(-1)  # (h, q, k)


def _focus_by_hand(weights: torch.Tensor, mask: torch.Tensor, log=math.log, size_log=math.log, one_key=None,
                   rows_mean: bool = True, one_minus: bool = True) -> torch.Tensor:  # fmt: skip
    """Mean over the rows that may see at least two keys of 1 − H(row) / ln(keys the row may see), one plain loop per
    number: (heads,). The keywords switch in a plausible mistake (the log of H or of n, rows with one key counted as
    ``one_key``, a sum over the rows, no 1 −), for naming it."""
    heads, q_len, _ = weights.shape
    out = torch.zeros(heads, dtype=torch.float64)
    for h in range(heads):
        values = []
        for i in range(q_len):
            allowed = int(mask[i].sum())
            if allowed < 2:
                if one_key is not None:
                    values.append(one_key)
                continue
            entropy = -sum(float(w) * log(float(w)) for w in weights[h, i] if w > 0)
            share = entropy / size_log(allowed)
            values.append(1 - share if one_minus else share)
        out[h] = sum(values) / (len(values) if rows_mean else 1)
    return out


def _raw_entropy(weights: torch.Tensor) -> torch.Tensor:
    """Mean over all rows of −Σ_j w_ij ln w_ij: (heads,) (the entropy, not the focus)."""
    return -torch.where(weights > 0, weights * weights.clamp_min(1e-30).log(), 0.0).sum(-1).mean(-1).double()


def _focus_mistakes(weights: torch.Tensor, mask: torch.Tensor) -> list[tuple[str, torch.Tensor]]:
    """Plausible wrong focuses on ``weights``, each with the hint that names it."""
    k_len = mask.size(-1)
    return [
        (t("focus_is_entropy"), _raw_entropy(weights)),
        (t("focus_one_minus"), _focus_by_hand(weights, mask, one_minus=False)),
        (t("focus_ln_k_len"), _focus_by_hand(weights, mask, size_log=lambda n: math.log(k_len))),
        (t("focus_one_key_rows"), _focus_by_hand(weights, mask, one_key=1.0)),
        (t("focus_one_key_rows_zero"), _focus_by_hand(weights, mask, one_key=0.0)),
        (t("focus_mixed_bases"), _focus_by_hand(weights, mask, log=math.log2)),
        (t("focus_mixed_bases"), _focus_by_hand(weights, mask, size_log=math.log2)),
        (t("focus_summed_rows"), _focus_by_hand(weights, mask, rows_mean=False)),
    ]


@checker(lazy_t("head_focus"), lazy_t("passed_head_focus"))
def check_head_focus(head_focus):
    """``head_focus(weights, mask)``: weights (heads, q_len, k_len), mask (q_len, k_len) with True where a query may
    attend → (heads,): the mean over the rows that may see two keys or more of 1 − H(row) / ln(keys the row may see)."""
    k = 4
    causal = torch.ones(5, 5, dtype=torch.bool).tril()  # (5, 5): query i may see keys 0 … i
    padded = torch.ones(4, 6, dtype=torch.bool)
    padded[:, 4:] = False  # (4, 6): the last two keys are pads
    padded[0, 1:] = False  # query 0 may see key 0 alone (a window of one)
    uniform_causal = causal / causal.sum(-1, keepdim=True)  # (5, 5): each row uniform over what it may see
    cases = [
        # a one-hot head and a uniform head, nothing masked: focus 1 and 0
        (torch.stack([torch.eye(k), torch.full((k, k), 1 / k)]), torch.ones(k, k, dtype=torch.bool), "simple"),
        # a causal head uniform over what each row may see (focus 0) and one on its own position (focus 1)
        (torch.stack([uniform_causal, torch.eye(5)]), causal, "causal"),
        (_weights(0, 3, causal), causal, "causal"),
        (_weights(1, 3, padded), padded, "padded"),
    ]
    for weights, mask, case in cases:
        with no_shortcuts(t("entropy")):
            got = head_focus(weights.clone(), mask.clone())
        if case == "simple":
            what = t("focus_simple_case")
        elif case == "causal":
            what = t("focus_causal_case", shape=tuple(weights.shape))
        else:
            what = t("focus_padded_case", shape=tuple(weights.shape))
        if isinstance(got, torch.Tensor) and got.shape == (weights.size(0),) and torch.isnan(got).any():
            raise Hint(t("focus_nan"))
        expected = _focus_by_hand(weights, mask)
        if isinstance(got, torch.Tensor) and got.shape == expected.shape and got.is_floating_point():
            if not torch.allclose(got.double(), expected, atol=1e-4):
                for hint, wrong in _focus_mistakes(weights, mask):
                    if not torch.allclose(wrong, expected, atol=1e-4) and torch.allclose(
                        got.double(), wrong, atol=1e-4
                    ):
                        raise Hint(hint)
        expect_tensor(got, expected.float(), what, atol=1e-4)


@checker(lazy_t("rollout_name"), lazy_t("passed_rollout"))
def check_rollout(rollout):
    """``rollout(layers)``: ``layers`` is a list of one layer's encoder self-attention weights (heads, S, S) per
    layer, the first layer first; return the (S, S) attention rollout (Abnar and Zuidema, 2020):
    Ā = ½ · (the head mean of a layer's weights) + ½ · I for the residual connection, and R = Ā_last ··· Ā_first."""
    g = torch.Generator().manual_seed(10)
    layers = [(2.0 * torch.randn(3, 5, 5, generator=g)).softmax(-1) for _ in range(3)]  # 3 × (heads, S, S)
    eye = torch.eye(5)

    def product(matrices):  # matrices[0] · matrices[1] · …
        out = eye
        for m in matrices:
            out = out @ m
        return out

    with_residual = [0.5 * w.mean(0) + 0.5 * eye for w in layers]  # Ā of each layer, (S, S)
    expected = product(reversed(with_residual))  # Ā_last ··· Ā_first
    copies = [w.clone() for w in layers]  # (outside the watch: a comprehension is a function of this module)
    with no_shortcuts(t("rollout")):
        got = rollout(copies)
    if isinstance(got, torch.Tensor) and got.shape == (3, 5, 5):
        raise Hint(t("got_rollout_per"))
    if isinstance(got, torch.Tensor) and got.shape == (5, 5) and got.is_floating_point():
        g64 = got.double()
        mistakes = {
            t("layers_multiplied_wrong"): product(with_residual),
            t("residual_connection_missing"): product(reversed([w.mean(0) for w in layers])),
            t("rows_sum_2"): product(reversed([w.mean(0) + eye for w in layers])),
            t("maximum_over_heads"): product(reversed([0.5 * w.max(0).values + 0.5 * eye for w in layers])),
            t("last_layer_alone"): with_residual[-1],
        }
        for hint, value in mistakes.items():
            if torch.allclose(g64, value.double(), atol=1e-5):
                raise Hint(hint)
    expect_tensor(got, expected, t("rollout_3_layers"))
    layers = [(2.0 * torch.randn(2, 4, 4, generator=g)).softmax(-1) for _ in range(2)]  # another size
    expected = (0.5 * layers[1].mean(0) + 0.5 * torch.eye(4)) @ (0.5 * layers[0].mean(0) + 0.5 * torch.eye(4))
    copies = [w.clone() for w in layers]  # (outside the watch: a comprehension is a function of this module)
    with no_shortcuts(t("rollout")):
        got = rollout(copies)
    expect_tensor(got, expected, t("rollout_2_layers"))


# ---- Exercise 1 (predict): the shapes viz.capture_attention returns -------------------------------------------------

# The notebook's question: the toy model (2 layers, 4 heads) on a source of 6 symbols and a target of 4.
_LAYERS, _HEADS, _SRC_LEN, _TGT_LEN = 2, 4, 6, 4


def _captured_shapes() -> dict[str, tuple[int, ...]]:
    """Run the package's capture on a model of the question's sizes and read the shapes of layer 0."""
    make_model, capture_attention = _PACKAGE_MAKE_MODEL, _PACKAGE_CAPTURE

    torch.manual_seed(0)
    model = make_model(14, 14, N=_LAYERS, d_model=16, d_ff=32, h=_HEADS, dropout=0.0)
    src, tgt = list(range(4, 4 + _SRC_LEN)), list(range(4, 4 + _TGT_LEN))  # symbol ids, no specials
    capture = capture_attention(model, src, tgt)
    return {kind: tuple(getattr(capture, kind)[0].shape) for kind in ("encoder", "decoder", "cross")}


def _shape_mistakes(kind: str, want: tuple[int, ...]) -> dict[tuple[int, ...], str]:
    heads, q, k = want
    mistakes = {
        (1, *want): t("capture_keeps_sentence"),
        (q, k): t("one_table_per_head"),
        (heads, k, q): t("rows_queries_columns"),
    }
    if kind in ("decoder", "cross"):
        forgot_bos = (heads, _TGT_LEN, _TGT_LEN if kind == "decoder" else k)
        mistakes[forgot_bos] = t("decoder_reads_s", symbols=_TGT_LEN)
    if kind == "decoder":
        mistakes[(heads, q, _SRC_LEN)] = t("decoder_self_attentions")
    return mistakes


@answer_check
@checker(lazy_t("captured_shapes"), lazy_t("passed_capture_shapes"))
def check_capture_shapes(encoder_shape, decoder_shape, cross_shape):
    """The shapes of ``capture.encoder[0]``, ``capture.decoder[0]`` and ``capture.cross[0]`` for the toy
    model (2 layers, 4 heads) on a source of 6 symbols and a target of 4 (tuples, lists or torch.Size)."""
    answers = {"encoder": encoder_shape, "decoder": decoder_shape, "cross": cross_shape}
    if any(a is ... for a in answers.values()):
        raise NotImplementedError
    want = _captured_shapes()
    for kind, answer in answers.items():
        got = as_shape(answer, f"{kind}_shape")
        if got == want[kind]:
            continue
        hint = _shape_mistakes(kind, want[kind]).get(got) or t("count_heads_queries")
        raise Hint(t("what_got_hint", what=f"{kind}_shape", got=got, hint=hint))


# ---- Questions ------------------------------------------------------------------------------------------------------

QUESTIONS = questions(
    "nb10_attention_visualization",
    lazy_t,
    q1="6570c8a6bd2b80dd93b91f1f",
    q2="d125fcf2119f025527e04036",
    q3="3f0078376f9181736bd472ce",
)


check_quiz = quiz_checker(QUESTIONS)  # one line per question

read_only(__name__)  # what the checks use stays what it was at import (ex.no_shortcuts = … is refused)

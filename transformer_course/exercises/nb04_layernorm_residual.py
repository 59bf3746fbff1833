"""Checkers for notebook 04 (LayerNorm and residual connections; paper §3.1, §5.4).

    from transformer_course.exercises import nb04_layernorm_residual as ex
    ex.check_layer_norm_module(LayerNorm)               # the class of my_transformer/norm_residual.py
    ex.check_residual_connection(ResidualConnection)    # the class of my_transformer/norm_residual.py
    ex.check_rms_norm(rms_norm)                         # exercise 1: a variant, RMSNorm
    ex.check_bug_lines(bug_lines)                       # exercise 2: find the bugs in BuggyResidualConnection
    ex.check_layer_norm_parameter_count(count)          # exercise 3: LayerNorm parameters of a model
    ex.check_question_batch_norm("…"), ex.check_question_warmup("…")

Every check includes inputs with a tiny spread, where ε's place (inside or outside the square root) shows.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..i18n import lazy_t, register, t
from . import (
    Choice,
    Hint,
    Result,
    as_int,
    check_question,
    expect_tensor,
    known_mistake,
    print_numbered,  # noqa: F401 (the notebook calls ex.print_numbered)
    run_check,
)
from .zh.nb04_layernorm_residual import ZH

register("zh", ZH)

__all__ = [
    "check_layer_norm_module",
    "DROPOUT_HINTS",
    "check_residual_connection",
    "check_rms_norm",
    "BuggyResidualConnection",
    "BUG_LINES",
    "check_bug_lines",
    "layer_norm_parameter_count",
    "check_layer_norm_parameter_count",
    "BATCH_NORM",
    "WARMUP",
    "check_question_batch_norm",
    "check_question_warmup",
]


def _inputs(features: int = 8) -> list[Tensor]:
    """The course matrix, a random batch, and rows whose spread (std ≈ 1e-3, variance ≈ 1e-6) is below ε = 1e-5.
    The small rows are centred near 0, so that float32 rounding stays far below the checkers' tolerance."""
    g = torch.Generator().manual_seed(4)
    return [
        torch.tensor([[1.0, 2, 3], [8, 9, 10], [15, 16, 17]]),
        torch.randn(2, 5, features, generator=g) * 3 + 1,
        torch.randn(3, features, generator=g) * 1e-3,
    ]


def _layer_norm_variants(x: Tensor, gamma: Tensor, beta: Tensor, eps: float) -> dict[str, Tensor]:
    """Plausible wrong answers, each with the hint that names its mistake."""
    mean, var = x.mean(-1, keepdim=True), x.var(-1, unbiased=False, keepdim=True)
    b_mean, b_var = x.mean(0, keepdim=True), x.var(0, unbiased=False, keepdim=True)
    return {
        t(
            "you normalised over the batch (dim 0), which is BatchNorm; LayerNorm normalises each row over "
            "its last dimension (dim=-1)"
        ): gamma * (x - b_mean) / torch.sqrt(b_var + eps) + beta,
        t(
            "you used the unbiased variance (divides by n−1); LayerNorm divides by n: x.var(dim=-1, unbiased=False)"
        ): gamma * (x - mean) / torch.sqrt(x.var(-1, keepdim=True) + eps) + beta,
        t("ε belongs inside the square root, √(var + ε), not √var + ε: it matters for rows with a tiny spread"): gamma
        * (x - mean)
        / (torch.sqrt(var) + eps)
        + beta,
        t("the normalised values are right, but γ (gain) and β (bias) are not applied: γ · x̂ + β"): (x - mean)
        / torch.sqrt(var + eps),
        t("you divided by the variance; divide by the standard deviation √(var + ε)"): gamma * (x - mean) / (var + eps)
        + beta,
    }


def check_layer_norm_module(LayerNorm) -> Result:  # noqa: N803 (the learner's class)
    """``LayerNorm(features, eps=1e-5)`` with parameters ``weight`` (γ) and ``bias`` (β) = ``nn.LayerNorm``."""

    def check() -> None:
        for x in _inputs():
            features = x.size(-1)
            mine = LayerNorm(features)
            names = set(mine.state_dict())
            if names != {"weight", "bias"}:
                raise Hint(
                    t(
                        "LayerNorm's parameters should be named 'weight' (γ) and 'bias' (β), got {names}",
                        names=sorted(names),
                    )
                )
            g = torch.Generator().manual_seed(features)
            gamma, beta = torch.rand(features, generator=g) + 0.5, torch.randn(features, generator=g)
            with torch.no_grad():
                mine.weight.copy_(gamma)
                mine.bias.copy_(beta)
                got = mine(x)
            expected = F.layer_norm(x, (features,), gamma, beta, eps=1e-5)
            what = t("LayerNorm({features}) on an input of shape {shape}", features=features, shape=tuple(x.shape))
            hint = known_mistake(got, expected, _layer_norm_variants(x, gamma, beta, 1e-5))
            if hint is not None:
                raise Hint(t("{what}: {hint}", what=what, hint=hint))
            expect_tensor(got, expected, what)
        x = _inputs()[2]
        with torch.no_grad():
            got, expected = LayerNorm(x.size(-1), eps=1e-3)(x), F.layer_norm(x, (x.size(-1),), eps=1e-3)
        expect_tensor(got, expected, t("LayerNorm(8, eps=1e-3) (use the eps argument, self.eps, not a fixed 1e-5)"))

    return run_check("LayerNorm", check, t("equals nn.LayerNorm, also on rows with a tiny spread"))


DROPOUT_HINTS = {
    "sum": lazy_t(
        "dropout is applied to the sum, residual included; the paper drops only the sub-layer's output, "
        "'before it is added to the sub-layer input' (§5.4)"
    ),
    "none": lazy_t("in training mode dropout should zero some of the sub-layer's outputs: apply self.dropout to them"),
    "after": lazy_t("dropout is applied after the LayerNorm; it belongs on the sub-layer's output, before the +"),
}


def _residual_outcomes(x, sublayer, norm, norm_first: bool) -> dict[str, Tensor]:
    """The right training-mode output and three wrong dropout placements, each with the same random seed."""
    drop = nn.Dropout(0.5)
    if norm_first:
        steps = {
            "right": lambda: x + drop(sublayer(norm(x))),
            "sum": lambda: drop(x + sublayer(norm(x))),
            "none": lambda: x + sublayer(norm(x)),
        }
    else:
        steps = {
            "right": lambda: norm(x + drop(sublayer(x))),
            "sum": lambda: norm(drop(x + sublayer(x))),
            "none": lambda: norm(x + sublayer(x)),
            "after": lambda: drop(norm(x + sublayer(x))),
        }
    outcomes = {}
    for name, step in steps.items():
        torch.manual_seed(5)
        outcomes[name] = step()
    return outcomes


def check_residual_connection(ResidualConnection) -> Result:  # noqa: N803 (the learner's class)
    """``ResidualConnection(d_model, dropout, norm_first=False)`` with ``self.norm``; ``forward(x, sublayer)``."""

    def check() -> None:
        torch.manual_seed(4)
        x, sublayer = torch.randn(2, 3, 8), nn.Linear(8, 8)
        for norm_first in (False, True):
            formula = "x + Dropout(Sublayer(LayerNorm(x)))" if norm_first else "LayerNorm(x + Dropout(Sublayer(x)))"
            what = f"ResidualConnection(8, dropout=0.5, norm_first={norm_first})"
            block = ResidualConnection(8, 0.5, norm_first=norm_first)
            names = set(block.state_dict())
            if names != {"norm.weight", "norm.bias"}:
                raise Hint(
                    t(
                        "the only parameters should be self.norm's, norm.weight and norm.bias; got {names}",
                        names=sorted(names),
                    )
                )
            with torch.no_grad():
                block.norm.weight.uniform_(0.5, 1.5)
                block.norm.bias.normal_()
                norm = nn.LayerNorm(8)
                norm.load_state_dict(block.norm.state_dict())
                post, pre = norm(x + sublayer(x)), x + sublayer(norm(x))
                wrong = {
                    "norm(x + sublayer(x))": post,
                    "x + sublayer(norm(x))": pre,
                    t("norm(sublayer(x)) (the residual x is missing)"): norm(sublayer(x)),
                    t("sublayer(norm(x)) (the residual x is missing)"): sublayer(norm(x)),
                    "x + norm(sublayer(x))": x + norm(sublayer(x)),
                }
                got, expected = block.eval()(x, sublayer), (pre if norm_first else post)
                computed = known_mistake(got, expected, wrong)
                if computed is not None:
                    raise Hint(
                        t(
                            "{what} in eval mode computed {computed}; it should be {formula}",
                            what=what,
                            computed=computed,
                            formula=formula,
                        )
                    )
                expect_tensor(got, expected, t("{what} in eval mode", what=what))

                outcomes = _residual_outcomes(x, sublayer, norm, norm_first)
                torch.manual_seed(5)
                got = block.train()(x, sublayer)
            mistakes = {DROPOUT_HINTS[name]: out for name, out in outcomes.items() if name != "right"}
            hint = known_mistake(got, outcomes["right"], mistakes)
            if hint is not None:
                raise Hint(t("{what} in training mode: {hint}", what=what, hint=hint))
            expect_tensor(got, outcomes["right"], t("{what} in training mode", what=what))

    return run_check("ResidualConnection", check, t("post-LN and pre-LN right, dropout on the sub-layer's output"))


# ---- exercise 1: RMSNorm -----------------------------------------------------------------------------


def _rms_norm_variants(x: Tensor, gamma: Tensor, eps: float) -> dict[str, Tensor]:
    mean_square = x.pow(2).mean(-1, keepdim=True)
    mean, var = x.mean(-1, keepdim=True), x.var(-1, unbiased=False, keepdim=True)
    return {
        t("you subtracted the mean, which is LayerNorm; RMSNorm only rescales: x / √(mean(x²) + ε) · γ"): gamma
        * (x - mean)
        / torch.sqrt(var + eps),
        t(
            "you divided by the standard deviation; RMSNorm divides by the root of the mean of the squares, "
            "√(mean(x²) + ε), which does not subtract the mean"
        ): gamma * x / torch.sqrt(var + eps),
        t(
            "ε belongs inside the square root, √(mean(x²) + ε), not √mean(x²) + ε: it matters for rows with a tiny "
            "spread"
        ): gamma * x / (torch.sqrt(mean_square) + eps),
        t("you divided by mean(x²) + ε; take its square root"): gamma * x / (mean_square + eps),
        t("you summed the squares; RMSNorm takes their mean over the last dimension"): gamma
        * x
        / torch.sqrt(x.pow(2).sum(-1, keepdim=True) + eps),
        t("you normalised over the batch (dim 0); normalise each row over its last dimension (dim=-1)"): gamma
        * x
        / torch.sqrt(x.pow(2).mean(0, keepdim=True) + eps),
        t("the scaling is right but the gain γ is missing: multiply by gamma"): x / torch.sqrt(mean_square + eps),
    }


def check_rms_norm(rms_norm) -> Result:
    """``rms_norm(x, gamma, eps)`` = ``F.rms_norm(x, (features,), gamma, eps)`` over the last dimension."""

    def check() -> None:
        for x in _inputs():
            features = x.size(-1)
            gamma = torch.rand(features, generator=torch.Generator().manual_seed(features)) + 0.5
            expected = F.rms_norm(x, (features,), gamma, 1e-5)
            got = rms_norm(x.clone(), gamma, 1e-5)
            what = t("rms_norm(x, gamma, 1e-5) for x of shape {shape}", shape=tuple(x.shape))
            hint = known_mistake(got, expected, _rms_norm_variants(x, gamma, 1e-5))
            if hint is not None:
                raise Hint(t("{what}: {hint}", what=what, hint=hint))
            expect_tensor(got, expected, what)

    return run_check("RMSNorm", check, t("equals F.rms_norm, also on rows with a tiny spread"))


# ---- exercise 2: find the bugs -----------------------------------------------------------------------


class BuggyResidualConnection(nn.Module):
    def __init__(self, d_model, dropout, norm_first=False):
        super().__init__()
        self.norm = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)
        self.norm_first = norm_first

    def forward(self, x, sublayer):
        if self.norm_first:
            return self.norm(x) + self.dropout(sublayer(self.norm(x)))
        return self.norm(self.dropout(x + sublayer(x)))


BUG_LINES = {10, 11}  # line 1 is `class BuggyResidualConnection(nn.Module):`
_RIGHT_LINES = {
    4: lazy_t("line 4 is right: nn.LayerNorm(d_model) normalises each position's d_model features"),
    5: lazy_t("line 5 is right: one nn.Dropout module, used on the sub-layer's output"),
    9: lazy_t("line 9 is right: norm_first=True is pre-LN, False the paper's post-LN"),
}
_MISSED = {
    10: lazy_t("one bug is still hidden in the pre-LN branch: what does the residual path carry around the sub-layer?"),
    11: lazy_t(
        "one bug is still hidden in the post-LN branch: what does the paper drop out? 'the output of each "
        "sub-layer, before it is added to the sub-layer input' (§5.4). Compare the two in training mode"
    ),
}


def check_bug_lines(bug_lines) -> Result:
    """``bug_lines``: the numbers of the wrong lines of ``BuggyResidualConnection`` (a list, tuple or set)."""

    def check() -> None:
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
        outside = sorted(n for n in lines if not 1 <= n <= 11)
        if outside:
            raise Hint(
                t("BuggyResidualConnection has lines 1–11 (print_numbered shows them), got {outside}", outside=outside)
            )
        for n in sorted(lines - BUG_LINES):
            raise Hint(_RIGHT_LINES[n] if n in _RIGHT_LINES else t("line {n} is right: it only sets the class up", n=n))
        for n in sorted(BUG_LINES - lines):
            raise Hint(_MISSED[n])

    return run_check(
        t("find the bugs"), check, t("passed: line 10 (the residual is x) and line 11 (drop the sub-layer only)")
    )


# ---- exercise 3: LayerNorm parameters ----------------------------------------------------------------


def layer_norm_parameter_count(N: int, d_model: int, norm_first: bool) -> int:
    """2 per encoder layer, 3 per decoder layer, one more per stack when pre-LN; γ and β of d_model each."""
    norms = 2 * N + 3 * N + (2 if norm_first else 0)
    return norms * 2 * d_model


def check_layer_norm_parameter_count(count) -> Result:
    """``count(N, d_model, norm_first)``: LayerNorm parameters of an encoder-decoder with N layers per stack."""

    def check() -> None:
        for N, d_model, norm_first in ((6, 512, False), (6, 512, True), (2, 8, True), (3, 16, False)):
            what = f"count(N={N}, d_model={d_model}, norm_first={norm_first})"
            got = as_int(count(N, d_model, norm_first), what)
            want = layer_norm_parameter_count(N, d_model, norm_first)
            if got == want:
                continue
            per_norm, final = 2 * d_model, (2 if norm_first else 0)
            wrong = {
                want // 2: t("counts γ only: each LayerNorm has a gain γ and a bias β, d_model numbers each"),
                (4 * N + final) * per_norm: t(
                    "gives each decoder layer two LayerNorms; it has three sub-layers "
                    "(self-attention, cross-attention, feed-forward), each in its own Add & Norm"
                ),
                (2 * N + final // 2) * per_norm: t("counts the encoder only; the decoder has its LayerNorms too"),
            }
            if norm_first:
                wrong[5 * N * per_norm] = t("leaves out the final LayerNorm of each pre-LN stack (section 4)")
                wrong[(5 * N + 1) * per_norm] = t(
                    "has one final LayerNorm; each stack, encoder and decoder, ends with one"
                )
            else:
                wrong[(5 * N + 2) * per_norm] = t(
                    "adds final LayerNorms to the paper's post-LN model; its last Add & "
                    "Norm already normalises, so only pre-LN stacks need one"
                )
            hint = wrong.get(got) or t("count the Add & Norm boxes first")
            raise Hint(t("{what} = {got}, expected {want}: {hint}", what=what, got=got, want=want, hint=hint))

    return run_check(t("LayerNorm parameters"), check, t("passed: (5N, + 2 for pre-LN) LayerNorms × 2·d_model"))


# ---- conceptual questions (answer: one letter; the shared check_question accepts 'b', 'B', '(b)') --------

BATCH_NORM = Choice(
    key="nb04-BATCH_NORM",
    digest="73b9d0c4f2fd873ab29dabdf",
    letters="abcd",
    why=lazy_t(
        "each token is normalised on its own: no dependence on the batch or its padding, and training = inference"
    ),
    wrong={
        "a": lazy_t("(a): speed is not the reason; section 1's point is what each normalises over"),
        "c": lazy_t("(c): BatchNorm has a learned γ and β too (and running averages besides)"),
        "d": lazy_t("(d): both have 2 · features parameters"),
    },
)
WARMUP = Choice(
    key="nb04-WARMUP",
    digest="32a1c276df5aa4f236fdf59f",
    letters="abcd",
    why=lazy_t("post-LN starts with large gradients near the output, so full-size steps there are too big"),
    wrong={
        "b": lazy_t(
            "(b): section 5's plot shows the opposite for post-LN: the layers near the input get the smaller gradients"
        ),
        "c": lazy_t(
            "(c): warmup is about the first steps of optimisation; over-fitting is what dropout and label "
            "smoothing address"
        ),
        "d": lazy_t("(d): masks are notebook 01's business; warmup does not change them"),
    },
)


def check_question_batch_norm(answer) -> Result:
    """Why LayerNorm rather than BatchNorm in the Transformer?"""
    return check_question(t("question 1 (LayerNorm or BatchNorm)"), BATCH_NORM, answer)


def check_question_warmup(answer) -> Result:
    """What does warmup protect a post-LN Transformer from?"""
    return check_question(t("question 2 (warmup)"), WARMUP, answer)

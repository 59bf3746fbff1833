"""Checkers for notebook 04 (LayerNorm and residual connections; paper §3.1, §5.4).

    from transformer_course.exercises import nb04_layernorm_residual as ex
    ex.check_layer_norm_module(LayerNorm)               # the class of my_transformer/norm_residual.py
    ex.check_residual_connection(ResidualConnection)    # the class of my_transformer/norm_residual.py (post and pre-LN)
    ex.check_rms_norm(rms_norm)                         # exercise 1: a variant, RMSNorm, written out
    ex.check_counterexample(x)                          # exercise 2: an input on which ex.FusedLayerNorm is wrong …
    ex.check_bug_line(bug_line)                         # … and the number of its wrong line
    ex.check_layer_norm_parameter_count(count)          # exercise 3: LayerNorm parameters of a model, by formula
    ex.check_quiz(q1=…, q2=…)

PyTorch's own normalisations and the package's ``LayerNorm`` are shortcuts. Every check includes inputs with a tiny
spread, where ε's place (inside or outside the square root) shows.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..i18n import messages
from ..layers import LayerNorm as _PACKAGE_LAYER_NORM  # the reference, bound at import
from . import (
    Hint,
    answer_check,
    as_int,
    checker,
    expect_tensor,
    known_mistake,
    print_numbered,  # noqa: F401 (the notebook calls ex.print_numbered)
    questions,
    quiz_checker,
    unlocked_text,
)
from .guard import TORCH_NORM, no_shortcuts, read_only, watch_shortcuts

t, lazy_t = messages("nb04_layernorm_residual")

__all__ = [
    "check_layer_norm_module",
    "DROPOUT_HINTS",
    "check_residual_connection",
    "check_rms_norm",
    "FusedLayerNorm",
    "check_counterexample",
    "check_bug_line",
    "check_layer_norm_parameter_count",
    "QUESTIONS",
    "check_quiz",
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
    variants = {
        t("normalised_over_batch"): gamma * (x - b_mean) / torch.sqrt(b_var + eps) + beta,
        t("used_unbiased_variance"): gamma * (x - mean) / torch.sqrt(x.var(-1, keepdim=True) + eps) + beta,
        t("belongs_inside_square"): gamma * (x - mean) / (torch.sqrt(var) + eps) + beta,
        t("normalised_values_right"): (x - mean) / torch.sqrt(var + eps),
        t("divided_variance_divide"): gamma * (x - mean) / (var + eps) + beta,
        t("multiplied_but_did"): gamma * (x - mean) / torch.sqrt(var + eps),
    }
    if x.dim() >= 2:  # statistics over a whole sentence (or matrix) instead of one position
        s_mean, s_var = x.mean((-2, -1), keepdim=True), x.var((-2, -1), unbiased=False, keepdim=True)
        variants[t("took_mean_variance")] = gamma * (x - s_mean) / torch.sqrt(s_var + eps) + beta
    return variants


@checker("LayerNorm", lazy_t("equals_nn_layernorm"))
def check_layer_norm_module(LayerNorm):  # noqa: N803 (the learner's class)
    """``LayerNorm(features, eps=1e-5)`` with parameters ``weight`` (γ) and ``bias`` (β) = ``nn.LayerNorm``'s
    numbers and gradients, written with tensor operations (not ``F.layer_norm``, ``nn.LayerNorm``, the package's)."""
    for x in _inputs():
        features = x.size(-1)
        g = torch.Generator().manual_seed(features)
        gamma, beta = torch.rand(features, generator=g) + 0.5, torch.randn(features, generator=g)
        with no_shortcuts(t("layernorm"), TORCH_NORM):
            mine = LayerNorm(features)
        names = set(mine.state_dict())
        if names != {"weight", "bias"}:
            raise Hint(t("layernorms_parameters_named", names=sorted(names)))
        with torch.no_grad():
            mine.weight.copy_(gamma)
            mine.bias.copy_(beta)
        x_mine = x.clone().requires_grad_()
        with no_shortcuts(t("layernorm"), TORCH_NORM):
            got = mine(x_mine)
        expected = F.layer_norm(x, (features,), gamma, beta, eps=1e-5)
        what = t("layernorm_input_shape", features=features, shape=tuple(x.shape))
        values = got.detach() if isinstance(got, Tensor) else got
        expect_tensor(values, expected, what, mistakes=_layer_norm_variants(x, gamma, beta, 1e-5))
        _check_layer_norm_gradients(mine, x_mine, got, gamma, beta, what)
    x = _inputs()[2]
    with no_shortcuts(t("layernorm"), TORCH_NORM), torch.no_grad():
        got = LayerNorm(x.size(-1), eps=1e-3)(x)
    expected = F.layer_norm(x, (x.size(-1),), eps=1e-3)
    expect_tensor(got, expected, t("layernorm_8_eps"))


def _check_layer_norm_gradients(mine: nn.Module, x: Tensor, got: Tensor, gamma, beta, what: str) -> None:
    """The gradients reaching x, γ and β from a weighted sum of the output equal nn.LayerNorm's."""
    weights = torch.linspace(-1, 2, got.numel()).reshape(got.shape)  # so that no gradient is zero by symmetry
    if not got.requires_grad:
        raise Hint(t("no_gradient_flows", what=what))
    with no_shortcuts(t("layernorm"), TORCH_NORM):
        (got * weights).sum().backward()
    x_ref, g_ref, b_ref = (v.clone().requires_grad_() for v in (x.detach(), gamma, beta))
    (F.layer_norm(x_ref, (x.size(-1),), g_ref, b_ref, 1e-5) * weights).sum().backward()
    for name, grad, want in (
        (t("gradient_respect_x"), x.grad, x_ref.grad),
        (t("gradient_respect_weight"), mine.weight.grad, g_ref.grad),
        (t("gradient_respect_bias"), mine.bias.grad, b_ref.grad),
    ):
        if grad is None:
            raise Hint(t("none_use_parameters", what=what, name=name))
        expect_tensor(grad, want, t("what_name", what=what, name=name), atol=1e-4, rtol=1e-3)


DROPOUT_HINTS = {
    "sum": lazy_t("dropout_applied_sum"),
    "none": lazy_t("training_mode_dropout"),
    "after": lazy_t("dropout_applied_after"),
    "input": lazy_t("dropout_applied_sub"),
}


def _residual_outcomes(x, sublayer, norm, norm_first: bool) -> dict[str, Tensor]:
    """The right training-mode output and the wrong dropout placements, each with the same random seed."""
    drop = nn.Dropout(0.5)
    if norm_first:
        steps = {
            "right": lambda: x + drop(sublayer(norm(x))),
            "sum": lambda: drop(x + sublayer(norm(x))),
            "none": lambda: x + sublayer(norm(x)),
            "input": lambda: x + sublayer(drop(norm(x))),
        }
    else:
        steps = {
            "right": lambda: norm(x + drop(sublayer(x))),
            "sum": lambda: norm(drop(x + sublayer(x))),
            "none": lambda: norm(x + sublayer(x)),
            "after": lambda: drop(norm(x + sublayer(x))),
            "input": lambda: norm(x + sublayer(drop(x))),
        }
    outcomes = {}
    for name, step in steps.items():
        torch.manual_seed(5)
        outcomes[name] = step()
    return outcomes


@checker("ResidualConnection", lazy_t("post_ln_pre"))
def check_residual_connection(ResidualConnection):  # noqa: N803 (the learner's class)
    """``ResidualConnection(d_model, dropout, norm_first=False)`` with ``self.norm`` (the learner's LayerNorm);
    ``forward(x, sublayer)``: post-LN when ``norm_first=False``, pre-LN when True, dropout on the sub-layer's output."""
    PackageLayerNorm = _PACKAGE_LAYER_NORM  # noqa: N806 (the expected values; never inside the guarded block)

    torch.manual_seed(4)
    x, sublayer = torch.randn(2, 3, 8), nn.Linear(8, 8)
    for norm_first in (False, True):
        formula = "x + Dropout(Sublayer(LayerNorm(x)))" if norm_first else "LayerNorm(x + Dropout(Sublayer(x)))"
        what = f"ResidualConnection(8, dropout=0.5, norm_first={norm_first})"
        with no_shortcuts(t("residual_connection_layernorm"), TORCH_NORM):
            block = ResidualConnection(8, 0.5, norm_first=norm_first)
        names = set(block.state_dict())
        if names != {"norm.weight", "norm.bias"}:
            raise Hint(t("only_parameters_self", names=sorted(names)))
        with torch.no_grad():
            block.norm.weight.uniform_(0.5, 1.5)
            block.norm.bias.normal_()
            norm = PackageLayerNorm(8)
            norm.load_state_dict(block.norm.state_dict())
            with no_shortcuts(t("residual_connection_layernorm"), TORCH_NORM):
                normed = block.norm(x)
            if (
                not isinstance(normed, Tensor)
                or normed.shape != x.shape
                or not torch.allclose(normed, norm(x), atol=1e-5)
            ):
                raise Hint(t("norm_is_not_layernorm"))
            post, pre = norm(x + sublayer(x)), x + sublayer(norm(x))
            wrong = {
                "norm(x + sublayer(x))": post,
                "x + sublayer(norm(x))": pre,
                t("norm_sublayer_x"): norm(sublayer(x)),
                t("sublayer_norm_x"): sublayer(norm(x)),
                "x + norm(sublayer(x))": x + norm(sublayer(x)),
                t("norm_x_sublayer"): norm(x) + sublayer(norm(x)),
            }
            with no_shortcuts(t("residual_connection_layernorm"), TORCH_NORM):
                got = block.eval()(x, sublayer)
            expected = pre if norm_first else post
            computed = known_mistake(got, expected, wrong)
            if computed is not None:
                raise Hint(t("eval_mode_computed", what=what, computed=computed, formula=formula))
            expect_tensor(got, expected, t("eval_mode", what=what))

            outcomes = _residual_outcomes(x, sublayer, norm, norm_first)
            torch.manual_seed(5)
            with no_shortcuts(t("residual_connection_layernorm"), TORCH_NORM):
                got = block.train()(x, sublayer)
        mistakes = {DROPOUT_HINTS[name]: out for name, out in outcomes.items() if name != "right"}
        hint = known_mistake(got, outcomes["right"], mistakes)
        if hint is not None:
            raise Hint(t("training_mode", what=what, hint=hint))
        expect_tensor(got, outcomes["right"], t("training_mode_what", what=what))
        _check_residual_gradient(block.eval(), norm, x, sublayer, norm_first, what)


def _check_residual_gradient(block, norm, x, sublayer, norm_first: bool, what: str) -> None:
    """The gradient reaching x equals the package formula's: the residual path is there, nothing is detached."""
    x_mine, x_ref = x.clone().requires_grad_(), x.clone().requires_grad_()
    with no_shortcuts(t("residual_connection_layernorm"), TORCH_NORM):
        out = block(x_mine, sublayer)
        if out.requires_grad:
            out.pow(2).sum().backward()
    ref = x_ref + sublayer(norm(x_ref)) if norm_first else norm(x_ref + sublayer(x_ref))
    ref.pow(2).sum().backward()
    if x_mine.grad is None:
        raise Hint(t("no_gradient_reaches", what=what))
    expect_tensor(x_mine.grad, x_ref.grad, t("gradient_wrt_x_what", what=what), atol=1e-4)


# ---- exercise 1: RMSNorm -----------------------------------------------------------------------------


def _rms_norm_variants(x: Tensor, gamma: Tensor, eps: float) -> dict[str, Tensor]:
    mean_square = x.pow(2).mean(-1, keepdim=True)
    mean, var = x.mean(-1, keepdim=True), x.var(-1, unbiased=False, keepdim=True)
    return {
        t("subtracted_mean_layernorm"): gamma * (x - mean) / torch.sqrt(var + eps),
        t("divided_standard_deviation"): gamma * x / torch.sqrt(var + eps),
        t("belongs_inside_square_root"): gamma * x / (torch.sqrt(mean_square) + eps),
        t("divided_mean_x"): gamma * x / (mean_square + eps),
        t("summed_squares_rmsnorm"): gamma * x / torch.sqrt(x.pow(2).sum(-1, keepdim=True) + eps),
        t("normalised_over_batch_dim"): gamma * x / torch.sqrt(x.pow(2).mean(0, keepdim=True) + eps),
        t("scaling_right_but"): x / torch.sqrt(mean_square + eps),
    }


@checker("RMSNorm", lazy_t("equals_f_rms"))
def check_rms_norm(rms_norm):
    """``rms_norm(x, gamma, eps)`` = ``F.rms_norm(x, (features,), gamma, eps)`` over the last dimension, written
    with tensor operations: ``F.rms_norm``, ``nn.RMSNorm`` and every other built-in normalisation are refused."""
    for x in _inputs():
        features = x.size(-1)
        gamma = torch.rand(features, generator=torch.Generator().manual_seed(features)) + 0.5
        expected = F.rms_norm(x, (features,), gamma, 1e-5)
        with no_shortcuts(t("rmsnorm"), TORCH_NORM):
            got = rms_norm(x.clone(), gamma.clone(), 1e-5)
        what = t("rms_norm_x", shape=tuple(x.shape))
        expect_tensor(got, expected, what, mistakes=_rms_norm_variants(x, gamma, 1e-5))


# ---- exercise 2: a LayerNorm that is right on paper and wrong in float32 --------------------------------


class FusedLayerNorm(nn.Module):
    """LayerNorm with both statistics from one pass over x, E[x] and E[x²] (as some fused kernels do)."""

    def __init__(self, features, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(features))
        self.bias = nn.Parameter(torch.zeros(features))

    def forward(self, x):
        mean = x.mean(dim=-1, keepdim=True)
        mean_square = (x * x).mean(dim=-1, keepdim=True)
        var = mean_square - mean * mean
        return self.weight * (x - mean) / torch.sqrt(var + self.eps) + self.bias


@checker(lazy_t("counterexample_fusedlayernorm"), lazy_t("fusedlayernorm_wrong_input"))
def check_counterexample(x):
    """``x``: a float tensor (..., features) on which ``FusedLayerNorm(features)`` (γ = 1, β = 0) and LayerNorm
    computed in float64 differ by more than 0.01 somewhere (or FusedLayerNorm gives NaN where LayerNorm does not)."""
    if x is ... or x is None:
        raise Hint(t("not_done_yet"))
    if not isinstance(x, Tensor):
        raise Hint(t("counterexample_torch_tensor", type=type(x).__name__))
    if not x.is_floating_point():
        raise Hint(
            t("counterexample_dtype_layernorm",
              dtype=x.dtype)
        )  # fmt: skip
    if x.dim() == 0 or x.size(-1) < 2:
        raise Hint(t("give_least_2", shape=tuple(x.shape)))
    if x.numel() > 1_000_000:
        raise Hint(t("keep_counterexample_small"))
    if not torch.isfinite(x).all():
        raise Hint(t("input_holds_nan"))
    features = x.size(-1)
    with torch.no_grad():
        got = FusedLayerNorm(features).to(x.dtype)(x.detach())
        want = F.layer_norm(x.detach().double(), (features,), eps=1e-5)
    broken = ~torch.isfinite(got)
    if broken.any():
        return
    gap = float((got.double() - want).abs().max())
    if gap > 1e-2:
        return
    raise Hint(t("input_fusedlayernorm_agrees", gap=gap, dtype=str(x.dtype).replace("torch.", "")))


@answer_check
@checker(lazy_t("wrong_line"))
def check_bug_line(bug_line):
    """``bug_line``: the number of FusedLayerNorm's wrong line, as ``ex.print_numbered`` shows it."""
    if bug_line is ... or bug_line is None:
        raise Hint(t("not_done_yet_set"))
    answer = bug_line
    if isinstance(answer, (list, tuple, set, frozenset)):
        if len(answer) != 1:
            raise Hint(t("line_wrong_give", count=len(answer)))
        (answer,) = answer
    line, question = as_int(answer, t("line_number")), QUESTIONS["bug_line"]  # one entry locked with each line
    if not 1 <= line <= question.lines:
        raise Hint(t("fusedlayernorm_lines_1", last=question.lines, line=line))
    entry = question.unlock([line])  # the wrong line unlocks the explanation; any other, why it is fine
    if entry is not None:
        return unlocked_text(entry)
    raise Hint(unlocked_text(question.unlock(line)))


# ---- exercise 3: LayerNorm parameters, by formula -----------------------------------------------------------


@checker(lazy_t("layernorm_parameters"), lazy_t("passed_layernorm_count"))
def check_layer_norm_parameter_count(count):
    """``count(N, d_model, norm_first)``: LayerNorm parameters of an encoder-decoder with N layers per stack, by
    formula: one of the cases (N = 48, d_model = 4096) is too large to build, and the package's make_model is refused."""
    cases = ((6, 512, False), (6, 512, True), (2, 8, True), (3, 16, False), (48, 4096, True), (48, 4096, False))
    for N, d_model, norm_first in cases:
        what = f"count(N={N}, d_model={d_model}, norm_first={norm_first})"
        with watch_shortcuts() as found:
            answer = count(N, d_model, norm_first)
        if found:
            raise Hint(t("count_calls_builds", call=found.calls[0]))
        got = as_int(answer, what)
        per_norm, final = 2 * d_model, (2 if norm_first else 0)
        want = (2 * N + 3 * N + final) * per_norm
        if got == want:
            continue
        wrong = {
            want // 2: t("counts_only_each"),
            (4 * N + final) * per_norm: t("gives_each_decoder"),
            (2 * N + final // 2) * per_norm: t("counts_encoder_only"),
        }
        if norm_first:
            wrong[5 * N * per_norm] = t("leaves_out_final")
            wrong[(5 * N + 1) * per_norm] = t("final_layernorm_each")
        else:
            wrong[(5 * N + 2) * per_norm] = t("adds_final_layernorms")
        hint = wrong.get(got) or t("count_add_norm")
        raise Hint(t("expected_another_number", what=what, got=got, hint=hint))


# ---- questions (a number, a letter) -----------------------------------------------------------------------------

QUESTIONS = questions(
    "nb04_layernorm_residual",
    lazy_t,
    q1="5e5b03c5bdec13e6ffbd46e0",
    q2="8d0e41ad4a8a7e33972c93c3",
    bug_line="b86ab3af2c711ea48b281f16",
)


check_quiz = quiz_checker({name: QUESTIONS[name] for name in ("q1", "q2")})  # one line per question

read_only(__name__)  # what the checks use stays what it was at import (ex.no_shortcuts = … is refused)

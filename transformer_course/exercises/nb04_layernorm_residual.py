"""Checkers for the exercises of notebook 04 (LayerNorm and residual connections; paper §3.1, §5.4).

from transformer_course.exercises import nb04_layernorm_residual as ex
ex.check_layer_norm(layer_norm)
ex.check_residual(residual)
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor, nn

from . import Result, expect_tensor, name_known_mistake, run_check


def _layer_norm_variants(x: Tensor, gamma: Tensor, beta: Tensor, eps: float) -> dict[str, Tensor]:
    """Plausible wrong answers, each with the hint that names its mistake."""
    mean, var = x.mean(-1, keepdim=True), x.var(-1, unbiased=False, keepdim=True)
    b_mean, b_var = x.mean(0, keepdim=True), x.var(0, unbiased=False, keepdim=True)
    return {
        "you normalised over the batch (dim 0), which is BatchNorm; LayerNorm normalises each row over "
        "its last dimension (dim=-1)": gamma * (x - b_mean) / torch.sqrt(b_var + eps) + beta,
        "you used the unbiased variance (divides by n−1); LayerNorm divides by n: x.var(dim=-1, unbiased=False)": gamma
        * (x - mean)
        / torch.sqrt(x.var(-1, keepdim=True) + eps)
        + beta,
        "ε belongs inside the square root: √(var + ε), not √var + ε": gamma * (x - mean) / (torch.sqrt(var) + eps)
        + beta,
        "the normalised values are right, but γ (gain) and β (bias) are not applied: γ · x̂ + β": (x - mean)
        / torch.sqrt(var + eps),
        "you divided by the variance; divide by the standard deviation √(var + ε)": gamma * (x - mean) / (var + eps)
        + beta,
    }


def check_layer_norm(layer_norm: Callable[..., Tensor]) -> Result:
    """``layer_norm(x, gamma, beta, eps=1e-5)`` must equal ``nn.LayerNorm`` with the same γ, β."""

    def check() -> None:
        g = torch.Generator().manual_seed(4)
        for x in (torch.tensor([[1.0, 2, 3], [8, 9, 10], [15, 16, 17]]), torch.randn(2, 5, 8, generator=g) * 3 + 1):
            features = x.size(-1)
            gamma = torch.rand(features, generator=g) + 0.5
            beta = torch.randn(features, generator=g)
            reference = nn.LayerNorm(features, eps=1e-5)
            with torch.no_grad():
                reference.weight.copy_(gamma)
                reference.bias.copy_(beta)
                expected = reference(x)
            got = layer_norm(x.clone(), gamma, beta, 1e-5)
            name_known_mistake(
                got,
                expected,
                _layer_norm_variants(x, gamma, beta, 1e-5),
                message=f"input of shape {tuple(x.shape)}: {{}}",
            )
            expect_tensor(got, expected, f"layer_norm(x) for x of shape {tuple(x.shape)}")

    return run_check("layer_norm", check, "equals nn.LayerNorm on the course matrix and on a (2, 5, 8) batch")


def check_residual(residual: Callable[..., Tensor]) -> Result:
    """``residual(x, sublayer, norm, norm_first)``: post-LN when False (the paper), pre-LN when True."""

    def check() -> None:
        torch.manual_seed(4)
        x = torch.randn(2, 3, 8)
        sublayer = nn.Linear(8, 8)
        norm = nn.LayerNorm(8)
        with torch.no_grad():
            norm.weight.uniform_(0.5, 1.5)
            norm.bias.normal_()
            post, pre = norm(x + sublayer(x)), x + sublayer(norm(x))
            wrong = {
                "norm(x + sublayer(x))": post,
                "x + sublayer(norm(x))": pre,
                "norm(sublayer(x)) (the residual x is missing)": norm(sublayer(x)),
                "sublayer(norm(x)) (the residual x is missing)": sublayer(norm(x)),
                "x + norm(sublayer(x))": x + norm(sublayer(x)),
            }
            for norm_first, expected, formula in (
                (False, post, "LayerNorm(x + Sublayer(x))"),
                (True, pre, "x + Sublayer(LayerNorm(x))"),
            ):
                got = residual(x.clone(), sublayer, norm, norm_first)
                what = f"residual(..., norm_first={norm_first})"
                name_known_mistake(got, expected, wrong, message=f"{what} computed {{}}; it should be {formula}")
                expect_tensor(got, expected, what)

    return run_check("residual", check, "post-LN and pre-LN both right")

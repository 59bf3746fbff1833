"""Checkers for the exercises of notebook 00 (why attention: the paper's Table 1 and §4; Table 2 and §5.2).

from transformer_course.exercises import nb00_introduction as ex
ex.check_attention_layer_macs(attention_layer_macs)   # estimate the cost of a whole attention layer
ex.check_layers_to_connect(layers_to_connect)         # path length of stacked convolutions (§4)
ex.check_quiz(q1=..., q2=..., q3=...)                  # three short questions
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from ..i18n import messages
from . import Hint, as_int, checker, questions, quiz_checker
from .guard import read_only
from .limits import too_big_to_build

t, lazy_t = messages("nb00_introduction")

__all__ = [
    "MAC_CASES",
    "check_attention_layer_macs",
    "CONV_CASES",
    "check_layers_to_connect",
    "QUESTIONS",
    "check_quiz",
]

# ---- Exercise 1: the multiply-adds of one whole multi-head self-attention layer -------------------------------------


# (n, d, heads): n, d and heads all different, so that each mistake gives its own number
# the last is far too big to build (a 100,000 × 8,192 input): a count, not a measurement
MAC_CASES = [(10, 64, 4), (50, 32, 8), (7, 48, 3), (100_000, 8192, 64)]


def _mac_mistakes(n: int, d: int, heads: int) -> dict[str, int]:
    return {
        t("only_attention_core"): 2 * n * n * d,
        t("product_weights_v"): (4 * n * d * d + n * n * d),
        t("projection_missing_four"): (3 * n * d * d + 2 * n * n * d),
        t("count_grows_number"): (heads * (4 * n * d * d + 2 * n * n * d)),
        t("these_table_1s"): (n * n * d + n * d * d),
    }


@checker(lazy_t("attention_layer_cost"), lazy_t("passed_macs_formula"))
def check_attention_layer_macs(attention_layer_macs):
    """``attention_layer_macs(n, d, heads)``: multiply-adds of one multi-head self-attention layer on one
    sentence of n positions (the four projections, Q Kᵀ and weights @ V; biases and softmax not counted)."""

    def counted(n: int, d: int, heads: int) -> int:
        """Multiply-adds of the layer, counted by PyTorch's FlopCounterMode (2 FLOPs per multiply-add of every
        matrix product; biases and the softmax not counted). Plain torch operations, independent of the package."""
        d_k = d // heads
        x = torch.zeros(1, n, d)  # (1, n, d)
        w_q, w_k, w_v, w_o = (nn.Linear(d, d) for _ in range(4))
        with FlopCounterMode(display=False) as counter, torch.no_grad():
            q, k, v = (w(x).view(1, n, heads, d_k).transpose(1, 2) for w in (w_q, w_k, w_v))  # (1, h, n, d_k)
            weights = (q @ k.transpose(-2, -1)).softmax(dim=-1)  # (1, h, n, n)
            w_o((weights @ v).transpose(1, 2).reshape(1, n, d))  # (1, n, d)
        return counter.get_total_flops() // 2

    for n, d, heads in MAC_CASES:
        what = f"attention_layer_macs(n={n}, d={d}, heads={heads})"
        with too_big_to_build(what):
            got = as_int(attention_layer_macs(n, d, heads), what)
        # the sizes too big to build are checked against the count's form, 4·n·d² + 2·n²·d, which the
        # counter confirms on every size it can build
        want = counted(n, d, heads) if n * d <= 10**6 else 4 * n * d * d + 2 * n * n * d
        if got == want:
            continue
        for hint, value in _mac_mistakes(n, d, heads).items():
            if got == value:
                raise Hint(t("what_got_hint", what=what, got=got, hint=hint))
        raise Hint(t("pytorchs_flopcountermode_counts", what=what, got=got, want=want))


# ---- Exercise 2: how many stacked convolutions connect the first and the last position (§4, Table 1) ----------------


# contiguous cases first (20, 4) separates n/k (5), rounding down (6) and the answer (7); (11, 3) catches n/(k − 1)
# (125, 5) and (216, 6) are exact powers where math.log(n, k) comes out a hair above the whole number
CONV_CASES = [
    (20, 4, False),
    (11, 3, False),
    (64, 4, False),
    (10, 3, True),
    (100, 2, True),
    (64, 4, True),
    (125, 5, True),
    (216, 6, True),
]


def _conv_mistakes(n: int, k: int, dilated: bool) -> dict[str, int]:
    if dilated:
        return {
            t("layer_short_dilations"): int(math.floor(math.log(n, k) + 1e-9)),
            t("log_base_2"): math.ceil(math.log2(n) - 1e-9),
            t("math_log_n"): math.ceil(math.log(n, k)),
        }
    return {
        t("n_k_rounded"): math.ceil(n / k),
        t("layer_short_round"): (n - 1) // (k - 1),
        t("counted_steps_not_distance"): math.ceil(n / (k - 1)),
    }


@checker(lazy_t("layers_connect"), lazy_t("passed_layers_formula"))
def check_layers_to_connect(layers_to_connect):
    """``layers_to_connect(n, k, dilated)``: the smallest number of stacked causal convolutions of kernel
    width k after which output n − 1 depends on input 0; dilation k**l in layer l when ``dilated``."""

    def simulated(n: int, k: int, dilated: bool) -> int:
        """Stack causal convolutions of kernel width k until the last output sees the first input, by tracking
        which inputs each position sees (no formula). Layer l has dilation k**l when ``dilated``, else 1."""
        seen = [{i} for i in range(n)]  # seen[i]: the inputs position i depends on
        layers = 0
        while 0 not in seen[n - 1]:
            step = k**layers if dilated else 1
            seen = [set().union(*(seen[i - j * step] for j in range(k) if i - j * step >= 0)) for i in range(n)]
            layers += 1
        return layers

    for n, k, dilated in CONV_CASES:
        what = f"layers_to_connect(n={n}, k={k}, dilated={dilated})"
        got = as_int(layers_to_connect(n, k, dilated), what)
        want = simulated(n, k, dilated)
        if got == want:
            continue
        for hint, value in _conv_mistakes(n, k, dilated).items():
            if got == value and value != want:
                raise Hint(t("answer_is_hint", what=what, got=got, hint=hint))
        raise Hint(t("stacking_layers_needs", what=what, got=got, want=want))


# ---- Questions ------------------------------------------------------------------------------------------------------

QUESTIONS = questions(
    "nb00_introduction",
    lazy_t,
    q1="8be64ee7147ec576a3b6165c",
    q2="bca91c009ee2f2c8992f1ef4",
    q3="35ffa033ab83402a58d421e3",
)


check_quiz = quiz_checker(QUESTIONS)  # one line per question

read_only(__name__)  # what the checks use stays what it was at import (ex.no_shortcuts = … is refused)

"""Checkers for the exercises of notebook 00 (why attention: the paper's Table 1 and §4; Table 2 and §5.2).

from transformer_course.exercises import nb00_introduction as ex
ex.check_attention_layer_macs(attention_layer_macs)   # estimate the cost of a whole attention layer
ex.check_layers_to_connect(layers_to_connect)         # path length of stacked convolutions (§4)
ex.check_quiz(q1=..., q2=..., q3=...)                  # three short questions

Numbers may be given as a Python int or float, a numpy scalar or a one-number tensor.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from ..i18n import lazy_t, register, t
from . import Choice, Hint, Numeric, Result, as_int, run_check
from . import check_quiz as _check_quiz
from .zh.nb00_introduction import ZH

register("zh", ZH)

__all__ = [
    "counted_attention_macs",
    "MAC_CASES",
    "check_attention_layer_macs",
    "simulated_layers",
    "CONV_CASES",
    "check_layers_to_connect",
    "QUESTIONS",
    "check_quiz",
]

# ---------------------------------------------------------------------------------------------------
# Exercise 1: the multiply-adds of one whole multi-head self-attention layer


def counted_attention_macs(n: int, d: int, heads: int) -> int:
    """Multiply-adds of one multi-head self-attention layer on n positions, counted by PyTorch's
    FlopCounterMode (which counts 2 FLOPs per multiply-add of every matrix product; biases and the
    softmax are not counted). Plain torch operations, independent of the package."""
    d_k = d // heads
    x = torch.zeros(1, n, d)  # (1, n, d)
    w_q, w_k, w_v, w_o = (nn.Linear(d, d) for _ in range(4))
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        q, k, v = (w(x).view(1, n, heads, d_k).transpose(1, 2) for w in (w_q, w_k, w_v))  # (1, h, n, d_k)
        weights = (q @ k.transpose(-2, -1)).softmax(dim=-1)  # (1, h, n, n)
        w_o((weights @ v).transpose(1, 2).reshape(1, n, d))  # (1, n, d)
    return counter.get_total_flops() // 2


# (n, d, heads): n, d and heads all different, so that each mistake gives its own number
MAC_CASES = [(10, 64, 4), (50, 32, 8), (7, 48, 3)]


def _mac_mistakes(n: int, d: int, heads: int) -> dict[str, int]:
    return {
        t("only the attention core is counted: the four projections W^Q, W^K, W^V, W^O cost n·d² each"): 2 * n * n * d,
        t("the product weights @ V is missing: it costs as much as Q Kᵀ (n·n weights, each times d numbers)"): (
            4 * n * d * d + n * n * d
        ),
        t("one projection is missing: there are four, W^Q, W^K, W^V and the output projection W^O"): (
            3 * n * d * d + 2 * n * n * d
        ),
        t("the count grows with the number of heads: h heads of size d/h cost what one head of size d costs"): (
            heads * (4 * n * d * d + 2 * n * n * d)
        ),
        t("these are Table 1's two terms only (n²·d + n·d²); count every matrix product of the layer"): (
            n * n * d + n * d * d
        ),
    }


def check_attention_layer_macs(attention_layer_macs) -> Result:
    """``attention_layer_macs(n, d, heads)``: multiply-adds of one multi-head self-attention layer on one
    sentence of n positions (the four projections, Q Kᵀ and weights @ V; biases and softmax not counted)."""

    def check():
        for n, d, heads in MAC_CASES:
            what = f"attention_layer_macs(n={n}, d={d}, heads={heads})"
            got = as_int(attention_layer_macs(n, d, heads), what)
            want = counted_attention_macs(n, d, heads)
            if got == want:
                continue
            for hint, value in _mac_mistakes(n, d, heads).items():
                if got == value:
                    raise Hint(t("{what} = {got:,}: {hint}", what=what, got=got, hint=hint))
            raise Hint(
                t(
                    "{what} = {got:,}, PyTorch's FlopCounterMode counts {want:,} multiply-adds",
                    what=what,
                    got=got,
                    want=want,
                )
            )

    return run_check(
        t("attention layer cost"),
        check,
        t("passed: 4·n·d² for the projections + 2·n²·d for attention, whatever h is"),
    )


# ---------------------------------------------------------------------------------------------------
# Exercise 2: how many stacked convolutions connect the first and the last position (§4, Table 1)


def simulated_layers(n: int, k: int, dilated: bool) -> int:
    """Stack causal convolutions of kernel width k until the last output sees the first input, by tracking
    which inputs each position sees (no formula). Layer l has dilation k**l when ``dilated``, else 1."""
    seen = [{i} for i in range(n)]  # seen[i]: the inputs position i depends on
    layers = 0
    while 0 not in seen[n - 1]:
        step = k**layers if dilated else 1
        seen = [set().union(*(seen[i - j * step] for j in range(k) if i - j * step >= 0)) for i in range(n)]
        layers += 1
    return layers


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
            t(
                "one layer short: with dilations 1, k, k², … the receptive field after L layers is k^L, and it "
                "must reach n (round up, not down)"
            ): int(math.floor(math.log(n, k) + 1e-9)),
            t("that is log base 2: the receptive field multiplies by the kernel width k each layer"): math.ceil(
                math.log2(n) - 1e-9
            ),
            t(
                "math.log(n, k) is a float: for n = k^L it can come out a hair above L (math.log(125, 5) = "
                "3.0000000000000004), so rounding up adds a layer; count with whole numbers (k ** L < n)"
            ): math.ceil(math.log(n, k)),
        }
    return {
        t(
            "that is n / k rounded up, the O(n/k) of §4 taken literally: a kernel of width k reaches k − 1 "
            "positions back per layer, and the distance from first to last is n − 1"
        ): math.ceil(n / k),
        t("one layer short: round the number of layers up"): (n - 1) // (k - 1),
        t("with n / (k − 1) you count n steps; the distance from the first to the last position is n − 1"): math.ceil(
            n / (k - 1)
        ),
    }


def check_layers_to_connect(layers_to_connect) -> Result:
    """``layers_to_connect(n, k, dilated)``: the smallest number of stacked causal convolutions of kernel
    width k after which output n − 1 depends on input 0; dilation k**l in layer l when ``dilated``."""

    def check():
        for n, k, dilated in CONV_CASES:
            what = f"layers_to_connect(n={n}, k={k}, dilated={dilated})"
            got = as_int(layers_to_connect(n, k, dilated), what)
            want = simulated_layers(n, k, dilated)
            if got == want:
                continue
            for hint, value in _conv_mistakes(n, k, dilated).items():
                if got == value and value != want:
                    raise Hint(t("{what} = {got}: {hint}", what=what, got=got, hint=hint))
            raise Hint(t("{what} = {got}; stacking the layers one by one needs {want}", what=what, got=got, want=want))

    return run_check(
        t("layers to connect"), check, t("passed: ⌈(n − 1)/(k − 1)⌉ contiguous layers, ⌈log_k n⌉ dilated ones")
    )


# ---------------------------------------------------------------------------------------------------
# Questions

QUESTIONS = {
    "q1": Choice(
        key="nb00-q1",
        digest="80d9442814d431772f4ecb79",
        letters="abc",
        why=lazy_t(
            "training sees the whole target at once (O(1) sequential steps); generating a translation "
            "still needs one decoder step per output word (notebook 09)"
        ),
        wrong={
            "a": lazy_t(
                "at test time the next word depends on the words already written, so they cannot all be "
                "produced in one step; Table 1's O(1) is about one layer over a known sequence"
            ),
            "c": lazy_t("the encoder reads the whole source in one step; only the output is written word by word"),
        },
    ),
    "q2": Numeric(
        key="nb00-q2",
        digests=("8e45d1bb8b0cc24e2ee8a25d", "5bd3637503e4e6daddcc4075", "420101621dbcdbd7a9cf49f1"),
        why="n·d² / (n²·d) = d / n = 512 / 12 ≈ 42.7",  # a formula: the same in every language
        mistakes={
            lazy_t(
                "upside down: the recurrent layer costs n·d², self-attention n²·d; divide the first by the second"
            ): 12 / 512
        },
        rel_tol=1e-2,
        otherwise=lazy_t("divide Table 1's recurrent cost n·d² by the self-attention cost n²·d, then put in n and d"),
    ),
    "q3": Numeric(
        key="nb00-q3",
        digests=("f96c514df195f06ec9c4e9d1", "ee5c877d7e439b9d25603282", "d9c806600d4e33a2e3156afd"),
        why=lazy_t("12 h × 3,600 s × 8 GPUs × 9.5·10¹² FLOP/s ≈ 3.3·10¹⁸ FLOPs, Table 2's figure"),
        mistakes={
            lazy_t("the hours must become seconds (× 3,600): FLOPS are operations per second"): 12 * 8 * 9.5e12,
            lazy_t("all 8 GPUs worked for those 12 hours: multiply by 8"): 12 * 3600 * 9.5e12,
            lazy_t("a TFLOPS is 10¹² operations per second, not 10⁹"): 12 * 3600 * 8 * 9.5e9,
        },
        rel_tol=0.02,
        otherwise=lazy_t("multiply the training time in seconds, the number of GPUs and 9.5·10¹² FLOP/s per GPU"),
    ),
}


def check_quiz(**answers) -> Result:
    """``check_quiz(q1="b", q2=42.7, q3=3.3e18)``: one line per question."""
    return _check_quiz(QUESTIONS, answers)

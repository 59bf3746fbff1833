"""Checkers for the exercises of notebook 06 (the encoder; paper §3.1, §3.2.3, §3.3).

from transformer_course.exercises import nb06_encoder as ex
ex.check_encoder_layer(encoder_layer)
ex.check_encoder_parameter_count(encoder_parameter_count)
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from ..masks import padding_mask
from ..model import Encoder, EncoderLayer
from . import Hint, Result, expect_tensor, name_known_mistake, run_check


def check_encoder_layer(encoder_layer: Callable[..., Tensor]) -> Result:
    """``encoder_layer(x, src_mask, self_attn, feed_forward, norm_1, norm_2)`` must equal the package's
    post-LN ``EncoderLayer`` with the same parts."""

    def check() -> None:
        torch.manual_seed(6)
        layer = EncoderLayer(16, 4, 32, dropout=0.0).eval()
        for norm in (layer.sublayer[0].norm, layer.sublayer[1].norm):
            with torch.no_grad():
                norm.weight.uniform_(0.5, 1.5)
                norm.bias.normal_(0, 0.5)
        tokens = torch.tensor([[5, 6, 7, 8, 9], [5, 6, 7, 0, 0]])
        src_mask = padding_mask(tokens, 0)  # (2, 1, 1, 5)
        x = torch.randn(2, 5, 16)
        attn, ffn, n1, n2 = layer.self_attn, layer.feed_forward, layer.sublayer[0].norm, layer.sublayer[1].norm
        with torch.no_grad():
            expected = layer(x, src_mask)
            h = n1(x + attn(x, mask=None))
            wrong = {
                "the padding mask was not passed to self-attention: the real tokens attended to <pad>; "
                "call self_attn(x, mask=src_mask)": n2(h + ffn(h)),
                "that is pre-LN (x + Sublayer(LayerNorm(x))); the paper's layer is post-LN: "
                "LayerNorm(x + Sublayer(x))": _pre_ln(x, src_mask, attn, ffn, n1, n2),
                "the residual connections are missing: each sub-layer's output is added to its input "
                "before the LayerNorm": n2(ffn(n1(attn(x, mask=src_mask)))),
                "the order is wrong: self-attention comes first, then the feed-forward network": n2(
                    n1(x + ffn(x)) + attn(n1(x + ffn(x)), mask=src_mask)
                ),
            }
            got = encoder_layer(x.clone(), src_mask, attn, ffn, n1, n2)
        name_known_mistake(got, expected, wrong)
        expect_tensor(got, expected, "encoder_layer(x) for x of shape (2, 5, 16)")

    return run_check("encoder_layer", check, "equals the package's EncoderLayer (post-LN, with the padding mask)")


def _pre_ln(x, src_mask, attn, ffn, n1, n2):
    x = x + attn(n1(x), mask=src_mask)
    return x + ffn(n2(x))


def check_encoder_parameter_count(encoder_parameter_count: Callable[[int, int, int], int]) -> Result:
    """``encoder_parameter_count(N, d_model, d_ff)`` must equal the parameters of N encoder layers."""

    def check() -> None:
        for N, d_model, d_ff in ((1, 8, 16), (2, 16, 48), (6, 512, 2048)):
            stack = Encoder([EncoderLayer(d_model, 8, d_ff, 0.0) for _ in range(N)], d_model, norm_first=False)
            expected = sum(p.numel() for p in stack.parameters())
            got = encoder_parameter_count(N, d_model, d_ff)
            what = f"encoder_parameter_count(N={N}, d_model={d_model}, d_ff={d_ff})"
            if not isinstance(got, int) or isinstance(got, bool):
                if isinstance(got, float) and got.is_integer():
                    got = int(got)
                else:
                    raise Hint(f"{what} should return an int, got {type(got).__name__}")
            if got == expected:
                continue
            d = d_model
            per_layer = expected // N
            misses = {
                per_layer: "that is one layer; the encoder has N of them",
                expected - N * (4 * d + d_ff + d): "the biases are missing (4 in attention, b_1 and b_2 in the FFN)",
                expected - N * 4 * d: "the two LayerNorms of each layer are missing (γ and β, d_model each)",
                expected
                - N * 2 * d: "each layer has two LayerNorms, each with γ and β (2 · d_model); you counted half of that",
                expected - N * (d * d + d): "multi-head attention has four d_model × d_model projections: "
                "W^Q, W^K, W^V and the output W^O",
            }
            raise Hint(
                f"{what} returned {got:,}, expected {expected:,}: "
                + misses.get(
                    got,
                    "count, per layer: attention 4·d_model² + 4·d_model, FFN 2·d_model·d_ff + d_ff + d_model, "
                    "two LayerNorms 2·2·d_model; then multiply by N",
                )
            )

    return run_check(
        "encoder_parameter_count",
        check,
        "matches the package's Encoder for three sizes, the paper's base encoder included",
    )

"""Reference solutions of notebook 00's exercises (Table 1 and §4 of the paper). Try the exercises first."""

import math


def attention_layer_macs(n: int, d: int, heads: int) -> int:
    """Multiply-adds of one multi-head self-attention layer on n positions of size d."""
    projections = 4 * n * d * d  # W^Q, W^K, W^V and W^O: each (n, d) @ (d, d)
    attention = 2 * n * n * d  # Q Kᵀ and weights @ V: h heads × (n, n) × d/h each = n²·d, twice
    return projections + attention  # the heads split d, so h does not appear


def layers_to_connect(n: int, k: int, dilated: bool) -> int:
    """Stacked causal convolutions of width k until output n − 1 sees input 0 (§4)."""
    if dilated:  # receptive field k^L after L layers with dilations 1, k, k², …
        layers = 0
        while k**layers < n:  # whole numbers: no rounding error of log
            layers += 1
        return layers
    return math.ceil((n - 1) / (k - 1))  # each layer reaches k − 1 positions further back


# q1: one decoder pass per token written, 20 words + the end-of-sentence token; q3: 12 h (or 100,000 × 0.4 s) × 8 × 9.5e12
QUIZ = {"q1": 21, "q2": 512 / 12, "q3": 12 * 3600 * 8 * 9.5e12}

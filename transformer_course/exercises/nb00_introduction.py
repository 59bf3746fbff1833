"""Checker for the exercise of notebook 00 (why attention; the paper's Table 1, §4).

from transformer_course.exercises import nb00_introduction as ex
ex.check_cost_per_layer(cost_per_layer)
"""

from __future__ import annotations

from . import Hint, Result, run_check

# (layer, n, d, k): the cases the checker tries, chosen so that n, d and k are all different
CASES = [
    ("self-attention", 10, 512, 3),
    ("recurrent", 10, 512, 3),
    ("convolutional", 10, 512, 3),
    ("self-attention", 1000, 64, 5),
    ("recurrent", 1000, 64, 5),
    ("convolutional", 1000, 64, 5),
]

WHY = {
    "self-attention": "self-attention compares every pair of positions (n·n pairs), each with a dot product of size d",
    "recurrent": "a recurrent layer does n steps, each multiplying a d-vector by a d×d matrix",
    "convolutional": "a convolution does, at each of n positions, k matrix products of size d×d",
}


def expected_cost(layer: str, n: int, d: int, k: int) -> int:
    return {"self-attention": n * n * d, "recurrent": n * d * d, "convolutional": k * n * d * d}[layer]


def check_cost_per_layer(cost_per_layer) -> Result:
    """``cost_per_layer(layer, n, d, k)`` should give Table 1's complexity per layer as a number."""

    def check():
        for layer, n, d, k in CASES:
            got = cost_per_layer(layer, n, d, k)
            want = expected_cost(layer, n, d, k)
            if not isinstance(got, (int, float)) or isinstance(got, bool):
                raise Hint(
                    f"cost_per_layer({layer!r}, n={n}, d={d}, k={k}) should return a number, got {type(got).__name__}"
                )
            if got != want:
                raise Hint(
                    f"cost_per_layer({layer!r}, n={n}, d={d}, k={k}) returned {got}, expected {want}: {WHY[layer]}"
                )

    return run_check("cost per layer", check, "passed: self-attention is cheaper than a recurrent layer while n < d")

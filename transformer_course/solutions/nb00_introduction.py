"""Reference solution of notebook 00's exercise (Table 1 of the paper, §4)."""


def cost_per_layer(layer: str, n: int, d: int, k: int = 3) -> int:
    """Operations per layer for a sequence of n positions of size d (k: convolution kernel width)."""
    if layer == "self-attention":
        return n * n * d  # every pair of positions, a dot product of size d each
    if layer == "recurrent":
        return n * d * d  # n steps, a (d × d) matrix times a d-vector each
    if layer == "convolutional":
        return k * n * d * d  # n positions, k (d × d) products each
    raise ValueError(f"unknown layer {layer!r}; use 'self-attention', 'recurrent' or 'convolutional'")

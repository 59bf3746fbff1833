"""Reference solutions of notebook 07's exercises (the decoder and the whole model; §3.1, §3.4).
Try the exercises first."""

from __future__ import annotations

# Exercise 1: model 1 fails the causality test (its self-attention ignores tgt_mask: the future leaks);
# model 2 passes it but its outputs change when <pad> is appended to the source (cross-attention ignores src_mask).
MYSTERY = {"model_1": "a", "model_2": "b"}


def parameter_count(src_vocab: int, tgt_vocab: int, N: int, d_model: int, d_ff: int, tie_embeddings: str) -> int:
    """Parameters of make_model(src_vocab, tgt_vocab, N, d_model, d_ff, tie_embeddings=...), each tied matrix once."""
    d = d_model
    attention = 4 * d * d + 4 * d  # W^Q, W^K, W^V, W^O and their biases
    ffn = 2 * d * d_ff + d_ff + d  # W_1, b_1, W_2, b_2
    norm = 2 * d  # γ and β
    layers = N * ((attention + ffn + 2 * norm) + (2 * attention + ffn + 3 * norm))  # encoder + decoder layers
    matrices = {
        "none": src_vocab * d + tgt_vocab * d + tgt_vocab * d,  # source, target, generator: three matrices
        "decoder": src_vocab * d + tgt_vocab * d,  # the generator reuses the target embedding
        "all": tgt_vocab * d,  # one matrix (src_vocab == tgt_vocab)
    }[tie_embeddings]
    return layers + matrices + tgt_vocab  # + the generator's bias


# q2: sequence first, nn.Transformer reads (32, 10, 512) as 10 "sentences" of 32 positions: one output mixes
# vectors of all 32 real sentences.
QUIZ = {"q1": "c", "q2": 32, "q3": 5}

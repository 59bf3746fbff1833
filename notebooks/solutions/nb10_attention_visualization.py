"""Reference solutions of notebook 10's exercises (attention visualization, §3.2). Try the exercises first."""

import torch


def head_entropy(weights: torch.Tensor) -> torch.Tensor:
    plogp = torch.where(weights > 0, weights * weights.clamp_min(1e-30).log(), torch.zeros_like(weights))  # (h, q, k)
    return -plogp.sum(-1).mean(-1)  # sum over keys, mean over queries → (h,)


def alignment(cross: torch.Tensor) -> torch.Tensor:
    return cross.mean(0).argmax(-1)  # (h, T, S) → (T, S) → (T,)


# Exercise 1, by hand: 4 heads; the source has 6 positions; the decoder reads <s> + 4 symbols = 5 positions.
ENCODER_SHAPE = (4, 6, 6)  # (heads, source queries, source keys)
DECODER_SHAPE = (4, 5, 5)  # (heads, target queries, target keys), <s> included
CROSS_SHAPE = (4, 5, 6)  # (heads, target queries, source keys)

QUIZ = {"q1": "a", "q2": 2.0794415416798357, "q3": "b"}

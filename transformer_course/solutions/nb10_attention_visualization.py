"""Reference solutions of notebook 10's exercises (attention visualization, §3.2). Try the exercises first."""

import torch


def head_entropy(weights: torch.Tensor) -> torch.Tensor:
    plogp = torch.where(weights > 0, weights * weights.clamp_min(1e-30).log(), torch.zeros_like(weights))  # (h, q, k)
    return -plogp.sum(-1).mean(-1)  # sum over keys, mean over queries → (h,)


def alignment(cross: torch.Tensor) -> torch.Tensor:
    return cross.mean(0).argmax(-1)  # (h, T, S) → (T, S) → (T,)

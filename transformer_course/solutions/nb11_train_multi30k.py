"""Reference solutions of notebook 11's exercises (Multi30k; §5.1, §6.1). Try the exercises first."""

import math

import torch


def padding_fraction(batches: list[list[int]]) -> float:
    positions = sum(len(b) * max(b) for b in batches)  # each batch padded to its own longest sentence
    real = sum(sum(b) for b in batches)
    return (positions - real) / positions


def average_state_dicts(state_dicts: list[dict]) -> dict:
    return {name: torch.stack([sd[name] for sd in state_dicts]).mean(0) for name in state_dicts[0]}


def brevity_penalty(hyp_len: int, ref_len: int) -> float:
    return 1.0 if hyp_len > ref_len else math.exp(1 - ref_len / hyp_len)

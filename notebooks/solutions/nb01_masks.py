"""Reference solutions of notebook 01's exercises (masks, §3.2.3; restricted self-attention, §4). Try first."""

import torch


def allowed_pairs(length: int, max_len: int) -> int:
    """Exercise 1: row i < length sees keys 0…i (i + 1 of them); each of the max_len − length pad rows sees every
    real key (the target mask hides pad keys, not pad queries). Toy batch: 12, 15 and 5."""
    return length * (length + 1) // 2 + (max_len - length) * length


def mask_from_lengths(lengths: torch.Tensor, max_len: int) -> torch.Tensor:
    positions = torch.arange(max_len)  # (max_len,)
    return (positions[None, :] < lengths[:, None])[:, None, None, :]  # (batch, max_len) → (batch, 1, 1, max_len)


def window_mask(tokens: torch.Tensor, pad_idx: int, radius: int) -> torch.Tensor:
    size = tokens.size(1)
    i, j = torch.arange(size)[:, None], torch.arange(size)[None, :]  # (len, 1), (1, len)
    band = (i - j).abs() <= radius  # (len, len): the centred window
    real_keys = (tokens != pad_idx)[:, None, None, :]  # (batch, 1, 1, len)
    return band[None, None] & real_keys  # (batch, 1, len, len)


def local_mask(size: int, window: int) -> torch.Tensor:
    ones = torch.ones(size, size, dtype=torch.bool)
    return (ones.tril() & ones.triu(-(window - 1)))[None, None]  # (1, 1, size, size): 0 <= i - j < window


QUIZ = {"q1": 2, "q2": "b", "q3": 2560}  # q1: key_padding_mask=src_mask (True = ignore) leaves the 2 pads

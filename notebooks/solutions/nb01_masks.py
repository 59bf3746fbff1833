"""Reference solutions of notebook 01's exercises (masks, §3.2.3; restricted self-attention, §4). Try first."""

import torch

# Exercise 1, by hand: sentence 0 ("the cat sat" + 2 pads): rows 0…4 allow 1, 2, 3, 3, 3 keys = 12;
# sentence 1 (5 words, no pad): 1 + 2 + 3 + 4 + 5 = 15; sentence 2 ("hello" + 4 pads): 1 key per row = 5.
ALLOWED_PAIRS = (12, 15, 5)


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


QUIZ = {"q1": "b", "q2": "b", "q3": 2560}

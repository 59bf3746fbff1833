"""Reference solutions of notebook 01's exercises (masks, §3.2.3). Try the exercises first."""

import torch


def padding_mask(tokens: torch.Tensor, pad_idx: int) -> torch.Tensor:
    return (tokens != pad_idx)[:, None, None, :]  # (batch, len) → (batch, 1, 1, len)


def subsequent_mask(size: int) -> torch.Tensor:
    return torch.ones(size, size, dtype=torch.bool).tril()[None, None]  # (1, 1, size, size)


def target_mask(tgt: torch.Tensor, pad_idx: int) -> torch.Tensor:
    return padding_mask(tgt, pad_idx) & subsequent_mask(tgt.size(1))  # (batch, 1, len, len)


def local_mask(size: int, window: int) -> torch.Tensor:
    ones = torch.ones(size, size, dtype=torch.bool)
    return (ones.tril() & ones.triu(-(window - 1)))[None, None]  # (1, 1, size, size): 0 <= i - j < window

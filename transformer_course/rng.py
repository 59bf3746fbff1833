"""The random states a training run saves and restores, so that resuming continues the same random stream
(:mod:`transformer_course.checkpoint` writes them into every checkpoint the training loop saves)."""

from __future__ import annotations

import random

import torch

__all__ = ["rng_states", "set_rng_states"]


def rng_states() -> dict:
    """The random number generators a training step uses: torch (CPU and CUDA) and Python's ``random``."""
    version, internal, gauss = random.getstate()
    states = {"torch": torch.get_rng_state(), "python": [version, list(internal), gauss]}
    if torch.cuda.is_available():
        states["cuda"] = torch.cuda.get_rng_state_all()
    return states


def set_rng_states(states: dict) -> None:
    """Put back the generator states :func:`rng_states` returned (resume continues the same random stream)."""
    torch.set_rng_state(states["torch"])
    version, internal, gauss = states["python"]
    random.setstate((version, tuple(internal), gauss))
    if "cuda" in states and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(states["cuda"])

"""A toy model trained in seconds on a CPU: copy (or reverse) a sequence of symbols (notebooks 08–10).

A model that has learned something gives the decoding notebook real choices to make and the attention
notebook real patterns to show (copy: a diagonal; reverse: an anti-diagonal), without a download.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch

from ..config import Config, get_preset
from ..data import toy_data
from ..model import Transformer
from .distributed import Distributed
from .loop import fit
from .options import RunOptions

__all__ = ["train_toy_model"]


@contextlib.contextmanager
def _torch_threads(n: int) -> Iterator[None]:
    """Run the block with ``n`` torch threads, then put the caller's thread count back, whatever happens."""
    threads = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def train_toy_model(
    task: str = "copy",
    steps: int = 400,
    *,
    config: Config | None = None,
    vocab_size: int = 14,
    min_len: int = 4,
    max_len: int = 10,
    batch_size: int = 64,
    seed: int = 0,
    progress: bool = False,
) -> Transformer:
    """A small model that learns to copy (or reverse) sequences of symbols on a CPU in seconds.

    ``config`` defaults to the ``toy-copy`` / ``toy-reverse`` preset. Returns the model in eval mode;
    its vocabulary is ``toy_vocab(vocab_size)`` (symbol ids 4 … vocab_size − 1, the specials first).
    """
    if task not in ("copy", "reverse"):
        raise ValueError(f"task must be 'copy' or 'reverse', got {task!r}")
    config = (config or get_preset(f"toy-{task}")).replace(seed=seed)
    data = toy_data(
        task,
        n_train=steps * batch_size,
        n_val=batch_size,
        vocab_size=vocab_size,
        min_len=min_len,
        max_len=max_len,
        batch_size=batch_size,
        seed=seed,
    )
    with _torch_threads(1):  # matrices this small: syncing several threads costs more than the arithmetic
        options = RunOptions(epochs=1, max_steps=steps, device="cpu", progress=progress)
        result = fit(config, data, options, dist=Distributed())  # one process, whatever torchrun's environment says
    return result.model

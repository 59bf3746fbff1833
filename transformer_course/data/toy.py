"""Toy tasks: copy and reverse, small enough to learn on a laptop CPU in minutes (notebooks 08–10;
paper §5 "Training" at toy scale).

A toy pair is a random sequence of symbol ids and its copy (or its reverse). The ids start after the
four specials, so a toy task uses the same :class:`Batch`, masks and model as real translation:

    toy_pairs("reverse", n=1, vocab_size=11)  →  [([10, 7, 4, 6, 8, 7, 7], [7, 7, 8, 6, 4, 7, 10])]
    toy_vocab(11).itos                        →  ['<pad>', '<unk>', '<s>', '</s>', '4', '5', …, '10']

(ids in ``[4, vocab_size)``; the outputs above are what these calls print, seed 0.)
"""

from __future__ import annotations

import random
from collections.abc import Iterator

from .batching import Batch, PairDataset, collate
from .vocab import SPECIALS, Vocab

__all__ = ["TOY_TASKS", "toy_batches", "toy_dataset", "toy_pairs", "toy_vocab"]

TOY_TASKS = ("copy", "reverse")


def toy_pairs(
    task: str = "copy", n: int = 1000, vocab_size: int = 11, min_len: int = 1, max_len: int = 10, seed: int = 0
) -> list[tuple[list[int], list[int]]]:
    """``n`` random (source, target) pairs of ids in ``[4, vocab_size)`` (no specials).

    ``copy``: the target equals the source. ``reverse``: the target is the source backwards.
    """
    if task not in TOY_TASKS:
        raise ValueError(f"unknown toy task {task!r}; choose one of {list(TOY_TASKS)}")
    if vocab_size <= len(SPECIALS):
        raise ValueError(
            f"vocab_size={vocab_size} leaves no room for words after the {len(SPECIALS)} specials; "
            f"use vocab_size >= {len(SPECIALS) + 2}"
        )
    if not 1 <= min_len <= max_len:
        raise ValueError(f"need 1 <= min_len <= max_len, got min_len={min_len}, max_len={max_len}")
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        src = [rng.randrange(len(SPECIALS), vocab_size) for _ in range(rng.randint(min_len, max_len))]
        pairs.append((src, list(src) if task == "copy" else src[::-1]))
    return pairs


def toy_batches(
    task: str = "copy",
    n_batches: int = 100,
    batch_size: int = 32,
    vocab_size: int = 11,
    min_len: int = 1,
    max_len: int = 10,
    seed: int = 0,
) -> Iterator[Batch]:
    """``n_batches`` batches of a toy task, each from :func:`toy_pairs` (the same ``seed`` → the same batches)."""
    pairs = toy_pairs(task, n_batches * batch_size, vocab_size, min_len, max_len, seed)
    for b in range(n_batches):
        yield collate(pairs[b * batch_size : (b + 1) * batch_size])


def toy_dataset(
    task: str = "copy", n: int = 1000, vocab_size: int = 11, min_len: int = 1, max_len: int = 10, seed: int = 0
) -> PairDataset:
    """A toy task as a :class:`PairDataset` (use it with ``DataLoader(..., collate_fn=collate)``)."""
    return PairDataset.from_pairs(toy_pairs(task, n, vocab_size, min_len, max_len, seed))


def toy_vocab(vocab_size: int) -> Vocab:
    """The vocabulary of a toy task: the specials, then the symbols ``"4" … str(vocab_size - 1)``."""
    return Vocab.from_dict({"itos": list(SPECIALS) + [str(i) for i in range(len(SPECIALS), vocab_size)]})

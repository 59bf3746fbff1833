"""The batch streams the training loop reads: a toy task or Multi30k as :class:`TrainingData`
(notebooks 08 and 11; paper §5.1 "Training Data and Batching", §5.2 for training on several GPUs).

``fit`` (in ``transformer_course.train``) needs three things from the data: the two vocabularies, the
batches of epoch ``e`` from batch ``start`` on (so that a resumed run continues mid-epoch with exactly the
batches it would have seen), and the validation batches. With several processes (DDP) every rank gets the
same number of batches and no pair twice in one epoch.

    toy_data("reverse")  /  multi30k_data(config)  ──▶  TrainingData(src_vocab, tgt_vocab,
                                                        train_batches(epoch, start), val_batches())
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import torch

from ..config import Config
from .batching import Batch, TokenBatchSampler, collate
from .multi30k import prepare_multi30k
from .toy import toy_pairs, toy_vocab
from .vocab import Vocab

__all__ = ["TrainingData", "multi30k_data", "toy_data", "toy_vocab"]  # toy_vocab lives in .toy


class TrainingData:
    """Vocabularies plus batches: ``train_batches(epoch, start)`` yields the batches of one epoch from
    batch number ``start`` on (resume mid-epoch), the same batches for the same epoch every time;
    ``val_batches()`` yields the validation batches. ``src_lang``/``tgt_lang`` name the languages (the
    checkpoint keeps them, so translation tokenizes the source as the training did)."""

    def __init__(
        self,
        src_vocab: Vocab,
        tgt_vocab: Vocab,
        train_batches: Callable[[int, int], Iterator[Batch]],
        val_batches: Callable[[], Iterable[Batch]],
        batches_per_epoch: Callable[[int], int] | None = None,
        src_lang: str = "de",
        tgt_lang: str = "en",
    ):
        self.src_vocab, self.tgt_vocab = src_vocab, tgt_vocab
        self.src_lang, self.tgt_lang = src_lang, tgt_lang
        self.train_batches, self.val_batches = train_batches, val_batches
        self.batches_per_epoch = batches_per_epoch or (lambda epoch: None)


def toy_data(
    task: str = "copy",
    n_train: int = 2000,
    n_val: int = 200,
    vocab_size: int = 14,
    min_len: int = 4,
    max_len: int = 10,
    batch_size: int = 64,
    seed: int = 0,
    rank: int = 0,
    world_size: int = 1,
) -> TrainingData:
    """A toy copy/reverse task as :class:`TrainingData`. Each epoch shuffles the training pairs with a
    generator seeded by (seed, epoch); with ``world_size`` > 1 each rank takes every world_size-th batch."""
    train = toy_pairs(task, n_train, vocab_size, min_len, max_len, seed)
    val = toy_pairs(task, n_val, vocab_size, min_len, max_len, seed + 1)
    n_batches = len(train) // (batch_size * world_size)  # every rank gets the same number of batches

    def train_batches(epoch: int, start: int = 0) -> Iterator[Batch]:
        g = torch.Generator().manual_seed(seed * 1000 + epoch)
        order = torch.randperm(len(train), generator=g).tolist()
        for b in range(start, n_batches):
            first = (b * world_size + rank) * batch_size
            yield collate([train[i] for i in order[first : first + batch_size]])

    def val_batches() -> Iterator[Batch]:
        for first in range(rank * batch_size, len(val), batch_size * world_size):
            yield collate(val[first : first + batch_size])

    vocab = toy_vocab(vocab_size)
    return TrainingData(vocab, vocab, train_batches, val_batches, lambda epoch: n_batches)


def multi30k_data(
    config: Config,
    root: str | Path = "data",
    rank: int = 0,
    world_size: int = 1,
    limit: int | None = None,
    progress: bool = True,
) -> TrainingData:
    """Multi30k de→en as :class:`TrainingData`: :func:`prepare_multi30k` (download, verify, tokenize,
    vocabularies from train only) and its length-bucketed :class:`TokenBatchSampler` with
    ``config.tokens_per_batch``, shuffled per (seed, epoch) and shared between DDP ranks."""
    if progress:
        print(f"preparing Multi30k in {root}/ (download, verify, tokenize, vocabularies) …", flush=True)
    m = prepare_multi30k(root, min_freq=config.min_freq, shared_vocab=config.shared_vocab, limit=limit)
    train_sampler = TokenBatchSampler(
        m.train, config.tokens_per_batch, shuffle=True, seed=config.seed, num_replicas=world_size, rank=rank
    )
    val_sampler = TokenBatchSampler(m.val, config.tokens_per_batch, shuffle=False, num_replicas=world_size, rank=rank)
    if progress:
        print(
            f"Multi30k: {len(m.train):,} training pairs, vocabularies de {len(m.src_vocab):,} / "
            f"en {len(m.tgt_vocab):,}, {len(train_sampler)} batches per epoch per process",
            flush=True,
        )

    def train_batches(epoch: int, start: int = 0) -> Iterator[Batch]:
        train_sampler.set_epoch(epoch)
        for indices in itertools.islice(iter(train_sampler), start, None):
            yield collate([m.train[i] for i in indices])

    def val_batches() -> Iterator[Batch]:
        for indices in val_sampler:
            yield collate([m.val[i] for i in indices])

    def batches_per_epoch(epoch: int) -> int:
        train_sampler.set_epoch(epoch)
        return len(train_sampler)

    return TrainingData(m.src_vocab, m.tgt_vocab, train_batches, val_batches, batches_per_epoch, m.src_lang, m.tgt_lang)

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

import hashlib
import itertools
import json
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import torch

from ..config import Config
from ..files import atomic_write_text
from .batching import Batch, PairDataset, TokenBatchSampler, collate
from .corpus import sha256_file
from .download import multi30k_path
from .multi30k import Multi30k, check_limit, encode_split, load_pairs, prepare_multi30k
from .subword import SubwordTokenizer
from .toy import toy_pairs, toy_vocab
from .vocab import EOS, Vocab

__all__ = [
    "REVERSED_START",
    "TrainingData",
    "both_ways_batch",
    "multi30k_data",
    "prepare_multi30k_subwords",
    "subword_tokenizer",
    "toy_data",
    "toy_vocab",
]  # toy_vocab lives in .toy


class TrainingData:
    """Vocabularies plus batches: ``train_batches(epoch, start)`` yields the batches of one epoch from
    batch number ``start`` on (resume mid-epoch), the same batches for the same epoch every time;
    ``val_batches()`` yields the validation batches. ``src_lang``/``tgt_lang`` name the languages (the
    checkpoint keeps them, so translation tokenizes the source as the training did). ``tokenizer`` is the
    :class:`SubwordTokenizer` of a subword run (None: spaCy words); checkpoints carry it."""

    def __init__(
        self,
        src_vocab: Vocab,
        tgt_vocab: Vocab,
        train_batches: Callable[[int, int], Iterator[Batch]],
        val_batches: Callable[[], Iterable[Batch]],
        batches_per_epoch: Callable[[int], int] | None = None,
        src_lang: str = "de",
        tgt_lang: str = "en",
        tokenizer: SubwordTokenizer | None = None,
    ):
        if tokenizer is not None:
            tokenizer.check_vocabularies(src_vocab, tgt_vocab)
        self.tokenizer = tokenizer
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
    if config.tokenizer == "bpe":
        m, tokenizer = prepare_multi30k_subwords(root, config.subword_vocab, config.min_freq, limit)
    else:
        m = prepare_multi30k(root, min_freq=config.min_freq, shared_vocab=config.shared_vocab, limit=limit)
        tokenizer = None
    lengths = m.train.lengths()
    if config.both_directions:  # index len(m.train) + i is pair i reversed (both_ways_batch)
        lengths += [(t, s) for s, t in lengths]
    train_sampler = TokenBatchSampler(
        lengths, config.tokens_per_batch, shuffle=True, seed=config.seed, num_replicas=world_size, rank=rank
    )
    val_sampler = TokenBatchSampler(m.val, config.tokens_per_batch, shuffle=False, num_replicas=world_size, rank=rank)
    if progress:
        print(
            f"Multi30k: {len(m.train):,} training pairs, "
            + (
                f"one shared subword vocabulary of {len(tokenizer):,} pieces"
                if tokenizer is not None
                else f"vocabularies de {len(m.src_vocab):,} / en {len(m.tgt_vocab):,}"
            )
            + (", both directions" if config.both_directions else "")
            + f", {len(train_sampler)} batches per epoch per process",
            flush=True,
        )

    def train_batches(epoch: int, start: int = 0) -> Iterator[Batch]:
        train_sampler.set_epoch(epoch)
        for indices in itertools.islice(iter(train_sampler), start, None):
            yield (
                both_ways_batch(m.train, indices) if config.both_directions else collate([m.train[i] for i in indices])
            )

    def val_batches() -> Iterator[Batch]:
        for indices in val_sampler:
            yield collate([m.val[i] for i in indices])

    def batches_per_epoch(epoch: int) -> int:
        train_sampler.set_epoch(epoch)
        return len(train_sampler)

    return TrainingData(
        m.src_vocab, m.tgt_vocab, train_batches, val_batches, batches_per_epoch, m.src_lang, m.tgt_lang, tokenizer
    )


REVERSED_START = EOS  # the first decoder input of a reversed pair's target: never an input otherwise


def both_ways_batch(train: PairDataset, indices: list[int]) -> Batch:
    """The batch of ``indices`` into ``train`` and its reversed pairs, as one sequence of ``2 · len(train)``
    pairs: index ``i`` below ``len(train)`` is pair ``i``, index ``len(train) + i`` is pair ``i`` with source and
    target swapped. A reversed pair's target starts with :data:`REVERSED_START` (``</s>``)
    where the others start with ``<s>``: the decoder's first input says which language to write, and the forward
    direction, ``<s>`` first, is what decoding asks for (Johnson et al., 2017, name the language on the source side;
    here the source side stays as it is, so nothing changes at inference)."""
    n = len(train)
    batch = collate([train[i] if i < n else train[i - n][::-1] for i in indices])
    reversed_rows = torch.tensor([i >= n for i in indices])  # (B,)
    batch.tgt_in[reversed_rows, 0] = REVERSED_START  # tgt_in (B, T): <s> y1 …, now </s> y1 … for those rows
    return batch


def subword_tokenizer(
    root: str | Path = "data",
    vocab_size: int = 8000,
    min_frequency: int = 2,
    limit: int | None = None,
    src_lang: str = "de",
    tgt_lang: str = "en",
    cache: bool = True,
) -> SubwordTokenizer:
    """The joint ``src_lang`` + ``tgt_lang`` :class:`SubwordTokenizer` learned on the **train split only**
    (its first ``limit`` pairs). Cached in ``root/cache/`` under a key made of the train files' SHA-256, the
    settings and the ``tokenizers`` version, written atomically: the same data and settings give the same
    tokenizer without training again; other files or settings never reuse it."""
    import tokenizers  # the library version is part of the cache key

    paths = [multi30k_path("train", lang, root) for lang in (src_lang, tgt_lang)]
    key = json.dumps(
        {
            "train_sha256": [sha256_file(p) for p in paths],
            "languages": [src_lang, tgt_lang],
            "vocab_size": vocab_size,
            "min_frequency": min_frequency,
            "limit": limit,
            "tokenizers": tokenizers.__version__,
            "pre_tokenizer": "metaspace+punctuation",  # what SubwordTokenizer.train builds now
        },
        sort_keys=True,
    )
    cached = Path(root) / "cache" / f"subword-{hashlib.sha256(key.encode()).hexdigest()[:16]}.json"
    if cache and cached.is_file():
        try:
            return SubwordTokenizer.from_json(cached.read_text(encoding="utf-8"))
        except (ValueError, TypeError):  # a damaged cache file is learned again and replaced
            pass
    pairs = [(s, t) for s, t in load_pairs("train", root, src_lang, tgt_lang) if s.strip() and t.strip()][:limit]
    tokenizer = SubwordTokenizer.train([s for s, _ in pairs] + [t for _, t in pairs], vocab_size, min_frequency)
    if cache:
        cached.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(cached, tokenizer.to_json())
    return tokenizer


def prepare_multi30k_subwords(
    root: str | Path = "data",
    vocab_size: int = 8000,
    min_frequency: int = 2,
    limit: int | None = None,
    src_lang: str = "de",
    tgt_lang: str = "en",
    tokenizer: SubwordTokenizer | None = None,
) -> tuple[Multi30k, SubwordTokenizer]:
    """Multi30k on subwords: :func:`subword_tokenizer` (train split only, or the ``tokenizer`` given) encodes
    every split into pieces of one shared vocabulary (``src_vocab is tgt_vocab``). ``limit``: the first
    ``limit`` pairs of each split. Pairs with an empty side are dropped."""
    check_limit(limit)
    if tokenizer is None:
        tokenizer = subword_tokenizer(root, vocab_size, min_frequency, limit, src_lang, tgt_lang)
    vocab = tokenizer.vocab()
    splits = []
    for split in ("train", "val", "test"):
        pairs = [(s, t) for s, t in load_pairs(split, root, src_lang, tgt_lang) if s.strip() and t.strip()][:limit]
        src_text, tgt_text = [s for s, _ in pairs], [t for _, t in pairs]
        pieces = tokenizer.encode_many(src_text), tokenizer.encode_many(tgt_text)
        splits.append(encode_split(*pieces, src_text, tgt_text, vocab, vocab))
    return Multi30k(*splits, vocab, vocab, src_lang, tgt_lang), tokenizer

"""Multi30k task 1, German → English: the raw sentence pairs and the whole pipeline to training-ready
datasets (notebook 11; paper §5.1 "Training Data and Batching" at course scale: 29,000 training pairs
instead of the "about 4.5 million sentence pairs" of WMT 2014).

    download_multi30k ──▶ data/*.gz (verified) ──tokenize_file──▶ tokens ──Vocab.build (train only)──▶
    Vocab.encode ──▶ PairDataset per split ──Multi30k.loader──▶ Batch es by length

The files come through :mod:`.download` (mirror, deadline, size limit, SHA-256). Why not torchtext: its
last release (0.18, 2024) no longer imports with current PyTorch (``OSError: … libtorchtext.so: undefined
symbol …``) and is no longer developed; everything it did for this course is a few dozen readable lines in
this package.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import torch

from .batching import PairDataset, TokenBatchSampler, collate
from .corpus import check_aligned, read_lines
from .download import multi30k_path
from .tokenization import tokenize_file
from .vocab import Vocab

__all__ = ["Multi30k", "load_pairs", "prepare_multi30k"]  # and the helpers loaders.py shares: check_limit, encode_split


def check_limit(limit) -> None:
    """``limit``: the first ``limit`` pairs of each split (a positive integer), or None for all of them."""
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ValueError(f"limit must be a positive number of pairs or None (everything), got limit={limit}")


def check_languages(src_lang: str, tgt_lang: str) -> None:
    if src_lang == tgt_lang:
        raise ValueError(f"src_lang and tgt_lang are both {src_lang!r}; translate between two languages")


def encode_split(src_tokens, tgt_tokens, src_text, tgt_text, src_vocab: Vocab, tgt_vocab: Vocab) -> PairDataset:
    """One split as a :class:`PairDataset`: each side's tokens encoded with its vocabulary, the text kept beside."""
    return PairDataset(
        [src_vocab.encode(t) for t in src_tokens],
        [tgt_vocab.encode(t) for t in tgt_tokens],
        src_text,
        tgt_text,
        src_tokens=src_tokens,
        tgt_tokens=tgt_tokens,
    )


def load_pairs(
    split: str, root: str | os.PathLike = "data", src_lang: str = "de", tgt_lang: str = "en", download: bool = True
) -> list[tuple[str, str]]:
    """Raw (source sentence, target sentence) pairs of a Multi30k split: ``train``, ``val`` or ``test``."""
    check_languages(src_lang, tgt_lang)
    src_path = multi30k_path(split, src_lang, root, download)
    tgt_path = multi30k_path(split, tgt_lang, root, download)
    src_lines, tgt_lines = read_lines(src_path), read_lines(tgt_path)
    check_aligned(src_lines, tgt_lines, str(src_path), str(tgt_path))
    return list(zip(src_lines, tgt_lines))


@dataclass
class Multi30k:
    """The three splits as :class:`PairDataset` s and the vocabularies built on ``train``."""

    train: PairDataset
    val: PairDataset
    test: PairDataset
    src_vocab: Vocab
    tgt_vocab: Vocab
    src_lang: str = "de"
    tgt_lang: str = "en"

    def loader(
        self,
        split: str = "train",
        tokens_per_batch: int = 4000,
        shuffle: bool | None = None,
        seed: int = 0,
        num_replicas: int = 1,
        rank: int = 0,
        **loader_options,
    ) -> torch.utils.data.DataLoader:
        """A ``DataLoader`` of :class:`Batch` es over ``split`` with a :class:`TokenBatchSampler`
        (shuffled for train, in length order otherwise). Call ``loader.batch_sampler.set_epoch(e)`` each epoch."""
        if split not in ("train", "val", "test"):
            raise ValueError(f"unknown split {split!r}; choose one of ['train', 'val', 'test']")
        dataset = getattr(self, split)
        sampler = TokenBatchSampler(
            dataset,
            tokens_per_batch,
            shuffle=(split == "train") if shuffle is None else shuffle,
            seed=seed,
            num_replicas=num_replicas,
            rank=rank,
        )
        return torch.utils.data.DataLoader(dataset, batch_sampler=sampler, collate_fn=collate, **loader_options)


def prepare_multi30k(
    root: str | os.PathLike = "data",
    min_freq: int = 2,
    shared_vocab: bool = False,
    limit: int | None = None,
    src_lang: str = "de",
    tgt_lang: str = "en",
    src_vocab: Vocab | None = None,
    tgt_vocab: Vocab | None = None,
    download: bool = True,
    cache: bool = True,
) -> Multi30k:
    """Multi30k task 1 ready for training: download + verify, tokenize (cached in ``root/cache``), build the
    vocabularies on the train split only, encode every split (notebook 11, the CLI and the trainer use it).

    ``limit``: keep only the first ``limit`` pairs of each split (fast mode, CI). ``src_vocab``/``tgt_vocab``:
    reuse the vocabularies of a trained model instead of building new ones. ``shared_vocab``: one vocabulary
    for both languages (for ``tie_embeddings="all"``). Pairs with an empty side are dropped.
    """
    check_limit(limit)
    check_languages(src_lang, tgt_lang)
    cache_dir = Path(root) / "cache" if cache else None
    texts, tokens = {}, {}
    for split in ("train", "val", "test"):
        side_texts, side_tokens = [], []
        for lang in (src_lang, tgt_lang):
            path = multi30k_path(split, lang, root, download)
            side_texts.append(read_lines(path))
            side_tokens.append(tokenize_file(path, lang, cache_dir, limit))  # only the first `limit` lines
        check_aligned(side_texts[0], side_texts[1], f"{split}.{src_lang}", f"{split}.{tgt_lang}")
        keep = [i for i, (s, t) in enumerate(zip(*side_tokens)) if s and t][:limit]
        texts[split] = [[lines[i] for i in keep] for lines in side_texts]
        tokens[split] = [[toks[i] for i in keep] for toks in side_tokens]
    src_train, tgt_train = tokens["train"]
    if src_vocab is None or tgt_vocab is None:
        if shared_vocab:
            src_vocab = tgt_vocab = Vocab.build_shared(src_train, tgt_train, min_freq)
        else:
            src_vocab, tgt_vocab = Vocab.build(src_train, min_freq), Vocab.build(tgt_train, min_freq)
    splits = [encode_split(*tokens[split], *texts[split], src_vocab, tgt_vocab) for split in ("train", "val", "test")]
    return Multi30k(*splits, src_vocab, tgt_vocab, src_lang, tgt_lang)

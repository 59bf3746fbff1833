"""Batches: padding, the shifted target and its masks, datasets of id pairs, and batching by length
(notebooks 08 and 11; paper §5.1 "Training Data and Batching", §3.1 for the shifted decoder input).

The paper batches "sentence pairs together by approximate sequence length"; each batch holds about
25,000 source and 25,000 target tokens. This module does the same at course scale:

    (src ids, tgt ids) pairs ──TokenBatchSampler──▶ lists of indices ──collate──▶ Batch
                                                  (src, tgt_in, tgt_out, src_mask, tgt_mask, n_tokens)

Source sequences carry no special tokens; :func:`collate` wraps every target as ``<s> … </s>`` and
:meth:`Batch.make` shifts it into ``tgt_in`` (what the decoder reads) and ``tgt_out`` (what it must predict).
"""

from __future__ import annotations

import numbers
import random
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor
from torch.utils.data import Dataset, Sampler

from ..masks import padding_mask, target_mask
from .corpus import check_aligned
from .vocab import BOS, EOS, PAD, UNK

__all__ = [
    "Batch",
    "PairDataset",
    "TokenBatchSampler",
    "collate",
    "pad_sequences",
    "padding_fraction",
    "word_dropout",
]


@dataclass
class Batch:
    """One training batch (notebook 08), built from ``src`` and a target wrapped as ``<s> … </s>``.

    The decoder reads ``tgt_in`` = target without its last token and must predict ``tgt_out`` = target
    without its first token ("teacher forcing", outputs "shifted right", paper §3.1).
    """

    src: Tensor  # (B, S) source ids
    tgt_in: Tensor  # (B, T) decoder input: <s> y1 … yn (padded)
    tgt_out: Tensor  # (B, T) decoder target: y1 … yn </s> (padded)
    src_mask: Tensor  # (B, 1, 1, S) True = real source token
    tgt_mask: Tensor  # (B, 1, T, T) True = may attend (no padding, no future)
    n_tokens: int  # non-pad tokens in tgt_out: what the loss is averaged over

    @classmethod
    def make(cls, src: Tensor, tgt: Tensor, pad: int = PAD) -> Batch:
        """``src`` (B, S) and ``tgt`` (B, T+1) holding ``<s> … </s>`` padded with ``pad``."""
        if src.dim() != 2 or tgt.dim() != 2:
            raise ValueError(
                f"Batch.make expects src and tgt of shape (batch, len), got {tuple(src.shape)} and "
                f"{tuple(tgt.shape)}; add a batch dimension with .unsqueeze(0)"
            )
        if src.size(0) != tgt.size(0):
            raise ValueError(f"src has {src.size(0)} sentences but tgt has {tgt.size(0)}; they must pair up")
        if tgt.size(1) < 2:
            raise ValueError(
                f"tgt needs at least 2 positions (<s> and </s>), got shape {tuple(tgt.shape)}; "
                "wrap each target as [BOS, *ids, EOS] (collate does this)"
            )
        tgt_in = tgt[:, :-1]  # (B, T)
        tgt_out = tgt[:, 1:]  # (B, T)
        return cls(
            src=src,
            tgt_in=tgt_in,
            tgt_out=tgt_out,
            src_mask=padding_mask(src, pad),  # (B, 1, 1, S)
            tgt_mask=target_mask(tgt_in, pad),  # (B, 1, T, T)
            n_tokens=int((tgt_out != pad).sum()),
        )

    def to(self, device: torch.device | str, non_blocking: bool = False) -> Batch:
        tensors = (self.src, self.tgt_in, self.tgt_out, self.src_mask, self.tgt_mask)
        return Batch(*(t.to(device, non_blocking=non_blocking) for t in tensors), self.n_tokens)

    def __len__(self) -> int:
        return self.src.size(0)

    @property
    def n_src_tokens(self) -> int:
        return int(self.src_mask.sum())


def pad_sequences(seqs: Sequence[Sequence[int] | Tensor], pad: int = PAD, multiple: int = 1) -> Tensor:
    """Lists of ids of different lengths → one (len(seqs), longest) LongTensor padded with ``pad``.

    ``multiple`` > 1 pads the length up to a multiple of it (8: lengths 8, 16, 24 …), so that batches come in a
    few shapes: ``torch.compile`` without dynamic shapes compiles one graph per shape."""
    if len(seqs) == 0:
        raise ValueError("pad_sequences got no sequences; a batch needs at least one sentence")
    if not isinstance(multiple, int) or multiple < 1:
        raise ValueError(f"multiple must be a positive integer (1: no bucket padding), got multiple={multiple!r}")
    longest = -(-max(len(s) for s in seqs) // multiple) * multiple  # rounded up to the multiple
    out = torch.full((len(seqs), longest), pad, dtype=torch.long)  # (B, L)
    for i, s in enumerate(seqs):
        out[i, : len(s)] = torch.as_tensor(s, dtype=torch.long)
    return out


def collate(pairs: Sequence[tuple[Sequence[int], Sequence[int]]], pad: int = PAD, multiple: int = 1) -> Batch:
    """(src ids, tgt ids) pairs without specials → a :class:`Batch`; each target becomes ``<s> … </s>``.
    ``multiple``: pad both sides' lengths up to a multiple of it (see :func:`pad_sequences`)."""
    for i, (src, _) in enumerate(pairs):
        if len(src) == 0:
            raise ValueError(
                f"pair {i} has an empty source: it would be all padding, and attention over no key is "
                "undefined (NaN); drop empty sentences before batching"
            )
    src = pad_sequences([s for s, _ in pairs], pad, multiple)  # (B, S)
    tgt = pad_sequences([[BOS, *map(int, t), EOS] for _, t in pairs], pad)  # (B, T+1)
    if multiple > 1:  # tgt_in and tgt_out are one shorter than tgt: pad tgt to a multiple, plus one
        width = -(-(tgt.size(1) - 1) // multiple) * multiple + 1
        tgt = torch.cat([tgt, tgt.new_full((tgt.size(0), width - tgt.size(1)), pad)], dim=1)  # (B, T'+1)
    return Batch.make(src, tgt, pad)


def word_dropout(batch: Batch, rate: float, on: str = "both", generator: torch.Generator | None = None) -> Batch:
    """``batch`` with each input token id replaced by ``<unk>`` with probability ``rate`` (Sennrich et al., 2016,
    drop whole words of the input; Gal and Ghahramani, 2016): the source (``on="source"``), the decoder's input
    ``tgt_in`` (``"target"``) or both. Padding, ``<s>`` and ``</s>`` stay; ``tgt_out``, what the model must
    predict, and the masks are unchanged. Training only: ``fit`` applies it to the batches a step sees."""
    if on not in ("both", "source", "target"):
        raise ValueError(f"word_dropout's on must be 'both', 'source' or 'target', got on={on!r}")

    def drop(ids: Tensor) -> Tensor:
        hit = torch.rand(ids.shape, generator=generator, device=ids.device) < rate  # (B, L)
        hit &= (ids != PAD) & (ids != BOS) & (ids != EOS)  # only words: the structure stays
        return ids.masked_fill(hit, UNK)

    src = drop(batch.src) if on in ("both", "source") else batch.src
    tgt_in = drop(batch.tgt_in) if on in ("both", "target") else batch.tgt_in
    return Batch(src, tgt_in, batch.tgt_out, batch.src_mask, batch.tgt_mask, batch.n_tokens)


class PairDataset(Dataset):
    """A ``torch.utils.data.Dataset`` of (source ids, target ids) pairs, without specials.

    ``src_text``/``tgt_text`` optionally keep the original sentences (for sacreBLEU and for showing examples),
    ``src_tokens``/``tgt_tokens`` their tokens (for tokenized BLEU).
    """

    def __init__(
        self,
        src_ids: Sequence[Sequence[int]],
        tgt_ids: Sequence[Sequence[int]],
        src_text: Sequence[str] | None = None,
        tgt_text: Sequence[str] | None = None,
        src_tokens: Sequence[Sequence[str]] | None = None,
        tgt_tokens: Sequence[Sequence[str]] | None = None,
    ) -> None:
        check_aligned(src_ids, tgt_ids, "src_ids", "tgt_ids")
        self.src_ids = [list(s) for s in src_ids]
        self.tgt_ids = [list(t) for t in tgt_ids]
        for name, value in (
            ("src_text", src_text),
            ("tgt_text", tgt_text),
            ("src_tokens", src_tokens),
            ("tgt_tokens", tgt_tokens),
        ):
            if value is not None:
                check_aligned(src_ids, value, "src_ids", name)
            setattr(self, name, list(value) if value is not None else None)

    @classmethod
    def from_pairs(cls, pairs: Sequence[tuple[Sequence[int], Sequence[int]]]) -> PairDataset:
        return cls([s for s, _ in pairs], [t for _, t in pairs])

    def __len__(self) -> int:
        return len(self.src_ids)

    def __getitem__(self, i: int) -> tuple[list[int], list[int]]:
        return self.src_ids[i], self.tgt_ids[i]

    def lengths(self) -> list[tuple[int, int]]:
        """(source length, target length) of every pair, without specials: what the sampler sorts by."""
        return [(len(s), len(t)) for s, t in zip(self.src_ids, self.tgt_ids)]


class TokenBatchSampler(Sampler[list[int]]):
    """Yields lists of dataset indices whose padded batches hold at most ``tokens_per_batch`` tokens.

    Each epoch: shuffle the indices (seed + epoch), cut them into pools of ``pool_size`` pairs, sort each
    pool by (target length, source length), cut it greedily into batches so that
    ``batch size × max(longest source, longest target + 1) ≤ tokens_per_batch``, then shuffle the order
    of the batches. Similar lengths share a batch, so little is padding; the shuffles keep batches and their
    order different every epoch. Call :meth:`set_epoch` before each epoch.

    ``pool_size=None`` (one pool, the whole dataset; ties in length fall in random order) pads least: on
    Multi30k train with 4000 tokens per batch 6.3 % of all positions are padding (pools of 8,000 pairs:
    14.8 %; random batches: 57 %; every sentence padded to 72: 82 %; see ``benchmarks/padding.py``).

    With several processes (DDP), every rank builds the same batch list, keeps a multiple of
    ``num_replicas`` batches and takes every ``num_replicas``-th from ``rank``: all ranks get the same
    number of batches and no pair is seen by two ranks in one epoch.
    """

    def __init__(
        self,
        lengths: Sequence[tuple[int, int]] | PairDataset,
        tokens_per_batch: int = 4000,
        shuffle: bool = True,
        seed: int = 0,
        num_replicas: int = 1,
        rank: int = 0,
        pool_size: int | None = None,
    ) -> None:
        if isinstance(lengths, PairDataset):
            lengths = lengths.lengths()
        self.lengths = [(int(s), int(t)) for s, t in lengths]
        if not self.lengths:
            raise ValueError("TokenBatchSampler got an empty dataset; there is nothing to batch")
        if (
            not isinstance(tokens_per_batch, numbers.Integral)
            or isinstance(tokens_per_batch, bool)
            or tokens_per_batch <= 0
        ):
            raise ValueError(f"tokens_per_batch must be a positive integer, got tokens_per_batch={tokens_per_batch!r}")
        longest = max(self._cost(s, t) for s, t in self.lengths)
        if tokens_per_batch < longest:
            raise ValueError(
                f"tokens_per_batch={tokens_per_batch} is smaller than the longest pair, which alone needs "
                f"{longest} positions (target + </s>); raise tokens_per_batch to at least {longest} "
                "or drop the longest sentences"
            )
        if num_replicas < 1 or not 0 <= rank < num_replicas:
            raise ValueError(
                f"need num_replicas >= 1 and 0 <= rank < num_replicas, got num_replicas={num_replicas}, rank={rank}"
            )
        if pool_size is not None and pool_size < 1:
            raise ValueError(f"pool_size must be a positive number of pairs or None (one pool), got {pool_size}")
        self.tokens_per_batch = int(tokens_per_batch)
        self.shuffle = shuffle
        self.seed = seed
        self.num_replicas = num_replicas
        self.rank = rank
        self.pool_size = pool_size
        self.epoch = 0
        self._cache: tuple[int, list[list[int]]] | None = None

    @staticmethod
    def _cost(src_len: int, tgt_len: int) -> int:
        return max(src_len, tgt_len + 1)  # positions per sentence: source, or tgt_in/tgt_out (one special)

    def set_epoch(self, epoch: int) -> None:
        """Use the shuffles of ``epoch`` (every rank must call it with the same value)."""
        self.epoch = epoch

    def _all_batches(self) -> list[list[int]]:
        """The batches of this epoch over the whole dataset, in the order the ranks share them."""
        if self._cache is not None and self._cache[0] == self.epoch:
            return self._cache[1]
        rng = random.Random(self.seed * 1_000_003 + self.epoch)
        order = list(range(len(self.lengths)))
        if self.shuffle:
            rng.shuffle(order)  # random order among equal lengths, different every epoch
        pool_size = self.pool_size or len(order)
        batches: list[list[int]] = []
        for start in range(0, len(order), pool_size):
            pool = sorted(order[start : start + pool_size], key=lambda i: (self.lengths[i][1], self.lengths[i][0]))
            batch: list[int] = []
            widest = 0
            for i in pool:
                cost = self._cost(*self.lengths[i])
                if batch and (len(batch) + 1) * max(widest, cost) > self.tokens_per_batch:
                    batches.append(batch)
                    batch, widest = [], 0
                batch.append(i)
                widest = max(widest, cost)
            batches.append(batch)
        if self.shuffle:
            rng.shuffle(batches)
        keep = len(batches) - len(batches) % self.num_replicas  # the same count for every rank
        if keep == 0:
            raise ValueError(
                f"only {len(batches)} batches for {self.num_replicas} processes; lower tokens_per_batch "
                f"(now {self.tokens_per_batch}) or use fewer processes"
            )
        self._cache = (self.epoch, batches[:keep])
        return batches[:keep]

    def __iter__(self) -> Iterator[list[int]]:
        yield from self._all_batches()[self.rank :: self.num_replicas]

    def __len__(self) -> int:
        return len(self._all_batches()) // self.num_replicas


def padding_fraction(batches: Iterable[Batch]) -> dict[str, float]:
    """Fraction of padded positions in ``src``, in ``tgt_out`` and in both together (notebook 11)."""
    src_pad = src_all = tgt_pad = tgt_all = 0
    for batch in batches:
        src_all += batch.src.numel()
        src_pad += batch.src.numel() - batch.n_src_tokens
        tgt_all += batch.tgt_out.numel()
        tgt_pad += batch.tgt_out.numel() - batch.n_tokens
    return {"src": src_pad / src_all, "tgt": tgt_pad / tgt_all, "both": (src_pad + tgt_pad) / (src_all + tgt_all)}

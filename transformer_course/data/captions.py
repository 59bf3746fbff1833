"""The language model's corpus: Multi30k's English (or German) captions as one stream of subword ids, cut into
(batch, context + 1) rows, and the n-gram baselines its perplexity is measured against (notebook 12).

    train captions ──SubwordTokenizer.train (train only)──▶ pieces ──▶ </s> c₁ </s> c₂ </s> … (one id stream)
    stream ──random windows──▶ training rows (B, context + 1)    stream ──in order──▶ held-out rows (each id once)

The same byte-pair encoding as the translation model (:class:`~transformer_course.data.SubwordTokenizer`, §5.1),
learned on one language's train captions. ``</s>`` ends every caption, and the stream starts with one: after a
``</s>`` a new caption begins, so a prompt is ``</s>`` followed by its words and generation ends at the next
``</s>`` (GPT-2 uses its ``<|endoftext|>`` in the same two roles).

A row of ``context + 1`` ids gives ``context`` predictions (:func:`~transformer_course.model.lm_loss` shifts by one).
:meth:`Captions.eval_rows` cuts a split into rows that overlap by one id, so every id after the first is predicted
exactly once, and the baselines (:func:`unigram_perplexity`, :func:`bigram_perplexity`, add-k smoothing) predict the
same ids: the perplexities are comparable.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import Tensor

from .corpus import read_lines
from .download import multi30k_path
from .multi30k import check_limit
from .subword import SubwordTokenizer
from .vocab import EOS

__all__ = [
    "Captions",
    "best_k",
    "bigram_perplexity",
    "caption_stream",
    "prepare_captions",
    "unigram_perplexity",
]


def caption_stream(tokenizer: SubwordTokenizer, captions: Sequence[str]) -> Tensor:
    """Captions → one 1-D stream of ids: ``</s>`` then each caption's pieces followed by ``</s>``."""
    ids = [EOS]
    for pieces in tokenizer.encode_many(list(captions), ids=True):
        ids += pieces + [EOS]
    return torch.tensor(ids, dtype=torch.long)  # (L,)


@dataclass
class Captions:
    """One language's captions as id streams (``train``, ``valid``, ``test``: 1-D), with their tokenizer."""

    tokenizer: SubwordTokenizer
    train: Tensor
    valid: Tensor
    test: Tensor
    lang: str = "en"

    @property
    def vocab_size(self) -> int:
        return len(self.tokenizer)

    def split(self, name: str) -> Tensor:
        if name not in ("train", "valid", "test"):
            raise ValueError(f"unknown split {name!r}; choose one of ['train', 'valid', 'test']")
        return getattr(self, name)

    def train_rows(self, batch_size: int, context: int, generator: torch.Generator) -> Tensor:
        """One training batch: ``batch_size`` windows of ``context + 1`` ids at random places of the train stream
        (nanoGPT's ``get_batch``), drawn with ``generator`` → (batch_size, context + 1)."""
        starts = torch.randint(0, len(self.train) - context, (batch_size,), generator=generator)  # (B,)
        offsets = torch.arange(context + 1)  # (context + 1,)
        return self.train[starts[:, None] + offsets]  # (B, context + 1)

    def eval_rows(self, name: str, batch_size: int, context: int) -> Iterator[Tensor]:
        """A held-out split in order, as batches of rows (b, context + 1) that overlap by one id, so that every id
        but the first is predicted once; the last row is shorter when the stream does not fill it."""
        stream = self.split(name)
        starts = list(range(0, len(stream) - 1, context))
        rows = [stream[s : s + context + 1] for s in starts]  # each (≤ context + 1,)
        full = [r for r in rows if len(r) == context + 1]
        for first in range(0, len(full), batch_size):
            yield torch.stack(full[first : first + batch_size])  # (b, context + 1)
        for row in rows[len(full) :]:
            yield row[None]  # (1, r): the short last row alone


def prepare_captions(
    root: str | os.PathLike = "data",
    vocab_size: int = 2000,
    lang: str = "en",
    limit: int | None = None,
    download: bool = True,
) -> Captions:
    """Multi30k's ``lang`` captions (train, val, test2016) as id streams of a byte-pair tokenizer of
    ``vocab_size`` pieces learned on the train captions only. ``limit``: the first ``limit`` captions of each
    split (fast mode); empty lines are dropped."""
    check_limit(limit)
    if lang not in ("en", "de"):
        raise ValueError(f"the captions are Multi30k's 'en' or 'de', got lang={lang!r}")
    texts = {}
    for split, name in (("train", "train"), ("val", "valid"), ("test", "test")):
        lines = read_lines(multi30k_path(split, lang, Path(root), download))
        texts[name] = [line for line in lines if line.strip()][:limit]
    tokenizer = SubwordTokenizer.train(texts["train"], vocab_size)
    streams = {name: caption_stream(tokenizer, lines) for name, lines in texts.items()}
    return Captions(tokenizer, streams["train"], streams["valid"], streams["test"], lang)


# ---- the n-gram baselines ----------------------------------------------------------------------------------


def _ids(x) -> Tensor:
    ids = torch.as_tensor(x, dtype=torch.long).reshape(-1)  # (L,)
    if len(ids) < 2:
        raise ValueError(f"a stream needs at least 2 ids to predict one, got {len(ids)}")
    return ids


def _check_smoothing(vocab: int, k: float) -> None:
    if not isinstance(vocab, int) or vocab < 1:
        raise ValueError(f"vocab must be the vocabulary's size, a positive int, got vocab={vocab!r}")
    if not isinstance(k, (int, float)) or isinstance(k, bool) or not 0 < k < math.inf:
        raise ValueError(f"k must be a positive add-k smoothing count (e.g. 0.01; 1 is Laplace), got k={k!r}")


def unigram_perplexity(train_ids, test_ids, vocab: int, k: float = 1.0) -> float:
    """exp of the mean −log P(w) over test_ids[1:], P(w) = (count(w) + k) / (N + k·vocab) from the N train ids."""
    _check_smoothing(vocab, k)
    train, test = _ids(train_ids), _ids(test_ids)
    counts = torch.bincount(train, minlength=vocab).double()  # (vocab,)
    log_p = torch.log((counts[test[1:]] + k) / (len(train) + k * vocab))  # (L − 1,)
    return math.exp(-log_p.mean().item())


def bigram_perplexity(train_ids, test_ids, vocab: int, k: float = 1.0) -> float:
    """exp of the mean −log P(w | v) over the pairs (v, w) of test_ids, P(w | v) = (count(v, w) + k) /
    (count(v, ·) + k·vocab), counting the pairs of adjacent train ids. Only the test pairs' counts are looked
    up (no vocab × vocab table)."""
    _check_smoothing(vocab, k)
    train, test = _ids(train_ids), _ids(test_ids)
    train_pairs = train[:-1] * vocab + train[1:]  # (N − 1,): each pair as one number v·vocab + w
    pairs, pair_counts = torch.unique(train_pairs, return_counts=True)  # sorted
    test_pairs = test[:-1] * vocab + test[1:]  # (L − 1,)
    where = torch.searchsorted(pairs, test_pairs).clamp(max=len(pairs) - 1)  # (L − 1,)
    found = pairs[where] == test_pairs
    pair_count = torch.where(found, pair_counts[where], 0).double()  # (L − 1,): count(v, w)
    before = torch.bincount(train[:-1], minlength=vocab).double()  # (vocab,): count(v, ·)
    log_p = torch.log((pair_count + k) / (before[test[:-1]] + k * vocab))  # (L − 1,)
    return math.exp(-log_p.mean().item())


def best_k(perplexity, train_ids, valid_ids, vocab: int, ks=(1.0, 0.1, 0.01, 0.001, 0.0001)) -> float:
    """The add-k of ``ks`` with the lowest ``perplexity`` (unigram or bigram) on the validation ids."""
    return min(ks, key=lambda k: perplexity(train_ids, valid_ids, vocab, k))

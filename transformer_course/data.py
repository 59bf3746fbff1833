"""Data: vocabularies, batches, toy tasks and the Multi30k German→English pipeline
(notebooks 08 and 11; paper §5.1 "Training Data and Batching").

The paper batches "sentence pairs together by approximate sequence length"; each batch holds about
25,000 source and 25,000 target tokens. This module does the same at course scale:

    text ──tokenize──▶ tokens ──Vocab.encode──▶ ids ──TokenBatchSampler + collate──▶ Batch
                                                                   (src, tgt_in, tgt_out, masks, n_tokens)

Why not torchtext: its last release (0.18, 2024) no longer imports with current PyTorch
(``OSError: … libtorchtext.so: undefined symbol …``) and is no longer developed. Everything it did for
this course is a few dozen readable lines here: ``torch.utils.data`` for datasets and samplers, a small
:class:`Vocab`, spaCy's blank tokenizers, and sacreBLEU for scoring (in ``evaluate``).

Conventions: ``PAD, UNK, BOS, EOS = 0, 1, 2, 3``. Source sequences carry no special tokens; the
:func:`collate` function wraps every target as ``<s> … </s>`` and :meth:`Batch.make` shifts it into
``tgt_in`` (what the decoder reads) and ``tgt_out`` (what it must predict).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
import os
import random
import shutil
import tempfile
import urllib.error
import urllib.request
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Iterator, Sequence

import torch
from torch import Tensor
from torch.utils.data import Dataset, Sampler

from .masks import padding_mask, target_mask

PAD, UNK, BOS, EOS = 0, 1, 2, 3
SPECIALS = ["<pad>", "<unk>", "<s>", "</s>"]


# ---------------------------------------------------------------------------------------------------------
# Vocabulary
# ---------------------------------------------------------------------------------------------------------


class VocabMismatchError(ValueError):
    """A vocabulary does not match the one a model (checkpoint) was trained with."""


class Vocab:
    """Maps tokens to ids and back. Ids 0–3 are the specials ``<pad> <unk> <s> </s>``.

    Build it on the **training split only** (words seen only in validation or test must stay unknown,
    or the scores would be optimistic). Tokens are ordered by falling frequency, ties alphabetically,
    so the same corpus always gives the same ids.
    """

    def __init__(self, itos: Sequence[str]) -> None:
        itos = list(itos)
        if itos[: len(SPECIALS)] != SPECIALS:
            raise ValueError(
                f"a Vocab must start with the specials {SPECIALS}, got {itos[:len(SPECIALS)]}; "
                "build it with Vocab.build(token_lists)"
            )
        if len(set(itos)) != len(itos):
            duplicates = sorted(t for t, c in Counter(itos).items() if c > 1)
            raise ValueError(f"a Vocab lists each token once, these appear twice or more: {duplicates[:10]}")
        self.itos: list[str] = itos
        self.stoi: dict[str, int] = {token: i for i, token in enumerate(itos)}

    @classmethod
    def build(cls, token_lists: Iterable[Sequence[str]], min_freq: int = 2) -> "Vocab":
        """Every token seen at least ``min_freq`` times becomes a word of the vocabulary."""
        if min_freq < 1:
            raise ValueError(f"min_freq must be at least 1, got min_freq={min_freq}")
        counts = Counter(token for tokens in token_lists for token in tokens)
        for special in SPECIALS:
            counts.pop(special, None)
        words = sorted((t for t, c in counts.items() if c >= min_freq), key=lambda t: (-counts[t], t))
        return cls(SPECIALS + words)

    @classmethod
    def build_shared(
        cls, src_token_lists: Iterable[Sequence[str]], tgt_token_lists: Iterable[Sequence[str]], min_freq: int = 2
    ) -> "Vocab":
        """One vocabulary for both languages (needed to tie all three embedding matrices, paper §3.4).

        Counts are summed over both sides, so a word needs ``min_freq`` occurrences in the two together.
        """
        return cls.build([*src_token_lists, *tgt_token_lists], min_freq=min_freq)

    def __len__(self) -> int:
        return len(self.itos)

    def __contains__(self, token: str) -> bool:
        return token in self.stoi

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Vocab) and self.itos == other.itos

    def __repr__(self) -> str:
        return f"Vocab({len(self)} tokens, fingerprint={self.fingerprint()})"

    def encode(self, tokens: Sequence[str]) -> list[int]:
        """Token strings → ids; unknown tokens become ``UNK``. No ``<s>``/``</s>`` are added."""
        if isinstance(tokens, str):
            raise TypeError(
                f"Vocab.encode expects a list of tokens, got the string {tokens[:40]!r}; "
                "split it first with tokenize(text, lang)"
            )
        return [self.stoi.get(token, UNK) for token in tokens]

    def decode(self, ids: Iterable[int] | Tensor, strip_specials: bool = True) -> list[str]:
        """Ids → token strings. With ``strip_specials`` it stops at ``</s>`` and drops ``<pad>``/``<s>``."""
        if isinstance(ids, Tensor):
            if ids.dim() != 1:
                raise ValueError(f"Vocab.decode expects one sequence of ids, got shape {tuple(ids.shape)}")
            ids = ids.tolist()
        tokens = []
        for i in ids:
            i = int(i)
            if not 0 <= i < len(self.itos):
                raise ValueError(f"id {i} is outside this vocabulary of {len(self.itos)} tokens")
            if strip_specials:
                if i == EOS:
                    break
                if i in (PAD, BOS):
                    continue
            tokens.append(self.itos[i])
        return tokens

    def fingerprint(self) -> str:
        """A short hash of the token list: two vocabularies with the same fingerprint give the same ids."""
        return hashlib.sha256("\n".join(self.itos).encode("utf-8")).hexdigest()[:16]

    def check(self, fingerprint: str, what: str = "vocabulary") -> None:
        """Raise :class:`VocabMismatchError` unless this vocabulary has ``fingerprint``."""
        if self.fingerprint() != fingerprint:
            raise VocabMismatchError(
                f"the {what} ({len(self)} tokens, fingerprint {self.fingerprint()}) does not match the one "
                f"the model was trained with (fingerprint {fingerprint}); the ids would mean different words. "
                "Use the vocabulary stored in the checkpoint (load_checkpoint(...).src_vocab / .tgt_vocab) "
                "or the vocabulary file saved with it"
            )

    def to_dict(self) -> dict:
        return {"itos": list(self.itos), "fingerprint": self.fingerprint()}

    @classmethod
    def from_dict(cls, d: dict, fingerprint: str | None = None) -> "Vocab":
        if "itos" not in d:
            raise ValueError(f"a vocabulary dict needs the key 'itos' (the token list), got keys {sorted(d)}")
        vocab = cls(d["itos"])
        if "fingerprint" in d and d["fingerprint"] != vocab.fingerprint():
            raise VocabMismatchError(
                f"the vocabulary's stored fingerprint {d['fingerprint']} does not match its tokens "
                f"({vocab.fingerprint()}): the file was edited or is corrupt; rebuild it from the train split"
            )
        if fingerprint is not None:
            vocab.check(fingerprint)
        return vocab

    def save(self, path: str | os.PathLike) -> None:
        """Write the vocabulary as JSON (atomically: a temporary file, then a rename)."""
        _write_atomic(Path(path), json.dumps(self.to_dict(), ensure_ascii=False).encode("utf-8"))

    @classmethod
    def load(cls, path: str | os.PathLike, fingerprint: str | None = None) -> "Vocab":
        """Read a JSON vocabulary; with ``fingerprint`` (from a checkpoint) refuse one that does not match."""
        path = Path(path)
        if not path.exists():
            raise FileNotFoundError(f"no vocabulary file at {path}; save one with vocab.save({str(path)!r})")
        vocab = cls.from_dict(json.loads(path.read_text(encoding="utf-8")))
        if fingerprint is not None:
            vocab.check(fingerprint, what=f"vocabulary in {path}")
        return vocab


def _write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to a temporary file beside ``path``, then rename it: readers never see half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


# ---------------------------------------------------------------------------------------------------------
# Batches
# ---------------------------------------------------------------------------------------------------------


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
    def make(cls, src: Tensor, tgt: Tensor, pad: int = PAD) -> "Batch":
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

    def to(self, device: torch.device | str, non_blocking: bool = False) -> "Batch":
        move = lambda t: t.to(device, non_blocking=non_blocking)  # noqa: E731
        return Batch(
            move(self.src), move(self.tgt_in), move(self.tgt_out), move(self.src_mask), move(self.tgt_mask),
            self.n_tokens,
        )

    def __len__(self) -> int:
        return self.src.size(0)

    @property
    def n_src_tokens(self) -> int:
        return int(self.src_mask.sum())


def pad_sequences(seqs: Sequence[Sequence[int] | Tensor], pad: int = PAD) -> Tensor:
    """Lists of ids of different lengths → one (len(seqs), longest) LongTensor padded with ``pad``."""
    if len(seqs) == 0:
        raise ValueError("pad_sequences got no sequences; a batch needs at least one sentence")
    longest = max(len(s) for s in seqs)
    out = torch.full((len(seqs), longest), pad, dtype=torch.long)  # (B, L)
    for i, s in enumerate(seqs):
        out[i, : len(s)] = torch.as_tensor(s, dtype=torch.long)
    return out


def collate(pairs: Sequence[tuple[Sequence[int], Sequence[int]]], pad: int = PAD) -> Batch:
    """(src ids, tgt ids) pairs without specials → a :class:`Batch`; each target becomes ``<s> … </s>``."""
    for i, (src, _) in enumerate(pairs):
        if len(src) == 0:
            raise ValueError(
                f"pair {i} has an empty source: it would be all padding, and attention over no key is "
                "undefined (NaN); drop empty sentences before batching"
            )
    src = pad_sequences([s for s, _ in pairs], pad)  # (B, S)
    tgt = pad_sequences([[BOS, *map(int, t), EOS] for _, t in pairs], pad)  # (B, T+1)
    return Batch.make(src, tgt, pad)


# ---------------------------------------------------------------------------------------------------------
# Toy tasks: copy and reverse (notebooks 08–10)
# ---------------------------------------------------------------------------------------------------------

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


class PairDataset(Dataset):
    """A ``torch.utils.data.Dataset`` of (source ids, target ids) pairs, without specials.

    ``src_text``/``tgt_text`` optionally keep the original sentences (for BLEU and for showing examples).
    """

    def __init__(
        self,
        src_ids: Sequence[Sequence[int]],
        tgt_ids: Sequence[Sequence[int]],
        src_text: Sequence[str] | None = None,
        tgt_text: Sequence[str] | None = None,
    ) -> None:
        if len(src_ids) != len(tgt_ids):
            raise ValueError(f"{len(src_ids)} source sequences but {len(tgt_ids)} target sequences; they must pair up")
        self.src_ids = [list(s) for s in src_ids]
        self.tgt_ids = [list(t) for t in tgt_ids]
        self.src_text = list(src_text) if src_text is not None else None
        self.tgt_text = list(tgt_text) if tgt_text is not None else None

    @classmethod
    def from_pairs(cls, pairs: Sequence[tuple[Sequence[int], Sequence[int]]]) -> "PairDataset":
        return cls([s for s, _ in pairs], [t for _, t in pairs])

    def __len__(self) -> int:
        return len(self.src_ids)

    def __getitem__(self, i: int) -> tuple[list[int], list[int]]:
        return self.src_ids[i], self.tgt_ids[i]

    def lengths(self) -> list[tuple[int, int]]:
        """(source length, target length) of every pair, without specials: what the sampler sorts by."""
        return [(len(s), len(t)) for s, t in zip(self.src_ids, self.tgt_ids)]


def toy_dataset(
    task: str = "copy", n: int = 1000, vocab_size: int = 11, min_len: int = 1, max_len: int = 10, seed: int = 0
) -> PairDataset:
    """A toy task as a :class:`PairDataset` (use it with ``DataLoader(..., collate_fn=collate)``)."""
    return PairDataset.from_pairs(toy_pairs(task, n, vocab_size, min_len, max_len, seed))

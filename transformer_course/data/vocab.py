"""Vocabularies: token strings ↔ ids (notebooks 08 and 11; paper §5.1 "Training Data and Batching",
§3.4 "Embeddings and Softmax" for the shared vocabulary).

Conventions: ``PAD, UNK, BOS, EOS = 0, 1, 2, 3``, the first four entries of every :class:`Vocab`.
A vocabulary is built on the training split only, ordered by falling frequency (ties alphabetically),
and identified by a fingerprint so that a checkpoint refuses a vocabulary whose ids mean other words.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

from torch import Tensor

from ..files import atomic_write_text

__all__ = ["BOS", "EOS", "PAD", "SPECIALS", "UNK", "Vocab", "VocabMismatchError"]

PAD, UNK, BOS, EOS = 0, 1, 2, 3
SPECIALS = ["<pad>", "<unk>", "<s>", "</s>"]


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
                f"a Vocab must start with the specials {SPECIALS}, got {itos[: len(SPECIALS)]}; "
                "build it with Vocab.build(token_lists)"
            )
        if len(set(itos)) != len(itos):
            duplicates = sorted(t for t, c in Counter(itos).items() if c > 1)
            raise ValueError(f"a Vocab lists each token once, these appear twice or more: {duplicates[:10]}")
        self.itos: list[str] = itos
        self.stoi: dict[str, int] = {token: i for i, token in enumerate(itos)}

    @classmethod
    def build(cls, token_lists: Iterable[Sequence[str]], min_freq: int = 2) -> Vocab:
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
    ) -> Vocab:
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
            ids = ids.tolist()  # (L,) → list of L ints
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
    def from_dict(cls, d: dict, fingerprint: str | None = None) -> Vocab:
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
        """Write the vocabulary as JSON (atomically, with :func:`transformer_course.files.atomic_write_text`)."""
        atomic_write_text(path, json.dumps(self.to_dict(), ensure_ascii=False))

    @classmethod
    def load(cls, path: str | os.PathLike, fingerprint: str | None = None) -> Vocab:
        """Read a JSON vocabulary; with ``fingerprint`` (from a checkpoint) refuse one that does not match."""
        path = Path(path)
        if not path.exists():
            raise FileNotFoundError(f"no vocabulary file at {path}; save one with vocab.save({str(path)!r})")
        vocab = cls.from_dict(json.loads(path.read_text(encoding="utf-8")))
        if fingerprint is not None:
            vocab.check(fingerprint, what=f"vocabulary in {path}")
        return vocab

"""Byte-pair encoding (BPE) from scratch, for teaching (notebook 11; paper §5.1 "Training Data and Batching":
"Sentences were encoded using byte-pair encoding [3], which has a shared source-target vocabulary of about
37000 tokens"; [3] is Sennrich, Haddow and Birch 2016, "Neural Machine Translation of Rare Words with Subword
Units", ACL, https://aclanthology.org/P16-1162).

The idea: start from characters and learn, from counts alone, which neighbours belong together.

1. Split each sentence into words and mark where a word starts: ``"a cat" → ["▁a", "▁cat"]``; a punctuation
   mark is a word of its own (``"cat," → ["▁cat", ","]``). (Sennrich et al. mark the word's end with
   ``</w>`` instead; the start marker ``▁`` of SentencePiece works the same way and lets the decoder turn
   every ``▁`` back into a space.)
2. Write each word as a tuple of symbols, first its characters, and count how often each word occurs.
3. Count every pair of adjacent symbols, weighted by the count of the word it sits in; merge the most
   frequent pair everywhere into one new symbol; repeat until the vocabulary has ``vocab_size`` symbols or
   the best pair occurs fewer than ``min_frequency`` times.
4. Segment a word, seen or unseen: start from its characters and merge, again and again, the adjacent pair
   whose merge was learned earliest. A word never seen in training still gets pieces, never ``<unk>``,
   as long as its characters are in the alphabet.

The rules follow Hugging Face ``tokenizers`` (its ``BpeTrainer`` after the ``Metaspace`` and ``Punctuation``
pre-tokenizers, which :class:`~transformer_course.data.subword.SubwordTokenizer` uses), so that
tests/test_bpe.py can check that both learn the same merges in the same order:

- ids: the specials first, then the alphabet in Unicode order, then each new symbol in the order it is made;
- ties: among pairs with the same count, the pair whose left symbol has the smallest id wins, then the one
  whose right symbol has the smallest id (so ``▁`` + ``a`` beats ``▁a`` + ``b``: characters come first);
- a pair is merged left to right without overlap (``a a a`` → ``aa a``).

One known difference: when a merge makes a symbol that already exists (``ab`` + ``c`` and later ``a`` +
``bc``, both ``abc``), the library updates its counts only in some words; this simple version recounts
everything. The test corpora check that no merge repeats a symbol.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from .vocab import SPECIALS

__all__ = ["WORD_START", "BPE", "count_pairs", "is_punctuation", "learn_bpe", "merge_pair", "pretokenize"]

WORD_START = "▁"  # U+2581, the word-start marker of SentencePiece and of the tokenizers Metaspace pre-tokenizer


def is_punctuation(ch: str) -> bool:
    """An ASCII punctuation mark or any Unicode punctuation (categories P*), as the library's ``Punctuation``."""
    return ch in string.punctuation or unicodedata.category(ch).startswith("P")


def pretokenize(text: str) -> list[str]:
    """Split at every space and mark each word's start, then cut every punctuation mark off as a word of its own:
    ``"a cat, too." → ["▁a", "▁cat", ",", "▁too", "."]``.

    Like ``Metaspace`` followed by ``Punctuation("isolated")``: each space starts a new word, so two spaces in a
    row give a word that is just ``▁``, and the text, spaces included, can be restored exactly. Without the
    punctuation split ``Männer``, ``Männer,`` and ``Männer.`` would be three words whose pieces share nothing,
    and the vocabulary would spend thousands of entries on word + comma."""
    marked = text.replace(" ", WORD_START)  # "a cat" → "a▁cat"
    if marked and not marked.startswith(WORD_START):
        marked = WORD_START + marked  # the first word gets its ▁ too: "▁a▁cat"
    words = []
    for word in re.split(f"(?={WORD_START})", marked):  # split before every ▁: "▁a", "▁cat"
        current = ""
        for ch in word:
            if is_punctuation(ch):
                if current:
                    words.append(current)
                words.append(ch)
                current = ""
            else:
                current += ch
        if current:
            words.append(current)
    return words


def count_pairs(words: dict[tuple[str, ...], int]) -> Counter:
    """How often each pair of adjacent symbols occurs, every word weighted by its count."""
    pairs = Counter()
    for symbols, count in words.items():
        for pair in zip(symbols, symbols[1:]):  # ("▁", "c", "a", "t") → ("▁","c"), ("c","a"), ("a","t")
            pairs[pair] += count
    return pairs


def merge_pair(symbols: Sequence[str], pair: tuple[str, str]) -> tuple[str, ...]:
    """Replace every occurrence of ``pair`` in ``symbols`` by one symbol, left to right, without overlap."""
    merged, i = [], 0
    while i < len(symbols):
        if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == pair:
            merged.append(symbols[i] + symbols[i + 1])
            i += 2
        else:
            merged.append(symbols[i])
            i += 1
    return tuple(merged)


@dataclass
class BPE:
    """What BPE learns: the vocabulary (id → symbol) and the merges, in the order they were learned."""

    vocab: list[str]
    merges: list[tuple[str, str]]
    specials: list[str] = field(default_factory=lambda: list(SPECIALS))
    unk_token: str = "<unk>"

    def __post_init__(self) -> None:
        self.ids = {symbol: i for i, symbol in enumerate(self.vocab)}
        self.ranks = {pair: rank for rank, pair in enumerate(self.merges)}  # earlier merge → smaller rank

    @property
    def alphabet(self) -> list[str]:
        """The single characters of the vocabulary (the symbols every word starts from), in Unicode order."""
        return sorted(s for s in self.vocab if len(s) == 1 and s not in self.specials)

    def segment(self, word: str) -> list[str]:
        """The pieces of one word (with its ``▁``): merge the earliest-learned adjacent pair, repeat.

        A character outside the alphabet becomes ``<unk>``."""
        symbols = [ch if ch in self.ids else self.unk_token for ch in word]
        while len(symbols) > 1:
            # (rank of the pair's merge, position): the earliest merge wins, the leftmost among equals
            rank, i = min(
                (self.ranks.get(pair, len(self.ranks)), i) for i, pair in enumerate(zip(symbols, symbols[1:]))
            )
            if rank == len(self.ranks):  # no learned merge applies any more
                break
            symbols[i : i + 2] = [symbols[i] + symbols[i + 1]]
        return symbols

    def encode(self, text: str) -> list[str]:
        """The pieces of a sentence: ``"Ein Schneemobil"`` → e.g. ``["▁Ein", "▁Schnee", "mobil"]``."""
        return [piece for word in pretokenize(text) for piece in self.segment(word)]


def learn_bpe(texts: Iterable[str], vocab_size: int, min_frequency: int = 2, specials: Sequence[str] = SPECIALS) -> BPE:
    """Learn BPE merges until the vocabulary (specials + alphabet + merged symbols) has ``vocab_size`` entries
    or no pair occurs ``min_frequency`` times. Recounts all pairs at every step: clear, not fast (use
    :class:`~transformer_course.data.subword.SubwordTokenizer` for a whole corpus)."""
    if isinstance(texts, str):
        raise TypeError("learn_bpe expects a list of sentences, got one str; wrap it in a list: [text]")
    word_counts = Counter(word for text in texts for word in pretokenize(text))
    if not word_counts:
        raise ValueError("learn_bpe got no sentences; pass a non-empty list of training sentences")
    words = {tuple(word): count for word, count in word_counts.items()}  # "▁cat" → ("▁", "c", "a", "t")
    vocab = list(specials)
    vocab += [ch for ch in sorted({ch for word in words for ch in word}) if ch not in vocab]  # Unicode order
    ids = {symbol: i for i, symbol in enumerate(vocab)}
    merges = []
    while len(vocab) < vocab_size:
        pairs = count_pairs(words)
        if not pairs:  # every word is a single symbol
            break
        # most frequent first; ties: the pair whose symbols got their ids first (the library's rule)
        best = min(pairs, key=lambda pair: (-pairs[pair], ids[pair[0]], ids[pair[1]]))
        if pairs[best] < min_frequency:
            break
        merges.append(best)
        new_symbol = best[0] + best[1]
        if new_symbol not in ids:
            ids[new_symbol] = len(vocab)
            vocab.append(new_symbol)
        words = {merge_pair(symbols, best): count for symbols, count in words.items()}
    return BPE(vocab, merges, list(specials))

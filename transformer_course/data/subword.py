"""Subword tokenization for the real pipeline: one joint German+English byte-pair model, one shared vocabulary
(notebook 11; paper §5.1 "Training Data and Batching": byte-pair encoding with "a shared source-target
vocabulary of about 37000 tokens"; §3.4: one weight matrix for both embeddings and the pre-softmax layer).

    train split (de + en) ──SubwordTokenizer.train──▶ merges + vocabulary
    "Ein Schneemobil" ──encode──▶ ["▁Ein", "▁Schnee", "mobil"] ──vocab().encode──▶ ids ──decode──▶ "Ein Schneemobil"

The same algorithm as :mod:`transformer_course.data.bpe` (the from-scratch version notebook 11 teaches), run
by the Hugging Face ``tokenizers`` library. Why that library and not ``sentencepiece``:

- its ``BpeTrainer`` counts pairs over words exactly as Sennrich et al. (2016) and our ``bpe.py`` do, so a
  test can check that both learn the same merges (sentencepiece's BPE has its own sentence-level scoring);
- nothing is normalized and the ``Metaspace`` pre-tokenizer only turns spaces into ``▁``, so ``decode``
  gives back the exact text for sacreBLEU (sentencepiece applies NFKC and squeezes spaces by default);
- it trains on the 58,000 train sentences from a Python list in seconds (Rust) and the whole tokenizer is
  one JSON string, which travels inside a checkpoint loaded with ``torch.load(weights_only=True)``.

Conventions: the specials ``<pad> <unk> <s> </s>`` have ids 0–3 (PAD, UNK, BOS, EOS of :mod:`.vocab`), so
:meth:`SubwordTokenizer.vocab` is a :class:`~transformer_course.data.Vocab` over the same ids. Train on the
**train split only**. ``encode`` adds no ``<s>``/``</s>``. A character never seen in training becomes
``<unk>``; Multi30k's validation and test sets contain none.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from torch import Tensor

from .bpe import WORD_START
from .vocab import SPECIALS, Vocab, VocabMismatchError

__all__ = ["SUBWORD_FORMAT", "SubwordTokenizer"]

SUBWORD_FORMAT = "transformer_course.SubwordTokenizer/1"  # marks the JSON that to_json writes


def _check_texts(texts: Iterable[str], what: str) -> list[str]:
    if isinstance(texts, str):
        raise TypeError(f"{what} expects a list of sentences, got one str ({texts[:40]!r}); wrap it in a list")
    texts = list(texts)
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"{what} expects sentences as str, item {i} is a {type(text).__name__}: {text!r:.60}")
    return texts


def _pre_tokenizer_kind(tokenizer) -> str | None:
    """ "metaspace+punctuation" (what :meth:`SubwordTokenizer.train` builds), "metaspace" (tokenizers saved before
    the punctuation split), or None for anything else (its decode could not restore the text exactly)."""
    spec = json.loads(tokenizer.to_str()).get("pre_tokenizer") or {}
    parts = spec.get("pretokenizers", []) if spec.get("type") == "Sequence" else [spec]
    kinds = [(part.get("type"), part.get("behavior")) for part in parts]
    if kinds == [("Metaspace", None)]:
        return "metaspace"
    if kinds == [("Metaspace", None), ("Punctuation", "Isolated")]:
        return "metaspace+punctuation"
    return None


class SubwordTokenizer:
    """A trained byte-pair tokenizer (Hugging Face ``tokenizers``): text ↔ pieces ↔ ids, exactly reversible.

    Build one with :meth:`train` (or :meth:`from_json`); ``SubwordTokenizer(tokenizer)`` wraps a
    ``tokenizers.Tokenizer`` that has a BPE model and the course specials at ids 0–3.
    """

    def __init__(self, tokenizer) -> None:
        if not isinstance(tokenizer, Tokenizer) or not isinstance(tokenizer.model, models.BPE):
            raise TypeError(
                f"SubwordTokenizer wraps a tokenizers.Tokenizer with a BPE model, got {type(tokenizer).__name__}; "
                "build one with SubwordTokenizer.train(texts, vocab_size) or SubwordTokenizer.from_json(text)"
            )
        self.pre_tokenizer = _pre_tokenizer_kind(tokenizer)
        exact = self.pre_tokenizer is not None and tokenizer.normalizer is None
        if not exact or not isinstance(tokenizer.decoder, decoders.Metaspace):
            raise ValueError(
                "SubwordTokenizer needs the Metaspace pre-tokenizer (alone or followed by Punctuation('isolated')), "
                "the Metaspace decoder and no normalizer (so that decode restores the exact text); build it with "
                "SubwordTokenizer.train(texts, vocab_size)"
            )
        tokenizer.encode_special_tokens = True  # text is text: a literal "<s>" in a sentence is 3 characters
        self._tokenizer = tokenizer
        self.itos: list[str] = [tokenizer.id_to_token(i) for i in range(tokenizer.get_vocab_size())]
        if self.itos[: len(SPECIALS)] != SPECIALS:
            raise ValueError(f"the tokenizer's first ids must be the specials {SPECIALS}, got {self.itos[:4]}")
        model = json.loads(tokenizer.to_str())["model"]
        # the merges in learned order; older library versions wrote "a b", newer ones ["a", "b"]
        self.merges: list[tuple[str, str]] = [
            tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in model["merges"]
        ]
        self.specials: list[str] = [t.content for t in tokenizer.get_added_tokens_decoder().values() if t.special]

    @classmethod
    def train(
        cls, texts: Iterable[str], vocab_size: int, min_frequency: int = 2, specials: Sequence[str] = SPECIALS
    ) -> SubwordTokenizer:
        """Learn one BPE model on ``texts`` (both languages of the **train split**, joined in one list).

        The vocabulary is the specials, the alphabet (every character of ``texts``, spaces as ``▁``) and one
        symbol per merge; merging stops at ``vocab_size`` entries or when no pair occurs ``min_frequency``
        times (then it is smaller: ``len(tokenizer)`` tells)."""
        texts = _check_texts(texts, "SubwordTokenizer.train")
        for name, value in (("vocab_size", vocab_size), ("min_frequency", min_frequency)):
            if not isinstance(value, int) or isinstance(value, bool):
                raise TypeError(f"{name} must be an int, got {name}={value!r} ({type(value).__name__})")
            if value < 1:
                raise ValueError(f"{name} must be at least 1, got {name}={value}")
        from ..config import LIMITS  # the cap Config puts on subword_vocab, so the library never aborts the process

        if vocab_size > LIMITS["subword_vocab"][1]:
            raise ValueError(
                f"vocab_size={vocab_size} is above {LIMITS['subword_vocab'][1]:,}, the largest subword vocabulary "
                "this package trains (the paper used about 37000, §5.1)"
            )
        specials = list(specials)
        if specials[: len(SPECIALS)] != SPECIALS or len(set(specials)) != len(specials):
            raise ValueError(f"specials must start with {SPECIALS} (ids 0–3 = PAD, UNK, BOS, EOS), got {specials}")
        if not any(texts):
            raise ValueError(f"no text to learn from: got {len(texts)} sentences, all empty; pass the train split")
        alphabet = set(" ".join(texts).replace(" ", WORD_START)) - set(specials)
        if vocab_size < len(specials) + len(alphabet):
            raise ValueError(
                f"vocab_size={vocab_size} is smaller than the {len(specials)} specials + {len(alphabet)} characters "
                f"of the training text; choose vocab_size >= {len(specials) + len(alphabet)} "
                "(the paper used about 37000, §5.1)"
            )
        tokenizer = Tokenizer(models.BPE(unk_token=SPECIALS[1]))
        # spaces become ▁ and start words; then every punctuation mark is a word of its own ("Männer," → "▁Männer"
        # ","), as bpe.pretokenize does: otherwise "Männer", "Männer," and "Männer." share no piece
        tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
            [
                pre_tokenizers.Metaspace(replacement=WORD_START, prepend_scheme="always"),
                pre_tokenizers.Punctuation(behavior="isolated"),
            ]
        )
        tokenizer.decoder = decoders.Metaspace(replacement=WORD_START, prepend_scheme="always")
        trainer = trainers.BpeTrainer(
            vocab_size=vocab_size, min_frequency=min_frequency, special_tokens=specials, show_progress=False
        )
        tokenizer.train_from_iterator(texts, trainer=trainer)
        return cls(tokenizer)

    # --- text ↔ pieces ↔ ids -----------------------------------------------------------------------------
    def encode(self, text: str) -> list[str]:
        """One sentence → its pieces, e.g. ``"Ein Schneemobil"`` → ``["▁Ein", "▁Schnee", "mobil"]``."""
        if not isinstance(text, str):
            raise TypeError(f"encode expects one sentence as a str, got a {type(text).__name__}; use encode_many")
        return self._tokenizer.encode(text, add_special_tokens=False).tokens

    def encode_ids(self, text: str) -> list[int]:
        """One sentence → ids (no ``<s>``/``</s>`` added); the same as ``vocab().encode(encode(text))``."""
        if not isinstance(text, str):
            raise TypeError(f"encode_ids expects one sentence as a str, got a {type(text).__name__}; use encode_many")
        return self._tokenizer.encode(text, add_special_tokens=False).ids

    def encode_many(self, texts: Iterable[str], ids: bool = False) -> list[list[str]] | list[list[int]]:
        """Many sentences at once (in parallel): their pieces, or with ``ids=True`` their ids."""
        encodings = self._tokenizer.encode_batch(_check_texts(texts, "encode_many"), add_special_tokens=False)
        return [e.ids if ids else e.tokens for e in encodings]

    def decode(self, pieces_or_ids: Sequence[str] | Sequence[int] | Tensor, strip_specials: bool = True) -> str:
        """Pieces or ids → the text, exactly: ``decode(encode(s)) == s`` for every sentence of the alphabet.

        With ``strip_specials`` (for model outputs) it stops at ``</s>`` and drops ``<pad>``, ``<s>`` and any
        other special except ``<unk>``, which stays visible as the text ``<unk>``."""
        if isinstance(pieces_or_ids, str):
            raise TypeError("decode expects a list of pieces or ids, got one str; encode it first or wrap it in a list")
        if isinstance(pieces_or_ids, Tensor):
            if pieces_or_ids.dim() != 1:
                raise ValueError(f"decode expects one sequence of ids, got shape {tuple(pieces_or_ids.shape)}")
            pieces_or_ids = pieces_or_ids.tolist()  # (L,) → list of L ints
        pieces = []
        for item in pieces_or_ids:
            if isinstance(item, str):
                piece = item
            elif isinstance(item, int) and not isinstance(item, bool):
                if not 0 <= item < len(self.itos):
                    raise ValueError(f"id {item} is outside this tokenizer's {len(self.itos)} pieces")
                piece = self.itos[item]
            else:
                raise TypeError(f"decode expects pieces (str) or ids (int), got {item!r} ({type(item).__name__})")
            if strip_specials and piece == SPECIALS[3]:
                break
            if strip_specials and piece in self.specials and piece != SPECIALS[1]:
                continue
            pieces.append(piece)
        return self._tokenizer.decoder.decode(pieces)

    def display_pieces(self, pieces: Sequence[str], continuation: str = "·") -> list[str]:
        """Pieces made readable for heatmap axes: a word's first piece without its ``▁``, every further piece of
        the same word marked with ``continuation`` in front: ``["▁Schnee", "mobil", "en"]`` →
        ``["Schnee", "·mobil", "·en"]`` (``continuation=""`` gives ``Schnee mobil en``). Specials stay as they
        are; a piece that is only ``▁`` (two spaces in a row) stays ``▁`` so that it does not vanish."""
        shown = []
        for piece in pieces:
            if piece in self.specials or piece == WORD_START:
                shown.append(piece)
            elif piece.startswith(WORD_START):
                shown.append(piece[len(WORD_START) :])
            else:
                shown.append(continuation + piece)
        return shown

    # --- vocabulary, identity, serialization -------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.itos)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SubwordTokenizer) and self.fingerprint() == other.fingerprint()

    def __repr__(self) -> str:
        return f"SubwordTokenizer({len(self)} pieces, {len(self.merges)} merges, fingerprint={self.fingerprint()})"

    def vocab(self) -> Vocab:
        """The shared :class:`Vocab` over the same ids (for both languages and all three tied matrices, §3.4)."""
        return Vocab(self.itos)

    def check_vocabularies(self, src_vocab: Vocab, tgt_vocab: Vocab) -> None:
        """Both sides must use this tokenizer's own vocabulary (the same fingerprint), or ids would mean other
        pieces: a :class:`VocabMismatchError` naming the side."""
        for side, vocab in (("src", src_vocab), ("tgt", tgt_vocab)):
            if vocab.fingerprint() != self.vocab().fingerprint():
                raise VocabMismatchError(
                    f"{side}_vocab (fingerprint {vocab.fingerprint()}) is not the vocabulary of the subword tokenizer "
                    f"({self.vocab().fingerprint()}); use tokenizer.vocab() for both sides"
                )

    def fingerprint(self) -> str:
        """A short hash of the pieces, the merges in order and the pre-tokenizer: equal fingerprints give equal
        encodings (the decoder and specials are the same for every SubwordTokenizer)."""
        text = "\n".join(self.itos) + "\n\n" + "\n".join(f"{a} {b}" for a, b in self.merges)
        if self.pre_tokenizer != "metaspace":  # tokenizers from before the punctuation split keep their hash
            text += "\n\npre-tokenizer: " + self.pre_tokenizer
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]

    def to_json(self) -> str:
        """The whole tokenizer as one plain str (safe to store in a checkpoint read with weights_only=True)."""
        return json.dumps(
            {"format": SUBWORD_FORMAT, "fingerprint": self.fingerprint(), "tokenizer": self._tokenizer.to_str()},
            ensure_ascii=False,
        )

    @classmethod
    def from_json(cls, text: str, fingerprint: str | None = None) -> SubwordTokenizer:
        """Rebuild a tokenizer from :meth:`to_json`; with ``fingerprint`` refuse one whose ids mean other pieces."""
        if not isinstance(text, str):
            raise TypeError(f"from_json expects the str that to_json wrote, got a {type(text).__name__}")
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise ValueError(f"from_json got text that is not JSON ({e}); pass the str that to_json wrote") from e
        if not isinstance(data, dict) or data.get("format") != SUBWORD_FORMAT:
            raise ValueError(f"from_json expects JSON with format {SUBWORD_FORMAT!r}; pass the str that to_json wrote")
        try:
            tokenizer = cls(Tokenizer.from_str(data["tokenizer"]))
        except Exception as e:  # KeyError, or the plain Exception the library raises for a malformed tokenizer
            raise ValueError(
                f"from_json: the stored tokenizer cannot be read ({e!r}); pass the str that to_json wrote"
            ) from e
        for expected, what in ((data.get("fingerprint"), "its stored fingerprint"), (fingerprint, "the checkpoint's")):
            if expected is not None and tokenizer.fingerprint() != expected:
                raise VocabMismatchError(
                    f"the subword tokenizer (fingerprint {tokenizer.fingerprint()}) does not match {what} "
                    f"({expected}): its ids would mean other pieces; use the tokenizer saved with the model"
                )
        return tokenizer

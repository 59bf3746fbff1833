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
import http.client
import json
import numbers
import os
import random
import tempfile
import urllib.request
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

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
        """Write the vocabulary as JSON (atomically: a temporary file, then a rename)."""
        _write_atomic(Path(path), json.dumps(self.to_dict(), ensure_ascii=False).encode("utf-8"))

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


def _umask_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask  # the permissions open() would give a new file (mkstemp gives 0o600)


def _write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to a temporary file beside ``path``, then rename it: readers never see half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, _umask_mode())
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
        move = lambda t: t.to(device, non_blocking=non_blocking)  # noqa: E731
        return Batch(
            move(self.src),
            move(self.tgt_in),
            move(self.tgt_out),
            move(self.src_mask),
            move(self.tgt_mask),
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


def toy_dataset(
    task: str = "copy", n: int = 1000, vocab_size: int = 11, min_len: int = 1, max_len: int = 10, seed: int = 0
) -> PairDataset:
    """A toy task as a :class:`PairDataset` (use it with ``DataLoader(..., collate_fn=collate)``)."""
    return PairDataset.from_pairs(toy_pairs(task, n, vocab_size, min_len, max_len, seed))


# ---------------------------------------------------------------------------------------------------------
# Multi30k: download with checksums (notebook 11)
# ---------------------------------------------------------------------------------------------------------

MULTI30K_URL = "https://github.com/multi30k/dataset/raw/master/data/task1/raw/"
MIRROR_ENV = "TC_DATA_MIRROR"  # a local folder or a base URL holding the six files; tried first
MULTI30K_SHA256 = {
    "train.de.gz": "726e39b2fa9eb9ffb6dc763fb35a179f80fae06ffc5d28b6ace5faa883de28a6",
    "train.en.gz": "d79cfa999dd4c51d2cb42499b6796d5a882c3a8a961923c25a898c90f8bbd56f",
    "val.de.gz": "f0cba2f995189cf5770f29a8a9a537a3ad3f51657ad873405082ff6863a5e75a",
    "val.en.gz": "14f7d25ddd868909a9213e361768460edcacdd6ab9d1e77b92560dc10c10dc28",
    "test_2016_flickr.de.gz": "9204244e408ccb38d2a55cfcd344df15005fc42a07a6e55ca6c52b6ababb8cc8",
    "test_2016_flickr.en.gz": "611d361c6334bc7246101d48097c13cf5c4413c5befc793cc629934359d532d9",
}
SPLITS = {"train": "train", "val": "val", "test": "test_2016_flickr", "test_2016_flickr": "test_2016_flickr"}
LANGUAGES = ("de", "en")


class DownloadError(RuntimeError):
    """A Multi30k file could not be fetched from any source."""


class ChecksumError(DownloadError):
    """A fetched file's SHA-256 differs from the published one (it was not kept)."""


def multi30k_filename(split: str, lang: str) -> str:
    """``("test", "en")`` → ``"test_2016_flickr.en.gz"``; unknown splits or languages raise a ValueError."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; choose one of {sorted(SPLITS)}")
    if lang not in LANGUAGES:
        raise ValueError(f"unknown language {lang!r} for Multi30k task 1; choose one of {list(LANGUAGES)}")
    return f"{SPLITS[split]}.{lang}.gz"


def sha256_file(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _is_url(source: str) -> bool:
    return source.split("://", 1)[0] in ("http", "https", "file", "ftp") and "://" in source


def _fetch_verified(source: str, dest: Path, expected: str, timeout: float) -> None:
    """Copy ``source`` (URL or path) to ``dest`` through a temporary file; rename only if the SHA-256 matches."""
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".part")
    try:
        h = hashlib.sha256()
        with os.fdopen(fd, "wb") as out:
            stream = urllib.request.urlopen(source, timeout=timeout) if _is_url(source) else open(source, "rb")
            with stream:
                for chunk in iter(lambda: stream.read(1 << 16), b""):
                    h.update(chunk)
                    out.write(chunk)
        if h.hexdigest() != expected:
            raise ChecksumError(
                f"{source} has SHA-256 {h.hexdigest()}, expected {expected}: the file is corrupt or not the "
                "published one, so it was not kept"
            )
        os.chmod(tmp, _umask_mode())
        os.replace(tmp, dest)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def download_multi30k(
    root: str | os.PathLike = "data",
    splits: Iterable[str] = ("train", "val", "test"),
    langs: Iterable[str] = LANGUAGES,
    mirror: str | None = None,
    url: str | None = MULTI30K_URL,
    timeout: float = 60.0,
    verbose: bool = True,
) -> Path:
    """Make sure the Multi30k files lie verified in ``root``; fetch the missing ones. Returns ``root``.

    Sources, in order: ``mirror`` (default: the ``TC_DATA_MIRROR`` environment variable; a local folder or
    a base URL), then the official ``url`` (None: no official download). Every file is checked against
    :data:`MULTI30K_SHA256`, written under a temporary name and renamed only when its checksum matches,
    so ``root`` never holds a partial or corrupt file.
    """
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    mirror = os.environ.get(MIRROR_ENV) if mirror is None else mirror
    names = [multi30k_filename(split, lang) for split in splits for lang in langs]
    for name in names:
        dest, expected = root / name, MULTI30K_SHA256[name]
        if dest.exists():
            if sha256_file(dest) == expected:
                continue
            dest.unlink()  # a corrupt or edited file must never be read
            if verbose:
                print(f"{dest} did not match its SHA-256 and was removed; fetching it again", flush=True)
        sources = []
        if mirror:
            sources.append(mirror.rstrip("/") + "/" + name if _is_url(mirror) else str(Path(mirror) / name))
        if url:
            sources.append(url.rstrip("/") + "/" + name)
        errors: list[tuple[str, Exception]] = []
        for source in sources:
            try:
                if verbose:
                    print(f"fetching {name} from {source}", flush=True)
                _fetch_verified(source, dest, expected, timeout)
                break
            except (OSError, http.client.HTTPException, ChecksumError) as e:  # URLError, HTTPError are OSErrors
                errors.append((source, e))
        else:
            tried = "; ".join(f"{s}: {e}" for s, e in errors) or "no source (no mirror set and url=None)"
            how = (
                f"To get the files: run `python -m transformer_course download` with internet access, "
                f"or download the six files from {MULTI30K_URL} into {root}/ by hand, or set "
                f"{MIRROR_ENV} to a folder or base URL that holds them (export {MIRROR_ENV}=/path/to/multi30k)"
            )
            error = ChecksumError if any(isinstance(e, ChecksumError) for _, e in errors) else DownloadError
            raise error(f"could not get {name} ({tried}). {how}")
    return root


def multi30k_path(split: str, lang: str, root: str | os.PathLike = "data", download: bool = True) -> Path:
    """Path of one Multi30k file under ``root``. With ``download`` (the default) the file is checked against
    its SHA-256 and fetched when missing or corrupt; without, it is used as it is (hand-made test corpora)."""
    path = Path(root) / multi30k_filename(split, lang)
    if download:
        download_multi30k(root, splits=[split], langs=[lang])
    elif not path.exists():
        raise FileNotFoundError(
            f"{path} is missing; get it with `python -m transformer_course download` or download_multi30k()"
        )
    return path


def read_lines(path: str | os.PathLike) -> list[str]:
    """The lines of a (gzip) text file, without their newlines. An empty file raises a ValueError."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        lines = [line.rstrip("\r\n") for line in f]
    if not lines:
        raise ValueError(f"{path} is empty; delete it and download it again (download_multi30k)")
    return lines


def check_aligned(src_lines: Sequence, tgt_lines: Sequence, src_name: str = "source", tgt_name: str = "target") -> None:
    """Parallel corpora pair line i with line i: different line counts mean a damaged or mismatched file."""
    if len(src_lines) != len(tgt_lines):
        raise ValueError(
            f"{src_name} has {len(src_lines)} lines but {tgt_name} has {len(tgt_lines)}; a parallel corpus "
            "needs one translation per line. Check that both files belong to the same split, or delete them "
            "and download them again"
        )


def load_pairs(
    split: str, root: str | os.PathLike = "data", src_lang: str = "de", tgt_lang: str = "en", download: bool = True
) -> list[tuple[str, str]]:
    """Raw (source sentence, target sentence) pairs of a Multi30k split: ``train``, ``val`` or ``test``."""
    if src_lang == tgt_lang:
        raise ValueError(f"src_lang and tgt_lang are both {src_lang!r}; translate between two languages")
    src_path = multi30k_path(split, src_lang, root, download)
    tgt_path = multi30k_path(split, tgt_lang, root, download)
    src_lines, tgt_lines = read_lines(src_path), read_lines(tgt_path)
    check_aligned(src_lines, tgt_lines, str(src_path), str(tgt_path))
    return list(zip(src_lines, tgt_lines))


# ---------------------------------------------------------------------------------------------------------
# Tokenization: spaCy's rule-based tokenizers, cached on disk
# ---------------------------------------------------------------------------------------------------------

TOKENIZER_VERSION = 1  # bump when the token rules below change, so old caches are not reused


@cache
def spacy_tokenizer(lang: str):
    """The tokenizer of ``spacy.blank(lang)``: rules only, no model download needed."""
    import spacy

    try:
        return spacy.blank(lang).tokenizer
    except ImportError as e:
        raise ValueError(f"unknown language {lang!r} for spaCy; use a language code such as 'de' or 'en' ({e})") from e


def tokenize_many(texts: Iterable[str], lang: str, batch_size: int = 1000) -> list[list[str]]:
    """Split many sentences into word tokens at once (spaCy's ``tokenizer.pipe``; whitespace tokens dropped)."""
    tokenizer = spacy_tokenizer(lang)
    return [[t.text for t in doc if not t.is_space] for doc in tokenizer.pipe(texts, batch_size=batch_size)]


def tokenize(text: str, lang: str) -> list[str]:
    """``tokenize("A dog's toy.", "en")`` → ``['A', 'dog', "'s", 'toy', '.']``."""
    if not isinstance(text, str):
        raise TypeError(f"tokenize expects one string, got {type(text).__name__}; use tokenize_many for a list")
    return tokenize_many([text], lang)[0]


def tokenize_file(
    path: str | os.PathLike, lang: str, cache_dir: str | os.PathLike | None = None, limit: int | None = None
) -> list[list[str]]:
    """Tokens of every line of ``path``; with ``cache_dir`` the result is kept on disk as JSON, keyed by
    the file's SHA-256, the spaCy version and :data:`TOKENIZER_VERSION`, so a second run reads it back.
    ``limit``: only the first ``limit`` lines (tokenized without writing a cache, unless one exists)."""
    path = Path(path)
    cache = None
    if cache_dir is not None:
        import spacy

        key = f"{sha256_file(path)[:16]}.spacy-{spacy.__version__}.v{TOKENIZER_VERSION}"
        cache = Path(cache_dir) / f"{path.name}.{lang}.{key}.tokens.json"
        if cache.exists():
            return json.loads(cache.read_text(encoding="utf-8"))[:limit]
    tokens = tokenize_many(read_lines(path)[:limit], lang)
    if cache is not None and limit is None:
        _write_atomic(cache, json.dumps(tokens, ensure_ascii=False).encode("utf-8"))
    return tokens


NO_SPACE_BEFORE = {",", ".", "!", "?", ";", ":", "%", ")", "n't", "'s", "'re", "'m", "'ll", "'ve", "'d", "'"}
NO_SPACE_AFTER = {"("}


def detokenize(tokens: Sequence[str]) -> str:
    """Tokens → text, undoing the tokenizer's splits: no space before ``, . ! ? ; : % )`` and English
    clitics (``n't 's 're 'm 'll 've 'd '``), none after ``(``, none around a hyphen inside a word
    (``T - shirt`` → ``T-shirt``), none inside a pair of double quotes (``" Pullman "`` → ``"Pullman"``).
    Used to score detokenized output with sacreBLEU. Tokens do not record spaces, so a dash that stood
    alone between two words (``hat - a``) comes back as a hyphen (``hat-a``); on the Multi30k English
    test set this function restores 1000 of 1000 sentences exactly."""
    out: list[str] = []
    glue = True  # True: no space before the next token
    quotes = 0  # double quotes seen so far: an even count means the next one opens
    for i, token in enumerate(tokens):
        if token == '"':
            opening = quotes % 2 == 0
            quotes += 1
            out.append(" " + token if opening and not glue else token)
            glue = opening
            continue
        prev = tokens[i - 1] if i > 0 else ""
        next_ = tokens[i + 1] if i + 1 < len(tokens) else ""
        in_word_hyphen = token == "-" and prev[-1:].isalnum() and next_[:1].isalnum()
        space = not (glue or token.lower() in NO_SPACE_BEFORE or in_word_hyphen)
        out.append(" " + token if space else token)
        glue = token in NO_SPACE_AFTER or in_word_hyphen
    return "".join(out)


# ---------------------------------------------------------------------------------------------------------
# Batching by length (paper §5.1: "sentence pairs were batched together by approximate sequence length")
# ---------------------------------------------------------------------------------------------------------


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


# ---------------------------------------------------------------------------------------------------------
# Everything together: Multi30k as datasets and vocabularies
# ---------------------------------------------------------------------------------------------------------


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
    if limit is not None and limit < 1:
        raise ValueError(f"limit must be a positive number of pairs or None (everything), got limit={limit}")
    if src_lang == tgt_lang:
        raise ValueError(f"src_lang and tgt_lang are both {src_lang!r}; translate between two languages")
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
    datasets = {}
    for split in ("train", "val", "test"):
        (src_toks, tgt_toks), (src_text, tgt_text) = tokens[split], texts[split]
        datasets[split] = PairDataset(
            [src_vocab.encode(t) for t in src_toks],
            [tgt_vocab.encode(t) for t in tgt_toks],
            src_text,
            tgt_text,
            src_tokens=src_toks,
            tgt_tokens=tgt_toks,
        )
    return Multi30k(datasets["train"], datasets["val"], datasets["test"], src_vocab, tgt_vocab, src_lang, tgt_lang)

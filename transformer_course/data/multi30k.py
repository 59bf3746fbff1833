"""Multi30k task 1, German → English: download with SHA-256 verification, the raw sentence pairs, and the
whole pipeline to training-ready datasets (notebook 11; paper §5.1 "Training Data and Batching" at course
scale: 29,000 training pairs instead of the "about 4.5 million sentence pairs" of WMT 2014).

    download_multi30k ──▶ data/*.gz (verified) ──tokenize_file──▶ tokens ──Vocab.build (train only)──▶
    Vocab.encode ──▶ PairDataset per split ──Multi30k.loader──▶ Batch es by length

Files are fetched from a mirror (``TC_DATA_MIRROR``: a local folder or a base URL) and then the official
location, written under a temporary name and renamed only when their SHA-256 matches, so ``data/`` never
holds a partial or corrupt file. Why not torchtext: its last release (0.18, 2024) no longer imports with
current PyTorch (``OSError: … libtorchtext.so: undefined symbol …``) and is no longer developed; everything
it did for this course is a few dozen readable lines in this package.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import torch

from ..files import atomic_write
from .batching import PairDataset, TokenBatchSampler, collate
from .corpus import check_aligned, read_lines, sha256_file
from .tokenization import tokenize_file
from .vocab import Vocab

__all__ = [
    "LANGUAGES",
    "MIRROR_ENV",
    "MULTI30K_SHA256",
    "MULTI30K_URL",
    "SPLITS",
    "ChecksumError",
    "DownloadError",
    "Multi30k",
    "check_aligned",  # from .corpus, listed here too: reading the raw corpus is part of this topic
    "download_multi30k",
    "load_pairs",
    "multi30k_filename",
    "multi30k_path",
    "prepare_multi30k",
    "read_lines",  # from .corpus
    "sha256_file",  # from .corpus
]


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


def _is_url(source: str) -> bool:
    return source.split("://", 1)[0] in ("http", "https", "file", "ftp") and "://" in source


def _fetch_verified(source: str, dest: Path, expected: str, timeout: float) -> None:
    """Copy ``source`` (URL or path) to ``dest`` through a temporary file; rename only if the SHA-256 matches.

    :func:`~transformer_course.files.atomic_write` holds the temporary file (``.<name>.*.tc-tmp``) and
    removes it when anything raises: a refused connection, a dropped one, or the :class:`ChecksumError`."""
    with atomic_write(dest) as out:
        h = hashlib.sha256()
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

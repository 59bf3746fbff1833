"""Downloading Multi30k task 1 (de, en): sources, a total deadline, a size limit and SHA-256 verification
(notebook 11; paper §5.1 "Training Data and Batching").

    TC_DATA_MIRROR (folder or URL) ──▶ official URL ──▶ .NAME.*.tc-tmp ──size + SHA-256 match──▶ data/NAME

Files are fetched from a mirror (``TC_DATA_MIRROR``: a local folder or a base URL) and then the official
location, written under a temporary name and renamed only when their size and SHA-256 match, so ``data/``
never holds a partial or corrupt file. What can go wrong, and what happens:

- a source that sends nothing, or one byte every few seconds: each file has a total deadline, then the next
  source is tried (urllib's own timeout bounds each read, not the transfer);
- a source that sends more than the published file (an endless body): reading stops one byte past the
  published size, so it cannot fill the disk;
- a damaged file already in ``data/``: it is moved aside to ``NAME.corrupt`` (never read, not lost) and
  removed only once a good copy is in place;
- a download killed by SIGKILL: its temporary file is removed by the next download (SIGTERM and Ctrl-C
  raise exceptions, and the temporary file goes at once);
- a full disk: an OSError naming the file, at once (no other source could help).
"""

from __future__ import annotations

import hashlib
import http.client
import os
import queue
import threading
import time
import urllib.request
from collections.abc import Iterable, Iterator
from contextlib import closing
from pathlib import Path

from ..files import atomic_write, remove_stale_temp_files
from .corpus import sha256_file

__all__ = [
    "LANGUAGES",
    "MIRROR_ENV",
    "MULTI30K_SHA256",
    "MULTI30K_SIZES",
    "MULTI30K_URL",
    "SPLITS",
    "ChecksumError",
    "DownloadError",
    "download_multi30k",
    "multi30k_filename",
    "multi30k_path",
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
MULTI30K_SIZES = {  # bytes of each published file (measured on the files with the SHA-256 above)
    "train.de.gz": 637044,
    "train.en.gz": 568929,
    "val.de.gz": 24681,
    "val.en.gz": 21650,
    "test_2016_flickr.de.gz": 22890,
    "test_2016_flickr.en.gz": 21077,
}
SPLITS = {"train": "train", "val": "val", "test": "test_2016_flickr", "test_2016_flickr": "test_2016_flickr"}
LANGUAGES = ("de", "en")


class DownloadError(RuntimeError):
    """A Multi30k file could not be fetched from any source."""


class ChecksumError(DownloadError):
    """A fetched file's size or SHA-256 differs from the published one (it was not kept)."""


class _WriteError(Exception):
    """Writing the local file failed (a full disk, no permission): no other source can help, so the download
    stops at once with the OSError, which names the file."""

    def __init__(self, error: OSError, path: Path):
        super().__init__(error)
        self.error = OSError(error.errno, error.strerror or str(error), str(path))


def multi30k_filename(split: str, lang: str) -> str:
    """``("test", "en")`` → ``"test_2016_flickr.en.gz"``; unknown splits or languages raise a ValueError."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; choose one of {sorted(SPLITS)}")
    if lang not in LANGUAGES:
        raise ValueError(f"unknown language {lang!r} for Multi30k task 1; choose one of {list(LANGUAGES)}")
    return f"{SPLITS[split]}.{lang}.gz"


def _is_url(source: str) -> bool:
    return source.split("://", 1)[0] in ("http", "https", "file", "ftp") and "://" in source


def _read_source(source: str, size_limit: int, timeout: float, deadline: float) -> Iterator[bytes]:
    """The bytes of ``source`` (URL or path) in chunks, at most ``size_limit`` bytes in all; a DownloadError
    when the whole transfer takes longer than ``deadline`` seconds.

    A thread reads (urllib's ``timeout`` bounds each network read, not the transfer: a server sending one
    byte a second never trips it); this generator waits for its chunks at most until the deadline. The
    reader stops by itself after ``size_limit`` bytes, so it never holds more than that in memory."""
    chunks: queue.SimpleQueue = queue.SimpleQueue()
    stop = threading.Event()

    def reader() -> None:
        try:
            if _is_url(source):
                stream = urllib.request.urlopen(source, timeout=min(timeout, deadline))
                announced = stream.headers.get("Content-Length", "")
                if announced.isdigit() and int(announced) >= size_limit:
                    stream.close()
                    raise ChecksumError(
                        f"it announces {announced} bytes, more than the published file's {size_limit - 1}; "
                        "it is not the published file, so nothing was kept"
                    )
            else:
                stream = open(source, "rb")
            with stream:
                left = size_limit
                while left and not stop.is_set():
                    chunk = stream.read(min(1 << 16, left))
                    if not chunk:
                        break
                    left -= len(chunk)
                    chunks.put(chunk)
            chunks.put(b"")
        except BaseException as e:  # handed to the waiting thread, which raises it
            chunks.put(e)

    threading.Thread(target=reader, name=f"download {source}", daemon=True).start()
    end = time.monotonic() + deadline
    try:
        while True:
            try:
                item = chunks.get(timeout=max(0.0, end - time.monotonic()))
            except queue.Empty:
                raise DownloadError(
                    f"no whole file within the deadline of {deadline:g} s (the source is stalled or too slow), "
                    "so the partial file was not kept"
                ) from None
            if isinstance(item, BaseException):
                raise item
            if not item:
                return
            yield item
    finally:
        stop.set()  # the reader ends after its current read (urllib's timeout bounds it)


def _fetch_verified(
    source: str, dest: Path, expected: str, expected_size: int, timeout: float, deadline: float
) -> None:
    """Copy ``source`` (URL or path) to ``dest`` through a temporary file; rename only if the size and the
    SHA-256 match. Stops reading one byte past ``expected_size`` and after ``deadline`` seconds.

    :func:`~transformer_course.files.atomic_write` holds the temporary file (``.<name>.*.tc-tmp``) and
    removes it when anything raises: a refused connection, a dropped one, the deadline, the
    :class:`ChecksumError`, Ctrl-C, or SIGTERM (which the command line turns into an exception)."""
    writing = True  # False while waiting for the source: an OSError then is the source's, not the disk's
    try:
        with atomic_write(dest) as out, closing(_read_source(source, expected_size + 1, timeout, deadline)) as chunks:
            h, size = hashlib.sha256(), 0
            while True:
                writing = False
                chunk = next(chunks, b"")
                writing = True
                if not chunk:
                    break
                size += len(chunk)
                if size > expected_size:
                    raise ChecksumError(
                        f"larger than the published file ({expected_size} bytes): stopped reading after {size} "
                        "bytes, so it was not kept"
                    )
                h.update(chunk)
                out.write(chunk)
            if size != expected_size:
                raise ChecksumError(
                    f"it ended after {size} bytes but the published file has {expected_size} (a dropped "
                    "connection or another file), so it was not kept"
                )
            if h.hexdigest() != expected:
                raise ChecksumError(
                    f"its SHA-256 is {h.hexdigest()}, expected {expected}: the file is corrupt or not the "
                    "published one, so it was not kept"
                )
    except OSError as e:
        if writing:
            raise _WriteError(e, dest) from e
        raise


def download_multi30k(
    root: str | os.PathLike = "data",
    splits: Iterable[str] = ("train", "val", "test"),
    langs: Iterable[str] = LANGUAGES,
    mirror: str | None = None,
    url: str | None = MULTI30K_URL,
    timeout: float = 60.0,
    verbose: bool = True,
    deadline: float = 300.0,
) -> Path:
    """Make sure the Multi30k files lie verified in ``root``; fetch the missing ones. Returns ``root``.

    Sources, in order: ``mirror`` (default: the ``TC_DATA_MIRROR`` environment variable; a local folder or
    a base URL), then the official ``url`` (None: no official download). Every file is checked against
    :data:`MULTI30K_SIZES` and :data:`MULTI30K_SHA256`, written under a temporary name and renamed only when
    both match, so ``root`` never holds a partial or corrupt file.

    - ``timeout``: seconds one connection attempt or one network read may wait;
    - ``deadline``: seconds one file may take in all, from one source (the bytes of the largest file,
      637,044, need about 2 KB/s to arrive within the default 300 s);
    - a file in ``root`` whose checksum does not match is moved aside to ``NAME.corrupt`` (never read, not
      lost) and removed only once a good copy is in place;
    - temporary files a killed download left in ``root`` (older than ``deadline``) are removed first.
    """
    for name, value in (("timeout", timeout), ("deadline", deadline)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf"):
            raise ValueError(f"{name} must be a positive number of seconds, got {name}={value!r}")
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    mirror = os.environ.get(MIRROR_ENV) if mirror is None else mirror
    names = [multi30k_filename(split, lang) for split in splits for lang in langs]
    ours = tuple(f".{n}." for n in MULTI30K_SHA256)  # leave other programs' temporary files alone
    remove_stale_temp_files(root, older_than_s=deadline, keep=lambda p: not p.name.startswith(ours))
    for name in names:
        dest, expected, aside = root / name, MULTI30K_SHA256[name], root / f"{name}.corrupt"
        if dest.exists():
            if dest.stat().st_size == MULTI30K_SIZES[name] and sha256_file(dest) == expected:
                aside.unlink(missing_ok=True)
                continue
            os.replace(dest, aside)  # never read again under its name, but not lost before a good copy is in
            if verbose:
                print(f"{dest} is not the published file (size or SHA-256); moved it to {aside}, fetching it again")
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
                _fetch_verified(source, dest, expected, MULTI30K_SIZES[name], timeout, deadline)
                break
            except _WriteError as e:  # the local disk failed, not the source
                raise e.error from e.__cause__
            except (OSError, http.client.HTTPException, DownloadError) as e:  # URLError, HTTPError are OSErrors
                errors.append((source, e))
        else:
            tried = "; ".join(f"{s}: {e}" for s, e in errors) or "no source (no mirror set and url=None)"
            kept = f" The damaged copy that was in {root}/ is kept as {aside}." if aside.exists() else ""
            how = (
                f"To get the files: run `python -m transformer_course download` with internet access, "
                f"or download the six files from {MULTI30K_URL} into {root}/ by hand, or set "
                f"{MIRROR_ENV} to a folder or base URL that holds them (export {MIRROR_ENV}=/path/to/multi30k)"
            )
            error = ChecksumError if any(isinstance(e, ChecksumError) for _, e in errors) else DownloadError
            raise error(f"could not get {name} ({tried}).{kept} {how}")
        aside.unlink(missing_ok=True)  # a good copy is in place now
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

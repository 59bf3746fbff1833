"""Parallel text files on disk: their lines, their checksums, and the rule that line i pairs with line i
(notebook 11; paper §5.1 "Training Data and Batching").

The smallest pieces the rest of the data package stands on: the tokenizer cache is keyed by
:func:`sha256_file`, the Multi30k download verifies with it, and :func:`check_aligned` guards every
parallel corpus (raw lines, token lists, id lists) against a missing or extra line.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import zlib
from collections.abc import Sequence
from pathlib import Path

__all__ = ["check_aligned", "read_lines", "sha256_file"]


def sha256_file(path: str | os.PathLike) -> str:
    """The SHA-256 of a file's bytes, as 64 hex digits (read in 1 MiB chunks)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


REFETCH = "delete it and download it again (python -m transformer_course download), or put a good copy there"


def read_lines(path: str | os.PathLike) -> list[str]:
    """The lines of a (gzip) text file, without their newlines. An empty file raises a ValueError; so does a
    truncated or not-gzip ``.gz`` file and text that is not UTF-8 — each naming the file and what to do."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8") as f:
            lines = [line.rstrip("\r\n") for line in f]
    except EOFError:
        raise ValueError(f"{path} is truncated (the gzip stream ends early); {REFETCH}") from None
    except gzip.BadGzipFile as err:
        raise ValueError(f"{path} is not a gzip file ({err}); {REFETCH}") from None
    except UnicodeDecodeError as err:
        raise ValueError(
            f"{path} is not UTF-8 text (it holds the byte {err.object[err.start : err.start + 1]!r}: a latin-1 "
            f"file?); convert it with iconv -f latin1 -t utf-8, or {REFETCH}"
        ) from None
    except zlib.error as err:
        raise ValueError(f"{path} is a damaged gzip file ({err}); {REFETCH}") from None
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

"""Writing files safely: the one helper every module uses to write a file (checkpoints, data, caches).

A file is written to a temporary file with an unpredictable name (``tempfile.mkstemp``) in the
destination folder, flushed to disk, then renamed over the destination. A reader, or a crash at any
moment, sees either the old file or the whole new one, never half of it; a symlink planted at a
predictable temporary name cannot redirect the write (``mkstemp`` opens with ``O_CREAT | O_EXCL``).
The temporary file is removed on every exit path Python sees (an exception, Ctrl-C, SIGTERM turned into
an exception); what a SIGKILL leaves behind carries :data:`TEMP_SUFFIX` and is swept by
:func:`remove_stale_temp_files`.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

__all__ = ["TEMP_SUFFIX", "atomic_write", "atomic_write_bytes", "atomic_write_text", "remove_stale_temp_files"]

TEMP_SUFFIX = ".tc-tmp"  # every temporary file this package writes ends so, whatever it will become


def _default_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask  # the permissions open() would give a new file (mkstemp gives 0o600)


@contextmanager
def atomic_write(path: str | os.PathLike, fsync: bool = True) -> Iterator[BinaryIO]:
    """``with atomic_write(path) as f: f.write(...)`` — ``path`` appears whole when the block ends
    without an exception, and is left as it was (no temporary file behind) when it raises."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=TEMP_SUFFIX)
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            if fsync:
                os.fsync(f.fileno())
        os.chmod(tmp, _default_mode())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (see :func:`atomic_write`)."""
    with atomic_write(path) as f:
        f.write(data)
    return Path(path)


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically (see :func:`atomic_write`)."""
    return atomic_write_bytes(path, text.encode("utf-8"))


def remove_stale_temp_files(
    folder: str | os.PathLike, older_than_s: float = 0.0, keep: Callable[[Path], bool] | None = None
) -> list[Path]:
    """Delete the temporary files a killed process left in ``folder`` (names ``.*`` + :data:`TEMP_SUFFIX`)
    that are older than ``older_than_s`` seconds; returns what was removed."""
    folder = Path(folder)
    removed: list[Path] = []
    if not folder.is_dir():
        return removed
    now = time.time()
    for p in folder.glob(f".*{TEMP_SUFFIX}"):
        try:
            if now - p.lstat().st_mtime >= older_than_s and not (keep and keep(p)):
                p.unlink()
                removed.append(p)
        except FileNotFoundError:
            pass
    return removed

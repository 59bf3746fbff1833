"""Writing files safely: the one helper every module uses to write a file (checkpoints, data, caches).

A file is written to a temporary file with an unpredictable name (``tempfile.mkstemp``) in the
destination folder, flushed to disk, then renamed over the destination. A reader, or a crash at any
moment, sees either the old file or the whole new one, never half of it; a symlink planted at a
predictable temporary name cannot redirect the write (``mkstemp`` opens with ``O_CREAT | O_EXCL``).
The temporary file is removed on every exit path Python sees (an exception, Ctrl-C, SIGTERM turned into
an exception); what a SIGKILL leaves behind carries :data:`TEMP_SUFFIX` and is swept by
:func:`remove_stale_temp_files`.

:func:`crash_point` is a test hook: it lets a test SIGKILL a process at a chosen moment (inside a training
step, a checkpoint write, a validation) and check that nothing is lost.
"""

from __future__ import annotations

import os
import signal
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

__all__ = [
    "CRASH_AT",
    "TEMP_SUFFIX",
    "DestinationError",
    "atomic_write",
    "atomic_write_bytes",
    "atomic_write_text",
    "check_writable_folder",
    "claim_file",
    "crash_point",
    "refuse_writing_onto_inputs",
    "remove_stale_temp_files",
]

TEMP_SUFFIX = ".tc-tmp"  # every temporary file this package writes ends so, whatever it will become
CRASH_AT = "TC_CRASH_AT"  # the environment variable crash_point reads: "NAME:N"
_crossings: dict[str, int] = {}  # how often this process has passed each crash point


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


def crash_point(name: str) -> None:
    """A test hook. With ``TC_CRASH_AT=NAME:N`` in the environment the process kills itself with SIGKILL —
    no exception, no cleanup, as a power cut or the out-of-memory killer would — the N-th time it passes
    ``crash_point(NAME)``; otherwise it does nothing. The points: ``train-step`` (gradients computed, the
    weights not yet updated), ``checkpoint-write`` (the bytes in the temporary file, not yet renamed),
    ``validation`` (a batch of the validation pass done)."""
    spec = os.environ.get(CRASH_AT)
    if not spec or spec.partition(":")[0] != name:
        return
    _crossings[name] = _crossings.get(name, 0) + 1
    if _crossings[name] == int(spec.partition(":")[2] or 1):
        os.kill(os.getpid(), signal.SIGKILL)


# ---------------------------------------------------------------------------------------------------
# Where a command may write


class DestinationError(ValueError):
    """A destination a command must not write into (the repository, a folder of someone else's files, a file);
    a ValueError, so the command line prints it as one line."""


def refuse_writing_onto_inputs(out: str | os.PathLike, inputs, option: str = "--out") -> None:
    """A command never writes onto one of the files it reads: ``out`` the same file as (or a link to) an input
    is refused before anything is read or written."""
    out = Path(out)
    for path in inputs:
        path = Path(path)
        try:
            same = out.resolve() == path.resolve()
        except (OSError, RuntimeError):  # a symbolic link that loops: compare the names as given
            same = out.absolute() == path.absolute()
        try:
            same = same or (out.exists() and path.exists() and os.path.samefile(out, path))
        except OSError:
            pass
        if same:
            raise DestinationError(
                f"{option} {out} is one of this command's own inputs ({path}); writing it would destroy that "
                f"input — choose another {option}"
            )


def _nearest_existing(path: Path) -> Path:
    while not os.path.lexists(path) and path != path.parent:
        path = path.parent
    return path


def check_writable_folder(out: str | os.PathLike, option: str = "OUT") -> None:
    """``out`` is (or can be made) a folder this process may write into: not a file, not under a file, not on
    a read-only file system or in a folder without write permission. Checked before any work starts."""
    import errno

    out = Path(out)
    if os.path.lexists(out) and not out.is_dir():
        raise DestinationError(f"{option} {out} is a file, not a folder; name a folder to write into")
    existing = _nearest_existing(out.absolute())
    if not existing.is_dir():
        raise DestinationError(f"{option} {out} is under {existing}, which is a file, not a folder; name a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise PermissionError(
            errno.EACCES, f"{option} {out} cannot be written: {existing} is read-only for this user", str(existing)
        )
    try:
        if os.statvfs(existing).f_flag & os.ST_RDONLY:
            raise PermissionError(errno.EROFS, f"{option} {out} is on a read-only file system", str(existing))
    except AttributeError:  # no statvfs (Windows)
        pass


def claim_file(out: str | os.PathLike, command: str, ours: Callable[[Path], bool], option: str = "--out") -> None:
    """Check, before any work, that ``command`` may write the one file ``out`` (an averaged checkpoint, a JSON
    report): a new file, or one that ``ours(out)`` recognises as this command's own earlier output. Refused with
    one line: an empty name, a folder, a symbolic link, a file under a file or in a read-only folder, and any
    other existing file (a run's last.pt or best.pt, an epoch checkpoint, someone's notes), which it would
    replace. A tool that writes a folder claims it with ``course_tools.folders.claim_folder``."""
    if not str(out).strip():
        raise DestinationError(f"{option} is empty; name the file to write")
    out = Path(out)
    if out.is_symlink():
        raise DestinationError(f"{option} {out} is a symbolic link; name a real file (the write would land elsewhere)")
    if out.is_dir():
        raise DestinationError(f"{option} {out} is a folder; name the file to write inside it")
    check_writable_folder(out.parent, f"{option}'s folder")
    if out.exists() and not ours(out):
        raise DestinationError(
            f"{option} {out} already exists and was not written by {command}; it would be replaced — "
            f"choose another {option} or move it away"
        )

"""The run folder: one training run writes to it at a time (notebook 11).

While :func:`~transformer_course.train.fit` writes to ``out``, it holds an exclusive lock
(``fcntl.flock``) on ``out/.lock``, a file that holds its process id and is removed when the run ends. The
operating system releases the lock however the process ends, SIGKILL included, so a dead run never keeps the
folder locked (the ``.lock`` file a SIGKILL leaves is simply taken over). A second run on the
same folder fails at once with a :class:`~transformer_course.checkpoint.RunLockedError` that names the
folder and the pid holding it. Once the lock is held, the temporary files a killed run left behind
(``.last.pt.…tc-tmp`` and the like) are removed: nobody else can be writing them.

Platforms without ``fcntl`` (Windows) run without the lock.

:func:`claimed_run_folder` is what ``fit`` enters: the lock, then — holding it, as one step — the check that
the folder may be written: a folder that holds a run (``last.pt``, ``best.pt`` or an epoch file) is refused
unless the call resumes it or says ``overwrite``, so a second run that took long to load its data cannot
write over a first run that finished meanwhile. A new run gets its identity there (``run.json``).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from ..checkpoint import RunLockedError
from ..files import remove_stale_temp_files

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None

__all__ = ["LOCK_NAME", "RUN_FILES", "check_run_folder", "claimed_run_folder", "holds_run", "locked_run_folder"]

LOCK_NAME = ".lock"
RUN_FILES = ("last.pt", "best.pt", "epoch-", "history.json", "history.csv", "loss.png")  # what fit writes


def _written_by_a_run(temp: Path) -> bool:
    """A temporary file (``.NAME.random.tc-tmp``) of one of the files a run writes."""
    return any(temp.name.startswith(f".{name}") for name in RUN_FILES)


@contextlib.contextmanager
def locked_run_folder(out: str | os.PathLike) -> Iterator[Path]:
    """``with locked_run_folder(out):`` — the block runs holding ``out``'s lock; stale temporary files of
    a killed run are removed first. Raises :class:`RunLockedError` if another run holds the lock."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    if fcntl is None:
        yield out
        return
    lock = out / LOCK_NAME
    fd = _open_locked(lock, out)
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        remove_stale_temp_files(out, keep=lambda p: not _written_by_a_run(p))
        yield out
    finally:
        lock.unlink(missing_ok=True)  # while still holding it: the next run creates a fresh one
        os.close(fd)  # releases the lock


def holds_run(out: str | os.PathLike) -> bool:
    """True when ``out`` holds the checkpoints of a run: plain files (fit never writes a symbolic link; one
    planted at ``last.pt`` is replaced, not followed)."""
    out = Path(out)
    paths = [out / "last.pt", out / "best.pt", *out.glob("epoch-*.pt")]
    return any(p.is_file() and not p.is_symlink() for p in paths)


def check_run_folder(out: Path, resume, overwrite: bool) -> None:
    """With the lock held: refuse what would clobber a run, give a new run its id. ``resume`` is True,
    False or ``"adopt"`` (continue a ``last.pt`` from another run as the start of a new one)."""
    from .state import RUN_FILE, new_run_id, write_folder_run

    if resume not in (True, False, "adopt"):
        raise ValueError(f"resume must be True, False or 'adopt', got {resume!r}")
    if resume:
        if not (out / "last.pt").exists():
            raise ValueError(
                f"nothing to resume: {out / 'last.pt'} does not exist; drop --resume (resume=True) to start a new run"
            )
        if resume == "adopt":
            write_folder_run(out, new_run_id(), adopt=True)
        return
    if holds_run(out) and not overwrite:
        raise ValueError(
            f"{out} already holds a run; pass --resume (resume=True) to continue it, overwrite=True to replace it, "
            "or choose another --out"
        )
    if overwrite:  # the files fit wrote, and only those
        for path in out.iterdir():
            if path.is_file() and (path.name.startswith(RUN_FILES) or path.name == RUN_FILE):
                path.unlink()
    write_folder_run(out, new_run_id())


@contextlib.contextmanager
def claimed_run_folder(out: str | os.PathLike, resume=False, overwrite: bool = False) -> Iterator[Path]:
    """``with claimed_run_folder(out, resume, overwrite):`` — the lock and the run-folder check in one step
    (see the module's docstring)."""
    from .state import RUN_FILE

    made = not Path(out).exists()
    try:
        with locked_run_folder(out) as folder:
            had_identity = (Path(folder) / RUN_FILE).exists()
            check_run_folder(Path(folder), resume, overwrite)
            try:
                yield folder
            except BaseException:
                # A run that fails before its first checkpoint (a bad config, data that does not fit it) leaves
                # nothing behind: not the identity it was given, nor the folder it made.
                if not had_identity and not holds_run(folder):
                    (Path(folder) / RUN_FILE).unlink(missing_ok=True)
                raise
    except BaseException:
        if made and Path(out).is_dir() and not any(Path(out).iterdir()):
            Path(out).rmdir()
        raise


def _open_locked(lock: Path, out: Path) -> int:
    """Open ``lock`` and take its exclusive lock without waiting; the file descriptor."""
    for _ in range(10):  # a run that ended between our open() and flock() removed the file we locked: again
        try:  # O_NOFOLLOW: a symbolic link planted at .lock is refused, not followed
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        except OSError as err:
            raise RunLockedError(
                f"cannot open the run folder's lock file {lock} ({err.strerror}); it must be a plain file: remove it"
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise RunLockedError(
                f"{out} is in use by another training run (pid {holder}); wait for it to end, stop it, "
                "or choose another --out"
            ) from None
        try:
            same = os.path.samestat(os.fstat(fd), os.stat(lock, follow_symlinks=False))
        except FileNotFoundError:
            same = False
        if same:
            return fd
        os.close(fd)
    raise RunLockedError(f"could not lock {out}: its lock file keeps changing; is another run starting there?")

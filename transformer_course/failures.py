"""What the command line does with a failure: one line for what a user can act on, a traceback for a bug.

The audit behind docs/reliability.md: every expected failure (a bad argument or config, a missing or damaged
file, a full disk, a failed download, a diverged run, a locked run folder) ends as one line ``error: …`` that
says what to change, exit status 1; SIGTERM cleans up like Ctrl-C; anything else keeps its traceback.
"""

from __future__ import annotations

import errno
import sys

from .files import atomic_write_text

__all__ = [
    "DISK_FULL",
    "HINTS",
    "REASONS",
    "Terminated",
    "WRITE_ERRORS",
    "expected_errors",
    "on_sigterm",
    "one_line",
    "write_text",
]


class Terminated(BaseException):
    """SIGTERM arrived. A BaseException, like KeyboardInterrupt, so that no ``except Exception`` swallows it
    and every ``finally`` and :func:`~transformer_course.files.atomic_write` cleans up on the way out."""


DISK_FULL = {errno.ENOSPC, errno.EDQUOT}  # a full disk or quota: write() raises it naming no file
WRITE_ERRORS = DISK_FULL | {errno.EFBIG}  # what write() raises naming no file (EFBIG: past the largest file allowed)
HINTS = {
    errno.ENOSPC: "free some disk space, or write somewhere else, and run again",
    errno.EDQUOT: "your disk quota is used up; free some space, or write somewhere else, and run again",
    errno.EFBIG: "the file would grow past the largest file allowed here (the shell's `ulimit -f`, or the file "
    "system's limit): raise the limit or write somewhere that allows large files",
    errno.EACCES: "check that you may write there, or write somewhere else",
    errno.EROFS: "the file system is read-only; write somewhere else",
    errno.ENOTDIR: "a part of the path is a file, not a folder: name a folder",
    errno.EEXIST: "a file of that name is where a folder is needed: move it away, or name another folder",
    errno.EISDIR: "it is a folder: name a file",
}
# what the error says in words, for the messages Python writes as "[Errno 20] Not a directory: 'x'"
REASONS = {
    errno.ENOTDIR: "not a folder",
    errno.EEXIST: "already exists",
    errno.EISDIR: "is a folder, not a file",
    errno.ENOENT: "does not exist",
    errno.EFBIG: "the file is too large",
}


def write_text(path: str, text: str) -> None:
    """Write an output file the user named; a failure (a full disk) names it."""
    try:
        atomic_write_text(path, text)
    except OSError as err:
        raise OSError(err.errno, err.strerror or str(err), path) from err


def expected_errors() -> tuple[type[BaseException], ...]:
    """The failures a user can act on: bad arguments and configs (ValueError, which CheckpointError and
    VocabMismatchError are too), missing, unreadable or unwritable files and full disks (OSError), failed
    downloads, a diverged training, a locked run folder, a GPU out of memory. Anything else is a bug and
    keeps its traceback. Modules a command never imported cannot have raised, so they are not imported here."""
    errors: list[type[BaseException]] = [ValueError, OSError]
    modules = sys.modules
    if f"{__package__}.data.download" in modules:
        errors.append(modules[f"{__package__}.data.download"].DownloadError)
    for module, names in (
        (f"{__package__}.checkpoint", ("CheckpointError", "RunLockedError")),  # ValueErrors too, named to be clear
        (f"{__package__}.train", ("TrainingDiverged",)),
        ("torch", ("OutOfMemoryError",)),
    ):
        if module in modules:
            errors += [getattr(modules[module], name) for name in names if hasattr(modules[module], name)]
    return tuple(errors)


def one_line(err: BaseException) -> str:
    """The error as one line, with what to do for a full disk and the like."""
    message = " ".join(str(err).split()) or type(err).__name__
    if isinstance(err, OSError) and err.errno is not None and message.startswith("[Errno"):  # Python's own wording
        reason = REASONS.get(err.errno, err.strerror or message)
        names = [str(n) for n in (err.filename, err.filename2) if n is not None]
        message = f"{' → '.join(names)}: {reason}" if names else reason
    if isinstance(err, OSError) and err.errno in HINTS:
        message += f"; {HINTS[err.errno]}"
    if type(err).__name__ == "OutOfMemoryError":
        message = f"out of memory ({message[:200]}); choose a smaller preset or fewer tokens per batch"
    return message


def on_sigterm(signum, frame) -> None:
    """The SIGTERM handler the command line installs: turn the signal into :class:`Terminated`."""
    raise Terminated()

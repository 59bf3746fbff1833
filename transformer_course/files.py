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
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path, PureWindowsPath
from typing import BinaryIO

__all__ = [
    "CRASH_AT",
    "MANIFEST",
    "TEMP_SUFFIX",
    "DestinationError",
    "atomic_write",
    "atomic_write_bytes",
    "atomic_write_text",
    "check_writable_folder",
    "claim_file",
    "claim_folder",
    "crash_point",
    "edited_files",
    "replace_owned_files",
    "file_digest",
    "plan_writes",
    "read_manifest",
    "refuse_writing_onto_inputs",
    "remove_stale_temp_files",
    "remove_written",
    "write_manifest",
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
# Folders a command owns: it writes only where it wrote before, and removes only what it wrote

MANIFEST = ".tc-written.json"  # in a folder a builder made: the files it wrote there (relative paths), their SHA-256


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


HEX = frozenset("0123456789abcdef")  # the digits of a SHA-256 as the manifest writes it


def file_digest(path: str | os.PathLike) -> str:
    """The SHA-256 of a file's bytes, as the manifest records it (64 hex digits)."""
    import hashlib

    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def _unsafe_name(name) -> str | None:
    """Why ``name`` cannot be a manifest entry (a path relative to its folder, in POSIX form), or None."""
    if not isinstance(name, str):
        return f"{name!r}, which is not a path"
    if not name.strip():
        return "an empty path"
    if "\0" in name or "\\" in name:
        return f"{name!r}, which holds a NUL or a backslash"
    if name.startswith("/") or PureWindowsPath(name).drive:
        return f"{name!r}, an absolute path"
    if ".." in name.split("/"):
        return f"{name!r}, which climbs out with '..'"
    if any(part in ("", ".") for part in name.split("/")):
        return f"{name!r}, which is not a plain relative path ('.' or an empty part)"
    if name == MANIFEST:
        return f"{name!r}, the manifest itself"
    return None


def _leaves(out: Path, name: str) -> str | None:
    """Why ``out``/``name`` lies outside ``out`` once the symbolic links among its folders are followed, or None."""
    try:
        inside = (out / name).parent.resolve().is_relative_to(out.resolve())
    except (OSError, RuntimeError):  # a symbolic link that loops
        inside = False
    if inside:
        return None
    links = [p for p in (out / name).parents if p.is_relative_to(out) and p != out and p.is_symlink()]
    through = f" through the symbolic link {links[-1].relative_to(out).as_posix()}" if links else ""
    return f"{name!r}, which leads out of {out}{through}"


def read_manifest(out: str | os.PathLike, digests: bool = False) -> set[str] | dict[str, str | None] | None:
    """The files a builder wrote into ``out`` (relative POSIX paths), or None when ``out`` has no manifest; with
    ``digests``, each file's SHA-256 as written (None where the manifest does not record it: one written before
    digests were, whose ``files`` is a plain list).

    This is the one reader of a manifest, and a manifest arrives with a folder (a zip, a clone): every entry must
    name a file inside ``out``. An entry that is absolute, holds ``..``, is empty, holds a NUL or a backslash, or
    leads out of ``out`` through a symbolic link, and a manifest that is not ``{"files": [paths…], "sha256":
    {path: digest}}``, are refused with one line (:class:`DestinationError`) naming the manifest: it is not one the
    builder wrote, and removing what it lists could remove files outside ``out``."""
    import json

    out = Path(out)
    path = out / MANIFEST
    if not path.is_file():
        return None
    fix = f"move {out} away and build into a new folder"
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as err:
        raise DestinationError(f"{path} is not JSON ({err}); {fix}") from None
    shape = '{"files": [relative paths], "sha256": {path: hex digest}}'
    files = manifest.get("files") if isinstance(manifest, dict) else None
    recorded = manifest.get("sha256", {}) if isinstance(manifest, dict) else None
    if not isinstance(files, list) or not isinstance(recorded, dict):
        raise DestinationError(f"{path} is not a manifest of written files (expected the JSON object {shape}); {fix}")
    for name in files:
        problem = _unsafe_name(name) or _leaves(out, name)
        if problem:
            raise DestinationError(
                f"{path} lists {problem}: not a manifest this package wrote (it lists files inside {out} only); {fix}"
            )
    found = {name: recorded.get(name) for name in files}
    if any(d is not None and not (isinstance(d, str) and len(d) == 64 and set(d) <= HEX) for d in found.values()):
        raise DestinationError(f"{path} records a SHA-256 that is not 64 hex digits (expected {shape}); {fix}")
    return found if digests else set(found)


def write_manifest(out: str | os.PathLike, command: str, files) -> None:
    """Record in ``out``'s manifest the files ``command`` wrote there: ``files`` maps each relative path to its
    SHA-256 (None: not known), or lists the paths, whose digests are then read from the files now on disk."""
    import json

    out = Path(out)
    if not isinstance(files, Mapping):
        files = {name: None for name in files}
        for name in files:
            if not _unsafe_name(name) and (out / name).is_file() and not (out / name).is_symlink():
                files[name] = file_digest(out / name)
    problems = [p for p in map(_unsafe_name, files) if p]
    if problems:
        raise ValueError(f"a manifest entry must be a relative path inside {out}: {problems[0]}")
    names = sorted(files)
    digests = {name: files[name] for name in names if files[name] is not None}
    text = json.dumps({"written_by": command, "files": names, "sha256": digests}, indent=1)
    atomic_write_text(out / MANIFEST, text + "\n")


def edited_files(out: str | os.PathLike, digests: dict[str, str | None]) -> list[str]:
    """The files of a manifest (``digests``: :func:`read_manifest` with ``digests=True``) that are no longer what
    the builder wrote: their bytes differ from the recorded SHA-256, or a folder or a symbolic link stands where it
    wrote a file. A file gone, or one without a recorded digest, is not counted (nothing to lose, or no way to
    tell)."""
    out = Path(out)
    edited = []
    for name, digest in sorted(digests.items()):
        path = out / name
        if digest is None or not os.path.lexists(path):
            continue
        if path.is_symlink() or not path.is_file() or file_digest(path) != digest:
            edited.append(name)
    return edited


def claim_folder(out: str | os.PathLike, command: str, protected=(), option: str = "OUT") -> set[str]:
    """Check that the builder ``command`` may write into ``out`` and return what it wrote there before (empty
    for a new or empty folder). Refused, with one line: an empty name, the current folder, a git repository or
    a folder that holds one of ``protected`` (the builder's own inputs: the notebooks it reads), a file, a
    folder under a file, a read-only one, and a non-empty folder without this builder's manifest (someone
    else's files)."""
    if not str(out).strip():
        raise DestinationError(f"{option} is empty; name a new folder to write into, e.g. course/")
    out = Path(out)
    check_writable_folder(out, option)
    resolved = out.resolve()
    if resolved == Path.cwd().resolve():
        raise DestinationError(
            f"{option} {str(out)!r} is the current folder; name a new folder to write into, e.g. course/ "
            "(the build would write over files it did not make)"
        )
    if (resolved / ".git").exists():
        raise DestinationError(f"{option} {out} is a git repository; name a new folder to write into")
    for path in protected:
        if Path(path).resolve().is_relative_to(resolved):
            raise DestinationError(
                f"{option} {out} holds this command's own input {path}; name a new folder to write into"
            )
    if not out.is_dir() or not any(out.iterdir()):
        return set()
    written = read_manifest(out)
    if written is None:
        raise DestinationError(
            f"{option} {out} already holds files that {command} did not write (it has no {MANIFEST}); "
            "name a new or empty folder"
        )
    return written


def claim_file(out: str | os.PathLike, command: str, ours: Callable[[Path], bool], option: str = "--out") -> None:
    """Check, before any work, that ``command`` may write the one file ``out`` (an averaged checkpoint, a JSON
    report): a new file, or one that ``ours(out)`` recognises as this command's own earlier output. Refused with
    one line: an empty name, a folder, a symbolic link, a file under a file or in a read-only folder, and any
    other existing file (a run's last.pt or best.pt, an epoch checkpoint, someone's notes), which it would
    replace. :func:`claim_folder` does the same for a command that writes a folder."""
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


def plan_writes(out: str | os.PathLike, targets, written: set[str], option: str = "OUT") -> None:
    """Refuse, before anything is written, a planned file (``targets``: paths relative to ``out``) that would
    replace a file the builder did not write, or that lies behind a symbolic link (it would land outside
    ``out``)."""
    out = Path(out)
    for target in targets:
        relative = Path(target)
        for depth in range(1, len(relative.parts) + 1):
            part = out.joinpath(*relative.parts[:depth])
            if part.is_symlink():
                raise DestinationError(
                    f"{part} is a symbolic link; {option} must hold real folders and files only (a write "
                    "through the link would land outside it) — remove the link and run again"
                )
        if os.path.lexists(out / relative) and relative.as_posix() not in written:
            if (out / relative).is_dir():
                raise DestinationError(f"{out / relative} is a folder where this build writes a file; move it away")
            raise DestinationError(
                f"{out / relative} was not written by this build (not in {MANIFEST}); it would be replaced — "
                "move it away and run again"
            )


def remove_written(out: str | os.PathLike, written: set[str]) -> list[Path]:
    """Remove the files a builder wrote before (its manifest) and the folders this empties; every other file,
    a teacher's added one included, stays where it is. Returns what was removed.

    Nothing outside ``out`` is touched: a name that is not a plain relative path inside it is refused before
    anything is removed; a name under a symbolic link is left alone (the link is not followed); a folder that
    stands where a file was written is not removed (nor its files); only a folder this emptied is."""
    out = Path(out)
    problems = [p for p in (_unsafe_name(name) for name in written) if p]
    if problems:
        raise DestinationError(f"nothing removed from {out}: the list names {problems[0]}, not a file inside it")
    removed = []
    for name in sorted(written):
        path = out / name
        if any(p.is_symlink() for p in path.parents if p.is_relative_to(out) and p != out):
            continue  # through a link: the file may lie anywhere
        if path.is_symlink() or path.is_file():
            path.unlink()  # a link itself, never what it points to
            removed.append(path)
    for name in sorted(written, key=lambda n: -len(Path(n).parts)):
        parent = (out / name).parent
        while parent != out and parent.is_relative_to(out) and not parent.is_symlink():
            try:
                parent.rmdir()  # only when empty
            except OSError:
                break
            parent = parent.parent
    return removed


def replace_owned_files(out: str | os.PathLike, command: str, written: set[str], contents: dict[str, bytes]) -> None:
    """Write ``contents`` (relative path → bytes) into the folder ``out`` that ``command`` claimed
    (:func:`claim_folder` returned ``written``, :func:`plan_writes` checked the names): sweep what a killed write
    of these files left, record them in the manifest first (a write killed half-way still owns what it wrote),
    remove the files of the last build it no longer writes, write each atomically, then record exactly these."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    ours = tuple(f".{name}." for name in (*contents, MANIFEST))  # atomic_write's temporary files for these names
    remove_stale_temp_files(out, keep=lambda p: not p.name.startswith(ours))
    write_manifest(out, command, written | set(contents))
    remove_written(out, written - set(contents))
    for name, data in contents.items():
        with atomic_write(out / name) as f:
            f.write(data)
            crash_point(command)  # a test hook (crash_point): the bytes in the temporary file, not yet renamed
    write_manifest(out, command, sorted(contents))

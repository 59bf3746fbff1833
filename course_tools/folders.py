"""Folders a tool owns: it writes only where it wrote before, and removes only what it wrote.

The classroom, the web export and the CTranslate2 export each build a folder (``OUT``). Before any work the tool
claims it (:func:`claim_folder`: not the repository, not a folder of someone else's files) and checks each file it
plans to write (:func:`plan_writes`); in the folder it leaves a manifest, :data:`MANIFEST`, that lists every file it
wrote with its SHA-256, so that the next build replaces its own files only (:func:`remove_written`), and can tell
which of them a teacher has edited since (:func:`edited_files`). A manifest arrives with a folder (a zip, a clone),
so :func:`read_manifest` treats it as input: an entry that leads outside the folder is refused.

The single files of the runtime's commands (an averaged checkpoint, a JSON report) are claimed by
:func:`transformer_course.files.claim_file`; every write goes through :func:`transformer_course.files.atomic_write`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path, PureWindowsPath

from transformer_course.files import (
    DestinationError,
    atomic_write,
    atomic_write_text,
    check_writable_folder,
    crash_point,
    remove_stale_temp_files,
)

__all__ = [
    "MANIFEST",
    "claim_folder",
    "edited_files",
    "file_digest",
    "plan_writes",
    "read_manifest",
    "remove_written",
    "replace_owned_files",
    "write_manifest",
]

MANIFEST = ".tc-written.json"  # in a folder a builder made: the files it wrote there (relative paths), their SHA-256


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

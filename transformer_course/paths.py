"""Where the course's files are, from whichever folder a notebook runs in (English or the 中文版).

The English notebooks run in ``notebooks/``, the Chinese ones in ``notebooks/zh/``, and their code is the same.
So a code cell never writes a path relative to its own folder; it writes the path as a notebook in
``notebooks/`` sees it and passes it through :func:`course_path`, which gives the same file from both folders:

    course_path("../data")                       # Path('../data') in notebooks/, Path('../../data') in notebooks/zh/
    course_path("../runs/multi30k-cpu/best.pt")  # a run of the command line, in the top folder's runs/
    course_path("figures/architecture.svg")      # a picture of notebooks/figures/
    course_root()                                # the top folder itself (absolute)

A notebook handed out on its own, as nbgrader's assignments are (no course folder above it, its pictures copied
beside it), keeps its paths as written: its folder stands in for ``notebooks/``.

On a hub students have no course folder, so no ``runs/``: the teacher puts the pre-trained checkpoint in a folder
every student can read and sets :data:`CHECKPOINT_ENV` (``TC_CHECKPOINT=/srv/course/best.pt``) in the students'
environment; :func:`course_checkpoint` gives notebook 10 that file when its own path holds none.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

__all__ = ["CHECKPOINT_ENV", "course_checkpoint", "course_path", "course_root", "is_course_root"]

PACKAGE = "transformer_course"
CHECKPOINT_ENV = "TC_CHECKPOINT"  # the checkpoint a hub shares with its students (a file path)
PROJECT_NAME = re.compile(r"""^name\s*=\s*["']transformer[_-]course["']""", re.MULTILINE)


def is_course_root(folder: str | os.PathLike) -> bool:
    """True for the course's top folder: it holds ``notebooks/`` and either the package ``transformer_course/``
    or a ``pyproject.toml`` that names the project."""
    folder = Path(folder)
    if not (folder / "notebooks").is_dir():
        return False
    if (folder / PACKAGE).is_dir():
        return True
    pyproject = folder / "pyproject.toml"
    return pyproject.is_file() and PROJECT_NAME.search(pyproject.read_text(encoding="utf-8")) is not None


def course_root(start: str | os.PathLike | None = None) -> Path:
    """The course's top folder (absolute): the nearest folder, from ``start`` (default: the current folder)
    upwards, that :func:`is_course_root`. Raises FileNotFoundError with one line when there is none."""
    here = Path(start if start is not None else Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if is_course_root(folder):
            return folder
    raise FileNotFoundError(
        f"no course folder at or above {here}: run this inside the course's folder "
        f"(the one that holds notebooks/ and {PACKAGE}/), e.g. start Jupyter there"
    )


def course_path(relative: str | os.PathLike) -> Path:
    """``relative``, a path as the notebooks in ``notebooks/`` write it, made right for the current folder:
    ``course_path("../data")`` is ``../data`` in ``notebooks/`` and ``../../data`` in ``notebooks/zh/``.

    Outside a course folder (a notebook handed out on its own) the path is returned as it is."""
    relative = Path(relative)
    if relative.is_absolute():
        return relative
    here = Path.cwd().resolve()
    try:
        root = course_root(here)
    except FileNotFoundError:
        return relative
    return Path(os.path.relpath(os.path.normpath(root / "notebooks" / relative), here))


def course_checkpoint(path: str | os.PathLike) -> Path:
    """``path`` (a checkpoint, e.g. ``course_path("../runs/multi30k-cpu/best.pt")``) when that file exists, else the
    checkpoint a hub shares, ``$TC_CHECKPOINT``, when it is set, else ``path``. Raises ValueError with one line
    when ``$TC_CHECKPOINT`` names a folder."""
    path = Path(path)
    shared = os.environ.get(CHECKPOINT_ENV, "").strip()
    if path.is_file() or not shared:
        return path
    shared_path = Path(shared).expanduser()
    if shared_path.is_dir():
        raise ValueError(
            f"{CHECKPOINT_ENV}={shared} is a folder; set it to the checkpoint file itself, "
            f"e.g. {CHECKPOINT_ENV}={shared_path / 'best.pt'}"
        )
    return shared_path

"""The nbgrader course folder: one assignment per notebook, the config, a short README; the command line.

    python -m course_tools.classroom OUT                 # every notebook of notebooks/
    python -m course_tools.classroom OUT --only 01 02    # notebooks whose names start with 01 or 02
    python -m course_tools.classroom OUT --timeout 300 --memory 8   # seconds a cell, GiB a notebook may use
    python -m course_tools.classroom OUT --hub           # also OUT/hub/*.whl: the students' install (.hub)
    python -m course_tools.classroom OUT --force         # rebuild; refused if you edited a file it wrote
    python -m course_tools.classroom OUT --force --discard-edits   # rebuild, replacing your edits (listed)

Run it from the repository's top folder (or pass --notebooks and --solutions). Then, in OUT, use nbgrader's
own commands: ``nbgrader generate_assignment nb01``, ``nbgrader autograde nb01``, ``nbgrader generate_feedback nb01``.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from transformer_course.cli import run_guarded
from transformer_course.files import DestinationError, atomic_write_bytes

from ..edition.build import select_notebooks  # the course notebooks in order, shared with the HTML edition
from ..folders import claim_folder, edited_files, plan_writes, read_manifest, remove_written, write_manifest
from .build_cells import build_references, build_stubs, learner_files
from .cells import POINTS_RULE, is_stub_raise, parse_cell, placeholder_name, read_notebook
from .convert import Conversion, convert_notebook
from .hub import HUB_FOLDER, hub_wheel, write_hub_wheel
from .judge import config_lines
from .kernel_guard import DEFAULT_MEMORY_GIB, execute_config
from .reference import ReferenceModule, find_reference_module
from .verdict import FEEDBACK_CONFIG

__all__ = [
    "COURSE_ID",
    "Assignment",
    "build_course",
    "default_solutions",
    "main",
    "nbgrader_config",
]

COURSE_ID = "transformer_course"
COURSE_NOTEBOOK = re.compile(r"^(\d\d)_.+\.ipynb$")
REFERENCE_MODULE = re.compile(r"^nb\d\d_.+\.py$")
IMAGE_SUFFIXES = (".svg", ".png", ".jpg", ".jpeg", ".gif", ".webp")
LOCAL_LINK = re.compile(r"""\]\(\s*<?([^)\s>]+)>?[^)]*\)|\bsrc\s*=\s*["']([^"']+)["']""")


@dataclass
class Assignment:
    """One assignment of the course: its name (``nb01``), its source notebook and what it grades."""

    name: str
    notebook: Path
    conversion: Conversion
    assets: list[str]

    @property
    def points(self) -> int:
        return self.conversion.points


def default_solutions(notebooks: Path) -> Path:
    """``notebooks/solutions``: the reference solutions live beside the notebooks, not in the package."""
    return Path(notebooks) / "solutions"


def is_withheld(path: Path, solutions: Path, notebooks: Path) -> bool:
    """True when ``path`` is a reference solution: a file in ``solutions``, or, when ``solutions`` holds the
    notebooks themselves, one of its ``nbNN_*.py`` modules."""
    if notebooks.is_relative_to(solutions):
        return path.parent == solutions and REFERENCE_MODULE.match(path.name) is not None
    return path.is_relative_to(solutions)


def local_assets(nb, folder: Path, withheld: Path | None = None) -> list[str]:
    """Files beside the notebook that it shows, as paths relative to ``folder``: links in its text
    (``![](figures/x.svg)``, ``<img src=…>``) and images its code opens (``SVG(filename="figures/x.svg")``);
    never notebooks, never files outside ``folder``, never the reference solutions in ``withheld`` (the
    notebooks link them for self-learners, but a file in the source folder would reach the students): its
    files, or only its ``nbNN_*.py`` modules when ``withheld`` is ``folder`` or a folder above it."""
    links = []
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            links += [(m.group(1) or m.group(2)).split("#")[0] for m in LOCAL_LINK.finditer(cell.source)]
        elif cell.cell_type == "code" and (tree := parse_cell(cell.source)) is not None:
            strings = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
            links += [s for s in strings if s.lower().endswith(IMAGE_SUFFIXES) and "\n" not in s]
    found = set()
    for link in links:
        if not link or re.match(r"^[a-z][a-z0-9+.-]*:|^/", link, re.I) or link.endswith(".ipynb"):
            continue
        path = (folder / link).resolve()
        if withheld is not None and is_withheld(path, Path(withheld).resolve(), folder.resolve()):
            continue
        if path.is_file() and path.is_relative_to(folder.resolve()):
            found.add(path.relative_to(folder.resolve()).as_posix())
    return sorted(found)


def has_exercises(nb, build_cells: bool = True) -> bool:
    """True when a code cell holds a stub (``raise NotImplementedError``) or an answer (``name = ...``); with
    ``build_cells``, a build cell's stubs (``%%writefile my_transformer/…``) count too."""
    if build_cells and any(c.cell_type == "code" and build_stubs(c.source) for c in nb.cells):
        return True
    trees = [parse_cell(c.source) for c in nb.cells if c.cell_type == "code"]
    return any(
        is_stub_raise(node) or (isinstance(node, ast.stmt) and placeholder_name(node))
        for tree in trees
        if tree is not None
        for node in ast.walk(tree)
    )


GITIGNORE = (
    "# Written by `python -m transformer_course classroom`: this course folder holds every reference solution\n"
    "# (source/) and the gradebook, so git leaves all of it out of the repository around it.\n*\n"
)


def inside_a_git_work_tree(out: str | Path) -> bool:
    """Whether ``out`` lies in a git work tree (a folder above it holds ``.git``)."""
    folder = Path(out).resolve()
    return any((parent / ".git").exists() for parent in (folder, *folder.parents))


def nbgrader_config(course_id: str, timeout: int, fast: bool, memory_gib: float = DEFAULT_MEMORY_GIB) -> str:
    """The text of ``nbgrader_config.py``: ``memory_gib`` is what a notebook may use beyond its kernel's start."""
    fast_lines = (
        [
            "# Grading runs the notebooks with their fast sizes (TC_FAST=1: tiny models, few steps); the checkers do",
            "# not need more. Run `TC_FAST=0 nbgrader autograde ...` to grade with full sizes (and a longer timeout).",
            'os.environ.setdefault("TC_FAST", "1")',
        ]
        if fast
        else ["# Grading runs the notebooks with their full sizes; `TC_FAST=1 nbgrader autograde ...` for small ones."]
    )
    return "\n".join(
        [
            '"""nbgrader configuration of the Transformer course, written by `python -m transformer_course classroom`.',
            "",
            "Run nbgrader's commands in this folder: nbgrader generate_assignment nb01, nbgrader autograde nb01, …",
            '"""',
            "",
            "import os, sys  # noqa: E401",
            "",
            "# nbgrader runs `alembic` from PATH: this environment's tools first, also when it is not activated.",
            'os.environ["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])',
            "",
            "c = get_config()  # noqa: F821 (nbgrader provides get_config)",
            "c.CourseDirectory.root = os.path.dirname(os.path.abspath(__file__))  # this folder, wherever it is moved",
            f"c.CourseDirectory.course_id = {course_id!r}",
            "",
            *fast_lines,
            "",
            *execute_config(timeout, memory_gib),
            *FEEDBACK_CONFIG,
            "",
            *config_lines(),
            "",
            "# nbgrader's exchange (release_assignment, collect, release_feedback): this folder's own exchange/, so",
            "# nothing is written to /usr/local/share/nbgrader/exchange. On JupyterHub, name the hub's shared one,",
            '# e.g. EXCHANGE = "/srv/nbgrader/exchange".',
            'EXCHANGE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "exchange")',
            "os.makedirs(EXCHANGE, exist_ok=True)",
            "c.Exchange.root = EXCHANGE",
            "",
        ]
    )


def readme(assignments: list[Assignment], course_id: str, timeout: int) -> str:
    """The text of the folder's README.md: what is where, the points, the commands."""
    rows = [
        f"| {a.name} | {a.notebook.name} | {', '.join(n for s in a.conversion.solutions for n in s.names) or '—'} "
        f"| {len(a.conversion.graded)} | {a.points} |"
        for a in assignments
    ]
    return "\n".join(
        [
            f"# {course_id}: the nbgrader course folder",
            "",
            "Written by `python -m transformer_course classroom`. One assignment per notebook; the source notebooks",
            "in `source/<assignment>/` hold the reference solutions between `### BEGIN SOLUTION` and `### END SOLUTION`.",
            "None of the self-learners' solution files (`solutions/nbNN_*.py`) is copied here, and the sentences that",
            "link them say instead that you share the solutions after grading.",
            "",
            f"Points: {POINTS_RULE}",
            "",
            "| assignment | notebook | exercises | graded cells | points |",
            "|---|---|---|---|---|",
            *rows,
            "",
            "## Commands (run in this folder; nbgrader_config.py puts this environment's tools, `alembic`, on PATH)",
            "",
            "    nbgrader generate_assignment nb01    # release/nb01/: the student version, no solutions",
            "    # students' work goes to submitted/<student>/nb01/ (nbgrader collect, or copy it there)",
            "    nbgrader autograde nb01              # each submission in a sandbox; the points, replayed here, into gradebook.db",
            "    nbgrader generate_feedback nb01      # feedback/<student>/nb01/*.html, with the checkers' hints",
            "",
            f"A cell that runs longer than {timeout} s or outgrows the memory limit scores zero; the rest is graded.",
            "",
            "Students' kernels: install the package from `hub/*.whl` (written with `--hub`), never `pip install -e`",
            "from the repository: that leaves `notebooks/solutions/` beside the package, readable from every kernel.",
            "",
        ]
    )


COMMAND = "python -m transformer_course classroom"


def build_course(
    out: str | Path,
    notebooks: str | Path = "notebooks",
    solutions: str | Path | None = None,
    only: list[str] | None = None,
    timeout: int = 120,
    fast: bool = True,
    course_id: str = COURSE_ID,
    force: bool = False,
    memory_gib: float = DEFAULT_MEMORY_GIB,
    discard_edits: bool = False,
) -> list[Assignment]:
    """Write the nbgrader course folder ``out``: ``nbgrader_config.py``, ``README.md`` and
    ``source/nbNN/NN_name.ipynb`` (with the files its text shows) for each selected notebook. Every notebook is
    converted before anything is written; a broken convention raises :class:`ConventionError`.

    The build writes only into a folder it owns: a new or empty one, or one it built before (its manifest
    ``.tc-written.json`` lists every file it wrote). The current folder, a git repository, a folder that holds
    the notebooks, a non-empty folder without the manifest, a file, a read-only folder are refused before any
    work. ``force`` rebuilds a folder it built: it removes only the files of its manifest, so files a teacher
    added (under ``source/nbNN/`` too) and nbgrader's own (``gradebook.db``, ``release/`` …) stay; a planned file
    that would replace one it did not write, or lies behind a symbolic link, is refused.

    The manifest records each file's SHA-256 as written: a file whose bytes differ now was edited by the teacher
    (a notebook of ``source/``, ``nbgrader_config.py``), and the build refuses to replace or remove it, naming
    every such file, unless ``discard_edits``; then it prints the list of the edits it discards. The hub wheel
    (``hub/``) is not checked: it is made anew from the package each time, so a different one is only stale."""
    import nbformat

    if timeout <= 0:
        raise ValueError(f"timeout={timeout}: give the seconds a cell may run while grading, e.g. 120")
    if not 0 < memory_gib < float("inf"):
        raise ValueError(f"memory={memory_gib}: give the GiB a notebook may use while grading, e.g. 4")
    notebooks = Path(notebooks)
    solutions = Path(solutions) if solutions is not None else default_solutions(notebooks)
    written = claim_folder(out, COMMAND, protected=[notebooks, solutions])  # before any work: '' / . / the repo …
    out = Path(out)
    if (out / "source").exists() and not force:
        raise FileExistsError(f"{out} already holds a course (source/); pass --force to rewrite source/ and the config")
    assignments = []
    for path in select_notebooks(notebooks, only):
        number = COURSE_NOTEBOOK.match(path.name).group(1)
        nb = read_notebook(path)
        reference, builds = None, {}
        if has_exercises(nb):
            if not solutions.is_dir():
                raise FileNotFoundError(f"no solutions folder {solutions}; pass --solutions DIR")
            builds = build_references(nb, solutions)
            if has_exercises(nb, build_cells=False):
                reference = ReferenceModule.read(find_reference_module(solutions, number))
        conversion = convert_notebook(nb, path.name, reference, builds)
        assignments.append(Assignment(f"nb{number}", path, conversion, local_assets(nb, notebooks, solutions)))
    plan: dict[str, str | Path] = {}  # every file the build writes, relative to out: its text or the file to copy
    for assignment in assignments:
        folder = f"source/{assignment.name}"
        nbformat.validate(assignment.conversion.notebook)
        plan[f"{folder}/{assignment.notebook.name}"] = nbformat.writes(assignment.conversion.notebook) + "\n"
        for asset in assignment.assets:
            plan[f"{folder}/{asset}"] = notebooks / asset
        for name, text in learner_files(assignment.notebook, notebooks).items():
            plan[f"{folder}/{name}"] = text
    plan["nbgrader_config.py"] = nbgrader_config(course_id, timeout, fast, memory_gib)
    plan["README.md"] = readme(assignments, course_id, timeout)
    if inside_a_git_work_tree(out):  # source/ holds every reference solution: never committed by accident
        plan[".gitignore"] = GITIGNORE
    plan_writes(out, plan, written)  # before anything is removed or written
    before = read_manifest(out, digests=True) or {}  # what the build wrote last time, and each file's SHA-256
    edited = [name for name in edited_files(out, before) if not name.startswith(f"{HUB_FOLDER}/")]
    if edited and not discard_edits:
        raise DestinationError(edited_refusal(out, edited))
    if edited:
        print(f"discarding your edits to {len(edited)} file(s) of {out}, as --discard-edits asks: {', '.join(edited)}")
    data = {name: c.read_bytes() if isinstance(c, Path) else c.encode("utf-8") for name, c in plan.items()}
    out.mkdir(parents=True, exist_ok=True)
    # a build killed half-way still owns what it wrote; a file it is about to write has no digest yet
    write_manifest(
        out, COMMAND, {**{name: None for name in plan}, **{n: d for n, d in before.items() if n not in plan}}
    )
    remove_written(out, written - set(plan))
    for name, content in data.items():
        atomic_write_bytes(out / name, content)
    write_manifest(out, COMMAND, {name: hashlib.sha256(content).hexdigest() for name, content in data.items()})
    return assignments


def edited_refusal(out: Path, edited: list[str]) -> str:
    """The one line that refuses to replace the files a teacher edited in ``out``."""
    files, were, them = (edited[0], "was", "it") if len(edited) == 1 else (", ".join(edited), "were", "them")
    return (
        f"{files} in {out} {were} edited since the build wrote {them}; move your edits away, "
        "or pass --discard-edits to replace them"
    )


def main(argv: list[str] | None = None, prog: str = "python -m course_tools.classroom") -> int:
    """The command line (``prog``: the name its help shows, e.g. "python -m transformer_course classroom")."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("out", metavar="OUT", help="the course folder to write (nbgrader's course root)")
    parser.add_argument("--notebooks", default="notebooks", help="folder of the course notebooks (default: notebooks)")
    parser.add_argument(
        "--solutions",
        help="folder of the reference solutions nbNN_*.py (default: NOTEBOOKS/solutions)",
    )
    parser.add_argument("--only", nargs="+", metavar="NN", help="only notebooks whose names start with these")
    parser.add_argument("--timeout", type=int, default=120, help="seconds a cell may run while grading (default: 120)")
    parser.add_argument(
        "--memory",
        type=float,
        default=DEFAULT_MEMORY_GIB,
        metavar="GIB",
        help=f"GiB a notebook may use beyond its kernel's start while grading (default: {DEFAULT_MEMORY_GIB:g})",
    )
    parser.add_argument(
        "--full", action="store_true", help="grade with the notebooks' full sizes (default: fast mode, TC_FAST=1)"
    )
    parser.add_argument("--course-id", default=COURSE_ID, help=f"nbgrader course id (default: {COURSE_ID})")
    parser.add_argument("--force", action="store_true", help="rewrite source/ and the config of an existing folder")
    parser.add_argument(
        "--discard-edits",
        action="store_true",
        help="replace the files of OUT edited since the build wrote them (it lists them); without it they are kept",
    )
    parser.add_argument("--hub", action="store_true", help="also write OUT/hub/*.whl: the package, for students")
    args = parser.parse_args(argv)
    built = []

    def build() -> None:
        try:
            sealed = hub_wheel() if args.hub else None  # a package that cannot be sealed stops the build first
            a = args  # build_course's parameters, in order
            assignments = build_course(
                a.out, a.notebooks, a.solutions, a.only, a.timeout, not a.full, a.course_id, a.force, a.memory,
                a.discard_edits,
            )  # fmt: skip
            built.append((assignments, write_hub_wheel(args.out, COMMAND, sealed) if sealed is not None else None))
        except ModuleNotFoundError as error:
            raise ValueError(f"{error}; install the classroom extra: pip install -e '.[classroom]'") from None

    status = run_guarded(build)  # the course's one handler: one line for what a user can fix, 130 on Ctrl-C …
    if status:
        return status
    assignments, wheel = built[0]
    for a in assignments:
        print(f"{a.name}  {a.notebook.name:40s} {len(a.conversion.graded):2d} graded cells  {a.points:3d} points")
    print(f"wrote {len(assignments)} assignment(s) to {Path(args.out) / 'source'}; next, in {args.out}:")
    print(f"  nbgrader generate_assignment {assignments[0].name}   (see {Path(args.out) / 'README.md'})")
    if wheel is not None:
        print(f"the students' install, with no solution in it: pip install {wheel}")
    return 0

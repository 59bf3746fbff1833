"""Every course notebook runs top to bottom both ways a learner meets it (issue 21, item 6), and is committed clean.

The execution tests run each ``notebooks/*.ipynb`` with nbclient in fast mode (``TC_FAST=1``), with the
``python3`` kernel, as a learner's "Restart Kernel and Run All Cells" would, in a copy of the course's folder
layout (``tmp/course/notebooks/``, the package, data/, figures/ and solutions/ linked in), so that a run never
touches the learner's own ``notebooks/my_transformer/`` and does not depend on the order the tests run in:

- **as committed**: the notebook as a learner receives it. Its ``my_transformer/`` holds what the build cells of
  the notebooks before it write as committed (blanks). Every later cell still runs; every ❌ a checker prints
  says "not done yet"; a fallback to the package's code is named ("a fallback, not yours");
- **solved**: the notebook with every blank filled from notebooks/solutions/ (transformer_course.classroom.solve),
  and ``my_transformer/`` as the solved build cells before it write it. Every check prints ✅ and none ❌, no
  output says "not done yet" or falls back; notebook 08 trains the model of ``my_transformer/``.

``run_in_fast_mode`` is shared with tests/test_notebooks_zh.py. A failure names the cell and shows its source and
its error. Run only these tests with ``pytest -m notebooks``; skip them with ``pytest -m "not notebooks"``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

from transformer_course.classroom.convert import build_file, build_stubs  # noqa: E402
from transformer_course.classroom.solve import solve_notebooks  # noqa: E402
from transformer_course.learner import FILES  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
NOTEBOOKS_DIR = REPO / "notebooks"
NOTEBOOKS = sorted(NOTEBOOKS_DIR.glob("*.ipynb"))
CELL_TIMEOUT_S = 300  # per cell; a whole notebook in fast mode takes seconds to a few minutes
KERNEL_STARTUP_S = 180  # nbclient's default, 60 s, is too short on a busy 2-core CI machine
ANSI = re.compile(r"\x1b\[[0-9;]*m")
# the checkers' blank answers, in English and in the 中文版: this exercise's, or an earlier file's it builds on
NOT_DONE = ("not done yet", "还没有完成", "is not written yet", "还没有写好")
# tc.learner's lines in both languages (exercises/zh/learner.py): a fallback's mark, what names it as not the
# learner's, the line that says whose model it is ("cell N: 模型是…"), the package's model, the learner's own
FALLBACK, NOT_YOURS = ("fallback", "后备"), ("not yours", "不是你的")
MODEL_IS = ("the model is", ": 模型是", ": 模型部分是", ": 模型不是")
PACKAGE_MODEL, YOUR_MODEL = ("the model is the package's", "模型是包的"), ("the model is yours", "模型是你的")


def failing_cell_report(nb, path: Path) -> str:
    """The first cell whose outputs hold an error: its index, its source and the error, without colour codes."""
    for index, cell in enumerate(nb.cells):
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                trace = ANSI.sub("", "\n".join(output.get("traceback", [])))
                return (
                    f"{path.name}: cell {index} failed\n--- source ---\n{cell.source}\n"
                    f"--- error: {output['ename']}: {output['evalue']} ---\n{trace[-3000:]}"
                )
    return f"{path.name}: execution failed before any cell reported an error"


def course_copy(tmp_path: Path, language: str = "en") -> Path:
    """A course folder in ``tmp_path`` with the repository's package, data/, runs/, figures/ and solutions/
    linked in; returns the folder its notebooks run in (``notebooks/`` or ``notebooks/zh/``)."""
    root = tmp_path / "course"
    (root / "notebooks").mkdir(parents=True)
    for name in ("transformer_course", "data", "runs", "pyproject.toml"):
        if (REPO / name).exists():
            (root / name).symlink_to(REPO / name)
    for name in ("figures", "solutions", "GLOSSARY.md"):
        if (NOTEBOOKS_DIR / name).exists():
            (root / "notebooks" / name).symlink_to(NOTEBOOKS_DIR / name)
    here = root / "notebooks" / "zh" if language == "zh" else root / "notebooks"
    here.mkdir(exist_ok=True)
    return here


def write_earlier_files(notebook: Path, folder: Path) -> list[str]:
    """Into ``folder``/my_transformer/, what the build cells of the notebooks before ``notebook`` (beside it)
    write: the state a learner who ran them in order is in."""
    written = []
    for file, writer in FILES.items():
        if writer[:2] >= notebook.name[:2] or not (notebook.parent / writer).exists():
            continue
        for cell in nbformat.read(notebook.parent / writer, as_version=4).cells:
            if cell.cell_type == "code" and build_file(cell.source) == file:
                (folder / "my_transformer").mkdir(exist_ok=True)
                (folder / "my_transformer" / "__init__.py").touch()
                (folder / "my_transformer" / file).write_text(cell.source.partition("\n")[2] + "\n", encoding="utf-8")
                written.append(file)
    return written


def run_in_fast_mode(path: Path, monkeypatch, tmp_path, solved: bool = False) -> list[str]:
    """Execute notebook ``path`` top to bottom in fast mode, as committed or ``solved``, in a copy of the course
    (see the module's docstring); a failure names the cell, its source and its error. Returns the lines the
    notebook printed or displayed, cell by cell."""
    monkeypatch.setenv("TC_FAST", "1")  # the kernel inherits this environment
    monkeypatch.setenv("MPLCONFIGDIR", str(tmp_path / "mpl"))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    here = course_copy(tmp_path, "zh" if path.parent.name == "zh" else "en")
    if solved:
        solve_notebooks(here, path.parent, NOTEBOOKS_DIR / "solutions")  # the whole folder: earlier build cells too
    else:
        for other in path.parent.glob("[0-9][0-9]_*.ipynb"):
            (here / other.name).write_bytes(other.read_bytes())
    write_earlier_files(here / path.name, here)
    nb = nbformat.read(here / path.name, as_version=4)
    client = nbclient.NotebookClient(
        nb,
        kernel_name="python3",
        timeout=CELL_TIMEOUT_S,
        startup_timeout=KERNEL_STARTUP_S,
        resources={"metadata": {"path": str(here)}},
    )
    try:
        client.execute()
    except nbclient.exceptions.CellTimeoutError as error:
        pytest.fail(f"{path.name}: a cell ran longer than {CELL_TIMEOUT_S} s in fast mode\n{error}", pytrace=False)
    except nbclient.exceptions.CellExecutionError:
        pytest.fail(failing_cell_report(nb, path), pytrace=False)
    return printed_lines(nb)


def printed_lines(nb) -> list[str]:
    """Every line the executed notebook printed or displayed as text, prefixed with its cell's index."""
    lines = []
    for index, cell in enumerate(nb.cells):
        for output in cell.get("outputs", []):
            text = output.get("text") or output.get("data", {}).get("text/plain", "")
            text = "".join(text) if isinstance(text, list) else text
            lines += [f"cell {index}: {line}" for line in ANSI.sub("", text).splitlines()]
    return lines


def check_as_committed(path: Path, lines: list[str]) -> None:
    """A notebook as a learner receives it: every ❌ says "not done yet", every fallback says it is not theirs."""
    wrong = [line for line in lines if "❌" in line and not any(word in line for word in NOT_DONE)]
    assert not wrong, f"{path.name} as committed: a check fails other than 'not done yet':\n" + "\n".join(wrong)
    unnamed = [  # "a fallback, not yours", or the fallback module named by its name (transformer_course.fallback.X)
        line
        for line in lines
        if any(w in line for w in FALLBACK)
        and not any(w in line for w in NOT_YOURS)
        and "transformer_course.fallback." not in line
    ]
    assert not unnamed, f"{path.name}: a fallback not named as such:\n" + "\n".join(unnamed)
    if any(
        build_stubs(c.source) for n in NOTEBOOKS for c in nbformat.read(n, as_version=4).cells if c.cell_type == "code"
    ):
        assert not [line for line in lines if any(w in line for w in YOUR_MODEL)], f"{path.name}: 'yours' of blanks"


def check_solved(path: Path, lines: list[str]) -> None:
    """A solved notebook: every check ✅, none ❌, no "not done yet", no fallback."""
    bad = [line for line in lines if "❌" in line or any(word in line for word in (*NOT_DONE, "a fallback", "后备"))]
    assert not bad, f"{path.name} solved:\n" + "\n".join(bad)
    if ".check_" in path.read_text(encoding="utf-8"):
        assert any("✅" in line for line in lines), f"{path.name} solved: no check printed ✅"
    if path.name.startswith("08_"):  # the learner-written model trains: the default, and the variant once
        model_lines = [line for line in lines if any(w in line for w in MODEL_IS)]  # 07's build cell has its switches
        assert model_lines and not any(w in model_lines[0] for w in PACKAGE_MODEL), model_lines
        cells = nbformat.read(path.parent / FILES["decoder.py"], as_version=4).cells
        if any(build_file(c.source) == "decoder.py" and "positional" in c.source for c in cells):
            assert not any(w in line for w in PACKAGE_MODEL for line in model_lines), model_lines


@pytest.mark.notebooks
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_as_committed_in_fast_mode(path: Path, monkeypatch, tmp_path):
    check_as_committed(path, run_in_fast_mode(path, monkeypatch, tmp_path))


@pytest.mark.notebooks
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[f"solved-{p.stem}" for p in NOTEBOOKS])
def test_notebook_runs_solved_in_fast_mode(path: Path, monkeypatch, tmp_path):
    check_solved(path, run_in_fast_mode(path, monkeypatch, tmp_path, solved=True))


def test_committed_notebooks_have_no_outputs_or_execution_counts():
    dirty = []
    for path in NOTEBOOKS:
        nb = nbformat.read(path, as_version=4)
        for index, cell in enumerate(nb.cells):
            if cell.cell_type == "code" and (cell.outputs or cell.execution_count is not None):
                dirty.append(f"{path.name} cell {index}")
    assert not dirty, (
        "notebooks must be committed without outputs; clear them with "
        "`jupyter nbconvert --clear-output --inplace notebooks/*.ipynb`. Dirty cells: " + ", ".join(dirty)
    )


def test_notebooks_use_the_python3_kernel():
    wrong = [
        p.name
        for p in NOTEBOOKS
        if nbformat.read(p, as_version=4).metadata.get("kernelspec", {}).get("name") != "python3"
    ]
    assert not wrong, f"set the kernel to python3 (metadata.kernelspec.name) in: {', '.join(wrong)}"

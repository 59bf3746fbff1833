"""Every course notebook runs top to bottom, and is committed clean (no outputs, no execution counts).

The execution test runs each ``notebooks/*.ipynb`` with nbclient in fast mode (``TC_FAST=1``), in the
``notebooks/`` folder, with the ``python3`` kernel, as a learner's "Restart Kernel and Run All Cells" would
(``run_in_fast_mode``, which tests/test_notebooks_zh.py uses for the 中文版 in ``notebooks/zh/``).
A failure names the cell and shows its source and its error. Run only these tests with
``pytest -m notebooks``; skip them with ``pytest -m "not notebooks"``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

NOTEBOOKS_DIR = Path(__file__).resolve().parent.parent / "notebooks"
NOTEBOOKS = sorted(NOTEBOOKS_DIR.glob("*.ipynb"))
CELL_TIMEOUT_S = 300  # per cell; a whole notebook in fast mode takes seconds to a few minutes
KERNEL_STARTUP_S = 180  # nbclient's default, 60 s, is too short on a busy 2-core CI machine
ANSI = re.compile(r"\x1b\[[0-9;]*m")


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


def run_in_fast_mode(path: Path, monkeypatch, tmp_path) -> None:
    """Execute ``path`` top to bottom in fast mode, in its own folder (``notebooks/`` or ``notebooks/zh/``) as
    JupyterLab would; a failure names the cell, its source and its error."""
    monkeypatch.setenv("TC_FAST", "1")  # the kernel inherits this environment
    monkeypatch.setenv("MPLCONFIGDIR", str(tmp_path / "mpl"))
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        nb,
        kernel_name="python3",
        timeout=CELL_TIMEOUT_S,
        startup_timeout=KERNEL_STARTUP_S,
        resources={"metadata": {"path": str(path.parent)}},
    )
    try:
        client.execute()
    except nbclient.exceptions.CellTimeoutError as error:
        pytest.fail(f"{path.name}: a cell ran longer than {CELL_TIMEOUT_S} s in fast mode\n{error}", pytrace=False)
    except nbclient.exceptions.CellExecutionError:
        pytest.fail(failing_cell_report(nb, path), pytrace=False)


@pytest.mark.notebooks
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_top_to_bottom_in_fast_mode(path: Path, monkeypatch, tmp_path):
    run_in_fast_mode(path, monkeypatch, tmp_path)


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

"""Every course notebook runs top to bottom both ways a learner meets it, and is committed clean.

The execution tests run each ``notebooks/*.ipynb`` with nbclient in fast mode (``TC_FAST=1``), with the
``python3`` kernel, as a learner's "Restart Kernel and Run All Cells" would, in a copy of the course's folder
layout (``tmp/course/notebooks/``, the package, data/, figures/ and solutions/ linked in), so that a run never
touches the learner's own ``notebooks/my_transformer/`` and does not depend on the order the tests run in:

- **as committed**: the notebook as a learner receives it. Its ``my_transformer/`` holds what the build cells of
  the notebooks before it write as committed (blanks). Every later cell still runs; every ❌ a checker prints
  says "not done yet"; a fallback to the package's code is named ("a fallback, not yours");
- **solved**: the notebook with every blank filled from notebooks/solutions/ (course_tools.classroom.solve),
  and ``my_transformer/`` as the solved build cells before it write it. Every check prints ✅ and none ❌, no
  output says "not done yet" or falls back; notebook 08 trains the model of ``my_transformer/``.

The runner and the two checks live in tests/helpers.py (:func:`run_in_fast_mode`, :func:`check_as_committed`,
:func:`check_solved`), shared with tests/test_notebooks_zh.py. A failure names the cell and shows its source and
its error. Run only these tests with ``pytest -m notebooks``; skip them with ``pytest -m "not notebooks"``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
pytest.importorskip("nbclient")

from helpers import NOTEBOOKS_DIR, check_as_committed, check_solved, run_in_fast_mode  # noqa: E402

NOTEBOOKS = sorted(NOTEBOOKS_DIR.glob("*.ipynb"))


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

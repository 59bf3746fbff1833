"""Every course notebook runs top to bottom, and is committed clean (no outputs, no execution counts).

The execution test runs each ``notebooks/*.ipynb`` with nbclient in fast mode (``TC_FAST=1``), in the
``notebooks/`` folder, with the ``python3`` kernel, as a learner's "Restart Kernel and Run All Cells" would
(``run_in_fast_mode`` in tests/helpers.py, which tests/test_notebooks_zh.py uses for the 中文版 in ``notebooks/zh/``).
A failure names the cell and shows its source and its error. Run only these tests with
``pytest -m notebooks``; skip them with ``pytest -m "not notebooks"``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

from helpers import NOTEBOOKS_DIR, run_in_fast_mode  # noqa: E402  (after the importorskips)

NOTEBOOKS = sorted(NOTEBOOKS_DIR.glob("*.ipynb"))


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

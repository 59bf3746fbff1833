"""nbgrader's Execute step, replaced: the submission runs in the sandbox, the grader computes the points.

``nbgrader_config.py`` (written by ``python -m transformer_course classroom``) lists :class:`SandboxedExecute` in
``c.Autograde.autograde_preprocessors`` where nbgrader has its ``Execute``, so the teacher's command stays
``nbgrader autograde nb01``. For each submission it:

1. copies the one submission's folder (as nbgrader prepared it in ``autograded/``) into a fresh scratch folder, the
   hidden tests in, their answer digests out (the child judges nothing);
2. runs it in :mod:`.sandbox` (nbclient and a kernel in their own namespaces, the course hidden);
3. reads back, as data, the notebook's outputs and the checks' records, then deletes the scratch folder;
4. gives each graded cell the grader's verdict (:func:`.judge.grade_cell`: the checks replayed in this process):
   the replayed checkers' lines, ``graded: s of m points`` and ``s`` as the cell's result. nbgrader's own
   SaveAutoGrades, next in the list, writes those points into the gradebook from this process.

The other cells keep what they printed in the sandbox (it scores nothing). A kernel that died half-way (``os._exit``
in a cell, a crash) loses no point already earned: each check's record was written when the check finished.
"""

from __future__ import annotations

import ast
import os
import pprint
import re
import shutil
import tempfile
import textwrap
from pathlib import Path

from nbgrader.preprocessors import Execute

from . import judge, sandbox
from .kernel_guard import ungraded_timeout

__all__ = ["SandboxedExecute", "without_digests"]

GUARD_LINE = re.compile(
    r"^(this cell ran longer than|this cell used more than|此单元格运行超过|此单元格使用的内存超过)"
)
HIDDEN_DICT = re.compile(r"^(_tc_score = _tc_grade\(\n)(.*?)(\n\)\n### END HIDDEN TESTS)", re.M | re.S)


def without_digests(source: str) -> str:
    """A graded cell's source with its hidden test's answer digests left out (the child needs none)."""
    match = HIDDEN_DICT.search(source)
    if match is None:
        return source
    try:
        cell = ast.literal_eval(match.group(2).strip())
    except (ValueError, SyntaxError):
        return source
    cell.pop("digests", None)
    cell.pop("sha", None)
    text = textwrap.indent(pprint.pformat(cell, width=110, sort_dicts=False), "    ")
    return source[: match.start(2)] + text + source[match.end(2) :]


def _number(value: float):
    return int(value) if float(value).is_integer() else round(float(value), 6)


class SandboxedExecute(Execute):
    """See the module's docstring. Its settings are nbgrader's ``c.Execute.*`` (timeout, startup_timeout,
    iopub_timeout, extra_arguments)."""

    def preprocess(self, nb, resources):
        import nbformat

        folder = Path(resources.get("metadata", {}).get("path") or ".").resolve()
        course = next((p for p in folder.parents if (p / "nbgrader_config.py").exists()), folder.parents[2])
        scratch = Path(tempfile.mkdtemp(prefix="tc-grade-"))
        try:
            for item in folder.iterdir():
                if item.suffix == ".ipynb" or item.name.startswith(".tc_") or item.is_symlink():
                    continue
                if item.is_dir():
                    shutil.copytree(item, scratch / item.name, symlinks=True)
                elif item.is_file():
                    shutil.copy2(item, scratch / item.name)
            name = f"{resources.get('unique_key') or 'submission'}.ipynb"
            run_copy = nbformat.reads(nbformat.writes(nb), as_version=4)
            for cell in run_copy.cells:
                cell.source = without_digests(cell.source)
            nbformat.write(run_copy, scratch / name)
            code_cells = sum(c.cell_type == "code" for c in nb.cells)
            timeout = self.timeout or 120
            startup = self.startup_timeout or 60
            spec = {
                "notebook": name,
                "timeout": timeout,
                "startup_timeout": startup,
                "iopub_timeout": self.iopub_timeout,
                "extra_arguments": list(self.extra_arguments),
                "error_on_timeout": dict(self.error_on_timeout or {}),
                "cpu_s": (code_cells + 2) * timeout + 7 * startup,
            }
            wall = (code_cells + 1) * (timeout + self.iopub_timeout) + 7 * startup + 60
            mode, log = sandbox.run(scratch, course, spec, wall)
            self.log.info("ran %s in the sandbox (%s)", name, mode)
            if log.strip():
                self.log.info("the sandbox said: %s", log.strip()[-2000:])
            executed = _read_executed(scratch / sandbox.EXECUTED, nb)
            records = judge.read_records(scratch / sandbox.RECORDS)
        finally:
            if not os.environ.get("TC_KEEP_SCRATCH"):  # for the course's own debugging: keep it to look at
                shutil.rmtree(scratch, ignore_errors=True)
        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            meta = cell.metadata.get("nbgrader", {})
            hidden = judge.hidden_cell(cell.source) if meta.get("grade") and not meta.get("solution") else None
            if hidden is None:
                if executed is not None:
                    cell.outputs = executed.cells[index].get("outputs", [])
                    cell.execution_count = executed.cells[index].get("execution_count")
                    if not meta.get("grade"):  # a solution cell that timed out: its exercise is graded elsewhere
                        ungraded_timeout(cell.outputs, timeout)
                continue
            score, _, text = judge.grade_cell(hidden, records.get(judge.cell_key(hidden), []))
            stopped = _stopped(executed.cells[index]) if executed is not None else None
            if stopped:
                text = f"{stopped}\n{text}"
            cell.outputs = [
                nbformat.v4.new_output("stream", name="stdout", text=text + "\n"),
                nbformat.v4.new_output("execute_result", data={"text/plain": str(_number(score))}, execution_count=1),
            ]
            cell.execution_count = 1
        return nb, resources


def _stopped(cell) -> str | None:
    """What a graded cell stopped with in the sandbox, or None: the kernel guard's line (a timeout, memory) when it
    printed one, else the error's name; said as what it is, never as points (the grader's own line follows)."""
    errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
    if not errors:
        return None
    text = "".join(o.get("text", "") for o in cell.get("outputs", []) if o.get("output_type") == "stream")
    said = [line for line in text.splitlines() if GUARD_LINE.search(line)]
    error = f"{errors[0].get('ename', '')}: {errors[0].get('evalue', '')}".strip(": ")[:300]
    return "\n".join([*said[:2], f"in the sandbox this cell stopped with {error or 'an error'}"])


def _read_executed(path: Path, nb):
    """The child's executed notebook, read as data, when it has the grader's cells (same count, same kinds)."""
    import nbformat

    if not path.is_file() or path.is_symlink() or path.stat().st_size > judge.MAX_NOTEBOOK_BYTES:
        return None
    try:
        executed = nbformat.reads(path.read_text(encoding="utf-8"), as_version=4)
        nbformat.validate(executed)
    except Exception:
        return None
    if len(executed.cells) != len(nb.cells) or any(
        a.cell_type != b.cell_type for a, b in zip(executed.cells, nb.cells)
    ):
        return None
    return executed

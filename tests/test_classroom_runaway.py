"""No submission is ever lost: a runaway cell scores zero with one line saying why; every other cell is
graded.

The fast tests take the grading kernel's guard (``course_tools.classroom.kernel_guard``) apart in this
process: the output cap, the names a cell bound, the clean-up after an out-of-memory error, the lines in English
and in Chinese, and the config nbgrader reads. The end-to-end test (``slow``) grades a made-up assignment with the
real nbgrader: four runaway cells (a CPU loop, a growing list, an output flood, memory growth) between honest ones,
in one ``nbgrader autograde`` run with a 10 s timeout and a 0.5 GiB memory budget.
"""

from __future__ import annotations

import gc
import html
import os
import signal
import subprocess
import sys
import time
import weakref
from pathlib import Path

import pytest

from course_tools.classroom import main, nbgrader_config
from course_tools.classroom.kernel_guard import (
    DROPPED,
    FREED,
    MEMORY,
    OUTPUT_LINES,
    TIMEOUT,
    OutputCap,
    bound_names,
    install,
    is_out_of_memory,
    remove_names,
)
from transformer_course.i18n import get_language, set_language, t

pytestmark = pytest.mark.classroom

TIMEOUT_S, MEMORY_GIB = 10, 0.5  # the end-to-end test's limits: short, so that it runs in about a minute


# --- the guard's pieces, in this process ----------------------------------------------------------------------------


def test_the_output_cap_lets_a_cells_text_through_up_to_the_cap_then_says_once_that_the_rest_was_dropped():
    stdout, stderr = [], []
    cap = OutputCap(10, 100, lambda: "dropped")
    out = cap.wrap(lambda text: stdout.append(text) or len(text), stdout=True)
    err = cap.wrap(lambda text: stderr.append(text) or len(text), stdout=False)
    out("12345")
    err("678")  # stdout and stderr share the cap
    for _ in range(1000):
        out("abcdef")
    assert "".join(stdout) == "12345ab\ndropped\n" and stderr == ["678"]
    cap.reset()  # the next cell starts again
    out("next")
    assert stdout[-1] == "next"


def test_the_output_cap_also_counts_lines_so_that_nbgraders_1000_lines_keep_the_notice():
    stdout = []
    cap = OutputCap(10**6, 3, lambda: "dropped")
    out = cap.wrap(lambda text: stdout.append(text) or len(text), stdout=True)
    out("a\nb\n")
    out("c\nd\ne\n")
    out("f\n")
    assert "".join(stdout) == "a\nb\nc\ndropped\n"


def test_the_notice_of_a_flood_on_stderr_goes_to_stdout():
    stdout, stderr = [], []
    cap = OutputCap(4, 100, lambda: "dropped")
    cap.wrap(stdout.append, stdout=True)
    err = cap.wrap(stderr.append, stdout=False)
    err("too long")
    assert stderr == ["too "] and stdout == ["\ndropped\n"]


def test_the_names_a_cell_bound_are_the_new_and_the_rebound_ones_not_the_shells():
    kept, rebound = [1], [2]
    before = {"kept": id(kept), "rebound": id(rebound), "_": 0}
    namespace = {"kept": kept, "rebound": [3], "new": 4, "_": 5, "_i7": "x", "_7": 6, "Out": {}}
    assert bound_names(namespace, before) == ["new", "rebound"]


def test_removing_the_names_frees_what_they_held():
    class Block:
        pass

    namespace = {"blocks": [Block()], "kept": 1}
    alive = weakref.ref(namespace["blocks"][0])
    remove_names(namespace, ["blocks"])
    assert alive() is None and namespace == {"kept": 1}


def test_out_of_memory_is_pythons_memory_error_or_torchs_failed_cpu_allocation():
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError) as failed:
        torch.empty(2**62, dtype=torch.uint8)  # 4 EiB: no machine has it
    assert is_out_of_memory(failed.value) and is_out_of_memory(MemoryError())
    assert not is_out_of_memory(RuntimeError("shape mismatch")) and not is_out_of_memory(KeyboardInterrupt())


@pytest.fixture
def shell():
    """A plain IPython shell with the guard (no memory limit: it would bind this test process)."""
    interactiveshell = pytest.importorskip("IPython.core.interactiveshell")
    shell = interactiveshell.InteractiveShell.instance()
    language = get_language()
    install(timeout_s=7, memory_gib=0, shell=shell)
    yield shell
    shell.set_custom_exc((), None)
    set_language(language)
    interactiveshell.InteractiveShell.clear_instance()
    gc.collect()


@pytest.mark.slow
def test_after_an_out_of_memory_error_the_cells_names_are_removed_with_a_line_before_the_traceback(shell, capfd):
    shell.run_cell("kept = 1")
    result = shell.run_cell("blocks = [bytearray(10)]\nkept = 2\nraise MemoryError")
    assert isinstance(result.error_in_exec, MemoryError)  # the cell still fails: nbgrader scores it zero
    assert "blocks" not in shell.user_ns and "kept" not in shell.user_ns
    printed = capfd.readouterr()
    line = t(MEMORY, gib="0")
    assert printed.out.index(line) < printed.out.index(t(FREED, names="blocks, kept")) < printed.out.index("Traceback")
    assert "MemoryError" in printed.out and printed.err == ""  # the guard writes nothing to stderr


@pytest.mark.slow
def test_a_timeouts_interrupt_that_comes_while_the_guard_cleans_up_does_not_stop_it(shell, capfd, monkeypatch):
    from course_tools.classroom import kernel_guard

    def remove_while_interrupted(namespace, names):
        os.kill(os.getpid(), signal.SIGINT)  # nbgrader's interrupt, a moment after the MemoryError
        time.sleep(0.2)
        remove_names(namespace, names)

    monkeypatch.setattr(kernel_guard, "remove_names", remove_while_interrupted)
    shell.run_cell("blocks = [bytearray(10)]\nraise MemoryError")
    assert "blocks" not in shell.user_ns and MemoryError in shell.custom_exceptions  # the guard is still there
    assert t(FREED, names="blocks") in capfd.readouterr().out


INTERRUPTED = "import os, signal, time\nxs = [1]\nos.kill(os.getpid(), signal.SIGINT)\ntime.sleep(5)"  # the grader's


def test_an_interrupted_cell_gets_the_timeout_line_in_the_notebooks_language(shell, capfd):
    shell.run_cell("from transformer_course.i18n import set_language\nset_language('zh')")
    result = shell.run_cell(INTERRUPTED)
    assert isinstance(result.error_in_exec, KeyboardInterrupt) and "xs" in shell.user_ns  # only memory is freed
    printed = capfd.readouterr().out
    assert "此单元格运行超过 7 秒" in printed and printed.index("此单元格") < printed.index("KeyboardInterrupt")


def test_a_keyboard_interrupt_the_cell_raises_itself_is_its_error_not_a_timeout(shell, capfd):
    result = shell.run_cell("raise KeyboardInterrupt")
    assert isinstance(result.error_in_exec, KeyboardInterrupt)
    printed = capfd.readouterr().out
    assert "KeyboardInterrupt" in printed and t(TIMEOUT, seconds=7) not in printed
    shell.run_cell(INTERRUPTED)  # the grader's interrupt, in the next cell, is one again
    assert t(TIMEOUT, seconds=7) in capfd.readouterr().out


def test_a_cell_that_is_not_graded_is_not_told_it_scores_zero():
    from course_tools.classroom.kernel_guard import TIMEOUT_UNGRADED, ungraded_timeout

    outputs = [{"output_type": "stream", "name": "stdout", "text": t(TIMEOUT, seconds=7) + "\n"}]
    ungraded_timeout(outputs, 7)
    assert outputs[0]["text"] == t(TIMEOUT_UNGRADED, seconds=7) + "\n" and "scores 0" not in outputs[0]["text"]


def test_other_errors_show_their_traceback_as_they_would_without_the_guard(shell, capfd):
    result = shell.run_cell("xs = [1]\nraise RuntimeError('shape mismatch')")
    assert isinstance(result.error_in_exec, RuntimeError) and "xs" in shell.user_ns
    printed = capfd.readouterr().out
    assert "shape mismatch" in printed and t(MEMORY, gib="0") not in printed and t(TIMEOUT, seconds=7) not in printed


# --- the config nbgrader reads --------------------------------------------------------------------------------------


@pytest.mark.slow
def test_the_config_puts_this_environments_tools_first_on_path_so_nbgrader_finds_alembic(monkeypatch):
    from traitlets.config import Config

    monkeypatch.setenv("PATH", "/usr/bin")  # nbgrader run as .venv/bin/nbgrader, the environment not activated
    config = Config()
    exec(nbgrader_config("tc", 10, True, 0.5), {"get_config": lambda: config, "__file__": "/x/nbgrader_config.py"})
    assert os.environ["PATH"].split(os.pathsep)[:2] == [os.path.dirname(sys.executable), "/usr/bin"]
    execute = config.Execute
    assert execute.raise_on_iopub_timeout is False and execute.iopub_timeout >= 30 and execute.timeout == 10
    assert execute.extra_arguments[0] == "--HistoryManager.hist_file=:memory:"  # nbgrader's own default, kept
    assert "memory_gib=0.5" in execute.extra_arguments[1] and "timeout_s=10" in execute.extra_arguments[1]


@pytest.mark.parametrize("memory", ["0", "-1", "inf", "nan"])
def test_a_memory_budget_that_is_not_a_positive_number_is_refused_in_one_line(tmp_path, capsys, memory):
    assert main([str(tmp_path / "course"), "--memory", memory, "--notebooks", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"memory={float(memory)}: give the GiB a notebook may use while grading" in err


# --- end to end, with the real nbgrader -----------------------------------------------------------------------------

HONEST = "def {name}(x):\n    ### BEGIN SOLUTION\n    return {body}\n    ### END SOLUTION"
CELLS = [  # (grade_id, the reference solution cell, the graded cell, what the student writes instead, or None)
    ("double", HONEST.format(name="double", body="2 * x"), "assert double(2) == 4", None),
    (
        "spin",
        HONEST.format(name="spin", body="x"),
        "assert spin(1) == 1",
        "def spin(x):\n    while True:\n        pass",
    ),
    ("square", HONEST.format(name="square", body="x * x"), "assert square(3) == 9", None),
    (
        "count",
        "def count_to_ten(xs):\n    ### BEGIN SOLUTION\n    xs.extend(range(10))\n    return xs\n    ### END SOLUTION",
        "assert count_to_ten([]) == list(range(10))",
        "def count_to_ten(xs):\n    i = 0\n    while i < 10:\n        xs.append(i)  # i += 1 forgotten\n    return xs",
    ),
    ("negate", HONEST.format(name="negate", body="-x"), "assert negate(3) == -3", None),
    (
        "shout",
        HONEST.format(name="shout", body="print('x' * 100)"),
        "assert shout(1) is None",
        "def shout(x):\n    while True:\n        print('x' * 100)",
    ),
    ("half", HONEST.format(name="half", body="x / 2"), "assert half(3) == 1.5", None),
    (
        "grow",
        "def fill(blocks):\n    ### BEGIN SOLUTION\n    blocks += [bytearray(100) for _ in range(3)]\n    ### END SOLUTION",
        "blocks = []\nfill(blocks)\nassert len(blocks) == 3",
        "def fill(blocks):\n    while True:\n        blocks.append(bytearray(100_000_000))  # 100 MB each",
    ),
    (  # the memory the runaway held is back: 0.3 GB fits into the 0.5 GiB budget again
        "room",
        HONEST.format(name="room", body="bytearray(x)"),
        "assert len(room(300_000_000)) == 300_000_000",
        None,
    ),
]
RUNAWAYS = {"spin": "time", "count": "time or memory", "shout": "time", "grow": "memory"}


def metadata(grade_id: str, points: int | None = None) -> dict:
    graded = points is not None
    return {
        "nbgrader": {
            "grade": graded,
            "grade_id": grade_id,
            "locked": graded,
            **({"points": points} if graded else {}),
            "schema_version": 3,
            "solution": not graded,
            "task": False,
        }
    }


def without_markers(solution: str) -> str:
    return "\n".join(
        line for line in solution.splitlines() if "### BEGIN SOLUTION" not in line and "### END" not in line
    )


def run_nbgrader(course: Path, *args: str) -> None:
    """``nbgrader ARGS`` in the course folder, run as ``.venv/bin/nbgrader`` without the environment activated:
    its folder is not on PATH (the config puts it there for ``alembic``)."""
    here = os.path.dirname(sys.executable)
    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep) if p and p != here)
    env = dict(os.environ, PATH=path or "/usr/bin", TC_FAST="1", MPLCONFIGDIR=str(course.parent / "mpl"))
    done = subprocess.run(
        [sys.executable, "-m", "nbgrader", *args], cwd=course, env=env, capture_output=True, text=True, timeout=600
    )
    log = done.stdout + done.stderr
    assert done.returncode == 0 and "Removing failed assignment" not in log, log[-4000:]


@pytest.fixture(scope="module")
def graded_runaways(tmp_path_factory):
    nbformat = pytest.importorskip("nbformat")
    pytest.importorskip("nbgrader", reason="the classroom extra: pip install -e '.[classroom]'")
    course = tmp_path_factory.mktemp("runaway") / "course"
    (course / "source" / "rw").mkdir(parents=True)
    (course / "nbgrader_config.py").write_text(nbgrader_config("transformer_course", TIMEOUT_S, True, MEMORY_GIB))
    cells = [nbformat.v4.new_markdown_cell("# Runaway cells")]
    for grade_id, solution, graded, _ in CELLS:
        cells.append(nbformat.v4.new_code_cell(solution, metadata=metadata(grade_id)))
        cells.append(nbformat.v4.new_code_cell(graded, metadata=metadata(f"test_{grade_id}", points=1)))
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata.kernelspec = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, course / "source" / "rw" / "runaway.ipynb")
    run_nbgrader(course, "generate_assignment", "rw")
    released = nbformat.read(course / "release" / "rw" / "runaway.ipynb", as_version=4)
    student = {grade_id: code or without_markers(solution) for grade_id, solution, _, code in CELLS}
    for cell in released.cells:
        if cell.metadata.get("nbgrader", {}).get("solution"):  # the reference, or the student's runaway
            cell.source = student[cell.metadata["nbgrader"]["grade_id"]]
    submitted = course / "submitted" / "dana" / "rw" / "runaway.ipynb"
    submitted.parent.mkdir(parents=True)
    nbformat.write(released, submitted)
    run_nbgrader(course, "autograde", "rw")
    run_nbgrader(course, "generate_feedback", "rw")
    return course


@pytest.mark.slow
def test_each_runaway_cell_scores_zero_with_its_line_and_every_honest_cell_gets_its_points(graded_runaways):
    nbformat = pytest.importorskip("nbformat")
    from nbgrader.api import Gradebook

    course = graded_runaways
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "transformer_course") as gradebook:
        submission = gradebook.find_submission("rw", "dana")  # not removed
        scores = {grade.name: grade.score for notebook in submission.notebooks for grade in notebook.grades}
    assert scores == {f"test_{g}": 0 if g in RUNAWAYS else 1 for g, _, _, _ in CELLS}, scores
    graded = nbformat.read(course / "autograded" / "dana" / "rw" / "runaway.ipynb", as_version=4)
    printed = {
        cell.metadata["nbgrader"]["grade_id"]: "".join(
            o.get("text", "") for o in cell.outputs if o.get("name") == "stdout"
        )
        for cell in graded.cells
        if cell.metadata.get("nbgrader", {}).get("grade")
    }
    time_line, memory_line = t(TIMEOUT, seconds=TIMEOUT_S), t(MEMORY, gib=f"{MEMORY_GIB:g}")
    page = html.unescape(next((course / "feedback" / "dana" / "rw").glob("*.html")).read_text(encoding="utf-8"))
    for grade_id, kind in RUNAWAYS.items():
        lines = [line for line, name in ((time_line, "time"), (memory_line, "memory")) if name in kind]
        assert any(line in printed[f"test_{grade_id}"] for line in lines), (
            grade_id,
            printed[f"test_{grade_id}"][-500:],
        )
    assert all(line in page for line in (time_line, memory_line, t(FREED, names="blocks")))
    dropped = t(DROPPED, mb="1", lines=OUTPUT_LINES)
    assert dropped in printed["test_shout"] and dropped in page
    assert "Output truncated" not in printed["test_shout"]  # the guard cut the flood before nbgrader had to

"""Grading at a process boundary: the student's notebook runs in a sandbox (classroom/sandbox.py) and only records what
its checks observed; nbgrader's own process replays each check with its own checkers (classroom/judge.py) and sets
the points. The fast tests replay records made here; the slow ones grade with the real nbgrader, in the sandbox, a
student who tries each cheat on notebook 01 (each scores 0) and the reference (full marks, also after ``os._exit``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import torch

from course_tools.classroom import judge, sandbox
from transformer_course.exercises import nb01_masks

HOME = str(Path(judge.__file__).resolve().parents[2] / "transformer_course")
LOCAL_CELL = {
    "text": "ex.check_local_mask(local_mask)",
    "aliases": {"ex": "nb01_masks"},
    "calls": [["check_local_mask", 2]],
}
QUIZ_CELL = {
    "text": "ex.check_quiz(q1=q1, q2=q2, q3=q3);",
    "aliases": {"ex": "nb01_masks"},
    "calls": [["check_quiz", 3]],
}
RIGHT = {"q1": 2, "q2": "b", "q3": 2560}  # notebooks/solutions/nb01_masks.py's QUIZ


def local_mask(size, window):  # the reference's formula, written here
    i = torch.arange(size)[:, None]
    j = torch.arange(size)[None, :]
    return ((i - j >= 0) & (i - j < window))[None, None]


def too_wide(size, window):  # a plausible mistake: one key too many
    return torch.ones(size, size, dtype=torch.bool).tril().triu(-window)[None, None]


def record(tmp_path: Path, cell: dict, namespace: dict) -> list[dict]:
    """Run the cell's hidden test as the sandbox does (TC_RECORDS set) and read back its records."""
    from course_tools.classroom import verdict

    folder = tmp_path / "records"
    os.environ["TC_RECORDS"] = str(folder)
    try:
        verdict.grade(HOME, dict(namespace, ex=nb01_masks), cell)
    finally:
        del os.environ["TC_RECORDS"]
    return judge.read_records(folder).get(judge.cell_key(cell), [])


def test_plain_data_goes_through_torch_load_weights_only_and_comes_back_equal(tmp_path):
    value = {
        "t": torch.arange(6.0).reshape(2, 3),
        "b": torch.tensor([True, False]),
        "n": [1, 2.5, "b", None, (3, 4), {5, 6}],
        "size": torch.Size([2, 3]),
        "nan": float("nan"),
    }
    torch.save(judge.encode(value), tmp_path / "r.pt")
    back = judge.decode(torch.load(tmp_path / "r.pt", weights_only=True))
    assert judge.same(judge.encode(back), judge.encode(value))
    assert back["n"][4] == (3, 4) and back["n"][5] == {5, 6} and isinstance(back["size"], torch.Size)


def test_a_tensor_subclass_whose_equality_is_always_true_arrives_as_a_plain_tensor_of_its_values():
    class Liar(torch.Tensor):
        def __eq__(self, other):
            return True

    lie = torch.zeros(3).as_subclass(Liar)
    assert (lie == torch.ones(3)) is True  # it fools an == in the student's process
    plain = judge.decode(judge.encode(lie))
    assert type(plain) is torch.Tensor and not judge.same(judge.encode(plain), judge.encode(torch.ones(3)))
    assert isinstance(judge.decode({"__kind__": "object", "type": "x.Liar"}), judge.Opaque)


def test_the_grader_replays_a_right_function_to_full_points_and_a_wrong_one_to_zero(tmp_path, capsys):
    right = record(tmp_path / "right", LOCAL_CELL, {"local_mask": local_mask})
    wrong = record(tmp_path / "wrong", LOCAL_CELL, {"local_mask": too_wide})
    assert len(right) == len(wrong) == 1 and any(e["op"] == "call" for e in right[0]["objects"])
    assert judge.grade_cell(LOCAL_CELL, right)[0] == 2
    score, total, text = judge.grade_cell(LOCAL_CELL, wrong)
    assert (score, total) == (0, 2)
    expected = nb01_masks.check_local_mask(too_wide)  # the hint the learner gets in their own notebook
    assert expected.message in text and "graded: 0 of 2 points" in text


def test_a_forged_output_or_other_inputs_in_a_record_score_zero(tmp_path):
    [good] = record(tmp_path, LOCAL_CELL, {"local_mask": local_mask})
    forged = json.loads(json.dumps(good, default=lambda x: None))  # every tensor gone: outputs that are not masks
    forged["rng_start"] = good["rng_start"]
    assert judge.grade_cell(LOCAL_CELL, [forged])[0] == 0
    events = [dict(e) for e in good["objects"]]
    first = next(i for i, e in enumerate(events) if e["op"] == "call")
    events[first]["args"] = {"__kind__": "tuple", "items": [7, 1]}
    moved = dict(good, objects=events)
    score, _, text = judge.grade_cell(LOCAL_CELL, [moved])
    assert score == 0 and ("inputs" in text or "does not replay" in text), text
    assert judge.grade_cell(LOCAL_CELL, [good, good])[0] == 0  # a check recorded twice in one run: 0


ATTENTION_CELL = {
    "text": "ex.check_attention(attention)",
    "aliases": {"ex": "nb02_attention"},
    "calls": [["check_attention", 2]],
}


def test_gradients_through_the_learners_function_are_replayed_and_forged_ones_score_zero(tmp_path):
    from course_tools.classroom import verdict
    from transformer_course.attention import scaled_dot_product_attention

    def attention(query, key, value, mask=None, dropout=None):  # the package's formula, in the learner's place
        scores = query @ key.transpose(-2, -1) / query.size(-1) ** 0.5
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        weights = scores.softmax(-1)
        if dropout is not None:
            weights = dropout(weights)
        return weights @ value, weights

    q = torch.randn(1, 2, 3, 4, requires_grad=True)
    assert torch.allclose(attention(q, q, q)[0], scaled_dot_product_attention(q, q, q)[0], atol=1e-6)
    folder = tmp_path / "records"
    os.environ["TC_RECORDS"] = str(folder)
    try:
        verdict.grade(HOME, {"attention": attention}, ATTENTION_CELL)
    finally:
        del os.environ["TC_RECORDS"]
    [good] = judge.read_records(folder)[judge.cell_key(ATTENTION_CELL)]
    assert any(e.get("grads") for e in good["objects"])
    assert judge.grade_cell(ATTENTION_CELL, [good])[0] == 2
    events = [dict(e) for e in good["objects"]]
    last = next(e for e in reversed(events) if e.get("grads"))
    taken = dict(last["grads"][-1])
    taken["in"] = [judge.encode(torch.zeros_like(judge.decode(g))) for g in taken["in"]]
    last["grads"] = [*last["grads"][:-1], taken]
    assert judge.grade_cell(ATTENTION_CELL, [dict(good, objects=events)])[0] == 0


def test_each_quiz_answer_is_replayed_alone_one_point_each(tmp_path):
    records = record(tmp_path, QUIZ_CELL, dict(RIGHT, q2="a"))
    assert judge.grade_cell(QUIZ_CELL, records)[:2] == (2, 3)
    assert judge.grade_cell(QUIZ_CELL, record(tmp_path / "all", QUIZ_CELL, RIGHT))[:2] == (3, 3)


def test_without_records_a_cell_scores_zero():
    assert judge.grade_cell(LOCAL_CELL, [])[:2] == (0, 2)


def test_the_hidden_tests_digests_are_left_out_of_what_the_sandbox_runs():
    from course_tools.classroom.autograde import without_digests
    from course_tools.classroom.cells import graded_source

    source = graded_source("ex.check_quiz(q1=q1, q2=q2, q3=q3)", {"ex": "nb01_masks"}, set(), {"q1", "q2", "q3"})[0]
    assert "'digests'" in source
    stripped = without_digests(source)
    assert "'digests'" not in stripped and "'sha'" not in stripped
    assert judge.cell_key(judge.hidden_cell(stripped)) == judge.cell_key(judge.hidden_cell(source))


# --- the sandbox itself -------------------------------------------------------------------------------------------

PROBE = """
import os, subprocess, sys, time
seen = [p for p in {secret!r} if os.path.exists(p)]
print("SEEN", seen)
try:
    open({outside!r}, "w").write("x")
    print("WROTE outside")
except OSError as error:
    print("write refused:", type(error).__name__)
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)  # tc-cheat-marker"], start_new_session=True)
print("uid", os.getuid())
"""


@pytest.mark.slow
@pytest.mark.parametrize("forced", [None, "user-namespaces"], ids=["strongest", "user-namespaces"])
def test_the_sandbox_hides_the_course_refuses_writes_and_leaves_no_process(tmp_path, forced):
    """The strongest isolation this machine permits, and the one a teacher who is not root gets (``unshare --user
    --map-root-user``, capabilities dropped), forced here where the machine permits it."""
    nbformat = pytest.importorskip("nbformat")
    pytest.importorskip("nbclient")
    if forced and not sandbox._can_unshare(user=True):
        pytest.skip("this machine does not permit user namespaces")
    course = tmp_path / "course"
    (course / "source").mkdir(parents=True)
    secret = course / "source" / "answers.txt"
    secret.write_text("the answers")
    solutions = Path(HOME).parent / "notebooks" / "solutions" / "nb01_masks.py"
    outside = str(course / "pwned.txt")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(PROBE.format(secret=[str(secret), str(solutions)], outside=outside))]
    )
    nbformat.write(nb, scratch / "probe.ipynb")
    mode, log = sandbox.run(
        scratch,
        course,
        {"notebook": "probe.ipynb", "timeout": 60},
        wall_s=300,
        mode=forced and sandbox.Isolation(forced),
    )
    assert forced is None or mode == forced
    executed = nbformat.read(scratch / sandbox.EXECUTED, as_version=4)
    text = "".join(o.get("text", "") for o in executed.cells[0].outputs)
    assert "SEEN []" in text, (mode, text, log)
    assert "write refused" in text and not Path(outside).exists(), text
    if mode != "process":
        alive = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
        assert "tc-cheat-marker" not in alive, "a process started in the sandbox outlived it"
    if mode == "namespaces":
        assert "uid 65534" in text


DRIVER = """
import json, sys
from pathlib import Path
from course_tools.classroom import sandbox
mode, log = sandbox.run(Path(sys.argv[1]), Path(sys.argv[2]), {"notebook": "probe.ipynb", "timeout": 60}, wall_s=300)
print(json.dumps({"mode": mode, "log": log}))
"""


@pytest.mark.slow
@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0 or shutil.which("setpriv") is None,
    reason="becoming an unprivileged teacher needs root and setpriv",
)
def test_a_teacher_who_is_not_root_grades_in_a_user_namespace_behind_the_same_walls():
    """The grader run by an ordinary user (here ``nobody``): the sandbox takes a user namespace (``unshare --user``)
    and the student's notebook still sees neither the course nor the repository, writes nothing outside its scratch
    folder and leaves no process behind."""
    nbformat = pytest.importorskip("nbformat")
    base = Path(tempfile.mkdtemp(prefix="tc-teacher-"))  # pytest's tmp_path is root's alone: nobody cannot enter
    try:
        course, scratch = base / "course", base / "scratch"
        (course / "source").mkdir(parents=True)
        scratch.mkdir()
        secret = course / "source" / "answers.txt"
        secret.write_text("the answers")
        solutions = Path(HOME).parent / "notebooks" / "solutions" / "nb01_masks.py"
        outside = str(course / "pwned.txt")
        probe = PROBE.format(secret=[str(secret), str(solutions)], outside=outside)
        nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(probe)]), scratch / "probe.ipynb")
        for path in [base, *base.rglob("*")]:
            os.lchown(path, sandbox.NOBODY, sandbox.NOBODY)  # the teacher's own course and scratch folders
        env = {"PATH": os.environ["PATH"], "HOME": str(base), "PYTHONPATH": str(Path(HOME).parent)}
        become = ["setpriv", f"--reuid={sandbox.NOBODY}", f"--regid={sandbox.NOBODY}", "--clear-groups"]
        reach = "import os, sys, course_tools; sys.exit(not os.access(os.path.realpath(sys.executable), os.X_OK))"
        if subprocess.run([*become, sys.executable, "-c", reach], env=env, capture_output=True).returncode:
            pytest.skip("this machine's Python or the course lies where an unprivileged user cannot reach it")
        done = subprocess.run(
            [*become, sys.executable, "-c", DRIVER, str(scratch), str(course)],
            cwd=base,
            env=env,
            capture_output=True,
            text=True,
            timeout=400,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        result = json.loads(done.stdout.strip().splitlines()[-1])
        if result["mode"] == "process":
            pytest.skip("this kernel does not let an unprivileged user create namespaces (unshare --user)")
        assert result["mode"] == "user-namespaces"
        executed = nbformat.read(scratch / sandbox.EXECUTED, as_version=4)
        text = "".join(o.get("text", "") for o in executed.cells[0].outputs)
        assert "SEEN []" in text, (text, result["log"])
        assert "write refused" in text and not Path(outside).exists(), text
        alive = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
        assert "tc-cheat-marker" not in alive, "a process started in the sandbox outlived it"
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_a_kernel_slow_to_start_is_tried_again_with_twice_the_time_and_the_notebook_still_runs(tmp_path, capsys):
    """nbclient's "Kernel didn't respond" twice, then a start: the budget doubles each time (whole seconds, as
    nbclient takes them; a fraction is rounded up) and the notebook runs on the third try."""
    nbformat = pytest.importorskip("nbformat")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print('ran')")])
    budgets = []

    class SlowToStart:  # nbclient.NotebookClient's constructor and execute(), as sandbox.run_notebook uses them
        def __init__(self, nb, startup_timeout, **_):
            self.nb = nb
            budgets.append(startup_timeout)

        def execute(self):
            if len(budgets) < 3:
                raise RuntimeError(f"Kernel didn't respond in {budgets[-1]} seconds")
            self.nb.cells[0].execution_count = 1

    sandbox.run_notebook(nb, {"startup_timeout": 0.5, "start_tries": 5}, tmp_path, client_class=SlowToStart)
    assert budgets == [1, 2, 4] and nb.cells[0].execution_count == 1
    assert capsys.readouterr().out.count("did not start") == 2
    budgets.clear()
    nb.cells[0].execution_count = None
    sandbox.run_notebook(nb, {"startup_timeout": 1, "start_tries": 2}, tmp_path, client_class=SlowToStart)
    assert budgets == [1, 2] and nb.cells[0].execution_count is None  # out of tries: said, and nothing ran
    assert "did not start in 2 tries" in capsys.readouterr().out


@pytest.mark.slow
def test_where_namespaces_are_not_permitted_the_fallback_still_runs_the_notebook_in_a_child(tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    monkeypatch.setenv("TC_SANDBOX", "process")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    code = "import os\nprint('pid', os.getpid(), 'home', os.environ.get('HOME'), 'secret', 'TC_SECRET' in os.environ)"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)]), scratch / "probe.ipynb")
    monkeypatch.setenv("TC_SECRET", "the teacher's")
    mode, log = sandbox.run(scratch, tmp_path / "course", {"notebook": "probe.ipynb", "timeout": 60}, wall_s=300)
    executed = nbformat.read(scratch / sandbox.EXECUTED, as_version=4)
    text = "".join(o.get("text", "") for o in executed.cells[0].outputs)
    assert mode == "process" and f"home {scratch}" in text and "secret False" in text, (text, log)
    assert f"pid {os.getpid()}" not in text


# --- end to end: the cheats on the real nbgrader ------------------------------------------------------------------

# code a student puts in a cell of their own after the checkers' import; the exercises are left undone
FORGING = {
    # the verdict's frames: any function that walks up to the grading module replaces its score
    "frames": """
import sys
def _forge(*args, **kwargs):
    frame = sys._getframe()
    while frame is not None:
        if "_score" in frame.f_globals and "grade" in frame.f_globals:
            frame.f_globals["_score"] = lambda calls, record: (sum(p for _, p in calls),) * 2
        frame = frame.f_back
    return torch.zeros(1)
mask_from_lengths = window_mask = local_mask = _forge
""",
    # each cell's first result made 'ok' by a hook, which nbgrader reads as full points
    "hook": """
_ip = get_ipython()
def _ok(info=None):
    _ip.displayhook.quiet = lambda: False
    _ip.displayhook("ok")
_ip.events.register("pre_run_cell", _ok)
""",
    # a tensor subclass whose comparisons are always true
    "subclass": """
class _Liar(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func in (torch.equal, torch.allclose, torch.Tensor.__eq__, torch.Tensor.equal):
            return True
        return super().__torch_function__(func, types, args, kwargs or {})
    def __eq__(self, other):
        return True
def _liar(*args, **kwargs):
    shape = [s for s in args if isinstance(s, int)][:1] * 2 or [5, 5]
    return torch.zeros(1, 1, *shape, dtype=torch.bool).as_subclass(_Liar)
mask_from_lengths = window_mask = local_mask = _liar
""",
}
# code that tries to reach the gradebook, the course's files, or to outlive the grading
WRITER = """
import sqlite3, time
def _write(seconds):
    end = time.time() + seconds
    while time.time() < end:
        try:
            with sqlite3.connect({db!r}, timeout=1) as db:
                db.execute("UPDATE grade SET manual_score = 3")
        except Exception:
            pass
        time.sleep(0.5)
"""
REACHING = {
    "gradebook": WRITER + "_write(2)\n",
    "detached": """
import subprocess, sys
subprocess.Popen([sys.executable, "-c", {code!r} + "\\n_write(40)  # tc-cheat-marker"], start_new_session=True)
""",
    "atexit": WRITER + "import atexit\natexit.register(_write, 20)\n",
    "thread": WRITER + "import threading\nthreading.Thread(target=_write, args=(40,), daemon=False).start()\n",
    "fork": WRITER + "import os\nif os.fork() == 0:\n    _write(40)\n    os._exit(0)\n",
    "source": """
import glob, os
found = glob.glob("../../../source/*/*.ipynb") + glob.glob({course!r} + "/source/*/*.ipynb")
found += glob.glob({solutions!r})
for path in found:
    print("TC-SEEN:", path, open(path).read()[:200])
for path in ({course!r} + "/pwned.txt",):
    try:
        open(path, "w").write("x")
        print("TC-WROTE:", path)
    except OSError:
        pass
""",
}


@pytest.fixture(scope="module")
def cheated(tmp_path_factory):
    """Notebook 01 as a course; the reference, the reference ending in ``os._exit(0)``, and one student per cheat,
    all autograded by one ``nbgrader autograde`` in the sandbox."""
    pytest.importorskip("nbgrader", reason="the classroom extra: pip install -e '.[classroom]'")
    nbformat = pytest.importorskip("nbformat")
    import classroom_helpers as tc

    course = tmp_path_factory.mktemp("boundary") / "course"
    [assignment] = tc.build_course(course, tc.NOTEBOOKS_DIR, tc.SOLUTIONS_DIR, only=["01"], timeout=60)
    tc.nbgrader(course, "generate_assignment", "nb01")
    tc.submit(course, "alice", "nb01")
    tc.submit(course, "exits", "nb01")
    [path] = (course / "submitted" / "exits" / "nb01").glob("*.ipynb")
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell("import os\nos._exit(0)"))
    nbformat.write(nb, path)
    db = str(course / "gradebook.db")
    solutions = str(tc.SOLUTIONS_DIR / "*.py")
    cheats = {**tc.CHEATS, **FORGING}
    for name, code in REACHING.items():
        cheats[name] = code.format(db=db, code=WRITER.format(db=db), course=str(course), solutions=solutions)
    for name, code in cheats.items():
        submit_after_solutions(tc, course, f"cheat-{name}", code)
    tc.nbgrader(course, "autograde", "nb01")
    time.sleep(5)  # a detached writer, had it survived, would have written by now
    alive = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    tc.nbgrader(course, "generate_feedback", "nb01")
    return course, assignment, sorted(cheats), alive


def submit_after_solutions(tc, course: Path, student: str, code: str) -> None:
    """The release, exercises undone, with ``code`` in a cell after the checkers' import and after each solution
    cell (so that it runs after the stubs it replaces)."""
    import nbformat

    [released] = (course / "release" / "nb01").glob("*.ipynb")
    nb = nbformat.read(released, as_version=4)
    cells = []
    for cell in nb.cells:
        cells.append(cell)
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution") or "transformer_course.exercises import" in cell.source:
            cells.append(nbformat.v4.new_code_cell(code))
    nb.cells = cells
    path = course / "submitted" / student / "nb01" / released.name
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)


@pytest.mark.slow
def test_every_cheat_scores_zero_in_the_sandbox(cheated):
    import classroom_helpers as tc

    course, _, cheats, _ = cheated
    scored = {name: tc.scores(course, "nb01", f"cheat-{name}")[:2] for name in cheats}
    assert all(max_score > 0 and score == 0 for score, max_score in scored.values()), scored


@pytest.mark.slow
def test_nothing_started_in_the_sandbox_outlives_the_grading(cheated):
    assert "tc-cheat-marker" not in cheated[3]


@pytest.mark.slow
def test_the_course_files_are_neither_read_nor_written_from_the_sandbox(cheated):
    import nbformat

    course = cheated[0]
    [graded] = (course / "autograded" / "cheat-source" / "nb01").glob("*.ipynb")
    text = json.dumps([c.get("outputs", []) for c in nbformat.read(graded, as_version=4).cells])
    assert "TC-SEEN:" not in text and "TC-WROTE:" not in text and not (course / "pwned.txt").exists()


@pytest.mark.slow
def test_the_reference_gets_full_marks_also_when_its_last_cell_ends_the_kernel(cheated):
    import classroom_helpers as tc

    course, assignment, _, _ = cheated
    for student in ("alice", "exits"):
        score, max_score, cells = tc.scores(course, "nb01", student)
        assert max_score == assignment.points and score == max_score, (student, cells)


@pytest.mark.slow
def test_the_feedback_shows_the_graders_lines(cheated):
    import classroom_helpers as tc

    page = tc.feedback(cheated[0], "alice", "nb01")
    assert "graded: 2 of 2 points" in page and "✅" in page and "_tc_grade" not in page

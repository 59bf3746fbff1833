"""No answer on the hub: the students' install holds no solution, and notebook 10 finds the
checkpoint the hub shares.

``python -m transformer_course classroom OUT --hub`` writes ``OUT/hub/transformer_course-<version>-py3-none-any.whl``:
the package alone, with the marker ``transformer_course/exercises/SEALED``. The end-to-end test (``slow``) installs
it with ``pip install --no-deps --target DIR`` and imports it in a Python that sees only DIR and the environment's
site-packages (for torch; no ``.pth`` file is run, so the editable checkout is out of reach): no file of DIR holds a
reference solution, and the path a student would try, ``Path(transformer_course.__file__).parents[1] /
"notebooks/solutions"``, does not exist.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from course_tools.classroom import main
from course_tools.classroom.hub import PACKAGE_DIR, SEALED, hub_wheel
from transformer_course import __version__
from transformer_course.paths import CHECKPOINT_ENV, course_checkpoint

from helpers import NOTEBOOKS_DIR, exercise_definitions, reference_code_in

pytestmark = pytest.mark.classroom

WHEEL = f"transformer_course-{__version__}-py3-none-any.whl"


def build(out: Path, *extra: str) -> int:
    return main([str(out), "--notebooks", str(NOTEBOOKS_DIR), "--only", "01", "--hub", *extra])


# --- the wheel --------------------------------------------------------------------------------------------------------


def test_the_hub_wheel_holds_the_package_and_the_sealed_marker_and_nothing_else(tmp_path, capsys):
    assert build(tmp_path / "course") == 0
    wheel = tmp_path / "course" / "hub" / WHEEL
    assert f"pip install {wheel}" in capsys.readouterr().out
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        assert archive.read(SEALED) == b""
        record = archive.read(f"transformer_course-{__version__}.dist-info/RECORD").decode()
    assert {n.split("/")[0] for n in names} == {"transformer_course", f"transformer_course-{__version__}.dist-info"}
    assert not [n for n in names if "solutions" in n.split("/") or "notebooks" in n.split("/")]
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    assert "transformer_course/exercises/nb01_masks.py" in names  # the checkers travel, the answers do not
    assert sorted(line.split(",")[0] for line in record.splitlines()) == sorted(names)
    manifest = json.loads((tmp_path / "course" / ".tc-written.json").read_text())["files"]
    assert f"hub/{WHEEL}" in manifest  # the build owns it: --force rewrites it, and never another file there


def test_the_same_package_gives_the_same_wheel_byte_for_byte():
    assert hub_wheel() == hub_wheel()


@pytest.mark.slow
def test_a_rebuild_rewrites_the_wheel_and_a_file_it_did_not_write_is_refused_in_one_line(tmp_path, capsys):
    out = tmp_path / "course"
    assert build(out) == 0
    (out / "hub" / WHEEL).write_bytes(b"stale")
    assert build(out, "--force") == 0
    assert zipfile.is_zipfile(out / "hub" / WHEEL)
    manifest = out / ".tc-written.json"
    files = json.loads(manifest.read_text())
    manifest.write_text(json.dumps({**files, "files": [f for f in files["files"] if not f.startswith("hub/")]}))
    capsys.readouterr()
    assert build(out, "--force") == 1  # the wheel is no longer the build's own: a teacher's file
    [error] = capsys.readouterr().err.strip().splitlines()
    assert "was not written by this build" in error and WHEEL in error


def test_a_package_folder_holding_solutions_is_refused_before_any_work(tmp_path, capsys, monkeypatch):
    package = tmp_path / "transformer_course"
    (package / "exercises").mkdir(parents=True)
    (package / "__init__.py").write_text('__version__ = "0.0.1"\n')
    (package / "solutions").mkdir()
    monkeypatch.setattr("course_tools.classroom.hub.PACKAGE_DIR", package)
    assert build(tmp_path / "course") == 1
    [error] = capsys.readouterr().err.strip().splitlines()
    assert "solutions folder" in error and "move it out" in error
    assert not (tmp_path / "course").exists()  # nothing was built


def hub_install(tmp_path: Path) -> Path:
    """Build the hub wheel and ``pip install --target`` it; the folder it is installed in."""
    assert build(tmp_path / "course") == 0
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target)]
        + [str(tmp_path / "course" / "hub" / WHEEL)],
        check=True,
        timeout=300,
    )
    return target


@pytest.mark.slow
def test_a_student_kernel_on_the_hub_install_reaches_no_solution(tmp_path):
    target = hub_install(tmp_path)
    probe = (
        "import sys, json; from pathlib import Path\n"
        f"sys.path[:0] = [{str(target)!r}]; sys.path.append({sysconfig.get_paths()['purelib']!r})\n"
        "import transformer_course, transformer_course.exercises.nb01_masks\n"
        "here = Path(transformer_course.__file__)\n"
        "print(json.dumps([str(here), (here.parents[1] / 'notebooks/solutions').exists(),"
        " (here.parent / 'exercises' / 'SEALED').is_file()]))\n"
    )
    done = subprocess.run(  # -I -S: no PYTHONPATH, no user site, no .pth files (the editable install's finder)
        [sys.executable, "-I", "-S", "-c", probe], capture_output=True, text=True, timeout=300, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr[-2000:]
    imported, solutions_exist, sealed = json.loads(done.stdout.strip().splitlines()[-1])
    assert Path(imported).is_relative_to(target) and not solutions_exist and sealed
    files = {
        p.relative_to(target).as_posix(): p.read_text(encoding="utf-8", errors="replace")
        for p in target.rglob("*")
        if p.is_file() and p.suffix != ".pyc"
    }
    assert not [name for name in files if "solutions" in Path(name).parts or "notebooks" in Path(name).parts]
    assert len(exercise_definitions()) >= 20, "too few exercises found to look for"
    assert not reference_code_in(files)
    assert PACKAGE_DIR.parent.joinpath("notebooks", "solutions").is_dir()  # the checkout itself still has them
    checkers = {name: text for name, text in files.items() if re.search(r"exercises/nb\d\d_\w+\.py$", name)}
    assert len(checkers) == 13 and not [n for n, text in checkers.items() if re.search(r'"[0-9a-f]{24}"', text)]


SEALED_PROBE = """
import json, sys
sys.path[:0] = [{target!r}]; sys.path.append({purelib!r}); sys.path.append({tools!r})
from transformer_course.exercises import nb01_masks as ex, unsealed
from course_tools.classroom import verdict
right = {right!r}
lines = []
lines.append(repr(ex.check_quiz(**right)))            # a student's scratch cell: sealed by the install
with unsealed():
    lines.append(repr(ex.check_quiz(**right)))        # unsealed by hand: no digest in the files to compare with
lines.append(repr(ex.check_quiz(q1="b", q2="b", q3="b")))  # the form is still told
print("--- grading ---")
home = str(__import__("pathlib").Path(ex.__file__).parents[1])
cell = {cell!r}
graded = verdict.grade(home, dict(right, ex=ex), cell)  # the hidden test carries the digests
wrong = verdict.grade(home, dict(right, q2="a", ex=ex), cell)
print(json.dumps([lines, graded, wrong]))
"""


@pytest.mark.slow
def test_on_the_hub_install_no_answer_can_be_told_right_and_the_hidden_tests_still_grade(tmp_path):
    """In the hub wheel an answer check says only "noted" (sealed by the marker, and unsealing finds no digest);
    the grade comes from the hidden test's digests: the reference's answers get 3 of 3, one wrong letter 2 of 3.
    Grading runs where the teacher's course tools are installed (nbgrader autograde): the wheel's package, and
    course_tools from the repository, in a folder of its own so that only it comes from there."""
    from course_tools.classroom.cells import checker_digests

    target = hub_install(tmp_path)
    digests, sha = checker_digests("nb01_masks")
    cell = {
        "text": "ex.check_quiz(q1=q1, q2=q2, q3=q3)",
        "aliases": {"ex": "nb01_masks"},
        "calls": [["check_quiz", 3]],
        "digests": {"nb01_masks": digests},
        "sha": {"nb01_masks": sha},
    }
    right = {"q1": 2, "q2": "b", "q3": 2560}  # notebooks/solutions/nb01_masks.py's QUIZ
    tools = tmp_path / "teacher"
    tools.mkdir()
    (tools / "course_tools").symlink_to(PACKAGE_DIR.parent / "course_tools")
    probe = SEALED_PROBE.format(
        target=str(target), purelib=sysconfig.get_paths()["purelib"], tools=str(tools), right=right, cell=cell
    )
    done = subprocess.run([sys.executable, "-I", "-S", "-c", probe], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    (scratch, by_hand, form), graded, wrong = json.loads(done.stdout.strip().splitlines()[-1])
    assert scratch.startswith("🔒") and by_hand.startswith("🔒") and form.startswith("🔒"), (scratch, by_hand, form)
    practice = done.stdout.split("--- grading ---")[0]  # what the three scratch calls printed
    assert "✅" not in practice, "a sealed check printed ✅:\n" + done.stdout
    assert "❌ q1" in practice and "❌ q3" in practice and "❌ q2" not in practice  # the form is told, not the letter
    assert (graded, wrong) == (3, 2), done.stdout


# --- the checkpoint on a hub --------------------------------------------------------------------------------------


def test_notebook_10_gets_the_hubs_checkpoint_when_its_own_path_holds_none(tmp_path, monkeypatch):
    own, shared = tmp_path / "runs" / "best.pt", tmp_path / "srv" / "best.pt"
    shared.parent.mkdir()
    shared.write_bytes(b"checkpoint")
    monkeypatch.delenv(CHECKPOINT_ENV, raising=False)
    assert course_checkpoint(own) == own  # no hub: the notebook's path, found or not
    monkeypatch.setenv(CHECKPOINT_ENV, str(shared))
    assert course_checkpoint(own) == shared
    own.parent.mkdir()
    own.write_bytes(b"mine")
    assert course_checkpoint(own) == own  # a student's own checkpoint wins


def test_a_hub_checkpoint_variable_naming_a_folder_says_to_name_the_file(tmp_path, monkeypatch):
    monkeypatch.setenv(CHECKPOINT_ENV, str(tmp_path))
    with pytest.raises(ValueError, match=r"is a folder; set it to the checkpoint file itself") as error:
        course_checkpoint(tmp_path / "missing.pt")
    assert "\n" not in str(error.value) and str(tmp_path / "best.pt") in str(error.value)

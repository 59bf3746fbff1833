"""The teacher's guide holds up: the commands of docs/teaching.md §6 run as written, in their order, in a course
folder built for notebook 01, with a submission copied there by hand (the guide allows it) given the timestamp
its command writes; the reference is graded full marks in the sandbox and its feedback goes back through the
course's own exchange. Marked ``slow`` (about two minutes on the 2-core test machine)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.classroom

REPO = Path(__file__).resolve().parent.parent
GUIDE = REPO / "docs" / "teaching.md"


def section(number: int) -> str:
    text = GUIDE.read_text(encoding="utf-8")
    start = text.index(f"\n## {number}. ")
    end = text.find("\n## ", start + 1)
    return text[start : end if end > 0 else None]


def bash_blocks(text: str) -> list[str]:
    return re.findall(r"```bash\n(.*?)```", text, re.S)


def commands(block: str) -> list[str]:
    """A block's commands, comments dropped."""
    found = []
    for line in block.splitlines():
        code = line.split("  #")[0].strip()
        if code and not code.startswith("#"):
            found.append(code)
    return found


def test_the_guide_names_the_nbgrader_steps_in_order_and_the_timestamp_command():
    [steps] = [b for b in bash_blocks(section(6)) if "nbgrader autograde" in b]
    found = [c.split()[1] for c in commands(steps) if c.startswith("nbgrader ")]
    order = ["generate_assignment", "release_assignment", "collect", "autograde", "generate_feedback"]
    assert [f for f in found if f in order] == order and "release_feedback" in found
    hand = [c for c in commands(steps) if "submitted/<student>/" in c]
    assert any("timestamp.txt" in c for c in hand) and any("submission_secret.txt" in c for c in hand)


def test_the_guide_names_no_grep_for_cheats():
    assert "grep -l" not in section(6)


@pytest.mark.slow
def test_every_command_of_the_guides_nbgrader_block_runs_as_written(tmp_path):
    pytest.importorskip("nbgrader", reason="the classroom extra: pip install -e '.[classroom]'")
    import classroom_helpers as tc

    [build] = [c for b in bash_blocks(section(6)) for c in commands(b) if "transformer_course classroom" in c]
    build = build.replace("course/", str(tmp_path / "course")).replace("--hub", "--only 01")  # the hub: its own test
    env = dict(os.environ, TC_FAST="1", PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    done = subprocess.run(build, shell=True, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    course = tmp_path / "course"
    [steps] = [b for b in bash_blocks(section(6)) if "nbgrader autograde" in b]
    for command in commands(steps):
        if "<student>" in command:  # the submission copied by hand, then the files the exchange reads
            if not (course / "submitted" / "alice").exists():
                tc.submit(course, "alice", "nb01")
            command = command.replace("<student>", "alice").replace("python ", f"{sys.executable} ", 1)
            done = subprocess.run(command, shell=True, cwd=course, capture_output=True, text=True, timeout=60)
            assert done.returncode == 0, done.stderr
            continue
        tc.nbgrader(course, *command.split()[1:])
    score, max_score, _ = tc.scores(course, "nb01", "alice")
    assert max_score > 0 and score == max_score
    assert list((course / "exchange").rglob("feedback/*.html")), "release_feedback put nothing in the exchange"
    assert (course / "grades.csv").is_file()

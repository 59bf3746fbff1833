"""The class's notebooks and slides name no solutions folder.

The self-study notebooks link their solutions ("Solutions: [solutions/nb02_attention.py](…) (after trying!)",
中文版 "参考答案：[…](…)（请先自己尝试！）"). In the nbgrader build those sentences say that the teacher shares the
solutions after grading (:mod:`course_tools.classroom.release_text`); slide decks leave them out. The
end-to-end test (``slow``) builds all twelve assignments and runs ``nbgrader generate_assignment`` on them.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from course_tools.classroom import build_course
from course_tools.classroom.release_text import (
    CLASSROOM_NOTE,
    names_solutions,
    released_code,
    released_markdown,
)

from helpers import CHINESE, ENGLISH, NOTEBOOKS_DIR

pytestmark = pytest.mark.classroom


# --- the sentences --------------------------------------------------------------------------------------------------


def test_the_exercise_sections_link_becomes_the_teachers_promise():
    text = "## 9. Exercises\n\nSolutions: [solutions/nb02_attention.py](solutions/nb02_attention.py) (after trying!).\n"
    assert released_markdown(text) == f"## 9. Exercises\n\n{CLASSROOM_NOTE['en']}\n"
    zh = "## 9. 练习\n\n参考答案：[solutions/nb02_attention.py](../solutions/nb02_attention.py)（请先自己尝试！）。"
    assert released_markdown(zh) == f"## 9. 练习\n\n{CLASSROOM_NOTE['zh']}"


def test_a_stuck_sentence_with_the_build_cells_file_goes_whole():
    text = (
        "Stuck? The reference solutions are in [solutions/nb06_encoder.py](solutions/nb06_encoder.py), and the "
        "build cell's\nreference file is [solutions/my_transformer/encoder.py](solutions/my_transformer/encoder.py)."
        "\n\n## Summary"
    )
    assert released_markdown(text) == (
        "Stuck? Ask your teacher; the reference solutions are shared after grading.\n\n## Summary"
    )


def test_dropped_sentences_leave_the_rest_of_the_paragraph_as_it_was():
    text = (
        "## 7. Exercises\n\nSolutions: [solutions/nb08_training_loop.py](solutions/nb08_training_loop.py) "
        "(after trying!). Put your answer where the `...`\nis.\n\n**Exercise 1**"
    )
    assert (
        released_markdown(text, drop=True)
        == "## 7. Exercises\n\nPut your answer where the `...`\nis.\n\n**Exercise 1**"
    )
    alone = "## 9. Exercises\n\nSolutions: [solutions/nb02_attention.py](solutions/nb02_attention.py) (after trying!).\n\nNext"
    assert released_markdown(alone, drop=True) == "## 9. Exercises\n\nNext"


def test_any_other_mention_of_the_folder_becomes_a_plain_noun():
    text = "[solutions/x.py](solutions/x.py), the text of `notebooks/solutions/my_transformer/`, or solutions/README.md"
    released = released_markdown(text)
    assert not names_solutions(released)
    assert released == "the reference solutions, the text of the course's reference files, or the reference solutions"
    assert released_markdown("即 `notebooks/solutions/my_transformer/` 中的文本") == "即课程的参考文件中的文本"


@pytest.mark.parametrize("drop", [False, True], ids=["classroom", "slides"])
def test_no_notebooks_text_names_the_solutions_folder_once_released(drop):
    left = [
        f"{path.parent.name}/{path.name} cell {cell.get('id')}"
        for path in [*ENGLISH, *CHINESE]
        for cell in nbformat.read(path, as_version=4).cells
        if cell.cell_type == "markdown" and names_solutions(released_markdown(cell.source, drop=drop))
    ]
    assert not left, left
    assert any(  # the notebooks themselves keep their links for self-learners
        names_solutions(cell.source) for cell in nbformat.read(ENGLISH[2], as_version=4).cells
    )


def test_a_checker_cells_comment_pointing_at_the_solutions_goes_and_its_code_stays():
    cell = (
        "ex.check_attention(scaled_dot_product_attention);\n\n"
        "# Stuck? This replaces your file with the reference from notebooks/solutions/ and says so\n"
        "# (notebook 08 will then name it the reference, not yours):\n"
        '# tc.learner.use_reference("attention.py")'
    )
    assert released_code(cell) == "ex.check_attention(scaled_dot_product_attention);"
    kept = "# shapes first\nx = 1  # solutions/ are elsewhere"  # a comment on a code line is not a comment block
    assert released_code(kept) == kept


# --- the twelve released assignments --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def released(tmp_path_factory) -> dict[str, nbformat.NotebookNode]:
    """Every notebook as nbgrader's release/ holds it, by file name."""
    pytest.importorskip("nbgrader", reason="the classroom extra: pip install -e '.[classroom]'")
    course = tmp_path_factory.mktemp("release") / "course"
    build_course(course, NOTEBOOKS_DIR)
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    done = subprocess.run(
        [sys.executable, "-m", "nbgrader", "generate_assignment", "nb*"],
        cwd=course,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    notebooks = {p.name: nbformat.read(p, as_version=4) for p in (course / "release").glob("*/*.ipynb")}
    assert sorted(notebooks) == [p.name for p in ENGLISH]
    return notebooks


@pytest.mark.slow
def test_no_released_notebooks_text_names_the_solutions_folder(released):
    left = {
        name: [c.get("id") for c in nb.cells if c.cell_type == "markdown" and names_solutions(c.source)]
        for name, nb in released.items()
    }
    assert not {name: ids for name, ids in left.items() if ids}, left
    promised = [name for name, nb in released.items() if any(CLASSROOM_NOTE["en"] in c.source for c in nb.cells)]
    assert len(promised) >= 8, promised  # the exercise sections say who shares the solutions


@pytest.mark.slow
def test_no_released_notebooks_code_names_the_solutions_folder(released):
    left = {
        name: [c.get("id") for c in nb.cells if c.cell_type == "code" and names_solutions(c.source)]
        for name, nb in released.items()
    }
    assert not {name: ids for name, ids in left.items() if ids}, left

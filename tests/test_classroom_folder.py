"""The course folder a teacher builds: its exchange is explicit, and inside a git work tree it ignores itself.

``source/`` holds every reference solution; a course folder built inside a repository (``classroom course/`` at
the top of this one) must not be committed by accident. nbgrader's exchange defaults to a system folder
(``/usr/local/share/nbgrader/exchange``); the course's config names its own.
"""

from __future__ import annotations

import runpy
import subprocess
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")

from course_tools.classroom import build_course, nbgrader_config  # noqa: E402


@pytest.fixture
def notebooks(tmp_path) -> Path:
    folder = tmp_path / "notebooks"
    folder.mkdir()
    nbformat.write(
        nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Hello")]), folder / "00_hello.ipynb"
    )
    return folder


def test_a_course_built_inside_a_git_work_tree_ignores_itself(tmp_path, notebooks):
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    build_course(repo / "course", notebooks, notebooks / "solutions", only=["00"])
    assert (repo / "course" / ".gitignore").read_text().splitlines()[-1] == "*"
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=repo, capture_output=True,
                            text=True, check=True).stdout  # fmt: skip
    assert status == ""  # nothing of the course folder shows up to be committed


def test_a_course_built_outside_a_work_tree_writes_no_gitignore(tmp_path, notebooks):
    build_course(tmp_path / "course", notebooks, notebooks / "solutions", only=["00"])
    assert not (tmp_path / "course" / ".gitignore").exists()


def test_the_repository_ignores_a_course_folder_at_its_top():
    repo = Path(__file__).resolve().parent.parent
    done = subprocess.run(["git", "check-ignore", "-q", "course/source/nb01/01_masks.ipynb"], cwd=repo)
    if not (repo / ".git").exists():
        pytest.skip("not a git checkout")
    assert done.returncode == 0


def test_the_config_names_the_courses_own_exchange_and_makes_it(tmp_path, monkeypatch):
    text = nbgrader_config("course", 120, True)
    path = tmp_path / "nbgrader_config.py"
    path.write_text(text)

    class Config:
        def __getattr__(self, name):
            value = type("Section", (), {})()
            object.__setattr__(self, name, value)
            return value

    import os

    for name in ("PATH", "TC_FAST"):  # the config sets both: restored after the test
        monkeypatch.setenv(name, os.environ.get(name, "1" if name == "TC_FAST" else ""))
    c = Config()
    runpy.run_path(str(path), init_globals={"get_config": lambda: c})
    assert c.Exchange.root == str(tmp_path / "exchange") and (tmp_path / "exchange").is_dir()


@pytest.mark.parametrize("tool", ["classroom", "edition"])
def test_the_tools_share_the_one_handler_ctrl_c_is_130_not_a_traceback(tool, tmp_path, monkeypatch, capsys):
    from transformer_course import cli

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    target = (
        "course_tools.classroom.course.build_course"
        if tool == "classroom"
        else "course_tools.edition.build.build_editions"
    )
    monkeypatch.setattr(target, interrupted)
    argv = [str(tmp_path / "out")] if tool == "classroom" else ["--out", str(tmp_path / "out"), "--no-run"]
    assert cli.main([tool, *argv]) == 130
    assert capsys.readouterr().err.strip() == "interrupted"

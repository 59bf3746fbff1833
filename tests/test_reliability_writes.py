"""Reliability, round 2 (docs/reliability.md): nothing a command writes may clobber what it did not make.

A builder (the nbgrader course folder, the HTML edition) writes only into a folder it owns — a new or empty one,
or one it built before, whose manifest ``.tc-written.json`` lists every file it wrote — and ``--force`` removes
only those files; no command writes onto one of its own inputs. Each test is one input of the audit.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from course_tools.folders import MANIFEST
from transformer_course import files
from transformer_course.files import DestinationError

nbformat = pytest.importorskip("nbformat")

from course_tools.classroom import build_course, main  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


def one_line(text: str) -> bool:
    return text.strip() != "" and text.strip().count("\n") == 0 and "Traceback" not in text


@pytest.fixture
def notebooks(tmp_path) -> Path:
    """A course of one notebook without exercises, with a picture (fast to build)."""
    folder = tmp_path / "notebooks"
    (folder / "figures").mkdir(parents=True)
    (folder / "figures" / "a.svg").write_text("<svg/>")
    cells = [nbformat.v4.new_markdown_cell("# Hello\n\n![a](figures/a.svg)")]
    nbformat.write(nbformat.v4.new_notebook(cells=cells), folder / "00_hello.ipynb")
    return folder


def build(out, notebooks, **kwargs):
    return build_course(out, notebooks, notebooks / "solutions", only=["00"], **kwargs)


def run_main(args, capsys) -> tuple[int, str]:
    code = main([str(a) for a in args])
    return code, capsys.readouterr().err


@pytest.mark.parametrize("out", ["", ".", "./"])
def test_classroom_refuses_the_current_folder_and_an_empty_name(out, notebooks, tmp_path, monkeypatch, capsys):
    (tmp_path / "README.md").write_text("the teacher's own README\n")
    monkeypatch.chdir(tmp_path)
    code, err = run_main([out, "--notebooks", notebooks], capsys)
    assert code == 1 and one_line(err) and ("current folder" in err or "empty" in err), err
    assert (tmp_path / "README.md").read_text() == "the teacher's own README\n"
    assert not (tmp_path / "source").exists()


def test_classroom_refuses_the_repository_and_leaves_its_readme_alone(capsys, tmp_path, monkeypatch):
    before = (REPO / "README.md").read_bytes()
    monkeypatch.chdir(tmp_path)
    code, err = run_main([REPO, "--notebooks", REPO / "notebooks", "--only", "00"], capsys)
    assert code == 1 and one_line(err) and ("git repository" in err or "own input" in err), err
    assert (REPO / "README.md").read_bytes() == before and not (REPO / "source").exists()


def test_classroom_refuses_a_folder_that_holds_its_own_notebooks(tmp_path, notebooks):
    with pytest.raises(DestinationError, match="own input"):
        build(tmp_path, notebooks)


def test_classroom_refuses_a_non_empty_folder_it_did_not_write(tmp_path, notebooks, capsys):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    code, err = run_main([out, "--notebooks", notebooks, "--force"], capsys)  # --force does not lift it either
    assert code == 1 and one_line(err) and MANIFEST in err, err
    assert (out / "notes.txt").read_text() == "keep me" and not (out / "README.md").exists()


def test_an_empty_existing_folder_is_fine_and_gets_a_manifest_of_what_was_written(tmp_path, notebooks):
    out = tmp_path / "course"
    out.mkdir()
    build(out, notebooks)
    written = json.loads((out / MANIFEST).read_text())["files"]
    on_disk = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file() and p.name != MANIFEST)
    assert (
        written
        == on_disk
        == ["README.md", "nbgrader_config.py", "source/nb00/00_hello.ipynb", "source/nb00/figures/a.svg"]
    )


def test_force_removes_only_the_files_it_wrote_and_keeps_a_teachers_files(tmp_path, notebooks):
    out = tmp_path / "course"
    build(out, notebooks)
    (out / "source" / "nb00" / "teacher-notes.md").write_text("mine")
    (out / "gradebook.db").write_text("nbgrader's")
    (notebooks / "figures" / "a.svg").unlink()  # the next build no longer copies it
    (notebooks / "00_hello.ipynb").write_text(
        nbformat.writes(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Hello again")]))
    )
    build(out, notebooks, force=True)
    assert (out / "source" / "nb00" / "teacher-notes.md").read_text() == "mine"
    assert (out / "gradebook.db").read_text() == "nbgrader's"
    assert not (out / "source" / "nb00" / "figures").exists()  # it wrote a.svg, so it removed it (and its folder)
    assert "Hello again" in (out / "source" / "nb00" / "00_hello.ipynb").read_text()


def test_force_refuses_to_replace_a_file_it_did_not_write(tmp_path, notebooks):
    out = tmp_path / "course"
    build(out, notebooks)
    manifest = json.loads((out / MANIFEST).read_text())
    manifest["files"].remove("README.md")  # as if a teacher had written README.md
    (out / MANIFEST).write_text(json.dumps(manifest))
    (out / "README.md").write_text("the teacher's")
    with pytest.raises(DestinationError, match="not written by this build"):
        build(out, notebooks, force=True)
    assert (out / "README.md").read_text() == "the teacher's"


def test_without_force_an_existing_course_is_refused(tmp_path, notebooks):
    build(tmp_path / "course", notebooks)
    with pytest.raises(FileExistsError, match="--force"):
        build(tmp_path / "course", notebooks)


def test_classroom_out_a_file_or_under_a_file_is_one_line(tmp_path, notebooks, capsys):
    (tmp_path / "a-file").write_text("x")
    for out in (tmp_path / "a-file", tmp_path / "a-file" / "course"):
        code, err = run_main([out, "--notebooks", notebooks], capsys)
        assert code == 1 and one_line(err) and "is a file" in err, err
    assert (tmp_path / "a-file").read_text() == "x"


def test_classroom_into_a_read_only_folder_is_one_line_that_says_read_only(tmp_path, notebooks, capsys, monkeypatch):
    locked = tmp_path / "locked"
    locked.mkdir()
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: Path(p) != locked and real_access(p, mode, **kw))
    code, err = run_main([locked / "course", "--notebooks", notebooks], capsys)
    assert code == 1 and one_line(err) and "read-only" in err and "disk" not in err, err
    assert not (locked / "course").exists()


def test_a_symlinked_assignment_folder_is_refused_with_force_and_its_target_untouched(tmp_path, notebooks, capsys):
    out = tmp_path / "course"
    build(out, notebooks)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "00_hello.ipynb").write_text("someone else's")
    for p in sorted((out / "source" / "nb00").rglob("*"), reverse=True):
        p.unlink() if p.is_file() else p.rmdir()
    (out / "source" / "nb00").rmdir()
    (out / "source" / "nb00").symlink_to(elsewhere)
    code, err = run_main([out, "--notebooks", notebooks, "--only", "00", "--force"], capsys)
    assert code == 1 and one_line(err) and "symbolic link" in err, err
    assert (elsewhere / "00_hello.ipynb").read_text() == "someone else's"


@pytest.mark.slow
def test_python_dash_m_classroom_into_the_current_folder_is_one_line_without_traceback(tmp_path, notebooks):
    (tmp_path / "README.md").write_text("keep")
    done = subprocess.run(
        [sys.executable, "-m", "transformer_course", "classroom", ".", "--notebooks", str(notebooks)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert done.returncode == 1 and one_line(done.stderr), done.stderr
    assert (tmp_path / "README.md").read_text() == "keep"


def test_refuse_writing_onto_inputs_catches_the_same_file_by_another_name(tmp_path):
    (tmp_path / "a.pt").write_bytes(b"x")
    (tmp_path / "link.pt").symlink_to(tmp_path / "a.pt")
    for out in (tmp_path / "a.pt", tmp_path / "." / "a.pt", tmp_path / "link.pt"):
        with pytest.raises(DestinationError, match="own inputs"):
            files.refuse_writing_onto_inputs(out, [tmp_path / "a.pt"])
    files.refuse_writing_onto_inputs(tmp_path / "b.pt", [tmp_path / "a.pt"])


# No command writes onto one of its own inputs; the HTML edition checks --out and Chromium first.


def toy_checkpoint(path: Path) -> Path:
    from transformer_course.checkpoint import save_checkpoint
    from transformer_course.config import get_preset
    from transformer_course.data import toy_vocab
    from transformer_course.model import build_model

    vocab = toy_vocab(14)
    return save_checkpoint(path, build_model(get_preset("toy-copy"), 14, 14), get_preset("toy-copy"), vocab, vocab)


def cli_error(capsys, *argv) -> str:
    from transformer_course import cli

    assert cli.main([str(a) for a in argv]) == 1
    err = capsys.readouterr().err
    assert one_line(err), err
    return err


def test_average_out_onto_one_of_its_inputs_is_refused_and_the_input_kept(tmp_path, capsys):
    for n in (1, 2, 3):
        toy_checkpoint(tmp_path / f"epoch-00{n}.pt")
    before = (tmp_path / "epoch-002.pt").read_bytes()
    err = cli_error(capsys, "average", "--run", tmp_path, "--last", "2", "--out", tmp_path / "epoch-002.pt")
    assert "own inputs" in err and (tmp_path / "epoch-002.pt").read_bytes() == before
    err = cli_error(capsys, "average", "--run", tmp_path, "--last", "2", "--out", tmp_path / "epoch-001.pt")
    assert "own inputs" in err  # not averaged, but an epoch file of the run all the same


def test_average_checkpoints_refuses_out_onto_an_input_in_the_api_too(tmp_path):
    from transformer_course.checkpoint import average_checkpoints

    paths = [toy_checkpoint(tmp_path / "a.pt"), toy_checkpoint(tmp_path / "b.pt")]
    with pytest.raises(DestinationError, match="own inputs"):
        average_checkpoints(paths, tmp_path / "a.pt")


def test_evaluate_json_onto_the_checkpoint_is_refused_before_anything_runs(tmp_path, capsys):
    path = toy_checkpoint(tmp_path / "best.pt")
    before = path.read_bytes()
    err = cli_error(capsys, "evaluate", "--checkpoint", path, "--json", path)
    assert "--json" in err and path.read_bytes() == before


def test_the_html_edition_with_out_a_file_is_one_line(tmp_path, capsys):
    from course_tools.edition.build import main as edition_main

    (tmp_path / "page").write_text("x")
    for out in (tmp_path / "page", tmp_path / "page" / "html"):
        assert (
            edition_main(["--out", str(out), "--no-run", "--only", "00", "--notebooks", str(REPO / "notebooks")]) == 1
        )
        err = capsys.readouterr().err
        assert one_line(err) and "is a file" in err, err
    assert (tmp_path / "page").read_text() == "x"


def test_edition_check_without_chromium_fails_at_once_in_one_line(tmp_path, capsys, monkeypatch):
    from course_tools.edition import build as edition_build
    from course_tools.edition import preflight

    monkeypatch.setattr(preflight, "find_chromium", lambda: None)
    monkeypatch.setattr(edition_build, "build_editions", lambda *a, **k: pytest.fail("built before the check"))
    assert edition_build.main(["--out", str(tmp_path / "html"), "--check", "--no-run"]) == 1
    err = capsys.readouterr().err
    assert one_line(err) and "Chromium" in err and "apt-get install chromium" in err, err


def test_a_read_only_destination_for_a_checkpoint_is_named_so_not_called_a_full_disk(tmp_path, monkeypatch):
    import errno
    import tempfile

    def read_only(*args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(tempfile, "mkstemp", read_only)
    with pytest.raises(OSError) as caught:
        toy_checkpoint(tmp_path / "best.pt")
    message = str(caught.value)
    assert "Read-only file system" in message and "full disk" not in message and "best.pt" in message


def test_average_out_under_a_file_is_one_line_naming_it(tmp_path, capsys):
    for n in (1, 2):
        toy_checkpoint(tmp_path / f"epoch-00{n}.pt")
    (tmp_path / "file").write_text("x")
    err = cli_error(capsys, "average", "--run", tmp_path, "--out", tmp_path / "file" / "avg.pt")
    assert "is a file" in err and "Errno" not in err

"""Reliability, round 3: a manifest (``.tc-written.json``) is confined to its folder, and knows what it wrote.

A course folder arrives as a zip or a clone with its own manifest, so the manifest is input: every entry must name
a file inside the folder (no absolute path, no ``..``, no NUL or backslash, no way out through a symbolic link),
and ``--force`` removes nothing outside it. The manifest records each file's SHA-256 as written: a file a teacher
edited since is replaced only with ``--discard-edits``, which lists them. A notebook that is not JSON is one line
naming it.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from course_tools.folders import MANIFEST, edited_files, read_manifest, remove_written, write_manifest
from transformer_course.files import DestinationError

nbformat = pytest.importorskip("nbformat")

from course_tools.classroom import build_course, main  # noqa: E402
from course_tools.classroom.hub import write_hub_wheel  # noqa: E402

NOTEBOOK = "source/nb00/00_hello.ipynb"


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


@pytest.fixture
def course(tmp_path, notebooks) -> Path:
    out = tmp_path / "course"
    build_course(out, notebooks, notebooks / "solutions", only=["00"])
    return out


def force(out: Path, notebooks: Path, capsys, *extra: str) -> tuple[int, str, str]:
    code = main([str(out), "--notebooks", str(notebooks), "--only", "00", "--force", *extra])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def add_entries(out: Path, *entries) -> None:
    manifest = json.loads((out / MANIFEST).read_text())
    manifest["files"] += list(entries)
    (out / MANIFEST).write_text(json.dumps(manifest))


def edit(path: Path) -> None:
    path.write_text(path.read_text() + "\n<!-- the teacher's edit -->\n")


# ---- 1. a manifest names files inside its folder only ---------------------------------------------------------------


@pytest.mark.parametrize("kind", ["dotdot", "absolute", "dotdot-inside", "through-a-link"])
def test_force_with_a_manifest_listing_a_path_out_of_the_folder_is_refused_and_the_victim_kept(
    kind, course, notebooks, tmp_path, capsys
):
    victim = tmp_path / "victim.txt"
    victim.write_text("not the build's")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "victim").write_text("not the build's")
    (course / "link").symlink_to(tmp_path / "elsewhere")
    entry = {
        "dotdot": "../victim.txt",
        "absolute": str(victim),
        "dotdot-inside": "source/../../victim.txt",
        "through-a-link": "link/victim",
    }[kind]
    add_entries(course, entry)
    code, _, err = force(course, notebooks, capsys)
    assert code == 1 and one_line(err) and str(course / MANIFEST) in err and repr(entry) in err, err
    assert victim.read_text() == "not the build's"
    assert (tmp_path / "elsewhere" / "victim").read_text() == "not the build's"
    assert (course / NOTEBOOK).exists()  # refused before anything was removed


@pytest.mark.parametrize("entry", ["", " ", "a\0b", "source\\..\\..\\victim", "C:/victim", "./README.md", 3, None])
def test_a_manifest_entry_that_is_not_a_plain_relative_path_is_refused_naming_the_manifest(entry, tmp_path):
    (tmp_path / MANIFEST).write_text(json.dumps({"files": ["README.md", entry]}))
    with pytest.raises(DestinationError, match="not a manifest this package wrote") as caught:
        read_manifest(tmp_path)
    assert str(tmp_path / MANIFEST) in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        "[1, 2]",
        '"files"',
        '{"files": 3}',
        '{"files": {"README.md": 1}}',
        '{"files": ["README.md"], "sha256": []}',
        '{"files": ["README.md"], "sha256": {"README.md": "abc"}}',
    ],
)
def test_a_manifest_of_another_shape_is_one_line_naming_it(text, course, notebooks, capsys):
    (course / MANIFEST).write_text(text)
    code, _, err = force(course, notebooks, capsys)
    assert code == 1 and one_line(err) and str(course / MANIFEST) in err and "JSONDecodeError" not in err, err
    assert (course / NOTEBOOK).exists()


def test_remove_written_refuses_a_name_out_of_the_folder_before_removing_anything(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "mine.txt").write_text("the build's")
    (tmp_path / "victim.txt").write_text("keep")
    with pytest.raises(DestinationError, match="nothing removed"):
        remove_written(out, {"mine.txt", "../victim.txt"})
    assert (tmp_path / "victim.txt").exists() and (out / "mine.txt").exists()


def test_remove_written_follows_no_link_and_removes_no_folder_it_is_given(tmp_path):
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    (out / "folder").mkdir(parents=True)
    (out / "folder" / "teacher.txt").write_text("keep")
    elsewhere.mkdir()
    (elsewhere / "f").write_text("keep")
    (out / "link").symlink_to(elsewhere)
    (out / "file-link").symlink_to(elsewhere / "f")
    removed = remove_written(out, {"link/f", "folder", "file-link"})
    assert removed == [out / "file-link"]  # the link itself, not the file it points to
    assert (elsewhere / "f").read_text() == "keep" and (out / "folder" / "teacher.txt").read_text() == "keep"


# ---- 2. the build knows what it wrote: a teacher's edit is replaced only when asked -----------------------------------


def test_the_manifest_records_the_sha256_of_every_file_it_wrote(course):
    digests = read_manifest(course, digests=True)
    assert set(digests) == {"README.md", "nbgrader_config.py", NOTEBOOK, "source/nb00/figures/a.svg"}
    assert all(digests[name] == hashlib.sha256((course / name).read_bytes()).hexdigest() for name in digests)


def test_force_refuses_a_notebook_the_teacher_edited_in_source_naming_it_in_one_line(course, notebooks, capsys):
    edit(course / NOTEBOOK)
    before = (course / NOTEBOOK).read_text()
    code, _, err = force(course, notebooks, capsys)
    assert code == 1 and one_line(err), err
    assert f"{NOTEBOOK} in {course} was edited since the build wrote it" in err and "--discard-edits" in err, err
    assert (course / NOTEBOOK).read_text() == before


def test_force_refuses_to_remove_an_edited_file_the_new_build_no_longer_writes(course, notebooks, capsys):
    (course / "source/nb00/figures/a.svg").write_text("<svg>the teacher's</svg>")
    (notebooks / "figures" / "a.svg").unlink()
    nbformat.write(
        nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Hi")]), notebooks / "00_hello.ipynb"
    )
    code, _, err = force(course, notebooks, capsys)
    assert code == 1 and one_line(err) and "source/nb00/figures/a.svg" in err, err
    assert (course / "source/nb00/figures/a.svg").read_text() == "<svg>the teacher's</svg>"


def test_discard_edits_replaces_the_edited_files_and_lists_them(course, notebooks, capsys):
    edit(course / NOTEBOOK)
    (course / "nbgrader_config.py").write_text("# the teacher's config\n")
    code, out, err = force(course, notebooks, capsys, "--discard-edits")
    assert code == 0, err
    [line] = [line for line in out.splitlines() if "discarding" in line]
    assert "2 file(s)" in line and "nbgrader_config.py" in line and NOTEBOOK in line
    assert "the teacher's" not in (course / NOTEBOOK).read_text() + (course / "nbgrader_config.py").read_text()
    assert edited_files(course, read_manifest(course, digests=True)) == []


def test_force_without_edits_rebuilds_and_prints_no_discard_line(course, notebooks, capsys):
    code, out, err = force(course, notebooks, capsys)
    assert code == 0 and "discarding" not in out, err


def test_an_old_manifest_without_digests_is_still_read_and_the_rebuild_records_them(course, notebooks, capsys):
    names = sorted(read_manifest(course))
    (course / MANIFEST).write_text(json.dumps({"written_by": "python -m transformer_course classroom", "files": names}))
    assert read_manifest(course) == set(names)
    assert set(read_manifest(course, digests=True).values()) == {None}
    edit(course / NOTEBOOK)  # no digest to tell: replaced as before digests were recorded
    code, _, err = force(course, notebooks, capsys)
    assert code == 0, err
    assert None not in read_manifest(course, digests=True).values()


def test_write_manifest_given_names_reads_each_digest_from_the_file_on_disk(tmp_path):
    (tmp_path / "page.html").write_text("<p>hi</p>")
    write_manifest(tmp_path, "a builder", ["page.html", "gone.html"])
    assert read_manifest(tmp_path, digests=True) == {
        "page.html": hashlib.sha256(b"<p>hi</p>").hexdigest(),
        "gone.html": None,
    }
    with pytest.raises(ValueError, match="relative path inside"):
        write_manifest(tmp_path, "a builder", ["../elsewhere.html"])


def test_the_hub_wheel_writer_keeps_the_digests_so_an_edit_is_still_caught(course, notebooks, capsys):
    write_hub_wheel(course, "python -m transformer_course classroom", ("old.whl", b"one"))
    write_hub_wheel(course, "python -m transformer_course classroom", ("new.whl", b"two"))
    digests = read_manifest(course, digests=True)
    assert not (course / "hub" / "old.whl").exists() and digests["hub/new.whl"] == hashlib.sha256(b"two").hexdigest()
    assert digests[NOTEBOOK] is not None
    edit(course / NOTEBOOK)
    code, _, err = force(course, notebooks, capsys)
    assert code == 1 and NOTEBOOK in err and "hub/" not in err, err


# ---- 3. a notebook that is not one: one line naming the file ------------------------------------------------------


BROKEN = ['{"cells": [', "[1, 2]", '{"cells": [{"cell_type": "code"}]}', "\udcff"]


@pytest.mark.parametrize("text", BROKEN)
def test_writefile_cells_of_a_broken_notebook_is_one_line_naming_it(text, tmp_path):
    from transformer_course.learner import writefile_cells

    path = tmp_path / "02_attention.ipynb"
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    with pytest.raises(ValueError) as caught:
        writefile_cells(path)
    message = str(caught.value)
    assert str(path) in message and "restore it" in message and "\n" not in message
    assert type(caught.value) is ValueError  # not a bare JSONDecodeError, KeyError or TypeError


@pytest.mark.parametrize("text", [*BROKEN[:2], "{}"])
def test_classroom_with_a_broken_notebook_is_one_line_naming_it(text, notebooks, tmp_path, capsys):
    (notebooks / "00_hello.ipynb").write_bytes(text.encode("utf-8", "surrogateescape"))
    code = main([str(tmp_path / "course"), "--notebooks", str(notebooks), "--only", "00"])
    err = capsys.readouterr().err
    assert code == 1 and one_line(err) and str(notebooks / "00_hello.ipynb") in err and "restore it" in err, err
    assert not (tmp_path / "course").exists()

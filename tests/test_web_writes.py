"""``export-web`` writes only into a folder it owns, as every folder-writing command does
(:func:`course_tools.folders.claim_folder`, :func:`~course_tools.folders.plan_writes`, the manifest
``.tc-written.json``): a new or empty folder, or one it exported into before. The current folder, a git
repository, someone else's folder, a file, a read-only folder and the folder of its own checkpoint are refused in
one line before any work; a symbolic link where it writes is refused; a SIGKILL at any moment leaves in OUT
nothing but its own files and what the next export removes.

The model is a small untrained one (the toy-copy preset): these tests are about files, not translations.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from course_tools.folders import MANIFEST, read_manifest, write_manifest
from course_tools.web.export import COMMAND, FILES
from transformer_course.checkpoint import save_checkpoint
from transformer_course.cli import main
from transformer_course.config import get_preset
from transformer_course.data import toy_vocab
from transformer_course.files import CRASH_AT, TEMP_SUFFIX, DestinationError
from transformer_course.model import build_model

REPO = Path(__file__).resolve().parent.parent
SOMEONE_ELSES = {"index.html": "<p>my own page</p>\n", "manifest.json": '{"mine": true}\n', "notes.txt": "keep\n"}


@pytest.fixture
def checkpoint(tmp_path) -> Path:
    vocab = toy_vocab(14)
    config = get_preset("toy-copy")
    return save_checkpoint(tmp_path / "run" / "best.pt", build_model(config, 14, 14), config, vocab, vocab)


def export_web_cli(capsys, *args) -> tuple[int, str]:
    code = main(["export-web", *(str(a) for a in args)])
    return code, capsys.readouterr().err


def one_line(text: str) -> bool:
    return text.strip() != "" and text.strip().count("\n") == 0 and "Traceback" not in text


def someone_elses_folder(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in SOMEONE_ELSES.items():
        (folder / name).write_text(text)
    return folder


def unchanged(folder: Path) -> bool:
    return all((folder / name).read_text() == text for name, text in SOMEONE_ELSES.items())


def names(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*")}


@pytest.mark.parametrize("out", ["", ".", "./"])
def test_export_web_refuses_the_current_folder_and_an_empty_name(out, checkpoint, tmp_path, monkeypatch, capsys):
    here = someone_elses_folder(tmp_path / "here")
    monkeypatch.chdir(here)
    code, err = export_web_cli(capsys, checkpoint, out)
    assert code == 1 and one_line(err) and ("current folder" in err or "empty" in err), err
    assert unchanged(here) and names(here) == set(SOMEONE_ELSES)


@pytest.mark.parametrize("out", [".", "REPO"])
def test_export_web_refuses_a_git_repository_and_leaves_its_index_html_alone(
    out, checkpoint, tmp_path, monkeypatch, capsys
):
    repo = someone_elses_folder(tmp_path / "repo")
    (repo / ".git").mkdir()
    monkeypatch.chdir(repo if out == "." else tmp_path)
    code, err = export_web_cli(capsys, checkpoint, repo if out == "REPO" else out)
    assert code == 1 and one_line(err) and ("git repository" in err or "current folder" in err), err
    assert unchanged(repo) and names(repo) == {*SOMEONE_ELSES, ".git"}


def test_export_web_refuses_this_repository(checkpoint, tmp_path, monkeypatch, capsys):
    before = {p.name: p.read_bytes() for p in REPO.iterdir() if p.is_file()}
    monkeypatch.chdir(tmp_path)
    code, err = export_web_cli(capsys, checkpoint, REPO)
    assert code == 1 and one_line(err) and "git repository" in err, err
    assert {p.name: p.read_bytes() for p in REPO.iterdir() if p.is_file()} == before


def test_export_web_refuses_a_folder_of_someone_elses_files_and_replaces_none(checkpoint, tmp_path, capsys):
    folder = someone_elses_folder(tmp_path / "site")
    code, err = export_web_cli(capsys, checkpoint, folder)
    assert code == 1 and one_line(err) and MANIFEST in err and "did not write" in err, err
    assert unchanged(folder) and names(folder) == set(SOMEONE_ELSES)


def test_export_web_refuses_the_folder_that_holds_its_checkpoint(checkpoint, capsys):
    code, err = export_web_cli(capsys, checkpoint, checkpoint.parent)
    assert code == 1 and one_line(err) and "own input" in err, err
    assert names(checkpoint.parent) == {"best.pt"}


def test_export_web_out_a_file_or_under_a_file_is_one_line(checkpoint, tmp_path, capsys):
    (tmp_path / "a-file").write_text("x")
    for out in (tmp_path / "a-file", tmp_path / "a-file" / "page"):
        code, err = export_web_cli(capsys, checkpoint, out)
        assert code == 1 and one_line(err) and "is a file" in err, err
    assert (tmp_path / "a-file").read_text() == "x"


def test_export_web_into_a_read_only_folder_is_one_line_that_says_read_only(checkpoint, tmp_path, monkeypatch, capsys):
    locked = tmp_path / "locked"
    locked.mkdir()
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: Path(p) != locked and real_access(p, mode, **kw))
    code, err = export_web_cli(capsys, checkpoint, locked / "page")
    assert code == 1 and one_line(err) and "read-only" in err, err
    assert not (locked / "page").exists()


def test_a_symbolic_link_where_export_web_writes_is_refused_and_its_target_untouched(checkpoint, tmp_path, capsys):
    out = tmp_path / "page"
    out.mkdir()
    write_manifest(out, COMMAND, [])  # a folder export-web owns
    elsewhere = tmp_path / "elsewhere.html"
    elsewhere.write_text("someone else's page")
    (out / "index.html").symlink_to(elsewhere)
    code, err = export_web_cli(capsys, checkpoint, out)
    assert code == 1 and one_line(err) and "symbolic link" in err, err
    assert elsewhere.read_text() == "someone else's page"


def test_a_run_folder_is_the_checkpoint_choose_chose_and_without_its_choice_one_line_says_what_to_run(
    checkpoint, tmp_path, capsys
):
    import json

    run = checkpoint.parent
    code, err = export_web_cli(capsys, run, tmp_path / "page")
    assert code != 0 and one_line(err) and f"choose --run {run}" in err
    assert not (tmp_path / "page").exists()  # refused before any work
    (run / "chosen.json").write_text(json.dumps({"chosen": "best-ema"}))
    code, err = export_web_cli(capsys, run, tmp_path / "page")
    assert code != 0 and one_line(err) and "chose best-ema, but" in err  # its file is missing


@pytest.mark.slow  # one ONNX export
def test_export_web_of_a_run_folder_exports_the_chosen_checkpoint(checkpoint, tmp_path, capsys):
    import json
    import shutil

    run = checkpoint.parent
    shutil.copy(checkpoint, run / "best-ema.pt")
    (run / "chosen.json").write_text(json.dumps({"chosen": "best-ema"}))
    assert export_web_cli(capsys, run, tmp_path / "page")[0] == 0
    manifest = json.loads((tmp_path / "page" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["model"]["checkpoint"] == "best-ema.pt"


def test_a_refused_export_reads_no_checkpoint(tmp_path):
    from course_tools.web import export_web

    with pytest.raises(DestinationError, match="did not write"):  # not "no checkpoint at …": the folder comes first
        export_web(tmp_path / "nothing.pt", someone_elses_folder(tmp_path / "site"))


@pytest.mark.slow  # two ONNX exports
def test_exporting_again_into_its_own_folder_replaces_its_files_and_keeps_the_rest(checkpoint, tmp_path):
    from course_tools.web import export_web

    out = tmp_path / "page"
    index = export_web(checkpoint, out)
    assert index == out / "index.html" and names(out) == {*FILES, MANIFEST}
    assert read_manifest(out) == set(FILES)
    (out / "notes.txt").write_text("a teacher's notes")
    (out / "tc-export-notes").mkdir()  # named like the old temporary folder, but not one an export made
    (out / "tc-export-notes" / "a.txt").write_text("keep")
    (out / f".notes.txt.x{TEMP_SUFFIX}").write_text("another command's half-done write")
    before = (out / "index.html").stat().st_mtime_ns
    export_web(checkpoint, out)
    assert (out / "index.html").stat().st_mtime_ns >= before and read_manifest(out) == set(FILES)
    assert (out / "notes.txt").read_text() == "a teacher's notes"
    assert (out / "tc-export-notes" / "a.txt").read_text() == "keep"
    assert (out / f".notes.txt.x{TEMP_SUFFIX}").exists()


KILL_POINTS = {
    "graphs": "export-web:1",  # the graphs made and checked in the temporary folder, nothing yet in OUT
    "write": "export-web:3",  # inside the write of decoder_step.onnx, after encoder.onnx was written
}


@pytest.mark.slow  # an export killed in a child process, then one that completes
@pytest.mark.parametrize("moment", list(KILL_POINTS))
def test_an_export_killed_at_any_moment_leaves_no_temporary_folder_in_out_and_the_next_export_completes(
    moment, checkpoint, tmp_path
):
    from course_tools.web import export_web

    out, temporary = tmp_path / "page", tmp_path / "tmp"
    temporary.mkdir()
    env = {**os.environ, CRASH_AT: KILL_POINTS[moment], "TMPDIR": str(temporary), "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-m", "transformer_course", "export-web", str(checkpoint), str(out)]
    child = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert child.returncode == -signal.SIGKILL, f"the export was not killed at {KILL_POINTS[moment]}: {child.stderr}"
    left = names(out) if out.exists() else set()
    assert not [n for n in left if n.startswith("tc-export-")], left  # the temporary work happened outside OUT
    if moment == "graphs":
        assert left == set() and any(p.name.startswith("tc-export-") for p in temporary.iterdir())
    else:
        assert {n for n in left if not n.endswith(TEMP_SUFFIX)} == {MANIFEST, "encoder.onnx"}
        assert [n for n in left if n.endswith(TEMP_SUFFIX)][0].startswith(".decoder_step.onnx.")
    export_web(checkpoint, out)  # the killed export's folder is its own: the next one takes it and tidies it
    assert names(out) == {*FILES, MANIFEST} and read_manifest(out) == set(FILES)

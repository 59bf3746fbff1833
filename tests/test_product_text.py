"""The product speaks of itself: no tracked text file of the course points at an issue of the tracker by its number
or at a path of the machine it was developed on. That history belongs in commit messages."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("transformer_course", "course_tools", "tests", "benchmarks", "notebooks", "docs")
FILES = ("README.md", "CONTRIBUTING.md", "Makefile", "environment.yml", "pyproject.toml", ".ci/run")

# Built from pieces, so that this file does not match its own patterns.
TRACKER = re.compile(r"\b" + "iss" + r"ues? [0-9]", re.IGNORECASE)
MACHINE_PATHS = ("/" + "work/", "/" + "root/", "bash" + "_jobs")


def tracked_text_files() -> list[Path]:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: no list of tracked files")
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--", *FOLDERS, *FILES], cwd=ROOT, capture_output=True, check=True
    ).stdout
    paths = [ROOT / name for name in listed.decode("utf-8").split("\0") if name]
    return [p for p in paths if p.is_file() and b"\0" not in p.read_bytes()]


def offending_lines(text: str) -> list[str]:
    return [
        f"{number}: {line.strip()[:100]}"
        for number, line in enumerate(text.splitlines(), 1)
        if TRACKER.search(line) or any(path in line for path in MACHINE_PATHS)
    ]


def test_no_tracked_text_names_the_issue_tracker_or_a_development_machine_path():
    offenders = {}
    for path in tracked_text_files():
        found = offending_lines(path.read_text(encoding="utf-8", errors="replace"))
        if found:
            offenders[str(path.relative_to(ROOT))] = found
    assert not offenders, f"state the fact itself, not where it was discussed or developed: {offenders}"


@pytest.mark.parametrize(
    "line",
    ["see " + "Iss" + "ue 13", "(" + "iss" + "ues 11 and 22)", "/" + "work/main/data", "/tmp/" + "bash" + "_jobs/1"],
)
def test_the_check_finds_a_tracker_reference_or_a_machine_path(line):
    assert offending_lines(line)


@pytest.mark.parametrize("line", ["please open an issue with the failing test", "pytorch/text#2272", "/tmp/gpu-check"])
def test_the_check_lets_ordinary_text_through(line):
    assert not offending_lines(line)

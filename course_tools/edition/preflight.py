"""What the HTML edition checks before it runs a single notebook: that ``--out`` is a folder it may
write into (not a file, not under a file, not read-only) and, for ``--check``, that headless Chromium is there —
so a missing browser is one line at once, not a traceback after the whole build."""

from __future__ import annotations

from transformer_course.files import check_writable_folder

from .browser import find_chromium

__all__ = ["preflight"]


def preflight(out: str, check: bool) -> None:
    """Raise a one-line ValueError or OSError when the build could not finish; do nothing otherwise."""
    if not str(out).strip():
        raise ValueError("--out is empty; name the folder for the pages, e.g. --out html")
    check_writable_folder(out, "--out")
    if check and find_chromium() is None:
        raise FileNotFoundError(
            "--check opens every page in headless Chromium, which is not installed; on Debian/Ubuntu: "
            "apt-get install chromium — or leave --check out"
        )

"""The course's offline HTML edition: execute every notebook, export each to one offline HTML page, and write
a contents page in course order (notebook 10's charts, every notebook's text; issue 7).

    python -m transformer_course.edition                  # every notebook, normal mode, into html/
    python -m transformer_course.edition --fast           # TC_FAST=1: small loops, a few minutes in all
    python -m transformer_course.edition --only 01 10     # notebooks whose names start with 01 or 10
    python -m transformer_course.edition --fast --check   # then open every page in headless Chromium, offline
    python -m transformer_course.edition --slides --fast  # reveal.js decks instead: html/slides/NN_name.slides.html

Run it from the repository's top folder. The pages need no network: charts draw from one inlined Vega
bundle, formulas are MathML (:mod:`.export`). A notebook that fails is still exported (its error shows on
its page), the others go on, and the command ends with exit code 1 and the names of the failures.
"""

from __future__ import annotations

import argparse
import html
import os
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..files import atomic_write_text
from ..viz.offline import PAGE_CSS
from .browser import browser_check, page_problems
from .export import notebook_to_html
from .slides import count_slides, deck_check, deck_problems, notebook_to_slides

__all__ = [
    "COURSE_NOTEBOOK",
    "Edition",
    "build_contents_page",
    "build_edition",
    "execute",
    "main",
    "page_title",
    "select_notebooks",
]

COURSE_NOTEBOOK = re.compile(r"^\d\d_.+\.ipynb$")


@dataclass
class Edition:
    """What :func:`build_edition` wrote: the contents page, one page per notebook, seconds per notebook,
    and the notebooks that failed (name → the error's last line)."""

    index: Path
    pages: list[Path]
    seconds: dict[str, float] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)


def select_notebooks(folder: str | Path = "notebooks", only: list[str] | None = None) -> list[Path]:
    """The course notebooks (``NN_name.ipynb``) of ``folder`` in course order; ``only`` keeps those whose
    names start with one of its prefixes (``["01", "10"]``). An empty selection is an error that says why."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"no folder {folder}; run from the repository's top folder or pass --notebooks")
    paths = sorted(p for p in folder.glob("*.ipynb") if COURSE_NOTEBOOK.match(p.name))
    if not paths:
        raise FileNotFoundError(f"no course notebooks (00_….ipynb) in {folder}")
    if only:
        chosen = [p for p in paths if p.name.startswith(tuple(only))]
        if not chosen:
            raise ValueError(
                f"no notebook in {folder} starts with {', '.join(only)}; "
                f"choose from {', '.join(p.name[:2] for p in paths)}"
            )
        paths = chosen
    return paths


def execute(path: Path, timeout: int) -> tuple[object, str | None]:
    """Run ``path`` top to bottom in its own folder; return the notebook (outputs up to any error) and
    None, or the error's last line."""
    import nbclient
    import nbformat

    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        startup_timeout=300,  # busy machines
        resources={"metadata": {"path": str(path.parent)}},
    )
    nb.metadata["tc_folder"] = str(path.parent)  # where notebook_to_html finds the notebook's own images
    try:
        client.execute()
    except nbclient.exceptions.CellTimeoutError:
        return nb, f"a cell ran longer than {timeout} s"
    except nbclient.exceptions.CellExecutionError as error:
        return nb, (str(error).strip().splitlines() or ["cell failed"])[-1][:300]
    return nb, None


def build_edition(
    notebooks: str | Path = "notebooks",
    out_dir: str | Path = "html",
    fast: bool = False,
    only: list[str] | None = None,
    timeout: int = 900,
    run: bool = True,
    progress: bool = True,
    slides: bool = False,
) -> Edition:
    """Execute the selected notebooks (``fast``: with ``TC_FAST=1``), export each to ``out_dir/NN_name.html``
    with :func:`.export.notebook_to_html`, and write ``out_dir/index.html`` listing every page of ``out_dir``
    in course order. ``run=False`` exports the notebooks as saved (no kernel). ``slides=True`` writes
    reveal.js decks instead, ``out_dir/slides/NN_name.slides.html`` (:func:`.slides.notebook_to_slides`),
    and their contents page ``out_dir/slides/index.html``."""
    paths = select_notebooks(notebooks, only)
    out_dir = Path(out_dir) / "slides" if slides else Path(out_dir)
    export, suffix = (notebook_to_slides, ".slides.html") if slides else (notebook_to_html, ".html")
    out_dir.mkdir(parents=True, exist_ok=True)
    saved = {name: os.environ.get(name) for name in ("TC_FAST", "MPLCONFIGDIR")}
    os.environ.setdefault("MPLCONFIGDIR", str(Path(os.environ.get("TMPDIR", "/tmp")) / "tc-matplotlib"))
    if fast:
        os.environ["TC_FAST"] = "1"  # the kernels inherit it
    edition = Edition(index=out_dir / "index.html", pages=[])
    try:
        for path in paths:
            start = time.perf_counter()
            nb, error = execute(path, timeout) if run else (path, None)
            edition.pages.append(export(nb, out_dir / f"{path.stem}{suffix}", title=path.stem))
            edition.seconds[path.stem] = time.perf_counter() - start
            if error:
                edition.failures[path.stem] = error
            if progress:
                verdict = f"FAILED: {error}" if error else "ok"
                print(f"{path.stem:36s} {edition.seconds[path.stem]:6.1f} s  {verdict}", file=sys.stderr, flush=True)
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    title = "Transformer course" + (": slides" if slides else "") + (" (fast mode: small loops)" if fast else "")
    build_contents_page(out_dir, edition.index, title=title)
    return edition


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m transformer_course.edition",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--fast", action="store_true", help="run the notebooks with TC_FAST=1 (small loops)")
    parser.add_argument("--only", nargs="+", metavar="NN", help="only notebooks whose names start with these")
    parser.add_argument("--notebooks", default="notebooks", help="folder of the notebooks (default: notebooks)")
    parser.add_argument("--out", default="html", help="folder for the pages (default: html, git-ignored)")
    parser.add_argument("--timeout", type=int, default=900, help="seconds one cell may run (default: 900)")
    parser.add_argument("--no-run", action="store_true", help="export the notebooks as saved, without running them")
    parser.add_argument(
        "--slides",
        action="store_true",
        help="write reveal.js slide decks instead of pages: OUT/slides/NN_name.slides.html (edition.slides)",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="then open every page in headless Chromium with no network (browser.browser_check)",
    )
    args = parser.parse_args(argv)
    try:
        edition = build_edition(
            args.notebooks, args.out, args.fast, args.only, args.timeout, run=not args.no_run, slides=args.slides
        )
    except (FileNotFoundError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(f"wrote {len(edition.pages)} pages in {sum(edition.seconds.values()):.0f} s; open {edition.index}")
    failed = bool(edition.failures)
    if edition.failures:
        print("failed: " + "; ".join(f"{name}: {error}" for name, error in edition.failures.items()), file=sys.stderr)
    if args.check:
        import nbformat

        for page in [edition.index, *edition.pages]:
            if args.slides and page != edition.index:
                report = deck_check(page)
                source = Path(args.notebooks) / page.name.replace(".slides.html", ".ipynb")
                problems = deck_problems(report, count_slides(nbformat.read(source, as_version=4)))
                seen = f"{report['slides']} slides, "
            else:
                report = browser_check(page)
                problems, seen = page_problems(report), ""
            failed |= bool(problems)
            print(
                f"{'FAIL' if problems else 'ok  '} {page.name}: {seen}{report['drawn']}/{report['charts']} charts drawn"
                + "".join(f"\n     {p}" for p in problems)
            )
    return 1 if failed else 0


def page_title(path: Path) -> str:
    """The first ``<h1>`` of an HTML page (nbconvert adds a "¶" anchor; it is dropped), else its file name."""
    text = path.read_text(encoding="utf-8", errors="replace")
    match = re.search(r"<h1[^>]*>(.*?)</h1>", text, flags=re.S)
    if not match:
        return path.stem
    title = re.sub(r"<[^>]+>", "", match.group(1)).replace("¶", "").strip()
    return html.unescape(title) or path.stem


def build_contents_page(
    folder: str | Path, out_path: str | Path | None = None, title: str = "Transformer course"
) -> Path:
    """An ``index.html`` linking every other page of ``folder`` in course order (file names 00_… to 11_…)."""
    folder = Path(folder)
    pages = sorted(p for p in folder.glob("*.html") if p.name != "index.html")
    if not pages:
        raise FileNotFoundError(f"no .html pages in {folder}; export the notebooks first (notebook_to_html)")
    out_path = Path(out_path) if out_path is not None else folder / "index.html"
    items = "\n".join(
        f'<li><a href="{html.escape(os.path.relpath(p, out_path.parent))}">{html.escape(p.stem)}</a>: '
        f"{html.escape(page_title(p))}</li>"
        for p in pages
    )
    return atomic_write_text(
        out_path,
        '<!DOCTYPE html>\n<html>\n<head>\n<meta charset="utf-8">\n'
        f"<title>{html.escape(title)}</title>\n<style>{PAGE_CSS}</style>\n</head>\n<body>\n"
        f"<h1>{html.escape(title)}</h1>\n<p>The notebooks of the course, executed, in order. Every page works "
        f"offline; charts are interactive.</p>\n<ul>\n{items}\n</ul>\n</body>\n</html>\n",
    )

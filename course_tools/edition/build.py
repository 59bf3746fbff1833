"""The offline HTML edition: every notebook executed and exported to one offline page, with a contents page in
course order; English from notebooks/ into html/, the 中文版 from notebooks/zh/ into html/zh/.

    python -m course_tools.edition                  # every notebook, normal mode, into html/ and html/zh/
    python -m course_tools.edition --languages en   # English only (zh: the 中文版 only)
    python -m course_tools.edition --fast           # TC_FAST=1: small loops, a few minutes in all
    python -m course_tools.edition --only 01 10     # notebooks whose names start with 01 or 10
    python -m course_tools.edition --fast --check   # then open every page in headless Chromium, offline
    python -m course_tools.edition --slides --fast  # reveal.js decks instead: html/slides/NN_name.slides.html

Run it from the repository's top folder. The pages need no network: charts draw from one inlined Vega bundle,
formulas are MathML (:mod:`.export`). A notebook that fails is still exported (its error shows on its page), the
others go on, and the command ends with exit code 1 naming the failures. Contents pages and every page link to
the other language (:mod:`.contents`); the Chinese pages say ``<html lang="zh-CN">`` and their charts speak
Chinese (the notebooks call ``set_language("zh")``); a Chinese notebook not written yet is left out, said once.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from transformer_course.cli import run_guarded

from .browser import browser_check, page_problems
from .contents import LANGUAGES, WORDS, ZH_FOLDER, build_contents_page, language_nav, other_language, page_title
from .export import notebook_to_html
from .preflight import preflight
from .slides import count_slides, deck_check, deck_problems, notebook_to_slides

__all__ = [
    "COURSE_NOTEBOOK",
    "LANGUAGES",
    "Edition",
    "build_contents_page",
    "build_edition",
    "build_editions",
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

    from course_tools.kernels import notebook_client

    nb = nbformat.read(path, as_version=4)
    nb.metadata["tc_folder"] = str(path.parent)  # where notebook_to_html finds the notebook's own images
    try:
        with notebook_client(
            nb,
            timeout=timeout,
            startup_timeout=300,  # busy machines
            resources={"metadata": {"path": str(path.parent)}},
        ) as client:
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
    language: str = "en",
    other: tuple[str | Path, list[str]] | None = None,
    solved: bool = True,
) -> Edition:
    """Execute the selected notebooks (``fast``: with ``TC_FAST=1``), export each to ``out_dir/NN_name.html``
    with :func:`.export.notebook_to_html`, and write ``out_dir/index.html`` listing every page of ``out_dir``
    in course order. ``run=False`` exports the notebooks as saved (no kernel). ``slides=True`` writes
    reveal.js decks instead, ``out_dir/slides/NN_name.slides.html`` (:func:`.slides.notebook_to_slides`),
    and their contents page ``out_dir/slides/index.html``.

    ``language``: "en" or "zh" (``<html lang="zh-CN">``, a Chinese contents page). ``other``: (the other language's
    ``out_dir``, the names built there): pages and contents page link to their namesakes (:func:`build_editions`).

    ``solved`` (default): the solved course, blanks filled from ``notebooks/solutions/`` in a temporary
    copy (:func:`course_tools.classroom.solve.solved_course`); ``solved=False``: as committed."""
    if language not in LANGUAGES:
        raise ValueError(f"language must be one of {', '.join(LANGUAGES)}, got {language!r}")
    paths = select_notebooks(notebooks, only)
    other_dir = None if other is None else (Path(other[0]) / "slides" if slides else Path(other[0]))
    other_names = set() if other is None else set(other[1])
    out_dir = Path(out_dir) / "slides" if slides else Path(out_dir)
    export, suffix = (notebook_to_slides, ".slides.html") if slides else (notebook_to_html, ".html")
    out_dir.mkdir(parents=True, exist_ok=True)
    saved = {name: os.environ.get(name) for name in ("TC_FAST", "MPLCONFIGDIR")}
    os.environ.setdefault("MPLCONFIGDIR", str(Path(os.environ.get("TMPDIR", "/tmp")) / "tc-matplotlib"))
    if fast:
        os.environ["TC_FAST"] = "1"  # the kernels inherit it
    edition = Edition(index=out_dir / "index.html", pages=[])
    workdir = tempfile.TemporaryDirectory(prefix="tc-solved-") if run and solved else None
    if workdir is not None:
        from ..classroom.solve import solved_course  # not at import: the classroom build imports this module

        here = solved_course(Path(notebooks), workdir.name)
        saved["PYTHONPATH"] = os.environ.get("PYTHONPATH")
        root = Path(__file__).resolve().parents[2]  # the package the kernels must import: this one
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(root), saved["PYTHONPATH"]) if p)
    try:
        for path in paths:
            start = time.perf_counter()
            runs = here / path.name if workdir is not None else path
            nb, error = execute(runs, timeout) if run else (path, None)
            page = out_dir / f"{path.stem}{suffix}"
            counterpart = other_dir / page.name if other_dir is not None and path.stem in other_names else None
            nav = language_nav(page, language, counterpart, deck=slides)
            edition.pages.append(export(nb, page, title=path.stem, language=language, nav=nav))
            edition.seconds[path.stem] = time.perf_counter() - start
            if error:
                edition.failures[path.stem] = error
            if progress:
                verdict = f"FAILED: {error}" if error else "ok"
                print(f"{path.stem:36s} {edition.seconds[path.stem]:6.1f} s  {verdict}", file=sys.stderr, flush=True)
    finally:
        if workdir is not None:
            workdir.cleanup()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    if not slides and run:  # the course's checkpoint in the browser, linked from notebook 10
        from ..web.export import course_page

        course_page(out_dir, language, notebooks=notebooks)
    words = WORDS[language]
    title = words["course"] + (words["slides"] if slides else "") + (words["fast"] if fast else "")
    other_index = other_dir / "index.html" if other_dir is not None else None
    build_contents_page(out_dir, edition.index, title=title, language=language, other=other_index)
    return edition


def build_editions(
    notebooks: str | Path = "notebooks",
    out_dir: str | Path = "html",
    fast: bool = False,
    only: list[str] | None = None,
    timeout: int = 900,
    run: bool = True,
    progress: bool = True,
    slides: bool = False,
    languages: tuple[str, ...] = LANGUAGES,
    solved: bool = True,
) -> dict[str, Edition]:
    """Both editions: English (``notebooks`` → ``out_dir``) and the 中文版 (``notebooks/zh`` → ``out_dir/zh``),
    linked to each other (:func:`build_edition`, its arguments). Chinese notebooks not written yet are left
    out with one line that names them; with none at all, only English is built."""
    bad = [language for language in languages if language not in LANGUAGES]
    if bad or not languages:
        raise ValueError(f"languages must be some of {', '.join(LANGUAGES)}, got {', '.join(languages) or 'none'}")
    english = [p.stem for p in select_notebooks(notebooks, only)]
    zh_folder = Path(notebooks) / ZH_FOLDER
    written = {p.stem for p in zh_folder.glob("*.ipynb") if COURSE_NOTEBOOK.match(p.name)}
    chinese = [name for name in english if name in written]
    if "zh" in languages and len(chinese) < len(english):
        missing = [name[:2] for name in english if name not in written]
        print(
            f"中文版: {', '.join(missing)} not in {zh_folder}/ yet (still being translated): left out",
            file=sys.stderr,
        )
    plans = {"en": (Path(notebooks), Path(out_dir), english), "zh": (zh_folder, Path(out_dir) / ZH_FOLDER, chinese)}
    languages = tuple(language for language in languages if plans[language][2])
    if not languages:
        raise FileNotFoundError(f"no Chinese notebook in {zh_folder} matches the selection; build English instead")
    editions = {}
    for language in languages:
        folder, out, names = plans[language]
        other = other_language(language)
        linked = other in languages
        editions[language] = build_edition(
            folder,
            out,
            fast,
            [name[:2] for name in names],
            timeout,
            run,
            progress,
            slides,
            language=language,
            other=(plans[other][1], plans[other][2]) if linked else None,
            solved=solved,
        )
    return editions


def main(argv: list[str] | None = None, prog: str = "python -m course_tools.edition") -> int:
    parser = argparse.ArgumentParser(
        prog=prog,
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
        "--as-committed",
        action="store_true",
        help="run the notebooks as committed, blanks and all (default: the solved course, notebooks/solutions filled in)",
    )
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
    parser.add_argument(
        "--languages",
        nargs="+",
        choices=LANGUAGES,
        default=list(LANGUAGES),
        help="en: notebooks/ into OUT/; zh: the 中文版, NOTEBOOKS/zh/ into OUT/zh/ (default: both)",
    )
    args = parser.parse_args(argv)
    built: list[dict] = []

    def build() -> None:
        preflight(args.out, args.check)  # --out a file, read-only, no Chromium for --check: one line, before any work
        built.append(
            build_editions(
                args.notebooks,
                args.out,
                args.fast,
                args.only,
                args.timeout,
                run=not args.no_run,
                slides=args.slides,
                languages=tuple(args.languages),
                solved=not args.as_committed,
            )
        )

    status = run_guarded(build)  # the course's one handler: one line for what a user can fix, 130 on Ctrl-C …
    if status:
        return status
    editions = built[0]
    failed = False
    for language, edition in editions.items():
        print(f"wrote {len(edition.pages)} pages in {sum(edition.seconds.values()):.0f} s; open {edition.index}")
        failed |= bool(edition.failures)
        if edition.failures:
            where = f"{ZH_FOLDER}/" if language == "zh" else ""
            print(
                "failed: " + "; ".join(f"{where}{name}: {error}" for name, error in edition.failures.items()),
                file=sys.stderr,
            )
    if args.check:
        import nbformat

        for language, edition in editions.items():
            folder = Path(args.notebooks) / (ZH_FOLDER if language == "zh" else "")
            for page in [edition.index, *edition.pages]:
                if args.slides and page != edition.index:
                    report = deck_check(page)
                    source = folder / page.name.replace(".slides.html", ".ipynb")
                    problems = deck_problems(report, count_slides(nbformat.read(source, as_version=4)))
                    seen = f"{report['slides']} slides, "
                else:
                    report = browser_check(page)
                    problems, seen = page_problems(report), ""
                failed |= bool(problems)
                name = page.relative_to(args.out) if page.is_relative_to(args.out) else page.name
                print(
                    f"{'FAIL' if problems else 'ok  '} {name}: {seen}{report['drawn']}/{report['charts']} charts drawn"
                    + "".join(f"\n     {p}" for p in problems)
                )
    return 1 if failed else 0

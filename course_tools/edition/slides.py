"""Executed notebooks → offline reveal.js slide decks (every notebook; part of the classroom edition).

A teacher presents a notebook along its slide path: the cells whose metadata ``slideshow.slide_type`` is
``"slide"`` (a new slide), ``"subslide"`` (a slide below the current one), ``"fragment"`` (appears on the next
click), ``"-"`` (continues the current slide) or ``"skip"`` (left out). Two ways to show that path:

- live, in JupyterLab, with the ``jupyterlab-rise`` extension (the ``[classroom]`` extra): open the notebook,
  run it, press ``Alt+R``;
- as one HTML file per notebook, written by :func:`notebook_to_slides`
  (``python -m course_tools.edition --slides``, ``make slides``), which needs no network:

  - reveal.js 5 (``vendor/reveal/``, MIT, from the npm package) inlined instead of nbconvert's CDN copy;
  - charts and formulas as in the HTML edition (:mod:`.export`): one inlined Vega bundle, ``vegaEmbed`` per
    chart, MathML formulas, no require.js, MathJax or jQuery;
  - a picture cell (its outputs hold an image or a chart) and a code cell of more than
    :data:`LONG_CODE_LINES` lines show only their outputs: the code is in the notebook;
  - stderr (warnings, progress bars) and widgets (they need a live kernel: use RISE) are left out;
  - so are the sentences that point at the reference solutions ("Solutions: [solutions/nb02_….py](…)"):
    a deck is shown in class, and a class gets the solutions from its teacher
    (:func:`..classroom.release_text.released_markdown` with ``drop=True``);
  - a slide taller than the screen scrolls inside itself.

:func:`deck_check` opens a deck in headless Chromium with every host name unresolvable (the HTML edition's
:data:`.browser.CHROMIUM_FLAGS` and :data:`.browser.PROBE`) and reports its slides, its charts and every
request it tried to make outside the machine; :func:`deck_problems` lists what is wrong;
:func:`slide_screenshot` saves one slide as a PNG.
"""

from __future__ import annotations

import functools
import html
import json
import re
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from transformer_course.files import atomic_write_text
from transformer_course.viz.offline import bundle_script

from .browser import CHROMIUM_FLAGS, PROBE, find_chromium, page_problems
from .export import (
    BUNDLE_PLACEHOLDER,
    VEGA_MIMETYPE,
    WIDGET_MIMETYPE,
    math_to_mathml,
    offline_outputs,
    read_notebook,
    with_language,
)

__all__ = [
    "DECK_SIZE",
    "LONG_CODE_LINES",
    "SLIDE_TYPES",
    "count_slides",
    "deck_check",
    "deck_problems",
    "notebook_to_slides",
    "picture_cell",
    "slide_screenshot",
    "slide_type",
]

REVEAL_DIR = Path(__file__).resolve().parent / "vendor" / "reveal"
SLIDE_TYPES = ("slide", "subslide", "fragment", "-", "skip", "notes")
PICTURE_MIMETYPES = ("image/png", "image/jpeg", "image/svg+xml")
LONG_CODE_LINES = 12  # longer code cells show only their outputs on a slide
DECK_SIZE = (1280, 800)  # reveal.js's canvas in pixels; it is scaled to fit the screen
REVEAL_PREFIX = "tc-reveal"  # a placeholder URL: each <link> to it is replaced by the inlined file
REVEAL_PLACEHOLDER = "<!-- tc-reveal-js -->"

DECK_CSS = """
:root { --r-heading-text-transform: none; --r-main-font-size: 30px; }
.reveal .slides { text-align: left; }
.reveal .slides > section > section { max-height: 100%; overflow-y: auto; padding: 0 0.5em; box-sizing: border-box; }
.reveal .jp-RenderedHTMLCommon h1 { font-size: 1.9em; }
.reveal .jp-RenderedHTMLCommon h2 { font-size: 1.5em; }
.reveal .jp-RenderedHTMLCommon h3 { font-size: 1.2em; }
.reveal .jp-RenderedHTMLCommon table { margin: 0.5em 0; }
.reveal .jp-InputArea-editor pre { white-space: pre-wrap; overflow-wrap: anywhere; font-size: 17px; }
.reveal .jp-OutputArea-output pre { white-space: pre; overflow-x: auto; width: auto; font-size: 16px; }
.reveal .jp-OutputArea-output img { max-height: 640px; }
.reveal math[display="block"] { margin: 0.4em 0; }
.tc-vega { margin: 0.5rem 0; }
.tc-vega-error { color: #c53030; white-space: pre-wrap; }
"""

# nbconvert's reveal template with every script it would fetch from a CDN (reveal.js, require.js, jQuery,
# MathJax, mermaid, the widget manager) left out; the Vega bundle goes in the head, reveal.js at the end.
DECK_TEMPLATE = (
    """{%- extends 'index.html.j2' -%}
{%- block html_head_js -%}"""
    + BUNDLE_PLACEHOLDER
    + """{%- endblock html_head_js -%}
{%- block jupyter_widgets -%}{%- endblock jupyter_widgets -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block footer_js -%}"""
    + REVEAL_PLACEHOLDER
    + """{%- endblock footer_js -%}
"""
)

# reveal.js's options: "hash": deck.html#/3 opens the fourth slide; slides start at the top, not centred.
REVEAL_INIT = {"hash": True, "slideNumber": "c/t", "center": False, "width": DECK_SIZE[0], "height": DECK_SIZE[1]}


@functools.cache
def reveal_assets() -> tuple[str, str, str]:
    """The vendored reveal.js script, its core style sheet and its white theme, as inlinable text."""
    files = {name: REVEAL_DIR / name for name in ("reveal.js", "reveal.css", "white.css", "LICENSE")}
    missing = [str(path) for path in files.values() if not path.is_file()]
    if missing:
        raise FileNotFoundError(
            f"reveal.js is missing from the package ({', '.join(missing)}); reinstall transformer_course "
            "or copy reveal.js@5's dist files there (see vendor/reveal/README.md)"
        )
    script = files["reveal.js"].read_text(encoding="utf-8").replace("</script", "<\\/script")
    theme = re.sub(r"^@import url\([^)]*\);\s*$", "", files["white.css"].read_text(encoding="utf-8"), flags=re.M)
    core = files["reveal.css"].read_text(encoding="utf-8")
    return script, core.replace("</style", "<\\/style"), theme.replace("</style", "<\\/style")


def slide_type(cell: Any) -> str:
    """A cell's ``slideshow.slide_type``; ``"-"`` (continue the current slide) when it has none."""
    return (cell.get("metadata", {}).get("slideshow") or {}).get("slide_type", "-")


def count_slides(nb: Any) -> int:
    """How many slides reveal.js shows for ``nb``, as nbconvert builds them: the first shown cell opens a
    slide; every later shown cell marked ``"slide"`` or ``"subslide"`` opens another (``"skip"`` and
    ``"notes"`` cells are not shown)."""
    shown = [slide_type(cell) for cell in nb["cells"] if slide_type(cell) not in ("skip", "notes")]
    if not shown:
        raise ValueError("every cell is skipped: mark at least one cell as a slide")
    return 1 + sum(kind in ("slide", "subslide") for kind in shown[1:])


def picture_cell(cell: Any) -> bool:
    """True for a code cell whose outputs hold a picture: an image or a Vega-Lite chart."""
    outputs = cell.get("outputs", []) if cell.get("cell_type") == "code" else []
    return any(mime in PICTURE_MIMETYPES or VEGA_MIMETYPE.match(mime) for o in outputs for mime in o.get("data", {}))


def noise(output: Any) -> bool:
    """True for an output a slide leaves out: stderr (warnings, progress bars) or a widget view."""
    stderr = output.get("output_type") == "stream" and output.get("name") == "stderr"
    return stderr or WIDGET_MIMETYPE in output.get("data", {})


def notebook_to_slides(
    notebook: Any, out_path: str | Path, title: str | None = None, language: str = "en", nav: str = ""
) -> Path:
    """Write an executed notebook (a path or an ``nbformat`` node) as one offline reveal.js deck.

    The notebook itself is not changed. Cell metadata ``slideshow.slide_type`` decides the slides; a cell
    with an unknown slide type is an error that names it. ``language`` ("en" or "zh") and ``nav`` as in
    :func:`.export.notebook_to_html` (give the deck's ``nav`` a fixed position: it sits above the slides).
    """
    import jinja2
    from nbconvert import SlidesExporter

    from ..classroom.release_text import released_markdown

    nb, title, folder = read_notebook(notebook, title, "notebook_to_slides")
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown":  # no sentence names the solutions folder (the module's docstring)
            cell.source = released_markdown(cell.source, drop=True)
        if slide_type(cell) not in SLIDE_TYPES:
            raise ValueError(
                f"cell {index} has slide_type {slide_type(cell)!r}; use one of {', '.join(map(repr, SLIDE_TYPES))}"
            )
        if picture_cell(cell) or (cell.cell_type == "code" and len(cell.source.splitlines()) > LONG_CODE_LINES):
            cell.metadata.setdefault("transient", {})["remove_source"] = True  # what it shows, not its code
        if cell.cell_type == "code":
            cell.outputs = [o for o in cell.outputs if not noise(o)]
    count_slides(nb)  # every cell skipped: say so before nbconvert does
    charts = offline_outputs(nb)
    formulas = math_to_mathml(nb)
    exporter = SlidesExporter(
        extra_loaders=[jinja2.DictLoader({"tc_slides.html.j2": DECK_TEMPLATE})],
        template_file="tc_slides.html.j2",
        embed_images=True,
        exclude_input_prompt=True,  # no "In [7]:" on a slide
        exclude_output_prompt=True,
        reveal_url_prefix=REVEAL_PREFIX,
        reveal_theme="white",
        reveal_width=str(DECK_SIZE[0]),
        reveal_height=str(DECK_SIZE[1]),
    )
    metadata = {"name": title or "notebook", **({"path": folder} if folder else {})}
    body, _ = exporter.from_notebook_node(nb, resources={"metadata": metadata})
    if language != "en" or nav:
        body = with_language(body, language, nav)  # before the scripts go in: their text holds "<body"
    script, core, theme = reveal_assets()
    body, links = re.subn(  # nbconvert may reorder a tag's attributes
        rf'<link[^>]*href="{REVEAL_PREFIX}/dist/(theme/)?[^"]+"[^>]*>',
        lambda m: (
            f'<style id="theme">{theme}</style>\n<style>{DECK_CSS}</style>' if m.group(1) else f"<style>{core}</style>"
        ),
        body,
    )
    if links != 2 or BUNDLE_PLACEHOLDER not in body or REVEAL_PLACEHOLDER not in body:
        raise RuntimeError("the nbconvert reveal template changed: no place for reveal.js or the Vega bundle")
    body = body.replace(BUNDLE_PLACEHOLDER, bundle_script() if charts else "", 1)  # ≈ 1.2 MB, only where needed
    body = body.replace(
        REVEAL_PLACEHOLDER, f"<script>{script}</script>\n<script>Reveal.initialize({json.dumps(REVEAL_INIT)});</script>"
    )
    body = re.sub(r"TCMATH\d{5}X", lambda m: formulas.get(m.group(0), m.group(0)), body)
    if REVEAL_PREFIX in body or re.search(r"<script[^>]+\bsrc=", body):
        raise RuntimeError("the deck still loads a script or style sheet from elsewhere; the template changed")
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    return atomic_write_text(out_path, body)


# Put after browser.PROBE in the head. Once reveal.js is ready: counts the slides, walks through them to find
# those taller than the deck (they scroll), lists every resource the page asked for that is not local, and
# writes a JSON report into the page (read back with --dump-dom).
DECK_PROBE = """<script>
window.addEventListener("load", function () {
  setTimeout(function () {
    var report = {ready: typeof Reveal !== "undefined" && Reveal.isReady(), slides: 0, horizontal: 0, tall: {}};
    if (report.ready) {
      report.slides = Reveal.getTotalSlides();
      report.horizontal = Reveal.getHorizontalSlides().length;
      var height = Reveal.getConfig().height;
      Reveal.getSlides().forEach(function (slide) {
        var at = Reveal.getIndices(slide);
        Reveal.slide(at.h, at.v);
        if (slide.scrollHeight > height + 2) { report.tall[at.h + "/" + (at.v || 0)] = slide.scrollHeight; }
      });
      Reveal.slide(0, 0);
    }
    report.requests = performance.getEntriesByType("resource").map(function (e) { return e.name; })
      .filter(function (url) { return !/^(file|data|blob|about):/.test(url); });
    var pre = document.createElement("pre");
    pre.id = "tc-deck";
    pre.textContent = JSON.stringify(report);
    document.body.appendChild(pre);
  }, 2500);
});
</script>"""


def _chromium(chromium: str | None, page_url: str, args: list[str], timeout: int) -> subprocess.CompletedProcess:
    chromium = chromium or find_chromium()
    if chromium is None:
        raise FileNotFoundError("headless Chromium is not installed; on Debian/Ubuntu: apt-get install chromium")
    with tempfile.TemporaryDirectory(prefix="tc-chromium-") as profile:  # a fresh profile every time
        return subprocess.run(
            [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args, page_url],
            capture_output=True,
            text=True,
            timeout=timeout,
        )


def deck_check(deck: str | Path, chromium: str | None = None, budget_ms: int = 15000, timeout: int = 120) -> dict:
    """Open ``deck`` in headless Chromium with no network and report what it saw.

    The report holds the HTML edition's (:func:`.browser.browser_check`: ``charts``, ``drawn``, ``cells``,
    ``vega_errors``, ``errors``, ``dropdown``) and the deck's: ``ready`` (reveal.js started), ``slides``
    (all of them, as ``Reveal.getTotalSlides``), ``horizontal``, ``tall`` (slides taller than the deck:
    {"h/v": height in pixels}) and ``requests`` (every URL outside this machine that the page asked for).
    """
    deck = Path(deck)
    text = deck.read_text(encoding="utf-8")
    head = re.search(r"<head[^>]*>", text)
    if head is None:
        raise ValueError(f"{deck} has no <head>; is it an HTML page?")
    probed = deck.parent / f".probe-{deck.name}"  # beside the deck, so relative links still resolve
    probed.write_text(text[: head.end()] + PROBE + DECK_PROBE + text[head.end() :], encoding="utf-8")
    try:
        result = _chromium(
            chromium, probed.resolve().as_uri(), [f"--virtual-time-budget={budget_ms}", "--dump-dom"], timeout
        )
    finally:
        probed.unlink(missing_ok=True)
    reports = {}
    for name in ("tc-report", "tc-deck"):
        match = re.search(rf'<pre id="{name}">(.*?)</pre>', result.stdout, flags=re.S)
        if match is None:
            raise RuntimeError(f"the deck wrote no {name} (did it load?); chromium said:\n{result.stderr[-2000:]}")
        reports.update(json.loads(html.unescape(match.group(1))))
    return reports


def deck_problems(report: dict, expected_slides: int | None = None) -> list[str]:
    """What is wrong with a deck according to its :func:`deck_check` report (empty: all good): what
    :func:`.browser.page_problems` finds on any page, requests to the network, and a wrong slide count."""
    problems = page_problems(report) + [f"asked the network for {url}" for url in report["requests"]]
    if not report["ready"]:
        problems.append("reveal.js did not start")
    if expected_slides is not None and report["slides"] != expected_slides:
        problems.append(f"{report['slides']} slides, expected {expected_slides} from the cell metadata")
    return problems


def slide_screenshot(deck: str | Path, png: str | Path, slide: str = "0", chromium: str | None = None) -> Path:
    """Save slide ``slide`` ("h" or "h/v", as in the deck's URL ``#/h/v``) of ``deck`` as a PNG, offline."""
    png = Path(png).resolve()
    png.parent.mkdir(parents=True, exist_ok=True)
    png.unlink(missing_ok=True)
    url = Path(deck).resolve().as_uri() + f"#/{slide}"
    args = [f"--window-size={DECK_SIZE[0]},{DECK_SIZE[1]}", "--hide-scrollbars", "--virtual-time-budget=8000"]
    result = _chromium(chromium, url, [*args, f"--screenshot={png}"], timeout=120)
    if not png.is_file():
        raise RuntimeError(f"chromium wrote no screenshot of {deck}; it said:\n{result.stderr[-2000:]}")
    return png

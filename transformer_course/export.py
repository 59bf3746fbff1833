"""Offline HTML: executed notebooks and chart pages that draw their charts with no network (the course's HTML edition).

Plain ``jupyter nbconvert --to html`` shows no chart offline: it writes the Vega-Lite output of Altair's
``mimetype`` renderer as the text "<VegaLite 5 object>", and its page loads require.js and MathJax from a
CDN. This module writes pages that need nothing from the internet:

- one Vega / Vega-Lite / vega-embed bundle (the JavaScript ``vl-convert-python`` ships) inlined in the
  page head, once per page;
- each Vega-Lite output replaced by a ``<div>`` and a ``vegaEmbed`` call on its spec (SVG renderer), so
  charts draw and their dropdowns work;
- formulas (``$…$``, ``$$…$$`` in markdown) turned into MathML by ``latex2mathml``, which browsers draw
  themselves, instead of MathJax from a CDN; a formula it cannot convert stays as its TeX source;
- no CDN scripts: require.js, MathJax and the widget manager are left out (ipywidgets, which need a live
  kernel, show a note and their text).

Entry points: :func:`charts_to_html` (a page of charts; ``viz.save_chart(chart, "x.html")`` uses it),
:func:`notebook_to_html` (one executed notebook), :func:`build_contents_page` (an index of a folder of
pages, in course order) and :func:`browser_check` (open a page in headless Chromium with no network: did
every chart draw, did anything fail to load). The whole edition is built by :mod:`transformer_course.edition`
(``make html``).
"""

from __future__ import annotations

import copy
import functools
import html
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

VEGA_MIMETYPE = re.compile(r"^application/vnd\.vega(lite)?\.v\d+\+json$")
WIDGET_MIMETYPE = "application/vnd.jupyter.widget-view+json"
BUNDLE_PLACEHOLDER = "<!-- tc-vega-bundle -->"
EMBED_OPTIONS = {"renderer": "svg", "actions": {"export": True, "source": False, "compiled": False, "editor": False}}

# nbconvert's JupyterLab template, minus every script it would fetch from a CDN.
OFFLINE_TEMPLATE = (
    """{%- extends 'index.html.j2' -%}
{%- block html_head_js -%}"""
    + BUNDLE_PLACEHOLDER
    + """{%- endblock html_head_js -%}
{%- block jupyter_widgets -%}{%- endblock jupyter_widgets -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
"""
)

PAGE_CSS = """
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 60rem; padding: 0 1rem; color: #1a202c; }
.tc-vega { margin: 0.5rem 0 1rem; }
.tc-vega-error { color: #c53030; white-space: pre-wrap; }
li { margin: 0.3rem 0; }
"""


@functools.cache
def vega_bundle() -> str:
    """Vega, Vega-Lite (the version Altair writes) and vega-embed as one script, safe inside ``<script>``."""
    import vl_convert as vlc

    from .viz import vegalite_version

    js = vlc.javascript_bundle(vl_version=vegalite_version())  # ≈ 0.9 MB, sets window.vegaEmbed
    return js.replace("</script", "<\\/script")


def bundle_script() -> str:
    return f"<script>{vega_bundle()}</script>"


def embed_html(spec: dict, element_id: str) -> str:
    """A ``<div>`` and the script that draws ``spec`` into it; a failure is written into the page."""
    spec_json = json.dumps(spec, ensure_ascii=False).replace("</", "<\\/")
    return (
        f'<div id="{element_id}" class="tc-vega"></div>\n'
        f"<script>(function () {{\n"
        f'  var el = document.getElementById("{element_id}");\n'
        f"  vegaEmbed(el, {spec_json}, {json.dumps(EMBED_OPTIONS)}).catch(function (err) {{\n"
        f'    el.innerHTML = "<pre class=\\"tc-vega-error\\"></pre>"; el.firstChild.textContent = String(err);\n'
        f"    console.error(err);\n"
        f"  }});\n"
        f"}})();</script>"
    )


def charts_to_html(specs: Iterable[Any], title: str = "", intro: str = "") -> str:
    """One self-contained HTML page showing each chart (an Altair chart or a Vega-Lite dict), offline."""
    parts = []
    for n, spec in enumerate(specs):
        spec = spec.to_dict() if hasattr(spec, "to_dict") else spec
        parts.append(embed_html(spec, f"tc-vega-{n}"))
    heading = f"<h1>{html.escape(title)}</h1>\n" if title else ""
    return (
        '<!DOCTYPE html>\n<html>\n<head>\n<meta charset="utf-8">\n'
        f"<title>{html.escape(title or 'charts')}</title>\n<style>{PAGE_CSS}</style>\n{bundle_script()}\n</head>\n"
        f"<body>\n{heading}{intro}\n" + "\n".join(parts) + "\n</body>\n</html>\n"
    )


def offline_outputs(nb: Any) -> int:
    """Rewrite a notebook's outputs in place for offline HTML; returns how many charts it holds.

    Vega-Lite/Vega outputs become ``text/html`` with a ``vegaEmbed`` call; widget views become a note
    (they need a running kernel); the widget state, whose viewer comes from a CDN, is dropped.
    """
    charts = 0
    for cell in nb.cells:
        if cell.get("cell_type") != "code":
            continue
        for output in cell.get("outputs", []):
            data = output.get("data")
            if not data:
                continue
            vega = [mime for mime in data if VEGA_MIMETYPE.match(mime)]
            if vega:
                spec = data[vega[0]]
                spec = json.loads(spec) if isinstance(spec, str) else spec
                output["data"] = {"text/html": embed_html(spec, f"tc-vega-{charts}")}
                charts += 1
            elif WIDGET_MIMETYPE in data:
                text = data.get("text/plain", "")
                text = "".join(text) if isinstance(text, list) else text
                output["data"] = {
                    "text/html": '<p class="tc-widget"><em>An interactive widget: run this notebook '
                    f"in JupyterLab to use it.</em> {html.escape(text)}</p>"
                }
    nb.metadata.pop("widgets", None)
    return charts


CODE_OR_MATH = re.compile(
    r"(?P<fence>^(```|~~~).*?^\2)"  # a fenced code block: left as it is
    r"|(?P<code>`+)(?:.+?)(?P=code)"  # inline code: left as it is
    r"|\$\$(?P<display>.+?)\$\$"  # $$ display math $$
    r"|(?<![\\$])\$(?P<inline>[^$\s](?:[^$]*?[^$\s\\])?)\$(?!\d)",  # $inline math$ (not "$5 and $6")
    flags=re.S | re.M,
)


def math_to_mathml(nb: Any) -> dict[str, str]:
    """Replace each formula of the markdown cells by a placeholder; return {placeholder: MathML}.

    The placeholders pass through the markdown renderer untouched and are swapped for MathML in the
    finished page. A formula ``latex2mathml`` cannot convert becomes its escaped TeX source.
    """
    try:
        from latex2mathml.converter import convert
    except ImportError:  # formulas stay as TeX source
        return {}
    formulas: dict[str, str] = {}

    def replace(match: re.Match) -> str:
        if match.group("display") is None and match.group("inline") is None:
            return match.group(0)  # code
        display = match.group("display") is not None
        tex = match.group("display") if display else match.group("inline")
        try:
            mathml = convert(tex.strip(), display="block" if display else "inline")
        except Exception:  # noqa: BLE001 - any LaTeX it does not know
            mathml = f"<code>{html.escape(match.group(0))}</code>"
        key = f"TCMATH{len(formulas):05d}X"
        formulas[key] = mathml
        return key

    for cell in nb.cells:
        if cell.get("cell_type") == "markdown":
            source = "".join(cell.source) if isinstance(cell.source, list) else cell.source
            cell.source = CODE_OR_MATH.sub(replace, source)
    return formulas


def notebook_to_html(notebook: Any, out_path: str | Path, title: str | None = None) -> Path:
    """Write an executed notebook (a path or an ``nbformat`` node) as one offline HTML file.

    The notebook itself is not changed. Charts from Altair's mimetype renderer draw with no network;
    the page holds the Vega bundle once (≈ 0.9 MB) plus each chart's spec.
    """
    import jinja2
    import nbformat
    from nbconvert import HTMLExporter

    folder = None  # where the notebook's own images (![…](figures/…)) are found
    if isinstance(notebook, (str, Path)):
        path = Path(notebook)
        if not path.is_file():
            raise FileNotFoundError(f"no notebook at {path}; give the path of an executed .ipynb file")
        nb = nbformat.read(path, as_version=4)
        title, folder = title or path.stem, str(path.parent)
    else:
        nb = copy.deepcopy(notebook)
        folder = nb.metadata.get("tc_folder")  # set by edition.execute
        nb.metadata.pop("tc_folder", None)
    if "cells" not in nb:
        raise ValueError("notebook_to_html needs a notebook (nbformat node or .ipynb path)")
    offline_outputs(nb)
    formulas = math_to_mathml(nb)
    exporter = HTMLExporter(
        template_name="lab",
        extra_loaders=[jinja2.DictLoader({"tc_offline.html.j2": OFFLINE_TEMPLATE})],
        template_file="tc_offline.html.j2",
        embed_images=True,  # markdown images go into the page, so it can move to another folder
    )
    metadata = {"name": title or "notebook", **({"path": folder} if folder else {})}
    body, _ = exporter.from_notebook_node(nb, resources={"metadata": metadata})
    if BUNDLE_PLACEHOLDER not in body:
        raise RuntimeError("the nbconvert template changed: no place for the Vega bundle in the page head")
    body = body.replace(BUNDLE_PLACEHOLDER, bundle_script(), 1)
    body = re.sub(r"TCMATH\d{5}X", lambda m: formulas.get(m.group(0), m.group(0)), body)
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(body, encoding="utf-8")
    return out_path


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
    out_path.write_text(
        '<!DOCTYPE html>\n<html>\n<head>\n<meta charset="utf-8">\n'
        f"<title>{html.escape(title)}</title>\n<style>{PAGE_CSS}</style>\n</head>\n<body>\n"
        f"<h1>{html.escape(title)}</h1>\n<p>The notebooks of the course, executed, in order. Every page works "
        f"offline; charts are interactive.</p>\n<ul>\n{items}\n</ul>\n</body>\n</html>\n",
        encoding="utf-8",
    )
    return out_path


# ---------------------------------------------------------------------------------------------------------
# Checking pages in a real browser
# ---------------------------------------------------------------------------------------------------------

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--host-resolver-rules=MAP * ~NOTFOUND",  # no host name resolves: nothing can come from the network
]

# Put first in the page head: records failed loads and script errors; after the charts drew, counts the
# rectangles of each chart, switches the first dropdown of the first chart that has one to another option,
# counts again, and writes a JSON report into the page (read back with --dump-dom).
PROBE = """<script>
window.tcErrors = [];
window.addEventListener("error", function (e) {
  var t = e.target;
  tcErrors.push(t && t !== window && (t.src || t.href) ? "failed to load " + (t.src || t.href) : "error: " + e.message);
}, true);
window.addEventListener("unhandledrejection", function (e) { tcErrors.push("unhandled: " + e.reason); });
function tcCells(el) { return el.querySelectorAll("svg g.mark-rect.role-mark path").length; }
window.addEventListener("load", function () {
  setTimeout(function () {
    var charts = Array.prototype.slice.call(document.querySelectorAll(".tc-vega"));
    var report = {
      charts: charts.length,
      drawn: document.querySelectorAll(".tc-vega svg.marks").length,
      vega_errors: Array.prototype.map.call(document.querySelectorAll(".tc-vega-error"), function (e) { return e.textContent; }),
      cells: charts.map(tcCells),
      dropdown: null
    };
    var chart = charts.filter(function (c) { return c.querySelector(".vega-bindings select"); })[0];
    if (chart) {
      var select = chart.querySelector(".vega-bindings select");
      var other = Array.prototype.filter.call(select.options, function (o) { return o.value !== select.value; })[0];
      report.dropdown = {chart: chart.id, selects: chart.querySelectorAll(".vega-bindings select").length,
                         from: select.value, to: other ? other.value : null, before: tcCells(chart)};
      if (other) {
        select.value = other.value;
        select.dispatchEvent(new Event("input"));
        select.dispatchEvent(new Event("change"));
      }
    }
    setTimeout(function () {
      if (chart) { report.dropdown.after = tcCells(chart); }
      report.errors = tcErrors;
      var pre = document.createElement("pre");
      pre.id = "tc-report";
      pre.textContent = JSON.stringify(report);
      document.body.appendChild(pre);
    }, 1000);
  }, 1000);
});
</script>"""


def find_chromium() -> str | None:
    """The headless browser for :func:`browser_check` (Debian: ``apt-get install chromium``), or None."""
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def browser_check(page: str | Path, chromium: str | None = None, budget_ms: int = 15000, timeout: int = 120) -> dict:
    """Open ``page`` in headless Chromium with no network and a fresh profile; return what it saw.

    The report: ``charts`` (Vega-Lite outputs on the page), ``drawn`` (of them, drawn as SVG), ``cells``
    (rectangles per chart), ``vega_errors``, ``errors`` (failed loads, script errors) and ``dropdown``
    (the first chart with dropdowns: its first dropdown switched to another option, rectangles ``before``
    and ``after``). The page itself is not changed: a copy with a probe script is opened.
    """
    page = Path(page)
    chromium = chromium or find_chromium()
    if chromium is None:
        raise FileNotFoundError("headless Chromium is not installed; on Debian/Ubuntu: apt-get install chromium")
    text = page.read_text(encoding="utf-8")
    head = re.search(r"<head[^>]*>", text)
    if head is None:
        raise ValueError(f"{page} has no <head>; is it an HTML page?")
    with tempfile.TemporaryDirectory(prefix="tc-chromium-") as tmp:
        probed = page.parent / f".probe-{page.name}"  # beside the page, so relative links still resolve
        probed.write_text(text[: head.end()] + PROBE + text[head.end() :], encoding="utf-8")
        try:
            result = subprocess.run(
                [
                    chromium,
                    *CHROMIUM_FLAGS,
                    f"--user-data-dir={tmp}",
                    f"--virtual-time-budget={budget_ms}",
                    "--dump-dom",
                    probed.resolve().as_uri(),
                ],
                capture_output=True,
                text=True,
                timeout=timeout,
            )
        finally:
            probed.unlink(missing_ok=True)
    match = re.search(r'<pre id="tc-report">(.*?)</pre>', result.stdout, flags=re.S)
    if match is None:
        raise RuntimeError(f"the page wrote no report (did it load?); chromium said:\n{result.stderr[-2000:]}")
    return json.loads(html.unescape(match.group(1)))


def page_problems(report: dict) -> list[str]:
    """What is wrong with a page according to its :func:`browser_check` report (empty: all good)."""
    problems = [*report["errors"], *report["vega_errors"]]
    if report["drawn"] < report["charts"]:
        problems.append(f"only {report['drawn']} of {report['charts']} charts drew")
    dropdown = report.get("dropdown")
    if dropdown and dropdown["to"] is not None and dropdown["after"] == 0:
        problems.append(f"chart {dropdown['chart']} is empty after switching its dropdown to {dropdown['to']!r}")
    return problems

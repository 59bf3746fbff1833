"""Executed notebooks → offline HTML pages: charts drawn by an inlined Vega bundle, formulas as MathML (notebook 10;
the course's HTML edition).

Plain ``jupyter nbconvert --to html`` shows no chart offline: it writes the Vega-Lite output of Altair's
``mimetype`` renderer as the text "<VegaLite 5 object>", and its page loads require.js and MathJax from a
CDN. :func:`notebook_to_html` writes pages that need nothing from the internet:

- one Vega / Vega-Lite / vega-embed bundle (:func:`transformer_course.viz.offline.bundle_script`) inlined in
  the page head, once per page;
- each Vega-Lite output replaced by a ``<div>`` and a ``vegaEmbed`` call on its spec (SVG renderer), so
  charts draw and their dropdowns work (:func:`offline_outputs`);
- formulas (``$…$``, ``$$…$$`` in markdown) turned into MathML by ``latex2mathml``, which browsers draw
  themselves, instead of MathJax from a CDN; a formula it cannot convert stays as its TeX source
  (:func:`math_to_mathml`);
- no CDN scripts: require.js, MathJax and the widget manager are left out (ipywidgets, which need a live
  kernel, show a note and their text).

A Chinese notebook (``notebooks/zh/``, ``language="zh"``) becomes a page that says ``<html lang="zh-CN">``, so
browsers draw its Han characters in their Simplified Chinese forms; ``nav`` puts links at the top of a page
(the edition's link to the same notebook in the other language, :mod:`.build`).

A page of charts alone is :func:`transformer_course.viz.offline.charts_to_html`; the whole edition (execute,
export, contents page) is :mod:`course_tools.edition.build`.
"""

from __future__ import annotations

import copy
import html
import json
import re
from pathlib import Path
from typing import Any

from transformer_course.files import atomic_write_text
from transformer_course.viz.offline import bundle_script, embed_html

__all__ = [
    "BUNDLE_PLACEHOLDER",
    "HTML_LANG",
    "OFFLINE_TEMPLATE",
    "VEGA_MIMETYPE",
    "WIDGET_MIMETYPE",
    "math_to_mathml",
    "notebook_to_html",
    "offline_outputs",
    "read_notebook",
    "with_language",
]

VEGA_MIMETYPE = re.compile(r"^application/vnd\.vega(lite)?\.v\d+\+json$")
WIDGET_MIMETYPE = "application/vnd.jupyter.widget-view+json"
BUNDLE_PLACEHOLDER = "<!-- tc-vega-bundle -->"
HTML_LANG = {"en": "en", "zh": "zh-CN"}  # the course's languages → the pages' lang attribute

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


def read_notebook(notebook: Any, title: str | None, what: str) -> tuple[Any, str | None, str | None]:
    """A notebook to export (a path or an nbformat node, copied so the caller's is never changed) →
    (notebook, title, the folder its own images are found in)."""
    import nbformat

    folder = None  # where the notebook's own images (![…](figures/…)) are found
    if isinstance(notebook, (str, Path)):
        path = Path(notebook)
        if not path.is_file():
            raise FileNotFoundError(f"no notebook at {path}; give the path of an executed .ipynb file")
        nb = nbformat.read(path, as_version=4)
        title, folder = title or path.stem, str(path.parent)
    else:
        nb = copy.deepcopy(notebook)
        folder = nb.metadata.get("tc_folder")  # set by build.execute
        nb.metadata.pop("tc_folder", None)
    if "cells" not in nb:
        raise ValueError(f"{what} needs a notebook (nbformat node or .ipynb path)")
    return nb, title, folder


def with_language(page: str, language: str = "en", nav: str = "") -> str:
    """A page with ``<html lang=…>`` for ``language`` ("en" or "zh": ``zh-CN``) and ``nav`` (HTML) first in
    its body. Give it nbconvert's page before the scripts are inlined: their text holds "<html" and "<body"."""
    if language not in HTML_LANG:
        raise ValueError(f"language must be one of {sorted(HTML_LANG)}, got {language!r}")
    html_tag = re.search(r"<html\b[^>]*>", page)
    head_end = page.find("</head>")
    body_tag = re.compile(r"<body\b[^>]*>").search(page, head_end) if head_end >= 0 else None
    if html_tag is None or body_tag is None:
        raise RuntimeError("the nbconvert template changed: the page has no <html>, </head> or <body> tag")
    if nav:
        page = page[: body_tag.end()] + "\n" + nav + page[body_tag.end() :]
    return page[: html_tag.start()] + f'<html lang="{HTML_LANG[language]}">' + page[html_tag.end() :]


def notebook_to_html(
    notebook: Any, out_path: str | Path, title: str | None = None, language: str = "en", nav: str = ""
) -> Path:
    """Write an executed notebook (a path or an ``nbformat`` node) as one offline HTML file.

    The notebook itself is not changed. Charts from Altair's mimetype renderer draw with no network;
    the page holds the Vega bundle once (≈ 0.9 MB) plus each chart's spec. ``language``: the notebook's
    language, "en" or "zh" (``<html lang="zh-CN">``); ``nav``: HTML put first in the page's body.
    """
    import jinja2
    from nbconvert import HTMLExporter

    nb, title, folder = read_notebook(notebook, title, "notebook_to_html")
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
    if language != "en" or nav:
        body = with_language(body, language, nav)
    if BUNDLE_PLACEHOLDER not in body:
        raise RuntimeError("the nbconvert template changed: no place for the Vega bundle in the page head")
    body = body.replace(BUNDLE_PLACEHOLDER, bundle_script(), 1)
    body = re.sub(r"TCMATH\d{5}X", lambda m: formulas.get(m.group(0), m.group(0)), body)
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    return atomic_write_text(out_path, body)

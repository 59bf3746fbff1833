"""One offline HTML page of charts: the Vega bundle inlined, each chart drawn by ``vegaEmbed`` (notebook 10).

JupyterLab draws Altair's Vega-Lite output with its own copy of Vega; a page outside JupyterLab has to bring
its own. :func:`charts_to_html` writes one self-contained page: the Vega / Vega-Lite / vega-embed bundle that
``vl-convert-python`` ships (for the Vega-Lite version Altair writes, :func:`vegalite_version`) inlined in the
head, once, and a ``<div>`` with a ``vegaEmbed`` call per chart. Nothing is fetched from the network.

In the 中文版 (Chinese chart labels, :func:`.labels.chinese_labels`) the page says ``lang="zh-CN"``, so
browsers draw Han characters in their Simplified Chinese forms. ``viz.save_chart(chart, "x.html")`` writes
such a page; the HTML edition (:mod:`course_tools.edition`) puts the same bundle and embeds into every
exported notebook.
"""

from __future__ import annotations

import functools
import html
import json
from collections.abc import Iterable
from typing import Any

from .labels import chinese_labels

__all__ = [
    "EMBED_OPTIONS",
    "PAGE_CSS",
    "bundle_script",
    "charts_to_html",
    "embed_html",
    "vega_bundle",
    "vegalite_version",
]

EMBED_OPTIONS = {"renderer": "svg", "actions": {"export": True, "source": False, "compiled": False, "editor": False}}

PAGE_CSS = """
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 60rem; padding: 0 1rem; color: #1a202c; }
.tc-vega { margin: 0.5rem 0 1rem; }
.tc-vega-error { color: #c53030; white-space: pre-wrap; }
li { margin: 0.3rem 0; }
"""


def vegalite_version() -> str:
    """The Vega-Lite version Altair writes, as vl-convert names it ("5.20")."""
    import altair as alt

    return ".".join(alt.SCHEMA_VERSION.lstrip("v").split(".")[:2])


@functools.cache
def vega_bundle() -> str:
    """Vega, Vega-Lite (the version Altair writes) and vega-embed as one script, safe inside ``<script>``."""
    import vl_convert as vlc

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
    language = ' lang="zh-CN"' if chinese_labels() else ""  # Chinese glyph forms (not Japanese) for Han characters
    return (
        f'<!DOCTYPE html>\n<html{language}>\n<head>\n<meta charset="utf-8">\n'
        f"<title>{html.escape(title or 'charts')}</title>\n<style>{PAGE_CSS}</style>\n{bundle_script()}\n</head>\n"
        f"<body>\n{heading}{intro}\n" + "\n".join(parts) + "\n</body>\n</html>\n"
    )

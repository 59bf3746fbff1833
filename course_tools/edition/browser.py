"""Checking pages in a real browser: headless Chromium with no network (notebook 10; the HTML edition's proof).

:func:`browser_check` opens a copy of a page with a probe script first in its head, in headless Chromium
whose host resolver maps every name to nothing, so no request can reach the network. The probe records
failed loads and script errors, counts each chart's rectangles once the charts drew, switches the first
dropdown of the first chart that has one, counts again, and writes a JSON report into the page, which
``--dump-dom`` hands back. :func:`page_problems` turns a report into a list of what is wrong.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

__all__ = ["CHROMIUM_FLAGS", "PROBE", "browser_check", "find_chromium", "page_problems"]

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

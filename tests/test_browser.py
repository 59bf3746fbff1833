"""The charts draw in a real browser with no network: exported notebooks and chart pages opened in headless
Chromium (issue 5, "Offline rendering, proved in a real browser").

Each page gets a small probe script at the top of its head that records failed loads and script errors,
then, after the charts drew, counts the rectangles of the attention explorer, switches its "attention"
dropdown to the encoder and counts again; it writes what it saw into the page, which ``--dump-dom`` returns.
"""

import json
import re
import shutil
import subprocess

import nbformat
import pytest

from transformer_course import export, make_model, subsequent_mask, viz

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium is not installed (apt-get install chromium)"),
]

FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--host-resolver-rules=MAP * ~NOTFOUND",  # no host name resolves: nothing can come from the network
]

PROBE = """<script>
window.tcErrors = [];
window.addEventListener("error", function (e) {
  var t = e.target;
  tcErrors.push(t && t !== window && (t.src || t.href) ? "failed to load " + (t.src || t.href) : "error: " + e.message);
}, true);
window.addEventListener("unhandledrejection", function (e) { tcErrors.push("unhandled: " + e.reason); });
function tcCells(id) {
  var el = document.getElementById(id);
  return el ? el.querySelectorAll("svg g.mark-rect.role-mark path").length : -1;
}
window.addEventListener("load", function () {
  setTimeout(function () {
    var report = {
      charts: document.querySelectorAll(".tc-vega").length,
      drawn: document.querySelectorAll(".tc-vega svg.marks").length,
      vegaErrors: Array.prototype.map.call(document.querySelectorAll(".tc-vega-error"), function (e) { return e.textContent; }),
      selects: document.querySelectorAll("#tc-vega-0 .vega-bindings select").length,
      before: tcCells("tc-vega-0"),
      charts_cells: Array.prototype.map.call(document.querySelectorAll(".tc-vega"), function (e) { return tcCells(e.id); })
    };
    var kind = document.querySelector("#tc-vega-0 .vega-bindings select");
    if (kind) {
      kind.value = "encoder";
      kind.dispatchEvent(new Event("input"));
      kind.dispatchEvent(new Event("change"));
    }
    setTimeout(function () {
      report.after = tcCells("tc-vega-0");
      report.errors = tcErrors;
      var pre = document.createElement("pre");
      pre.id = "tc-report";
      pre.textContent = JSON.stringify(report);
      document.body.appendChild(pre);
    }, 1000);
  }, 1000);
});
</script>"""


def with_probe(page_path, out_path):
    """A copy of the page with the probe as the first script of its head."""
    html = page_path.read_text(encoding="utf-8")
    head = re.search(r"<head[^>]*>", html)
    out_path.write_text(html[: head.end()] + PROBE + html[head.end():], encoding="utf-8")
    return out_path


def chromium(tmp_path, *args):
    profile = tmp_path / "chromium-profile"  # a fresh profile every run
    return subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args],
                          capture_output=True, text=True, timeout=120)


def browser_report(tmp_path, page_path):
    probed = with_probe(page_path, tmp_path / f"probed-{page_path.name}")
    result = chromium(tmp_path, "--virtual-time-budget=15000", "--dump-dom", probed.as_uri())
    match = re.search(r'<pre id="tc-report">(.*?)</pre>', result.stdout, flags=re.S)
    assert match, f"the probe wrote no report; chromium said:\n{result.stderr[-2000:]}"
    return json.loads(match.group(1).replace("&quot;", '"').replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">"))


def assert_offline_page(page):
    """No script or stylesheet that would come from elsewhere: everything the page needs is inside it."""
    assert not re.search(r"<script[^>]+src=", page), "a script is loaded from a URL"
    assert not re.search(r"<link[^>]+href=[\"']?(https?:)?//", page), "a stylesheet is loaded from the web"


@pytest.fixture(scope="module")
def executed_notebook():
    """A small notebook executed by a real kernel, as notebook 10 does it: setup(), capture, explorer, mask."""
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# Offline chart check\n\nAn explorer and a mask, drawn with no network."),
        nbformat.v4.new_code_cell(
            "import torch\nfrom transformer_course import make_model, subsequent_mask, viz\nviz.setup()\n"
            "torch.manual_seed(0)\nmodel = make_model(12, 12, N=2, d_model=32, d_ff=64, h=4)\n"
            "capture = viz.capture_attention(model, [4, 5, 6, 7], [8, 9])  # S = 4, T = 3 with <s>"),
        nbformat.v4.new_code_cell("viz.attention_explorer(capture)"),
        nbformat.v4.new_code_cell("viz.plot_mask(subsequent_mask(5))"),
    ])
    NotebookClient(nb, timeout=180, kernel_name="python3").execute()
    return nb


def test_executed_notebook_exports_to_a_page_whose_charts_draw_offline(executed_notebook, tmp_path):
    outputs = [o for cell in executed_notebook.cells if cell.cell_type == "code" for o in cell.outputs]
    assert sum("application/vnd.vegalite.v5+json" in o.get("data", {}) for o in outputs) == 2  # the mimetype renderer
    page_path = export.notebook_to_html(executed_notebook, tmp_path / "10_check.html", title="10_check")
    assert_offline_page(page_path.read_text(encoding="utf-8"))
    report = browser_report(tmp_path, page_path)
    assert report["errors"] == [] and report["vegaErrors"] == []
    assert report["charts"] == 2 and report["drawn"] == 2
    assert report["before"] == 3 * 4  # cross-attention: 3 target queries × 4 source keys
    assert report["selects"] == 3  # kind, layer, head
    assert report["after"] == 4 * 4  # the dropdown switched to encoder self-attention: 4 × 4
    assert report["charts_cells"][1] == 5 * 5  # the mask


def test_chart_page_from_save_chart_draws_every_chart_offline(tmp_path):
    model = make_model(12, 12, N=2, d_model=32, d_ff=64, h=4)
    capture = viz.capture_attention(model, [4, 5, 6, 7, 8], [9, 10])
    page_path = tmp_path / "charts.html"
    page_path.write_text(export.charts_to_html(
        [viz.attention_explorer(capture, kind="decoder"), viz.attention_grid(capture, "cross"),
         viz.plot_mask(subsequent_mask(4))], title="charts"), encoding="utf-8")
    assert_offline_page(page_path.read_text(encoding="utf-8"))
    report = browser_report(tmp_path, page_path)
    assert report["errors"] == [] and report["vegaErrors"] == []
    assert report["drawn"] == 3
    assert report["charts_cells"] == [3 * 3, 2 * 4 * 3 * 5, 4 * 4]  # decoder 3×3; layers × heads × (3×5); mask
    assert report["after"] == 5 * 5


def test_screenshot_of_an_exported_page_is_not_blank(executed_notebook, tmp_path):
    from PIL import Image

    page_path = export.notebook_to_html(executed_notebook, tmp_path / "10_check.html")
    shot = tmp_path / "page.png"
    chromium(tmp_path, "--virtual-time-budget=15000", "--window-size=1000,1300", f"--screenshot={shot}", page_path.as_uri())
    image = Image.open(shot).convert("RGB")
    colours = image.getcolors(maxcolors=1 << 20)
    blues = sum(n for n, (r, g, b) in colours if b > r + 40)  # the heatmaps are shades of blue
    assert blues > 5000, "the screenshot shows no heatmap"

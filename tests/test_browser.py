"""The charts draw in a real browser with no network: exported notebooks and chart pages opened in headless
Chromium: offline rendering, proved in a real browser.

``edition.browser_check`` opens a copy of the page with a probe script first in its head: it records failed
loads and script errors, counts each chart's rectangles once the charts drew, switches the explorer's first
dropdown ("attention": cross → encoder) and counts again. The expected counts come from the token lengths.
"""

import re
import subprocess

import nbformat
import pytest

from course_tools import edition
from transformer_course import make_model, subsequent_mask, viz

CHROMIUM = edition.find_chromium()
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium is not installed (apt-get install chromium)"),
]


def chromium(tmp_path, *args):
    profile = tmp_path / "chromium-profile"  # a fresh profile
    return subprocess.run(
        [CHROMIUM, *edition.CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def assert_offline_page(page):
    """No script or stylesheet that would come from elsewhere: everything the page needs is inside it."""
    assert not re.search(r"<script[^>]+src=", page), "a script is loaded from a URL"
    assert not re.search(r"<link[^>]+href=[\"']?(https?:)?//", page), "a stylesheet is loaded from the web"


@pytest.fixture(scope="module")
def executed_notebook():
    """A small notebook executed by a real kernel, as notebook 10 does it: setup(), capture, explorer, mask."""
    from course_tools.kernels import notebook_client

    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_markdown_cell("# Offline chart check\n\nAn explorer and a mask, drawn with no network."),
            nbformat.v4.new_code_cell(
                "import torch\nfrom transformer_course import make_model, subsequent_mask, viz\nviz.setup()\n"
                "torch.manual_seed(0)\nmodel = make_model(12, 12, N=2, d_model=32, d_ff=64, h=4)\n"
                "capture = viz.capture_attention(model, [4, 5, 6, 7], [8, 9])  # S = 4, T = 3 with <s>"
            ),
            nbformat.v4.new_code_cell("viz.attention_explorer(capture)"),
            nbformat.v4.new_code_cell("viz.plot_mask(subsequent_mask(5))"),
        ]
    )
    with notebook_client(nb, timeout=180) as client:
        client.execute()
    return nb


def test_executed_notebook_exports_to_a_page_whose_charts_draw_offline(executed_notebook, tmp_path):
    outputs = [o for cell in executed_notebook.cells if cell.cell_type == "code" for o in cell.outputs]
    assert sum("application/vnd.vegalite.v5+json" in o.get("data", {}) for o in outputs) == 2  # the mimetype renderer
    page_path = edition.notebook_to_html(executed_notebook, tmp_path / "10_check.html", title="10_check")
    assert_offline_page(page_path.read_text(encoding="utf-8"))
    report = edition.browser_check(page_path)
    assert report["errors"] == [] and report["vega_errors"] == []
    assert report["charts"] == 2 and report["drawn"] == 2
    assert report["cells"] == [3 * 4, 5 * 5]  # cross-attention: 3 target queries × 4 source keys; the mask
    dropdown = report["dropdown"]
    assert dropdown["selects"] == 3  # kind, layer, head
    assert (dropdown["from"], dropdown["to"]) == ("cross", "encoder")
    assert (dropdown["before"], dropdown["after"]) == (3 * 4, 4 * 4)  # now encoder self-attention: 4 × 4
    assert edition.page_problems(report) == []


def test_chart_page_from_save_chart_draws_every_chart_offline(tmp_path):
    model = make_model(12, 12, N=2, d_model=32, d_ff=64, h=4)
    capture = viz.capture_attention(model, [4, 5, 6, 7, 8], [9, 10])
    page_path = tmp_path / "charts.html"
    page_path.write_text(
        viz.charts_to_html(
            [
                viz.attention_explorer(capture, kind="decoder"),
                viz.attention_grid(capture, "cross"),
                viz.plot_mask(subsequent_mask(4)),
            ],
            title="charts",
        ),
        encoding="utf-8",
    )
    assert_offline_page(page_path.read_text(encoding="utf-8"))
    report = edition.browser_check(page_path)
    assert report["errors"] == [] and report["vega_errors"] == [] and report["drawn"] == 3
    assert report["cells"] == [3 * 3, 2 * 4 * 3 * 5, 4 * 4]  # decoder 3×3; layers × heads × (3×5); mask
    assert (report["dropdown"]["to"], report["dropdown"]["after"]) == ("encoder", 5 * 5)


def test_a_page_that_loads_a_script_from_the_web_is_reported(tmp_path):
    page_path = tmp_path / "cdn.html"
    page_path.write_text(
        viz.charts_to_html([viz.plot_mask(subsequent_mask(2))]).replace(
            "<head>", '<head><script src="https://cdn.example.org/vega.js"></script>', 1
        ),
        encoding="utf-8",
    )
    report = edition.browser_check(page_path)
    assert report["drawn"] == 1  # the inline bundle still draws the chart …
    assert edition.page_problems(report) == ["failed to load https://cdn.example.org/vega.js"]  # … but the load failed


def test_screenshot_of_an_exported_page_is_not_blank(executed_notebook, tmp_path):
    from PIL import Image

    page_path = edition.notebook_to_html(executed_notebook, tmp_path / "10_check.html")
    shot = tmp_path / "page.png"
    chromium(
        tmp_path, "--virtual-time-budget=15000", "--window-size=1000,1300", f"--screenshot={shot}", page_path.as_uri()
    )
    image = Image.open(shot).convert("RGB")
    colours = image.getcolors(maxcolors=1 << 20)
    blues = sum(n for n, (r, g, b) in colours if b > r + 40)  # the heatmaps are shades of blue
    assert blues > 5000, "the screenshot shows no heatmap"


def test_chinese_explorer_page_draws_and_switches_offline(tmp_path):
    """The 中文版's explorer (Chinese dropdown names and title) on an offline page: it draws, its dropdown
    switches, and the Chinese words are in the drawn page."""
    from transformer_course import set_language
    from transformer_course.viz import fonts

    if fonts.find_cjk_font() is None:
        pytest.skip("no CJK font installed (apt-get install fonts-noto-cjk)")
    model = make_model(12, 12, N=2, d_model=32, d_ff=64, h=4)
    capture = viz.capture_attention(model, [4, 5, 6, 7], [8, 9])
    set_language("zh")
    try:
        page = viz.charts_to_html([viz.attention_explorer(capture)], title="注意力")
    finally:
        set_language("en")
        fonts.forget_font()
    page_path = tmp_path / "explorer.html"
    page_path.write_text(page, encoding="utf-8")
    assert '<html lang="zh-CN">' in page
    report = edition.browser_check(page_path)
    assert report["errors"] == [] and report["drawn"] == 1 and report["cells"] == [3 * 4]
    assert (report["dropdown"]["to"], report["dropdown"]["after"]) == ("encoder", 4 * 4)
    dom = chromium(tmp_path, "--virtual-time-budget=15000", "--dump-dom", page_path.as_uri()).stdout
    for words in ("注意力查看器", "编码器自注意力", "平均（mean）", "查询"):
        assert words in dom, f"{words!r} is not on the drawn page"

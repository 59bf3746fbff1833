"""The offline HTML edition (issue 7): one command executes the notebooks and writes one offline page per
notebook plus a contents page in course order; in headless Chromium, with no network, every page loads
without a failed script and its charts draw.

The browser tests build a small subset (notebooks 01 and 10, fast mode) and open each page with the
package's probe, ``export.browser_check``. Run only these with ``pytest tests/test_edition.py``.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from transformer_course import edition, export

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
SUBSET = ["01", "10"]
CHROMIUM = export.find_chromium()


def links(index: Path) -> list[str]:
    return re.findall(r'<a href="([^"]+)"', index.read_text(encoding="utf-8"))


def test_select_notebooks_keeps_course_order_whatever_the_order_asked():
    chosen = edition.select_notebooks(NOTEBOOKS, ["10", "01"])
    assert [p.name[:2] for p in chosen] == ["01", "10"]


def test_select_notebooks_names_the_choices_when_nothing_matches():
    with pytest.raises(ValueError, match="choose from 00|choose from 01"):
        edition.select_notebooks(NOTEBOOKS, ["99"])


def test_contents_page_links_every_page_in_course_order(tmp_path):
    built = edition.build_edition(NOTEBOOKS, tmp_path, only=["11", "01", "10"], run=False, progress=False)
    assert [p.name for p in built.pages] == [
        "01_masks.html",
        "10_attention_visualization.html",
        "11_train_multi30k.html",
    ]
    assert links(built.index) == [p.name for p in built.pages]
    assert all(p.is_file() for p in built.pages)


def test_a_failing_notebook_is_exported_with_its_error_and_reported(tmp_path):
    folder = tmp_path / "notebooks"
    folder.mkdir()
    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell("print('before')"), nbformat.v4.new_code_cell("1 / 0")]
    )
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, folder / "00_broken.ipynb")
    assert edition.main(["--notebooks", str(folder), "--out", str(tmp_path / "html")]) == 1
    page = (tmp_path / "html" / "00_broken.html").read_text(encoding="utf-8")
    assert "before" in page and "ZeroDivisionError" in page


@pytest.fixture(scope="module")
def fast_edition(tmp_path_factory):
    """Notebooks 01 and 10 executed in fast mode and exported (about 20–40 s)."""
    out = tmp_path_factory.mktemp("html")
    built = edition.build_edition(NOTEBOOKS, out, fast=True, only=SUBSET, progress=False)
    assert built.failures == {}, f"notebooks failed: {built.failures}"
    return built


@pytest.fixture(scope="module")
def reports(fast_edition, tmp_path_factory):
    """What headless Chromium saw on each page (contents page first), with every network request blocked."""
    if CHROMIUM is None:
        pytest.skip("headless Chromium is not installed (apt-get install chromium)")
    return {page.name: export.browser_check(page, CHROMIUM) for page in [fast_edition.index, *fast_edition.pages]}


def test_every_page_is_self_contained(fast_edition):
    for page in [fast_edition.index, *fast_edition.pages]:
        text = page.read_text(encoding="utf-8")
        assert not re.search(r"<script[^>]+src=", text), f"{page.name} loads a script from a URL"
        assert not re.search(r"<link[^>]+href=[\"']?(https?:)?//", text), f"{page.name} loads a stylesheet from the web"


@pytest.mark.browser
def test_every_page_loads_with_no_failed_script(reports):
    assert len(reports) == 1 + len(SUBSET)
    for name, report in reports.items():
        assert report["errors"] == [], f"{name}: {report['errors']}"
        assert report["vega_errors"] == [], f"{name}: {report['vega_errors']}"


@pytest.mark.browser
def test_every_chart_of_every_notebook_page_draws(reports):
    for name, report in reports.items():
        if name == "index.html":
            continue
        assert report["charts"] > 0, f"{name} has no chart"
        assert report["drawn"] == report["charts"], f"{name}: {report['drawn']} of {report['charts']} charts drew"
        assert max(report["cells"]) > 0, f"{name}: no heatmap cell in the SVG"  # rect marks are in the DOM
        assert export.page_problems(report) == [], f"{name}: {export.page_problems(report)}"

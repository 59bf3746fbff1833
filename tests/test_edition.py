"""The offline HTML edition: one command executes the notebooks and writes one offline page per
notebook plus a contents page in course order; in headless Chromium, with no network, every page loads
without a failed script and its charts draw.

The export of one notebook (Vega-Lite outputs → ``vegaEmbed`` calls, formulas → MathML, images inlined) is
checked on small hand-made notebooks. The browser tests build a small subset (notebooks 01 and 10, fast mode)
and open each page with the package's probe, ``edition.browser_check``. Run only these with
``pytest tests/test_edition.py``.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from course_tools import edition
from transformer_course import make_model, subsequent_mask, viz

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
SUBSET = ["01", "10"]
CHROMIUM = edition.find_chromium()


def links(index: Path) -> list[str]:
    return re.findall(r'<a href="([^"]+)"', index.read_text(encoding="utf-8"))


def test_select_notebooks_keeps_course_order_whatever_the_order_asked():
    chosen = edition.select_notebooks(NOTEBOOKS, ["10", "01"])
    assert [p.name[:2] for p in chosen] == ["01", "10"]


def test_select_notebooks_names_the_choices_when_nothing_matches():
    with pytest.raises(ValueError, match="choose from 00|choose from 01"):
        edition.select_notebooks(NOTEBOOKS, ["99"])


@pytest.mark.slow
def test_contents_page_links_every_page_in_course_order(tmp_path):
    built = edition.build_edition(NOTEBOOKS, tmp_path, only=["11", "01", "10"], run=False, progress=False)
    assert [p.name for p in built.pages] == [
        "01_masks.html",
        "10_attention_visualization.html",
        "11_train_multi30k.html",
    ]
    assert links(built.index) == [p.name for p in built.pages]
    assert all(p.is_file() for p in built.pages)


@pytest.mark.slow
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


# ---------------------------------------------------------------------------------------------------------
# One notebook → one offline page
# ---------------------------------------------------------------------------------------------------------


def vegalite_output(chart):
    return nbformat.v4.new_output(
        "display_data", data={"application/vnd.vegalite.v5+json": chart.to_dict(), "text/plain": "<VegaLite 5 object>"}
    )


@pytest.mark.slow
def test_notebook_export_turns_each_vegalite_output_into_an_embed_with_no_cdn(tmp_path):
    capture = viz.capture_attention(make_model(12, 12, N=2, d_model=32, d_ff=64, h=4), [4, 5, 6], [7, 8])
    cell = nbformat.v4.new_code_cell("viz.attention_explorer(capture)")
    cell.outputs = [
        vegalite_output(viz.attention_explorer(capture)),
        vegalite_output(viz.plot_mask(subsequent_mask(3))),
    ]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Heatmaps"), cell])
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}}}
    page = edition.notebook_to_html(nb, tmp_path / "10_heatmaps.html").read_text()
    assert page.count('class="tc-vega"') == 2 and "<VegaLite 5 object>" not in page
    assert '"may_attend"' in page and '"attention "' in page  # the specs themselves
    assert not re.search(r"<script[^>]+src=[\"']?(https?:)?//", page)
    assert "application/vnd.vegalite.v5+json" in nb.cells[1].outputs[0]["data"]  # the notebook is left as it was
    index = edition.build_contents_page(tmp_path).read_text()
    assert '<a href="10_heatmaps.html">10_heatmaps</a>: Heatmaps' in index


def test_contents_page_lists_pages_in_course_order(tmp_path):
    for name, title in [("10_viz", "Ten"), ("02_attention", "Two"), ("00_intro", "Zero")]:
        (tmp_path / f"{name}.html").write_text(f"<html><body><h1 id='t'>{title}<a href='#t'>¶</a></h1></body></html>")
    index = edition.build_contents_page(tmp_path).read_text()
    assert [m for m in re.findall(r'href="([^"]+)"', index)] == ["00_intro.html", "02_attention.html", "10_viz.html"]
    assert "Zero</li>" in index
    with pytest.raises(FileNotFoundError, match="export the notebooks first"):
        edition.build_contents_page(tmp_path / "empty")


@pytest.mark.slow
def test_exported_formulas_become_mathml_but_code_and_prices_stay(tmp_path):
    md = (
        "# Formulas\n\n$\\frac{QK^\\top}{\\sqrt{d_k}}$ costs $5 and $6.\n\n$$PE_{(pos, 2i)}$$\n\n"
        'Code `x = $a$` and\n\n```python\ns = "$b$"\n```\n'
    )
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(md)])
    page = edition.notebook_to_html(nb, tmp_path / "f.html").read_text()
    assert page.count("<math") == 2 and '<math xmlns="http://www.w3.org/1998/Math/MathML" display="block">' in page
    assert "<msqrt>" in page and "TCMATH" not in page
    assert "$5 and $6" in page and "$a$" in page and "$b$" in page


@pytest.mark.slow
def test_exported_page_carries_the_notebooks_own_images(tmp_path):
    (tmp_path / "figures").mkdir()
    (tmp_path / "figures" / "dot.svg").write_text('<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"/>')
    nbformat.write(
        nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("![a dot](figures/dot.svg)")]),
        tmp_path / "00_dot.ipynb",
    )
    page = edition.notebook_to_html(tmp_path / "00_dot.ipynb", tmp_path / "html" / "00_dot.html").read_text()
    assert '<img alt="a dot" src="data:image/svg+xml;base64,' in page  # the page works from any folder


@pytest.mark.slow
def test_edition_runs_as_a_module_and_viz_does_not_pull_it_in():
    """``python -m course_tools.edition`` is the command; importing viz loads none of the edition."""
    code = (
        "import sys, transformer_course.viz\n"
        "assert not [m for m in sys.modules if m.startswith('course_tools.edition')], 'viz imported the edition'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    result = subprocess.run(
        [sys.executable, "-m", "course_tools.edition", "--help"], capture_output=True, text=True, check=True
    )
    assert "--fast" in result.stdout and "--check" in result.stdout


# ---------------------------------------------------------------------------------------------------------
# The edition, executed (a subset) and checked in headless Chromium
# ---------------------------------------------------------------------------------------------------------


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
    return {page.name: edition.browser_check(page, CHROMIUM) for page in [fast_edition.index, *fast_edition.pages]}


@pytest.mark.notebooks
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
        assert edition.page_problems(report) == [], f"{name}: {edition.page_problems(report)}"


# ---------------------------------------------------------------------------------------------------------
# Both languages: English in OUT/, the 中文版 in OUT/zh/, each page linked to its namesake
# ---------------------------------------------------------------------------------------------------------


def small_course(folder: Path, english: list[str], chinese: list[str]) -> Path:
    """A notebooks folder: one markdown cell per notebook, English ones in it, Chinese ones in zh/."""
    (folder / "zh").mkdir(parents=True)
    for name in english:
        nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(f"# {name}")]), folder / name)
    for name in chinese:
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(f"# 中文 {name}")])
        nbformat.write(nb, folder / "zh" / name)
    return folder


def html_lang(page: Path) -> str | None:
    match = re.search(r"<html\b[^>]*>", page.read_text(encoding="utf-8"))
    return (re.search(r'lang="([^"]+)"', match.group(0)) or [None, None])[1]


@pytest.mark.slow
def test_both_editions_link_each_page_to_its_namesake_and_skip_what_is_not_translated(tmp_path, capsys):
    folder = small_course(tmp_path / "notebooks", ["00_a.ipynb", "01_b.ipynb"], ["00_a.ipynb"])
    out = tmp_path / "html"
    built = edition.build_editions(folder, out, run=False, progress=False)
    assert sorted(built) == ["en", "zh"]
    assert [p.relative_to(out).as_posix() for p in built["zh"].pages] == ["zh/00_a.html"]
    note = capsys.readouterr().err.strip().splitlines()
    assert len(note) == 1 and "01" in note[0] and "00" not in note[0]  # one line naming what is left out
    assert links(out / "index.html") == ["zh/index.html", "00_a.html", "01_b.html"]
    assert links(out / "zh" / "index.html") == ["../index.html", "00_a.html"]
    assert links(out / "00_a.html") == ["index.html", "zh/00_a.html"]
    assert links(out / "zh" / "00_a.html") == ["index.html", "../00_a.html"]
    assert links(out / "01_b.html") == []  # no Chinese page to link to
    assert "中文 00_a.ipynb</li>" in (out / "zh" / "index.html").read_text(encoding="utf-8")  # the Chinese title
    for page in [out / "zh" / "index.html", out / "zh" / "00_a.html"]:
        assert html_lang(page) == "zh-CN", page
    assert html_lang(out / "00_a.html") == "en"


@pytest.mark.slow
def test_every_cross_link_of_the_course_editions_leads_to_a_page(tmp_path):
    """The real notebooks, as saved: every link of both contents pages and of every page resolves."""
    if not (NOTEBOOKS / "zh").is_dir():
        pytest.skip("no notebooks/zh/ yet")
    assert edition.main(["--no-run", "--only", "01", "10", "--out", str(tmp_path)]) == 0
    pages = sorted(tmp_path.rglob("*.html"))
    assert {p.relative_to(tmp_path).as_posix() for p in pages} >= {"index.html", "zh/index.html", "zh/01_masks.html"}
    for page in pages:  # the contents pages' links, and the language links at the top of each page
        text = page.read_text(encoding="utf-8")
        edition_links = links(page) if page.name == "index.html" else re.findall(r'href="([^"]+)"', nav(text))
        assert edition_links, f"{page.relative_to(tmp_path)} links to nothing"
        for href in edition_links:
            assert (page.parent / href).resolve().is_file(), f"{page.relative_to(tmp_path)} → {href}"
    assert "../01_masks.html" in nav((tmp_path / "zh" / "01_masks.html").read_text(encoding="utf-8"))


def nav(page: str) -> str:
    """The language links at the top of a notebook's page."""
    match = re.search(r'<nav class="tc-language".*?</nav>', page, flags=re.S)
    return match.group(0) if match else ""


def test_one_language_only_builds_no_other_and_links_to_none(tmp_path):
    folder = small_course(tmp_path / "notebooks", ["00_a.ipynb"], ["00_a.ipynb"])
    out = tmp_path / "html"
    assert edition.main(["--no-run", "--notebooks", str(folder), "--out", str(out), "--languages", "en"]) == 0
    assert not (out / "zh").exists() and links(out / "index.html") == ["00_a.html"]
    assert edition.main(["--no-run", "--notebooks", str(folder), "--out", str(out), "--languages", "zh"]) == 0
    assert links(out / "zh" / "index.html") == ["00_a.html"]


def test_chinese_only_with_no_chinese_notebook_says_so(tmp_path, capsys):
    folder = small_course(tmp_path / "notebooks", ["00_a.ipynb"], [])
    assert edition.main(["--no-run", "--notebooks", str(folder), "--out", str(tmp_path), "--languages", "zh"]) == 1
    assert "no Chinese notebook in" in capsys.readouterr().err


def test_the_language_and_the_links_go_into_the_page_itself_not_into_its_scripts():
    """Inlined scripts hold "<html" and "<body" in their text: the links go after the real <body> tag."""
    page = (
        '<!DOCTYPE html>\n<html>\n<head><script>var s = "<body>";</script></head>\n<body class="jp-Notebook">\n</body>'
    )
    out = edition.with_language(page, "zh", '<nav id="n"></nav>')
    assert out.startswith('<!DOCTYPE html>\n<html lang="zh-CN">')
    assert '<body class="jp-Notebook">\n<nav id="n"></nav>' in out and 'var s = "<body>";' in out
    with pytest.raises(RuntimeError, match="no <html>, </head> or <body>"):
        edition.with_language("<p>not a page</p>", "zh")
    with pytest.raises(ValueError, match="language must be one of"):
        edition.with_language(page, "fr")


@pytest.fixture(scope="module")
def chinese_edition(tmp_path_factory):
    """The Chinese notebook 10 executed in fast mode and exported (about 30 s)."""
    from transformer_course.viz.fonts import find_cjk_font

    if find_cjk_font() is None:
        pytest.skip("no CJK font installed (apt-get install fonts-noto-cjk): the charts would keep English labels")
    out = tmp_path_factory.mktemp("html")
    built = edition.build_editions(NOTEBOOKS, out, fast=True, only=["10"], progress=False, languages=("zh",))
    assert built["zh"].failures == {}, f"notebooks failed: {built['zh'].failures}"
    return built["zh"]


@pytest.mark.notebooks
def test_the_chinese_notebooks_charts_speak_chinese_on_their_page(chinese_edition):
    page = chinese_edition.pages[0]
    text = page.read_text(encoding="utf-8")
    assert html_lang(page) == "zh-CN"
    for words in [
        "注意力查看器",
        "交叉注意力（解码器 → 编码器）：层 × 头",
        '"name": "注意力 "',
        "'第 ' + datum.value + ' 层'",
    ]:
        assert words in text, f"{words!r} is not on the page"


@pytest.mark.browser
def test_the_chinese_page_draws_every_chart_offline(chinese_edition):
    if CHROMIUM is None:
        pytest.skip("headless Chromium is not installed (apt-get install chromium)")
    report = edition.browser_check(chinese_edition.pages[0], CHROMIUM)
    assert report["charts"] >= 5 and report["drawn"] == report["charts"]
    assert edition.page_problems(report) == []


@pytest.mark.slow
def test_the_edition_runs_the_solved_course_and_leaves_the_notebooks_as_they_are(tmp_path):
    """The HTML edition shows the solved course; the notebooks keep their blanks."""
    folder = tmp_path / "notebooks"
    (folder / "solutions").mkdir(parents=True)
    (folder / "solutions" / "nb00_blank.py").write_text("def answer():\n    return 6 * 7\n", encoding="utf-8")
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell('def answer():\n    """The answer."""\n    raise NotImplementedError'),
            nbformat.v4.new_code_cell("print('the answer is', answer())"),
        ]
    )
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, folder / "00_blank.ipynb")
    before = (folder / "00_blank.ipynb").read_text(encoding="utf-8")
    built = edition.build_edition(folder, tmp_path / "html", progress=False)
    assert built.failures == {}
    assert "the answer is 42" in (tmp_path / "html" / "00_blank.html").read_text(encoding="utf-8")
    assert (folder / "00_blank.ipynb").read_text(encoding="utf-8") == before
    committed = edition.build_edition(folder, tmp_path / "html-committed", progress=False, solved=False)
    assert "NotImplementedError" in committed.failures["00_blank"]

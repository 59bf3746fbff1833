"""Slides: every notebook has a teacher's path through it in its cells' slide metadata, and
``python -m course_tools.edition --slides`` turns an executed notebook into a reveal.js deck that needs
no network: reveal.js, the Vega bundle and every style sheet are inside the page, formulas are MathML.

The slide path is checked on the notebooks as committed (no kernel). The deck is checked on hand-made
notebooks with hand-made outputs, then in headless Chromium with every host name unresolvable: reveal.js
starts, the deck has as many slides as the metadata says (counted here, independently of the package), its
charts draw, and the page asks the network for nothing. Run only these with ``pytest tests/test_slides.py``.
"""

from __future__ import annotations

import base64
import re
import struct
import zlib
from pathlib import Path

import nbformat
import pytest

from course_tools import edition
from transformer_course import subsequent_mask, viz

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
COURSE = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
CHROMIUM = edition.find_chromium()
MIN_SLIDES = 6  # a notebook's path has at least this many top-level slides
SHOWN_TYPES = {"slide", "subslide", "fragment", "-"}
# Code that draws: matplotlib, the package's charts and heatmaps, Altair, an SVG shown with display().
FIGURE_CODE = re.compile(r"plt\.|\bax\.|\.plot\(|\bplot_\w+\(|\bshow_\w+\(|\bviz\.\w+\(|\balt\.|display\(|imshow")
EXERCISE_STUB = re.compile(r"raise NotImplementedError|^\s*\w+(\s*,\s*\w+)*\s*=\s*\.\.\.|\bex\.check_", flags=re.M)


def png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


PNG_1PX = base64.b64encode(  # one red pixel, a valid PNG
    b"\x89PNG\r\n\x1a\n"
    + png_chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
    + png_chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00"))
    + png_chunk(b"IEND", b"")
).decode()


def slide_types(nb) -> list[str]:
    return [cell.metadata.get("slideshow", {}).get("slide_type") for cell in nb.cells]


def reveal_slides(types: list[str]) -> int:
    """The number of reveal.js slides: the first shown cell opens one, so does each later slide/subslide."""
    shown = [t or "-" for t in types if t not in ("skip", "notes")]
    return 1 + sum(t in ("slide", "subslide") for t in shown[1:])


# ---------------------------------------------------------------------------------------------------------
# The slide path of every notebook, as committed
# ---------------------------------------------------------------------------------------------------------


def test_the_course_has_thirteen_notebooks_to_present():
    assert [p.name[:2] for p in COURSE] == [f"{n:02d}" for n in range(13)]


@pytest.mark.parametrize("path", COURSE, ids=lambda p: p.name[:2])
def test_every_cell_says_where_it_goes_in_the_slides(path):
    nb = nbformat.read(path, as_version=4)
    unmarked = [i for i, t in enumerate(slide_types(nb)) if t not in SHOWN_TYPES | {"skip"}]
    assert not unmarked, f"{path.name}: cells {unmarked} have no slideshow.slide_type (slide/subslide/fragment/-/skip)"


@pytest.mark.parametrize("path", COURSE, ids=lambda p: p.name[:2])
def test_the_path_opens_with_the_title_and_has_enough_slides(path):
    nb = nbformat.read(path, as_version=4)
    types = slide_types(nb)
    first = next(i for i, t in enumerate(types) if t in SHOWN_TYPES)
    assert types[first] == "slide" and nb.cells[first].cell_type == "markdown"
    assert nb.cells[first].source.startswith("# "), f"{path.name}: the first slide is not the title"
    assert types.count("slide") >= MIN_SLIDES, f"{path.name}: {types.count('slide')} slides, want {MIN_SLIDES}+"
    assert 0 < types.count("skip") < len(types), f"{path.name}: a path through the notebook, not every cell"
    last = nb.cells[max(i for i, t in enumerate(types) if t == "slide")].source
    assert re.search(r"^## Summary", last, flags=re.M), f"{path.name}: the last slide is not the summary"


@pytest.mark.parametrize("path", COURSE, ids=lambda p: p.name[:2])
def test_a_slide_starts_at_prose_or_a_picture_never_at_an_exercise(path):
    nb = nbformat.read(path, as_version=4)
    for i, (cell, kind) in enumerate(zip(nb.cells, slide_types(nb))):
        if kind in ("slide", "subslide") and cell.cell_type == "code":
            assert FIGURE_CODE.search(cell.source), f"{path.name} cell {i}: a {kind} starts at code that draws nothing"
        if cell.cell_type == "code" and EXERCISE_STUB.search(cell.source):
            assert kind == "skip", f"{path.name} cell {i}: an exercise cell is on the slides ({kind!r})"


# ---------------------------------------------------------------------------------------------------------
# One notebook → one offline deck (hand-made outputs, no kernel)
# ---------------------------------------------------------------------------------------------------------


def marked(cell, kind):
    cell.metadata["slideshow"] = {"slide_type": kind}
    return cell


@pytest.fixture
def small_notebook():
    """A title, a formula, long code, a picture, a chart, a skipped exercise and a fragment: 4 reveal.js slides."""
    picture = nbformat.v4.new_code_cell("fig, ax = plt.subplots()  # DRAWING-CODE")
    picture.outputs = [nbformat.v4.new_output("display_data", data={"image/png": PNG_1PX, "text/plain": "<Figure>"})]
    chart = nbformat.v4.new_code_cell("viz.plot_mask(subsequent_mask(4))")
    spec = viz.plot_mask(subsequent_mask(4)).to_dict()
    chart.outputs = [nbformat.v4.new_output("display_data", data={"application/vnd.vegalite.v5+json": spec})]
    shape = nbformat.v4.new_code_cell("print((2, 4))")
    shape.outputs = [
        nbformat.v4.new_output("stream", name="stdout", text="(2, 4)\n"),
        nbformat.v4.new_output("stream", name="stderr", text="UserWarning: STDERR-NOISE\n"),
        nbformat.v4.new_output(
            "display_data",
            data={"application/vnd.jupyter.widget-view+json": {"model_id": "m1"}, "text/plain": "WIDGET-BAR 0%|"},
        ),
    ]
    long_code = nbformat.v4.new_code_cell("\n".join(f"x{i} = {i}  # LONG-CODE" for i in range(13)) + "\nprint(x12)")
    long_code.outputs = [nbformat.v4.new_output("stream", name="stdout", text="LONG-OUTPUT\n")]
    cells = [
        marked(nbformat.v4.new_markdown_cell("# 99 · Slides\n\nThe goals."), "slide"),
        marked(nbformat.v4.new_code_cell("import torch  # SETUP"), "skip"),
        marked(nbformat.v4.new_markdown_cell("## The formula\n\n$$\\frac{QK^\\top}{\\sqrt{d_k}}$$"), "slide"),
        marked(shape, "-"),
        marked(long_code, "-"),
        marked(nbformat.v4.new_markdown_cell("A remark that comes on a click."), "fragment"),
        marked(picture, "subslide"),
        marked(nbformat.v4.new_markdown_cell("## A chart"), "slide"),
        marked(chart, "-"),
        marked(nbformat.v4.new_code_cell("raise NotImplementedError  # EXERCISE"), "skip"),
    ]
    return nbformat.v4.new_notebook(cells=cells)


def test_count_slides_follows_nbconvert_rules():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(str(i)) for i in range(7)])
    for cell, kind in zip(nb.cells, ["skip", "-", "fragment", "subslide", "-", "slide", "notes"]):
        marked(cell, kind)
    assert edition.count_slides(nb) == 3  # the first shown cell opens a slide, then a subslide and a slide
    assert edition.count_slides(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("x")])) == 1


def test_deck_holds_reveal_and_its_slides_and_loads_nothing_from_elsewhere(small_notebook, tmp_path):
    deck = edition.notebook_to_slides(small_notebook, tmp_path / "99_slides.slides.html").read_text()
    assert not re.search(r"<script[^>]+\bsrc=", deck), "a script is loaded from a URL"
    assert not re.search(r"<link[^>]+href=", deck), "a style sheet is loaded from a URL"
    assert "unpkg.com" not in deck and "cdnjs" not in deck and "require.js" not in deck
    assert "Reveal.initialize(" in deck and "reveal.js 5." in deck  # the vendored reveal.js, inlined
    assert deck.count('class="tc-vega"') == 1 and "vegaEmbed" in deck
    assert '<math xmlns="http://www.w3.org/1998/Math/MathML" display="block">' in deck
    assert "SETUP" not in deck and "EXERCISE" not in deck  # skipped cells are left out
    assert "DRAWING-CODE" not in deck and PNG_1PX in deck  # a picture cell shows its picture, not its code
    assert "LONG-CODE" not in deck and "LONG-OUTPUT" in deck  # so does a cell of more than 12 lines
    assert "(2, 4)" in deck and "STDERR-NOISE" not in deck  # warnings and progress bars stay in the notebook
    assert "WIDGET-BAR" not in deck  # so do widgets: they need a live kernel
    assert 'class="fragment"' in deck
    assert reveal_slides(slide_types(small_notebook)) == 4
    assert "application/vnd.vegalite.v5+json" in small_notebook.cells[8].outputs[0]["data"]  # notebook unchanged
    assert len(small_notebook.cells[3].outputs) == 3


def test_deck_without_charts_leaves_the_vega_bundle_out(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Text only")])
    deck = edition.notebook_to_slides(nb, tmp_path / "text.slides.html")
    assert "vegaEmbed" not in deck.read_text() and deck.stat().st_size < 800_000


def test_the_exercise_slides_name_no_solutions_folder(tmp_path):
    """A deck is shown in class: the notebooks' "Solutions: [solutions/…](…) (after trying!)" sentence (and the
    中文版's) is left out of it; the exercise slide keeps everything else."""
    decks = {}
    for language, path in [("en", NOTEBOOKS / "02_attention.ipynb"), ("zh", NOTEBOOKS / "zh" / "02_attention.ipynb")]:
        [exercises] = [c for c in nbformat.read(path, as_version=4).cells if c.get("id") == "nb02-18"]
        assert "solutions/nb02_attention.py" in exercises.source  # the notebook keeps its link for self-learners
        nb = nbformat.v4.new_notebook(cells=[marked(exercises, "slide")])
        decks[language] = edition.notebook_to_slides(nb, tmp_path / f"{language}.slides.html", language=language)
    for language, deck in decks.items():
        text = deck.read_text(encoding="utf-8")
        assert "solutions/" not in text and "solutions</a>" not in text, language
    assert "Exercise 1" in decks["en"].read_text(encoding="utf-8")
    assert "练习 1" in decks["zh"].read_text(encoding="utf-8")


def test_a_wrong_slide_type_or_an_all_skipped_notebook_is_refused_with_the_fix(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[marked(nbformat.v4.new_markdown_cell("# T"), "Slide")])
    with pytest.raises(ValueError, match=r"cell 0 has slide_type 'Slide'; use one of 'slide'"):
        edition.notebook_to_slides(nb, tmp_path / "x.slides.html")
    marked(nb.cells[0], "skip")
    with pytest.raises(ValueError, match="mark at least one cell as a slide"):
        edition.notebook_to_slides(nb, tmp_path / "x.slides.html")


@pytest.mark.slow
def test_slides_command_writes_one_deck_per_notebook_and_a_contents_page(tmp_path):
    assert edition.main(["--slides", "--no-run", "--only", "01", "04", "--out", str(tmp_path)]) == 0
    decks = sorted(p.name for p in (tmp_path / "slides").glob("*.slides.html"))
    assert decks == ["01_masks.slides.html", "04_layernorm_residual.slides.html"]
    index = (tmp_path / "slides" / "index.html").read_text()
    assert re.findall(r'<a href="([^"]+)"', index) == ["../zh/slides/index.html", *decks]  # 中文版 first


# ---------------------------------------------------------------------------------------------------------
# The decks in headless Chromium, offline
# ---------------------------------------------------------------------------------------------------------

browser = pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium is not installed (apt-get install chromium)")


@pytest.mark.browser
@browser
def test_small_deck_starts_counts_its_slides_and_draws_its_chart_offline(small_notebook, tmp_path):
    deck = edition.notebook_to_slides(small_notebook, tmp_path / "99.slides.html")
    report = edition.deck_check(deck, CHROMIUM)
    assert report["ready"] and report["slides"] == 4 and report["horizontal"] == 3
    assert (report["charts"], report["drawn"], report["cells"]) == (1, 1, [4 * 4])  # the 4 × 4 mask
    assert report["requests"] == [] and report["errors"] == []
    assert edition.deck_problems(report, expected_slides=4) == []
    assert edition.deck_problems(report, expected_slides=5) == ["4 slides, expected 5 from the cell metadata"]


@pytest.fixture(scope="module")
def fast_deck(tmp_path_factory):
    """Notebook 01 executed in fast mode and written as a deck (about 30 s)."""
    out = tmp_path_factory.mktemp("html")
    built = edition.build_edition(NOTEBOOKS, out, fast=True, only=["01"], progress=False, slides=True)
    assert built.failures == {}, f"notebooks failed: {built.failures}"
    return built.pages[0]


@pytest.mark.browser
@browser
def test_a_course_deck_has_the_slides_of_its_metadata_and_asks_the_network_for_nothing(fast_deck):
    report = edition.deck_check(fast_deck, CHROMIUM)
    expected = reveal_slides(slide_types(nbformat.read(NOTEBOOKS / "01_masks.ipynb", as_version=4)))
    assert report["ready"] and report["slides"] == expected
    assert report["charts"] >= 1 and report["drawn"] == report["charts"]
    assert report["requests"] == [] and report["errors"] == [] and report["vega_errors"] == []


@pytest.mark.browser
@browser
def test_a_slide_screenshot_is_a_picture_of_the_deck_size(fast_deck, tmp_path):
    png = edition.slide_screenshot(fast_deck, tmp_path / "slide.png", slide="1", chromium=CHROMIUM)
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", data[16:24]) == edition.slides.DECK_SIZE  # width, height from the IHDR chunk
    assert len(data) > 10_000  # text and a picture, not a blank page


# ---------------------------------------------------------------------------------------------------------
# The 中文版's decks: the same builder on notebooks/zh/, into OUT/zh/slides/, linked both ways
# ---------------------------------------------------------------------------------------------------------

ZH_DECK = NOTEBOOKS / "zh" / "01_masks.ipynb"


@pytest.fixture(scope="module")
def zh_decks(tmp_path_factory):
    """Notebook 01 as saved, as a deck in both languages (no kernel)."""
    out = tmp_path_factory.mktemp("html")
    assert edition.main(["--slides", "--no-run", "--only", "01", "--out", str(out)]) == 0
    return out


@pytest.mark.slow
def test_the_chinese_deck_has_the_english_decks_slides_and_links_to_it(zh_decks):
    deck = zh_decks / "zh" / "slides" / "01_masks.slides.html"
    text = deck.read_text(encoding="utf-8")
    assert re.search(r'<html lang="zh-CN">', text)
    nav = re.search(r'<nav class="tc-language".*?</nav>', text, flags=re.S).group(0)
    assert re.findall(r'href="([^"]+)"', nav) == ["index.html", "../../slides/01_masks.slides.html"]
    assert (deck.parent / "../../slides/01_masks.slides.html").resolve().is_file()
    english = (zh_decks / "slides" / "01_masks.slides.html").read_text(encoding="utf-8")
    assert 'href="../zh/slides/01_masks.slides.html"' in english
    index = (zh_decks / "zh" / "slides" / "index.html").read_text(encoding="utf-8")
    assert re.findall(r'<a href="([^"]+)"', index) == ["../../slides/index.html", "01_masks.slides.html"]
    zh, en = (nbformat.read(path, as_version=4) for path in (ZH_DECK, NOTEBOOKS / "01_masks.ipynb"))
    assert edition.count_slides(zh) == edition.count_slides(en)  # the same slide metadata


@pytest.mark.browser
@browser
def test_the_chinese_deck_starts_offline_with_its_slides(zh_decks):
    report = edition.deck_check(zh_decks / "zh" / "slides" / "01_masks.slides.html", CHROMIUM)
    expected = reveal_slides(slide_types(nbformat.read(ZH_DECK, as_version=4)))
    assert report["ready"] and report["slides"] == expected
    assert report["requests"] == [] and report["errors"] == []

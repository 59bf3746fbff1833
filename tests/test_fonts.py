"""A CJK font for the 中文版's charts: found and used in Chinese, or one warning line and
English labels when there is none — never boxes ("tofu") in place of Chinese characters.

The finder takes the list of fonts to choose from, so "no CJK font on this machine" is an empty list here,
not a change to matplotlib's own font list. matplotlib's settings are restored after every test
(``rc_context``) and the font choice forgotten (``viz.fonts.forget_font``).

matplotlib warns "Glyph … missing from font(s) …" when it draws a character its fonts lack: that warning is
how these tests see a box. The tests that need a real CJK font skip where none is installed; CI installs
Debian's ``fonts-noto-cjk`` (``.ci/run``).
"""

from __future__ import annotations

import warnings

import matplotlib
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.font_manager import FontEntry

from transformer_course import set_language, subsequent_mask, viz
from transformer_course.viz import fonts

matplotlib.use("Agg")

CJK_INSTALLED = fonts.find_cjk_font() is not None
needs_cjk_font = pytest.mark.skipif(
    not CJK_INSTALLED, reason="no CJK font installed (Debian/Ubuntu: apt-get install fonts-noto-cjk)"
)


@pytest.fixture(autouse=True)
def clean_state():
    """Each test starts in English with no font chosen, and leaves matplotlib's settings as it found them."""
    fonts.forget_font()
    with matplotlib.rc_context():
        yield
    set_language("en")
    fonts.forget_font()


def missing_glyphs(fig) -> list[str]:
    """matplotlib's "Glyph … missing from font(s)" warnings while drawing ``fig``: one per box drawn."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fig.canvas.draw()
    return [str(w.message) for w in caught if "missing from font" in str(w.message)]


def texts(fig) -> list[str]:
    return [t.get_text() for t in fig.findobj(matplotlib.text.Text) if t.get_text()]


# ---------------------------------------------------------------------------------------------------------
# Finding a font
# ---------------------------------------------------------------------------------------------------------


def test_the_finder_prefers_simplified_chinese_fonts_in_its_order():
    installed = [FontEntry(name=name) for name in ("DejaVu Sans", "Noto Sans CJK JP", "WenQuanYi Zen Hei")]
    assert fonts.find_cjk_font(installed) == "WenQuanYi Zen Hei"  # before the Japanese forms
    installed.append(FontEntry(name="Noto Sans CJK SC"))
    assert fonts.find_cjk_font(installed) == "Noto Sans CJK SC"


def test_the_finder_finds_nothing_in_a_list_without_cjk_fonts():
    assert fonts.find_cjk_font([]) is None
    assert fonts.find_cjk_font([FontEntry(name="DejaVu Sans"), FontEntry(name="STIXGeneral")]) is None


def test_font_files_installed_after_matplotlibs_cache_are_recognised_by_name():
    """A font installed after matplotlib wrote its font cache is found by its file name, then added."""
    for name in ("NotoSansCJK-Regular.ttc", "wqy-zenhei.ttc", "msyh.ttc", "simhei.ttf", "SourceHanSansSC-Regular.otf"):
        assert fonts.CJK_FILE.search(name), name
    for name in ("DejaVuSans.ttf", "NotoSans-Regular.ttf", "LiberationSerif-Bold.ttf"):
        assert not fonts.CJK_FILE.search(name), name


# ---------------------------------------------------------------------------------------------------------
# No CJK font: one warning line, English labels, matplotlib untouched
# ---------------------------------------------------------------------------------------------------------


def test_without_a_cjk_font_one_warning_line_says_what_to_install(capsys):
    before = dict(matplotlib.rcParams)
    assert fonts.use_cjk_font([]) is None
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "fonts-noto-cjk" in err and "English" in err
    assert dict(matplotlib.rcParams) == before


def test_without_a_cjk_font_chinese_charts_keep_english_labels_and_warn_once(capsys):
    set_language("zh")
    fonts.use_cjk_font([])  # this machine, as far as the charts know, has no CJK font
    capsys.readouterr()
    fig = viz.plot_mask(subsequent_mask(3), backend="matplotlib")
    chart = viz.plot_mask(subsequent_mask(3))
    assert {"key", "query", "mask (True = may attend)"} <= set(texts(fig))
    assert chart.to_dict()["title"] == "mask (True = may attend)"
    assert missing_glyphs(fig) == []
    assert capsys.readouterr().err == ""  # warned once, when the choice was made


def test_english_charts_leave_matplotlib_settings_alone(capsys):
    before = dict(matplotlib.rcParams)
    viz.plot_positional_encoding(20, 16, backend="matplotlib")
    viz.attention_grid(viz.capture_attention(tiny_model(), [4, 5, 6], [7, 8]), "cross", backend="matplotlib")
    assert dict(matplotlib.rcParams) == before
    assert capsys.readouterr().err == ""


def tiny_model():
    from transformer_course import make_model

    return make_model(12, 12, N=1, d_model=16, d_ff=32, h=2)


# ---------------------------------------------------------------------------------------------------------
# A CJK font installed: it goes first, Chinese draws without boxes
# ---------------------------------------------------------------------------------------------------------


def test_chinese_drawn_with_matplotlibs_default_font_shows_boxes():
    """The failure the font prevents, seen by the check the other tests use: DejaVu Sans has no 中."""
    fig = matplotlib.figure.Figure()
    FigureCanvasAgg(fig)  # draws like the notebooks' inline backend
    fig.add_subplot().set_title("掩码")
    missing = missing_glyphs(fig)
    assert any("\\N{CJK UNIFIED IDEOGRAPH-63A9}" in m for m in missing), missing  # 掩
    assert any("\\N{CJK UNIFIED IDEOGRAPH-7801}" in m for m in missing), missing  # 码


@needs_cjk_font
def test_the_cjk_font_goes_first_with_dejavu_sans_after_it():
    family = fonts.use_cjk_font()
    assert family in fonts.CJK_FAMILIES
    assert matplotlib.rcParams["font.sans-serif"][:2] == [family, "DejaVu Sans"]
    assert matplotlib.rcParams["font.family"] == ["sans-serif"]
    assert matplotlib.rcParams["axes.unicode_minus"] == fonts.has_glyph(family, "\u2212")


@needs_cjk_font
@pytest.mark.parametrize("chart", ["mask", "positional encoding", "grid", "head statistics", "schedule"])
def test_chinese_charts_draw_every_character(chart):
    set_language("zh")
    capture = viz.capture_attention(tiny_model(), [4, 5, 6], [7, 8])
    fig = {
        "mask": lambda: viz.plot_mask(subsequent_mask(3), backend="matplotlib"),
        "positional encoding": lambda: viz.plot_positional_encoding(20, 16, dims=[2, 3], backend="matplotlib"),
        "grid": lambda: viz.attention_grid(capture, "cross", backend="matplotlib"),
        "head statistics": lambda: viz.plot_head_statistics(capture, "entropy", backend="matplotlib"),
        "schedule": lambda: viz.plot_lr_schedule([1e-4, 7e-4, 5e-4], backend="matplotlib"),
    }[chart]()
    assert any("\u4e00" <= ch <= "\u9fff" for text in texts(fig) for ch in text), "no Chinese label"
    assert missing_glyphs(fig) == []  # minus signs on the PE axis included


@needs_cjk_font
def test_a_font_found_later_is_taken_without_a_restart(capsys):
    set_language("zh")
    fonts.use_cjk_font([])
    assert viz.chart_text("key") == "key"
    assert fonts.use_cjk_font() is not None  # e.g. after apt-get install fonts-noto-cjk
    assert viz.chart_text("key") == "键"

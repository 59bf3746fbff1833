"""A font that draws Chinese in matplotlib figures, for the 中文版 (notebooks/zh/).

matplotlib's default font, DejaVu Sans, has no Chinese characters: a Chinese label comes out as empty boxes
("tofu"). When the course's language is Chinese (``set_language("zh")``), the first chart of the package asks
:func:`chinese_font`, which calls :func:`use_cjk_font` once:

- :func:`find_cjk_font` looks through matplotlib's font list for an installed CJK font, in the order of
  :data:`CJK_FAMILIES` (Noto Sans CJK SC first: Debian's ``fonts-noto-cjk``; then Source Han Sans, WenQuanYi,
  SimHei, Microsoft YaHei, PingFang, …). A font installed after matplotlib wrote its font cache is found too:
  the system's font files with a known CJK name are added to matplotlib's list.
- found: that font goes first in ``font.sans-serif``, DejaVu Sans right after it (matplotlib falls back to it
  for any glyph the CJK font lacks), and ``axes.unicode_minus`` is switched off if the font has no "−" (U+2212).
- not found: one warning line that says what to install, and the package's chart labels stay English
  (:func:`transformer_course.viz.labels.chart_text`) — never boxes.

In English nothing here runs, and matplotlib's settings are left as they are.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

__all__ = ["CJK_FAMILIES", "NO_FONT_WARNING", "chinese_font", "find_cjk_font", "forget_font", "use_cjk_font"]

# Sans-serif CJK fonts, best first: Simplified Chinese forms before Japanese / Traditional ones.
CJK_FAMILIES = (
    "Noto Sans CJK SC",  # Debian/Ubuntu: fonts-noto-cjk
    "Noto Sans SC",
    "Source Han Sans SC",
    "Source Han Sans CN",
    "WenQuanYi Zen Hei",  # fonts-wqy-zenhei
    "WenQuanYi Micro Hei",  # fonts-wqy-microhei
    "Microsoft YaHei",  # Windows
    "SimHei",
    "PingFang SC",  # macOS
    "Hiragino Sans GB",
    "Heiti SC",
    "STHeiti",
    "Noto Sans CJK TC",
    "Noto Sans CJK JP",
    "Noto Sans CJK KR",
    "Noto Sans CJK HK",
    "Source Han Sans",
    "Arial Unicode MS",
    "Droid Sans Fallback",
)
# File names of such fonts, for a font installed after matplotlib cached its list of fonts.
CJK_FILE = re.compile(
    r"notosanscjk|notosanssc|sourcehansans|wqy|wenquanyi|msyh|simhei|pingfang|hiragino|stheiti|arialuni|droidsansfallback",
    flags=re.I,
)
NO_FONT_WARNING = (
    "⚠ 未找到中文（CJK）字体，图表标签保持英文 (no CJK font: chart labels stay English). "
    "安装 Install: sudo apt-get install fonts-noto-cjk (Debian/Ubuntu; macOS and Windows have one), "
    "then restart the kernel or run viz.use_cjk_font()."
)

_choice: dict[str, str | None] = {}  # "family": the font chosen by use_cjk_font (None: none installed)


def find_cjk_font(fonts: Iterable[Any] | None = None) -> str | None:
    """The family name of the best installed CJK font (order of :data:`CJK_FAMILIES`), or None.

    ``fonts``: the fonts to choose from, each with a ``.name`` (matplotlib ``FontEntry``s); by default
    matplotlib's own list, plus the system's CJK font files it has not cached yet.
    """
    if fonts is not None:
        names = {font.name for font in fonts}
        return next((family for family in CJK_FAMILIES if family in names), None)
    from matplotlib import font_manager

    found = find_cjk_font(font_manager.fontManager.ttflist)
    if found is None:  # maybe installed after matplotlib wrote its font cache
        for path in font_manager.findSystemFonts():
            if CJK_FILE.search(Path(path).name):
                try:
                    font_manager.fontManager.addfont(path)
                except (OSError, RuntimeError, ValueError):  # an unreadable font file: skip it
                    continue
        found = find_cjk_font(font_manager.fontManager.ttflist)
    return found


def has_glyph(family: str, char: str) -> bool:
    """True if the file matplotlib uses for ``family`` draws ``char``."""
    from matplotlib import font_manager

    try:
        path = font_manager.findfont(font_manager.FontProperties(family=family), fallback_to_default=False)
    except ValueError:  # not installed
        return False
    return font_manager.get_font(path).get_char_index(ord(char)) != 0


def use_cjk_font(fonts: Iterable[Any] | None = None) -> str | None:
    """Make matplotlib draw Chinese: put the best CJK font (:func:`find_cjk_font`) first in
    ``font.sans-serif``, DejaVu Sans after it. Returns its family name; with none installed, prints
    :data:`NO_FONT_WARNING` (one line), changes nothing and returns None. Charts of the package then keep
    English labels. Call it again after installing a font (no restart needed)."""
    family = find_cjk_font(fonts)
    _choice["family"] = family
    if family is None:
        print(NO_FONT_WARNING, file=sys.stderr)
        return None
    import matplotlib

    rc = matplotlib.rcParams
    rest = [name for name in rc["font.sans-serif"] if name not in (family, "DejaVu Sans")]
    rc["font.sans-serif"] = [family, "DejaVu Sans", *rest]  # DejaVu Sans: Latin, Greek and math the font lacks
    rc["font.family"] = ["sans-serif"]
    rc["axes.unicode_minus"] = has_glyph(family, "\u2212")  # False: "-" instead of a "−" the font cannot draw
    return family


def chinese_font() -> str | None:
    """The CJK font the charts use: chosen (and set in matplotlib) by :func:`use_cjk_font` the first time
    it is asked, then remembered; None when none is installed (the warning is printed that once)."""
    if "family" not in _choice:
        use_cjk_font()
    return _choice["family"]


def forget_font() -> None:
    """Forget the choice: the next Chinese chart looks for a font again (matplotlib's settings stay)."""
    _choice.clear()

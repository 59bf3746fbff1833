"""The course's offline HTML edition: build tooling, not imported by the notebooks or by :mod:`transformer_course.viz`
(notebook 10's charts, every notebook's text; ``make html``).

- :mod:`.export` — one executed notebook → one offline HTML page (Vega bundle inlined, MathML formulas);
- :mod:`.build` — execute the notebooks, export each, write the contents page, in English (``notebooks/`` →
  ``html/``) and Chinese (the 中文版, ``notebooks/zh/`` → ``html/zh/``), each page linked to the other
  language's; the command line (``python -m course_tools.edition --help``);
- :mod:`.browser` — open a page in headless Chromium with no network and report what drew and what failed;
- :mod:`.slides` — one executed notebook → one offline reveal.js deck along its cells' slide metadata
  (``--slides``), and its check in headless Chromium.

The arrow goes one way: the edition imports :mod:`transformer_course.viz.offline` (the Vega bundle and the
``vegaEmbed`` calls), never the reverse.
"""

from __future__ import annotations

from .browser import CHROMIUM_FLAGS, browser_check, find_chromium, page_problems
from .build import (
    LANGUAGES,
    Edition,
    build_contents_page,
    build_edition,
    build_editions,
    execute,
    main,
    page_title,
    select_notebooks,
)
from .export import math_to_mathml, notebook_to_html, offline_outputs, with_language
from .slides import count_slides, deck_check, deck_problems, notebook_to_slides, slide_screenshot

__all__ = [
    "CHROMIUM_FLAGS",
    "LANGUAGES",
    "Edition",
    "browser_check",
    "build_contents_page",
    "build_edition",
    "build_editions",
    "count_slides",
    "deck_check",
    "deck_problems",
    "execute",
    "find_chromium",
    "main",
    "math_to_mathml",
    "notebook_to_html",
    "notebook_to_slides",
    "offline_outputs",
    "page_problems",
    "page_title",
    "select_notebooks",
    "slide_screenshot",
    "with_language",
]

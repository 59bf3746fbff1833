"""The edition's own pages, per language: the contents page of each edition, and the links between
the English edition (``html/``) and the 中文版 (``html/zh/``): from contents page to contents page, and from each
notebook's page (or deck) to the same notebook in the other language.

:mod:`.build` writes the pages and calls these; the words of the edition's own pages are :data:`WORDS`.
"""

from __future__ import annotations

import html
import os
import re
from pathlib import Path

from transformer_course.files import atomic_write_text
from transformer_course.viz.offline import PAGE_CSS

from .export import HTML_LANG

__all__ = ["LANGUAGES", "WORDS", "ZH_FOLDER", "build_contents_page", "language_nav", "other_language", "page_title"]

LANGUAGES = ("en", "zh")
ZH_FOLDER = "zh"  # notebooks/zh/ → html/zh/
# The words of the edition's own pages, per language: contents page, links to the other language.
WORDS = {
    "en": {
        "course": "Transformer course",
        "slides": ": slides",
        "fast": " (fast mode: small loops)",
        "intro": "The notebooks of the course, executed, in order. Every page works offline; charts are interactive.",
        "contents": "Contents",
        "name": "English",
    },
    "zh": {
        "course": "Transformer 课程（中文版）",
        "slides": "：幻灯片",
        "fast": "（快速模式：小尺寸、少步数）",
        "intro": "本课程的全部笔记本，已执行，按顺序排列。每一页都可离线打开，图表可以交互。",
        "contents": "目录",
        "name": "中文版",
    },
}


def other_language(language: str) -> str:
    """The edition's other language: "zh" for "en", "en" for "zh"."""
    if language not in LANGUAGES:
        raise ValueError(f"language must be one of {', '.join(LANGUAGES)}, got {language!r}")
    return "zh" if language == "en" else "en"


def language_nav(page: Path, language: str, counterpart: Path | None, deck: bool = False) -> str:
    """The links at the top of a page: the contents page, and ``counterpart`` (the same notebook in the other
    language) when there is one; a deck's links sit in its top right corner, above the slides."""
    if counterpart is None:
        return ""
    other = other_language(language)
    href = html.escape(os.path.relpath(counterpart, page.parent))
    style = "position:fixed;top:6px;right:12px;z-index:50;font:14px sans-serif" if deck else "margin:0.5rem 1rem"
    return (
        f'<nav class="tc-language" style="{style}"><a href="index.html">{WORDS[language]["contents"]}</a> · '
        f'<a href="{href}" hreflang="{HTML_LANG[other]}" lang="{HTML_LANG[other]}">{WORDS[other]["name"]}</a></nav>'
    )


def page_title(path: Path) -> str:
    """The first ``<h1>`` of an HTML page (nbconvert adds a "¶" anchor; it is dropped), else its file name."""
    text = path.read_text(encoding="utf-8", errors="replace")
    match = re.search(r"<h1[^>]*>(.*?)</h1>", text, flags=re.S)
    if not match:
        return path.stem
    title = re.sub(r"<[^>]+>", "", match.group(1)).replace("¶", "").strip()
    return html.unescape(title) or path.stem


def build_contents_page(
    folder: str | Path,
    out_path: str | Path | None = None,
    title: str = "Transformer course",
    language: str = "en",
    other: str | Path | None = None,
) -> Path:
    """An ``index.html`` linking every other page of ``folder`` in course order (file names 00_… to 11_…).

    ``language``: the contents page's language ("en" or "zh"); ``other``: the other language's contents
    page, linked at the top."""
    other_code = other_language(language)  # checks ``language`` before anything is read
    folder = Path(folder)
    pages = sorted(p for p in folder.glob("*.html") if p.name != "index.html")
    if not pages:
        raise FileNotFoundError(f"no .html pages in {folder}; export the notebooks first (notebook_to_html)")
    out_path = Path(out_path) if out_path is not None else folder / "index.html"
    items = "\n".join(
        f'<li><a href="{html.escape(os.path.relpath(p, out_path.parent))}">{html.escape(p.stem)}</a>: '
        f"{html.escape(page_title(p))}</li>"
        for p in pages
    )
    words = WORDS[language]
    lang = "" if language == "en" else f' lang="{HTML_LANG[language]}"'
    link = ""
    if other is not None:
        href = html.escape(os.path.relpath(other, out_path.parent))
        code = HTML_LANG[other_code]
        link = (
            f'<p class="tc-language"><a href="{href}" hreflang="{code}" lang="{code}">'
            f"{WORDS[other_code]['name']}</a></p>\n"
        )
    return atomic_write_text(
        out_path,
        f'<!DOCTYPE html>\n<html{lang}>\n<head>\n<meta charset="utf-8">\n'
        f"<title>{html.escape(title)}</title>\n<style>{PAGE_CSS}</style>\n</head>\n<body>\n{link}"
        f"<h1>{html.escape(title)}</h1>\n<p>{words['intro']}</p>\n<ul>\n{items}\n</ul>\n</body>\n</html>\n",
    )

"""The language of the course's messages (checkers, chart labels): English, or Simplified Chinese
for the 中文版 (notebooks/zh/).

A checker writes each message as an English template and passes it through :func:`t`:

    raise Hint(t("{what} has shape {got}, expected {expected}", what=what, got=shape, expected=want))

In English the template is filled in as it is. After ``set_language("zh")`` (the first code cell of every
notebook in ``notebooks/zh/`` calls it) :func:`t` looks the same template up in the Chinese catalogue and
fills in the Chinese one with the same values. The catalogues are data, one JSON object per exercise module
(``{english template: chinese template}``, in ``exercises/zh/<module>.json``), read by :func:`load_catalogue`
and registered with :func:`register`; a test checks that every template a checker uses has its Chinese entry
with the same ``{fields}``.

A text written once when a module is imported (a table of hints, a question and its explanations) uses
:func:`lazy_t` instead: it is put into the language of the moment each time it is shown, so a notebook may
import the checkers before or after ``set_language``.

A template missing from the catalogue falls back to English (never an error in front of a learner).
"""

from __future__ import annotations

import json
import os
import re
import string
import warnings
from pathlib import Path

__all__ = [
    "CATALOGUES",
    "LANGUAGES",
    "LazyText",
    "get_language",
    "lazy_t",
    "load_catalogue",
    "register",
    "set_language",
    "t",
    "template_fields",
]

LANGUAGES = ("en", "zh")
LANGUAGE_ENV = "TC_LANG"  # the default language, e.g. TC_LANG=zh
# exercises/<language>/<name>.json, found next to this file: the package as installed from a wheel, and the fresh
# copy a grading kernel loads from the package's files (course_tools.classroom.verdict), read their own files
CATALOGUE_FOLDER = Path(__file__).resolve().parent / "exercises"

CATALOGUES: dict[str, dict[str, str]] = {"zh": {}}


def _language_from_environment() -> str:
    """``TC_LANG``'s language; a value that is none of :data:`LANGUAGES` is said in one line, and English kept."""
    value = os.environ.get(LANGUAGE_ENV, "en").strip() or "en"
    if value not in LANGUAGES:
        warnings.warn(
            f"{LANGUAGE_ENV}={value!r} is not a language of the course ({', '.join(LANGUAGES)}): the messages stay "
            f"in English; set {LANGUAGE_ENV}=zh for 中文, or unset it",
            stacklevel=3,
        )
        return "en"
    return value


_language = _language_from_environment()


def set_language(language: str) -> None:
    """Choose the language of every checker message from now on: ``"en"`` or ``"zh"``."""
    global _language
    if language not in LANGUAGES:
        raise ValueError(
            f"unknown language {language!r}: use set_language('en') for English or set_language('zh') for 中文"
        )
    _language = language


def get_language() -> str:
    return _language


def register(language: str, catalogue: dict[str, str]) -> None:
    """Add ``{english template: translated template}`` entries for ``language``."""
    if language not in CATALOGUES:
        raise ValueError(f"no catalogue for {language!r}; languages with catalogues: {sorted(CATALOGUES)}")
    for english, translated in catalogue.items():
        if template_fields(english) != template_fields(translated):
            raise ValueError(
                f"the {language} template {translated!r} must use the same fields as {english!r}: "
                f"{sorted(template_fields(english))}"
            )
    CATALOGUES[language].update(catalogue)


def load_catalogue(name: str, language: str = "zh") -> dict[str, str]:
    """The catalogue ``exercises/<language>/<name>.json`` (``{english template: translated template}``, in its
    file's order): ``common`` for ``exercises/__init__.py``, ``learner`` for :mod:`transformer_course.learner` and
    :mod:`transformer_course.provenance`, else the exercise module's own name (``nb01_masks``, ``guard``, …)."""
    path = CATALOGUE_FOLDER / language / f"{name}.json"
    return json.loads(path.read_text(encoding="utf-8"))


def template_fields(template: str) -> set[str]:
    """The ``{names}`` a template fills in (format specs and conversions ignored)."""
    return {field for _, field, _, _ in string.Formatter().parse(template) if field is not None}


def t(template: str, /, **values) -> str:
    """The message in the current language: ``template`` (English) or its translation, filled in."""
    if _language != "en":
        template = CATALOGUES.get(_language, {}).get(template, template)
    if not values:
        return template
    missing = sorted({re.split(r"[.\[]", f)[0] for f in template_fields(template)} - values.keys())
    if missing:
        raise ValueError(f"the message {template!r} needs {', '.join(missing)}: pass them to t() or lazy_t()")
    return template.format(**values)


class LazyText:
    """A template and its values, translated by :func:`t` each time the text is shown: ``str(text)``, or as
    a ``{field}`` of an f-string or of another template. Made by :func:`lazy_t`."""

    __slots__ = ("template", "values")

    def __init__(self, template: str, values: dict) -> None:
        self.template, self.values = template, values

    def __str__(self) -> str:
        return t(self.template, **self.values)

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)

    def __repr__(self) -> str:
        return f"lazy_t({self.template!r})"


def lazy_t(template: str, /, **values) -> LazyText:
    """Like :func:`t`, for a text written when a module is imported (a hint in a table, a question's
    explanation): the language is chosen when the text is shown, not when it is written."""
    return LazyText(template, values)

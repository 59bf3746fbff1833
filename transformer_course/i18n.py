"""The language of the course's messages (checkers, chart labels): English, or Simplified Chinese
for the 中文版 (notebooks/zh/).

The checkers' messages are data, kept by a short id per module: ``exercises/en/<module>.json`` holds
``{id: english template}`` and ``exercises/zh/<module>.json`` ``{id: chinese template}`` with the same
``{fields}``. A checker module gets its own :func:`t` and :func:`lazy_t` from :func:`messages`:

    t, lazy_t = messages("nb02_attention")
    raise Hint(t("not_scaled", name=name, root=root))

In English the English template is filled in; after ``set_language("zh")`` (the first code cell of every
notebook in ``notebooks/zh/`` calls it) the Chinese one, with the same values. A test checks that every id a
checker uses has its entry in both languages with the same ``{fields}``, and that no entry is left unused.

The rest of the package (``tc.learner``, the shortcut guard, chart labels) and the publishing tools write the
English template itself and pass it through the module-level :func:`t`, which looks it up in a catalogue
``{english template: translated template}`` added with :func:`register`.

A text written once when a module is imported (a table of hints, a question and its explanations) uses
``lazy_t`` instead: it is put into the language of the moment each time it is shown, so a notebook may
import the checkers before or after ``set_language``.

A message missing from a translation falls back to English (never an error in front of a learner).
"""

from __future__ import annotations

import json
import os
import re
import string
import sys
import warnings
from collections.abc import Callable
from pathlib import Path

__all__ = [
    "CATALOGUES",
    "LANGUAGES",
    "LazyText",
    "get_language",
    "lazy_t",
    "load_catalogue",
    "messages",
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
    if language != "en" and "matplotlib" in sys.modules:
        # a chart the notebook draws itself (plt.title("…")) needs the CJK font too, not only the package's charts
        from .viz.fonts import chinese_font

        chinese_font()


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
    """The catalogue ``exercises/<language>/<name>.json``, in its file's order: ``{id: template}`` for a checker
    module (``common`` for ``exercises/__init__.py``, else the module's own name: ``nb01_masks``, ``seal``, …);
    ``{english template: translated template}`` for ``learner`` (:mod:`transformer_course.learner`) and ``guard``."""
    path = CATALOGUE_FOLDER / language / f"{name}.json"
    return json.loads(path.read_text(encoding="utf-8"))


def messages(name: str) -> tuple[Callable[..., str], Callable[..., LazyText]]:
    """The ``t`` and ``lazy_t`` of the checker module whose messages are ``exercises/<language>/<name>.json``,
    ``{id: template}``: ``t("not_scaled", name=...)`` is that id's template in the current language, filled in.
    Raises ValueError, when the module is imported, if a translation has an id English lacks or other fields."""
    texts = {language: _keyed_catalogue(name, language) for language in LANGUAGES}
    english = texts["en"]
    for language, catalogue in texts.items():
        for key, text in catalogue.items():
            if key not in english or template_fields(text) != template_fields(english[key]):
                raise ValueError(
                    f"exercises/{language}/{name}.json: {key!r} must be an id of exercises/en/{name}.json, with the "
                    f"same fields as its English template"
                )

    def template(key: str) -> str:
        if key not in english:
            raise KeyError(f"no message {key!r} in exercises/en/{name}.json: add it there, and its translations")
        return texts[_language].get(key, english[key])

    def keyed_t(key: str, /, **values) -> str:
        return _fill(template(key), values)

    def keyed_lazy_t(key: str, /, **values) -> LazyText:
        template(key)  # an unknown id fails when the module is imported, not when the text is shown
        return LazyText(key, values, keyed_t)

    return keyed_t, keyed_lazy_t


def _keyed_catalogue(name: str, language: str) -> dict[str, str]:
    """``{id: template}`` of ``name`` in ``language``: required in English, empty where a translation has no file."""
    path = CATALOGUE_FOLDER / language / f"{name}.json"
    return load_catalogue(name, language) if language == "en" or path.is_file() else {}


def template_fields(template: str) -> set[str]:
    """The ``{names}`` a template fills in (format specs and conversions ignored)."""
    return {field for _, field, _, _ in string.Formatter().parse(template) if field is not None}


def t(template: str, /, **values) -> str:
    """The message in the current language: ``template`` (English) or its translation, filled in."""
    if _language != "en":
        template = CATALOGUES.get(_language, {}).get(template, template)
    return _fill(template, values)


def _fill(template: str, values: dict) -> str:
    """``template`` filled in with ``values``; a field without its value is said in one line."""
    if not values:
        return template
    missing = sorted({re.split(r"[.\[]", f)[0] for f in template_fields(template)} - values.keys())
    if missing:
        raise ValueError(f"the message {template!r} needs {', '.join(missing)}: pass them to t() or lazy_t()")
    return template.format(**values)


class LazyText:
    """A template (or a message's id) and its values, put into the current language each time the text is shown:
    ``str(text)``, or as a ``{field}`` of an f-string or of another template. Made by a ``lazy_t``."""

    __slots__ = ("render", "template", "values")

    def __init__(self, template: str, values: dict, render: Callable[..., str] | None = None) -> None:
        self.template, self.values, self.render = template, values, render or t

    def __str__(self) -> str:
        return self.render(self.template, **self.values)

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)

    def __repr__(self) -> str:
        return f"lazy_t({self.template!r})"


def lazy_t(template: str, /, **values) -> LazyText:
    """Like :func:`t`, for a text written when a module is imported (a hint in a table, a question's
    explanation): the language is chosen when the text is shown, not when it is written."""
    return LazyText(template, values)

"""The Chinese (简体中文) catalogues of the checkers' messages, one module per exercise module.

Each module holds ``ZH = {english template: chinese template}``; the exercise module of the same name
registers it when it is imported (``common`` holds the messages of ``exercises/__init__.py``, ``learner`` the
lines of ``transformer_course.learner`` and ``provenance``, which registers it). The English
templates are the ones the checkers pass to ``t()`` and ``lazy_t()``; a Chinese template keeps the same
``{fields}``, code names, shapes, numbers and formulas, and uses the term choices of notebooks/zh's glossary
(掩码, 注意力权重, 词元, 层归一化, …). ``tests/test_i18n.py`` checks that every template has its entry.
"""

__all__ = []

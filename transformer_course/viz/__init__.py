"""Attention heatmaps and the course's charts (notebook 10; plots for notebooks 01, 05, 08; paper §3.2, Figures 3–5).

Notebooks import ``from transformer_course import viz`` and call ``viz.X``; each name a notebook calls is
re-exported here from the module that holds it (the helpers behind them stay there: ``viz.charts.to_matrix``):

- :mod:`.capture` — :func:`capture_attention` keeps every attention weight of one (source, target) pair,
  encoder self / decoder self / cross, per layer, ``(heads, q_len, k_len)`` with the tokens of both axes;
  :func:`translate_and_capture` translates a sentence with ``decode.translate``'s code and captures it.
- :mod:`.stats` — per-head numbers: :func:`attention_entropy`, :func:`diagonality`, :func:`argmax_alignment`,
  :func:`head_statistics`.
- :mod:`.charts` — :func:`heatmap`, :func:`attention_heatmap` (one head), :func:`attention_grid` (layer × head),
  :func:`plot_head_statistics`; Altair or matplotlib.
- :mod:`.explorer` — :func:`attention_explorer` (dropdowns for kind, layer, head; works offline) and
  :func:`sentence_explorer` (type a sentence → translation → explorer; needs a kernel).
- :mod:`.plots` — :func:`plot_mask` (01), :func:`plot_positional_encoding` (05), :func:`plot_lr_schedule` (08),
  :func:`save_chart` (PNG, SVG, PDF, JSON or an offline HTML page).
- :mod:`.offline` — the offline chart page (Vega bundle inlined); :mod:`.bertviz` — optional bertviz views.
- :mod:`.labels` — every chart's words through :func:`chart_text` (the loss plot's: :func:`loss_plot_labels`): English, or Chinese after
  ``set_language("zh")`` (the 中文版) when :mod:`.fonts` finds a CJK font (:func:`use_cjk_font`; none
  installed: one warning line, English labels).
- :func:`setup` (below) switches rendering on; notebooks call it once, at the top.

Charts use plain marks, parameters and filters only: JupyterLab 4's built-in Vega-Lite is 5.6, older than
the spec version Altair 5.5 writes, so newer features may not draw there. Altair and matplotlib are
imported inside the functions that use them: they come with the ``notebooks`` extra, not the core package.
Nothing here imports the HTML edition's build tooling (:mod:`course_tools.edition`); it imports this.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys

from .bertviz import bertviz_view, to_bertviz
from .capture import KIND_TITLES, KINDS, AttentionCapture, capture_attention, translate_and_capture
from .charts import attention_grid, attention_heatmap, heatmap, plot_head_statistics
from .explorer import attention_explorer, sentence_explorer
from .fonts import chinese_font, find_cjk_font, use_cjk_font
from .labels import chart_text, loss_plot_labels
from .offline import charts_to_html
from .plots import plot_lr_schedule, plot_mask, plot_positional_encoding, save_chart
from .stats import argmax_alignment, attention_entropy, diagonality, head_statistics

__all__ = [
    "KINDS",
    "KIND_TITLES",
    "AttentionCapture",
    "argmax_alignment",
    "attention_entropy",
    "attention_explorer",
    "attention_grid",
    "attention_heatmap",
    "bertviz_view",
    "capture_attention",
    "chart_text",
    "charts_to_html",
    "chinese_font",
    "diagonality",
    "find_cjk_font",
    "head_statistics",
    "heatmap",
    "loss_plot_labels",
    "plot_head_statistics",
    "plot_lr_schedule",
    "plot_mask",
    "plot_positional_encoding",
    "save_chart",
    "sentence_explorer",
    "setup",
    "to_bertviz",
    "translate_and_capture",
    "use_cjk_font",
]


def setup(max_rows: int = 100_000, dpi: int = 110) -> None:
    """Switch chart rendering on for a notebook (call once, at the top; it sets the notebook's own defaults).

    - Altair: the ``mimetype`` renderer, which emits ``application/vnd.vegalite.v5+json``; JupyterLab
      renders it with its own bundled Vega, so charts draw with no internet, and they stay in the saved
      notebook. The HTML edition (:mod:`course_tools.edition`) turns such notebooks into offline pages.
    - Altair data: DataFrames of up to ``max_rows`` rows are embedded (the default limit is 5,000).
    - matplotlib: a readable size and resolution, tight bounding boxes when saving.

    Altair is set up when it is first imported (now, if it already is): importing it costs about 2.5 s of
    CPU (its JSON-schema checks), which a notebook that draws no Altair chart does not pay.
    """
    import matplotlib

    def altair_defaults(alt) -> None:
        alt.renderers.enable("mimetype")
        alt.data_transformers.enable("default", max_rows=max_rows)

    _when_imported("altair", altair_defaults)
    matplotlib.rcParams.update(
        {
            "figure.dpi": dpi,
            "figure.figsize": (6.0, 4.0),
            "savefig.bbox": "tight",
            "image.cmap": "viridis",
            "axes.grid": False,
            "font.size": 10,
        }
    )


def _when_imported(name: str, action) -> None:
    """Call ``action(module)`` for the top-level module ``name``: now if it is imported, else right after the
    first ``import name`` runs it (a finder first in ``sys.meta_path`` that steps aside after that import)."""
    if name in sys.modules:
        action(sys.modules[name])
        return
    for finder in list(sys.meta_path):  # a second setup() replaces the first one's hook
        if isinstance(finder, _AfterImport) and finder.name == name:
            sys.meta_path.remove(finder)
    sys.meta_path.insert(0, _AfterImport(name, action))


class _AfterImport(importlib.abc.MetaPathFinder):
    def __init__(self, name: str, action) -> None:
        self.name, self.action = name, action

    def find_spec(self, fullname, path=None, target=None):
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)  # the other finders find the module; this hook runs once
        spec = importlib.util.find_spec(fullname)
        if spec is not None and spec.loader is not None:
            spec.loader = _ThenRun(spec.loader, self.action)
        return spec


class _ThenRun(importlib.abc.Loader):
    """The module's own loader, then ``action(module)``; everything else is the loader's."""

    def __init__(self, loader, action) -> None:
        self._loader, self._action = loader, action

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module) -> None:
        self._loader.exec_module(module)
        self._action(module)

    def __getattr__(self, attribute):  # get_resource_reader, is_package, …: the real loader's
        return getattr(self._loader, attribute)

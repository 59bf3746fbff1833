"""Attention heatmaps and the course's charts (notebook 10; plots for notebooks 01, 05, 08; paper §3.2, Figures 3–5).

Notebooks import ``from transformer_course import viz`` and call ``viz.X``; every name is re-exported here
from the module that holds it:

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
Nothing here imports the HTML edition's build tooling (:mod:`transformer_course.edition`); it imports this.
"""

from __future__ import annotations

from .bertviz import bertviz_view, to_bertviz
from .capture import KIND_TITLES, KINDS, AttentionCapture, capture_attention, check_kind, to_ids, translate_and_capture
from .charts import (
    BACKENDS,
    attention_grid,
    attention_grid_mpl,
    attention_heatmap,
    attention_rows,
    check_backend,
    check_tokens,
    heatmap,
    heatmap_mpl,
    label_expr,
    matrix_rows,
    plot_head_statistics,
    to_matrix,
)
from .explorer import attention_explorer, explorer_rows, sentence_explorer
from .fonts import chinese_font, find_cjk_font, use_cjk_font
from .labels import chart_text, loss_plot_labels
from .offline import charts_to_html, vegalite_version
from .plots import plot_lr_schedule, plot_mask, plot_positional_encoding, save_chart
from .stats import argmax_alignment, as_heads, attention_entropy, diagonal_positions, diagonality, head_statistics

__all__ = [
    "BACKENDS",
    "KINDS",
    "KIND_TITLES",
    "AttentionCapture",
    "argmax_alignment",
    "as_heads",
    "attention_entropy",
    "attention_explorer",
    "attention_grid",
    "attention_grid_mpl",
    "attention_heatmap",
    "attention_rows",
    "bertviz_view",
    "capture_attention",
    "chart_text",
    "charts_to_html",
    "check_backend",
    "check_kind",
    "check_tokens",
    "chinese_font",
    "diagonal_positions",
    "diagonality",
    "explorer_rows",
    "find_cjk_font",
    "head_statistics",
    "heatmap",
    "heatmap_mpl",
    "label_expr",
    "loss_plot_labels",
    "matrix_rows",
    "plot_head_statistics",
    "plot_lr_schedule",
    "plot_mask",
    "plot_positional_encoding",
    "save_chart",
    "sentence_explorer",
    "setup",
    "to_bertviz",
    "to_ids",
    "to_matrix",
    "translate_and_capture",
    "use_cjk_font",
    "vegalite_version",
]


def setup(max_rows: int = 100_000, dpi: int = 110) -> None:
    """Switch chart rendering on for a notebook (call once, at the top; it sets the notebook's own defaults).

    - Altair: the ``mimetype`` renderer, which emits ``application/vnd.vegalite.v5+json``; JupyterLab
      renders it with its own bundled Vega, so charts draw with no internet, and they stay in the saved
      notebook. The HTML edition (:mod:`transformer_course.edition`) turns such notebooks into offline pages.
    - Altair data: DataFrames of up to ``max_rows`` rows are embedded (the default limit is 5,000).
    - matplotlib: a readable size and resolution, tight bounding boxes when saving.
    """
    import altair as alt
    import matplotlib

    alt.renderers.enable("mimetype")
    alt.data_transformers.enable("default", max_rows=max_rows)
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

"""Heatmaps of attention: one head, a layer × head grid, per-head statistics (notebook 10; paper §3.2, Figures 3–5).

- :func:`heatmap` draws any (rows, columns) matrix with tokens on its axes; :func:`attention_heatmap` one head
  of an :class:`~transformer_course.viz.capture.AttentionCapture`; :func:`attention_grid` every layer × head
  of one kind; :func:`plot_head_statistics` a statistic of :func:`~transformer_course.viz.stats.head_statistics`.
- Each takes ``backend="altair"`` (interactive, tooltips; JupyterLab 4 draws it offline) or
  ``backend="matplotlib"`` (a static figure for papers and slides).
- Axes are positions (0, 1, …) labelled with tokens, so a repeated word keeps two columns.
- Titles, axis names, legends and tooltips are in the course's language (:func:`.labels.chart_text`: Chinese
  after ``set_language("zh")`` where a CJK font is installed).

Altair and matplotlib are imported inside the functions that use them: they come with the ``notebooks``
extra, not with the core package.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor

from .capture import KINDS, AttentionCapture, check_kind
from .labels import chart_text, chinese_labels, field_title, header_expr, kind_names_expr, kind_title
from .stats import head_statistics

__all__ = [
    "BACKENDS",
    "attention_grid",
    "attention_grid_mpl",
    "attention_heatmap",
    "attention_rows",
    "check_backend",
    "check_tokens",
    "heatmap",
    "heatmap_mpl",
    "label_expr",
    "matrix_rows",
    "plot_head_statistics",
    "to_matrix",
]

BACKENDS = ("altair", "matplotlib")


def check_backend(backend: str) -> None:
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {list(BACKENDS)}, got {backend!r}")


def to_matrix(matrix: Any, name: str = "matrix") -> Tensor:
    m = matrix if isinstance(matrix, Tensor) else torch.as_tensor(matrix)
    m = m.detach().cpu()
    if m.dim() != 2:
        raise ValueError(
            f"{name} must be 2-D (rows, columns), got shape {tuple(m.shape)}; pick one head, e.g. weights[0]"
        )
    return m


def check_tokens(
    matrix: Tensor, x_tokens: Sequence[str] | None, y_tokens: Sequence[str] | None
) -> tuple[list[str], list[str]]:
    """Default labels 0, 1, …; otherwise one token per column (x) and per row (y)."""
    rows, cols = matrix.shape
    x = [str(j) for j in range(cols)] if x_tokens is None else [str(t) for t in x_tokens]
    y = [str(i) for i in range(rows)] if y_tokens is None else [str(t) for t in y_tokens]
    if len(x) != cols or len(y) != rows:
        raise ValueError(
            f"the matrix is {rows} × {cols} (rows × columns) but got {len(y)} y_tokens (rows) and {len(x)} "
            f"x_tokens (columns); give one token per row and one per column"
        )
    return x, y


def label_expr(tokens: Sequence[str]) -> str:
    """A Vega expression that shows token j at axis position j (positions keep repeated words apart)."""
    return f"{json.dumps(list(tokens), ensure_ascii=False)}[datum.value]"


def matrix_rows(matrix: Tensor, x_tokens: list[str], y_tokens: list[str], value: str, digits: int = 4) -> list[dict]:
    """Long format: one dict per cell, {i (row), j (column), query (row token), key (column token), value}."""
    values = matrix.tolist()
    return [
        {
            "i": i,
            "j": j,
            "query": y_tokens[i],
            "key": x_tokens[j],
            value: v if isinstance(v, bool) else round(float(v), digits),
        }
        for i, row in enumerate(values)
        for j, v in enumerate(row)
    ]


def heatmap(
    matrix: Any,
    x_tokens: Sequence[str] | None = None,
    y_tokens: Sequence[str] | None = None,
    title: str = "",
    x_title: str = "key",
    y_title: str = "query",
    value: str = "weight",
    cell: int = 22,
    scheme: str = "blues",
    domain: tuple[float, float] | None = None,
    backend: str = "altair",
):
    """One (rows, columns) matrix as a heatmap: row i ↔ ``y_tokens[i]``, column j ↔ ``x_tokens[j]``.

    Altair: rectangles with tooltips (row token, column token, value); the data are one row per cell
    with fields ``i``, ``j``, ``query``, ``key`` and ``value`` (``"weight"`` by default).
    matplotlib: ``imshow`` with the tokens as tick labels and a colour bar.
    """
    check_backend(backend)
    m = to_matrix(matrix)  # (rows, cols)
    x_tokens, y_tokens = check_tokens(m, x_tokens, y_tokens)
    if backend == "matplotlib":
        return heatmap_mpl(m, x_tokens, y_tokens, title, x_title, y_title, value, domain)
    import altair as alt

    scale = alt.Scale(scheme=scheme) if domain is None else alt.Scale(scheme=scheme, domain=list(domain))
    x_title, y_title = chart_text(x_title), chart_text(y_title)
    return (
        alt.Chart(alt.Data(values=matrix_rows(m, x_tokens, y_tokens, value)), title=chart_text(title))
        .mark_rect()
        .encode(
            x=alt.X("j:O", title=x_title, axis=alt.Axis(labelExpr=label_expr(x_tokens), labelAngle=-45)),
            y=alt.Y("i:O", title=y_title, axis=alt.Axis(labelExpr=label_expr(y_tokens))),
            color=alt.Color(f"{value}:Q", scale=scale, title=chart_text(value)),
            tooltip=[
                alt.Tooltip("query:N", title=y_title),
                alt.Tooltip("key:N", title=x_title),
                alt.Tooltip(f"{value}:Q", format=".3f", **field_title(value)),
            ],
        )
        .properties(width=cell * len(x_tokens), height=cell * len(y_tokens))
    )


def heatmap_mpl(
    m: Tensor, x_tokens, y_tokens, title="", x_title="key", y_title="query", value="weight", domain=None, ax=None
):
    """The matplotlib version of :func:`heatmap`; draws on ``ax`` when given, returns the figure."""
    import matplotlib.pyplot as plt

    if ax is None:
        fig, ax = plt.subplots(figsize=(1.0 + 0.35 * len(x_tokens), 0.8 + 0.35 * len(y_tokens)))
    else:
        fig = ax.figure
    vmin, vmax = domain if domain is not None else (None, None)
    image = ax.imshow(m.float().numpy(), cmap="Blues", vmin=vmin, vmax=vmax, aspect="auto")
    ax.set_xticks(range(len(x_tokens)), x_tokens, rotation=45, ha="right")
    ax.set_yticks(range(len(y_tokens)), y_tokens)
    ax.set_xlabel(chart_text(x_title))
    ax.set_ylabel(chart_text(y_title))
    if title:
        ax.set_title(chart_text(title))
    fig.colorbar(image, ax=ax, label=chart_text(value))
    return fig


def attention_heatmap(
    capture: AttentionCapture, kind: str = "cross", layer: int = 0, head: int = 0, backend: str = "altair", **options
):
    """One head of one layer as a heatmap, with its tokens on both axes."""
    w = capture.weights(kind, layer, head)  # (q, k)
    queries, keys = capture.axis_tokens(kind)
    if "title" not in options:
        options["title"] = chart_text(
            "{kind}, layer {layer}, head {head}", kind=kind_title(kind), layer=layer, head=head
        )
    return heatmap(w, keys, queries, backend=backend, **options)


def attention_rows(capture: AttentionCapture, kind: str, digits: int = 4) -> list[dict]:
    """Long format of every layer and head of one kind: {layer, head, i, j, query, key, weight}."""
    queries, keys = capture.axis_tokens(kind)
    rows = []
    for layer, w in enumerate(getattr(capture, kind)):  # (h, q, k)
        for head in range(w.size(0)):
            for row in matrix_rows(w[head], keys, queries, "weight", digits):
                rows.append({"layer": layer, "head": head, **row})
    return rows


def attention_grid(capture: AttentionCapture, kind: str = "cross", cell: int = 12, backend: str = "altair"):
    """Every layer (rows) × every head (columns) of one kind of attention, each a small heatmap."""
    check_kind(kind)
    check_backend(backend)
    queries, keys = capture.axis_tokens(kind)
    if backend == "matplotlib":
        return attention_grid_mpl(capture, kind)
    import altair as alt

    base = (
        alt.Chart(alt.Data(values=attention_rows(capture, kind)))
        .mark_rect()
        .encode(
            x=alt.X("j:O", title=chart_text("key"), axis=alt.Axis(labelExpr=label_expr(keys), labelAngle=-45)),
            y=alt.Y("i:O", title=chart_text("query"), axis=alt.Axis(labelExpr=label_expr(queries))),
            color=alt.Color("weight:Q", scale=alt.Scale(scheme="blues", domain=[0, 1]), title=chart_text("weight")),
            tooltip=[
                alt.Tooltip(f"{field}:{kind_of}", **field_title(field))
                for field, kind_of in [("layer", "O"), ("head", "O"), ("query", "N"), ("key", "N")]
            ]
            + [alt.Tooltip("weight:Q", format=".3f", **field_title("weight"))],
        )
        .properties(width=cell * len(keys), height=cell * len(queries))
    )
    return base.facet(
        row=alt.Row("layer:O", header=alt.Header(labelExpr=header_expr("layer {n}"), title=None)),
        column=alt.Column("head:O", header=alt.Header(labelExpr=header_expr("head {n}"), title=None)),
        title=chart_text("{kind}: layer × head", kind=kind_title(kind)),
    )


def attention_grid_mpl(capture: AttentionCapture, kind: str):
    import matplotlib.pyplot as plt

    queries, keys = capture.axis_tokens(kind)
    layers, heads = capture.layers, capture.heads
    fig, axes = plt.subplots(layers, heads, figsize=(1.6 * heads + 1, 1.6 * layers + 0.5), squeeze=False)
    for layer in range(layers):
        for head in range(heads):
            ax = axes[layer][head]
            ax.imshow(capture.weights(kind, layer, head).numpy(), cmap="Blues", vmin=0, vmax=1)
            ax.set_xticks([])
            ax.set_yticks([])
            if layer == 0:
                ax.set_title(chart_text("head {n}", n=head), fontsize=9)
            if head == 0:
                ax.set_ylabel(chart_text("layer {n}", n=layer), fontsize=9)
    fig.suptitle(
        chart_text(
            "{kind}: layer × head ({queries} queries × {keys} keys)",
            kind=kind_title(kind),
            queries=len(queries),
            keys=len(keys),
        )
    )
    return fig


def plot_head_statistics(stats: list[dict] | AttentionCapture, stat: str = "entropy", backend: str = "altair"):
    """A layer × head heatmap of one statistic of :func:`head_statistics`, one panel per kind."""
    check_backend(backend)
    rows = head_statistics(stats) if isinstance(stats, AttentionCapture) else list(stats)
    if not rows or stat not in rows[0]:
        raise ValueError(f"stat must be one of 'entropy', 'diagonality', 'anti_diagonality', got {stat!r}")
    if backend == "matplotlib":
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(1, len(KINDS), figsize=(4 * len(KINDS), 3), squeeze=False, layout="constrained")
        layers, heads = 1 + max(r["layer"] for r in rows), 1 + max(r["head"] for r in rows)
        for ax, kind in zip(axes[0], KINDS):
            grid = torch.zeros(layers, heads)  # (layers, heads)
            for r in rows:
                if r["kind"] == kind:
                    grid[r["layer"], r["head"]] = r[stat]
            heatmap_mpl(
                grid,
                [str(h) for h in range(heads)],
                [str(l) for l in range(layers)],
                kind_title(kind),
                "head",
                "layer",
                stat,
                ax=ax,
            )
        return fig
    import altair as alt

    # Chinese: each panel headed by its kind's title (in English the panels keep the kind's name)
    header = {"header": alt.Header(labelExpr=kind_names_expr())} if chinese_labels() else {}
    return (
        alt.Chart(alt.Data(values=rows))
        .mark_rect()
        .encode(
            x=alt.X("head:O", **field_title("head")),
            y=alt.Y("layer:O", **field_title("layer")),
            color=alt.Color(f"{stat}:Q", scale=alt.Scale(scheme="viridis"), **field_title(stat)),
            tooltip=[
                alt.Tooltip(f"{field}:{kind_of}", **field_title(field))
                for field, kind_of in [("kind", "N"), ("layer", "O"), ("head", "O")]
            ]
            + [alt.Tooltip(f"{stat}:Q", format=".3f", **field_title(stat))],
        )
        .properties(width=22 * (1 + max(r["head"] for r in rows)), height=22 * (1 + max(r["layer"] for r in rows)))
        .facet(
            column=alt.Column("kind:N", sort=list(KINDS), title=None, **header),
            title=chart_text("head statistics: {stat}", stat=chart_text(stat)),
        )
    )

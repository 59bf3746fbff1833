"""The course's plots: masks (notebook 01), positional encodings (05), learning-rate schedules (08), and
:func:`save_chart` for slides (paper §3.2.3 masks, §3.5 positional encoding, §5.3 the schedule).

Each plot takes ``backend="altair"`` (interactive, tooltips) or ``backend="matplotlib"`` (a static figure).
:func:`save_chart` writes any chart to PNG, SVG, PDF (vl-convert, no browser needed), JSON or a
self-contained offline HTML page (:func:`~transformer_course.viz.offline.charts_to_html`). Titles, axis
names, legends and tooltips are in the course's language (:func:`.labels.chart_text`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from ..files import atomic_write_bytes, atomic_write_text
from ..layers import sinusoidal_table
from .charts import check_backend, check_tokens, label_expr, matrix_rows, to_matrix
from .labels import chart_text, field_title
from .offline import charts_to_html, vegalite_version

__all__ = ["plot_lr_schedule", "plot_mask", "plot_positional_encoding", "save_chart"]


def plot_mask(
    mask: Tensor,
    x_tokens: Sequence[str] | None = None,
    y_tokens: Sequence[str] | None = None,
    title: str = "mask (True = may attend)",
    cell: int = 22,
    backend: str = "altair",
):
    """A boolean mask as a grid: dark = may attend (True), light = masked (notebook 01).

    ``mask``: (q, k), or any (1, …, 1, q, k), e.g. ``subsequent_mask(5)`` (1, 1, 5, 5) or one
    sentence's ``padding_mask`` (1, 1, 1, S), shown as one row that holds for every query.
    """
    check_backend(backend)
    m = torch.as_tensor(mask).detach().cpu()
    if m.dtype != torch.bool:
        raise ValueError(
            f"mask must be boolean (True = may attend), got dtype {m.dtype}; build it with a comparison or .bool()"
        )
    if m.dim() == 1:
        m = m[None]  # (1, k)
    lead = m.shape[:-2]
    if any(s != 1 for s in lead):
        raise ValueError(
            f"plot_mask shows one (q, k) grid, got shape {tuple(m.shape)}; pick one sentence and head, e.g. mask[0, 0]"
        )
    m = m.reshape(m.shape[-2:])  # (q, k)
    x_tokens, y_tokens = check_tokens(m, x_tokens, y_tokens)
    title = chart_text(title)
    if backend == "matplotlib":
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(1.0 + 0.35 * len(x_tokens), 0.8 + 0.35 * len(y_tokens)))
        ax.imshow(m.numpy(), cmap="Blues", vmin=-0.3, vmax=1.0)
        ax.set_xticks(range(len(x_tokens)), x_tokens, rotation=45, ha="right")
        ax.set_yticks(range(len(y_tokens)), y_tokens)
        ax.set_xlabel(chart_text("key"))
        ax.set_ylabel(chart_text("query"))
        ax.set_title(title)
        return fig
    import altair as alt

    return (
        alt.Chart(alt.Data(values=matrix_rows(m, x_tokens, y_tokens, "may_attend")), title=title)
        .mark_rect(stroke="white", strokeWidth=1)
        .encode(
            x=alt.X("j:O", title=chart_text("key"), axis=alt.Axis(labelExpr=label_expr(x_tokens), labelAngle=-45)),
            y=alt.Y("i:O", title=chart_text("query"), axis=alt.Axis(labelExpr=label_expr(y_tokens))),
            color=alt.Color(
                "may_attend:N",
                scale=alt.Scale(domain=[True, False], range=["#2b6cb0", "#e2e8f0"]),
                title=chart_text("may attend"),
            ),
            tooltip=[
                alt.Tooltip("query:N", **field_title("query")),
                alt.Tooltip("key:N", **field_title("key")),
                alt.Tooltip("may_attend:N", **field_title("may attend")),
            ],
        )
        .properties(width=cell * len(x_tokens), height=cell * len(y_tokens))
    )


def plot_positional_encoding(
    max_len: int = 100,
    d_model: int = 64,
    dims: Sequence[int] | None = None,
    table: Tensor | None = None,
    backend: str = "altair",
):
    """The sinusoidal table PE (max_len, d_model) of §3.5 (notebook 05).

    ``dims=None``: a position × dimension heatmap; ``dims=[4, 5, 6, 7]``: those dimensions as curves over
    the positions. ``table``: your own (positions, d_model) tensor instead of the package's.
    """
    check_backend(backend)
    pe = (sinusoidal_table(max_len, d_model) if table is None else to_matrix(table, "table")).float()  # (L, d_model)
    positions, d = pe.shape
    if dims is not None:
        bad = [k for k in dims if not 0 <= k < d]
        if bad:
            raise ValueError(f"dims {bad} are outside the table's {d} dimensions (0 … {d - 1})")
    title = chart_text("sinusoidal positional encoding (d_model={d})", d=d)
    if backend == "matplotlib":
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(7, 3.5))
        if dims is None:
            image = ax.imshow(pe.T.numpy(), cmap="RdBu", vmin=-1, vmax=1, aspect="auto")
            ax.set_xlabel(chart_text("position"))
            ax.set_ylabel(chart_text("dimension"))
            fig.colorbar(image, ax=ax, label="PE")
        else:
            for k in dims:
                ax.plot(range(positions), pe[:, k].numpy(), label=chart_text("dim {k}", k=k))
            ax.set_xlabel(chart_text("position"))
            ax.set_ylabel("PE")
            ax.legend()
        ax.set_title(title)
        return fig
    import altair as alt

    if dims is None:
        rows = [
            {"position": p, "dimension": k, "value": round(v, 3)}
            for p, row in enumerate(pe.tolist())
            for k, v in enumerate(row)
        ]
        return (
            alt.Chart(alt.Data(values=rows), title=title)
            .mark_rect()
            .encode(
                x=alt.X(
                    "position:O",
                    axis=alt.Axis(labelExpr="datum.value % 10 == 0 ? datum.value : ''"),
                    **field_title("position"),
                ),
                y=alt.Y(
                    "dimension:O",
                    axis=alt.Axis(labelExpr="datum.value % 8 == 0 ? datum.value : ''"),
                    **field_title("dimension"),
                ),
                color=alt.Color("value:Q", scale=alt.Scale(scheme="redblue", domain=[-1, 1], reverse=True), title="PE"),
                tooltip=[
                    alt.Tooltip("position:O", **field_title("position")),
                    alt.Tooltip("dimension:O", **field_title("dimension")),
                    alt.Tooltip("value:Q", format=".3f", **field_title("value")),
                ],
            )
            .properties(width=min(700, 6 * positions), height=min(400, 5 * d))
        )
    names = [chart_text("dim {k}", k=k) for k in dims]
    rows = [
        {"position": p, "dimension": name, "value": round(float(pe[p, k]), 4)}
        for k, name in zip(dims, names)
        for p in range(positions)
    ]
    return (
        alt.Chart(alt.Data(values=rows), title=title)
        .mark_line()
        .encode(
            x=alt.X("position:Q", **field_title("position")),
            y=alt.Y("value:Q", title="PE"),
            color=alt.Color("dimension:N", sort=names, **field_title("dimension")),
            tooltip=[
                alt.Tooltip("dimension:N", **field_title("dimension")),
                alt.Tooltip("position:Q", **field_title("position")),
                alt.Tooltip("value:Q", format=".3f", **field_title("value")),
            ],
        )
        .properties(width=560, height=240)
    )


def plot_lr_schedule(
    schedules: Mapping[str, Sequence[float] | Callable[[int], float]] | Sequence[float] | Callable[[int], float],
    steps: Sequence[int] | None = None,
    title: str = "learning rate",
    max_points: int = 400,
    backend: str = "altair",
):
    """Learning rate against training step, one line per schedule (notebook 08; the Noam schedule of §5.3).

    ``schedules``: a dict {label: values or a function step → lr}, or one of these. Values are taken
    at ``steps`` (default 1, 2, …, len(values)); long schedules are thinned to ``max_points`` per line.
    """
    check_backend(backend)
    if not isinstance(schedules, Mapping):
        schedules = {"lr": schedules}
    if not schedules:
        raise ValueError("schedules is empty; give {label: values or a function step → lr}")
    lines: dict[str, tuple[list[int], list[float]]] = {}
    for label, values in schedules.items():
        if callable(values):
            if steps is None:
                raise ValueError(f"schedule {label!r} is a function, so give steps too, e.g. steps=range(1, 20001)")
            xs = list(steps)
            ys = [float(values(s)) for s in xs]
        else:
            ys = [float(v) for v in values]
            xs = list(steps) if steps is not None else list(range(1, len(ys) + 1))
            if len(xs) != len(ys):
                raise ValueError(
                    f"schedule {label!r} has {len(ys)} values but steps has {len(xs)}; give one value per step"
                )
        stride = max(1, math.ceil(len(xs) / max_points))
        keep = sorted(
            set(range(0, len(xs), stride)) | {max(range(len(ys)), key=ys.__getitem__), len(xs) - 1}
        )  # keep the peak
        lines[str(label)] = ([xs[i] for i in keep], [ys[i] for i in keep])
    title, learning_rate = chart_text(title), chart_text("learning rate")
    if backend == "matplotlib":
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(7, 3.5))
        for label, (xs, ys) in lines.items():
            ax.plot(xs, ys, label=label)
        ax.set_xlabel(chart_text("step"))
        ax.set_ylabel(learning_rate)
        ax.set_title(title)
        ax.legend()
        return fig
    import altair as alt

    rows = [{"schedule": label, "step": x, "lr": y} for label, (xs, ys) in lines.items() for x, y in zip(xs, ys)]
    return (
        alt.Chart(alt.Data(values=rows), title=title)
        .mark_line()
        .encode(
            x=alt.X("step:Q", **field_title("step")),
            y=alt.Y("lr:Q", title=learning_rate, axis=alt.Axis(format=".1e")),
            color=alt.Color("schedule:N", sort=list(lines), **field_title("schedule")),
            tooltip=[
                alt.Tooltip("schedule:N", **field_title("schedule")),
                alt.Tooltip("step:Q", **field_title("step")),
                alt.Tooltip("lr:Q", format=".2e", **field_title("learning rate")),
            ],
        )
        .properties(width=560, height=260)
    )


def save_chart(chart: Any, path: str | Path, scale: float = 2.0) -> Path:
    """Write an Altair chart (or a matplotlib figure) to ``path``; the suffix picks the format.

    ``.png``, ``.svg``, ``.pdf`` (rendered by vl-convert, no browser needed) or ``.html`` (one
    self-contained page with Vega inlined: opens offline). ``.json`` writes the Vega-Lite spec.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    path.parent.mkdir(parents=True, exist_ok=True)
    if hasattr(chart, "savefig"):  # a matplotlib figure
        if suffix not in (".png", ".svg", ".pdf"):
            raise ValueError(f"a matplotlib figure saves to .png, .svg or .pdf, got {path.name!r}")
        chart.savefig(path)
        return path
    if not hasattr(chart, "to_dict"):
        raise ValueError(f"save_chart takes an Altair chart or a matplotlib figure, got {type(chart).__name__}")
    import vl_convert as vlc

    spec = chart.to_dict()
    version = vegalite_version()
    if suffix == ".png":
        atomic_write_bytes(path, vlc.vegalite_to_png(spec, vl_version=version, scale=scale))
    elif suffix == ".svg":
        atomic_write_text(path, vlc.vegalite_to_svg(spec, vl_version=version))
    elif suffix == ".pdf":
        atomic_write_bytes(path, vlc.vegalite_to_pdf(spec, vl_version=version, scale=scale))
    elif suffix == ".html":
        title = spec.get("title") if isinstance(spec.get("title"), str) else ""
        atomic_write_text(path, charts_to_html([spec], title=title))
    elif suffix == ".json":
        atomic_write_text(path, json.dumps(spec, indent=1, ensure_ascii=False))
    else:
        raise ValueError(f"save_chart writes .png, .svg, .pdf, .html or .json, got {path.name!r}")
    return path

"""Attention heatmaps and the course's charts (notebook 10; plots for notebooks 01, 05, 08; paper §3.2, Figures 3–5).

What is here:

- :func:`setup` switches rendering on, from one place: Altair's ``mimetype`` renderer (JupyterLab 4
  draws the Vega-Lite v5 output with no network, live and from saved notebooks), data limits, and
  matplotlib defaults. Notebooks call ``viz.setup()`` once, at the top.
- :func:`capture_attention` runs a model once on a (source, target) pair and keeps every attention
  weight: encoder self-attention, decoder self-attention and cross-attention, per layer, each
  ``(heads, q_len, k_len)``, with the tokens of both axes.
- Views of a capture: :func:`attention_heatmap` (one head), :func:`attention_grid` (layer × head),
  :func:`attention_explorer` (dropdowns for kind, layer and head; works offline), :func:`head_statistics`
  (entropy, diagonality), :func:`sentence_explorer` (type a German sentence → translation → heatmaps).
- Course plots: :func:`heatmap`, :func:`plot_mask`, :func:`plot_positional_encoding`,
  :func:`plot_lr_schedule`. Each takes ``backend="altair"`` (interactive, tooltips) or
  ``backend="matplotlib"`` (a static figure for papers and slides).
- :func:`save_chart` writes any chart to PNG, SVG, PDF or a self-contained offline HTML page.

Charts use plain marks, parameters and filters only: JupyterLab 4's built-in Vega-Lite is 5.6, older
than the spec version Altair 5.5 writes, so newer features may not draw there.

Altair and matplotlib are imported inside the functions that use them: they come with the
``notebooks`` extra, not with the core package.
"""

from __future__ import annotations

import json
import math
import numbers
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from .masks import padding_mask, target_mask

KINDS = ("encoder", "decoder", "cross")
KIND_TITLES = {
    "encoder": "encoder self-attention",
    "decoder": "decoder self-attention (masked)",
    "cross": "cross-attention (decoder → encoder)",
}
BACKENDS = ("altair", "matplotlib")


# ---------------------------------------------------------------------------------------------------------
# Set-up
# ---------------------------------------------------------------------------------------------------------


def setup(max_rows: int = 100_000, dpi: int = 110) -> None:
    """Switch chart rendering on for a notebook (call once, at the top).

    - Altair: the ``mimetype`` renderer, which emits ``application/vnd.vegalite.v5+json``; JupyterLab
      renders it with its own bundled Vega, so charts draw with no internet, and they stay in the saved
      notebook. ``transformer_course.export`` turns such notebooks into offline HTML.
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


def check_backend(backend: str) -> None:
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {list(BACKENDS)}, got {backend!r}")


# ---------------------------------------------------------------------------------------------------------
# Capture
# ---------------------------------------------------------------------------------------------------------


@dataclass
class AttentionCapture:
    """Every attention weight of one (source, target) pair.

    ``encoder[l]``: (heads, src_len, src_len); ``decoder[l]``: (heads, tgt_len, tgt_len);
    ``cross[l]``: (heads, tgt_len, src_len) — rows are queries, columns are keys, and each row sums to 1
    over the keys its mask allows (0 on the others). ``tgt_tokens`` are the decoder's *inputs*
    (``<s> y_1 … y_n``): row i of decoder and cross attention is the step that predicts y_{i+1}.
    """

    src_tokens: list[str]
    tgt_tokens: list[str]
    encoder: list[Tensor]
    decoder: list[Tensor]
    cross: list[Tensor]

    @property
    def layers(self) -> int:
        return len(self.encoder)

    @property
    def heads(self) -> int:
        return self.encoder[0].size(0)

    def axis_tokens(self, kind: str) -> tuple[list[str], list[str]]:
        """(query tokens, key tokens) of one kind: rows, then columns."""
        check_kind(kind)
        return {
            "encoder": (self.src_tokens, self.src_tokens),
            "decoder": (self.tgt_tokens, self.tgt_tokens),
            "cross": (self.tgt_tokens, self.src_tokens),
        }[kind]

    def weights(self, kind: str, layer: int, head: int | None = None) -> Tensor:
        """(heads, q, k) of one layer, or (q, k) of one head; ``head=None`` keeps all heads."""
        check_kind(kind)
        self.check_layer_head(layer, head)
        w = getattr(self, kind)[layer]  # (heads, q, k)
        return w if head is None else w[head]  # (q, k)

    def check_layer_head(self, layer: int | None, head: int | None = None) -> None:
        if layer is not None and not 0 <= layer < self.layers:
            raise IndexError(
                f"layer={layer} is out of range: this model has {self.layers} layers, 0 … {self.layers - 1}"
            )
        if head is not None and not 0 <= head < self.heads:
            raise IndexError(f"head={head} is out of range: this model has {self.heads} heads, 0 … {self.heads - 1}")


def check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {list(KINDS)} (encoder self, decoder self, cross), got {kind!r}")


def to_ids(tokens: Any, vocab: Any, lang: str, name: str) -> tuple[list[int], list[str]]:
    """A sentence (str), token strings, token ids (list or 1-D tensor) → (ids, labels for the axis)."""
    from . import data

    if isinstance(tokens, str):
        tokens = data.tokenize(tokens, lang)  # the sentence → words
    if isinstance(tokens, Tensor):
        if tokens.dim() != 1:
            raise ValueError(f"{name} must be one sentence, a 1-D tensor of ids, got shape {tuple(tokens.shape)}")
        tokens = tokens.tolist()
    tokens = list(tokens)
    if not tokens:
        raise ValueError(f"{name} is empty; give at least one token")
    if all(isinstance(t, str) for t in tokens):
        if vocab is None:
            raise ValueError(
                f"{name} holds token strings, so pass its vocabulary too ({name[:3]}_vocab=...) to turn them into ids"
            )
        return vocab.encode(tokens), tokens
    if all(isinstance(t, numbers.Integral) for t in tokens):
        tokens = [int(t) for t in tokens]  # also numpy integers
        labels = [vocab.itos[i] if vocab is not None and 0 <= i < len(vocab) else str(i) for i in tokens]
        return tokens, labels
    raise ValueError(
        f"{name} must be a sentence, a list of token strings or a list of token ids, not a mix: {tokens[:5]}"
    )


def capture_attention(
    model: nn.Module,
    src_tokens: Any,
    tgt_tokens: Any,
    src_vocab: Any = None,
    tgt_vocab: Any = None,
    add_bos: bool = True,
    src_lang: str = "de",
    tgt_lang: str = "en",
) -> AttentionCapture:
    """Run ``model`` once on one (source, target) pair and return all its attention weights (notebook 10).

    ``src_tokens`` / ``tgt_tokens``: a sentence (tokenized with ``data.tokenize``), token strings (give
    the vocabulary), or token ids (a list or 1-D tensor; with a vocabulary the axes show words).
    The target is what the decoder reads: ``<s>`` is put in front unless it is already there
    (``add_bos=False`` to leave it as given).

    The model runs in eval mode (no dropout) and without gradients. Each ``MultiHeadAttention`` takes
    its readable path and keeps its weights (``keep_weights``) only during this call; its flag, its
    weights and the model's train/eval mode are restored afterwards, so training and decoding keep the
    fast path.
    """
    from .data import BOS, PAD

    src_ids, src_labels = to_ids(src_tokens, src_vocab, src_lang, "src_tokens")
    tgt_ids, tgt_labels = to_ids(tgt_tokens, tgt_vocab, tgt_lang, "tgt_tokens")
    if add_bos and tgt_ids[0] != BOS:
        tgt_ids, tgt_labels = [BOS, *tgt_ids], ["<s>", *tgt_labels]
    device = next(model.parameters()).device
    src = torch.tensor([src_ids], device=device)  # (1, S)
    tgt = torch.tensor([tgt_ids], device=device)  # (1, T)

    modules = model.attention_modules()
    saved = [(m.keep_weights, m.weights) for m in modules]
    was_training = model.training
    try:
        for m in modules:
            m.keep_weights = True
        model.eval()
        with torch.no_grad():
            src_mask = padding_mask(src, PAD)  # (1, 1, 1, S)
            memory = model.encode(src, src_mask)  # (1, S, d_model)
            model.decode(memory, src_mask, tgt, target_mask(tgt, PAD))  # (1, T, d_model)
        encoder = [layer.self_attn.weights[0].float().cpu() for layer in model.encoder.layers]  # (h, S, S) each
        decoder = [layer.self_attn.weights[0].float().cpu() for layer in model.decoder.layers]  # (h, T, T) each
        cross = [layer.cross_attn.weights[0].float().cpu() for layer in model.decoder.layers]  # (h, T, S) each
    finally:
        for m, (keep, weights) in zip(modules, saved):
            m.keep_weights, m.weights = keep, weights
        model.train(was_training)
    return AttentionCapture(src_labels, tgt_labels, encoder, decoder, cross)


# ---------------------------------------------------------------------------------------------------------
# Head statistics
# ---------------------------------------------------------------------------------------------------------


def as_heads(weights: Tensor) -> Tensor:
    """(q, k) or (heads, q, k) → (heads, q, k)."""
    if weights.dim() == 2:
        return weights[None]  # (1, q, k)
    if weights.dim() != 3:
        raise ValueError(f"attention weights must be (q, k) or (heads, q, k), got shape {tuple(weights.shape)}")
    return weights


def attention_entropy(weights: Tensor) -> Tensor:
    """Mean over queries of −Σ_j w_ij log w_ij, in nats, per head: (heads,).

    0 = every query looks at one key; log(k) = uniform over k keys. Masked keys (weight 0) add 0.
    """
    w = as_heads(weights).float()  # (h, q, k)
    plogp = torch.where(w > 0, w * w.clamp_min(1e-30).log(), torch.zeros_like(w))  # 0 · log 0 = 0
    return -plogp.sum(-1).mean(-1)  # (h,)


def diagonal_positions(q_len: int, k_len: int, offset: int = 0, anti: bool = False) -> tuple[Tensor, Tensor]:
    """Query rows i and key columns j on the diagonal j = i + offset (anti: j = k_len − 1 − i − offset), inside the matrix."""
    i = torch.arange(q_len)  # (q,)
    j = (k_len - 1 - i - offset) if anti else (i + offset)  # (q,)
    keep = (j >= 0) & (j < k_len)
    return i[keep], j[keep]


def diagonality(weights: Tensor, offset: int = 0, anti: bool = False) -> Tensor:
    """Mean attention weight on the diagonal j = i + offset (or the anti-diagonal), per head: (heads,).

    1 = each query attends only to "its" position (a copy task's cross-attention); ≈ 1/k for uniform rows.
    """
    w = as_heads(weights)  # (h, q, k)
    i, j = diagonal_positions(w.size(1), w.size(2), offset, anti)
    return w[:, i, j].mean(-1)  # (h,)


def argmax_alignment(weights: Tensor, offset: int = 0, anti: bool = False) -> Tensor:
    """Fraction of queries whose largest weight is on the diagonal j = i + offset (or the anti-diagonal): (heads,)."""
    w = as_heads(weights)  # (h, q, k)
    i, j = diagonal_positions(w.size(1), w.size(2), offset, anti)
    return (w[:, i].argmax(-1) == j).float().mean(-1)  # (h,)


def head_statistics(capture: AttentionCapture) -> list[dict]:
    """One row per (kind, layer, head): ``entropy`` (nats), ``diagonality`` and ``anti_diagonality``."""
    rows = []
    for kind in KINDS:
        for layer, w in enumerate(getattr(capture, kind)):  # (h, q, k)
            entropy, diag, anti = attention_entropy(w), diagonality(w), diagonality(w, anti=True)
            for head in range(w.size(0)):
                rows.append(
                    {
                        "kind": kind,
                        "layer": layer,
                        "head": head,
                        "entropy": round(float(entropy[head]), 4),
                        "diagonality": round(float(diag[head]), 4),
                        "anti_diagonality": round(float(anti[head]), 4),
                    }
                )
    return rows


# ---------------------------------------------------------------------------------------------------------
# Heatmaps
# ---------------------------------------------------------------------------------------------------------


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
    return (
        alt.Chart(alt.Data(values=matrix_rows(m, x_tokens, y_tokens, value)), title=title)
        .mark_rect()
        .encode(
            x=alt.X("j:O", title=x_title, axis=alt.Axis(labelExpr=label_expr(x_tokens), labelAngle=-45)),
            y=alt.Y("i:O", title=y_title, axis=alt.Axis(labelExpr=label_expr(y_tokens))),
            color=alt.Color(f"{value}:Q", scale=scale, title=value),
            tooltip=[
                alt.Tooltip("query:N", title=y_title),
                alt.Tooltip("key:N", title=x_title),
                alt.Tooltip(f"{value}:Q", format=".3f"),
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
    ax.set_xlabel(x_title)
    ax.set_ylabel(y_title)
    if title:
        ax.set_title(title)
    fig.colorbar(image, ax=ax, label=value)
    return fig


def attention_heatmap(
    capture: AttentionCapture, kind: str = "cross", layer: int = 0, head: int = 0, backend: str = "altair", **options
):
    """One head of one layer as a heatmap, with its tokens on both axes."""
    w = capture.weights(kind, layer, head)  # (q, k)
    queries, keys = capture.axis_tokens(kind)
    title = options.pop("title", f"{KIND_TITLES[kind]}, layer {layer}, head {head}")
    return heatmap(w, keys, queries, title=title, backend=backend, **options)


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
            x=alt.X("j:O", title="key", axis=alt.Axis(labelExpr=label_expr(keys), labelAngle=-45)),
            y=alt.Y("i:O", title="query", axis=alt.Axis(labelExpr=label_expr(queries))),
            color=alt.Color("weight:Q", scale=alt.Scale(scheme="blues", domain=[0, 1]), title="weight"),
            tooltip=["layer:O", "head:O", "query:N", "key:N", alt.Tooltip("weight:Q", format=".3f")],
        )
        .properties(width=cell * len(keys), height=cell * len(queries))
    )
    return base.facet(
        row=alt.Row("layer:O", header=alt.Header(labelExpr="'layer ' + datum.value", title=None)),
        column=alt.Column("head:O", header=alt.Header(labelExpr="'head ' + datum.value", title=None)),
        title=f"{KIND_TITLES[kind]}: layer × head",
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
                ax.set_title(f"head {head}", fontsize=9)
            if head == 0:
                ax.set_ylabel(f"layer {layer}", fontsize=9)
    fig.suptitle(f"{KIND_TITLES[kind]}: layer × head ({len(queries)} queries × {len(keys)} keys)")
    return fig


def explorer_rows(capture: AttentionCapture, digits: int = 3) -> list[dict]:
    """Compact data for :func:`attention_explorer`: one row per (kind, layer, head, query) holding the
    key positions ``j`` and the weights of that query as lists; head −1 is the mean over heads."""
    rows = []
    for kind in KINDS:
        for layer, w in enumerate(getattr(capture, kind)):  # (h, q, k)
            mean = w.mean(0, keepdim=True)  # (1, q, k)
            for head, matrix in zip([-1, *range(w.size(0))], torch.cat([mean, w])):  # (q, k) each
                for i, row in enumerate(matrix.tolist()):
                    rows.append(
                        {
                            "kind": kind,
                            "layer": layer,
                            "head": head,
                            "i": i,
                            "j": list(range(len(row))),
                            "weight": [round(v, digits) for v in row],
                        }
                    )
    return rows


def attention_explorer(capture: AttentionCapture, cell: int = 24, kind: str = "cross", layer: int = 0, head: int = 0):
    """An interactive heatmap with dropdowns for kind (encoder / decoder / cross), layer and head
    (``head=-1``: the mean of the heads), and tooltips; it needs no server and no network, so it also works in
    saved notebooks and exported HTML (notebook 10).

    The data are :func:`explorer_rows`; the chart filters them to the chosen heatmap, ``flatten``s the
    weight lists into cells and looks the tokens up by position.
    """
    import altair as alt

    check_kind(kind)
    capture.check_layer_head(layer, None if head == -1 else head)  # head=-1: the mean of the heads
    src, tgt = json.dumps(capture.src_tokens, ensure_ascii=False), json.dumps(capture.tgt_tokens, ensure_ascii=False)
    kind_param = alt.param(
        name="kind",
        value=kind,
        bind=alt.binding_select(options=list(KINDS), labels=[KIND_TITLES[k] for k in KINDS], name="attention "),
    )
    layer_param = alt.param(
        name="layer", value=layer, bind=alt.binding_select(options=list(range(capture.layers)), name="layer ")
    )
    head_param = alt.param(
        name="head",
        value=head,
        bind=alt.binding_select(
            options=[-1, *range(capture.heads)], labels=["mean", *map(str, range(capture.heads))], name="head "
        ),
    )
    # Rows are queries (source tokens for the encoder, target tokens otherwise); columns are keys
    # (target tokens for the decoder, source tokens otherwise).
    query_tokens = f"(kind == 'encoder' ? {src} : {tgt})"
    key_tokens = f"(kind == 'decoder' ? {tgt} : {src})"
    n_queries, n_keys = max(len(capture.src_tokens), len(capture.tgt_tokens)), len(capture.src_tokens)
    return (
        alt.Chart(alt.Data(values=explorer_rows(capture)), title="attention explorer")
        .mark_rect()
        .encode(
            x=alt.X("j:O", title="key", axis=alt.Axis(labelExpr=f"{key_tokens}[datum.value]", labelAngle=-45)),
            y=alt.Y("i:O", title="query", axis=alt.Axis(labelExpr=f"{query_tokens}[datum.value]")),
            color=alt.Color("weight:Q", scale=alt.Scale(scheme="blues", domain=[0, 1]), title="weight"),
            tooltip=[alt.Tooltip("query:N"), alt.Tooltip("key:N"), alt.Tooltip("weight:Q", format=".3f")],
        )
        .transform_filter("datum.kind == kind && datum.layer == layer && datum.head == head")
        .transform_flatten(["j", "weight"])
        .transform_calculate(
            query=f"(datum.kind == 'encoder' ? {src} : {tgt})[datum.i]",
            key=f"(datum.kind == 'decoder' ? {tgt} : {src})[datum.j]",
        )
        .add_params(kind_param, layer_param, head_param)
        .properties(
            width=cell * max(n_keys, len(capture.tgt_tokens)),
            height=cell * n_queries,
        )
    )


def plot_head_statistics(stats: list[dict] | AttentionCapture, stat: str = "entropy", backend: str = "altair"):
    """A layer × head heatmap of one statistic of :func:`head_statistics`, one panel per kind."""
    check_backend(backend)
    rows = head_statistics(stats) if isinstance(stats, AttentionCapture) else list(stats)
    if not rows or stat not in rows[0]:
        raise ValueError(f"stat must be one of 'entropy', 'diagonality', 'anti_diagonality', got {stat!r}")
    if backend == "matplotlib":
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(1, len(KINDS), figsize=(4 * len(KINDS), 3), squeeze=False)
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
                KIND_TITLES[kind],
                "head",
                "layer",
                stat,
                ax=ax,
            )
        return fig
    import altair as alt

    return (
        alt.Chart(alt.Data(values=rows))
        .mark_rect()
        .encode(
            x=alt.X("head:O"),
            y=alt.Y("layer:O"),
            color=alt.Color(f"{stat}:Q", scale=alt.Scale(scheme="viridis")),
            tooltip=["kind:N", "layer:O", "head:O", alt.Tooltip(f"{stat}:Q", format=".3f")],
        )
        .properties(width=22 * (1 + max(r["head"] for r in rows)), height=22 * (1 + max(r["layer"] for r in rows)))
        .facet(
            column=alt.Column("kind:N", sort=list(KINDS), title=None),
            title=f"head statistics: {stat}",
        )
    )


# ---------------------------------------------------------------------------------------------------------
# "Type a German sentence" (notebook 10)
# ---------------------------------------------------------------------------------------------------------


def translate_and_capture(
    model_or_checkpoint: Any,
    sentence: str,
    src_vocab: Any = None,
    tgt_vocab: Any = None,
    beam_size: int = 1,
    max_len: int | None = None,
) -> tuple[str, AttentionCapture]:
    """Translate ``sentence`` with the model, then capture its attention on (sentence, its translation).

    ``model_or_checkpoint``: a model (give both vocabularies) or a checkpoint from
    ``train.load_checkpoint`` (its own vocabularies are used). Returns (translation text, capture).
    """
    from . import data, decode

    checkpoint = model_or_checkpoint if isinstance(getattr(model_or_checkpoint, "model", None), nn.Module) else None
    model = checkpoint.model if checkpoint is not None else model_or_checkpoint
    if checkpoint is not None:  # the checkpoint's vocabularies, unless others are given
        src_vocab = src_vocab if src_vocab is not None else checkpoint.src_vocab
        tgt_vocab = tgt_vocab if tgt_vocab is not None else checkpoint.tgt_vocab
    if src_vocab is None or tgt_vocab is None:
        raise ValueError("give src_vocab and tgt_vocab, or a checkpoint (train.load_checkpoint) that holds them")
    words = data.tokenize(sentence, "de")
    if not words:
        raise ValueError("the sentence is empty; type a few German words")
    device = next(model.parameters()).device
    src = torch.tensor([src_vocab.encode(words)], device=device)  # (1, S)
    src_mask = padding_mask(src, data.PAD)  # (1, 1, 1, S)
    max_len = max_len or min(model.config.max_len, 2 * src.size(1) + 10)
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            if beam_size == 1:
                out = decode.greedy_decode(model, src, src_mask, max_len, data.BOS, data.EOS)  # (1, ≤ max_len)
            else:
                out = decode.beam_search(model, src, src_mask, max_len, data.BOS, data.EOS, beam_size=beam_size)
    finally:
        model.train(was_training)
    ids = [i for i in out[0].tolist()[1:]]  # drop <s>
    ids = ids[: ids.index(data.EOS)] if data.EOS in ids else ids
    ids = [i for i in ids if i != data.PAD]
    words_out = tgt_vocab.decode(ids)
    capture = capture_attention(model, words, [data.BOS, *ids], src_vocab, tgt_vocab)
    return data.detokenize(words_out), capture


def sentence_explorer(
    model_or_checkpoint: Any,
    src_vocab: Any = None,
    tgt_vocab: Any = None,
    sentence: str = "Ein Mann fährt mit dem Fahrrad die Straße entlang.",
    beam_size: int = 1,
):
    """A text box for a German sentence; on Enter (or the button) it shows the translation and the
    attention explorer of the model on it (notebook 10). Needs a running kernel (ipywidgets)."""
    import ipywidgets as widgets
    from IPython.display import display

    text = widgets.Text(
        value=sentence, description="Deutsch:", continuous_update=False, layout=widgets.Layout(width="60%")
    )
    button = widgets.Button(description="translate")
    out = widgets.Output()

    def show(_=None):
        with out:
            out.clear_output()
            try:
                translation, capture = translate_and_capture(
                    model_or_checkpoint, text.value, src_vocab, tgt_vocab, beam_size
                )
            except ValueError as error:
                print(error)
                return
            print("English:", translation)
            display(attention_explorer(capture))

    button.on_click(show)
    text.observe(show, names="value")
    show()
    return widgets.VBox([widgets.HBox([text, button]), out])


# ---------------------------------------------------------------------------------------------------------
# Course plots: masks (01), positional encodings (05), learning-rate schedules (08)
# ---------------------------------------------------------------------------------------------------------


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
    if backend == "matplotlib":
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(1.0 + 0.35 * len(x_tokens), 0.8 + 0.35 * len(y_tokens)))
        ax.imshow(m.numpy(), cmap="Blues", vmin=-0.3, vmax=1.0)
        ax.set_xticks(range(len(x_tokens)), x_tokens, rotation=45, ha="right")
        ax.set_yticks(range(len(y_tokens)), y_tokens)
        ax.set_xlabel("key")
        ax.set_ylabel("query")
        ax.set_title(title)
        return fig
    import altair as alt

    return (
        alt.Chart(alt.Data(values=matrix_rows(m, x_tokens, y_tokens, "may_attend")), title=title)
        .mark_rect(stroke="white", strokeWidth=1)
        .encode(
            x=alt.X("j:O", title="key", axis=alt.Axis(labelExpr=label_expr(x_tokens), labelAngle=-45)),
            y=alt.Y("i:O", title="query", axis=alt.Axis(labelExpr=label_expr(y_tokens))),
            color=alt.Color(
                "may_attend:N", scale=alt.Scale(domain=[True, False], range=["#2b6cb0", "#e2e8f0"]), title="may attend"
            ),
            tooltip=["query:N", "key:N", "may_attend:N"],
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
    from .layers import sinusoidal_table

    check_backend(backend)
    pe = (sinusoidal_table(max_len, d_model) if table is None else to_matrix(table, "table")).float()  # (L, d_model)
    positions, d = pe.shape
    if dims is not None:
        bad = [k for k in dims if not 0 <= k < d]
        if bad:
            raise ValueError(f"dims {bad} are outside the table's {d} dimensions (0 … {d - 1})")
    if backend == "matplotlib":
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(7, 3.5))
        if dims is None:
            image = ax.imshow(pe.T.numpy(), cmap="RdBu", vmin=-1, vmax=1, aspect="auto")
            ax.set_xlabel("position")
            ax.set_ylabel("dimension")
            fig.colorbar(image, ax=ax, label="PE")
        else:
            for k in dims:
                ax.plot(range(positions), pe[:, k].numpy(), label=f"dim {k}")
            ax.set_xlabel("position")
            ax.set_ylabel("PE")
            ax.legend()
        ax.set_title(f"sinusoidal positional encoding (d_model={d})")
        return fig
    import altair as alt

    title = f"sinusoidal positional encoding (d_model={d})"
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
                x=alt.X("position:O", axis=alt.Axis(labelExpr="datum.value % 10 == 0 ? datum.value : ''")),
                y=alt.Y("dimension:O", axis=alt.Axis(labelExpr="datum.value % 8 == 0 ? datum.value : ''")),
                color=alt.Color("value:Q", scale=alt.Scale(scheme="redblue", domain=[-1, 1], reverse=True), title="PE"),
                tooltip=["position:O", "dimension:O", alt.Tooltip("value:Q", format=".3f")],
            )
            .properties(width=min(700, 6 * positions), height=min(400, 5 * d))
        )
    rows = [
        {"position": p, "dimension": f"dim {k}", "value": round(float(pe[p, k]), 4)}
        for k in dims
        for p in range(positions)
    ]
    return (
        alt.Chart(alt.Data(values=rows), title=title)
        .mark_line()
        .encode(
            x="position:Q",
            y=alt.Y("value:Q", title="PE"),
            color=alt.Color("dimension:N", sort=[f"dim {k}" for k in dims]),
            tooltip=["dimension:N", "position:Q", alt.Tooltip("value:Q", format=".3f")],
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
    if backend == "matplotlib":
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(7, 3.5))
        for label, (xs, ys) in lines.items():
            ax.plot(xs, ys, label=label)
        ax.set_xlabel("step")
        ax.set_ylabel("learning rate")
        ax.set_title(title)
        ax.legend()
        return fig
    import altair as alt

    rows = [{"schedule": label, "step": x, "lr": y} for label, (xs, ys) in lines.items() for x, y in zip(xs, ys)]
    return (
        alt.Chart(alt.Data(values=rows), title=title)
        .mark_line()
        .encode(
            x=alt.X("step:Q"),
            y=alt.Y("lr:Q", title="learning rate", axis=alt.Axis(format=".1e")),
            color=alt.Color("schedule:N", sort=list(lines)),
            tooltip=["schedule:N", "step:Q", alt.Tooltip("lr:Q", format=".2e")],
        )
        .properties(width=560, height=260)
    )


# ---------------------------------------------------------------------------------------------------------
# Saving charts (teachers' slides) and bertviz
# ---------------------------------------------------------------------------------------------------------


def vegalite_version() -> str:
    """The Vega-Lite version Altair writes, as vl-convert names it ("5.20")."""
    import altair as alt

    return ".".join(alt.SCHEMA_VERSION.lstrip("v").split(".")[:2])


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
        path.write_bytes(vlc.vegalite_to_png(spec, vl_version=version, scale=scale))
    elif suffix == ".svg":
        path.write_text(vlc.vegalite_to_svg(spec, vl_version=version), encoding="utf-8")
    elif suffix == ".pdf":
        path.write_bytes(vlc.vegalite_to_pdf(spec, vl_version=version, scale=scale))
    elif suffix == ".html":
        from .export import charts_to_html

        path.write_text(
            charts_to_html([spec], title=spec.get("title", "") if isinstance(spec.get("title"), str) else ""),
            encoding="utf-8",
        )
    elif suffix == ".json":
        path.write_text(json.dumps(spec, indent=1, ensure_ascii=False), encoding="utf-8")
    else:
        raise ValueError(f"save_chart writes .png, .svg, .pdf, .html or .json, got {path.name!r}")
    return path


def to_bertviz(capture: AttentionCapture) -> dict:
    """The keyword arguments of bertviz's ``head_view`` / ``model_view`` for an encoder-decoder model.

    bertviz takes, per layer, tensors of shape (batch=1, heads, q, k): ``encoder_attention``,
    ``decoder_attention``, ``cross_attention``, with ``encoder_tokens`` and ``decoder_tokens``.
    """
    return {
        "encoder_attention": tuple(w[None] for w in capture.encoder),  # (1, h, S, S) per layer
        "decoder_attention": tuple(w[None] for w in capture.decoder),  # (1, h, T, T) per layer
        "cross_attention": tuple(w[None] for w in capture.cross),  # (1, h, T, S) per layer
        "encoder_tokens": list(capture.src_tokens),
        "decoder_tokens": list(capture.tgt_tokens),
    }


def bertviz_view(capture: AttentionCapture, view: str = "head"):
    """bertviz's ``head_view`` or ``model_view`` of a capture (optional; ``pip install --no-deps bertviz``).

    bertviz's HTML loads require.js and d3 from a CDN, so it needs internet, unlike the Altair views here.
    """
    if view not in ("head", "model"):
        raise ValueError(f"view must be 'head' or 'model', got {view!r}")
    try:
        import bertviz
    except ImportError as error:
        raise ImportError(
            "bertviz is not installed; run `pip install --no-deps bertviz` (it needs internet to draw)"
        ) from error
    show = bertviz.head_view if view == "head" else bertviz.model_view
    return show(**to_bertviz(capture), html_action="return")

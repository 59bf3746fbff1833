"""The interactive attention explorer and the "type a sentence" box (notebook 10; paper §3.2, Figures 3–5).

- :func:`attention_explorer`: one heatmap with dropdowns for kind (encoder self / decoder self / cross),
  layer and head (or the mean of the heads), with tooltips. It is a plain Vega-Lite chart — parameters bound
  to ``<select>`` elements and a filter — so it needs no kernel and no network: it works live, in saved
  notebooks and in the exported HTML edition.
- :func:`sentence_explorer`: a text box (ipywidgets, needs a running kernel); each sentence typed is
  translated by the model (:func:`~transformer_course.viz.capture.translate_and_capture`) and shown in the
  explorer.

Dropdown names, their options, the title, axes and tooltips are in the course's language
(:func:`.labels.chart_text`): Chinese in the 中文版, also in its offline HTML pages.
"""

from __future__ import annotations

import json
from typing import Any

import torch

from ..checkpoint import resolve_model
from .capture import KINDS, AttentionCapture, check_kind, translate_and_capture
from .labels import chart_text, field_title, kind_title

__all__ = ["LANGUAGE_NAMES", "attention_explorer", "explorer_rows", "sentence_explorer"]

LANGUAGE_NAMES = {"de": "Deutsch", "en": "English", "fr": "Français", "cs": "Čeština"}  # Multi30k's languages


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
        bind=alt.binding_select(
            options=list(KINDS), labels=[kind_title(k) for k in KINDS], name=chart_text("attention") + " "
        ),
    )
    layer_param = alt.param(
        name="layer",
        value=layer,
        bind=alt.binding_select(options=list(range(capture.layers)), name=chart_text("layer") + " "),
    )
    head_param = alt.param(
        name="head",
        value=head,
        bind=alt.binding_select(
            options=[-1, *range(capture.heads)],
            labels=[chart_text("mean"), *map(str, range(capture.heads))],
            name=chart_text("head") + " ",
        ),
    )
    # Rows are queries (source tokens for the encoder, target tokens otherwise); columns are keys
    # (target tokens for the decoder, source tokens otherwise).
    query_tokens = f"(kind == 'encoder' ? {src} : {tgt})"
    key_tokens = f"(kind == 'decoder' ? {tgt} : {src})"
    n_queries, n_keys = max(len(capture.src_tokens), len(capture.tgt_tokens)), len(capture.src_tokens)
    return (
        alt.Chart(alt.Data(values=explorer_rows(capture)), title=chart_text("attention explorer"))
        .mark_rect()
        .encode(
            x=alt.X(
                "j:O", title=chart_text("key"), axis=alt.Axis(labelExpr=f"{key_tokens}[datum.value]", labelAngle=-45)
            ),
            y=alt.Y("i:O", title=chart_text("query"), axis=alt.Axis(labelExpr=f"{query_tokens}[datum.value]")),
            color=alt.Color("weight:Q", scale=alt.Scale(scheme="blues", domain=[0, 1]), title=chart_text("weight")),
            tooltip=[
                alt.Tooltip("query:N", **field_title("query")),
                alt.Tooltip("key:N", **field_title("key")),
                alt.Tooltip("weight:Q", format=".3f", **field_title("weight")),
            ],
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


def sentence_explorer(
    model_or_checkpoint: Any,
    src_vocab: Any = None,
    tgt_vocab: Any = None,
    sentence: str = "Ein Mann fährt mit dem Fahrrad die Straße entlang.",
    beam_size: int = 1,
    tokenizer: Any = None,
):
    """A text box for a sentence of the model's source language; on Enter (or the button) it shows the
    translation and the attention explorer of the model on it (notebook 10). Needs a running kernel (ipywidgets).

    ``model_or_checkpoint``: a checkpoint path, a Checkpoint (its vocabularies and languages are used), or a
    model with both vocabularies (German → English; a subword model also with its ``tokenizer``). It is loaded
    once, here, not at every sentence; a subword checkpoint's axes show its pieces (``Schnee ·mobil ·en``).
    """
    import ipywidgets as widgets
    from IPython.display import display

    resolved = resolve_model(model_or_checkpoint, src_vocab, tgt_vocab, tokenizer)
    model, src_vocab, tgt_vocab, src_lang, tgt_lang = resolved
    text = widgets.Text(
        value=sentence,
        description=f"{chart_text(LANGUAGE_NAMES.get(src_lang, src_lang))}:",
        continuous_update=False,
        layout=widgets.Layout(width="60%"),
    )
    button = widgets.Button(description=chart_text("translate"))
    out = widgets.Output()

    def show(_=None):
        with out:
            out.clear_output()
            try:
                translation, capture = translate_and_capture(
                    model, text.value, src_vocab, tgt_vocab, beam_size, src_lang=src_lang, tokenizer=resolved.tokenizer
                )
            except ValueError as error:
                print(error)
                return
            print(f"{chart_text(LANGUAGE_NAMES.get(tgt_lang, tgt_lang))}:", translation)
            display(attention_explorer(capture))

    button.on_click(show)
    text.observe(show, names="value")
    show()
    return widgets.VBox([widgets.HBox([text, button]), out])

"""The words on the charts, in the course's language: English, or Chinese for the 中文版.

Every title, axis label, legend, tooltip and dropdown name of the package's charts is written in English and
passed through :func:`chart_text`. In English it comes out as written. After ``set_language("zh")`` it is
looked up in :data:`ZH` (registered with :func:`transformer_course.i18n.register`), but only if a CJK font can
draw it (:func:`~transformer_course.viz.fonts.chinese_font`); without one the labels stay English, never boxes.
Terms follow the 中文版's glossary (notebooks/zh/GLOSSARY.md): 注意力, 自注意力, 交叉注意力, 查询 / 键 / 值,
掩码, 位置编码, 学习率, 热图, …

A few entries are titles that the notebooks pass to the charts (``plot_mask(…, title="sentence 0: …")``): the
code of a Chinese notebook is the English code, and its charts still speak Chinese.
"""

from __future__ import annotations

from ..i18n import get_language, register, t
from .capture import KIND_TITLES, KINDS
from .fonts import chinese_font

__all__ = [
    "NOTEBOOK_TITLES",
    "ZH",
    "chart_text",
    "chinese_labels",
    "field_title",
    "header_expr",
    "kind_names_expr",
    "kind_title",
    "loss_plot_labels",
]

ZH = {
    # kinds of attention (capture.KIND_TITLES)
    "encoder self-attention": "编码器自注意力",
    "decoder self-attention (masked)": "解码器自注意力（带掩码）",
    "cross-attention (decoder → encoder)": "交叉注意力（解码器 → 编码器）",
    "encoder": "编码器",  # the short names of the kinds (panel headers)
    "decoder": "解码器",
    "cross": "交叉",
    # heatmaps (charts.py)
    "query": "查询",
    "key": "键",
    "value": "值",
    "weight": "权重",
    "layer": "层",
    "head": "头",
    "kind": "注意力类型",
    "layer {n}": "第 {n} 层",
    "head {n}": "头 {n}",
    "{kind}, layer {layer}, head {head}": "{kind}，第 {layer} 层，头 {head}",
    "{kind}: layer × head": "{kind}：层 × 头",
    "{kind}: layer × head ({queries} queries × {keys} keys)": "{kind}：层 × 头（{queries} 个查询 × {keys} 个键）",
    "head statistics: {stat}": "各注意力头的统计量：{stat}",
    "entropy": "熵",
    "diagonality": "对角度",
    "anti_diagonality": "反对角度",
    # masks, positional encoding, learning rate (plots.py)
    "mask (True = may attend)": "掩码（True = 允许关注）",
    "may attend": "允许关注",
    "position": "位置",
    "dimension": "维度",
    "dim {k}": "维度 {k}",
    "sinusoidal positional encoding (d_model={d})": "正弦位置编码（d_model={d}）",
    "step": "步数",
    "learning rate": "学习率",
    "schedule": "调度",
    # the loss curves of a run (loss_plot_labels, for train.history.history_figure; train never imports viz)
    "train (label-smoothed, per token)": "训练（标签平滑，每个词元）",
    "validation (label-smoothed, per token)": "验证（标签平滑，每个词元）",
    "optimizer step": "优化器步数",
    "loss": "损失",
    "{name}: {parameters:,} parameters": "{name}：{parameters:,} 个参数",
    # the explorer (explorer.py)
    "attention explorer": "注意力查看器",
    "attention": "注意力",
    "mean": "平均（mean）",
    "translate": "翻译",
    "Deutsch": "德语",
    "English": "英语",
    "Français": "法语",
    "Čeština": "捷克语",
}
# Titles the notebooks give the charts (01, 08, 10), word for word as in their code.
NOTEBOOK_TITLES = {
    "sentence 0: target mask (hover me)": "句子 0：目标掩码（鼠标悬停可看详情）",
    "tgt_mask of sentence 1 (rows: query, columns: key)": "句子 1 的 tgt_mask（行：查询，列：键）",
    "German (key)": "德语（键）",
    "English so far (query)": "已生成的英语（查询）",
}
ZH.update(NOTEBOOK_TITLES)
register("zh", ZH)


def chinese_labels() -> bool:
    """True when the charts speak Chinese: the language is Chinese and a CJK font is installed
    (:func:`~transformer_course.viz.fonts.chinese_font`, asked only in Chinese)."""
    return get_language() != "en" and chinese_font() is not None


def chart_text(template: str, /, **values) -> str:
    """``template`` (English) filled in with ``values``, or its Chinese form when :func:`chinese_labels`."""
    if chinese_labels():
        return t(template, **values)
    return template.format(**values) if values else template


def loss_plot_labels() -> dict:
    """The loss plot's words in the course's language, for ``train.history.history_figure(…, labels=…)``:
    its English templates through :func:`chart_text`, and the CJK font in Chinese (None in English)."""
    return {
        "train": chart_text("train (label-smoothed, per token)"),
        "validation": chart_text("validation (label-smoothed, per token)"),
        "x": chart_text("optimizer step"),
        "y": chart_text("loss"),
        "parameters": t("{name}: {parameters:,} parameters")
        if chinese_labels()
        else "{name}: {parameters:,} parameters",
        "font": chinese_font() if chinese_labels() else None,
    }


def field_title(text: str) -> dict:
    """Keyword arguments for an Altair encoding or tooltip whose English title is the field's own name:
    ``{"title": chart_text(text)}`` in Chinese, ``{}`` in English (Altair's default title, as always)."""
    return {"title": chart_text(text)} if chinese_labels() else {}


def kind_title(kind: str) -> str:
    """ "encoder self-attention", "decoder self-attention (masked)" or "cross-attention (decoder → encoder)"."""
    return chart_text(KIND_TITLES[kind])


def _vega_string(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def header_expr(template: str, field: str = "datum.value") -> str:
    """A Vega expression writing ``template`` (one ``{n}``) around a value: "layer {n}" → ``'layer ' +
    datum.value``; in Chinese "第 {n} 层" → ``'第 ' + datum.value + ' 层'``."""
    before, _, after = chart_text(template, n="\0").partition("\0")
    return _vega_string(before) + f" + {field}" + (f" + {_vega_string(after)}" if after else "")


def kind_names_expr(field: str = "datum.value") -> str:
    """A Vega expression writing a kind ("encoder", "decoder", "cross") in the chart language."""
    expr = field
    for kind in reversed(KINDS):
        expr = f"{field} == {_vega_string(kind)} ? {_vega_string(chart_text(kind))} : {expr}"
    return expr

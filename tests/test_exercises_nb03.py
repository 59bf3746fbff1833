"""Notebook 03's checkers pass every allowed form of a right answer and name each plausible mistake."""

import importlib
import math
import sys
from pathlib import Path

import nbformat
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

import transformer_course as tc
from transformer_course.exercises import nb03_multi_head_attention as ex

from helpers import solutions

sol = solutions("nb03_multi_head_attention")  # notebooks/solutions/nb03_multi_head_attention.py

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


def failed_with(result, *words):
    """The check failed and its message names the mistake."""
    return not result.passed and all(w.lower() in result.message.lower() for w in words)


@pytest.fixture
def learner_package(tmp_path, monkeypatch):
    """my_transformer/ as notebooks 02 and 03 write it (their %%writefile cells), importable from tmp_path."""
    folder = tmp_path / "my_transformer"
    folder.mkdir()
    (folder / "__init__.py").touch()
    for notebook in ("02_attention.ipynb", "03_multi_head_attention.ipynb"):
        for cell in nbformat.read(NOTEBOOKS / notebook, as_version=4).cells:
            first, _, body = cell.source.partition("\n")
            if cell.cell_type == "code" and first.startswith("%%writefile my_transformer/"):
                (tmp_path / first.split()[1]).write_text(body)
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [m for m in sys.modules if m == "my_transformer" or m.startswith("my_transformer.")]:
        monkeypatch.delitem(sys.modules, name)
    yield importlib.import_module("my_transformer.multi_head")
    for name in [m for m in sys.modules if m == "my_transformer" or m.startswith("my_transformer.")]:
        del sys.modules[name]


# ---- the learner's MultiHeadAttention (my_transformer/multi_head.py) -----------------------------------


class PackageAdapter(tc.MultiHeadAttention):
    """The package's module called the way the learner's is: forward(query, key, value, mask)."""

    def __init__(self, d_model, heads, dropout=0.0):
        super().__init__(d_model, heads, dropout)
        self.keep_weights = True

    def forward(self, query, key, value, mask=None):
        return super().forward(query, None if key is query else key, mask)


class Learner(nn.Module):
    """A learner's class with one switchable mistake."""

    mistake = None

    def __init__(self, d_model, heads, dropout=0.0):
        super().__init__()
        if d_model % heads and self.mistake != "no_check":
            raise ValueError("d_model must be divisible by heads")
        self.heads, self.d_k = heads, d_model // heads
        self.in_proj = nn.Linear(d_model, 3 * d_model)
        self.out_proj = nn.Linear(d_model, d_model)

    def forward(self, query, key, value, mask=None):
        d = self.heads * self.d_k
        w, b = self.in_proj.weight, self.in_proj.bias
        rows = [slice(d, 2 * d), slice(0, d), slice(2 * d, 3 * d)] if self.mistake == "kqv" else None
        rows = rows or [slice(0, d), slice(d, 2 * d), slice(2 * d, 3 * d)]
        if self.mistake == "kv_from_query":
            key = value = query
        q, k, v = (F.linear(t, w[r], b[r]) for t, r in zip((query, key, value), rows))
        if self.mistake == "direct_view":
            q, k, v = (t.reshape(t.size(0), self.heads, t.size(1), self.d_k) for t in (q, k, v))
        else:
            q, k, v = (t.reshape(t.size(0), t.size(1), self.heads, self.d_k).transpose(1, 2) for t in (q, k, v))
        scale = math.sqrt(d if self.mistake == "sqrt_d_model" else self.d_k)
        scores = q @ k.transpose(-2, -1) / scale
        if mask is not None and self.mistake != "no_mask":
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = scores.softmax(-1)
        if self.mistake != "no_weights":
            self.weights = weights
        x = weights @ v
        if self.mistake == "merge_no_transpose":
            x = x.reshape(x.size(0), x.size(2), d)
        else:
            x = x.transpose(1, 2).reshape(x.size(0), x.size(2), d)
        return self.out_proj(x)


def learner_with(mistake):
    return type(f"Learner_{mistake}", (Learner,), {"mistake": mistake})


def test_mha_checker_passes_the_notebooks_class(learner_package):
    assert ex.check_multi_head_attention(learner_package.MultiHeadAttention).passed


def test_mha_checker_passes_the_package_and_a_plain_implementation():
    assert ex.check_multi_head_attention(PackageAdapter).passed
    assert ex.check_multi_head_attention(learner_with(None)).passed


@pytest.mark.parametrize(
    ("mistake", "words"),
    [
        ("direct_view", ["mixes positions"]),
        ("merge_no_transpose", ["merged in the wrong order"]),
        ("kqv", ["wrong order", "W^Q, then W^K"]),
        ("kv_from_query", ["cross-attention", "computed from `query`"]),
        ("sqrt_d_model", ["√d_k"]),
        ("no_mask", ["mask is not passed on"]),
        ("no_weights", ["self.weights"]),
        ("no_check", ["not divisible"]),
    ],
)
def test_mha_checker_names_each_mistake(mistake, words):
    assert failed_with(ex.check_multi_head_attention(learner_with(mistake)), *words)


def test_mha_checker_names_wrong_parameter_names():
    class SeparateProjections(nn.Module):
        def __init__(self, d_model, heads, dropout=0.0):
            super().__init__()
            self.q_proj, self.k_proj = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)

    assert failed_with(ex.check_multi_head_attention(SeparateProjections), "missing", "in_proj.weight", "q_proj")


# ---- exercise 1: predicted shapes -----------------------------------------------------------------------


def test_predicted_shapes_checker_accepts_tuples_lists_and_sizes():
    assert ex.check_predicted_shapes(sol.predicted).passed
    as_lists = {name: list(shape) for name, shape in sol.predicted.items()}
    assert ex.check_predicted_shapes(as_lists).passed
    as_sizes = {name: torch.Size(shape) for name, shape in sol.predicted.items()}
    as_sizes["q"] = [np.int64(n) for n in sol.predicted["q"]]
    assert ex.check_predicted_shapes(as_sizes).passed


def test_predicted_shapes_match_what_the_package_measures():
    mha = tc.MultiHeadAttention(512, 8)
    mha.keep_weights = True
    tgt, memory = torch.randn(2, 4, 512), torch.randn(2, 6, 512)
    with torch.no_grad():
        output = mha(tgt, memory=memory)
    q = mha.split_heads(F.linear(tgt, mha.in_proj.weight[:512]))
    k = mha.split_heads(F.linear(memory, mha.in_proj.weight[512:1024]))
    measured = {"q": q, "k": k, "weights": mha.weights, "heads_out": mha.weights @ k, "output": output}
    assert {name: tuple(t.shape) for name, t in measured.items()} == sol.predicted


@pytest.mark.parametrize(
    ("name", "shape", "words"),
    [
        ("q", (2, 4, 8, 64), ["before the transpose"]),
        ("q", (2, 8, 4, 512), ["d_k = d_model / heads"]),
        ("k", (2, 8, 4, 64), ["S = 6"]),
        ("weights", (2, 8, 6, 4), ["rows are queries"]),
        ("weights", (2, 8, 4, 4), ["not square"]),
        ("weights", (2, 4, 6), ["each head"]),
        ("heads_out", (2, 8, 6, 64), ["one output per query"]),
        ("output", (2, 6, 512), ["target's T"]),
        ("output", (2, 4, 64), ["d_model = 512"]),
        ("output", (1, 2, 3), ["expected 3 dimensions"]),
    ],
)
def test_predicted_shapes_checker_names_each_mistake(name, shape, words):
    assert failed_with(ex.check_predicted_shapes({**sol.predicted, name: shape}), f"predicted['{name}']", *words)


def test_predicted_shapes_checker_asks_for_every_entry_and_a_dict():
    assert failed_with(ex.check_predicted_shapes({"q": (2, 8, 4, 64)}), "no entry", "weights")
    assert failed_with(ex.check_predicted_shapes([(2, 8, 4, 64)]), "dict")


def test_predicted_shapes_checker_calls_the_notebooks_blanks_not_done_yet():
    blanks = {name: ... for name in sol.predicted}  # the notebook's `predicted = {"q": ..., ...}`
    assert failed_with(ex.check_predicted_shapes(blanks), "not done yet", "'q'", "'output'")
    assert failed_with(ex.check_predicted_shapes({**sol.predicted, "weights": ...}), "not done yet", "'weights'")
    assert "'q'" not in ex.check_predicted_shapes({**sol.predicted, "weights": ...}).message


# ---- exercise 2: parameter count with free d_k, d_v -----------------------------------------------------


def built_count(d_model, heads, d_k, d_v):
    """Parameters of an independent build: one nn.Linear per projection, all heads stacked."""
    layers = (nn.Linear(d_model, heads * d_k), nn.Linear(d_model, heads * d_k), nn.Linear(d_model, heads * d_v),
              nn.Linear(heads * d_v, d_model))  # fmt: skip
    return sum(p.numel() for layer in layers for p in layer.parameters())


def test_parameter_count_solution_matches_a_build_the_package_and_table_3():
    for sizes in ((512, 8, 64, 64), (512, 8, 16, 64), (64, 4, 8, 24)):
        assert sol.attention_parameter_count(*sizes) == built_count(*sizes)
    package = sum(p.numel() for p in tc.MultiHeadAttention(512, 8).parameters())
    assert sol.attention_parameter_count(512, 8, 64, 64) == package
    # Table 3: base 65 M, row (B) d_k = 16: 58 M, d_k = 32: 60 M parameters; 18 attention blocks differ
    for d_k, table in ((16, 58e6), (32, 60e6)):
        saved = 18 * (sol.attention_parameter_count(512, 8, 64, 64) - sol.attention_parameter_count(512, 8, d_k, 64))
        assert abs((65e6 - saved) - table) < 0.5e6


@pytest.mark.parametrize("convert", [int, np.int64, torch.tensor, float], ids=["int", "numpy", "tensor", "float"])
def test_parameter_count_checker_accepts_every_number_type(convert):
    assert ex.check_attention_parameter_count(lambda *sizes: convert(sol.attention_parameter_count(*sizes))).passed


@pytest.mark.parametrize(
    ("wrong", "words"),
    [
        (lambda d, h, k, v: 4 * d * d + 4 * d, ["d_model × d_model for every projection"]),
        (lambda d, h, k, v: 2 * d * h * k + d * h * v + h * v * d, ["weights only"]),
        (lambda d, h, k, v: 2 * (d * h * k + h * k) + (d * h * v + h * v) + (h * k * d + d), ["sizes W^O by d_k"]),
        (lambda d, h, k, v: sol.attention_parameter_count(d, 1, k, v), ["counts one head"]),
        (lambda d, h, k, v: 7, ["four matrices"]),
    ],
)
def test_parameter_count_checker_names_each_mistake(wrong, words):
    assert failed_with(ex.check_attention_parameter_count(wrong), *words)


# ---- exercise 3: multiply-adds ---------------------------------------------------------------------------


@pytest.mark.parametrize("sizes", [(2, 3, 5, 16, 4), (1, 7, 2, 12, 3)])
def test_multiply_adds_solution_equals_pytorchs_flop_counter(sizes):
    batch, q_len, k_len, d_model, heads = sizes
    mha = tc.MultiHeadAttention(d_model, heads, fast=False)  # the readable path: plain matrix products
    with FlopCounterMode(display=False) as counter:
        mha(torch.randn(batch, q_len, d_model), memory=torch.randn(batch, k_len, d_model))
    assert sol.multiply_adds(*sizes) == counter.get_total_flops() // 2 == ex.multiply_adds(*sizes)


@pytest.mark.parametrize("convert", [int, np.int64, torch.tensor], ids=["int", "numpy", "tensor"])
def test_multiply_adds_checker_accepts_every_number_type(convert):
    assert ex.check_multiply_adds(lambda *sizes: convert(sol.multiply_adds(*sizes))).passed


def _cost(b, t, s, d, h, kv_rows=None, per_head_width=None, out=True, products=2):
    kv_rows = s if kv_rows is None else kv_rows
    width = d // h if per_head_width is None else per_head_width
    return b * t * d * d + 2 * b * kv_rows * d * d + products * b * h * t * s * width + (b * t * d * d if out else 0)


@pytest.mark.parametrize(
    ("wrong", "words"),
    [
        (lambda b, t, s, d, h: 2 * sol.multiply_adds(b, t, s, d, h), ["counts FLOPs"]),
        (lambda b, t, s, d, h: _cost(b, t, s, d, h, kv_rows=t), ["k_len positions"]),
        (lambda b, t, s, d, h: _cost(b, t, s, d, h, per_head_width=d), ["d_model-long dot products"]),
        (lambda b, t, s, d, h: _cost(b, t, s, d, h, out=False), ["W^O"]),
        (lambda b, t, s, d, h: _cost(b, t, s, d, h, products=1), ["one of the two attention products"]),
    ],
)
def test_multiply_adds_checker_names_each_mistake(wrong, words):
    assert failed_with(ex.check_multiply_adds(wrong), *words)


# ---- conceptual questions --------------------------------------------------------------------------------

QUESTIONS = [
    (ex.check_question_heads, sol.question_heads, {"a": "too many heads", "c": "0.9 BLEU", "d": "same parameter"}),
    (ex.check_question_cross, sol.question_cross, {"a": "gives the queries", "b": "only the queries", "d": "final"}),
]


@pytest.mark.parametrize(("checker", "right", "hints"), QUESTIONS)
def test_question_checkers_accept_the_right_letter_in_any_form(checker, right, hints):
    for form in (right, right.upper(), f" ({right}) "):
        assert checker(form).passed


@pytest.mark.parametrize(("checker", "right", "hints"), QUESTIONS)
def test_question_checkers_explain_every_wrong_letter(checker, right, hints):
    assert set(hints) | {right} == set("abcd")
    for letter, words in hints.items():
        assert failed_with(checker(letter), words)
    assert failed_with(checker("z"), "one of the letters")

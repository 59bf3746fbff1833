"""Notebook 03's checkers: the build cell (my_transformer/multi_head.py) and the exercises pass every right form,
name each plausible mistake, refuse the package's and PyTorch's own attention, and leak no answer."""

import ast
import importlib
import json
import random
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import transformer_course as tc
from transformer_course.exercises import nb03_multi_head_attention as ex

from helpers import reference_in_language, solutions

sol = solutions("nb03_multi_head_attention")  # notebooks/solutions/nb03_multi_head_attention.py
ROOT = Path(__file__).resolve().parent.parent
REFERENCES = ROOT / "notebooks" / "solutions" / "my_transformer"
NOTEBOOKS = [ROOT / "notebooks" / "03_multi_head_attention.ipynb", ROOT / "notebooks" / "zh" / "03_multi_head_attention.ipynb"]  # fmt: skip


def failed_with(result, *words):
    """The check failed and its message names the mistake."""
    return not result.passed and all(w.lower() in result.message.lower() for w in words)


def build_cell(notebook: Path, file: str) -> str:
    for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]:
        first, _, body = "".join(cell["source"]).partition("\n")
        if cell["cell_type"] == "code" and first == f"%%writefile my_transformer/{file}":
            return body
    raise AssertionError(f"{notebook.name} has no %%writefile my_transformer/{file} cell")


@pytest.fixture
def my_transformer(tmp_path, monkeypatch):
    """A fresh my_transformer/ package in tmp_path: ``put(file, text)`` writes a file, ``load()`` imports it."""
    folder = tmp_path / "my_transformer"
    folder.mkdir()
    (folder / "__init__.py").touch()
    monkeypatch.syspath_prepend(str(tmp_path))

    def forget():
        for name in [n for n in sys.modules if n == "my_transformer" or n.startswith("my_transformer.")]:
            del sys.modules[name]

    class Folder:
        path = folder

        @staticmethod
        def put(file, text=None):
            if text is None:
                shutil.copy(REFERENCES / file, folder / file)
            else:
                (folder / file).write_text(text, encoding="utf-8")

        @staticmethod
        def load():
            forget()
            importlib.invalidate_caches()
            return importlib.import_module("my_transformer.multi_head").MultiHeadAttention

    forget()
    yield Folder
    forget()


@pytest.fixture
def reference(my_transformer):
    my_transformer.put("attention.py")
    my_transformer.put("multi_head.py")
    return my_transformer.load()


# ---- the build cell: my_transformer/multi_head.py ---------------------------------------------------------


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=["en", "zh"])
def test_the_build_cell_is_a_scaffold_that_says_not_done_yet(notebook, my_transformer):
    my_transformer.put("attention.py")
    my_transformer.put("multi_head.py", build_cell(notebook, "multi_head.py"))
    scaffold = my_transformer.load()
    assert set(scaffold(12, 3).state_dict()) == ex.NAMES  # the given constructor: the package's names
    assert failed_with(ex.check_multi_head_attention(scaffold), "not done yet")


def test_the_reference_passes_and_its_weights_load_into_the_package_by_name(reference):
    assert ex.check_multi_head_attention(reference).passed
    tc.MultiHeadAttention(12, 3).load_state_dict(reference(12, 3).state_dict(), strict=True)


def test_a_blank_attention_file_is_named_as_the_reason(my_transformer):
    my_transformer.put("attention.py", build_cell(ROOT / "notebooks" / "02_attention.ipynb", "attention.py"))
    my_transformer.put("multi_head.py")
    result = ex.check_multi_head_attention(my_transformer.load())
    assert failed_with(result, "my_transformer/attention.py is not written yet", "use_reference")


def test_the_package_class_and_a_wrapper_of_pytorchs_are_not_counted_as_the_learners(reference):
    assert failed_with(ex.check_multi_head_attention(tc.MultiHeadAttention), "transformer_course.attention")

    class WrapsPyTorch(reference):
        def forward(self, query, key, value, mask=None):
            q, k, v = (self.split_heads(F.linear(x, w, b)) for x, w, b in
                       zip((query, key, value), self.in_proj.weight.chunk(3), self.in_proj.bias.chunk(3)))  # fmt: skip
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
            self.weights = None
            return self.out_proj(self.merge_heads(out))

    assert failed_with(ex.check_multi_head_attention(WrapsPyTorch), "scaled_dot_product_attention", "not counted")


def with_mistake(base, mistake):
    class Mistaken(base):
        def split_heads(self, x):
            if mistake == "direct_view":
                return x.reshape(x.size(0), self.heads, x.size(1), self.d_k)
            if mistake == "no_transpose":
                return x.view(x.size(0), x.size(1), self.heads, self.d_k)
            return super().split_heads(x)

        def merge_heads(self, x):
            if mistake == "merge_no_transpose":
                return x.reshape(x.size(0), x.size(2), self.heads * self.d_k)
            return super().merge_heads(x)

        def forward(self, query, key, value, mask=None):
            if mistake == "kv_from_query":
                key = value = query
            if mistake == "no_mask":
                mask = None
            dropout = self.dropout
            if mistake in ("dropout_on_output", "no_dropout"):
                self.dropout = nn.Identity()
            out = super().forward(query, key, value, mask)
            self.dropout = dropout
            if mistake == "dropout_on_output":
                out = dropout(out)
            if mistake == "no_weights":
                self.weights = None
            if mistake == "no_out_proj":
                w_q, w_k, w_v = self.in_proj.weight.chunk(3)
                b_q, b_k, b_v = self.in_proj.bias.chunk(3)
                q, k, v = (self.split_heads(F.linear(x, w, b)) for x, w, b in ((query, w_q, b_q), (key, w_k, b_k), (value, w_v, b_v)))  # fmt: skip
                scores = q @ k.transpose(-2, -1) / self.d_k**0.5
                if mask is not None:
                    scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
                self.weights = scores.softmax(-1).detach()
                out = self.merge_heads(scores.softmax(-1) @ v)
            if mistake == "detached_weights":
                out = self.out_proj(self.merge_heads(self.weights @ self.split_heads(F.linear(value, *[p.chunk(3)[2] for p in (self.in_proj.weight, self.in_proj.bias)]))))  # fmt: skip
            return out

    return Mistaken


@pytest.mark.parametrize(
    ("mistake", "words"),
    [
        ("direct_view", ["split_heads", "one view"]),
        ("no_transpose", ["split_heads returns (batch, len, heads, d_k)"]),
        ("merge_no_transpose", ["merge_heads", "wrong order"]),
        ("kv_from_query", ["cross-attention", "computed from `query`"]),
        ("no_mask", ["mask is not passed on"]),
        ("no_dropout", ["self.dropout is not used"]),
        ("dropout_on_output", ["dropout is applied to the block's output"]),
        ("no_weights", ["self.weights is None"]),
        ("no_out_proj", ["output projection"]),
        ("detached_weights", ["no gradient reaches W^Q and W^K"]),
    ],
)
def test_the_multi_head_checker_names_each_mistake(reference, mistake, words):
    assert failed_with(ex.check_multi_head_attention(with_mistake(reference, mistake)), *words)


def projections(block, query, key, value, bias=True):
    """Q, K, V of a learner's block, split into heads (batch, heads, len, d_k)."""
    weights, biases = block.in_proj.weight.chunk(3), block.in_proj.bias.chunk(3)
    return [block.split_heads(F.linear(x, w, b if bias else None)) for x, w, b in zip((query, key, value), weights, biases)]  # fmt: skip


def attend(block, q, k, v, mask, scale=None, dropout=None):
    """The learner's own attention inside the block: softmax(q kᵀ / scale) v, dropout (a function) on the weights."""
    scores = q @ k.transpose(-2, -1) / (q.size(-1) ** 0.5 if scale is None else scale)
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = scores.softmax(-1)
    weights = block.dropout(weights) if dropout is None else dropout(weights)
    return weights @ v, weights


def block_with(base, forward, init=None):
    methods = {"forward": forward} if init is None else {"forward": forward, "__init__": init}
    return type("Learners", (base,), methods)


def loop_over_heads(self, query, key, value, mask=None):
    """A right block, one head at a time: each head's dropout mask is drawn on its own, in another order."""
    q, k, v = projections(self, query, key, value)
    heads = [attend(self, q[:, h], k[:, h], v[:, h], None if mask is None else mask[:, 0]) for h in range(self.heads)]
    self.weights = torch.stack([w for _, w in heads], 1).detach()
    return self.out_proj(self.merge_heads(torch.stack([x for x, _ in heads], 1)))


def functional_dropout(self, query, key, value, mask=None):
    """A right block with F.dropout at the module's rate and mode, on the weights stacked heads first."""
    q, k, v = (x.transpose(0, 1) for x in projections(self, query, key, value))  # (heads, batch, len, d_k)
    drop = lambda w: F.dropout(w, self.dropout.p, self.training)  # noqa: E731
    x, weights = attend(self, q, k, v, None if mask is None else mask.transpose(0, 1), dropout=drop)
    self.weights = weights.transpose(0, 1).detach()
    return self.out_proj(self.merge_heads(x.transpose(0, 1)))


def test_every_right_form_of_dropout_passes_whatever_order_its_mask_is_drawn_in(reference):
    """A loop over heads drew its zeros in another order than the package's one call, and was told "wrong values"."""
    for forward in (loop_over_heads, functional_dropout):
        assert ex.check_multi_head_attention(block_with(reference, forward)).passed, forward.__name__


def keeps_the_graph(self, query, key, value, mask=None):
    x, weights = attend(self, *projections(self, query, key, value), mask)
    self.weights = weights  # not detached
    return self.out_proj(self.merge_heads(x))


def scaled_by_k_len(self, query, key, value, mask=None):
    q, k, v = projections(self, query, key, value)
    x, weights = attend(self, q, k, v, mask, scale=k.size(-2) ** 0.5)
    self.weights = weights.detach()
    return self.out_proj(self.merge_heads(x))


def without_bias(self, query, key, value, mask=None):
    x, weights = attend(self, *projections(self, query, key, value, bias=False), mask)
    self.weights = weights.detach()
    return self.out_proj(self.merge_heads(x))


def bias_free_init(self, d_model, heads, dropout=0.0):
    nn.Module.__init__(self)
    self.heads, self.d_k = heads, d_model // heads
    self.in_proj = nn.Linear(d_model, 3 * d_model, bias=False)
    self.out_proj = nn.Linear(d_model, d_model, bias=False)
    self.dropout, self.weights = nn.Dropout(dropout), None


def bias_free_forward(self, query, key, value, mask=None):
    q, k, v = (self.split_heads(F.linear(x, w)) for x, w in zip((query, key, value), self.in_proj.weight.chunk(3)))
    x, weights = attend(self, q, k, v, mask)
    self.weights = weights.detach()
    return self.out_proj(self.merge_heads(x))


def queries_from_key(self, query, key, value, mask=None):
    x, weights = attend(self, *projections(self, key, key, value), mask)
    self.weights = weights.detach()
    return self.out_proj(self.merge_heads(x))


def dropping_with(drop):
    def forward(self, query, key, value, mask=None):
        x, weights = attend(self, *projections(self, query, key, value), mask, dropout=drop(self))
        self.weights = weights.detach()
        return self.out_proj(self.merge_heads(x))

    return forward


@pytest.mark.parametrize(
    ("forward", "init", "words"),
    [
        (keeps_the_graph, None, ["self.weights is not detached", "graph"]),
        (scaled_by_k_len, None, ["divided by √k_len", "√d_k"]),
        (without_bias, None, ["leave out their bias", "x W + b"]),
        (bias_free_forward, bias_free_init, ["in_proj.bias, out_proj.bias are missing", "bias=False"]),
        (queries_from_key, None, ["cross-attention", "one vector per key", "queries come from `query`"]),
        (dropping_with(lambda self: lambda w: F.dropout(w, p=0.1)), None, ["in eval mode your block still drops"]),
        (dropping_with(lambda self: lambda w: F.dropout(w, 0.1, self.training)), None, ["uses p=0.1", "self.dropout"]),
        (dropping_with(lambda self: lambda w: w), None, ["self.dropout is not used"]),
        (dropping_with(lambda self: lambda w: self.dropout(w[:, :1]).sum() * 0 + w), None, ["some heads"]),
    ],
    ids=["not detached", "sqrt k_len", "no bias in F.linear", "bias=False", "queries from key", "dropout in eval",
         "own rate", "no dropout", "dropout on one head"],
)  # fmt: skip
def test_the_multi_head_checker_names_each_mistake_it_used_to_call_wrong_values(reference, forward, init, words):
    assert failed_with(ex.check_multi_head_attention(block_with(reference, forward, init)), *words)


def test_the_checker_leaves_the_global_random_state_as_it_found_it(reference):
    torch.manual_seed(99)
    random.seed(4)
    before, before_py = torch.random.get_rng_state(), random.getstate()
    ex.check_multi_head_attention(reference)
    ex.check_multi_head_attention(with_mistake(reference, "dropout_on_output"))
    assert torch.equal(torch.random.get_rng_state(), before) and random.getstate() == before_py


# ---- exercise 1: every shape as a function of the sizes ----------------------------------------------------


@pytest.mark.parametrize("form", [tuple, list, torch.Size], ids=["tuple", "list", "Size"])
def test_predicted_shapes_accepts_tuples_lists_and_sizes(form):
    assert ex.check_predicted_shapes(lambda *s: {k: form(v) for k, v in sol.predicted_shapes(*s).items()}).passed


def one_wrong(name, wrong):
    return lambda b, T, S, d, h: {**sol.predicted_shapes(b, T, S, d, h), name: wrong(b, T, S, d, h)}


@pytest.mark.parametrize(
    ("predicted", "words"),
    [
        (one_wrong("q", lambda b, T, S, d, h: (b, T, h, d // h)), ["before the transpose"]),
        (one_wrong("k", lambda b, T, S, d, h: (b, h, T, d // h)), ["S positions, not T"]),
        (one_wrong("weights", lambda b, T, S, d, h: (b, h, S, T)), ["rows are queries"]),
        (one_wrong("heads_out", lambda b, T, S, d, h: (b, h, T, S)), ["that is the weights"]),
        (one_wrong("output", lambda b, T, S, d, h: (b, h, T, d // h)), ["before the merge"]),
        # a 4-dimensional answer with the right number of axes is told which axis is off (not "expected 4 dimensions")
        (one_wrong("q", lambda b, T, S, d, h: (b, h, T + 1, d // h)), ["number of dimensions is right", "axis 2"]),
        (one_wrong("q", lambda b, T, S, d, h: (b, h, T, d // h, 1)), ["5 dimensions"]),
        (lambda *s: [1, 2], ["should return a dict"]),
        (lambda *s: {"q": (1,)}, ["no entry for"]),
    ],
)
def test_predicted_shapes_names_each_mistake(predicted, words):
    assert failed_with(ex.check_predicted_shapes(predicted), *words)


def test_predicted_shapes_cannot_be_measured_by_running_a_block_of_that_size(reference):
    def measured(batch, T, S, d_model, heads):
        mha = reference(d_model, heads)
        x, memory = torch.randn(batch, T, d_model), torch.randn(batch, S, d_model)
        return {"output": tuple(mha(x, memory, memory).shape), **sol.predicted_shapes(batch, T, S, d_model, heads)}

    assert failed_with(ex.check_predicted_shapes(measured), "does not fit in memory")


# ---- exercise 2: the parameter count --------------------------------------------------------------------------


@pytest.mark.parametrize("convert", [int, np.int64, torch.tensor, float], ids=["int", "numpy", "tensor", "float"])
def test_parameter_count_accepts_every_number_type(convert):
    assert ex.check_attention_parameter_count(lambda *s: convert(sol.attention_parameter_count(*s))).passed


def test_parameter_count_matches_modules_of_those_sizes_where_they_fit():
    for d_model, heads, d_k, d_v in ((512, 8, 16, 64), (64, 4, 8, 24)):
        block = nn.ModuleList([nn.Linear(d_model, heads * d_k), nn.Linear(d_model, heads * d_k),
                               nn.Linear(d_model, heads * d_v), nn.Linear(heads * d_v, d_model)])  # fmt: skip
        assert sum(p.numel() for p in block.parameters()) == sol.attention_parameter_count(d_model, heads, d_k, d_v)


def test_parameter_count_is_a_closed_form_building_the_block_is_stopped():
    def built(d_model, heads, d_k, d_v):
        block = [nn.Linear(d_model, heads * d_k), nn.Linear(d_model, heads * d_k), nn.Linear(d_model, heads * d_v),
                 nn.Linear(heads * d_v, d_model)]  # fmt: skip
        return sum(p.numel() for m in block for p in m.parameters())

    assert failed_with(ex.check_attention_parameter_count(built), "d_model=65536", "does not fit in memory")


@pytest.mark.parametrize(
    ("wrong", "words"),
    [
        (lambda d, h, dk, dv: 4 * d * d + 4 * d, ["d_model × d_model"]),
        (lambda d, h, dk, dv: 2 * d * h * dk + d * h * dv + h * dv * d, ["weights only"]),
        (lambda d, h, dk, dv: 2 * (d * h * dk + h * dk) + d * h * dv + h * dv + h * dk * d + d, ["sizes W^O by d_k"]),
        (lambda d, h, dk, dv: 2 * (d * dk + dk) + (d * dv + dv) + (dv * d + d), ["counts one head"]),
        (lambda d, h, dk, dv: 7, ["four matrices"]),
    ],
)
def test_parameter_count_names_each_mistake(wrong, words):
    assert failed_with(ex.check_attention_parameter_count(wrong), *words)


# ---- exercise 3: grouped-query attention ------------------------------------------------------------------------


def test_grouped_query_attention_passes_the_solution_which_equals_pytorchs_enable_gqa():
    assert ex.check_grouped_query_attention(sol.grouped_query_attention).passed
    q, k, v = torch.randn(2, 6, 3, 8), torch.randn(2, 2, 5, 8), torch.randn(2, 2, 5, 8)
    torch.testing.assert_close(sol.grouped_query_attention(q, k, v)[0], F.scaled_dot_product_attention(q, k, v, enable_gqa=True))  # fmt: skip


def test_grouped_query_attention_with_the_learners_own_attention_passes(my_transformer):
    my_transformer.put("attention.py")
    attention = importlib.import_module("my_transformer.attention").scaled_dot_product_attention

    def gqa(query, key, value, mask=None):
        share = query.size(1) // key.size(1)
        return attention(query, key.repeat_interleave(share, 1), value.repeat_interleave(share, 1), mask)

    assert ex.check_grouped_query_attention(gqa).passed


def test_grouped_query_attention_refuses_pytorchs_fused_kernel_but_takes_notebook_02s_attention():
    """The notebook says "use your scaled_dot_product_attention": notebook 02's piece, whose fallback (a skipped
    attention.py) is the package's own function, may do the attending; PyTorch's fused kernel may not."""

    def fused(query, key, value, mask=None):
        return F.scaled_dot_product_attention(query, key, value, attn_mask=mask, enable_gqa=True), None

    def package(query, key, value, mask=None):
        share = query.size(1) // key.size(1)
        return tc.scaled_dot_product_attention(query, key.repeat_interleave(share, 1), value.repeat_interleave(share, 1), mask)  # fmt: skip

    assert failed_with(ex.check_grouped_query_attention(fused), "not counted")
    assert ex.check_grouped_query_attention(package).passed


@pytest.mark.parametrize(
    ("mistake", "words"),
    [
        ("repeat", ["repeat_interleave, not repeat"]),
        ("no_mask", ["mask is not used"]),
        ("output_only", ["pair"]),
    ],
)
def test_grouped_query_attention_names_each_mistake(mistake, words):
    def gqa(query, key, value, mask=None):
        share = query.size(1) // key.size(1)
        if mistake == "repeat":
            key, value = key.repeat(1, share, 1, 1), value.repeat(1, share, 1, 1)
            return sol.grouped_query_attention(query, key, value, mask)
        if mistake == "no_mask":
            return sol.grouped_query_attention(query, key, value)
        return sol.grouped_query_attention(query, key, value, mask)[0]

    assert failed_with(ex.check_grouped_query_attention(gqa), *words)


# ---- questions --------------------------------------------------------------------------------------------------


def test_question_gqa_parameters_takes_the_number_and_names_the_mistakes():
    for form in (sol.question_gqa_parameters, np.int64(393216), torch.tensor(393216.0)):
        assert ex.check_question_gqa_parameters(form).passed
    assert failed_with(ex.check_question_gqa_parameters(3 * 512**2), "full multi-head")
    assert failed_with(ex.check_question_gqa_parameters(3 * 512 * 128), "W^Q keeps all 8 heads")
    assert failed_with(ex.check_question_gqa_parameters(393216 + 512**2), "without W^O")


def test_question_cross_takes_the_letter_in_any_form_and_explains_every_wrong_one():
    for form in ("b", "B", " (b) "):
        assert ex.check_question_cross(form).passed
    for letter, words in {"a": "same at every step", "c": "own W^K and W^V", "d": "all source positions"}.items():
        assert failed_with(ex.check_question_cross(letter), words)


# ---- no answer in reach -------------------------------------------------------------------------------------------

CHECKERS = [
    ex.check_multi_head_attention,
    ex.check_predicted_shapes,
    ex.check_attention_parameter_count,
    ex.check_grouped_query_attention,
    ex.check_question_gqa_parameters,
    ex.check_question_cross,
]


@pytest.mark.parametrize("checker", CHECKERS, ids=lambda c: c.__name__)
def test_no_attribute_of_the_checker_module_passes_a_checker(checker):
    for name in dir(ex):
        if name.startswith("__"):
            continue
        assert not checker(getattr(ex, name)).passed, f"ex.{name} passes {checker.__name__}"


def test_the_module_holds_no_shape_table_count_or_letter():
    for gone in ("SHAPES", "attention_parameter_count", "multiply_adds", "HEADS"):
        assert not hasattr(ex, gone)


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=["en", "zh"])
def test_solving_the_build_cell_gives_the_reference_file(notebook):
    """Each stub (docstring + raise) takes the reference's body; everything else is already the reference's."""
    text = reference_in_language((REFERENCES / "multi_head.py").read_text(encoding="utf-8"), notebook)
    tree, ref = ast.parse(build_cell(notebook, "multi_head.py")), ast.parse(text)
    bodies = {n.name: n.body for n in ast.walk(ref) if isinstance(n, ast.FunctionDef)}
    stubs = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and isinstance(node.body[-1], ast.Raise):
            assert len(node.body) == 2, f"{node.name}: a stub holds its docstring and the raise, nothing else"
            node.body = node.body[:1] + bodies[node.name][1:]
            stubs.append(node.name)
    assert sorted(stubs) == ["forward", "merge_heads", "split_heads"]
    assert ast.dump(tree) == ast.dump(ref)

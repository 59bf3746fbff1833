"""Notebook 06's checkers accept every allowed form of a right answer and name each plausible mistake."""

import copy
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn
from torch.nn import functional

import transformer_course as tc
from transformer_course.exercises import check_question
from transformer_course.exercises import nb06_encoder as ex

from helpers import failed_with, reference, solutions

sol = solutions("nb06_encoder")  # notebooks/solutions/nb06_encoder.py


@pytest.fixture(scope="module")
def enc():
    return reference("encoder")


# ---- exercise 1: which outputs change without the padding mask ---------------------------------------


def test_the_predicted_table_is_what_the_encoder_does():
    torch.manual_seed(3)
    model = tc.make_model(20, 20, N=2, d_model=16, d_ff=32, h=4, dropout=0.0).eval()
    with torch.no_grad():
        moved = model.encode(ex.SRC, tc.padding_mask(ex.SRC, 0)) - model.encode(ex.SRC, None)
    assert torch.equal(moved.abs().amax(dim=-1) > 1e-4, torch.tensor(sol.CHANGES))


@pytest.mark.parametrize(
    "form",
    [
        lambda t: t,
        lambda t: tuple(tuple(row) for row in t),
        lambda t: [[int(v) for v in row] for row in t],
        np.array,
        lambda t: torch.tensor(t),
        lambda t: torch.tensor(t).int(),
        lambda t: torch.tensor(t).float(),
    ],
    ids=["lists of bool", "tuples", "lists of 0/1", "numpy", "bool tensor", "int tensor", "float tensor"],
)
def test_mask_effect_checker_accepts_every_form(form):
    assert ex.check_mask_effect(form(sol.CHANGES)).passed


F, T = False, True


@pytest.mark.parametrize(
    "table, words",
    [
        ([[F] * 5, [F, F, F, T, T]], ["real tokens", "also read"]),
        ([[F] * 5, [T, T, T, F, F]], ["queries as well"]),
        ([[T] * 5, [T] * 5], ["sentence 0 has no <pad>"]),
        ([[F] * 5, [F] * 5], ["its outputs change"]),
        ([[T] + [F] * 4, [T] * 5], ["sentence 0, position 0"]),
    ],
    ids=["only pads", "only real", "everything", "nothing", "other"],
)
def test_mask_effect_checker_names_each_mistake(table, words):
    assert failed_with(ex.check_mask_effect(table), *words)


@pytest.mark.parametrize(
    "answer, words",
    [([[2] * 5, [1] * 5], ["other than 0 and 1"]), ([[F] * 5], ["shape"]), ("no idea", ["table"]), (..., ["not done"])],
    ids=["value 2", "one row", "string", "blank"],
)
def test_mask_effect_checker_refuses_what_is_no_table(answer, words):
    assert failed_with(ex.check_mask_effect(answer), *words)


# ---- the build cell: my_transformer/encoder.py ------------------------------------------------------


def test_the_reference_encoder_file_passes_both_checkers(enc):
    assert ex.check_encoder_layer(enc.EncoderLayer).passed
    assert ex.check_encoder(enc.Encoder, enc.EncoderLayer).passed


def test_a_blank_build_cell_is_not_done_yet(enc):
    class Blank(enc.EncoderLayer):
        def forward(self, x, src_mask):
            raise NotImplementedError

    assert failed_with(ex.check_encoder_layer(Blank), "not done yet")


def layer_with(enc, forward):
    return type("Mistaken", (enc.EncoderLayer,), {"forward": forward})


@pytest.mark.parametrize(
    "forward, words",
    [
        (
            lambda self, x, m: self.sublayer[1](
                self.sublayer[0](x, lambda x: self.self_attn(x, x, x, None)), self.feed_forward
            ),
            ["padding mask does not reach self-attention"],
        ),
        (
            lambda self, x, m: self.sublayer[1](
                self.sublayer[0](x, self.feed_forward), lambda y: self.self_attn(y, y, y, m)
            ),
            ["wrong order"],
        ),
        (
            lambda self, x, m: self.sublayer[1].norm(
                self.feed_forward(self.sublayer[0].norm(self.self_attn(x, x, x, m)))
            ),
            ["residual is missing"],
        ),
        (
            lambda self, x, m: (
                self.sublayer[0](x, lambda x: self.self_attn(x, x, x, m)),
                self.sublayer[1](x, self.feed_forward),
            )[1],
            ["the FFN reads the layer's input"],
        ),
        (
            lambda self, x, m: (lambda y: self.sublayer[1].norm(y + self.feed_forward(y)))(
                self.sublayer[0].norm(x + self.self_attn(x, x, x, m))
            ),
            ["drops nothing"],
        ),
    ],
    ids=["no mask", "order", "no residual", "FFN on input", "no dropout"],
)
def test_encoder_layer_checker_names_each_mistake(enc, forward, words):
    assert failed_with(ex.check_encoder_layer(layer_with(enc, forward)), *words)


@pytest.mark.parametrize(
    "used, words",
    [
        ((0, 0), ["both sub-layers go through self.sublayer[0]"]),
        ((1, 1), ["both sub-layers go through self.sublayer[1]"]),
    ],
    ids=["sublayer 0 twice", "sublayer 1 twice"],
)
def test_encoder_layer_checker_names_one_residual_connection_used_for_both_sub_layers(enc, used, words):
    def forward(self, x, m):
        x = self.sublayer[used[0]](x, lambda y: self.self_attn(y, y, y, m))
        return self.sublayer[used[1]](x, self.feed_forward)

    assert failed_with(ex.check_encoder_layer(layer_with(enc, forward)), *words, "its own LayerNorm")


def test_encoder_layer_checker_names_one_residual_connection_listed_twice(enc):
    """[ResidualConnection(...)] * 2 loads the package's names, but both entries are one module: its weights used to
    be told only as "wrong values"."""

    def init(self, d_model, heads, d_ff, dropout, norm_first=False):
        enc.EncoderLayer.__init__(self, d_model, heads, d_ff, dropout, norm_first)
        self.sublayer = nn.ModuleList([self.sublayer[0]] * 2)

    shared = type("Mistaken", (enc.EncoderLayer,), {"__init__": init})
    assert failed_with(ex.check_encoder_layer(shared), "sublayer.0.norm.bias, sublayer.1.norm.bias are one tensor")


def test_encoder_layer_checker_names_a_feed_forward_built_without_its_biases(enc):
    ffn = reference("embeddings").PositionwiseFeedForward

    def init(self, d_model, heads, d_ff, dropout, norm_first=False):
        enc.EncoderLayer.__init__(self, d_model, heads, d_ff, dropout, norm_first)
        self.feed_forward = ffn(d_model, d_ff)
        self.feed_forward.w_1 = nn.Linear(d_model, d_ff, bias=False)
        self.feed_forward.w_2 = nn.Linear(d_ff, d_model, bias=False)

    no_bias = type("Mistaken", (enc.EncoderLayer,), {"__init__": init})
    result = ex.check_encoder_layer(no_bias)
    assert failed_with(result, "feed_forward.w_1.bias, feed_forward.w_2.bias are missing", "bias=False")


def test_encoder_layer_checker_names_an_ignored_norm_first(enc):
    def post_ln_only(self, x, m):
        norm0, norm1 = self.sublayer[0].norm, self.sublayer[1].norm
        x = norm0(x + self.sublayer[0].dropout(self.self_attn(x, x, x, m)))
        return norm1(x + self.sublayer[1].dropout(self.feed_forward(x)))

    assert failed_with(ex.check_encoder_layer(layer_with(enc, post_ln_only)), "norm_first is ignored")


def test_encoder_layer_checker_refuses_the_package_and_pytorch(enc):
    assert failed_with(ex.check_encoder_layer(tc.model.EncoderLayer), "transformer_course.model", "not counted")

    def torch_attention(self, x, m):  # PyTorch's fused attention inside an otherwise hand-written layer
        def attend(y):
            q, k, v = self.self_attn.in_proj(y).chunk(3, dim=-1)  # (B, S, d_model) each
            heads = [t.unflatten(-1, (self.self_attn.heads, -1)).transpose(1, 2) for t in (q, k, v)]
            out = functional.scaled_dot_product_attention(*heads, attn_mask=m)  # (B, h, S, d_k)
            return self.self_attn.out_proj(out.transpose(1, 2).flatten(-2))

        return self.sublayer[1](self.sublayer[0](x, attend), self.feed_forward)

    assert failed_with(ex.check_encoder_layer(layer_with(enc, torch_attention)), "scaled_dot_product_attention")


def encoder_with(enc, **methods):
    return type("Mistaken", (enc.Encoder,), methods)


def shared_init(self, layer, N):
    nn.Module.__init__(self)
    self.layers = nn.ModuleList([layer] * N)  # one layer, N times
    self.norm = enc_final_norm(layer)


def enc_final_norm(layer):
    return reference("encoder").final_norm(layer.d_model, layer.norm_first)


def always_norm_init(self, layer, N):
    nn.Module.__init__(self)
    self.layers = nn.ModuleList([copy.deepcopy(layer) for _ in range(N)])
    self.norm = reference("norm_residual").LayerNorm(layer.d_model)  # also after a post-LN stack


def never_norm_init(self, layer, N):
    nn.Module.__init__(self)
    self.layers = nn.ModuleList([copy.deepcopy(layer) for _ in range(N)])
    self.norm = nn.Identity()


def forward_without_norm(self, x, m):
    for layer in self.layers:
        x = layer(x, m)
    return x


def forward_one_layer(self, x, m):
    return self.norm(self.layers[0](x, m))


def forward_unchained(self, x, m):
    out = x
    for layer in self.layers:
        out = layer(x, m)
    return self.norm(out)


@pytest.mark.parametrize(
    "methods, words",
    [
        ({"__init__": shared_init}, ["share their weights"]),
        ({"__init__": always_norm_init}, ["post-LN stack ends without"]),
        ({"__init__": never_norm_init}, ["pre-LN stack needs one more"]),
        ({"forward": forward_without_norm}, ["built but not applied"]),
        ({"forward": forward_one_layer}, ["only one layer runs"]),
        ({"forward": forward_unchained}, ["each layer reads the stack's input"]),
        ({"forward": lambda self, x, m: tc.model.Encoder.forward(self, x, m)}, ["transformer_course.model"]),
    ],
    ids=[
        "shared",
        "final norm in post-LN",
        "no final norm in pre-LN",
        "norm not applied",
        "one layer",
        "unchained",
        "package",
    ],
)
def test_encoder_checker_names_each_mistake(enc, methods, words):
    assert failed_with(ex.check_encoder(encoder_with(enc, **methods), enc.EncoderLayer), *words)


# ---- exercise 2: seat numbers that left padding does not move -----------------------------------------


def test_left_padded_positions_reference_passes_and_makes_left_padding_harmless():
    assert ex.check_left_padded_positions(sol.left_padded_positions).passed
    torch.manual_seed(0)
    model = tc.make_model(20, 20, N=2, d_model=16, d_ff=32, h=4, dropout=0.0).eval()
    table = model.src_pos.table  # (max_len, d_model)
    sentence = torch.tensor([[5, 6, 7]])
    left = torch.tensor([[0, 0, 5, 6, 7]])

    def encode(src):
        x = model.src_embed(src) + table[sol.left_padded_positions(src, 0)]  # seats from the function
        return model.encoder(x, tc.padding_mask(src, 0))

    with torch.no_grad():
        torch.testing.assert_close(encode(left)[:, 2:], encode(sentence))


@pytest.mark.parametrize(
    "wrong, words",
    [
        (lambda src, pad: torch.arange(src.size(1)).expand_as(src), ["plain seats"]),
        (lambda src, pad: (src != pad).long().cumsum(1), ["off by one"]),
        (lambda src, pad: sol.left_padded_positions(src, pad).float(), ["integer tensor"]),
        (lambda src, pad: (src != pad).long().cumsum(1) - 1, ["outside"]),
        (lambda src, pad: sol.left_padded_positions(src, pad)[:, None], ["shape"]),
        (lambda src, pad: sol.left_padded_positions(src, pad).tolist(), ["torch.Tensor"]),
        (lambda src, pad: sol.left_padded_positions(src.flip(1), pad).flip(1), ["counted from the end"]),
    ],
    ids=["arange", "from 1", "float", "negative at pads", "shape", "list", "from the end"],
)
def test_left_padded_positions_checker_names_each_mistake(wrong, words):
    assert failed_with(ex.check_left_padded_positions(wrong), *words)


def test_left_padded_positions_blank_is_not_done_yet():
    def blank(src, pad):
        raise NotImplementedError

    assert failed_with(ex.check_left_padded_positions(blank), "not done yet")


# ---- exercise 3: parameters of the encoder -----------------------------------------------------------


@pytest.mark.parametrize("form", [int, np.int64, float], ids=["int", "numpy int", "whole float"])
def test_encoder_parameter_count_checker_accepts_every_number_form(form):
    assert ex.check_encoder_parameter_count(lambda N, d, d_ff: form(sol.encoder_parameter_count(N, d, d_ff))).passed


def test_encoder_parameter_count_checker_refuses_counting_a_built_model():
    def counted(N, d_model, d_ff):  # builds the layers: fine for small sizes, impossible at d_model 4096, N 48
        layer = tc.model.EncoderLayer(d_model, 8, d_ff, 0.0)
        return N * sum(p.numel() for p in layer.parameters())

    def counted_by_hand(N, d_model, d_ff):  # no package, but still tensors
        layers = [
            nn.Linear(d_model, 3 * d_model),
            nn.Linear(d_model, d_model),
            nn.Linear(d_model, d_ff),
            nn.Linear(d_ff, d_model),
        ]
        return N * (sum(p.numel() for m in layers for p in m.parameters()) + 4 * d_model)

    assert failed_with(ex.check_encoder_parameter_count(counted), "closed form")
    assert failed_with(ex.check_encoder_parameter_count(counted_by_hand), "closed form")
    assert failed_with(ex.check_encoder_parameter_count(lambda N, d, f: torch.tensor(count(N, d, f))), "calls torch")


def count(N, d, d_ff):
    return sol.encoder_parameter_count(N, d, d_ff)


@pytest.mark.parametrize(
    "wrong, words",
    [
        (lambda N, d, d_ff: count(1, d, d_ff), ["N of them"]),
        (lambda N, d, d_ff: count(N, d, d_ff) - N * (4 * d + d_ff + d), ["biases"]),
        (lambda N, d, d_ff: count(N, d, d_ff) - N * 4 * d, ["LayerNorms of each layer are missing"]),
        (lambda N, d, d_ff: count(N, d, d_ff) - N * 2 * d, ["counted half"]),
        (lambda N, d, d_ff: count(N, d, d_ff) - N * (d * d + d), ["W^O"]),
        (lambda N, d, d_ff: count(N, d, d_ff) - N * (d * d_ff + d_ff), ["two matrices"]),
        (lambda N, d, d_ff: count(N, d, d_ff) + 1, ["count, per layer"]),
        (lambda N, d, d_ff: count(N, d, d_ff) + 0.5, ["whole number"]),
    ],
    ids=[
        "one layer",
        "no biases",
        "no norms",
        "half the norms",
        "three projections",
        "one FFN matrix",
        "other",
        "half",
    ],
)
def test_encoder_parameter_count_checker_names_each_mistake(wrong, words):
    assert failed_with(ex.check_encoder_parameter_count(wrong), *words)


# ---- questions ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "answers",
    [
        sol.QUIZ,
        {"q1": np.int64(3152384), "q2": np.int64(3), "q3": 13.0},
        {"q1": 3152384.0, "q2": torch.tensor(3.0), "q3": np.float32(13)},
    ],
    ids=["solution", "numpy and capital", "tensor and brackets"],
)
def test_quiz_accepts_every_form_of_the_right_answers(answers):
    assert ex.check_quiz(**answers).passed


def test_quiz_calls_the_notebooks_blanks_not_done_yet(capsys):
    result = ex.check_quiz(q1=..., q2=..., q3=...)  # the notebook's `q1 = ...` lines, run unchanged
    assert not result.passed and result.message == "0 of 3 right"
    assert capsys.readouterr().out.count("not done yet") == 3


@pytest.mark.parametrize(
    "question, answer, words",
    [
        ("q1", 18914304, ["lists each tensor once"]),
        ("q1", 3150336, ["add the LayerNorms"]),
        ("q1", 1, ["count one encoder layer"]),
        ("q2", 2, ["round UP"]),
        ("q2", 12, ["not 1"]),
        ("q2", 1, ["one layer reaches"]),
        ("q2", 4, ["12 − 5·L"]),
        ("q3", 12, ["one more LayerNorm at the end"]),
        ("q3", 7, ["each layer has two"]),
        ("q3", 18, ["closes the stack"]),
        ("q3", 11, ["pre-LN encoder layer"]),
    ],
)
def test_quiz_names_each_wrong_answer(question, answer, words):
    assert failed_with(check_question(question, ex.QUESTIONS[question], answer), *words)


@pytest.mark.parametrize("name, thing", [(name, getattr(ex, name)) for name in dir(ex) if not name.startswith("__")])
def test_no_attribute_of_the_checker_module_passes_a_checker(enc, name, thing):
    assert not ex.check_encoder_layer(thing).passed
    assert not ex.check_encoder(thing, enc.EncoderLayer).passed
    assert not ex.check_mask_effect(thing).passed
    assert not ex.check_left_padded_positions(thing).passed
    assert not ex.check_encoder_parameter_count(thing).passed


def test_a_blank_earlier_file_is_named_not_called_this_cells_not_done_yet(enc):
    class BlankAttention(nn.Module):  # stands in for a multi_head.py whose stub still raises
        def __init__(self, d_model, heads):
            super().__init__()
            self.in_proj, self.out_proj = nn.Linear(d_model, 3 * d_model), nn.Linear(d_model, d_model)

        def forward(self, query, key, value, mask=None):
            raise NotImplementedError

    BlankAttention.__module__ = "my_transformer.multi_head"
    code = BlankAttention.forward.__code__
    BlankAttention.forward.__code__ = code.replace(co_filename=str(Path("my_transformer") / "multi_head.py"))

    class OnBlankAttention(enc.EncoderLayer):
        def __init__(self, d_model, heads, d_ff, dropout, norm_first=False):
            super().__init__(d_model, heads, d_ff, dropout, norm_first)
            self.self_attn = BlankAttention(d_model, heads)

    assert failed_with(ex.check_encoder_layer(OnBlankAttention), "multi_head.py is not written yet", "use_reference")

"""Notebook 07's checkers accept every allowed form of a right answer and name each plausible mistake."""

import copy

import numpy as np
import pytest
import torch
from torch import nn

import transformer_course as tc
from transformer_course.exercises import check_question
from transformer_course.exercises import nb07_decoder as ex

from helpers import failed_with, reference, solutions

sol = solutions("nb07_decoder")  # notebooks/solutions/nb07_decoder.py


@pytest.fixture(scope="module")
def dec():
    return reference("decoder")


# ---- the build cell: my_transformer/decoder.py ------------------------------------------------------


@pytest.mark.slow
def test_the_reference_decoder_file_passes_every_checker(dec):
    assert ex.check_decoder_layer(dec.DecoderLayer).passed
    assert ex.check_decoder(dec.Decoder, dec.DecoderLayer).passed
    assert ex.check_make_model(dec.make_model).passed


def decoder_layer_with(dec, forward):
    return type("Mistaken", (dec.DecoderLayer,), {"forward": forward})


def attend_in_order(self, x, memory, self_mask, kv, cross_mask, order=("self", "cross")):
    for part in order:
        if part == "self":
            x = self.sublayer[0](x, lambda y: self.self_attn(y, y, y, self_mask))
        else:
            x = self.sublayer[1](x, lambda y: self.cross_attn(y, kv(y), kv(y), cross_mask))
    return self.sublayer[2](x, self.feed_forward)


@pytest.mark.parametrize(
    "forward, words",
    [
        (lambda self, x, mem, s, t: attend_in_order(self, x, mem, s, lambda y: mem, t), ["masks are swapped"]),
        (lambda self, x, mem, s, t: attend_in_order(self, x, mem, t, lambda y: y, s), ["decoder's own states"]),
        (lambda self, x, mem, s, t: attend_in_order(self, x, mem, t, lambda y: y, t), ["decoder's own states"]),
        (lambda self, x, mem, s, t: attend_in_order(self, x, mem, None, lambda y: mem, s), ["future leaks"]),
        (lambda self, x, mem, s, t: attend_in_order(self, x, mem, t, lambda y: mem, None), ["source's <pad>"]),
        (
            lambda self, x, mem, s, t: attend_in_order(self, x, mem, t, lambda y: mem, s, ("cross", "self")),
            ["comes before self-attention"],
        ),
    ],
    ids=[
        "masks swapped",
        "cross on own states",
        "cross on own states, tgt mask",
        "no causal mask",
        "no src mask",
        "order",
    ],
)
def test_decoder_layer_checker_names_each_mistake(dec, forward, words):
    assert failed_with(ex.check_decoder_layer(decoder_layer_with(dec, forward)), *words)


def cross_queries_from_memory(self, x, memory, src_mask, tgt_mask):
    x = self.sublayer[0](x, lambda y: self.self_attn(y, y, y, tgt_mask))
    x = self.sublayer[1](x, lambda y: self.cross_attn(memory, y, y, src_mask))  # queries and keys/values swapped
    return self.sublayer[2](x, self.feed_forward)


def test_decoder_layer_checker_names_cross_attention_whose_queries_come_from_the_memory(dec):
    result = ex.check_decoder_layer(decoder_layer_with(dec, cross_queries_from_memory))
    assert failed_with(result, "takes its queries from the memory", "queries come from x")


@pytest.mark.parametrize("used", [(0, 0, 0), (0, 1, 1), (0, 0, 2)], ids=str)
def test_decoder_layer_checker_names_one_residual_connection_used_for_several_sub_layers(dec, used):
    def forward(self, x, memory, src_mask, tgt_mask):
        x = self.sublayer[used[0]](x, lambda y: self.self_attn(y, y, y, tgt_mask))
        x = self.sublayer[used[1]](x, lambda y: self.cross_attn(y, memory, memory, src_mask))
        return self.sublayer[used[2]](x, self.feed_forward)

    through = ", ".join(f"self.sublayer[{i}]" for i in used)
    assert failed_with(ex.check_decoder_layer(decoder_layer_with(dec, forward)), f"go through {through}", "its own")


def test_decoder_layer_checker_names_one_residual_connection_listed_three_times(dec):
    def init(self, d_model, heads, d_ff, dropout, norm_first=False):
        dec.DecoderLayer.__init__(self, d_model, heads, d_ff, dropout, norm_first)
        self.sublayer = nn.ModuleList([self.sublayer[0]] * 3)  # one module, three entries

    shared = type("Mistaken", (dec.DecoderLayer,), {"__init__": init})
    result = ex.check_decoder_layer(shared)
    assert failed_with(result, "sublayer.0.norm.bias, sublayer.1.norm.bias, sublayer.2.norm.bias are one tensor")


def test_decoder_layer_checker_refuses_the_package_and_torch_layers(dec):
    assert failed_with(ex.check_decoder_layer(tc.model.DecoderLayer), "transformer_course.model", "not counted")

    def torch_mha(self, x, memory, src_mask, tgt_mask):  # nn.MultiheadAttention with the same weights
        mha = nn.MultiheadAttention(x.size(-1), self.self_attn.heads, batch_first=True)
        mha.in_proj_weight, mha.in_proj_bias = self.self_attn.in_proj.weight, self.self_attn.in_proj.bias
        mha.out_proj = self.self_attn.out_proj
        x = self.sublayer[0](
            x,
            lambda y: mha(y, y, y, attn_mask=~tgt_mask[:, 0].repeat_interleave(mha.num_heads, 0), need_weights=False)[
                0
            ],
        )
        x = self.sublayer[1](x, lambda y: self.cross_attn(y, memory, memory, src_mask))
        return self.sublayer[2](x, self.feed_forward)

    assert failed_with(ex.check_decoder_layer(decoder_layer_with(dec, torch_mha)), "multi_head_attention_forward")


def test_a_blank_decoder_is_not_done_yet(dec):
    class Blank(dec.Decoder):
        def forward(self, x, memory, src_mask, tgt_mask):
            raise NotImplementedError

    assert failed_with(ex.check_decoder(Blank, dec.DecoderLayer), "not done yet")


def shared_decoder_init(self, layer, N):
    nn.Module.__init__(self)
    self.layers = nn.ModuleList([layer] * N)
    self.norm = reference("encoder").final_norm(layer.d_model, layer.norm_first)


def post_ln_norm_init(self, layer, N):
    nn.Module.__init__(self)
    self.layers = nn.ModuleList([copy.deepcopy(layer) for _ in range(N)])
    self.norm = reference("norm_residual").LayerNorm(layer.d_model)


def own_states_as_memory(self, x, memory, src_mask, tgt_mask):
    for layer in self.layers:
        x = layer(x, x, src_mask, tgt_mask)
    return self.norm(x)


def masks_swapped(self, x, memory, src_mask, tgt_mask):
    for layer in self.layers:
        x = layer(x, memory, tgt_mask, src_mask)
    return self.norm(x)


def no_final_norm(self, x, memory, src_mask, tgt_mask):
    for layer in self.layers:
        x = layer(x, memory, src_mask, tgt_mask)
    return x


@pytest.mark.parametrize(
    "methods, words",
    [
        ({"__init__": shared_decoder_init}, ["share their weights"]),
        ({"__init__": post_ln_norm_init}, ["post-LN stack without one"]),
        ({"forward": own_states_as_memory}, ["same memory"]),
        ({"forward": masks_swapped}, ["masks are swapped"]),
        ({"forward": no_final_norm}, ["built but not applied"]),
    ],
    ids=["shared", "final norm in post-LN", "own states as memory", "masks swapped", "norm not applied"],
)
def test_decoder_checker_names_each_mistake(dec, methods, words):
    mistaken = type("Mistaken", (dec.Decoder,), methods)
    assert failed_with(ex.check_decoder(mistaken, dec.DecoderLayer), *words)


def make_model_with(dec, change):
    def make_model(*args, **kwargs):
        return change(dec.make_model, *args, **kwargs)

    return make_model


def untied(make, *args, **kwargs):
    model = make(*args, **kwargs)
    model.generator.proj.weight = nn.Parameter(model.generator.proj.weight.detach().clone())
    return model


def source_not_tied(make, *args, tie_embeddings="decoder", **kwargs):
    return make(*args, tie_embeddings="decoder" if tie_embeddings == "all" else tie_embeddings, **kwargs)


def no_xavier(make, *args, **kwargs):
    model = make(*args, **kwargs)
    with torch.no_grad():
        model.src_embed.lut.weight.normal_()  # nn.Embedding's own start, N(0, 1)
    return model


def ignores_norm_first(make, *args, norm_first=False, **kwargs):
    return make(*args, **kwargs)


def ignores_positional(make, *args, positional="sinusoidal", **kwargs):
    return make(*args, **kwargs)


def log_softmax_generator(make, *args, **kwargs):
    model = make(*args, **kwargs)
    plain = model.generator.forward
    model.generator.forward = lambda hidden: plain(hidden).log_softmax(dim=-1)
    return model


def encode_without_positions(make, *args, **kwargs):
    model = make(*args, **kwargs)
    model.encode = lambda src, src_mask: model.encoder(model.src_embed(src), src_mask)
    return model


def no_option_check(make, src_vocab, tgt_vocab, *args, tie_embeddings="decoder", **kwargs):
    if tie_embeddings == "all" and src_vocab != tgt_vocab:
        tie_embeddings = "decoder"  # builds something instead of saying what is wrong
    return make(src_vocab, tgt_vocab, *args, tie_embeddings=tie_embeddings, **kwargs)


@pytest.mark.slow
@pytest.mark.parametrize(
    "change, words",
    [
        (untied, ["generator should be the target embedding"]),
        (source_not_tied, ["source embedding is the same tensor"]),
        (no_xavier, ["src_embed.lut.weight", "xavier"]),
        (ignores_norm_first, ["norm_first does not reach"]),
        (ignores_positional, ["positional='learned'"]),
        (log_softmax_generator, ["log_softmax is left"]),
        (encode_without_positions, ["encode skips the positions"]),
        (no_option_check, ["should raise ValueError"]),
        (lambda make, *args, **kwargs: tc.make_model(*args, **kwargs), ["transformer_course.model.make_model"]),
    ],
    ids=[
        "untied",
        "all without source",
        "no xavier",
        "norm_first",
        "positional",
        "log_softmax",
        "no positions",
        "no option check",
        "package",
    ],
)
def test_make_model_checker_names_each_mistake(dec, change, words):
    assert failed_with(ex.check_make_model(make_model_with(dec, change)), *words)


# ---- exercise 1: find the bug ------------------------------------------------------------------------

PAD, VOCAB = 0, 20


def causal_leak(model):
    """Largest change of an output before position u when target token u changes (0 for a causal model)."""
    src = torch.tensor([[5, 6, 7, 8]])
    tgt = torch.tensor([[2, 9, 10, 11, 12]])
    with torch.no_grad():
        memory = model.encode(src, tc.padding_mask(src, PAD))
        base = model.decode(memory, tc.padding_mask(src, PAD), tgt, tc.target_mask(tgt, PAD))
        changed = tgt.clone()
        changed[0, 3] = 13
        moved = model.decode(memory, tc.padding_mask(src, PAD), changed, tc.target_mask(changed, PAD))
    return float((moved - base)[:, :3].abs().max())


def source_pad_effect(model):
    """Largest change of the decoder's output when two <pad> are appended to the source (0 when masked)."""
    tgt = torch.tensor([[2, 9, 10]])
    outputs = []
    for src in (torch.tensor([[5, 6, 7, 8]]), torch.tensor([[5, 6, 7, 8, PAD, PAD]])):
        with torch.no_grad():
            src_mask = tc.padding_mask(src, PAD)
            outputs.append(model.decode(model.encode(src, src_mask), src_mask, tgt, tc.target_mask(tgt, PAD)))
    return float((outputs[0] - outputs[1]).abs().max())


def source_effect(model):
    tgt = torch.tensor([[2, 9, 10]])
    outputs = []
    for src in (torch.tensor([[5, 6, 7, 8]]), torch.tensor([[5, 6, 7, 9]])):
        with torch.no_grad():
            src_mask = tc.padding_mask(src, PAD)
            outputs.append(model.decode(model.encode(src, src_mask), src_mask, tgt, tc.target_mask(tgt, PAD)))
    return float((outputs[0] - outputs[1]).abs().max())


def test_mystery_models_have_exactly_the_bugs_the_answers_name():
    model_1, model_2 = ex.mystery_models()
    assert causal_leak(model_1) > 1e-3 and source_pad_effect(model_1) < 1e-5  # (a) the future leaks
    assert causal_leak(model_2) < 1e-5 and source_pad_effect(model_2) > 1e-3  # (b) source <pad> is read
    for model in (model_1, model_2):
        assert source_effect(model) > 1e-3  # not (c): the source is read
        assert model.generator.proj.weight is model.tgt_embed.lut.weight  # not (d): tied


def test_mystery_models_leave_the_learners_random_state_alone():
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    ex.mystery_models()
    assert torch.equal(torch.rand(3), expected)


@pytest.mark.parametrize(
    "answers", [sol.MYSTERY, {"model_1": "A", "model_2": "(b)"}, {"model_1": " a ", "model_2": "B)"}]
)
def test_mystery_checker_accepts_every_letter_form(answers):
    assert ex.check_mystery(**answers).passed


@pytest.mark.parametrize(
    "answers, words",
    [
        ({"model_1": "b", "model_2": "b"}, ["model_1 is not (b)", "append <pad>"]),
        ({"model_1": "c", "model_2": "b"}, ["model_1 is not (c)", "change one word of the source"]),
        ({"model_1": "d", "model_2": "b"}, ["model_1 is not (d)", "tied"]),
        ({"model_1": "a", "model_2": "a"}, ["model_2 is not (a)", "causality test"]),
        ({"model_1": "a", "model_2": "c"}, ["model_2 is not (c)"]),
        ({"model_1": "a", "model_2": "d"}, ["model_2 is not (d)"]),
        ({"model_1": "a"}, ["model_2: no answer yet"]),
        ({"model_1": "e", "model_2": "b"}, ["one of the letters"]),
        ({}, ["not done yet"]),
        ({"model_1": ..., "model_2": ...}, ["not done yet"]),  # the notebook's `bug_in_model_1 = ...` lines
    ],
)
def test_mystery_checker_names_each_wrong_answer(answers, words):
    assert failed_with(ex.check_mystery(**answers), *words)


# ---- exercise 2: the parameters of the whole model ---------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("form", [int, np.int64, float], ids=["int", "numpy int", "whole float"])
def test_parameter_count_checker_accepts_every_number_form(form):
    assert ex.check_parameter_count(lambda *case: form(sol.parameter_count(*case))).passed


def test_parameter_count_checker_refuses_counting_a_built_model():
    def counted(s, t, N, d, f, tie):  # right for every size a computer can build
        return tc.count_parameters(tc.make_model(s, t, N=N, d_model=d, d_ff=f, h=4, tie_embeddings=tie))

    assert failed_with(ex.check_parameter_count(counted), "closed form")


def test_the_checker_knows_sizes_no_model_was_built_for():
    assert any(case[3] >= 4096 and case[2] >= 48 for case in ex.COUNT_CASES)


def test_the_solution_gives_the_base_model_count_the_notebook_prints():
    assert sol.parameter_count(37000, 37000, 6, 512, 2048, "all") == 63_119_496  # the package counts the same
    assert (
        60e6 < sol.parameter_count(37000, 37000, 6, 512, 2048, "all") < 65e6
    )  # Table 3 lists 65 (×10⁶); §5.1: "about 37000" tokens


def count(s, t, N, d, d_ff, tie):
    return sol.parameter_count(s, t, N, d, d_ff, tie)


def shared(s, t, d, tie):
    return {"none": 0, "decoder": t * d, "all": (s + t) * d}[tie]


@pytest.mark.parametrize(
    "wrong, words",
    [
        (lambda s, t, N, d, f, tie: count(s, t, N, d, f, tie) - t, ["bias"]),
        (lambda s, t, N, d, f, tie: count(s, t, N, d, f, tie) - N * (4 * d * d + 6 * d), ["cross-attention"]),
        (lambda s, t, N, d, f, tie: count(s, t, N, d, f, tie) - N * 2 * d, ["three LayerNorms"]),
        (lambda s, t, N, d, f, tie: count(s, t, N, d, f, tie) + 2 * 512 * d, ["fixed tables"]),
        (lambda s, t, N, d, f, tie: count(s, t, N, d, f, tie) + shared(s, t, d, tie), ["count once"]),
        (
            lambda s, t, N, d, f, tie: count(s, t, N, d, f, tie) - (s * d if tie == "decoder" else 0),
            ["source embedding"],
        ),
        (lambda s, t, N, d, f, tie: count(s, t, N, d, f, tie) - (t * d if tie == "none" else 0), ["its own"]),
        (lambda s, t, N, d, f, tie: count(s, t, N, d, f, tie) + 7, ["section 6"]),
    ],
    ids=["no bias", "no cross", "two norms", "positions", "tied twice", "decoder as all", "none as decoder", "other"],
)
def test_parameter_count_checker_names_each_mistake(wrong, words):
    assert failed_with(ex.check_parameter_count(wrong), *words)


# ---- questions: nn.Transformer -----------------------------------------------------------------------


def test_the_right_float_mask_is_what_nn_transformer_generates():
    course = tc.subsequent_mask(5)[0, 0]  # (5, 5), True = may attend
    assert torch.equal(course.float().log(), torch.nn.Transformer.generate_square_subsequent_mask(5))


@pytest.mark.parametrize(
    "answers",
    [sol.QUIZ, {"q1": "C", "q2": np.int64(32), "q3": np.int64(5)}, {"q1": "c)", "q2": 32.0, "q3": torch.tensor(5.0)}],
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
        ("q1", "a", ["added", "hides nothing"]),
        ("q1", "b", ["towards them"]),
        ("q1", "d", ["nothing is hidden"]),
        ("q2", 1, ["batch_first=True"]),
        ("q2", 10, ["one vector from each"]),
        ("q2", 5, ["which dimension"]),
        ("q3", 6, ["never an input"]),
        ("q3", 4, ["5 long each"]),
        ("q3", 3, ["count the positions"]),
    ],
)
def test_quiz_names_each_wrong_answer(question, answer, words):
    assert failed_with(check_question(question, ex.QUESTIONS[question], answer), *words)


def test_printing_the_mystery_models_gives_nothing_away():
    model_1, model_2 = ex.mystery_models()
    assert repr(model_1) == repr(model_2)


def test_no_attribute_of_a_mystery_model_names_its_bug():
    model_1, model_2 = ex.mystery_models()

    def attributes(model):
        return sorted(
            (name, key)
            for name, module in model.named_modules()
            for key in vars(module)
            if not key.startswith("_") or key not in ("_parameters", "_buffers", "_modules")
        )

    assert attributes(model_1) == attributes(model_2)  # the same attribute names everywhere
    for model in (model_1, model_2):
        for layer in model.decoder.layers:
            assert vars(layer.self_attn).keys() == vars(layer.cross_attn).keys()
            assert not vars(layer.self_attn)["_buffers"] and not vars(layer.self_attn)["_parameters"]


@pytest.mark.parametrize("name, thing", [(name, getattr(ex, name)) for name in dir(ex) if not name.startswith("__")])
def test_no_attribute_of_the_checker_module_passes_a_checker(dec, name, thing):
    assert not ex.check_decoder_layer(thing).passed
    assert not ex.check_decoder(thing, dec.DecoderLayer).passed
    assert not ex.check_make_model(thing).passed
    assert not ex.check_parameter_count(thing).passed
    assert not ex.check_mystery(model_1=thing, model_2=thing).passed

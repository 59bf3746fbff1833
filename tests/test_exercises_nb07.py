"""Notebook 07's checkers accept every allowed form of a right answer and name each plausible mistake."""

import numpy as np
import pytest
import torch

import transformer_course as tc
from transformer_course.exercises import check_question
from transformer_course.exercises import nb07_decoder as ex

from helpers import solutions

sol = solutions("nb07_decoder")  # notebooks/solutions/nb07_decoder.py


def failed_with(result, *words):
    """The check failed and its message names the mistake."""
    return not result.passed and all(w.lower() in result.message.lower() for w in words)


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


@pytest.mark.parametrize(
    "form", [int, np.int64, float, torch.tensor], ids=["int", "numpy int", "whole float", "0-d tensor"]
)
def test_parameter_count_checker_accepts_every_number_form(form):
    assert ex.check_parameter_count(lambda *case: form(sol.parameter_count(*case))).passed


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
    [sol.QUIZ, {"q1": "C", "q2": "(b)", "q3": np.int64(5)}, {"q1": "c)", "q2": " B", "q3": torch.tensor(5.0)}],
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
        ("q2", "a", ["batch_first=True"]),
        ("q2", "c", ["no error"]),
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

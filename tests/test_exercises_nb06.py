"""Notebook 06's checkers accept every allowed form of a right answer and name each plausible mistake."""

import numpy as np
import pytest
import torch

from transformer_course.exercises import check_question
from transformer_course.exercises import nb06_encoder as ex

from helpers import solutions

sol = solutions("nb06_encoder")  # notebooks/solutions/nb06_encoder.py


def failed_with(result, *words):
    """The check failed and its message names the mistake."""
    return not result.passed and all(w.lower() in result.message.lower() for w in words)


# ---- exercise 1: which outputs change without the padding mask ---------------------------------------


def test_the_predicted_table_is_what_the_encoder_does():
    assert torch.equal(ex.measured_changes(), torch.tensor(sol.CHANGES))


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


# ---- exercise 2: the centred local window (§4) -------------------------------------------------------


@pytest.mark.parametrize(
    "form",
    [lambda m: m, lambda m: m.int(), lambda m: m.float(), lambda m: m.to(torch.uint8)],
    ids=["bool", "int", "float", "uint8"],
)
def test_local_window_checker_accepts_boolean_and_0_1_masks(form):
    assert ex.check_local_window_mask(lambda src, pad, w: form(sol.local_window_mask(src, pad, w))).passed


def test_local_window_reference_matches_the_definition_by_loops():
    src = ex.WINDOW_SRC
    mask = ex.reference_window_mask(src, 0, 2)
    for b in range(src.size(0)):
        for q in range(src.size(1)):
            for k in range(src.size(1)):
                assert bool(mask[b, 0, q, k]) == (abs(q - k) <= 2 and int(src[b, k]) != 0)


def one_sided(src, pad, w):
    S = src.size(1)
    q, k = torch.arange(S)[:, None], torch.arange(S)[None, :]
    return ((q - k >= 0) & (q - k <= w)) & (src != pad)[:, None, None, :]


def strict(src, pad, w):
    S = src.size(1)
    return ((torch.arange(S)[:, None] - torch.arange(S)[None, :]).abs() < w) & (src != pad)[:, None, None, :]


def no_padding(src, pad, w):
    S = src.size(1)
    near = (torch.arange(S)[:, None] - torch.arange(S)[None, :]).abs() <= w
    return near.expand(src.size(0), 1, S, S)


@pytest.mark.parametrize(
    "wrong, words",
    [
        (one_sided, ["reaches back only", "centres"]),
        (strict, ["off by one"]),
        (no_padding, ["<pad> key inside the window"]),
        (lambda src, pad, w: (src != pad)[:, None, None, :].expand(-1, 1, src.size(1), -1), ["window is missing"]),
        (lambda src, pad, w: ~sol.local_window_mask(src, pad, w), ["inverted"]),
        (lambda src, pad, w: sol.local_window_mask(src, pad, w)[:, 0], ["heads axis"]),
        (lambda src, pad, w: sol.local_window_mask(src, pad, w + 1), ["should be"]),
        (lambda src, pad, w: torch.where(sol.local_window_mask(src, pad, w), 0.0, float("-inf")), ["additive"]),
    ],
    ids=["one-sided", "strict", "no padding", "no window", "inverted", "no head axis", "other", "additive"],
)
def test_local_window_checker_names_each_mistake(wrong, words):
    assert failed_with(ex.check_local_window_mask(wrong), *words)


# ---- exercise 3: parameters of the encoder -----------------------------------------------------------


@pytest.mark.parametrize(
    "form", [int, np.int64, float, torch.tensor], ids=["int", "numpy int", "whole float", "0-d tensor"]
)
def test_encoder_parameter_count_checker_accepts_every_number_form(form):
    assert ex.check_encoder_parameter_count(lambda N, d, d_ff: form(sol.encoder_parameter_count(N, d, d_ff))).passed


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
    [sol.QUIZ, {"q1": "B", "q2": np.int64(3), "q3": 12.0}, {"q1": "b)", "q2": torch.tensor(3.0), "q3": np.float32(12)}],
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
        ("q1", "a", ["nothing fails"]),
        ("q1", "c", ["one object"]),
        ("q2", 2, ["round UP"]),
        ("q2", 12, ["not 1"]),
        ("q2", 1, ["one layer reaches"]),
        ("q2", 4, ["12 − 5·L"]),
        ("q3", 13, ["only a pre-LN"]),
        ("q3", 6, ["each layer has two"]),
        ("q3", 30, ["encoder only"]),
        ("q3", 11, ["Add & Norm boxes"]),
    ],
)
def test_quiz_names_each_wrong_answer(question, answer, words):
    assert failed_with(check_question(question, ex.QUESTIONS[question], answer), *words)

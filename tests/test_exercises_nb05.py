"""Notebook 05's checkers accept every allowed form of a right answer and name each plausible mistake."""

import math

import numpy as np
import pytest
import torch
from torch import nn

from transformer_course.exercises import check_question
from transformer_course.exercises import nb05_embeddings_positional_encoding as ex

from helpers import solutions

sol = solutions("nb05_embeddings_positional_encoding")  # notebooks/solutions/nb05_embeddings_positional_encoding.py


def failed_with(result, *words):
    """The check failed and its message names the mistake."""
    return not result.passed and all(w.lower() in result.message.lower() for w in words)


# ---- exercise 1: PE(pos) · PE(pos + k) in closed form ----------------------------------------------


@pytest.mark.parametrize(
    "form",
    [float, np.float64, np.float32, torch.tensor, lambda v: torch.tensor([v])],
    ids=["float", "numpy float64", "numpy float32", "0-d tensor", "one-number tensor"],
)
def test_pe_dot_checker_accepts_every_number_form(form):
    assert ex.check_pe_dot(lambda k, d_model: form(sol.pe_dot(k, d_model))).passed


def test_pe_dot_checker_agrees_with_the_table_itself():
    table = ex.sinusoidal_table(80, 64).double()  # (80, 64)
    for pos in (0, 3, 20):
        assert math.isclose(float(table[pos] @ table[pos + 17]), sol.pe_dot(17, 64), rel_tol=1e-5)


def omegas(d_model):
    return [1 / 10000 ** (2 * i / d_model) for i in range(d_model // 2)]


@pytest.mark.parametrize(
    "wrong, words",
    [
        (lambda k, d: sum(math.sin(w * k) for w in omegas(d)), ["sin", "cos(a − b)"]),
        (lambda k, d: sum(math.cos(k / 10000 ** (i / d)) for i in range(d // 2)), ["2i", "not i"]),
        (lambda k, d: sol.pe_dot(k, d) / (d / 2), ["mean"]),
        (lambda k, d: sum(math.cos(k / 10000 ** (c / d)) for c in range(d)), ["d_model/2 pairs"]),
        (lambda k, d: d / 2 * math.cos(k), ["one frequency"]),
        (lambda k, d: sol.pe_dot(k, d) + 1, ["the table gives"]),
    ],
    ids=["sin", "exponent i", "mean", "d_model frequencies", "one frequency", "other"],
)
def test_pe_dot_checker_names_each_mistake(wrong, words):
    assert failed_with(ex.check_pe_dot(wrong), *words)


def test_pe_dot_checker_refuses_a_string_and_a_list():
    assert failed_with(ex.check_pe_dot(lambda k, d: "4.0"), "should be a number")
    assert failed_with(ex.check_pe_dot(lambda k, d: [sol.pe_dot(k, d)]), "should be a number")


# ---- exercise 2: learned positions -----------------------------------------------------------------


def test_learned_positions_checker_passes_the_solution():
    assert ex.check_learned_positions(sol.LearnedPositionalEncoding).passed


def test_learned_positions_checker_passes_any_starting_values():
    class ZerosAtFirst(sol.LearnedPositionalEncoding):
        def __init__(self, d_model, dropout, max_len=512):
            super().__init__(d_model, dropout, max_len)
            self.table = nn.Parameter(torch.zeros(max_len, d_model))

    assert ex.check_learned_positions(ZerosAtFirst).passed


class Variant(sol.LearnedPositionalEncoding):
    """The solution with one thing changed in forward (``step``) or in the table (``table_as``)."""

    def __init__(self, d_model, dropout, max_len=512):
        super().__init__(d_model, dropout, max_len)
        self.max_len = max_len


def buffer_table(d_model, dropout, max_len=512):
    module = Variant(d_model, dropout, max_len)
    del module.table
    module.register_buffer("table", torch.randn(max_len, d_model))
    return module


def transposed_table(d_model, dropout, max_len=512):
    module = Variant(d_model, dropout, max_len)
    module.table = nn.Parameter(torch.randn(d_model, max_len))
    return module


def with_forward(forward):
    return type("Broken", (Variant,), {"forward": forward})


@pytest.mark.parametrize(
    "broken, words",
    [
        (buffer_table, ["nn.Parameter"]),
        (transposed_table, ["(max_len, d_model)"]),
        (with_forward(lambda self, x: self.dropout(x + self.table[: x.size(0)])), ["x.size(0)", "batch size"]),
        (with_forward(lambda self, x: self.dropout(x)), ["not added"]),
        (with_forward(lambda self, x: self.dropout(x + self.table.data[: x.size(1)])), ["no gradient"]),
        (with_forward(lambda self, x: x + self.table[: x.size(1)]), ["nothing was dropped"]),
        (with_forward(lambda self, x: x + self.dropout(self.table[: x.size(1)])), ["on the sum"]),
        (with_forward(lambda self, x: self.dropout(x + self.table[: x.size(1)][: self.max_len])), ["ValueError"]),
    ],
    ids=[
        "buffer",
        "transposed",
        "batch size",
        "no positions",
        "detached",
        "no dropout",
        "dropout on table",
        "no error",
    ],
)
def test_learned_positions_checker_names_each_mistake(broken, words):
    assert failed_with(ex.check_learned_positions(broken), *words)


def test_learned_positions_checker_names_a_too_long_input_that_passes_silently():
    def forward(self, x):
        rows = self.table[: x.size(1)]
        rows = torch.cat([rows, rows[-1:].expand(x.size(1) - rows.size(0), -1)]) if x.size(1) > self.max_len else rows
        return self.dropout(x + rows)

    assert failed_with(ex.check_learned_positions(with_forward(forward)), "should raise a ValueError")


# ---- questions ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "answers",
    [
        sol.QUIZ,
        {"q1": np.float64(sol.QUIZ["q1"]), "q2": "B", "q3": "(b)"},
        {"q1": torch.tensor(sol.QUIZ["q1"]), "q2": " b ", "q3": "b)"},
        {"q1": round(sol.QUIZ["q1"]), "q2": "b", "q3": "b"},
    ],
    ids=["solution", "numpy and capital", "tensor and brackets", "rounded"],
)
def test_quiz_accepts_every_form_of_the_right_answers(answers):
    assert ex.check_quiz(**answers).passed


def test_quiz_calls_the_notebooks_blanks_not_done_yet(capsys):
    result = ex.check_quiz(q1=..., q2=..., q3=...)  # the notebook's `q1 = ...` lines, run unchanged
    assert not result.passed and result.message == "0 of 3 right"
    assert capsys.readouterr().out.count("not done yet") == 3


@pytest.mark.parametrize(
    "value, words",
    [
        (2 * math.pi * 10000, ["round bound", "510/512"]),
        (10000 ** (510 / 512), ["2π / ω"]),
        (2 * math.pi * 10000 ** (511 / 512), ["EVEN column"]),
        (2 * math.pi * 10000 ** (255 / 512), ["i/d_model"]),
        (6.283, ["one full turn"]),
    ],
    ids=["paper bound", "no 2π", "511", "i over d", "other"],
)
def test_quiz_names_each_wrong_wavelength(value, words):
    assert failed_with(check_question("q1", ex.QUESTIONS["q1"], value), *words)


@pytest.mark.parametrize(
    "question, letter, words",
    [
        ("q2", "a", ["move with them"]),
        ("q2", "c", ["only the order changes"]),
        ("q2", "d", ["equal words"]),
        ("q3", "a", ["longer than d_model"]),
        ("q3", "c", ["PE(0)"]),
    ],
)
def test_quiz_names_each_wrong_letter(question, letter, words):
    assert failed_with(check_question(question, ex.QUESTIONS[question], letter), *words)


def test_quiz_refuses_a_letter_that_is_no_option():
    assert failed_with(check_question("q2", ex.QUESTIONS["q2"], "e"), "one of the letters")

"""Notebook 00's checkers: every allowed answer form passes, every named mistake fails with its hint."""

import math

import numpy as np
import pytest
import torch

from transformer_course.exercises import nb00_introduction as ex

from helpers import solutions

sol = solutions("nb00_introduction")  # notebooks/solutions/nb00_introduction.py


def failed_with(result, *words):
    """The check failed and its message names the mistake."""
    return not result.passed and all(w.lower() in result.message.lower() for w in words)


def not_done(*args, **kwargs):
    raise NotImplementedError  # the learner's stub as the notebook ships it


# --- exercise 1: the multiply-adds of a whole attention layer ------------------------------------------


def test_flop_counter_reference_is_four_projections_plus_two_attention_products():
    # the independent reference (PyTorch's FlopCounterMode) agrees with the paper-style count
    assert ex.counted_attention_macs(10, 64, 4) == 4 * 10 * 64 * 64 + 2 * 10 * 10 * 64


@pytest.mark.parametrize("form", [int, float, np.int64, np.float32, torch.tensor], ids=lambda f: f.__name__)
def test_attention_macs_checker_passes_every_number_form(form):
    assert ex.check_attention_layer_macs(lambda n, d, h: form(sol.attention_layer_macs(n, d, h))).passed


@pytest.mark.parametrize(
    "mistake, words",
    [
        (lambda n, d, h: 2 * n * n * d, ["four projections"]),
        (lambda n, d, h: 4 * n * d * d + n * n * d, ["weights @ V"]),
        (lambda n, d, h: 3 * n * d * d + 2 * n * n * d, ["W^O"]),
        (lambda n, d, h: h * (4 * n * d * d + 2 * n * n * d), ["heads"]),
        (lambda n, d, h: n * n * d + n * d * d, ["Table 1's two terms"]),
    ],
    ids=["no-projections", "no-weighted-sum", "three-projections", "times-heads", "table-1-only"],
)
def test_attention_macs_checker_names_each_mistake(mistake, words):
    assert failed_with(ex.check_attention_layer_macs(mistake), *words)


def test_attention_macs_checker_refuses_a_non_number_and_a_stub():
    assert failed_with(ex.check_attention_layer_macs(lambda n, d, h: "many"), "number")
    assert failed_with(ex.check_attention_layer_macs(lambda n, d, h: True), "boolean")
    assert failed_with(ex.check_attention_layer_macs(not_done), "not done yet")


# --- exercise 2: stacked convolutions --------------------------------------------------------------------


def test_simulation_agrees_with_the_closed_forms():
    for n in (2, 5, 17, 64):
        for k in (2, 3, 4):
            assert ex.simulated_layers(n, k, False) == math.ceil((n - 1) / (k - 1))
            assert ex.simulated_layers(n, k, True) == sol.layers_to_connect(n, k, True)


@pytest.mark.parametrize("form", [int, np.int64, float, torch.tensor], ids=lambda f: f.__name__)
def test_layers_checker_passes_every_number_form(form):
    assert ex.check_layers_to_connect(lambda n, k, dilated: form(sol.layers_to_connect(n, k, dilated))).passed


def with_dilated(contiguous, dilated=None):
    """A learner's answer: one formula for contiguous kernels, the solution (or another formula) for dilated ones."""

    def answer(n, k, is_dilated):
        if is_dilated:
            return dilated(n, k) if dilated else sol.layers_to_connect(n, k, True)
        return contiguous(n, k)

    return answer


@pytest.mark.parametrize(
    "mistake, words",
    [
        (with_dilated(lambda n, k: math.ceil(n / k)), ["O(n/k)"]),
        (with_dilated(lambda n, k: (n - 1) // (k - 1)), ["round", "up"]),
        (with_dilated(lambda n, k: math.ceil(n / (k - 1))), ["n − 1"]),
        (
            with_dilated(lambda n, k: math.ceil((n - 1) / (k - 1)), lambda n, k: math.floor(math.log(n, k))),
            ["one layer short", "k^L"],
        ),
        (
            with_dilated(lambda n, k: math.ceil((n - 1) / (k - 1)), lambda n, k: math.ceil(math.log2(n))),
            ["base 2"],
        ),
        (
            with_dilated(lambda n, k: math.ceil((n - 1) / (k - 1)), lambda n, k: math.ceil(math.log(n, k))),
            ["float", "whole numbers"],
        ),
    ],
    ids=["n-over-k", "rounded-down", "n-over-k-minus-1", "dilated-rounded-down", "dilated-log2", "float-log"],
)
def test_layers_checker_names_each_mistake(mistake, words):
    assert failed_with(ex.check_layers_to_connect(mistake), *words)


def test_layers_checker_refuses_a_fraction_of_a_layer():
    assert failed_with(ex.check_layers_to_connect(lambda n, k, d: (n - 1) / (k - 1)), "whole number")


# --- questions -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("letter", ["b", "B", " b ", "(b)"])
def test_quiz_accepts_every_spelling_of_the_right_letter(letter):
    assert ex.check_quiz(q1=letter).passed


@pytest.mark.parametrize("form", [float, np.float64, torch.tensor, lambda x: round(x, 1)], ids=str)
def test_quiz_accepts_every_number_form(form):
    assert ex.check_quiz(q2=form(512 / 12), q3=form(12 * 3600 * 8 * 9.5e12)).passed


def test_quiz_accepts_table_2s_rounded_cost():
    assert ex.check_quiz(q3=3.3e18).passed


def test_the_solutions_answer_every_question():
    assert ex.check_quiz(**sol.QUIZ).passed and set(sol.QUIZ) == set(ex.QUESTIONS)


@pytest.mark.parametrize(
    "answers, words",
    [
        ({"q1": "a"}, ["depends on the words already written"]),
        ({"q1": "c"}, ["encoder reads the whole source"]),
        ({"q2": 12 / 512}, ["upside down"]),
        ({"q3": 12 * 8 * 9.5e12}, ["seconds"]),
        ({"q3": 12 * 3600 * 9.5e12}, ["8 GPUs"]),
        ({"q3": 12 * 3600 * 8 * 9.5e9}, ["10¹²"]),
    ],
)
def test_quiz_names_each_mistake(answers, words, capsys):
    assert not ex.check_quiz(**answers).passed
    assert all(w in capsys.readouterr().out for w in words)


def test_quiz_blanks_are_not_done_yet_and_unknown_names_are_said(capsys):
    assert not ex.check_quiz(q1=..., q2=..., q3=...).passed
    assert capsys.readouterr().out.count("not done yet") == 3
    assert not ex.check_quiz(q9="a").passed
    assert "no question named q9" in capsys.readouterr().out

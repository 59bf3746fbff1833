"""Notebook 00's checkers: every allowed answer form passes, every named mistake fails with its hint."""

import math

import numpy as np
import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from transformer_course.exercises import nb00_introduction as ex

from helpers import solutions

sol = solutions("nb00_introduction")  # notebooks/solutions/nb00_introduction.py


def failed_with(result, *words):
    """The check failed and its message names the mistake."""
    return not result.passed and all(w.lower() in result.message.lower() for w in words)


def not_done(*args, **kwargs):
    raise NotImplementedError  # the learner's stub as the notebook ships it


# --- exercise 1: the multiply-adds of a whole attention layer ------------------------------------------


def test_flop_counter_counts_four_projections_plus_two_attention_products():
    # the independent reference the checker uses (PyTorch's FlopCounterMode) agrees with the paper-style count
    d, n, heads = 64, 10, 4
    x = torch.zeros(1, n, d)
    w_q, w_k, w_v, w_o = (torch.nn.Linear(d, d) for _ in range(4))
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        q, k, v = (w(x).view(1, n, heads, d // heads).transpose(1, 2) for w in (w_q, w_k, w_v))
        w_o(((q @ k.transpose(-2, -1)).softmax(-1) @ v).transpose(1, 2).reshape(1, n, d))
    assert counter.get_total_flops() // 2 == sol.attention_layer_macs(n, d, heads) == 4 * n * d * d + 2 * n * n * d


def test_attention_macs_is_a_count_measuring_a_layer_of_that_size_is_stopped():
    def measured(n, d, heads):
        x = torch.zeros(1, n, d)
        layers = [torch.nn.Linear(d, d) for _ in range(4)]
        with FlopCounterMode(display=False) as counter, torch.no_grad():
            q, k, v = (w(x).view(1, n, heads, d // heads).transpose(1, 2) for w in layers[:3])
            layers[3](((q @ k.transpose(-2, -1)).softmax(-1) @ v).transpose(1, 2).reshape(1, n, d))
        return counter.get_total_flops() // 2

    assert failed_with(ex.check_attention_layer_macs(measured), "n=100000", "does not fit in memory")


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


def receptive_field_layers(n, k, dilated):
    """Layers until output n − 1 reaches input 0: the reach back grows by (k − 1)·dilation per layer."""
    reach, layers = 0, 0
    while reach < n - 1:
        reach += (k - 1) * (k**layers if dilated else 1)
        layers += 1
    return layers


def test_the_solution_agrees_with_an_independent_count_of_the_reach():
    for n in (2, 5, 17, 64, 125):
        for k in (2, 3, 4, 5):
            for dilated in (False, True):
                assert sol.layers_to_connect(n, k, dilated) == receptive_field_layers(n, k, dilated)
    assert ex.check_layers_to_connect(sol.layers_to_connect).passed


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


@pytest.mark.parametrize("form", [int, float, np.int64, torch.tensor], ids=lambda f: f.__name__)
def test_quiz_accepts_the_number_of_decoder_passes_in_every_form(form):
    assert ex.check_quiz(q1=form(21)).passed


@pytest.mark.parametrize(
    "form", [float, np.float64, torch.tensor, lambda x: round(x, 1)], ids=["float", "float64", "tensor", "rounded"]
)
def test_quiz_accepts_every_number_form(form):
    assert ex.check_quiz(q2=form(512 / 12), q3=form(12 * 3600 * 8 * 9.5e12)).passed


@pytest.mark.parametrize(
    "cost",
    [3.3e18, 12 * 3600 * 8 * 9.5e12, 100_000 * 0.4 * 8 * 9.5e12, 3.04e18, 3.0e18],
    ids=["table-2", "12-hours", "100k-steps", "3.04e18", "3.0e18"],
)
def test_quiz_accepts_every_correct_reading_of_the_base_models_cost(cost):
    """§5.2 gives both 12 hours and 100,000 steps of about 0.4 s: 3.28e18 and 3.04e18 are both right."""
    assert ex.check_quiz(q3=cost).passed


def test_the_solutions_answer_every_question():
    assert ex.check_quiz(**sol.QUIZ).passed and set(sol.QUIZ) == set(ex.QUESTIONS)


@pytest.mark.parametrize(
    "answers, words",
    [
        ({"q1": 1}, ["already known"]),
        ({"q1": 20}, ["end-of-sentence"]),
        ({"q1": 6}, ["count the passes"]),
        ({"q1": 126}, ["not layer calls"]),
        ({"q2": 12 / 512}, ["upside down"]),
        ({"q3": 12 * 8 * 9.5e12}, ["seconds"]),
        ({"q3": 12 * 3600 * 9.5e12}, ["8 GPUs"]),
        ({"q3": 12 * 3600 * 8 * 9.5e9}, ["10¹²"]),
        ({"q3": 100_000 * 0.4 * 9.5e12}, ["ran every step"]),
        ({"q3": 300_000 * 1.0 * 8 * 9.5e12}, ["big model"]),
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


# --- no answer in reach ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "checker", [ex.check_attention_layer_macs, ex.check_layers_to_connect], ids=lambda c: c.__name__
)
def test_no_attribute_of_the_checker_module_passes_a_checker(checker):
    for name in dir(ex):
        if not name.startswith("__"):
            assert not checker(getattr(ex, name)).passed, f"ex.{name} passes {checker.__name__}"


def test_no_attribute_answers_a_question():
    for name in dir(ex):
        if not name.startswith("__"):
            value = getattr(ex, name)
            assert not ex.check_quiz(q1=value, q2=value, q3=value).passed


def test_the_module_no_longer_exports_the_references():
    assert not hasattr(ex, "counted_attention_macs") and not hasattr(ex, "simulated_layers")

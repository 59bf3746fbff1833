"""Notebook 10's checkers: every allowed answer form passes, every named mistake fails with its hint."""

import math

import numpy as np
import pytest
import torch

from transformer_course.exercises import nb10_attention_visualization as ex
from transformer_course.viz import attention_entropy

from helpers import solutions

sol = solutions("nb10_attention_visualization")  # notebooks/solutions/nb10_attention_visualization.py


def failed_with(result, *words):
    """The check failed and its message names the mistake."""
    return not result.passed and all(w.lower() in result.message.lower() for w in words)


# ---- exercise 1: predict the captured shapes --------------------------------------------------------


def test_captured_shapes_are_heads_queries_keys_with_bos_on_the_target_axis():
    assert ex.captured_shapes() == {"encoder": (4, 6, 6), "decoder": (4, 5, 5), "cross": (4, 5, 6)}


@pytest.mark.parametrize(
    "form", [tuple, list, torch.Size, lambda s: [np.int64(n) for n in s]], ids=["tuple", "list", "Size", "numpy"]
)
def test_shapes_checker_passes_every_form(form):
    shapes = (sol.ENCODER_SHAPE, sol.DECODER_SHAPE, sol.CROSS_SHAPE)
    assert ex.check_capture_shapes(*(form(s) for s in shapes)).passed


@pytest.mark.parametrize(
    "answers, words",
    [
        (((1, 4, 6, 6), sol.DECODER_SHAPE, sol.CROSS_SHAPE), ["batch axis"]),
        (((6, 6), sol.DECODER_SHAPE, sol.CROSS_SHAPE), ["one (q_len, k_len) table per head"]),
        ((sol.ENCODER_SHAPE, (4, 4, 4), sol.CROSS_SHAPE), ["<s>"]),
        ((sol.ENCODER_SHAPE, sol.DECODER_SHAPE, (4, 4, 6)), ["<s>"]),
        ((sol.ENCODER_SHAPE, sol.DECODER_SHAPE, (4, 6, 5)), ["rows are queries"]),
        ((sol.ENCODER_SHAPE, (4, 5, 6), sol.CROSS_SHAPE), ["target positions too"]),
        ((sol.ENCODER_SHAPE, sol.DECODER_SHAPE, "(4, 5, 6)"), ["tuple or a list"]),
    ],
    ids=[
        "batch-axis",
        "no-heads",
        "decoder-without-bos",
        "cross-without-bos",
        "cross-swapped",
        "decoder-source-keys",
        "string",
    ],
)
def test_shapes_checker_names_each_mistake(answers, words):
    assert failed_with(ex.check_capture_shapes(*answers), *words)


def test_shapes_checker_blank_is_not_done_yet():
    assert failed_with(ex.check_capture_shapes(..., ..., ...), "not done yet")


# ---- exercise 2: head entropy -----------------------------------------------------------------------


def test_head_entropy_checker_passes_the_solution_the_package_and_float64():
    assert ex.check_head_entropy(sol.head_entropy).passed
    assert ex.check_head_entropy(attention_entropy).passed
    assert ex.check_head_entropy(lambda w: sol.head_entropy(w.double())).passed


def test_head_entropy_checker_catches_nan_from_zero_weights():
    def naive(w):
        return -(w * w.log()).sum(-1).mean(-1)  # 0 · log 0 = NaN

    assert failed_with(ex.check_head_entropy(naive), "NaN", "0 · log 0")


def test_head_entropy_checker_catches_bits_instead_of_nats():
    def bits(w):
        return -(w * w.clamp_min(1e-30).log2()).sum(-1).mean(-1)

    assert failed_with(ex.check_head_entropy(bits), "bits")


def test_head_entropy_checker_catches_a_sum_over_queries():
    def summed(w):
        return -(w * w.clamp_min(1e-30).log()).sum(-1).sum(-1)

    assert failed_with(ex.check_head_entropy(summed), "mean over the queries")


def test_head_entropy_checker_catches_the_wrong_axis():
    def columns(w):
        return -(w * w.clamp_min(1e-30).log()).sum(-2).mean(-1)

    assert failed_with(ex.check_head_entropy(columns), "dim -1")


def test_head_entropy_checker_reports_a_stub_as_not_done():
    def stub(w):
        raise NotImplementedError

    assert failed_with(ex.check_head_entropy(stub), "not done yet")


# ---- exercise 3: alignment from cross-attention -----------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.long, torch.int32], ids=str)
def test_alignment_checker_passes_the_solution_with_any_integer_dtype(dtype):
    assert ex.check_alignment(lambda w: sol.alignment(w).to(dtype)).passed


def test_alignment_checker_catches_head_zero_alone():
    assert failed_with(ex.check_alignment(lambda w: w[0].argmax(-1)), "head 0")


def test_alignment_checker_catches_argmax_over_queries():
    assert failed_with(ex.check_alignment(lambda w: w.mean(0).argmax(0)), "dim -1")


def test_alignment_checker_catches_no_head_average():
    assert failed_with(ex.check_alignment(lambda w: w.argmax(-1)), "average the heads")


def test_alignment_checker_catches_weights_instead_of_positions():
    assert failed_with(ex.check_alignment(lambda w: w.mean(0).max(-1).values), "positions")


def test_alignment_checker_catches_max_over_heads():
    assert not ex.check_alignment(lambda w: w.max(0).values.argmax(-1)).passed


# ---- questions --------------------------------------------------------------------------------------


def test_the_solutions_answer_every_question():
    assert ex.check_quiz(**sol.QUIZ).passed and set(sol.QUIZ) == set(ex.QUESTIONS)


@pytest.mark.parametrize("form", [float, np.float32, torch.tensor, lambda x: round(x, 3)], ids=str)
def test_quiz_accepts_every_number_form(form):
    assert ex.check_quiz(q2=form(math.log(8))).passed


@pytest.mark.parametrize(
    "answers, words",
    [
        ({"q1": "b"}, ["exactly 0"]),
        ({"q1": "c"}, ["every head"]),
        ({"q2": 3}, ["bits"]),
        ({"q2": 0.125}, ["weight of each key"]),
        ({"q2": 8}, ["number of keys"]),
        ({"q3": "a"}, ["W^O"]),
        ({"q3": "c"}, ["own weights"]),
    ],
)
def test_quiz_names_each_mistake(answers, words, capsys):
    assert not ex.check_quiz(**answers).passed
    assert all(w in capsys.readouterr().out for w in words)

"""Notebook 09's checkers: every allowed answer form passes, every named mistake fails with its hint."""

import math

import numpy as np
import pytest
import torch

from transformer_course.decode import gnmt_length_penalty
from transformer_course.exercises import nb09_decoding as ex

from helpers import solutions

sol = solutions("nb09_decoding")  # notebooks/solutions/nb09_decoding.py


def failed_with(result, *words):
    return not result.passed and all(w.lower() in result.message.lower() for w in words)


def not_done(*args, **kwargs):
    raise NotImplementedError


# --- the table model the checkers decode with --------------------------------------------------------


def test_table_model_gives_the_table_as_next_word_distribution():
    probs = torch.tensor([[0.5, 0.5], [0.1, 0.9]])
    model = ex.TableModel(probs)
    hidden = model.decode(None, None, torch.tensor([[1, 0]]), None)  # (1, 2, 2)
    torch.testing.assert_close(model.generator(hidden).log_softmax(-1).exp()[0], probs[[1, 0]])


def test_the_exercise_table_makes_greedy_and_beam_search_disagree():
    assert ex._decoded_words(1) == sol.GREEDY_PREDICTION != ex._decoded_words(2) == sol.BEAM_PREDICTION


# --- exercise 1: predictions -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "form",
    [list, tuple, lambda w: ["<s>", *w], lambda w: [f" {x} " for x in w]],
    ids=["list", "tuple", "with-start-symbol", "spaces"],
)
def test_predictions_checker_passes_every_form(form):
    assert ex.check_predictions(form(sol.GREEDY_PREDICTION), form(sol.BEAM_PREDICTION)).passed


@pytest.mark.parametrize(
    "greedy, beam, words",
    [
        (sol.BEAM_PREDICTION, sol.BEAM_PREDICTION, ["never goes back"]),
        (sol.GREEDY_PREDICTION, sol.GREEDY_PREDICTION, ["keeps the 2 best prefixes"]),
        (sol.GREEDY_PREDICTION, ["B", "</s>"], ["0.4 · 0.1"]),
        (["A", "C"], sol.BEAM_PREDICTION, ["ends with '</s>'"]),
        (sol.GREEDY_PREDICTION, ["B", "C"], ["ends with '</s>'"]),
        (sol.GREEDY_PREDICTION, ["b", "c", "</s>"], ["not words of the table"]),
        (sol.GREEDY_PREDICTION, "B C </s>", ["tuple or a list"]),
        (sol.GREEDY_PREDICTION, [5, 6, 3], ["as strings"]),
    ],
    ids=[
        "greedy-finds-the-best",
        "beam-is-greedy",
        "b-end",
        "greedy-no-end",
        "beam-no-end",
        "lowercase",
        "string",
        "ids",
    ],
)
def test_predictions_checker_names_each_mistake(greedy, beam, words):
    assert failed_with(ex.check_predictions(greedy, beam), *words)


def test_predictions_blank_is_not_done_yet():
    assert failed_with(ex.check_predictions(..., ...), "not done yet")


# --- exercise 2: one beam step -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "form",
    [tuple, list, lambda r: (r[0], r[1].int(), r[2].int()), lambda r: (r[0].double(), r[1], r[2])],
    ids=["tuple", "list", "int32-indices", "float64-scores"],
)
def test_top_k_checker_passes_every_form(form):
    assert ex.check_top_k_extensions(lambda b, n, k: form(sol.top_k_extensions(b, n, k))).passed


def test_top_k_checker_catches_ignoring_the_beam_scores():
    def no_beam_scores(beam_log_probs, next_log_probs, k):
        scores, index = next_log_probs.flatten().topk(k)
        return scores, index // next_log_probs.size(1), index % next_log_probs.size(1)

    assert failed_with(ex.check_top_k_extensions(no_beam_scores), "beam_log_probs[b]")


def test_top_k_checker_catches_a_wrong_flat_index():
    def wrong_index(beam_log_probs, next_log_probs, k):
        scores, index = (beam_log_probs[:, None] + next_log_probs).flatten().topk(k)
        return scores, index % k, index // k

    assert failed_with(ex.check_top_k_extensions(wrong_index), "index // V")


def test_top_k_checker_catches_swapped_beam_and_word():
    assert failed_with(
        ex.check_top_k_extensions(lambda b, n, k: (lambda s, be, w: (s, w, be))(*sol.top_k_extensions(b, n, k))),
        "swapped",
    )


def test_top_k_checker_wants_three_results():
    assert failed_with(ex.check_top_k_extensions(lambda b, n, k: sol.top_k_extensions(b, n, k)[:2]), "3 items")


# --- exercise 3: the crossover α ---------------------------------------------------------------------


def test_at_the_crossover_the_package_penalty_gives_equal_scores():
    for log_s, n_s, log_l, n_l in ex.CROSSOVER_CASES:
        alpha = sol.crossover_alpha(log_s, n_s, log_l, n_l)
        assert math.isclose(log_s / gnmt_length_penalty(n_s, alpha), log_l / gnmt_length_penalty(n_l, alpha))


@pytest.mark.parametrize("form", [float, np.float64, torch.tensor], ids=lambda f: f.__name__)
def test_crossover_checker_passes_every_number_form(form):
    assert ex.check_crossover_alpha(lambda *case: form(sol.crossover_alpha(*case))).passed


@pytest.mark.parametrize(
    "mistake, words",
    [
        (lambda ls, ns, ll, nl: math.log(ll / ls) / math.log(nl / ns), ["5 + |Y|"]),
        (lambda ls, ns, ll, nl: -sol.crossover_alpha(ls, ns, ll, nl), ["sign is flipped"]),
        (lambda ls, ns, ll, nl: (ll - ls) / math.log((5 + nl) / (5 + ns)), ["ratio", "not the difference"]),
        (lambda ls, ns, ll, nl: 0.6, ["scores are equal at"]),
    ],
    ids=["length-without-5", "negative", "difference", "paper-alpha"],
)
def test_crossover_checker_names_each_mistake(mistake, words):
    assert failed_with(ex.check_crossover_alpha(mistake), *words)


# --- exercise 4: the cache's size --------------------------------------------------------------------


@pytest.mark.parametrize("form", [int, np.int64, float, torch.tensor], ids=lambda f: f.__name__)
def test_cache_checker_passes_every_number_form(form):
    assert ex.check_cache_numbers(lambda *case: form(sol.cache_numbers(*case))).passed


@pytest.mark.parametrize(
    "mistake, words",
    [
        (lambda b, L, h, d, t, s: L * b * h * d * (t + s), ["values are missing"]),
        (lambda b, L, h, d, t, s: 2 * L * b * h * d * t, ["cross-attention is missing"]),
        (lambda b, L, h, d, t, s: 2 * b * h * d * (t + s), ["one layer"]),
        (lambda b, L, h, d, t, s: 2 * L * b * h * d * (t + 1 + s), ["not t + 1"]),
        (lambda b, L, h, d, t, s: 2 * L * b * h * d * (2 * t), ["src_len, not t"]),
    ],
    ids=["keys-only", "self-only", "one-layer", "t-plus-one", "cross-of-length-t"],
)
def test_cache_checker_names_each_mistake(mistake, words):
    assert failed_with(ex.check_cache_numbers(mistake), *words)


# --- questions and stubs -------------------------------------------------------------------------------


def test_the_solutions_answer_every_question():
    assert ex.check_quiz(**sol.QUIZ).passed and set(sol.QUIZ) == set(ex.QUESTIONS)


@pytest.mark.parametrize(
    "answers, words",
    [
        ({"q1": "a"}, ["dropout"]),
        ({"q1": "c"}, ["cross-attention"]),
        ({"q2": 6190}, ["one prefix"]),
        ({"q2": 16}, ["every word"]),
        ({"q3": "b"}, ["other way round"]),
        ({"q3": "c"}, ["length penalty"]),
    ],
)
def test_quiz_names_each_mistake(answers, words, capsys):
    assert not ex.check_quiz(**answers).passed
    assert all(w in capsys.readouterr().out for w in words)


@pytest.mark.parametrize("form", [int, np.int32, torch.tensor, float], ids=lambda f: f.__name__)
def test_quiz_accepts_every_number_form(form):
    assert ex.check_quiz(q2=form(24760)).passed


def test_checkers_report_a_stub_as_not_done_yet():
    for check in (ex.check_top_k_extensions, ex.check_crossover_alpha, ex.check_cache_numbers):
        assert failed_with(check(not_done), "not done yet")

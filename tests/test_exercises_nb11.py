"""Notebook 11's checkers: every allowed answer form passes, every named mistake fails with its hint."""

import math

import numpy as np
import pytest
import torch

from transformer_course.exercises import nb11_train_multi30k as ex

from helpers import solutions

sol = solutions("nb11_train_multi30k")  # notebooks/solutions/nb11_train_multi30k.py


def failed_with(result, *words):
    """The check failed and its message names the mistake."""
    return not result.passed and all(w.lower() in result.message.lower() for w in words)


def not_done(*args, **kwargs):
    raise NotImplementedError


# ---- exercise 1: a running average of checkpoints ---------------------------------------------------


def test_running_average_equals_the_mean_of_all_checkpoints():
    dicts = ex._state_dicts(5)
    running = ex._run_average(sol.update_average, dicts)
    for name in dicts[0]:
        torch.testing.assert_close(running[name], torch.stack([d[name] for d in dicts]).mean(0))


def test_update_average_checker_passes_the_solution_and_float64():
    assert ex.check_update_average(sol.update_average).passed
    assert ex.check_update_average(
        lambda avg, new, n: {k: v.double() for k, v in sol.update_average(avg, new, n).items()}
    ).passed


@pytest.mark.parametrize(
    "mistake, words",
    [
        (lambda avg, new, n: {k: (avg[k] + new[k]) / 2 for k in avg}, ["half the weight"]),
        (lambda avg, new, n: {k: avg[k] + new[k] for k in avg}, ["sum"]),
        (lambda avg, new, n: dict(new), ["last checkpoint"]),
        (lambda avg, new, n: {k: avg[k] + (new[k] - avg[k]) / (n - 1) for k in avg}, ["lost the first"]),
        (lambda avg, new, n: [avg[k] for k in avg], ["should return a dict"]),
        (lambda avg, new, n: {"weight": avg["weight"]}, ["keys"]),
    ],
    ids=["halves", "sum", "last-only", "count-minus-one", "a-list", "missing-key"],
)
def test_update_average_checker_names_each_mistake(mistake, words):
    assert failed_with(ex.check_update_average(mistake), *words)


def test_update_average_checker_catches_changing_the_inputs():
    def in_place(average, state, count):
        for name in average:
            average[name] += (state[name] - average[name]) / count  # writes into the first checkpoint
        return average

    assert failed_with(ex.check_update_average(in_place), "changed an input")


# ---- exercise 2: BLEU from counts -------------------------------------------------------------------


@pytest.mark.parametrize("form", [float, np.float64, torch.tensor], ids=lambda f: f.__name__)
def test_bleu_checker_passes_every_number_form(form):
    assert ex.check_bleu_from_counts(lambda *args: form(sol.bleu_from_counts(*args))).passed


def test_bleu_solution_matches_sacrebleu_on_real_sentences():
    from sacrebleu.metrics import BLEU

    hyps = ["a dog runs on the green grass .", "two men are playing music on a street ."]
    refs = ["a dog is running on the green grass .", "two men play music on a busy street ."]
    score = BLEU().corpus_score(hyps, [refs])
    assert all(score.counts)  # every n-gram order matches somewhere: no smoothing involved
    mine = sol.bleu_from_counts(score.counts, score.totals, score.sys_len, score.ref_len)
    assert math.isclose(mine, score.score, rel_tol=1e-9)


@pytest.mark.parametrize(
    "mistake, words",
    [
        (lambda c, t, s, r: ex._bleu_mistakes(c, t, s, r)[next(iter(ex._bleu_mistakes(c, t, s, r)))], ["geometric"]),
        (
            lambda c, t, s, r: 100 * math.exp(sum(math.log(a / b) for a, b in zip(c, t)) / 4),
            ["brevity penalty is missing"],
        ),
        (lambda c, t, s, r: sol.bleu_from_counts(c, t, s, r) / 100, ["0–100"]),
        (
            lambda c, t, s, r: (
                sol.bleu_from_counts(c, t, s, r) * (1 if s > r else math.exp(1 - s / r) / math.exp(1 - r / s))
            ),
            ["upside down"],
        ),
    ],
    ids=["arithmetic-mean", "no-brevity-penalty", "fraction", "inverted-penalty"],
)
def test_bleu_checker_names_each_mistake(mistake, words):
    assert failed_with(ex.check_bleu_from_counts(mistake), *words)


# ---- exercise 3: the loss floor ---------------------------------------------------------------------


def test_no_prediction_beats_the_floor():
    from transformer_course.train import LabelSmoothingLoss

    floor = ex.package_loss_floor(0.1, 5)
    torch.manual_seed(0)
    for _ in range(20):
        logits = torch.randn(1, 5) * 3
        assert LabelSmoothingLoss(0.1)(logits, torch.tensor([4])).item() >= floor - 1e-6


@pytest.mark.parametrize("form", [float, np.float32, torch.tensor], ids=lambda f: f.__name__)
def test_loss_floor_checker_passes_every_number_form(form):
    assert ex.check_loss_floor(lambda e, V: form(sol.loss_floor(e, V))).passed


def entropy(*pairs):
    return -sum(n * p * math.log(p) for p, n in pairs)


@pytest.mark.parametrize(
    "mistake, words",
    [
        (lambda e, V: 0.0, ["cannot reach 0"]),
        (lambda e, V: entropy((1 - e, 1), (e / (V - 1), V - 1)), ["V − 1 others"]),
        (lambda e, V: entropy((1 - e, 1), (e / V, V - 1)), ["does not sum to 1"]),
        (lambda e, V: sol.loss_floor(e, V) / math.log(2), ["bits"]),
    ],
    ids=["zero", "v-minus-1", "no-own-share", "bits"],
)
def test_loss_floor_checker_names_each_mistake(mistake, words):
    assert failed_with(ex.check_loss_floor(mistake), *words)


# ---- questions and stubs ----------------------------------------------------------------------------


def test_the_solutions_answer_every_question():
    assert ex.check_quiz(**sol.QUIZ).passed and set(sol.QUIZ) == set(ex.QUESTIONS)


@pytest.mark.parametrize("form", [int, float, np.int64, torch.tensor], ids=lambda f: f.__name__)
def test_quiz_accepts_every_number_form(form):
    assert ex.check_quiz(q2=form(32000)).passed


@pytest.mark.parametrize(
    "answers, words",
    [
        ({"q1": "a"}, ["speed"]),
        ({"q1": "c"}, ["both languages"]),
        ({"q2": 8000}, ["one GPU's batch"]),
        ({"q2": 2000}, ["not split"]),
        ({"q3": "a"}, ["8 exponent bits"]),
        ({"q3": "c"}, ["no loss scaling"]),
    ],
)
def test_quiz_names_each_mistake(answers, words, capsys):
    assert not ex.check_quiz(**answers).passed
    assert all(w in capsys.readouterr().out for w in words)


def test_checkers_report_a_stub_as_not_done_yet():
    for check in (ex.check_update_average, ex.check_bleu_from_counts, ex.check_loss_floor):
        assert failed_with(check(not_done), "not done yet")

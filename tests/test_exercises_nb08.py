"""The checkers of notebook 08 pass every allowed form of a right answer and name each plausible mistake."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from transformer_course.data import PAD, collate
from transformer_course.exercises import nb08_training_loop as ex
from transformer_course.train import noam_rate

from helpers import solutions

sol = solutions("nb08_training_loop")  # notebooks/solutions/nb08_training_loop.py

# --- exercise 1: predict the batch --------------------------------------------------------------------


def test_batch_prediction_matches_what_collate_builds():
    batch = collate([([4] * n, [5] * n) for n in ex.LENGTHS])
    assert tuple(batch.tgt_out.shape) == sol.TGT_OUT_SHAPE
    assert batch.n_tokens == sol.N_TOKENS
    assert int((batch.tgt_in == 3).sum()) == sol.EOS_IN_TGT_IN  # 3 = </s>


@pytest.mark.parametrize(
    "shape, n_tokens, eos",
    [
        ((4, 10), 28, 3),
        ([4, 10], 28, 3),
        (torch.Size([4, 10]), np.int64(28), torch.tensor(3)),
        ((np.int64(4), torch.tensor(10)), 28.0, np.float32(3)),
    ],
)
def test_batch_prediction_checker_accepts_every_form(shape, n_tokens, eos):
    assert ex.check_batch_prediction(shape, n_tokens, eos).passed


@pytest.mark.parametrize(
    "shape, n_tokens, eos, hint",
    [
        ((4, 11), 28, 3, "shape of tgt itself"),
        ((4, 9), 28, 3, "one more column"),
        ((10, 4), 28, 3, "batch comes first"),
        ((4, 10), 32, 3, "counts <s>"),
        ((4, 10), 24, 3, "forgets </s>"),
        ((4, 10), 40, 3, "counts the padding"),
        ((4, 10), 28, 0, "only where it sat in the last column"),
        ((4, 10), 28, 4, "which tgt_in drops"),
        ((4, 10), 28, 1, "the other way round"),
        ((4, 10), 27.5, 3, "whole number"),
        ("4, 10", 28, 3, "tuple or a list"),
    ],
)
def test_batch_prediction_checker_names_each_mistake(shape, n_tokens, eos, hint):
    result = ex.check_batch_prediction(shape, n_tokens, eos)
    assert not result.passed and hint in result.message


def test_batch_prediction_checker_reports_blanks_as_not_done():
    result = ex.check_batch_prediction(..., 28, 3)
    assert not result.passed and "not done yet" in result.message


# --- exercise 2: find the bugs ------------------------------------------------------------------------


def test_the_buggy_loss_shows_each_of_its_bugs():
    logits = torch.zeros(2, 3, 5)
    target = torch.tensor([[1, 2, PAD], [3, PAD, PAD]])
    # line 3: a confident right answer makes log(softmax) −inf, so the loss is not finite
    confident = logits.clone()
    confident[0, 0, 1] = 200.0
    assert not torch.isfinite(ex.buggy_label_smoothing_loss(confident, target, 0.1, PAD))
    # lines 6 and 7: on uniform logits both terms are ln V, so only the pads (line 7) change the value…
    assert math.isclose(ex.buggy_label_smoothing_loss(logits, target, 0.1, PAD).item(), math.log(5), rel_tol=1e-6)
    # …and with distinct logits the swapped weights (line 6) and the pads both show against F.cross_entropy
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(2, 3, 5, generator=g)
    want = F.cross_entropy(logits.transpose(1, 2), target, label_smoothing=0.1, ignore_index=PAD)
    assert not torch.isclose(ex.buggy_label_smoothing_loss(logits, target, 0.1, PAD), want)
    torch.testing.assert_close(sol.fixed_label_smoothing_loss(logits, target, 0.1, PAD), want)
    torch.testing.assert_close(
        sol.fixed_label_smoothing_loss(confident, target, 0.1, PAD).isfinite(), torch.tensor(True)
    )


@pytest.mark.parametrize("answer", [[3, 6, 7], (7, 3, 6), {3, 6, 7}, [2, 3, 6, 7], [np.int64(3), torch.tensor(6), 7.0]])
def test_bug_lines_checker_accepts_every_form(answer):
    assert ex.check_bug_lines(answer).passed


@pytest.mark.parametrize(
    "answer, hint",
    [
        ([2, 6, 7], "line 2 alone is fine"),
        ([3, 5, 6, 7], "line 5 is right"),
        ([3, 4, 6, 7], "line 4 is right"),
        ([6, 7], "very large entry"),
        ([3, 7], "which term gets the 1 − ε"),
        ([3, 6], "pad positions"),
        ([3, 6, 9], "lines 1–7"),
        ("3, 6, 7", "list (or tuple, or set)"),
    ],
)
def test_bug_lines_checker_names_each_mistake(answer, hint):
    result = ex.check_bug_lines(answer)
    assert not result.passed and hint in result.message


# --- exercise 3: the loss floor -----------------------------------------------------------------------


def test_the_loss_floor_is_the_smallest_loss_and_is_reached_at_p_equal_q():
    eps, vocab, y = ex.FLOOR_EPS, ex.FLOOR_V, 4
    q = torch.full((vocab,), eps / vocab, dtype=torch.float64)
    q[y] += 1 - eps
    at_q = F.cross_entropy(q.log()[None], torch.tensor([y]), label_smoothing=eps)  # logits log q → p = q
    assert math.isclose(at_q.item(), sol.LOSS_FLOOR, rel_tol=1e-9)
    g = torch.Generator().manual_seed(0)
    for _ in range(20):  # any other logits give a larger loss
        other = F.cross_entropy(
            torch.randn(1, vocab, generator=g, dtype=torch.float64) * 5, torch.tensor([y]), label_smoothing=eps
        )
        assert other.item() > sol.LOSS_FLOOR


@pytest.mark.parametrize(
    "answer", [sol.LOSS_FLOOR, 0.547, np.float32(0.5473), torch.tensor(0.547), torch.tensor([0.547])]
)
def test_loss_floor_checker_accepts_every_form(answer):
    assert ex.check_loss_floor(answer).passed


@pytest.mark.parametrize(
    "answer, hint",
    [
        (0, "common misconception"),
        (0.1 * math.log(14), "ε·ln V"),
        (-math.log(0.9 + 0.1 / 14), "−log q(y) only"),
        (sol.LOSS_FLOOR / math.log(2), "bits"),
        (0.5816, "V − 1 wrong words"),
        (0.5003, "V = 10"),
        (-0.547, "never negative"),
        (1.0, "smallest when p = q"),
        ("0.547", "should be a number"),
    ],
)
def test_loss_floor_checker_names_each_mistake(answer, hint):
    result = ex.check_loss_floor(answer)
    assert not result.passed and hint in result.message


# --- exercise 4: the peak of the schedule -------------------------------------------------------------


def test_the_peak_is_the_largest_rate_of_the_package_schedule():
    from transformer_course.config import get_preset

    c = get_preset(ex.PEAK_PRESET)
    rates = [noam_rate(s, c.d_model, c.warmup, c.lr_factor) for s in range(1, 3 * c.warmup)]
    assert rates.index(max(rates)) + 1 == sol.PEAK_STEP
    assert math.isclose(max(rates), sol.PEAK_RATE, rel_tol=1e-12)


@pytest.mark.parametrize(
    "step, rate",
    [
        (150, 1.0206e-3),
        (np.int64(150), np.float64(1.02e-3)),
        (torch.tensor(150), torch.tensor(1.0206e-3)),
        (150.0, 1.02e-3),
    ],
)
def test_peak_checker_accepts_every_form(step, rate):
    assert ex.check_peak(step, rate).passed


@pytest.mark.parametrize(
    "step, rate, hint",
    [
        (151, 1.0206e-3, "off by one"),
        (149, 1.0206e-3, "off by one"),
        (1, 1.0206e-3, "smallest rate"),
        (150, 5.103e-3, "lr_factor = 0.2 is missing"),
        (150, 0.2 * 150**-0.5, "d_model^-0.5"),
        (150, 0.2 * (256 * 4000) ** -0.5, "warmup of 4,000"),
        (150, 0.2 * 256**-0.5 * 150**-1.5, "rate of step 1"),
        (150, (512 * 4000) ** -0.5, "paper's base model"),
        (150, 3e-3, "all three factors"),
    ],
)
def test_peak_checker_names_each_mistake(step, rate, hint):
    result = ex.check_peak(step, rate)
    assert not result.passed and hint in result.message


# --- questions ----------------------------------------------------------------------------------------


def test_quiz_passes_the_reference_answers_in_every_form():
    assert ex.check_quiz(**sol.QUIZ).passed
    assert ex.check_quiz(q1="(C)", q2=" b ", q3=np.float64(2.5e9)).passed
    assert ex.check_quiz(q1="c)", q2="B", q3=torch.tensor(2.49e9)).passed


def test_quiz_answers_match_the_formula_and_the_paper():
    assert math.isclose(noam_rate(100, 512, 100) / noam_rate(100, 256, 100), 2**-0.5)  # q1
    assert ex.QUESTIONS["q3"].value == 25_000 * 100_000  # §5.1 tokens per batch × §5.2 steps


@pytest.mark.parametrize(
    "answers, hint",
    [
        ({"q1": "a"}, "smaller rate"),
        ({"q1": "b"}, "not −1"),
        ({"q1": "d"}, "the peak too"),
        ({"q2": "a"}, "no bug is needed"),
        ({"q2": "c"}, "regulariser"),
        ({"q2": "d"}, "different things"),
        ({"q3": 5e9}, "source and target"),
        ({"q3": 1e8}, "4,000 is the warmup"),
        ({"q3": 25_000}, "one batch"),
        ({"q1": "e"}, "one of the letters"),
    ],
)
def test_quiz_names_each_mistake(answers, hint, capsys):
    assert not ex.check_quiz(**answers).passed
    assert hint in capsys.readouterr().out


def test_every_checker_reports_a_blank_as_not_done_yet():
    results = [
        ex.check_batch_prediction(None, None, None),
        ex.check_bug_lines(...),
        ex.check_loss_floor(...),
        ex.check_peak(..., ...),
    ]
    for result in results:
        assert not result.passed and "not done yet" in result.message
    assert not ex.check_quiz(q1=..., q2=..., q3=...).passed

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

# --- exercise 1: a batch's numbers from its lengths ---------------------------------------------------


@pytest.mark.parametrize("lengths", [[7, 3, 5, 9], [4, 4], [1], [6, 2, 6, 1, 3], [10, 10, 10]])
def test_the_reference_batch_numbers_are_what_collate_builds(lengths):
    batch = collate([([4] * n, [5] * n) for n in lengths])
    want = (tuple(batch.tgt_out.shape), batch.n_tokens, int((batch.tgt_in == 3).sum()))  # 3 = </s>
    assert sol.batch_numbers(lengths) == want


def test_batch_numbers_checker_passes_the_reference_and_every_form():
    assert ex.check_batch_numbers(sol.batch_numbers).passed

    def as_other_types(lengths):  # a torch.Size, a numpy count, a tensor count
        shape, n, eos = sol.batch_numbers(lengths)
        return torch.Size(shape), np.int64(n), torch.tensor(eos)

    assert ex.check_batch_numbers(as_other_types).passed


def with_mistake(kind):
    def batch_numbers(lengths):
        (b, t), n, eos = sol.batch_numbers(lengths)
        longest = max(lengths)
        return {
            "tgt shape": ((b, t + 1), n, eos),
            "no </s> column": ((b, t - 1), n, eos),
            "counts <s>": ((b, t), n + b, eos),
            "forgets </s>": ((b, t), n - b, eos),
            "counts pads": ((b, t), b * t, eos),
            "one longest only": ((b, t), n, sum(1 for k in lengths) - 1 if lengths.count(longest) > 1 else eos),
            "two things": ((b, t), n),
        }[kind]

    return batch_numbers


@pytest.mark.parametrize(
    "kind, hint",
    [
        ("tgt shape", "shape of tgt itself"),
        ("no </s> column", "one more column"),
        ("counts <s>", "counts <s>"),
        ("forgets </s>", "forgets </s>"),
        ("counts pads", "counts the padding"),
        ("one longest only", "share the longest length"),
        ("two things", "should return three things"),
    ],
)
def test_batch_numbers_checker_names_each_mistake(kind, hint):
    result = ex.check_batch_numbers(with_mistake(kind))
    assert not result.passed and hint in result.message


def test_batch_numbers_that_calls_collate_is_not_counted():
    def batch_numbers(lengths):
        batch = collate([([4] * n, [4] * n) for n in lengths])
        return tuple(batch.tgt_out.shape), batch.n_tokens, int((batch.tgt_in == 3).sum())

    result = ex.check_batch_numbers(batch_numbers)
    assert not result.passed and "collate" in result.message and "not counted as yours" in result.message


def test_batch_numbers_checker_refuses_a_value():
    result = ex.check_batch_numbers((4, 10))
    assert not result.passed and "should be a function" in result.message


# --- exercise 2: expose the bug with an input of your own -------------------------------------------------


def test_the_suspect_loss_is_right_on_ordinary_inputs_with_pads():
    g = torch.Generator().manual_seed(1)
    logits, target = torch.randn(3, 5, 7, generator=g) * 4, torch.randint(0, 7, (3, 5), generator=g)
    target[0, 0] = 1  # at least one real token
    right = F.cross_entropy(logits.reshape(-1, 7), target.reshape(-1), label_smoothing=0.1, ignore_index=PAD)
    torch.testing.assert_close(ex.suspect_label_smoothing_loss(logits, target), right)


def test_the_reference_input_exposes_the_bug():
    assert not torch.isfinite(ex.suspect_label_smoothing_loss(sol.LOGITS_INPUT, sol.TARGET_INPUT))
    assert ex.check_exposes_bug(sol.LOGITS_INPUT, sol.TARGET_INPUT).passed


@pytest.mark.parametrize(
    "logits, target",
    [
        (torch.tensor([[[0.0, -150.0, 0.0, 0.0]]]), torch.tensor([[2]])),  # the gap below, target a normal word
        (
            torch.tensor([[[800.0, 0.0], [1.0, 2.0]]], dtype=torch.float64),
            torch.tensor([[1, 0]]),
        ),  # float64: a gap > 745
    ],
)
def test_exposes_bug_checker_accepts_other_exposing_inputs(logits, target):
    assert ex.check_exposes_bug(logits, target).passed


@pytest.mark.parametrize(
    "logits, target, hint",
    [
        (torch.randn(2, 3, 5), torch.tensor([[1, 2, 0], [3, 0, 0]]), "the bug does not show"),
        (torch.randn(1, 2, 5), torch.zeros(1, 2, dtype=torch.long), "every target is a pad"),
        (torch.tensor([[[float("inf"), 0.0]]]), torch.tensor([[1]]), "inf or nan"),
        (torch.randn(2, 5), torch.tensor([1, 2]), "float tensor (batch, T, V)"),
        (torch.randn(1, 2, 5), torch.tensor([[1.0, 2.0]]), "long tensor"),
        (torch.randn(1, 2, 5), torch.tensor([[1, 2, 3]]), "one target id per"),
        (torch.randn(1, 2, 5), torch.tensor([[1, 9]]), "must lie in [0, V = 5)"),
    ],
    ids=["no bug shows", "all pads", "non-finite logits", "2-D logits", "float target", "shapes", "id too large"],
)
def test_exposes_bug_checker_names_each_mistake(logits, target, hint):
    result = ex.check_exposes_bug(logits, target)
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
    assert ex.QUESTIONS["q3"].unlock(25_000 * 100_000)["right"]  # §5.1 tokens per batch × §5.2 steps


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
        ex.check_batch_numbers(...),
        ex.check_exposes_bug(..., ...),
        ex.check_loss_floor(...),
        ex.check_peak(..., ...),
    ]
    for result in results:
        assert not result.passed and "not done yet" in result.message
    assert not ex.check_quiz(q1=..., q2=..., q3=...).passed

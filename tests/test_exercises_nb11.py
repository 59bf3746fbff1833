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


# ---- exercise 2: which part of BLEU moved -----------------------------------------------------------


@pytest.mark.parametrize("form", [list, tuple, np.array, torch.tensor], ids=lambda f: f.__name__)
def test_bleu_change_checker_passes_every_sequence_form(form):
    assert ex.check_bleu_change(lambda before, after: form(sol.bleu_change(before, after))).passed


def test_the_parts_add_up_to_sacrebleus_change_on_real_sentences():
    """Independent of the formula: sacreBLEU scores two outputs of the same references (a short, precise one and a
    longer one), and the five parts add up to the log of the ratio of its two scores."""
    from sacrebleu.metrics import BLEU

    refs = ["a dog is running on the green grass .", "two men play music on a busy street ."]
    long = ["a dog runs on the green grass in the park .", "two men are playing music on a street ."]
    short = ["a dog running on the green grass .", "two men play music on a street ."]
    scores = [BLEU().corpus_score(hyps, [refs]) for hyps in (long, short)]
    assert all(all(s.counts) for s in scores) and scores[1].sys_len < scores[1].ref_len  # no smoothing; a penalty
    runs = [(s.counts, s.totals, s.sys_len, s.ref_len) for s in scores]
    parts = sol.bleu_change(*runs)
    assert len(parts) == 5 and math.isclose(sum(parts), math.log(scores[1].score / scores[0].score), rel_tol=1e-9)
    assert parts[0] < 0  # the shorter output pays in the brevity part


def quarter_logs(run):
    correct, total, sys_len, ref_len = run
    return [0.0 if sys_len > ref_len else 1 - ref_len / sys_len] + [math.log(c / t) / 4 for c, t in zip(correct, total)]


def penalty(s, r):
    return 1.0 if s > r else math.exp(1 - r / s)


@pytest.mark.parametrize(
    "mistake, words",
    [
        (
            lambda b, a: (
                [penalty(*a[2:]) - penalty(*b[2:])] + [a[0][n] / a[1][n] - b[0][n] / b[1][n] for n in range(4)]
            ),
            ["product", "take logs"],
        ),
        (lambda b, a: [x * 4 if i else x for i, x in enumerate(sol.bleu_change(b, a))], ["quarter of its log"]),
        (
            lambda b, a: (
                [penalty(*a[2:]) / penalty(*b[2:])]
                + [(a[0][n] / a[1][n] * b[1][n] / b[0][n]) ** 0.25 for n in range(4)]
            ),
            ["ratios multiply"],
        ),
        (lambda b, a: sol.bleu_change(a, b), ["swapped"]),
        (lambda b, a: [x / math.log(10) for x in sol.bleu_change(b, a)], ["natural logs"]),
        (
            lambda b, a: [
                (0.0 if a[2] > a[3] else 1 - a[2] / a[3]) - (0.0 if b[2] > b[3] else 1 - b[2] / b[3]),
                *sol.bleu_change(b, a)[1:],
            ],
            ["upside down"],
        ),
        (lambda b, a: [0.0] + [x + sol.bleu_change(b, a)[0] / 4 for x in sol.bleu_change(b, a)[1:]], ["split"]),
        (lambda b, a: [0.0, 0.0, 0.0, 0.0, 1.0], ["add up to ln"]),
        (lambda b, a: sol.bleu_change(b, a)[:4], ["5 items"]),
    ],
    ids=["differences", "no-quarter", "ratios", "swapped", "log10", "upside-down", "split", "other", "four"],
)
def test_bleu_change_checker_names_each_mistake(mistake, words):
    assert failed_with(ex.check_bleu_change(mistake), *words)


def test_bleu_change_checker_names_a_checker_helper_as_not_yours():
    assert failed_with(ex.check_bleu_change(ex._parts), "not counted as yours")


# ---- exercise 3: batches by length ------------------------------------------------------------------


def padded(lengths, batches):
    return sum(len(b) * max(lengths[i] for i in b) for b in batches)


def test_the_reference_batches_keep_every_rule_on_the_checker_cases():
    for lengths, max_tokens in ex._length_cases():
        batches = sol.length_batches(lengths, max_tokens)
        assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
        assert all(len(b) * max(lengths[i] for i in b) <= max_tokens for b in batches)
        assert 1 - sum(lengths) / padded(lengths, batches) <= ex._MAX_PADDING


@pytest.mark.parametrize("form", [list, tuple], ids=["lists", "tuples"])
def test_length_batches_checker_passes_every_form(form):
    assert ex.check_length_batches(lambda L, M: form(form(b) for b in sol.length_batches(L, M))).passed


def test_length_batches_checker_accepts_longest_first():
    def longest_first(lengths, max_tokens):
        batches = sol.length_batches([-n for n in lengths], max_tokens * 10**6)  # only the order: longest first
        order = [i for b in batches for i in b]
        out, batch = [], []
        for i in order:
            if batch and (len(batch) + 1) * max(lengths[j] for j in [*batch, i]) > max_tokens:
                out.append(batch)
                batch = []
            batch.append(i)
        return [*out, batch]

    assert ex.check_length_batches(longest_first).passed


def unsorted(lengths, max_tokens):
    out, batch = [], []
    for i in range(len(lengths)):  # in the given order: short and long sentences mixed
        if batch and (len(batch) + 1) * max(lengths[j] for j in [*batch, i]) > max_tokens:
            out.append(batch)
            batch = []
        batch.append(i)
    return [*out, batch]


def real_tokens_only(lengths, max_tokens):
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    out, batch = [], []
    for i in order:  # counts the real tokens, not the padded rectangle
        if batch and sum(lengths[j] for j in batch) + lengths[i] > max_tokens:
            out.append(batch)
            batch = []
        batch.append(i)
    return [*out, batch]


def fixed_size(lengths, max_tokens):
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    size = max_tokens // max(lengths)  # safe for the longest, wasteful for the rest
    return [order[k : k + size] for k in range(0, len(order), size)]


@pytest.mark.parametrize(
    "mistake, words",
    [
        (unsorted, ["sort the sentences by length"]),
        (real_tokens_only, ["sentences × longest, padding included"]),
        (fixed_size, ["fill each batch"]),
        (lambda L, M: [sol.length_batches(L, M)[0], *sol.length_batches(L, M)], ["more than one batch"]),
        (lambda L, M: sol.length_batches(L, M)[1:], ["in no batch"]),
        (lambda L, M: [[L[i] for i in b] for b in sol.length_batches(L, M)], ["lengths", "indices"]),
        (lambda L, M: [*sol.length_batches(L, M), []], ["is empty"]),
        (lambda L, M: "batches", ["tuple or a list"]),
    ],
    ids=["unsorted", "real-tokens-only", "fixed-size", "duplicate", "lost", "lengths", "empty", "string"],
)
def test_length_batches_checker_names_each_mistake(mistake, words):
    assert failed_with(ex.check_length_batches(mistake), *words)


def test_length_batches_checker_names_the_package_sampler_as_not_yours():
    from transformer_course import data

    def with_the_sampler(lengths, max_tokens):
        list(data.TokenBatchSampler([(n, 0) for n in lengths], max_tokens, shuffle=False))
        return sol.length_batches(lengths, max_tokens)

    assert failed_with(ex.check_length_batches(with_the_sampler), "not counted as yours")


# ---- questions and stubs ----------------------------------------------------------------------------


def test_the_solutions_answer_every_question():
    assert ex.check_quiz(**sol.QUIZ).passed and set(sol.QUIZ) == set(ex.QUESTIONS)


@pytest.mark.parametrize("form", [int, float, np.int64, torch.tensor], ids=lambda f: f.__name__)
def test_quiz_accepts_every_number_form(form):
    assert ex.check_quiz(q2=form(64000)).passed


@pytest.mark.parametrize(
    "form", [float, np.float32, torch.tensor, lambda x: 12 / 100], ids=["float", "float32", "tensor", "12 over 100"]
)
def test_quiz_accepts_every_fraction_form(form):
    assert ex.check_quiz(q1=form(0.12)).passed


@pytest.mark.parametrize(
    "answers, words",
    [
        ({"q1": 0.88}, ["fraction of real tokens"]),
        ({"q1": 120}, ["number of padded positions"]),
        ({"q1": 120 / 880}, ["not by the real tokens"]),
        ({"q2": 32000}, ["accumulate = 2"]),
        ({"q2": 16000}, ["one GPU with accumulate"]),
        ({"q2": 8000}, ["one GPU's batch"]),
        ({"q3": "a"}, ["no number near 100,000"]),
        ({"q3": "c"}, ["does not clamp"]),
    ],
)
def test_quiz_names_each_mistake(answers, words, capsys):
    assert not ex.check_quiz(**answers).passed
    assert all(w in capsys.readouterr().out for w in words)


def test_checkers_report_a_stub_as_not_done_yet():
    for check in (ex.check_update_average, ex.check_bleu_change, ex.check_length_batches):
        assert failed_with(check(not_done), "not done yet")


def test_a_float16_cast_of_100000_is_inf_and_a_bfloat16_one_is_finite():
    """q3's premise, as PyTorch computes it."""
    assert torch.isinf(torch.tensor(1e5).half()) and torch.tensor(1e5).bfloat16().item() == 99840


# ---- no attribute of the checker module passes a checker ---------------------------------------------


@pytest.mark.parametrize("name", sorted(vars(ex)))
def test_no_attribute_of_the_module_passes_a_checker(name):
    value = getattr(ex, name)
    for checker in (ex.check_update_average, ex.check_bleu_change, ex.check_length_batches):
        assert not checker(value).passed, name
    assert not ex.check_quiz(q1=value, q2=value, q3=value).passed, name

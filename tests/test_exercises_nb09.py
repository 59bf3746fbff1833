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


# --- exercise 1: design a table -----------------------------------------------------------------------


def table(**rows):
    """The reference table with some rows replaced."""
    return {**sol.TABLE_DESIGN, **rows}


def test_table_model_gives_the_table_as_next_word_distribution():
    probs = torch.tensor([[0.5, 0.5], [0.1, 0.9]])
    model = ex._TableModel(probs)
    hidden = model.decode(None, None, torch.tensor([[1, 0]]), None)  # (1, 2, 2)
    torch.testing.assert_close(model.generator(hidden).log_softmax(-1).exp()[0], probs[[1, 0]])


def test_the_reference_table_passes():
    assert ex.check_table_design(sol.TABLE_DESIGN).passed


def test_the_reference_table_decodes_as_its_comment_says():
    """Greedy A </s>, beam k = 2 B </s>, beam k = 3 C </s> (the most likely sentence, P = 0.19)."""
    from transformer_course.decode import beam_search, greedy_decode

    model = ex._TableModel(ex._as_table(sol.TABLE_DESIGN).float())
    src, mask = torch.tensor([[4]]), torch.ones(1, 1, 1, 1, dtype=torch.bool)
    assert ex._sentence(greedy_decode(model, src, mask, 8, 2, 3)[0].tolist()) == ("A", "</s>")
    for k, first in ((2, "B"), (3, "C")):
        out = beam_search(model, src, mask, 8, 2, 3, beam_size=k, length_penalty=0.0)[0].tolist()
        assert ex._sentence(out) == (first, "</s>")


def test_table_checker_accepts_numpy_and_tensor_probabilities_and_left_out_words():
    rows = {row: {w: np.float64(p) for w, p in nexts.items()} for row, nexts in sol.TABLE_DESIGN.items()}
    assert ex.check_table_design(rows).passed
    rows["C"] = {"</s>": torch.tensor(0.95), "A": 0.05}  # B and C left out: probability 0
    assert ex.check_table_design(rows).passed


# the section-4 table of the notebook: greedy A C </s> (0.12), beam k = 2 already finds B </s> (0.36)
SECTION_4 = {
    "<s>": {"A": 0.5, "B": 0.4, "C": 0.1},
    "A": {"</s>": 0.1, "A": 0.3, "B": 0.2, "C": 0.4},
    "B": {"</s>": 0.9, "A": 0.05, "B": 0.03, "C": 0.02},
    "C": {"</s>": 0.6, "A": 0.2, "B": 0.1, "C": 0.1},
}


@pytest.mark.parametrize(
    "design, words",
    [
        (SECTION_4, ["k = 2 already finds the most likely", "ranked third"]),
        (table(A={"</s>": 0.9, "A": 0.1}), ["greedy decoding already writes the most likely"]),
        (table(B={"</s>": 0.1, "A": 0.3, "B": 0.3, "C": 0.3}), ["k = 2 writes what greedy writes"]),
        (table(A={"A": 1.0}), ["no '</s>'"]),
        (table(A={"</s>": 0.5, "A": 0.2}), ["sums to 0.7"]),
        (table(A={"</s>": 1.2, "A": -0.2}), ["between 0 and 1"]),
        (table(A={"<s>": 0.4, "A": 0.6}), ["not words"]),
        ({k: v for k, v in sol.TABLE_DESIGN.items() if k != "B"}, ["no row for ['B']"]),
        (table(**{"</s>": {"</s>": 1.0}}), ["no row"]),
        ([["A", 0.5]], ["should be a dict"]),
    ],
    ids=[
        "section-4-table",
        "greedy-is-best",
        "beam-equals-greedy",
        "never-ends",
        "row-sum",
        "negative",
        "unknown-word",
        "missing-row",
        "eos-row",
        "not-a-dict",
    ],
)
def test_table_checker_names_each_mistake(design, words):
    assert failed_with(ex.check_table_design(design), *words)


def test_table_checker_names_k3_missing_the_best():
    # A </s> (0.129) is the most likely sentence, but at step 2 it ranks 4th (after C C, A B, C B): even k = 3 drops it
    design = {
        "<s>": {"A": 0.43, "B": 0.19, "C": 0.38},
        "A": {"</s>": 0.3, "A": 0.26, "B": 0.36, "C": 0.08},
        "B": {"</s>": 0.39, "A": 0.33, "B": 0.18, "C": 0.1},
        "C": {"</s>": 0.15, "A": 0.03, "B": 0.39, "C": 0.43},
    }
    assert failed_with(ex.check_table_design(design), "k = 3 writes", "not the most likely sentence A </s>")


def test_table_checker_blank_is_not_done_yet():
    assert failed_with(ex.check_table_design(...), "not done yet")


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
    for log_s, n_s, log_l, n_l in ex._CROSSOVER_CASES:
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


def test_crossover_checker_catches_a_search_over_a_fixed_range():
    def bisection(log_s, n_s, log_l, n_l):  # a search on [0, 10]: right where the crossover lies inside
        low, high = 0.0, 10.0
        for _ in range(100):
            mid = (low + high) / 2
            if log_s / gnmt_length_penalty(n_s, mid) > log_l / gnmt_length_penalty(n_l, mid):
                low = mid
            else:
                high = mid
        return (low + high) / 2

    assert failed_with(ex.check_crossover_alpha(bisection), "beyond 10", "formula")


def test_crossover_checker_accepts_an_exact_search_with_the_package_penalty():
    """Any way to the right α is the learner's own; gnmt_length_penalty (transformer_course.decode) is allowed."""

    def wide_search(log_s, n_s, log_l, n_l):
        low, high = 0.0, 100.0
        for _ in range(200):
            mid = (low + high) / 2
            if log_s / gnmt_length_penalty(n_s, mid) > log_l / gnmt_length_penalty(n_l, mid):
                low = mid
            else:
                high = mid
        return (low + high) / 2

    assert ex.check_crossover_alpha(wide_search).passed


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
        (lambda b, L, h, d, t, s: 2 * L * b * h * d * (t - 1 + s), ["not t − 1"]),
        (lambda b, L, h, d, t, s: 2 * L * b * h * d * (2 * t), ["src_len, not t"]),
    ],
    ids=["keys-only", "self-only", "one-layer", "t-plus-one", "t-minus-one", "cross-of-length-t"],
)
def test_cache_checker_names_each_mistake(mistake, words):
    assert failed_with(ex.check_cache_numbers(mistake), *words)


@pytest.mark.parametrize("case", ex._CACHE_CASES)
def test_every_cache_mistake_gives_its_own_number_on_each_case(case):
    """A hint is named by the number it gives: two mistakes with one number would blame the wrong one."""
    b, L, h, d, t, s = case
    values = [
        2 * L * b * h * d * (t + s),  # right
        L * b * h * d * (t + s),
        2 * L * b * h * d * t,
        2 * b * h * d * (t + s),
        2 * L * b * h * d * (t + 1 + s),
        2 * L * b * h * d * (t - 1 + s),
        2 * L * b * h * d * (2 * t),
    ]
    assert len(set(values)) == len(values)


def test_cache_checker_wants_a_closed_form_on_a_model_too_large_to_build():
    def right_when_small(b, L, h, d, t, s):
        return 2 * L * b * h * d * (t + s) if L < 10 else 2 * L * b * h * d * t

    assert failed_with(ex.check_cache_numbers(right_when_small), "cannot be built", "formula")


def test_cache_checker_names_counting_the_package_cache_as_not_yours():
    from transformer_course.model import make_model

    def count_the_package(b, L, h, d, t, s):
        make_model(11, 11, N=L, d_model=h * d, d_ff=8, h=h)
        return 2 * L * b * h * d * (t + s)

    assert failed_with(ex.check_cache_numbers(count_the_package), "not counted as yours")


# --- questions and stubs -------------------------------------------------------------------------------


def test_the_solutions_answer_every_question():
    assert ex.check_quiz(**sol.QUIZ).passed and set(sol.QUIZ) == set(ex.QUESTIONS) - {"cache_big"}  # the checker's


@pytest.mark.parametrize(
    "answers, words",
    [
        ({"q1": "a"}, ["reads the words written after it"]),
        ({"q1": "c"}, ["does not change while the output grows"]),
        ({"q2": 6190}, ["one prefix"]),
        ({"q2": 16}, ["every word"]),
        ({"q3": "a"}, ["holds for α = 0 only"]),
        ({"q3": "c"}, ["beam size does not enter"]),
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


def test_top_k_checker_names_a_package_function_as_not_yours():
    from transformer_course.decode import gnmt_length_penalty as package_function

    def with_the_package(beam_log_probs, next_log_probs, k):
        package_function(1, 0.0)
        return sol.top_k_extensions(beam_log_probs, next_log_probs, k)

    assert failed_with(ex.check_top_k_extensions(with_the_package), "not counted as yours")


# --- no attribute of the checker module passes a checker -------------------------------------------


CHECKERS = {
    "check_table_design": 1,
    "check_top_k_extensions": 1,
    "check_crossover_alpha": 1,
    "check_cache_numbers": 1,
}


@pytest.mark.parametrize("name", sorted(vars(ex)))
def test_no_attribute_of_the_module_passes_a_checker(name):
    value = getattr(ex, name)
    for checker, arity in CHECKERS.items():
        assert not getattr(ex, checker)(*[value] * arity).passed, (name, checker)
    assert not ex.check_quiz(q1=value, q2=value, q3=value).passed, name


def test_checkers_leave_the_global_random_state_as_they_found_it():
    """check_cache_numbers seeds torch to build its models; the learner's generator must not notice."""
    import random

    torch.manual_seed(123)
    random.seed(123)
    before, python_before = torch.get_rng_state(), random.getstate()
    ex.check_cache_numbers(sol.cache_numbers)
    ex.check_table_design(sol.TABLE_DESIGN)
    ex.check_top_k_extensions(sol.top_k_extensions)
    assert torch.equal(torch.get_rng_state(), before) and random.getstate() == python_before

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
    assert ex._captured_shapes() == {"encoder": (4, 6, 6), "decoder": (4, 5, 5), "cross": (4, 5, 6)}


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


# ---- exercise 2: head focus under a mask --------------------------------------------------------------


def entropy_rows(w):
    return -torch.where(w > 0, w * w.clamp_min(1e-30).log(), 0.0).sum(-1)  # (h, q)


def test_head_focus_checker_passes_the_solution_float64_and_another_base():
    assert ex.check_head_focus(sol.head_focus).passed
    assert ex.check_head_focus(lambda w, m: sol.head_focus(w.double(), m)).passed

    def bits(w, m):  # H and n in one base: the same ratio
        h = -torch.where(w > 0, w * w.clamp_min(1e-30).log2(), 0.0).sum(-1)
        n = m.sum(-1)
        return (1 - h[:, n > 1] / n[n > 1].float().log2()).mean(-1)

    assert ex.check_head_focus(bits).passed


def test_a_uniform_causal_head_has_focus_zero_though_its_entropy_is_small():
    """What the exercise is about, by brute force: rows uniform over 1 … 5 keys have entropy ln 1 … ln 5."""
    mask = torch.ones(5, 5, dtype=torch.bool).tril()
    uniform = (mask / mask.sum(-1, keepdim=True))[None]  # (1, 5, 5)
    entropy = sum(math.log(n) for n in range(1, 6)) / 5
    assert math.isclose(float(entropy_rows(uniform).mean()), entropy, rel_tol=1e-6)
    assert abs(float(sol.head_focus(uniform, mask)[0])) < 1e-6


def test_head_focus_checker_names_the_package_function_as_not_yours():
    """viz.stats.attention_entropy is the package's: a focus built on it is not the learner's."""
    assert failed_with(
        ex.check_head_focus(lambda w, m: 1 - attention_entropy(w)), "attention_entropy", "not counted as yours"
    )


def with_one_key(value):
    def focus(w, m):
        n = m.sum(-1)
        rows = torch.where(n > 1, 1 - entropy_rows(w) / n.clamp_min(2).log(), torch.tensor(value))
        return rows.mean(-1)

    return focus


@pytest.mark.parametrize(
    ("wrong", "words"),
    [
        (lambda w, m: entropy_rows(w).mean(-1), ["entropy itself"]),
        (lambda w, m: (entropy_rows(w)[:, m.sum(-1) > 1] / m.sum(-1)[m.sum(-1) > 1].log()).mean(-1), ["1 minus"]),
        (lambda w, m: (1 - entropy_rows(w)[:, m.sum(-1) > 1] / math.log(m.size(-1))).mean(-1), ["ln k_len"]),
        (with_one_key(1.0), ["one key", "as 1"]),
        (with_one_key(0.0), ["one key", "as 0"]),
        (lambda w, m: (1 - entropy_rows(w) / m.sum(-1).log()).mean(-1), ["NaN", "0 / ln 1"]),
        (lambda w, m: (1 + (w * w.log()).sum(-1) / m.sum(-1).log()).nanmean(-1), ["NaN", "0 · ln 0"]),
        (
            lambda w, m: (1 - entropy_rows(w)[:, m.sum(-1) > 1] / m.sum(-1)[m.sum(-1) > 1].log2()).mean(-1),
            ["bases"],
        ),
        (lambda w, m: (1 - entropy_rows(w)[:, m.sum(-1) > 1] / m.sum(-1)[m.sum(-1) > 1].log()).sum(-1), ["summed"]),
    ],
    ids=[
        "entropy",
        "no-one-minus",
        "ln-k-len",
        "one-key-as-1",
        "one-key-as-0",
        "nan-one-key",
        "nan-zero",
        "bases",
        "sum",
    ],
)
def test_head_focus_checker_names_each_mistake(wrong, words):
    assert failed_with(ex.check_head_focus(wrong), *words)


def test_head_focus_checker_reports_a_stub_as_not_done():
    def stub(w, m):
        raise NotImplementedError

    assert failed_with(ex.check_head_focus(stub), "not done yet")


# ---- exercise 3: attention rollout ------------------------------------------------------------------


def by_brute_force(layers):
    """R[i, j] = the sum over every path i → k_L-1 → … → j of the product of the Ā entries, one path at a time."""
    S = layers[0].size(-1)
    bars = [0.5 * w.double().mean(0) + 0.5 * torch.eye(S, dtype=torch.float64) for w in layers]
    R = torch.zeros(S, S, dtype=torch.float64)
    import itertools

    for path in itertools.product(range(S), repeat=len(layers) + 1):  # path[0] = top position, path[-1] = token
        weight = 1.0
        for step, bar in enumerate(reversed(bars)):
            weight *= float(bar[path[step], path[step + 1]])
        R[path[0], path[-1]] += weight
    return R


def test_the_reference_rollout_sums_every_path_through_the_layers():
    g = torch.Generator().manual_seed(1)
    layers = [torch.randn(2, 4, 4, generator=g).softmax(-1) for _ in range(3)]
    torch.testing.assert_close(sol.rollout(layers).double(), by_brute_force(layers))
    torch.testing.assert_close(sol.rollout(layers).sum(-1), torch.ones(4))  # each row a distribution


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_rollout_checker_passes_the_solution_in_any_float_dtype(dtype):
    assert ex.check_rollout(lambda layers: sol.rollout([w.to(dtype) for w in layers])).passed


def test_rollout_checker_accepts_a_renormalised_a_plus_i():
    def renormalised(layers):
        out = torch.eye(layers[0].size(-1))
        for w in layers:
            bar = w.mean(0) + torch.eye(w.size(-1))
            out = (bar / bar.sum(-1, keepdim=True)) @ out
        return out

    assert ex.check_rollout(renormalised).passed


def product(matrices):
    out = torch.eye(matrices[0].size(-1))
    for m in matrices:
        out = out @ m
    return out


@pytest.mark.parametrize(
    "mistake, words",
    [
        (lambda L: product([0.5 * w.mean(0) + 0.5 * torch.eye(w.size(-1)) for w in L]), ["wrong order"]),
        (lambda L: product([w.mean(0) for w in reversed(L)]), ["residual connection is missing"]),
        (lambda L: product([w.mean(0) + torch.eye(w.size(-1)) for w in reversed(L)]), ["2^layers"]),
        (
            lambda L: product([0.5 * w.max(0).values + 0.5 * torch.eye(w.size(-1)) for w in reversed(L)]),
            ["maximum over the heads"],
        ),
        (lambda L: 0.5 * L[-1].mean(0) + 0.5 * torch.eye(L[-1].size(-1)), ["last layer alone"]),
        (
            lambda L: torch.stack([product([0.5 * w[h] + 0.5 * torch.eye(5) for w in reversed(L)]) for h in range(3)]),
            ["one rollout per head"],
        ),
    ],
    ids=["wrong-order", "no-residual", "rows-sum-to-2^L", "max-over-heads", "last-layer-only", "per-head"],
)
def test_rollout_checker_names_each_mistake(mistake, words):
    assert failed_with(ex.check_rollout(mistake), *words)


def test_rollout_checker_names_a_package_function_as_not_yours():
    from transformer_course.viz import stats

    def with_the_package(layers):
        stats.attention_entropy(layers[0])
        return sol.rollout(layers)

    assert failed_with(ex.check_rollout(with_the_package), "not counted as yours")


def test_rollout_checker_reports_a_stub_as_not_done():
    def stub(layers):
        raise NotImplementedError

    assert failed_with(ex.check_rollout(stub), "not done yet")


# ---- questions --------------------------------------------------------------------------------------


def test_the_solutions_answer_every_question():
    assert ex.check_quiz(**sol.QUIZ).passed and set(sol.QUIZ) == set(ex.QUESTIONS)


@pytest.mark.parametrize(
    "form", [float, np.float32, torch.tensor, lambda x: round(x, 3)], ids=["float", "float32", "tensor", "rounded"]
)
def test_quiz_accepts_every_number_form(form):
    assert ex.check_quiz(q1=form(math.lgamma(9) / 8), q2=form(0.5 * math.log(28))).passed


@pytest.mark.parametrize(
    "answers, words",
    [
        ({"q1": math.log(8)}, ["only the i + 1 positions"]),
        ({"q1": math.lgamma(9)}, ["sum over the rows"]),
        ({"q1": math.lgamma(9) / 8 / math.log(2)}, ["bits"]),
        ({"q2": 0.5 * math.log(28) / math.log(2)}, ["bits"]),
        ({"q2": math.log(8)}, ["uniform row"]),
        ({"q2": 0.5 * math.log(14)}, ["weight 0.5 counts too"]),
        ({"q2": 0.5 * math.log(2)}, ["7 other keys"]),
        ({"q3": "a"}, ["does not need it alone"]),
        ({"q3": "c"}, ["heatmap is right"]),
    ],
)
def test_quiz_names_each_mistake(answers, words, capsys):
    assert not ex.check_quiz(**answers).passed
    assert all(w in capsys.readouterr().out for w in words)


# ---- no attribute of the checker module passes a checker ---------------------------------------------


@pytest.mark.parametrize("name", sorted(vars(ex)))
def test_no_attribute_of_the_module_passes_a_checker(name):
    value = getattr(ex, name)
    assert not ex.check_head_focus(value).passed, name
    assert not ex.check_rollout(value).passed, name
    assert not ex.check_capture_shapes(value, value, value).passed, name
    assert not ex.check_quiz(q1=value, q2=value, q3=value).passed, name


def test_checkers_leave_the_global_random_state_as_they_found_it():
    """check_capture_shapes seeds torch to build its model; the learner's generator must not notice."""
    torch.manual_seed(123)
    before = torch.get_rng_state()
    ex.check_capture_shapes(sol.ENCODER_SHAPE, sol.DECODER_SHAPE, sol.CROSS_SHAPE)
    ex.check_rollout(sol.rollout)
    assert torch.equal(torch.get_rng_state(), before)

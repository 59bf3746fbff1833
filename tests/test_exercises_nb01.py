"""Notebook 01's checkers: every allowed answer form passes, every named mistake fails with its hint.

Allowed mask forms (said in the notebook): a boolean tensor, or 0/1 numbers of any dtype, True/1 = may attend.
"""

import numpy as np
import pytest
import torch

import transformer_course as tc
from transformer_course.exercises import nb01_masks as ex

from helpers import solutions

sol = solutions("nb01_masks")  # notebooks/solutions/nb01_masks.py

MASK_FORMS = {
    "bool": lambda m: m,
    "uint8": lambda m: m.to(torch.uint8),
    "int64": lambda m: m.long(),
    "float32": lambda m: m.float(),
    "float64": lambda m: m.double(),
}


def failed_with(result, *words):
    return not result.passed and all(w.lower() in result.message.lower() for w in words)


def not_done(*args, **kwargs):
    raise NotImplementedError


def additive(mask):
    """The other convention: 0 where allowed, −inf where blocked (nn.Transformer's float masks)."""
    return torch.zeros(mask.shape).masked_fill(~mask.bool(), float("-inf"))


# --- exercise 1: the allowed pairs, a closed form --------------------------------------------------------


def test_the_closed_form_equals_the_package_target_mask_on_the_toy_batch_and_more():
    counts = tc.target_mask(ex.TOKENS, ex.PAD).sum(dim=(1, 2, 3)).tolist()
    assert counts == [sol.allowed_pairs(n, 5) for n in (3, 5, 1)] == [12, 15, 5]
    for length, max_len in ((4, 9), (1, 1), (7, 7), (2, 11)):
        tokens = torch.tensor([[5] * length + [ex.PAD] * (max_len - length)])
        assert int(tc.target_mask(tokens, ex.PAD).sum()) == sol.allowed_pairs(length, max_len)


@pytest.mark.parametrize("form", [int, float, np.int64, torch.tensor], ids=["int", "float", "numpy", "tensor"])
def test_allowed_pairs_checker_passes_every_number_form(form):
    assert ex.check_allowed_pairs(lambda length, max_len: form(sol.allowed_pairs(length, max_len))).passed


@pytest.mark.parametrize(
    "answer, words",
    [
        (lambda L, T: T * (T + 1) // 2, ["ignored the padding"]),
        (lambda L, T: T * L, ["causal"]),
        (lambda L, T: L * (L + 1) // 2, ["pad queries"]),
        (lambda L, T: L * (L - 1) // 2 + (T - L) * L, ["diagonal"]),
        (lambda L, T: L * T - 1, ["not right", "row by row"]),
    ],
    ids=["no-padding", "no-causal", "no-pad-queries", "no-diagonal", "other"],
)
def test_allowed_pairs_checker_names_each_mistake(answer, words):
    assert failed_with(ex.check_allowed_pairs(answer), *words)


def test_allowed_pairs_checker_stops_building_the_mask_and_says_not_done_for_the_blank():
    def built(length, max_len):
        return int(tc.target_mask(torch.tensor([[5] * length + [0] * (max_len - length)]), 0).sum())

    assert failed_with(ex.check_allowed_pairs(built), "max_len=1000000", "does not fit in memory")
    assert failed_with(ex.check_allowed_pairs(...), "not done yet")
    assert failed_with(ex.check_allowed_pairs(not_done), "not done yet")


# --- exercise 2: a mask from lengths -----------------------------------------------------------------


def test_mask_from_lengths_equals_the_package_padding_mask_of_padded_tokens():
    lengths = torch.tensor([2, 7, 4])
    tokens = torch.stack([torch.cat([torch.full((n,), 5), torch.zeros(7 - n, dtype=torch.long)]) for n in lengths])
    assert torch.equal(sol.mask_from_lengths(lengths, 7), tc.padding_mask(tokens, 0))


@pytest.mark.parametrize("form", MASK_FORMS.values(), ids=MASK_FORMS.keys())
def test_mask_from_lengths_checker_passes_every_mask_form(form):
    assert ex.check_mask_from_lengths(lambda lengths, max_len: form(sol.mask_from_lengths(lengths, max_len))).passed


@pytest.mark.parametrize(
    "mistake, words",
    [
        (lambda n, L: (torch.arange(L)[None] <= n[:, None])[:, None, None], ["one pad", "<"]),
        (lambda n, L: ~sol.mask_from_lengths(n, L), ["inverted"]),
        (lambda n, L: torch.arange(L)[None] < n[:, None], ["(batch, 1, 1, max_len)", "head and query"]),
        (lambda n, L: (torch.arange(L)[None] < n[:, None])[:, None, :, None], ["masks queries"]),
        (lambda n, L: additive(sol.mask_from_lengths(n, L)), ["additive"]),
        (lambda n, L: 2 * sol.mask_from_lengths(n, L).long(), ["other than 0 and 1"]),
        (lambda n, L: sol.mask_from_lengths(n, L).tolist(), ["torch.Tensor"]),
    ],
    ids=["less-or-equal", "inverted", "no-broadcast-axes", "query-axis", "additive", "zeros-and-twos", "a-list"],
)
def test_mask_from_lengths_checker_names_each_mistake(mistake, words):
    assert failed_with(ex.check_mask_from_lengths(mistake), *words)


# --- exercise 3: a centred window with padding -------------------------------------------------------


@pytest.mark.parametrize("form", MASK_FORMS.values(), ids=MASK_FORMS.keys())
def test_window_checker_passes_every_mask_form(form):
    assert ex.check_window_mask(lambda t, p, r: form(sol.window_mask(t, p, r))).passed


def band_mask(tokens, pad_idx, radius, keep):
    """window_mask with a different rule keep(i, j, real_i, real_j)."""
    size = tokens.size(1)
    i, j = torch.arange(size)[:, None], torch.arange(size)[None, :]
    real = tokens != pad_idx  # (batch, len)
    return keep(i[None], j[None], real[:, :, None], real[:, None, :], radius)[:, None]  # (batch, 1, len, len)


@pytest.mark.parametrize(
    "keep, words",
    [
        (lambda i, j, rq, rk, r: (i - j >= 0) & (i - j <= r) & rk, ["only the past"]),
        (lambda i, j, rq, rk, r: ((i - j).abs() < r) & rk, ["too narrow"]),
        (lambda i, j, rq, rk, r: ((i - j).abs() <= r + 1) & rk, ["too wide"]),
        (lambda i, j, rq, rk, r: ((i - j).abs() <= r).expand(rk.size(0), -1, -1), ["pads are looked at"]),
        (lambda i, j, rq, rk, r: ((i - j).abs() <= r) & rk & rq, ["pad queries", "NaN"]),
    ],
    ids=["causal-window", "narrow", "wide", "no-padding", "pad-queries"],
)
def test_window_checker_names_each_mistake(keep, words):
    assert failed_with(ex.check_window_mask(lambda t, p, r: band_mask(t, p, r, keep)), *words)


def test_window_checker_catches_a_hard_coded_pad_id():
    result = ex.check_window_mask(lambda t, p, r: sol.window_mask(t, 0, r))
    assert failed_with(result, "pad_idx, not with 0")


# --- exercise 4: a causal window ---------------------------------------------------------------------


@pytest.mark.parametrize("form", MASK_FORMS.values(), ids=MASK_FORMS.keys())
def test_local_mask_checker_passes_every_mask_form(form):
    assert ex.check_local_mask(lambda size, window: form(sol.local_mask(size, window))).passed


def test_local_mask_checker_names_each_mistake():
    def symmetric(size, window):
        i, j = torch.arange(size)[:, None], torch.arange(size)[None, :]
        return ((i - j).abs() < window)[None, None]

    def no_diagonal(size, window):
        return sol.local_mask(size, window) & ~torch.eye(size, dtype=torch.bool)

    assert failed_with(ex.check_local_mask(lambda size, window: sol.local_mask(size, window + 1)), "keys before it")
    assert failed_with(ex.check_local_mask(symmetric), "after it")
    assert failed_with(ex.check_local_mask(no_diagonal), "itself")
    assert failed_with(
        ex.check_local_mask(lambda size, window: sol.local_mask(size, window)[0, 0]), "(1, 1, size, size)"
    )
    assert failed_with(ex.check_local_mask(lambda s, w: additive(sol.local_mask(s, w))), "additive")
    assert failed_with(ex.check_local_mask(not_done), "not done yet")


# --- questions -----------------------------------------------------------------------------------------


def test_the_solutions_answer_every_question():
    assert ex.check_quiz(**sol.QUIZ).passed and set(sol.QUIZ) == set(ex.QUESTIONS)


@pytest.mark.parametrize("form", [int, float, np.int64, torch.tensor], ids=lambda f: f.__name__)
def test_quiz_accepts_every_number_form(form):
    assert ex.check_quiz(q3=form(2560)).passed


def test_key_padding_mask_given_the_course_mask_as_it_is_attends_to_the_2_pads_only():
    # the fact behind q1, from PyTorch: True = ignore, so the 3 words are hidden and the 2 pads remain
    mha = torch.nn.MultiheadAttention(8, 2, batch_first=True)
    x = torch.randn(1, 5, 8)
    src_mask = tc.padding_mask(ex.TOKENS[:1], ex.PAD)  # (1, 1, 1, 5): True on "the cat sat"
    _, weights = mha(x, x, x, key_padding_mask=src_mask[:, 0, 0])
    assert ((weights[0] > 0).sum(-1) == sol.QUIZ["q1"]).all()


def test_every_row_of_sentence_2_may_see_its_first_key():
    # the fact behind q2, from the package's target mask
    assert tc.target_mask(ex.TOKENS, ex.PAD)[2, 0, :, 0].all()


@pytest.mark.parametrize(
    "answers, words",
    [
        ({"q1": 3}, ["True means 'ignore'"]),
        ({"q1": 5}, ["which keys are False"]),
        ({"q1": 0}, ["still attended to"]),
        ({"q2": "a"}, ["every later row"]),
        ({"q2": "c"}, ["pad KEYS"]),
        ({"q3": 64 * 8 * 40 * 40}, ["size of the scores"]),
        ({"q3": 64 * 8 * 40}, ["head axis"]),
        ({"q3": 64 * 40 * 40}, ["query axis"]),
    ],
)
def test_quiz_names_each_mistake(answers, words, capsys):
    assert not ex.check_quiz(**answers).passed
    assert all(w in capsys.readouterr().out for w in words)


# --- no answer in reach ---------------------------------------------------------------------------------

CHECKERS = [ex.check_allowed_pairs, ex.check_mask_from_lengths, ex.check_window_mask, ex.check_local_mask]


@pytest.mark.parametrize("checker", CHECKERS, ids=lambda c: c.__name__)
def test_no_attribute_of_the_checker_module_passes_a_checker(checker):
    for name in dir(ex):
        if not name.startswith("__"):
            assert not checker(getattr(ex, name)).passed, f"ex.{name} passes {checker.__name__}"


def test_no_attribute_answers_a_question():
    for name in dir(ex):
        if not name.startswith("__"):
            assert not ex.check_quiz(q1=getattr(ex, name), q2=getattr(ex, name), q3=getattr(ex, name)).passed


def test_the_module_no_longer_exports_the_references():
    for gone in ("expected_allowed_pairs", "expected_window", "expected_local"):
        assert not hasattr(ex, gone)

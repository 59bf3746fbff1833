"""Notebook 12's checkers: the reference passes in every allowed form, every named mistake fails with its own hint."""

import math
import re

import pytest
import torch

from transformer_course.exercises import nb12_gpt_from_the_same_parts as ex
from transformer_course.sampling import filter_top_p

from helpers import failed_with, solutions

sol = solutions("nb12_gpt_from_the_same_parts")  # notebooks/solutions/nb12_gpt_from_the_same_parts.py


def not_done(*args, **kwargs):
    raise NotImplementedError


# --- exercise 1: the causal shift ------------------------------------------------------------------------------------


def test_the_reference_shift_passes():
    assert ex.check_next_token_pairs(sol.next_token_pairs).passed


@pytest.mark.parametrize(
    "pairs",
    [
        lambda ids: [ids[:, :-1], ids[:, 1:]],  # a list
        lambda ids: (ids[:, :-1].int(), ids[:, 1:].int()),  # another integer dtype
        lambda ids: (ids, torch.cat([ids[:, 1:], torch.full_like(ids[:, :1], -100)], dim=1)),  # last target ignored
        lambda ids: (ids, torch.nn.functional.pad(ids[:, 1:], (0, 1), value=0)),  # ignored as PAD
    ],
    ids=["list", "int32", "full-length-ignore-100", "full-length-pad"],
)
def test_every_correct_form_of_the_shift_passes(pairs):
    assert ex.check_next_token_pairs(pairs).passed


@pytest.mark.parametrize(
    "pairs, words",
    [
        (lambda ids: (ids[:, :-1], ids[:, :-1]), ["targets are the inputs themselves"]),
        (lambda ids: (ids, ids), ["targets are the inputs themselves"]),
        (lambda ids: (ids[:, 1:], ids[:, :-1]), ["the wrong way"]),
        (lambda ids: (ids[:, :-2], ids[:, 2:]), ["shifted by two"]),
        (lambda ids: (ids, ids.roll(-1, dims=1)), ["torch.roll wraps around"]),
        (lambda ids: (ids[:-1], ids[1:]), ["batch axis"]),
        (lambda ids: (ids[:, :-1], ids[:, 1:-1]), ["off-by-one"]),
        (lambda ids: (ids, ids[:, 1:]), ["off-by-one"]),
        (lambda ids: (ids, torch.cat([ids[:, 1:], ids[:, :1]], dim=1) * 0 + 5), ["ignored by the loss"]),
        (lambda ids: (ids[:, :-1].float(), ids[:, 1:].float()), ["integers"]),
        (lambda ids: ids[:, 1:], ["tuple or a list"]),
    ],
    ids=[
        "not-shifted",
        "not-shifted-full",
        "backwards",
        "by-two",
        "roll",
        "batch-axis",
        "lengths-differ",
        "targets-one-short",
        "last-not-ignored",
        "floats",
        "not-a-pair",
    ],
)
def test_shift_checker_names_each_mistake(pairs, words):
    assert failed_with(ex.check_next_token_pairs(pairs), *words)


def test_shift_checker_blank_is_not_done_yet():
    assert failed_with(ex.check_next_token_pairs(not_done), "not done yet")


def test_shift_checker_catches_the_packages_loss_as_a_shortcut():
    from transformer_course.model import lm_loss

    def through_the_package(ids):
        lm_loss(torch.zeros(*ids.shape, 50), ids)
        return ids[:, :-1], ids[:, 1:]

    assert failed_with(ex.check_next_token_pairs(through_the_package), "transformer_course.model.lm_loss")


# --- exercise 2: top-k ---------------------------------------------------------------------------------------------


def test_the_reference_top_k_passes():
    assert ex.check_top_k_filter(sol.top_k_filter).passed


def test_top_k_at_the_most_negative_float_passes():
    def finfo_min(logits, k):
        kth = logits.topk(k, dim=-1).values[:, -1:]
        return logits.masked_fill(logits < kth, torch.finfo(logits.dtype).min)

    assert ex.check_top_k_filter(finfo_min).passed


def keep_top(logits, n, fill=-math.inf):
    """Each row's n highest scores kept, the others ``fill`` (a test's own top-k, by sorting)."""
    order = logits.argsort(dim=-1, descending=True)  # (batch, V)
    keep = torch.zeros_like(logits, dtype=torch.bool).scatter(-1, order[:, : max(n, 0)], True)
    return logits.masked_fill(~keep, fill)


@pytest.mark.parametrize(
    "top_k_filter, words",
    [
        (lambda logits, k: keep_top(logits, k, fill=0.0), ["0 is a score"]),
        (lambda logits, k: keep_top(logits, k + 1), ["one token too many"]),
        (lambda logits, k: keep_top(logits, k - 1), ["one token too few"]),
        (lambda logits, k: -keep_top(-logits, k, fill=math.inf), ["lowest scores"]),
        (lambda logits, k: keep_top(logits.T, k).T, ["over the batch"]),
        (lambda logits, k: keep_top(logits, k).softmax(-1), ["returns probabilities"]),
        (lambda logits, k: keep_top(logits, k) * 2, ["changes the scores"]),
        (lambda logits, k: logits[:, :k], ["expected the shape of the logits"]),
        (lambda logits, k: logits.masked_fill(logits > 0, math.nan), ["NaN"]),
    ],
    ids=["zero", "k-plus-1", "k-minus-1", "smallest", "batch-axis", "probabilities", "scaled", "sliced", "nan"],
)
def test_top_k_checker_names_each_mistake(top_k_filter, words):
    assert failed_with(ex.check_top_k_filter(top_k_filter), *words)


def test_top_k_checker_catches_the_packages_filter():
    from transformer_course.sampling import filter_top_k

    assert failed_with(ex.check_top_k_filter(filter_top_k), "transformer_course.sampling.filter_top_k")


# --- exercise 3: top-p ---------------------------------------------------------------------------------------------


def test_the_reference_top_p_passes():
    assert ex.check_top_p_probs(sol.top_p_probs).passed


def test_top_p_as_filtered_logits_passes():
    def as_logits(logits, p):
        probs = sol.top_p_probs(logits, p)
        return logits.masked_fill(probs == 0, -math.inf)

    assert ex.check_top_p_probs(as_logits).passed


def test_top_p_cases_stay_clear_of_rounding():
    """No running sum of a case lies within 0.02 of its p (p < 1), and the cases hold a one-token nucleus, a
    peaked one of a few tokens and a flat one of most of the vocabulary."""
    sizes = set()
    for scale, p, seed in ex._TOP_P_CASES:
        logits = ex._top_p_logits(scale, seed)
        running = logits.double().softmax(-1).sort(-1, descending=True).values.cumsum(-1)
        if p < 1:
            assert (running - p).abs().min() > 0.02, (scale, p, seed)
        sizes |= set((filter_top_p(logits, p) > -math.inf).sum(-1).tolist())
    assert {1, ex._V} <= sizes and any(1 < n < 4 for n in sizes) and any(8 <= n < ex._V for n in sizes), sizes


def brute_force_nucleus(logits, p, extra=0, renormalise=True, sort=True):
    """Each row's nucleus, one token at a time: add the most probable tokens until their sum reaches p; ``extra``
    more (or fewer) tokens; the kept probabilities renormalised or not; ``sort=False`` adds them in vocabulary order."""
    probs = logits.double().softmax(-1)
    out = torch.zeros_like(probs)
    for row in range(probs.size(0)):
        order = probs[row].argsort(descending=True).tolist() if sort else list(range(probs.size(1)))
        total, n = 0.0, 0
        while total < p and n < len(order):
            total, n = total + float(probs[row, order[n]]), n + 1
        for i in order[: max(n + extra, 0)]:
            out[row, i] = probs[row, i]
    return out / out.sum(-1, keepdim=True) if renormalise else out


def test_the_brute_force_nucleus_is_the_packages():
    for scale, p, seed in ex._TOP_P_CASES:
        logits = ex._top_p_logits(scale, seed)
        torch.testing.assert_close(brute_force_nucleus(logits, p), filter_top_p(logits, p).double().softmax(-1))


def left_sorted(logits, p):
    return brute_force_nucleus(logits, p).sort(-1, descending=True).values


@pytest.mark.parametrize(
    "top_p_probs, words",
    [
        (lambda logits, p: brute_force_nucleus(logits, p, renormalise=False), ["sum to", "not to 1"]),
        (lambda logits, p: brute_force_nucleus(logits, p, extra=-1), ["one token too few"]),
        (lambda logits, p: brute_force_nucleus(logits, p, extra=1), ["one token too many"]),
        (lambda logits, p: brute_force_nucleus(logits, p, sort=False), ["vocabulary order"]),
        (left_sorted, ["sorted order"]),
        (lambda logits, p: logits.softmax(-1) * 0, ["keeps no token"]),
        (lambda logits, p: brute_force_nucleus(logits, p) * 1.5, ["sums to 1"]),
        (lambda logits, p: logits.softmax(-1)[:, :5], ["expected the shape of the logits"]),
    ],
    ids=["not-renormalised", "one-too-few", "one-too-many", "unsorted", "left-sorted", "empty", "scaled", "sliced"],
)
def test_top_p_checker_names_each_mistake(top_p_probs, words):
    assert failed_with(ex.check_top_p_probs(top_p_probs), *words)


def test_top_p_checker_catches_the_packages_filter():
    assert failed_with(ex.check_top_p_probs(filter_top_p), "transformer_course.sampling.filter_top_p")


# --- exercise 4: rotary positions -------------------------------------------------------------------------------


def test_the_reference_rope_passes():
    assert ex.check_rope(sol.rope).passed


def test_rope_in_float64_and_as_a_list_passes():
    assert ex.check_rope(lambda q, k, v, pos: [x.double() for x in sol.rope(q, k, v, pos)]).passed


def test_the_reference_rope_is_the_complex_number_form():
    """An independent reference: each pair (x[2i], x[2i+1]) is the complex number x[2i] + i·x[2i+1], multiplied by
    e^{i·position·θ_i}."""
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 2, 6, 8, generator=g, dtype=torch.float64) for _ in range(3))
    positions = torch.arange(3, 9)
    theta = 10000.0 ** (-torch.arange(0, 8, 2, dtype=torch.float64) / 8)  # (4,)
    turn = torch.polar(torch.ones(6, 4, dtype=torch.float64), positions[:, None].double() * theta)  # (6, 4)
    want = torch.view_as_real(torch.view_as_complex(q.reshape(1, 2, 6, 4, 2).contiguous()) * turn).flatten(-2)
    got_q, _, got_v = sol.rope(q.float(), k.float(), v.float(), positions)
    torch.testing.assert_close(got_q.double(), want, atol=1e-5, rtol=1e-5)
    assert torch.equal(got_v, v.float())


def halves(x, positions, base=10000.0):
    """x turned with features i and i + d/2 as pairs (the other pairing), written out."""
    d = x.size(-1)
    theta = base ** (-torch.arange(0, d, 2, dtype=torch.float32) / d)
    angle = positions.float()[:, None] * theta
    a, b = x[..., : d // 2], x[..., d // 2 :]
    return torch.cat([a * angle.cos() - b * angle.sin(), a * angle.sin() + b * angle.cos()], dim=-1)


def pairs(x, positions, base=10000.0):
    """x turned with neighbours (2i, 2i + 1) as pairs, written out in the test (not the solution's code)."""
    d = x.size(-1)
    out = x.clone()
    for i in range(d // 2):
        angle = positions.float() * base ** (-2 * i / d)  # (T,)
        c, s = angle.cos()[:, None], angle.sin()[:, None]
        x1, x2 = x[..., 2 * i : 2 * i + 1], x[..., 2 * i + 1 : 2 * i + 2]
        out[..., 2 * i : 2 * i + 1], out[..., 2 * i + 1 : 2 * i + 2] = x1 * c - x2 * s, x1 * s + x2 * c
    return out


def test_the_written_out_pairs_pass():
    assert ex.check_rope(lambda q, k, v, pos: (pairs(q, pos), pairs(k, pos), v)).passed


@pytest.mark.parametrize(
    "rope, words",
    [
        (lambda q, k, v, pos: (pairs(q, pos), pairs(k, pos), pairs(v, pos)), ["values are turned too"]),
        (lambda q, k, v, pos: (halves(q, pos), halves(k, pos), v), ["i + d_k/2", "(2i, 2i + 1)"]),
        (lambda q, k, v, pos: (pairs(q, pos - 4), pairs(k, pos - 4), v), ["start at 4"]),
        (lambda q, k, v, pos: (pairs(q, -pos), pairs(k, -pos), v), ["the wrong way"]),
        (lambda q, k, v, pos: (pairs(q, pos, 100.0), pairs(k, pos, 100.0), v), ["base^(−2i/d_k)"]),
        (lambda q, k, v, pos: (q, pairs(k, pos), v), ["q is not turned"]),
        (lambda q, k, v, pos: (pairs(q, pos), k, v), ["k is not turned"]),
        (lambda q, k, v, pos: (pairs(k, pos), pairs(q, pos), v), ["swapped"]),
        (lambda q, k, v, pos: (pairs(q, pos), pairs(k, pos)), ["3 items"]),
    ],
    ids=[
        "turns-v",
        "halves",
        "positions-ignored",
        "backwards",
        "frequencies",
        "q-not-turned",
        "k-not-turned",
        "swapped",
        "pair",
    ],  # fmt: skip
)
def test_rope_checker_names_each_mistake(rope, words):
    assert failed_with(ex.check_rope(rope), *words)


def test_rope_checker_catches_the_packages_rotation():
    from transformer_course.attention import rotate

    assert failed_with(ex.check_rope(lambda q, k, v, pos: (rotate(q, pos), rotate(k, pos), v)), "attention.rotate")


# --- the questions ---------------------------------------------------------------------------------------------------


def test_the_reference_answers_pass():
    assert ex.check_quiz(**sol.QUIZ).passed


@pytest.mark.parametrize(
    "answers, words",
    [
        ({"q1": "b"}, ["100 least likely"]),
        ({"q2": 0.2}, ["before the cut"]),
        ({"q2": 0.2 / 0.7}, ["only two tokens"]),
        ({"q2": 0.2 / 0.95}, ["four tokens"]),
        ({"q2": 0.25}, ["not by p"]),
        ({"q3": "a"}, ["do not move"]),
        ({"q3": "c"}, ["values are not turned"]),
    ],
)
def test_each_wrong_answer_gets_its_hint(answers, words, capsys):
    assert not ex.check_quiz(**answers).passed
    printed = capsys.readouterr().out.lower()
    assert "❌" in printed and all(w.lower() in printed for w in words), printed


def test_no_answer_or_explanation_is_in_the_checker_or_its_messages():
    from pathlib import Path

    folder = Path(ex.__file__).parent
    texts = [Path(ex.__file__).read_text(encoding="utf-8")]
    texts += [
        (folder / lang / "nb12_gpt_from_the_same_parts.json").read_text(encoding="utf-8") for lang in ("en", "zh")
    ]
    texts.append((folder / "questions" / "nb12_gpt_from_the_same_parts.json").read_text(encoding="utf-8"))
    assert not [text for text in texts if re.search(r"\b(0\.85|0\.235|900)\b", text)]

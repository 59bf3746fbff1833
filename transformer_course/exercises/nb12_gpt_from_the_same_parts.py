"""Checkers for the exercises of notebook 12 (a GPT from the same parts: the next-token loss, sampling, rotary
positions).

    from transformer_course.exercises import nb12_gpt_from_the_same_parts as ex
    ex.check_next_token_pairs(next_token_pairs)  # the causal shift: the inputs and targets of the next-token loss
    ex.check_top_k_filter(top_k_filter)          # top-k: the k highest logits kept, the others at −inf
    ex.check_top_p_probs(top_p_probs)            # nucleus (top-p): the distribution a draw is taken from
    ex.check_rope(rope)                          # rotary positions: queries and keys turned, values left alone
    ex.check_quiz(q1=..., q2=..., q3=...)

Each checker compares with the package's own version, bound at import: ``model.lm_loss`` (the shift),
``sampling.filter_top_k`` and ``sampling.filter_top_p`` (the filters) and ``attention.rotate`` (the rotation).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor

from ..attention import rotate as _PACKAGE_ROTATE  # the references, bound at import
from ..data import PAD
from ..i18n import messages
from ..model import lm_loss as _PACKAGE_LM_LOSS
from ..sampling import filter_top_k as _PACKAGE_TOP_K
from ..sampling import filter_top_p as _PACKAGE_TOP_P
from . import Hint, as_sequence, checker, expect_tensor, questions, quiz_checker
from .compare import close
from .guard import no_shortcuts, read_only

t, lazy_t = messages("nb12_gpt_from_the_same_parts")

__all__ = [
    "check_next_token_pairs",
    "check_top_k_filter",
    "check_top_p_probs",
    "check_rope",
    "QUESTIONS",
    "check_quiz",
]


def _pair(got, what: str) -> tuple[Tensor, Tensor]:
    """The learner's (inputs, targets) as two tensors; a Hint for any other form."""
    first, second = as_sequence(got, 2, what)
    for name, x in (("inputs", first), ("targets", second)):
        if not isinstance(x, Tensor):
            raise Hint(t("not_a_tensor", what=f"{what}: {name}", type=type(x).__name__))
    return first, second


# ---- Exercise 1: the causal shift ----------------------------------------------------------------------------------


def _same(a: Tensor, b: Tensor) -> bool:
    return a.shape == b.shape and torch.equal(a.long(), b.long())


@checker(lazy_t("next_token_pairs"), lazy_t("passed_next_token_pairs"))
def check_next_token_pairs(next_token_pairs):
    """``next_token_pairs(ids)``: ids (batch, T) → ``(inputs, targets)``, what the model reads and what each of its
    positions must predict. Either form is right: inputs ``(batch, T − 1)`` and targets ``(batch, T − 1)``, or
    inputs ``(batch, T)`` and targets ``(batch, T)`` whose last entry is ignored by the loss (−100 or PAD). Checked
    with the package's ``lm_loss``: the cross-entropy of the learner's targets equals it on random logits."""
    lm_loss = _PACKAGE_LM_LOSS

    g = torch.Generator().manual_seed(12)
    ids = torch.stack([torch.randperm(40, generator=g)[:7] + 4 for _ in range(3)])  # (3, 7): no id twice in a row
    what = "next_token_pairs(ids (3, 7))"
    with no_shortcuts(t("the_shift")):
        got = next_token_pairs(ids.clone())
    inputs, targets = _pair(got, what)
    B, T = ids.shape
    mistakes = [
        ((ids[:, :-1], ids[:, :-1]), t("targets_not_shifted")),
        ((ids, ids), t("targets_not_shifted")),
        ((ids[:, 1:], ids[:, 1:]), t("targets_not_shifted")),
        ((ids[:, 1:], ids[:, :-1]), t("shift_backwards")),
        ((ids[:, :-2], ids[:, 2:]), t("shifted_by_two")),
        ((ids, ids.roll(-1, dims=1)), t("rolled_around")),
        ((ids[:-1], ids[1:]), t("shifted_along_batch")),
    ]
    for (want_in, want_tgt), hint in mistakes:
        if _same(inputs, want_in) and _same(targets, want_tgt):
            raise Hint(t("what_hint", what=what, hint=hint))
    if inputs.dim() != 2 or targets.dim() != 2 or inputs.size(0) != B or targets.size(0) != B:
        raise Hint(
            t("pair_shapes", what=what, inputs=tuple(inputs.shape), targets=tuple(targets.shape), B=B, T_less=T - 1)
        )
    if inputs.shape != targets.shape:
        raise Hint(t("lengths_differ", what=what, inputs=tuple(inputs.shape), targets=tuple(targets.shape)))
    if inputs.is_floating_point() or targets.is_floating_point():
        raise Hint(t("ids_are_integers", what=what, dtype=(inputs if inputs.is_floating_point() else targets).dtype))

    V = 48  # every id (4 … 43) is a token of this vocabulary
    logits = torch.randn(B, T, V, generator=g)  # (B, T, V): random scores for every position
    want = lm_loss(logits, ids)  # the package's shifted loss
    if inputs.size(1) == T - 1:
        if not _same(inputs, ids[:, :-1]):
            raise Hint(t("inputs_wrong", what=what, want="ids[:, :-1]"))
        if not _same(targets, ids[:, 1:]):
            raise Hint(t("targets_wrong", what=what))
        got_loss = F.cross_entropy(logits[:, :-1].reshape(-1, V), targets.long().reshape(-1))
    elif inputs.size(1) == T:
        if not _same(inputs, ids):
            raise Hint(t("inputs_wrong", what=what, want="ids"))
        last = targets[:, -1].long()
        ignored = -100 if bool((last == -100).all()) else PAD
        if not bool((last == ignored).all()):
            raise Hint(t("last_target_not_ignored", what=what, last=last.tolist()))
        if not _same(targets[:, :-1], ids[:, 1:]):
            raise Hint(t("targets_wrong", what=what))
        got_loss = F.cross_entropy(logits.reshape(-1, V), targets.long().reshape(-1), ignore_index=ignored)
    else:
        raise Hint(
            t("pair_shapes", what=what, inputs=tuple(inputs.shape), targets=tuple(targets.shape), B=B, T_less=T - 1)
        )
    if not torch.allclose(got_loss, want):  # the same targets give the package's loss
        raise Hint(t("targets_wrong", what=what))


# ---- Exercise 2: top-k ------------------------------------------------------------------------------------------------


def _kept_probs(logits: Tensor) -> Tensor:
    """softmax over the last axis, computed in float64; rows with NaN stay NaN."""
    return logits.double().softmax(dim=-1)


def _as_filtered_logits(got, shape: tuple, what: str, empty_hint: str | None = None) -> Tensor:
    if not isinstance(got, Tensor):
        raise Hint(t("not_a_tensor", what=what, type=type(got).__name__))
    if tuple(got.shape) != shape:
        raise Hint(t("shape_same_as_logits", what=what, got=tuple(got.shape), want=shape))
    if not got.is_floating_point():
        raise Hint(t("scores_are_floats", what=what, dtype=got.dtype))
    nothing_kept = (got == -math.inf).all(-1) | (got == 0).all(-1)  # (batch,): a row with no token left
    if torch.isnan(got).any() or nothing_kept.any():
        raise Hint(t("what_hint", what=what, hint=empty_hint) if empty_hint else t("nan_in_result", what=what))
    return got


@checker(lazy_t("top_k_filter"), lazy_t("passed_top_k_filter"))
def check_top_k_filter(top_k_filter):
    """``top_k_filter(logits, k)``: logits (batch, V) → (batch, V), each row's k highest scores as they were and every
    other score −inf (any score so low that softmax gives it 0, like ``torch.finfo(dtype).min``, is right too)."""
    filter_top_k = _PACKAGE_TOP_K

    g = torch.Generator().manual_seed(7)
    logits = torch.randn(3, 10, generator=g) * 2  # (3, V = 10): no two scores alike
    for k in (3, 1, 10):
        what = f"top_k_filter(logits (3, 10), k={k})"
        with no_shortcuts(t("top_k_filter")):
            got = top_k_filter(logits.clone(), k)
        got = _as_filtered_logits(got, tuple(logits.shape), what)
        want = _kept_probs(filter_top_k(logits, k))  # (3, 10): what a draw would follow
        mine = _kept_probs(got)
        if torch.allclose(mine, want, atol=1e-6):
            continue
        dropped = filter_top_k(logits, k) == -math.inf
        mistakes = {
            t("zero_is_a_score"): _kept_probs(logits.masked_fill(dropped, 0.0)),
            t("top_k_one_too_many"): _kept_probs(filter_top_k(logits, k + 1)) if k < 10 else None,
            t("top_k_one_too_few"): _kept_probs(filter_top_k(logits, k - 1)) if k > 1 else None,
            t("top_k_smallest"): _kept_probs(logits.masked_fill(filter_top_k(-logits, k) == -math.inf, -math.inf)),
            t("top_k_wrong_axis"): _kept_probs(filter_top_k(logits.T, k).T) if k <= 3 else None,
        }
        for hint, value in mistakes.items():
            if value is not None and torch.allclose(mine, value, atol=1e-6):
                raise Hint(t("what_hint", what=what, hint=hint))
        if got.ge(0).all() and torch.allclose(got.double().sum(-1), torch.ones(3, dtype=torch.float64), atol=1e-4):
            raise Hint(t("returned_probabilities", what=what))
        kept = (mine > 1e-12).sum(-1).tolist()
        raise Hint(t("top_k_wrong", what=what, kept=kept, k=k))


# ---- Exercise 3: top-p (nucleus) ---------------------------------------------------------------------------------


def _top_n(logits: Tensor, n: Tensor) -> Tensor:
    """Each row's n[row] most probable tokens kept (n = 0: none), the distribution renormalised (NaN for none)."""
    rows = []
    for row, count in zip(logits, n.tolist()):
        if count <= 0:
            rows.append(torch.full_like(row, math.nan, dtype=torch.float64))
        else:
            rows.append(_kept_probs(_PACKAGE_TOP_K(row, min(count, row.numel()))))
    return torch.stack(rows)  # (B, V)


# (scale of the logits, p): a peaked and a flat distribution at p = 0.9; one where the most probable token alone
# passes p (the nucleus is one token); p = 1 (every token). tests/test_exercises_nb12.py checks that no row's running
# sum of probabilities lies within 0.02 of p (p < 1), so that the crossing token is never a matter of rounding.
_TOP_P_CASES = ((4.0, 0.9, 7), (0.5, 0.9, 18), (6.0, 0.5, 0), (1.0, 1.0, 6))
_V = 12


def _top_p_logits(scale: float, seed: int) -> Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(2, _V, generator=g) * scale  # (2, V): no two scores alike


@checker(lazy_t("top_p_probs"), lazy_t("passed_top_p_probs"))
def check_top_p_probs(top_p_probs):
    """``top_p_probs(logits, p)``: logits (batch, V) → probabilities (batch, V) that nucleus sampling draws from:
    the smallest set of most probable tokens whose probabilities sum to at least p (the token that crosses p is in
    it), renormalised to sum to 1, and 0 elsewhere. Returning the filtered logits instead (−inf outside the nucleus)
    is right too. Checked against the package's ``filter_top_p`` on a peaked and a flat distribution."""
    filter_top_p = _PACKAGE_TOP_P

    for scale, p, seed in _TOP_P_CASES:
        logits = _top_p_logits(scale, seed)
        shape = "peaked" if scale >= 4 else "flat"
        what = f"top_p_probs({shape} logits (2, {_V}), p={p})"
        with no_shortcuts(t("top_p_probs")):
            got = top_p_probs(logits.clone(), p)
        got = _as_filtered_logits(got, tuple(logits.shape), what, t("top_p_nothing_kept"))
        is_logits = bool((got < 0).any() or torch.isinf(got).any())
        mine = _kept_probs(got) if is_logits else got.double()
        want = _kept_probs(filter_top_p(logits, p))  # (2, V)
        if torch.allclose(mine, want, atol=1e-6):
            continue
        probs = _kept_probs(logits)
        count = (want > 0).sum(-1)  # (2,): the nucleus's size in each row
        ranked, order = probs.sort(dim=-1, descending=True)
        in_vocab_order = (probs.cumsum(-1) - probs) < p  # the running sum taken without sorting
        unsorted = probs * in_vocab_order
        mistakes = {
            t("not_renormalised", total=f"{float((probs * (want > 0)).sum(-1).min()):.3f}"): probs * (want > 0),
            t("top_p_one_too_few"): _top_n(logits, count - 1),
            t("top_p_one_too_many"): _top_n(logits, count + 1),
            t("top_p_unsorted"): unsorted / unsorted.sum(-1, keepdim=True),
            t("top_p_left_sorted"): want.gather(-1, order),
        }
        for hint, value in mistakes.items():
            if not torch.equal(value, want) and torch.allclose(mine, value, atol=1e-6, equal_nan=True):
                raise Hint(t("what_hint", what=what, hint=hint))
        sums = mine.sum(-1)
        if not is_logits and not torch.allclose(sums, torch.ones_like(sums), atol=1e-4):
            raise Hint(t("rows_must_sum_to_one", what=what, sums=[round(float(s), 4) for s in sums]))
        if not is_logits and (mine < 0).any():
            raise Hint(t("negative_probability", what=what))
        kept = (mine > 1e-12).sum(-1).tolist()
        raise Hint(t("top_p_wrong", what=what, kept=kept, want=count.tolist(), p=p))


# ---- Exercise 4: rotary positions --------------------------------------------------------------------------------


def _as_halves(x: Tensor) -> Tensor:
    """Features (x_0 … x_{d/2−1}, x_{d/2} … x_{d−1}) → (x_0, x_{d/2}, x_1, x_{d/2+1}, …): halves paired as neighbours."""
    half = x.size(-1) // 2
    return torch.stack([x[..., :half], x[..., half:]], dim=-1).flatten(-2)  # (..., d)


def _from_halves(x: Tensor) -> Tensor:
    """The inverse of :func:`_as_halves`."""
    return torch.cat([x[..., 0::2], x[..., 1::2]], dim=-1)  # (..., d)


@checker(lazy_t("rope"), lazy_t("passed_rope"))
def check_rope(rope):
    """``rope(q, k, v, positions)``: q, k, v (batch, heads, T, d_k) at positions ``positions`` (T,) →
    ``(q, k, v)``, the queries and keys turned by rotary positions, adjacent features (2i, 2i+1) as one pair turned
    by the angle position · base^(−2i/d_k), base 10,000, and the values as they came. Checked against the package's
    ``attention.rotate`` at positions that start after a cache's 4 (4 … 8)."""
    rotate = _PACKAGE_ROTATE

    g = torch.Generator().manual_seed(4)
    q, k, v = (torch.randn(2, 3, 5, 8, generator=g) for _ in range(3))  # (B, h, T, d_k) each
    positions = torch.arange(4, 9)  # (T,): five new positions after four cached ones
    what = "rope(q, k, v, positions=[4, 5, 6, 7, 8])"
    with no_shortcuts(t("rotation")):
        got = rope(q.clone(), k.clone(), v.clone(), positions.clone())
    got_q, got_k, got_v = as_sequence(got, 3, t("rope_result"))
    want_q, want_k = rotate(q, positions), rotate(k, positions)

    def named(x, want: Tensor, name: str, source: Tensor) -> None:
        mistakes = {
            t("rope_not_turned", name=name): source,
            t("rope_halves"): _from_halves(rotate(_as_halves(source), positions)),
            t("rope_positions_ignored", first=int(positions[0])): rotate(source, torch.arange(len(positions))),
            t("rope_backwards"): rotate(source, -positions),
            t("rope_frequencies"): rotate(source, positions, base=math.sqrt(10000.0)),
        }
        expect_tensor(x, want, f"{what}: {name}", mistakes=mistakes)

    if isinstance(got_v, Tensor) and close(got_v, rotate(v, positions)):
        raise Hint(t("rope_turns_values"))
    if close(got_q, want_k) and close(got_k, want_q):
        raise Hint(t("rope_swapped"))
    named(got_q, want_q, "q", q)
    named(got_k, want_k, "k", k)
    expect_tensor(got_v, v, f"{what}: v")


# ---- Questions ------------------------------------------------------------------------------------------------------

QUESTIONS = questions(
    "nb12_gpt_from_the_same_parts",
    lazy_t,
    q1="1196c88d67034e346ac9c23b",
    q2="26a32d8a3cab4ea01807d195",
    q3="9aed81751a90183548de2a6a",
)

check_quiz = quiz_checker(QUESTIONS)  # one line per question

read_only(__name__)  # what the checks use stays what it was at import (ex.no_shortcuts = … is refused)

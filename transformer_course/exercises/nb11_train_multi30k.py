"""Checkers for the exercises of notebook 11 (training on Multi30k; paper §5.4 label smoothing, §6.1
checkpoint averaging; BLEU, Papineni et al. 2002).

from transformer_course.exercises import nb11_train_multi30k as ex
ex.check_update_average(update_average)          # average many checkpoints holding two at a time
ex.check_bleu_change(bleu_change)                # which part of BLEU moved between two runs
ex.check_length_batches(length_batches)          # batches by length, as the paper's §5.1
ex.check_quiz(q1=..., q2=..., q3=...)

Handing the work to the package (``data.TokenBatchSampler``) or to sacreBLEU's own BLEU is a shortcut.
"""

from __future__ import annotations

import copy
import math

import torch

from ..i18n import messages
from . import Hint, as_int, as_number, as_sequence, checker, expect_tensor, questions, quiz_checker
from .guard import no_shortcuts, read_only

t, lazy_t = messages("nb11_train_multi30k")

__all__ = ["check_update_average", "check_bleu_change", "check_length_batches", "QUESTIONS", "check_quiz"]

# ---- Exercise 1: a running average of checkpoints (§6.1 averages the last 5, or 20 for the big models) --------------


def _state_dicts(n: int = 4) -> list[dict]:
    g = torch.Generator().manual_seed(0)
    return [{"weight": torch.randn(3, 2, generator=g), "bias": torch.randn(3, generator=g)} for _ in range(n)]


def _run_average(update_average, dicts: list[dict]) -> dict:
    """Feed the checkpoints one by one, as a loop over files on disk would: the average of the first one is
    itself, then ``update_average(average, next, count)`` with count = how many are in the new average."""
    average = dicts[0]
    for count, state in enumerate(dicts[1:], start=2):
        with no_shortcuts(t("average")):
            average = update_average(average, state, count)
        if not isinstance(average, dict):
            raise Hint(t("update_average_return", type=type(average).__name__))
    return average


@checker(lazy_t("update_average"), lazy_t("passed_average_new"))
def check_update_average(update_average):
    """``update_average(average, state_dict, count)``: ``average`` is the mean of count − 1 checkpoints,
    ``state_dict`` the count-th; return the mean of all count as a new dict, inputs unchanged."""
    dicts = _state_dicts()
    before = copy.deepcopy(dicts)
    got = _run_average(update_average, [dict(d) for d in dicts])
    for name in before[0]:
        if not all(torch.equal(d[name], b[name]) for d, b in zip(dicts, before)):
            raise Hint(t("code_changed_input", name=name))
    if set(got) != set(before[0]):
        raise Hint(t("average_keys_expected", got=sorted(got), expected=sorted(before[0])))
    for name in before[0]:
        stack = torch.stack([b[name] for b in before])  # (checkpoints, ...)
        expected = stack.mean(0)
        value = got[name]
        if isinstance(value, torch.Tensor) and value.shape == expected.shape:
            value = value.to(expected.dtype)  # float64 (or any float dtype) is fine
            halves = before[0][name]
            for b in before[1:]:
                halves = (halves + b[name]) / 2  # an exponential moving average
            if torch.allclose(value, halves, atol=1e-6):
                raise Hint(t("average_new_2", name=name))
            if torch.allclose(value, stack.sum(0), atol=1e-6):
                raise Hint(t("sum_checkpoints_average", name=name))
            if torch.allclose(value, before[-1][name], atol=1e-6):
                raise Hint(t("equals_last_checkpoint", name=name))
            if torch.allclose(value, stack[1:].mean(0), atol=1e-6):
                raise Hint(t("lost_first_checkpoint", name=name))
        expect_tensor(value, expected, t("average_4_checkpoints", name=name))


# ---- Exercise 2: which part of BLEU moved? ------------------------------------------------------------------------


def _sacrebleu_score(correct, total, sys_len: int, ref_len: int) -> float:
    """sacreBLEU's own BLEU (0–100) from the counts, without smoothing."""
    from sacrebleu.metrics import BLEU

    return BLEU.compute_bleu(list(correct), list(total), sys_len, ref_len, smooth_method="none").score


# (before, after), each (correct n-grams, hypothesis n-grams for n = 1…4, words in the translations, in the references)
_CHANGE_CASES = [
    # greedy → beam: shorter output (the brevity penalty bites harder), higher precisions
    (([70, 40, 22, 12], [100, 90, 80, 70], 100, 110), ([68, 41, 24, 14], [92, 83, 74, 65], 92, 110)),
    # both longer than the references: no penalty on either side, only the precisions move
    (([180, 120, 70, 40], [240, 220, 200, 180], 240, 230), ([185, 126, 75, 44], [240, 220, 200, 180], 240, 230)),
    # a shorter output that is still longer than the references, one 4-gram more
    (([9, 5, 3, 2], [10, 9, 8, 7], 12, 10), ([9, 5, 3, 3], [10, 9, 8, 7], 11, 10)),
]


def _parts(before, after, log=math.log, quarter=0.25, penalty=None) -> list[float]:
    """[brevity, p1, p2, p3, p4]: each part's share of ln(BLEU_after / BLEU_before). The keywords switch in a
    plausible mistake (another log, no ¼, the penalty upside down), for naming it."""

    def log_penalty(sys_len: int, ref_len: int) -> float:  # ln BP
        if penalty is not None:
            return log(penalty(sys_len, ref_len))
        return 0.0 if sys_len > ref_len else (1 - ref_len / sys_len) * log(math.e)  # ln BP, in log's base

    (c0, t0, s0, r0), (c1, t1, s1, r1) = before, after
    parts = [log_penalty(s1, r1) - log_penalty(s0, r0)]
    return parts + [quarter * (log(c1[n] / t1[n]) - log(c0[n] / t0[n])) for n in range(4)]


def _change_mistakes(before, after) -> list[tuple[str, list[float]]]:
    (c0, t0, s0, r0), (c1, t1, s1, r1) = before, after

    def penalty(sys_len, ref_len):
        return 1.0 if sys_len > ref_len else math.exp(1 - ref_len / sys_len)

    return [
        (
            t("change_differences"),
            [penalty(s1, r1) - penalty(s0, r0)] + [c1[n] / t1[n] - c0[n] / t0[n] for n in range(4)],
        ),
        (
            t("change_ratios"),
            [penalty(s1, r1) / penalty(s0, r0)] + [(c1[n] / t1[n] * t0[n] / c0[n]) ** 0.25 for n in range(4)],
        ),
        (t("change_no_quarter"), _parts(before, after, quarter=1.0)),
        (t("change_upside_down"), _parts(before, after, penalty=lambda s, r: 1.0 if s > r else math.exp(1 - s / r))),
        (t("change_swapped"), [-x for x in _parts(before, after)]),
        (t("change_log_base"), _parts(before, after, log=math.log10)),
        (t("change_log_base"), _parts(before, after, log=math.log2)),
    ]


@checker(lazy_t("bleu_change"), lazy_t("passed_bleu_change"))
def check_bleu_change(bleu_change):
    """``bleu_change(before, after)``: each run as ``(correct, total, sys_len, ref_len)`` (``correct[n-1]`` of the
    ``total[n-1]`` n-grams also occur in the references, n = 1…4; lengths in words) → five numbers,
    ``[brevity, p1, p2, p3, p4]``, each part's share of ln(BLEU_after / BLEU_before)."""
    for before, after in _CHANGE_CASES:
        what = f"bleu_change({before}, {after})"
        with no_shortcuts(t("bleu")):
            answer = bleu_change(tuple(before), tuple(after))
        if isinstance(answer, torch.Tensor) or type(answer).__name__ == "ndarray":  # five numbers in one array is fine
            answer = answer.tolist() if answer.ndim == 1 else answer
        got = [as_number(x, t("part", what=what, i=i)) for i, x in enumerate(as_sequence(answer, 5, what))]
        want = _parts(before, after)
        if all(math.isclose(g, w, rel_tol=1e-6, abs_tol=1e-9) for g, w in zip(got, want)):
            continue
        shown = ", ".join(f"{x:.4f}" for x in got)
        for hint, wrong in _change_mistakes(before, after):
            if all(math.isclose(g, w, rel_tol=1e-6, abs_tol=1e-9) for g, w in zip(got, wrong)):
                raise Hint(t("change_got_hint", what=what, got=shown, hint=hint))
        total = math.log(_sacrebleu_score(*after) / _sacrebleu_score(*before))  # sacreBLEU's two scores
        if math.isclose(sum(got), total, rel_tol=1e-6, abs_tol=1e-9):
            raise Hint(t("change_got_hint", what=what, got=shown, hint=t("change_split_wrong")))
        raise Hint(t("change_not_adding_up", what=what, got=shown, total=total))


# ---- Exercise 3: batches by length (§5.1: "Sentence pairs were batched together by approximate sequence length") ----

_MAX_PADDING = 0.10  # at most 10 % of the positions may be padding, over all batches (sorted: 2–6 %; random: ~40 %)
_MAX_EXTRA_BATCHES = 0.15  # at most 15 % more batches than the fewest possible, ⌈Σ lengths / max_tokens⌉


def _length_cases() -> list[tuple[list[int], int]]:
    """(source lengths, max_tokens): 600 sentences of 4–30 tokens and a budget of 300 positions, then 800 of
    2–40 tokens and a budget of 1,000."""
    g = torch.Generator().manual_seed(11)
    return [
        (torch.randint(4, 31, (600,), generator=g).tolist(), 300),
        (torch.randint(2, 41, (800,), generator=g).tolist(), 1000),
    ]


@checker(lazy_t("length_batches"), lazy_t("passed_every_sentence"))
def check_length_batches(length_batches):
    """``length_batches(lengths, max_tokens)``: ``lengths[i]`` is the length of sentence i; return a list of
    batches (lists or tuples of sentence indices) in which every sentence appears exactly once, each batch's
    padded size, len(batch) × its longest length, is at most ``max_tokens``, with at most 10 % padding over all
    batches and at most 15 % more batches than ⌈Σ lengths / max_tokens⌉."""
    for lengths, max_tokens in _length_cases():
        what = f"length_batches({len(lengths)} lengths, max_tokens={max_tokens})"
        with no_shortcuts(t("batching")):
            answer = length_batches(list(lengths), max_tokens)
        batches = [as_sequence(b, None, t("batch", i=i)) for i, b in enumerate(as_sequence(answer, None, what))]
        batches = [[as_int(n, t("index_batch", i=i)) for n in b] for i, b in enumerate(batches)]
        if any(not b for b in batches):
            raise Hint(t("batch_empty_every", what=what, i=next(i for i, b in enumerate(batches) if not b)))
        seen = [n for b in batches for n in b]
        if sorted(seen) == sorted(lengths) and sorted(seen) != list(range(len(lengths))):
            raise Hint(t("batches_hold_lengths", what=what))
        outside = sorted({n for n in seen if not 0 <= n < len(lengths)})
        if outside:
            if sorted(seen) == sorted(lengths):
                raise Hint(t("batches_hold_lengths", what=what))
            raise Hint(t("not_sentence_indices", what=what, outside=outside[:5], last=len(lengths) - 1))
        if len(seen) != len(set(seen)):
            twice = sorted({n for n in seen if seen.count(n) > 1})[:5]
            raise Hint(t("sentences_more_batch", what=what, twice=twice))
        if len(seen) != len(lengths):
            lost = sorted(set(range(len(lengths))) - set(seen))[:5]
            raise Hint(t("sentences_no_batch", what=what, lost=lost))
        for i, b in enumerate(batches):
            longest = max(lengths[n] for n in b)
            if len(b) * longest > max_tokens:
                raise Hint(
                    t(
                        "batch_sentences_longest",
                        what=what,
                        i=i,
                        n=len(b),
                        longest=longest,
                        size=len(b) * longest,
                        max_tokens=max_tokens,
                    )
                )
        positions = sum(len(b) * max(lengths[n] for n in b) for b in batches)
        padding = 1 - sum(lengths) / positions
        fewest = math.ceil(sum(lengths) / max_tokens)
        if padding > _MAX_PADDING:
            if padding > 0.2:
                raise Hint(t("positions_padding_sort", what=what, padding=padding))
            raise Hint(t("positions_padding_more", what=what, padding=padding))
        if len(batches) > fewest * (1 + _MAX_EXTRA_BATCHES):
            raise Hint(t("batches_where_could", what=what, n=len(batches), fewest=fewest))


# ---- Questions ------------------------------------------------------------------------------------------------------

QUESTIONS = questions(
    "nb11_train_multi30k",
    lazy_t,
    q1="e3403c13b03755ec83b263c0",
    q2="84b592a6ef0bb54c7afcd278",
    q3="c9410409144df6bfe77962d1",
)


check_quiz = quiz_checker(QUESTIONS)  # one line per question

read_only(__name__)  # what the checks use stays what it was at import (ex.no_shortcuts = … is refused)

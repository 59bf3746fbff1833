"""Checkers for the exercises of notebook 11 (training on Multi30k; paper §5.4 label smoothing, §6.1
checkpoint averaging; BLEU, Papineni et al. 2002).

from transformer_course.exercises import nb11_train_multi30k as ex
ex.check_update_average(update_average)          # average many checkpoints holding two at a time
ex.check_bleu_from_counts(bleu_from_counts)      # BLEU from its n-gram counts and lengths
ex.check_loss_floor(loss_floor)                  # the lowest label-smoothed loss a model can reach
ex.check_quiz(q1=..., q2=..., q3=...)

Numbers may be a Python int or float, a numpy scalar or a one-number tensor; lists may be lists or tuples.
"""

from __future__ import annotations

import copy
import math

import torch

from ..i18n import lazy_t, register, t
from . import Choice, Hint, Numeric, Result, as_number, expect_tensor, run_check
from . import check_quiz as _check_quiz
from .zh.nb11_train_multi30k import ZH

register("zh", ZH)

__all__ = [
    "check_update_average",
    "sacrebleu_score",
    "BLEU_CASES",
    "check_bleu_from_counts",
    "package_loss_floor",
    "FLOOR_CASES",
    "check_loss_floor",
    "QUESTIONS",
    "check_quiz",
]

# ---------------------------------------------------------------------------------------------------
# Exercise 1: a running average of checkpoints (§6.1 averages the last 5, or 20 for the big models)


def _state_dicts(n: int = 4) -> list[dict]:
    g = torch.Generator().manual_seed(0)
    return [{"weight": torch.randn(3, 2, generator=g), "bias": torch.randn(3, generator=g)} for _ in range(n)]


def _run_average(update_average, dicts: list[dict]) -> dict:
    """Feed the checkpoints one by one, as a loop over files on disk would: the average of the first one is
    itself, then ``update_average(average, next, count)`` with count = how many are in the new average."""
    average = dicts[0]
    for count, state in enumerate(dicts[1:], start=2):
        average = update_average(average, state, count)
        if not isinstance(average, dict):
            raise Hint(
                t("update_average should return a dict (name → tensor), got {type}", type=type(average).__name__)
            )
    return average


def check_update_average(update_average) -> Result:
    """``update_average(average, state_dict, count)``: ``average`` is the mean of count − 1 checkpoints,
    ``state_dict`` the count-th; return the mean of all count as a new dict, inputs unchanged."""

    def check():
        dicts = _state_dicts()
        before = copy.deepcopy(dicts)
        got = _run_average(update_average, [dict(d) for d in dicts])
        for name in before[0]:
            if not all(torch.equal(d[name], b[name]) for d, b in zip(dicts, before)):
                raise Hint(
                    t(
                        "your code changed an input checkpoint ({name!r}); build new tensors, e.g. "
                        "average[name] + (state[name] − average[name]) / count",
                        name=name,
                    )
                )
        if set(got) != set(before[0]):
            raise Hint(
                t(
                    "the average has the keys {got}, expected {expected}: one per parameter",
                    got=sorted(got),
                    expected=sorted(before[0]),
                )
            )
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
                    raise Hint(
                        t(
                            "{name!r}: (average + new) / 2 gives the newest checkpoint half the weight and the first "
                            "one 1/8; each of the count checkpoints must weigh 1/count",
                            name=name,
                        )
                    )
                if torch.allclose(value, stack.sum(0), atol=1e-6):
                    raise Hint(
                        t(
                            "{name!r} is the sum of the checkpoints; the average divides by how many there are",
                            name=name,
                        )
                    )
                if torch.allclose(value, before[-1][name], atol=1e-6):
                    raise Hint(t("{name!r} equals the last checkpoint; the older ones must count too", name=name))
                if torch.allclose(value, stack[1:].mean(0), atol=1e-6):
                    raise Hint(
                        t(
                            "{name!r} lost the first checkpoint: the new one joins count − 1 others, so it weighs "
                            "1/count, not 1/(count − 1)",
                            name=name,
                        )
                    )
            expect_tensor(value, expected, t("the average of 4 checkpoints, {name!r}", name=name))

    return run_check(
        t("update average"), check, t("passed: average + (new − average) / count, two checkpoints in memory")
    )


# ---------------------------------------------------------------------------------------------------
# Exercise 2: BLEU from its parts


def sacrebleu_score(correct, total, sys_len: int, ref_len: int) -> float:
    """sacreBLEU's own BLEU (0–100) from the counts, without smoothing."""
    from sacrebleu.metrics import BLEU

    return BLEU.compute_bleu(list(correct), list(total), sys_len, ref_len, smooth_method="none").score


# (correct n-grams, hypothesis n-grams for n = 1…4, words in the translations, words in the references)
BLEU_CASES = [
    ([70, 40, 22, 12], [100, 90, 80, 70], 100, 110),  # short output: the brevity penalty acts
    ([180, 120, 70, 40], [240, 220, 200, 180], 240, 230),  # long output: no penalty
    ([9, 5, 3, 2], [10, 9, 8, 7], 10, 10),
]


def _bleu_mistakes(correct, total, sys_len: int, ref_len: int) -> dict[str, float]:
    precisions = [c / n for c, n in zip(correct, total)]
    geometric = math.exp(sum(math.log(p) for p in precisions) / 4)
    bp = 1.0 if sys_len > ref_len else math.exp(1 - ref_len / sys_len)
    return {
        t("the precisions are combined by a geometric mean, exp of the mean of their logs, not an arithmetic mean"): (
            100 * bp * sum(precisions) / 4
        ),
        t("the brevity penalty is missing: a short output must pay exp(1 − ref_len / sys_len)"): 100 * geometric,
        t("BLEU is reported on a 0–100 scale: multiply by 100"): bp * geometric,
        t("the brevity penalty is upside down: exp(1 − ref_len / sys_len) is below 1 when the output is short"): (
            100 * geometric * (1.0 if sys_len > ref_len else math.exp(1 - sys_len / ref_len))
        ),
    }


def check_bleu_from_counts(bleu_from_counts) -> Result:
    """``bleu_from_counts(correct, total, sys_len, ref_len)``: ``correct[n-1]`` of the ``total[n-1]``
    n-grams of the translations also occur in the references (n = 1…4, lists or tuples); ``sys_len`` and
    ``ref_len`` are their lengths in words. Return BLEU on a 0–100 scale, as sacreBLEU does."""

    def check():
        for correct, total, sys_len, ref_len in BLEU_CASES:
            what = f"bleu_from_counts({correct}, {total}, sys_len={sys_len}, ref_len={ref_len})"
            got = as_number(bleu_from_counts(list(correct), tuple(total), sys_len, ref_len), what)
            want = sacrebleu_score(correct, total, sys_len, ref_len)
            if math.isclose(got, want, rel_tol=1e-6):
                continue
            for hint, value in _bleu_mistakes(correct, total, sys_len, ref_len).items():
                if math.isclose(got, value, rel_tol=1e-6):
                    raise Hint(t("{what} = {got:.4f}: {hint}", what=what, got=got, hint=hint))
            raise Hint(t("{what} = {got:.4f}, sacreBLEU says {want:.4f}", what=what, got=got, want=want))

    return run_check(t("BLEU from counts"), check, t("passed: equal to sacreBLEU's BLEU"))


# ---------------------------------------------------------------------------------------------------
# Exercise 3: the lowest loss label smoothing allows


def package_loss_floor(epsilon: float, vocab_size: int) -> float:
    """The package's LabelSmoothingLoss for a model that predicts exactly the smoothed target (the best
    any model can do: cross-entropy is smallest when the prediction equals the target distribution)."""
    from ..train import LabelSmoothingLoss

    word = vocab_size - 1  # any real word (not PAD = 0)
    smoothed = torch.full((1, vocab_size), epsilon / vocab_size, dtype=torch.float64)
    smoothed[0, word] += 1 - epsilon  # (1, V): what label smoothing asks the model to predict
    target = torch.tensor([word])
    loss = LabelSmoothingLoss(epsilon)(smoothed.log(), target)
    return float(loss)


# a tiny vocabulary first: there every mistake gives its own number; 6,190 = the English vocabulary of
# docs/results.md (the package computes the loss in float32, hence the checker's tolerance of 1e-5)
FLOOR_CASES = [(0.1, 5), (0.2, 12), (0.1, 6190)]


def _entropy(probs: list[tuple[float, int]]) -> float:
    """−Σ p ln p over (probability, how many words have it) pairs."""
    return -sum(n * p * math.log(p) for p, n in probs if p > 0)


def _floor_mistakes(epsilon: float, V: int) -> dict[str, float]:
    return {
        t(
            "a perfect model cannot reach 0: label smoothing asks for 1 − ε on the right word and ε spread over "
            "the vocabulary, and the loss is at least the entropy of that target"
        ): 0.0,
        t(
            "this package (like F.cross_entropy) spreads ε over all V words, the right one included; you spread it "
            "over the V − 1 others"
        ): _entropy([(1 - epsilon, 1), (epsilon / (V - 1), V - 1)]),
        t("the right word gets 1 − ε plus its own share ε / V: your target does not sum to 1"): _entropy(
            [(1 - epsilon, 1), (epsilon / V, V - 1)]
        ),
        t("that is in bits; the loss uses the natural log (nats)"): _entropy(
            [(1 - epsilon + epsilon / V, 1), (epsilon / V, V - 1)]
        )
        / math.log(2),
    }


def check_loss_floor(loss_floor) -> Result:
    """``loss_floor(epsilon, vocab_size)``: the smallest value the package's label-smoothed loss can take
    (per token, in nats), reached when the model predicts exactly the smoothed target."""

    def check():
        for epsilon, V in FLOOR_CASES:
            what = f"loss_floor(epsilon={epsilon}, vocab_size={V})"
            got = as_number(loss_floor(epsilon, V), what)
            want = package_loss_floor(epsilon, V)
            if math.isclose(got, want, rel_tol=1e-5):
                continue
            for hint, value in _floor_mistakes(epsilon, V).items():
                if math.isclose(got, value, rel_tol=1e-5, abs_tol=1e-9):
                    raise Hint(t("{what} = {got:.4f}: {hint}", what=what, got=got, hint=hint))
            raise Hint(
                t(
                    "{what} = {got:.4f}; the package's loss on the smoothed target is {want:.4f}",
                    what=what,
                    got=got,
                    want=want,
                )
            )

    return run_check(t("loss floor"), check, t("passed: the entropy of the smoothed target, the floor of the curves"))


# ---------------------------------------------------------------------------------------------------
# Questions

QUESTIONS = {
    "q1": Choice(
        key="nb11-q1",
        digest="8e9e17a6e1cccf9215d5db01",
        letters="abc",
        why=lazy_t(
            "a real user's sentences hold words the model never saw; a vocabulary that knew the test words "
            "would make BLEU look better than it is"
        ),
        wrong={
            "a": lazy_t("speed is not the reason; the test sentences must stay as unseen as a user's"),
            "c": lazy_t(
                "every split has both languages; the point is that test words must be as new to the model as a "
                "user's words"
            ),
        },
    ),
    "q2": Numeric(
        key="nb11-q2",
        digests=("e6573b57ccc8025d2aad3c11",),
        why=lazy_t(
            "each of the 4 processes takes its own batch of up to 8,000 tokens, and their gradients are averaged "
            "into one step: up to 32,000 tokens per step"
        ),
        mistakes={
            lazy_t(
                "that is one GPU's batch; with DDP each of the 4 GPUs processes its own batch in the same step"
            ): 8000,
            lazy_t("the batch is not split across GPUs: each GPU takes a whole batch of its own"): 8000 / 4,
        },
        rel_tol=0,
        otherwise=lazy_t("count the batches that go into one optimizer step, and the tokens in each"),
    ),
    "q3": Choice(
        key="nb11-q3",
        digest="0054e92d7e40b02787fec7d5",
        letters="abc",
        why=lazy_t(
            "float16 has 5 exponent bits: small gradients round to 0 unless the loss is scaled up first; "
            "bfloat16 keeps float32's 8 exponent bits and its range"
        ),
        wrong={
            "a": lazy_t(
                "bfloat16 has float32's 8 exponent bits, so gradients neither overflow nor underflow more than "
                "in float32"
            ),
            "c": lazy_t("bfloat16 needs no loss scaling: that is why the package uses it"),
        },
    ),
}


def check_quiz(**answers) -> Result:
    """``check_quiz(q1="b", q2=1000, q3="a")``: one line per question."""
    return _check_quiz(QUESTIONS, answers)

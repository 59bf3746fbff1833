"""Checkers for notebook 08 (the training loop; paper §5.1 batches, §5.3 the schedule, §5.4 label smoothing).

    from transformer_course.exercises import nb08_training_loop as ex
    ex.check_batch_prediction(tgt_out_shape, n_tokens, eos_in_tgt_in)  # exercise 1: predict a batch, then verify
    ex.print_numbered(ex.buggy_label_smoothing_loss)
    ex.check_bug_lines(bug_lines)                                      # exercise 2: find the bugs
    ex.check_loss_floor(loss_floor)                                    # exercise 3: the smallest smoothed loss
    ex.check_peak(peak_step, peak_rate)                                # exercise 4: the peak of a schedule
    ex.check_quiz(q1=..., q2=..., q3=...)                              # three short questions

Numbers may come as Python, numpy or one-element tensor numbers; shapes and lists of lines as tuples or lists
(a torch.Size or a set where the instructions say so). ``...`` or None means "not answered yet".
"""

from __future__ import annotations

import math

from ..config import get_preset
from ..i18n import lazy_t, register, t
from . import (
    Choice,
    Hint,
    Numeric,
    Result,
    as_int,
    as_number,
    as_shape,
    print_numbered,  # noqa: F401 (the notebook calls ex.print_numbered)
    run_check,
)
from . import check_quiz as _check_quiz
from .zh.nb08_training_loop import ZH

register("zh", ZH)

__all__ = [
    "LENGTHS",
    "PEAK_PRESET",
    "QUESTIONS",
    "buggy_label_smoothing_loss",
    "check_batch_prediction",
    "check_bug_lines",
    "check_loss_floor",
    "check_peak",
    "check_quiz",
    "print_numbered",
    "smoothed_target_entropy",
]


def _require_answers(**answers) -> None:
    """A blank (``...`` or None, as the notebook ships it) means the learner has not answered yet."""
    blank = [name for name, value in answers.items() if value is ... or value is None]
    if blank:
        raise Hint(t("not done yet: replace the ... of {names} with your answer", names=", ".join(blank)))


# ---- exercise 1: predict a batch (predict, then verify with collate) --------------------------------------

LENGTHS = (7, 3, 5, 9)  # words in each of the four target sentences (one longest, so exactly one loses its </s>)


def _batch_facts(lengths=LENGTHS) -> dict[str, int]:
    batch, longest = len(lengths), max(lengths)
    return {
        "batch": batch,
        "T": longest + 1,  # <s> + words + </s> = longest + 2 columns in tgt; tgt_out drops the first
        "n_tokens": sum(n + 1 for n in lengths),  # words + </s> of each sentence: no <s>, no pads
        "eos_in": sum(n < longest for n in lengths),  # a </s> stays in tgt_in unless it sat in the last column
    }


def check_batch_prediction(tgt_out_shape, n_tokens, eos_in_tgt_in) -> Result:
    """The four targets of ``LENGTHS`` words, wrapped as <s> … </s>, padded and shifted: the shape of
    ``tgt_out`` (a tuple, list or torch.Size), its real tokens, and how many </s> remain in ``tgt_in``."""
    facts = _batch_facts()
    batch, T, longest = facts["batch"], facts["T"], max(LENGTHS)

    def check():
        _require_answers(tgt_out_shape=tgt_out_shape, n_tokens=n_tokens, eos_in_tgt_in=eos_in_tgt_in)
        shape = as_shape(tgt_out_shape, "tgt_out_shape")
        shape_hints = {
            (batch, T + 1): t(
                "{shape} is the shape of tgt itself (<s>, {longest} words, </s>); tgt_out drops its first column",
                shape=(batch, T + 1),
                longest=longest,
            ),
            (batch, T - 1): t(
                "the longest sentence has {longest} words, and after them the model must predict </s>: one more column",
                longest=longest,
            ),
            (T, batch): t("the batch comes first: (batch, T), one row per sentence"),
            (T + 1, batch): t("the batch comes first, and tgt_out is one column shorter than tgt"),
        }
        if shape != (batch, T):
            hint = shape_hints.get(shape) or t("count the columns again")
            raise Hint(t("{what} = {got}: {hint}", what="tgt_out_shape", got=shape, hint=hint))
        n = as_int(n_tokens, "n_tokens")
        token_hints = {
            sum(n + 2 for n in LENGTHS): t("counts <s> too: tgt_out starts at the first word; nobody predicts <s>"),
            sum(LENGTHS): t("forgets </s>: the model must learn to stop, so each </s> is a target too"),
            batch * T: t("counts the padding: pads are not words to predict, the loss skips them"),
            batch * (T + 1): t("counts every position of tgt, padding included"),
        }
        if n != facts["n_tokens"]:
            hint = token_hints.get(n) or t("is not the number of real tokens in tgt_out")
            raise Hint(t("{what} = {got} {hint}", what="n_tokens", got=n, hint=hint))
        eos = as_int(eos_in_tgt_in, "eos_in_tgt_in")
        eos_hints = {
            0: t(
                "cutting the last column removes a </s> only where it sat in the last column: in the longest "
                "sentence. The shorter ones have a pad there"
            ),
            batch: t("the longest sentence's </s> sat in the last column, which tgt_in drops"),
            1: t("the other way round: only the longest sentence loses its </s>; the others keep theirs"),
        }
        if eos != facts["eos_in"]:
            hint = eos_hints.get(eos) or t("write out the four rows of tgt and cut")
            raise Hint(t("{what} = {got}: {hint}", what="eos_in_tgt_in", got=eos, hint=hint))

    return run_check(
        t("predict the batch"),
        check,
        t(
            "passed: tgt_out is {shape}, with {n_tokens} real tokens; {eos_in} sentences keep "
            "a harmless </s> in tgt_in (its target is a pad)",
            shape=(batch, T),
            n_tokens=facts["n_tokens"],
            eos_in=facts["eos_in"],
        ),
    )


# ---- exercise 2: find the bugs in a label-smoothed loss -------------------------------------------------


def buggy_label_smoothing_loss(logits, target, eps, pad):
    probs = logits.softmax(dim=-1)  # (batch, T, V)
    log_p = probs.log()  # (batch, T, V): log p(v)
    nll = -log_p.gather(-1, target.unsqueeze(-1)).squeeze(-1)  # (batch, T): −log p(y)
    uniform = -log_p.mean(dim=-1)  # (batch, T): the mean over the V words of −log p(v)
    loss = eps * nll + (1 - eps) * uniform  # (batch, T)
    return loss.mean()  # one number: the mean loss per target token


BUG_LINES = {3, 6, 7}  # line 1 is the def line, as ex.print_numbered shows it
_RIGHT_LINES = {
    1: lazy_t("line 1 is the signature; it is fine"),
    2: lazy_t("line 2 alone is fine: the softmax is right. The trouble is what line 3 does with it"),
    4: lazy_t("line 4 is right: gather picks −log p of the target word at each position"),
    5: lazy_t("line 5 is right: the mean over V words, times ε, gives each word ε/V (the form F.cross_entropy uses)"),
}
_MISSED = {
    3: lazy_t(
        "one bug is still hidden: call the function on logits with one very large entry (e.g. 200 for the "
        "right word). What comes out, and which line makes it?"
    ),
    6: lazy_t(
        "one bug is still hidden: compare line 6 with the formula (1 − ε)·(−log p(y)) + ε·mean_v(−log p(v)): "
        "which term gets the 1 − ε?"
    ),
    7: lazy_t("one bug is still hidden: over which positions does loss.mean() average? What do the pad positions add?"),
}


def check_bug_lines(bug_lines) -> Result:
    """``bug_lines``: the numbers of the lines of ``buggy_label_smoothing_loss`` you would change (a list,
    tuple or set). Lines 3, 6 and 7; naming line 2 with line 3 is fine (log_softmax replaces both)."""

    def check():
        _require_answers(bug_lines=bug_lines)
        if not isinstance(bug_lines, (list, tuple, set, frozenset)):
            raise Hint(
                t(
                    "bug_lines should be a list (or tuple, or set) of line numbers, got {type}",
                    type=type(bug_lines).__name__,
                )
            )
        lines = {as_int(n, t("each line number")) for n in bug_lines}
        outside = sorted(n for n in lines if not 1 <= n <= 7)
        if outside:
            raise Hint(
                t(
                    "buggy_label_smoothing_loss has lines 1–7 (print_numbered shows them), got {outside}",
                    outside=outside,
                )
            )
        if 2 in lines and 3 in lines:
            lines.discard(2)  # replacing lines 2–3 by one log_softmax is the same fix
        for n in sorted(lines - BUG_LINES):
            raise Hint(_RIGHT_LINES[n])
        for n in sorted(BUG_LINES - lines):
            raise Hint(_MISSED[n])

    return run_check(
        t("find the bugs"),
        check,
        t(
            "passed: line 3 (log of a softmax: −inf, then inf or nan, for a confident model; use log_softmax), "
            "line 6 (the weights 1 − ε and ε swapped) and line 7 (the mean counts the pads; divide by the real tokens)"
        ),
    )


# ---- exercise 3: the smallest possible label-smoothed loss -----------------------------------------------

FLOOR_EPS, FLOOR_V = 0.1, 14  # the paper's ε_ls and the toy task's vocabulary


def smoothed_target_entropy(eps: float, vocab: int, spread: int | None = None) -> float:
    """H(q) in nats for q = (1 − ε)·one-hot + ε/``spread`` on ``spread`` words (default: all V, the course's form;
    ``spread = V − 1`` is the other convention, ε over the wrong words only)."""
    spread = spread or vocab
    right = 1 - eps + (eps / spread if spread == vocab else 0.0)  # q(y)
    other = eps / spread  # q(v) of each of the V − 1 other words
    return -(right * math.log(right) + (vocab - 1) * other * math.log(other))


def check_loss_floor(loss_floor) -> Result:
    """``loss_floor``: the smallest value −Σ_v q(v) log p(v) can take at one position, ε = 0.1, V = 14."""
    floor = smoothed_target_entropy(FLOOR_EPS, FLOOR_V)
    question = Numeric.of(
        key="nb08-question",
        value=floor,
        why=t(
            "the minimum is at p = q, and it is the entropy of q: {floor:.4f} nats, never 0 while ε > 0", floor=floor
        ),
        mistakes={
            t(
                "0 is the common misconception: with ε > 0 the target q itself is spread out, and the loss "
                "−Σ q log p is at least the entropy of q (reached when p = q)"
            ): 0.0,
            t(
                "that is ε·ln V: you let −log p(y) go to 0, but p(y) = 1 leaves every other p(v) = 0, whose "
                "−log p(v) is infinite. The best p is q itself"
            ): FLOOR_EPS * math.log(FLOOR_V),
            t("that is −log q(y) only: at p = q the ε·mean_v(−log p(v)) term adds its share too"): -math.log(
                1 - FLOOR_EPS + FLOOR_EPS / FLOOR_V
            ),
            t("that is in bits (log base 2); the loss uses the natural log (nats)"): floor / math.log(2),
            t(
                "that spreads ε over the V − 1 wrong words; the course's form (and F.cross_entropy) spreads it over "
                "all V words: q(y) = 1 − ε + ε/V"
            ): smoothed_target_entropy(FLOOR_EPS, FLOOR_V, FLOOR_V - 1),
            t("that is V = 10, the demo's vocabulary; the toy task has V = 14"): smoothed_target_entropy(FLOOR_EPS, 10),
        },
        rel_tol=2e-3,
        otherwise=t("the loss −Σ q log p is smallest when p = q; compute −Σ_v q(v) ln q(v) for this q"),
    )

    def check():
        _require_answers(loss_floor=loss_floor)
        got = as_number(loss_floor, "loss_floor")
        if got < 0:
            raise Hint(t("loss_floor = {got:g}: −Σ q log p is never negative (every log p ≤ 0)", got=got))
        if math.isclose(got, floor, rel_tol=question.rel_tol):
            return
        for hint, value in question.mistakes.items():
            if math.isclose(got, value, rel_tol=question.rel_tol, abs_tol=1e-12):
                raise Hint(t("{what} = {got:g}: {hint}", what="loss_floor", got=got, hint=hint))
        raise Hint(t("{what} = {got:g}: {hint}", what="loss_floor", got=got, hint=question.otherwise))

    return run_check(t("the loss floor"), check, t("right: {why}", why=question.why))


# ---- exercise 4: the peak of a schedule ------------------------------------------------------------------

PEAK_PRESET = "multi30k-cpu-words"  # the word-level preset notebook 11 trains on a CPU


def check_peak(peak_step, peak_rate) -> Result:
    """For ``PEAK_PRESET`` (lr = lr_factor · d_model^-0.5 · min(step^-0.5, step · warmup^-1.5), steps from 1):
    the step with the largest rate (a whole number) and that rate (a number)."""
    c = get_preset(PEAK_PRESET)
    d, w, f = c.d_model, c.warmup, c.lr_factor
    want_rate = f * (d * w) ** -0.5

    def check():
        _require_answers(peak_step=peak_step, peak_rate=peak_rate)
        step = as_int(peak_step, "peak_step")
        if step != w:
            if abs(step - w) == 1:
                raise Hint(
                    t(
                        "peak_step = {step} is off by one: the two terms of the min are equal where "
                        "step^-0.5 = step · warmup^-1.5, that is at step = warmup = {warmup} exactly",
                        step=step,
                        warmup=w,
                    )
                )
            if step <= 1:
                raise Hint(
                    t(
                        "peak_step = {step}: the rate rises linearly during warmup, so step 1 has the smallest rate",
                        step=step,
                    )
                )
            raise Hint(t("peak_step = {step}: where are the two terms of the min equal?", step=step))
        rate = as_number(peak_rate, "peak_rate")
        mistakes = {
            t("the factor lr_factor = {factor} is missing", factor=f): (d * w) ** -0.5,
            t("the factor d_model^-0.5 (d_model = {d_model}) is missing", d_model=d): f * w**-0.5,
            t("that uses the paper's warmup of 4,000 steps; this preset warms up for {warmup}", warmup=w): f
            * (d * 4000) ** -0.5,
            t("that is the rate of step 1, the smallest one"): f * d**-0.5 * w**-1.5,
            t("that is the paper's base model (d_model 512, warmup 4,000, no factor)"): (512 * 4000) ** -0.5,
        }
        if math.isclose(rate, want_rate, rel_tol=5e-3):
            return
        for hint, value in mistakes.items():
            if math.isclose(rate, value, rel_tol=5e-3):
                raise Hint(t("peak_rate = {rate:.3g}: {hint}", rate=rate, hint=hint))
        raise Hint(t("peak_rate = {rate:.3g}: put step = warmup into the formula, with all three factors", rate=rate))

    return run_check(
        t("the peak of the schedule"),
        check,
        t(
            "passed: step {warmup}, rate {factor} · ({d_model} · {warmup})^-0.5 = {rate:.3e}",
            warmup=w,
            factor=f,
            d_model=d,
            rate=want_rate,
        ),
    )


# ---- questions (letters: 'c', 'C', '(c)' all work; numbers in any numeric form) ----------------------------

QUESTIONS = {
    "q1": Choice(
        key="nb08-q1",
        digest="ff393e3e8dbd1092972822e0",
        letters="abcd",
        why=lazy_t("the peak is lr_factor · (d_model · warmup)^-0.5: twice the d_model gives 1/√2 of the rate"),
        wrong={
            "a": lazy_t("(a): d_model has the power −0.5 in the formula: a bigger model gets a smaller rate"),
            "b": lazy_t("(b): the power is −0.5, not −1: the rate shrinks by √2, not by 2"),
            "d": lazy_t("(d): the factor d_model^-0.5 multiplies every step's rate, the peak too"),
        },
    ),
    "q2": Choice(
        key="nb08-q2",
        digest="184bbf565008765d00de312d",
        letters="abcd",
        why=lazy_t(
            "perplexity rewards putting all the mass on the right word; a smoothed model keeps ε of it on the "
            "others by design, which costs perplexity and helps BLEU (§5.4, Table 3 rows D)"
        ),
        wrong={
            "a": lazy_t(
                "(a): no bug is needed to explain it; the paper predicts it: label smoothing 'hurts perplexity, "
                "as the model learns to be more unsure, but improves accuracy and BLEU score' (§5.4)"
            ),
            "c": lazy_t(
                "(c): it is the other way round: smoothing is a regulariser, it works against over-confidence "
                "and over-fitting"
            ),
            "d": lazy_t(
                "(d): they measure different things: perplexity the probability given to the reference word, "
                "BLEU the n-gram overlap of the translation a beam search writes"
            ),
        },
    ),
    "q3": Numeric(
        key="nb08-q3",
        digests=("2c8057eb8910d6b5121f9f83", "4ffee57695fc9a4b36b0dcb1", "c2d4ec1767a0580b10b8ec26"),
        why=lazy_t("about 25,000 target tokens per batch (§5.1) × 100,000 steps (§5.2) = 2.5·10⁹ target tokens"),
        mistakes={
            lazy_t("that counts source and target tokens; the question asks for target tokens only"): 50_000 * 100_000,
            lazy_t("4,000 is the warmup; the base model trained for 100,000 steps (§5.2)"): 25_000 * 4_000,
            lazy_t("that is one batch; multiply by the number of steps (100,000, §5.2)"): 25_000,
        },
        rel_tol=0.02,
        otherwise=lazy_t("multiply the target tokens per batch (§5.1) by the training steps of the base model (§5.2)"),
    ),
}


def check_quiz(**answers) -> Result:
    """``check_quiz(q1="c", q2="b", q3=2.5e9)``: one line per question."""
    return _check_quiz(QUESTIONS, answers)

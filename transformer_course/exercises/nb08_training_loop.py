"""Checkers for notebook 08 (the training loop; paper §5.1 batches, §5.3 the schedule, §5.4 label smoothing).

    from transformer_course.exercises import nb08_training_loop as ex
    ex.check_batch_numbers(batch_numbers)                              # exercise 1: a batch's numbers from its lengths
    ex.check_exposes_bug(logits_input, target_input)                   # exercise 2: an input that exposes a bug
    ex.check_loss_floor(loss_floor)                                    # exercise 3: the smallest smoothed loss
    ex.check_peak(peak_step, peak_rate)                                # exercise 4: the peak of a schedule
    ex.check_quiz(q1=..., q2=..., q3=...)                              # three short questions

Numbers may come as Python, numpy or one-element tensor numbers; shapes and lists of lines as tuples or lists
(a torch.Size or a set where the instructions say so). ``...`` or None means "not answered yet".
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from ..config import get_preset
from ..data import EOS, collate
from ..i18n import lazy_t, load_catalogue, register, t
from . import (
    Choice,
    Hint,
    Numeric,
    Result,
    answer_check,
    as_int,
    as_number,
    as_shape,
    run_check,
)
from . import check_quiz as _check_quiz
from .guard import no_shortcuts

register("zh", load_catalogue("nb08_training_loop"))

__all__ = [
    "PEAK_PRESET",
    "QUESTIONS",
    "check_batch_numbers",
    "check_exposes_bug",
    "check_loss_floor",
    "check_peak",
    "check_quiz",
    "smoothed_target_entropy",
    "suspect_label_smoothing_loss",
]


def _require_answers(**answers) -> None:
    """A blank (``...`` or None, as the notebook ships it) means the learner has not answered yet."""
    blank = [name for name, value in answers.items() if value is ... or value is None]
    if blank:
        raise Hint(t("not done yet: replace the ... of {names} with your answer", names=", ".join(blank)))


# ---- exercise 1: predict a batch (predict, then verify with collate) --------------------------------------


def check_batch_numbers(batch_numbers) -> Result:
    """``batch_numbers(lengths)``: for target sentences of ``lengths`` words (a list of positive ints), wrapped as
    <s> … </s>, padded and shifted as ``collate`` does, the tuple (shape of ``tgt_out`` as a tuple, real tokens of
    ``tgt_out``, how many </s> remain in ``tgt_in``), worked out from the lengths alone: calling the package
    (``collate``, ``Batch``) fails. Tried on batches with one longest sentence and with a tie for the longest."""

    def check():
        if batch_numbers is ... or batch_numbers is None:
            raise Hint(t("not done yet: replace the ... of {names} with your answer", names="batch_numbers"))
        if not callable(batch_numbers):
            raise Hint(
                t("batch_numbers should be a function of lengths, got {type}", type=type(batch_numbers).__name__)
            )
        generator = torch.Generator().manual_seed(8)
        cases = [[7, 3, 5, 9], [4, 4], [6, 2, 6, 1, 3], [1]]
        cases += [
            torch.randint(1, 12, (int(torch.randint(1, 7, (1,), generator=generator)),), generator=generator).tolist()
            for _ in range(6)
        ]
        for lengths in cases:
            batch = collate([([4] * n, [4] * n) for n in lengths])  # the package's, outside the learner's code
            want_shape, want_tokens = tuple(batch.tgt_out.shape), int(batch.n_tokens)
            want_eos = int((batch.tgt_in == EOS).sum())
            with no_shortcuts(t("the numbers of a batch")):
                got = batch_numbers(list(lengths))
            if not isinstance(got, (tuple, list)) or len(got) != 3:
                raise Hint(
                    t(
                        "batch_numbers({lengths}) should return three things (shape, n_tokens, eos), got {got!r}",
                        lengths=lengths,
                        got=got,
                    )
                )
            shape, n, eos = (
                as_shape(got[0], "tgt_out_shape"),
                as_int(got[1], "n_tokens"),
                as_int(got[2], "eos_in_tgt_in"),
            )
            batch_size, T, longest = len(lengths), want_shape[1], max(lengths)
            if shape != want_shape:
                shape_hints = {
                    (batch_size, T + 1): t(
                        "{shape} is the shape of tgt itself (<s>, {longest} words, </s>); tgt_out drops its first column",
                        shape=(batch_size, T + 1),
                        longest=longest,
                    ),
                    (batch_size, T - 1): t(
                        "the longest sentence has {longest} words, and after them the model must predict </s>: one more column",
                        longest=longest,
                    ),
                    (T, batch_size): t("the batch comes first: (batch, T), one row per sentence"),
                }
                hint = shape_hints.get(shape) or t("count the columns again")
                raise Hint(
                    t(
                        "for lengths {lengths}: {what} = {got}: {hint}",
                        lengths=lengths,
                        what="tgt_out_shape",
                        got=shape,
                        hint=hint,
                    )
                )
            if n != want_tokens:
                token_hints = {
                    sum(k + 2 for k in lengths): t(
                        "counts <s> too: tgt_out starts at the first word; nobody predicts <s>"
                    ),
                    sum(lengths): t("forgets </s>: the model must learn to stop, so each </s> is a target too"),
                    batch_size * T: t("counts the padding: pads are not words to predict, the loss skips them"),
                }
                hint = token_hints.get(n) or t("is not the number of real tokens in tgt_out")
                raise Hint(
                    t(
                        "for lengths {lengths}: {what} = {got} {hint}",
                        lengths=lengths,
                        what="n_tokens",
                        got=n,
                        hint=hint,
                    )
                )
            if eos != want_eos:
                if eos == len(lengths) - 1 and lengths.count(longest) > 1:
                    hint = t(
                        "{count} sentences share the longest length {longest}: each has its </s> in the last column, "
                        "so each loses it in tgt_in, not only one",
                        count=lengths.count(longest),
                        longest=longest,
                    )
                elif eos == len(lengths):
                    hint = t("the longest sentence's </s> sat in the last column, which tgt_in drops")
                else:
                    hint = t("write out the rows of tgt and cut the last column")
                raise Hint(
                    t(
                        "for lengths {lengths}: {what} = {got}: {hint}",
                        lengths=lengths,
                        what="eos_in_tgt_in",
                        got=eos,
                        hint=hint,
                    )
                )

    return run_check(
        t("the numbers of a batch"),
        check,
        t("passed: right for every batch tried, ties for the longest sentence included"),
    )


# ---- exercise 2: expose the bug with an input of your own -------------------------------------------------


def suspect_label_smoothing_loss(logits, target, eps=0.1, pad=0):
    """The label-smoothed loss of section 2, written another way: the mean over real target tokens of
    (1 − ε)·(−log p(y)) + ε·mean_v(−log p(v)). It is wrong on some inputs; ``check_exposes_bug`` wants one."""
    shifted = logits - logits.max(dim=-1, keepdim=True).values  # (batch, T, V): the largest logit is 0
    log_p = shifted.softmax(dim=-1).log()  # (batch, T, V)
    nll = -log_p.gather(-1, target.unsqueeze(-1)).squeeze(-1)  # (batch, T)
    uniform = -log_p.mean(dim=-1)  # (batch, T)
    real = target != pad  # (batch, T)
    return (((1 - eps) * nll + eps * uniform) * real).sum() / real.sum()


def check_exposes_bug(logits_input, target_input) -> Result:
    """``logits_input`` (batch, T, V) floats and ``target_input`` (batch, T) token ids in [0, V) with at least one
    real (non-pad, id ≠ 0) token: an input on which ``suspect_label_smoothing_loss`` (ε = 0.1, pad = 0) differs from
    the right loss, ``F.cross_entropy(…, label_smoothing=0.1, ignore_index=0)``."""

    def check():
        _require_answers(logits_input=logits_input, target_input=target_input)
        if (
            not isinstance(logits_input, torch.Tensor)
            or not logits_input.is_floating_point()
            or logits_input.dim() != 3
        ):
            raise Hint(t("logits_input should be a float tensor (batch, T, V), got {got}", got=_describe(logits_input)))
        if not isinstance(target_input, torch.Tensor) or target_input.dtype != torch.long or target_input.dim() != 2:
            raise Hint(
                t(
                    "target_input should be a long tensor (batch, T) of token ids, got {got}",
                    got=_describe(target_input),
                )
            )
        if tuple(target_input.shape) != tuple(logits_input.shape[:2]):
            raise Hint(
                t(
                    "target_input is {target} but logits_input is {logits}: one target id per (batch, T) position",
                    target=tuple(target_input.shape),
                    logits=tuple(logits_input.shape),
                )
            )
        vocab = logits_input.size(-1)
        if int(target_input.min()) < 0 or int(target_input.max()) >= vocab:
            raise Hint(t("target ids must lie in [0, V = {vocab})", vocab=vocab))
        if not bool((target_input != 0).any()):
            raise Hint(t("every target is a pad (id 0): there is no real token to average over; use ids ≥ 1"))
        if not bool(torch.isfinite(logits_input).all()):
            raise Hint(
                t(
                    "your logits hold inf or nan: no loss is defined for them. The bug shows on finite logits — "
                    "how large a gap between two logits can softmax hold in float32?"
                )
            )
        right = F.cross_entropy(
            logits_input.reshape(-1, vocab), target_input.reshape(-1), label_smoothing=0.1, ignore_index=0
        )
        suspect = suspect_label_smoothing_loss(logits_input, target_input)
        if bool(torch.isfinite(suspect)) and math.isclose(float(suspect), float(right), rel_tol=1e-4, abs_tol=1e-6):
            raise Hint(
                t(
                    "on this input both give {value:.4f}: the bug does not show. Subtracting the maximum keeps the "
                    "largest logit at 0; what does softmax give a word whose logit is far below it, and what is the "
                    "log of that?",
                    value=float(right),
                )
            )

    return run_check(
        t("expose the bug"),
        check,
        t(
            "passed: a word far below the best gets a probability that rounds to 0, its log is −inf and the loss "
            "inf; log_softmax (shifted − log Σ exp shifted) never rounds to 0"
        ),
    )


def _describe(value) -> str:
    if isinstance(value, torch.Tensor):
        return t("a {dtype} tensor of shape {shape}", dtype=str(value.dtype), shape=tuple(value.shape))
    return type(value).__name__


# ---- exercise 3: the smallest possible label-smoothed loss -----------------------------------------------

FLOOR_EPS, FLOOR_V = 0.1, 14  # the paper's ε_ls and the toy task's vocabulary


def smoothed_target_entropy(eps: float, vocab: int, spread: int | None = None) -> float:
    """H(q) in nats for q = (1 − ε)·one-hot + ε/``spread`` on ``spread`` words (default: all V, the course's form;
    ``spread = V − 1`` is the other convention, ε over the wrong words only)."""
    spread = spread or vocab
    right = 1 - eps + (eps / spread if spread == vocab else 0.0)  # q(y)
    other = eps / spread  # q(v) of each of the V − 1 other words
    return -(right * math.log(right) + (vocab - 1) * other * math.log(other))


@answer_check
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


@answer_check
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


@answer_check
def check_quiz(**answers) -> Result:
    """``check_quiz(q1="c", q2="b", q3=2.5e9)``: one line per question."""
    return _check_quiz(QUESTIONS, answers)

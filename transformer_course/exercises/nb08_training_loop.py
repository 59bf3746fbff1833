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
from ..i18n import messages
from . import (
    Hint,
    Result,
    answer_check,
    as_int,
    as_number,
    as_shape,
    checker,
    questions,
    quiz_checker,
    run_check,
)
from .guard import no_shortcuts, read_only

t, lazy_t = messages("nb08_training_loop")

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
        raise Hint(t("not_done_yet", names=", ".join(blank)))


# ---- exercise 1: predict a batch (predict, then verify with collate) --------------------------------------


@checker(lazy_t("numbers_batch"), lazy_t("passed_right_every"))
def check_batch_numbers(batch_numbers):
    """``batch_numbers(lengths)``: for target sentences of ``lengths`` words (a list of positive ints), wrapped as
    <s> … </s>, padded and shifted as ``collate`` does, the tuple (shape of ``tgt_out`` as a tuple, real tokens of
    ``tgt_out``, how many </s> remain in ``tgt_in``), worked out from the lengths alone: calling the package
    (``collate``, ``Batch``) fails. Tried on batches with one longest sentence and with a tie for the longest."""
    if batch_numbers is ... or batch_numbers is None:
        raise Hint(t("not_done_yet", names="batch_numbers"))
    if not callable(batch_numbers):
        raise Hint(t("batch_numbers_function", type=type(batch_numbers).__name__))
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
        with no_shortcuts(t("numbers_batch")):
            got = batch_numbers(list(lengths))
        if not isinstance(got, (tuple, list)) or len(got) != 3:
            raise Hint(t("batch_numbers_return", lengths=lengths, got=got))
        shape, n, eos = (as_shape(got[0], "tgt_out_shape"), as_int(got[1], "n_tokens"), as_int(got[2], "eos_in_tgt_in"))
        batch_size, T, longest = len(lengths), want_shape[1], max(lengths)
        if shape != want_shape:
            shape_hints = {
                (batch_size, T + 1): t("shape_tgt_itself", shape=(batch_size, T + 1), longest=longest),
                (batch_size, T - 1): t("longest_sentence_words", longest=longest),
                (T, batch_size): t("batch_comes_first"),
            }
            hint = shape_hints.get(shape) or t("count_columns_again")
            raise Hint(t("lengths", lengths=lengths, what="tgt_out_shape", got=shape, hint=hint))
        if n != want_tokens:
            token_hints = {
                sum(k + 2 for k in lengths): t("counts_s_too"),
                sum(lengths): t("forgets_s_model"),
                batch_size * T: t("counts_padding_pads"),
            }
            hint = token_hints.get(n) or t("not_number_real")
            raise Hint(t("for_lengths_hint", lengths=lengths, what="n_tokens", got=n, hint=hint))
        if eos != want_eos:
            if eos == len(lengths) - 1 and lengths.count(longest) > 1:
                hint = t("sentences_share_longest", count=lengths.count(longest), longest=longest)
            elif eos == len(lengths):
                hint = t("longest_sentences_s")
            else:
                hint = t("write_out_rows")
            raise Hint(t("lengths", lengths=lengths, what="eos_in_tgt_in", got=eos, hint=hint))


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


@checker(lazy_t("expose_bug"), lazy_t("passed_word_far"))
def check_exposes_bug(logits_input, target_input):
    """``logits_input`` (batch, T, V) floats and ``target_input`` (batch, T) token ids in [0, V) with at least one
    real (non-pad, id ≠ 0) token: an input on which ``suspect_label_smoothing_loss`` (ε = 0.1, pad = 0) differs from
    the right loss, ``F.cross_entropy(…, label_smoothing=0.1, ignore_index=0)``."""
    _require_answers(logits_input=logits_input, target_input=target_input)
    if not isinstance(logits_input, torch.Tensor) or not logits_input.is_floating_point() or logits_input.dim() != 3:
        raise Hint(t("logits_input_float", got=_describe(logits_input)))
    if not isinstance(target_input, torch.Tensor) or target_input.dtype != torch.long or target_input.dim() != 2:
        raise Hint(t("target_input_long", got=_describe(target_input)))
    if tuple(target_input.shape) != tuple(logits_input.shape[:2]):
        raise Hint(t("target_input_but", target=tuple(target_input.shape), logits=tuple(logits_input.shape)))
    vocab = logits_input.size(-1)
    if int(target_input.min()) < 0 or int(target_input.max()) >= vocab:
        raise Hint(t("target_ids_must", vocab=vocab))
    if not bool((target_input != 0).any()):
        raise Hint(t("every_target_pad"))
    if not bool(torch.isfinite(logits_input).all()):
        raise Hint(t("logits_hold_inf"))
    right = F.cross_entropy(
        logits_input.reshape(-1, vocab), target_input.reshape(-1), label_smoothing=0.1, ignore_index=0
    )
    suspect = suspect_label_smoothing_loss(logits_input, target_input)
    if bool(torch.isfinite(suspect)) and math.isclose(float(suspect), float(right), rel_tol=1e-4, abs_tol=1e-6):
        raise Hint(t("input_both_give", value=float(right)))


def _describe(value) -> str:
    if isinstance(value, torch.Tensor):
        return t("tensor_shape", dtype=str(value.dtype), shape=tuple(value.shape))
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
    mistakes = {  # computed here, from the question's ε and V: nothing of it is stored
        t("loss_floor_zero"): 0.0,
        t("floor_not_eps_ln_v"): FLOOR_EPS * math.log(FLOOR_V),
        t("floor_not_minus_log_q"): -math.log(1 - FLOOR_EPS + FLOOR_EPS / FLOOR_V),
        t("bits_log_base"): floor / math.log(2),
        t("spreads_over_v"): smoothed_target_entropy(FLOOR_EPS, FLOOR_V, FLOOR_V - 1),
        t("v_10_demos"): smoothed_target_entropy(FLOOR_EPS, 10),
    }
    rel_tol = 2e-3

    def check():
        _require_answers(loss_floor=loss_floor)
        got = as_number(loss_floor, "loss_floor")
        if got < 0:
            raise Hint(t("loss_floor_q", got=got))
        if math.isclose(got, floor, rel_tol=rel_tol):
            return t("right", why=t("minimum_p_q", floor=floor))
        for hint, value in mistakes.items():
            if math.isclose(got, value, rel_tol=rel_tol, abs_tol=1e-12):
                raise Hint(t("what_got_hint", what="loss_floor", got=got, hint=hint))
        raise Hint(t("what_got_hint", what="loss_floor", got=got, hint=t("floor_how_to_compute")))

    return run_check(t("loss_floor"), check)


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
                raise Hint(t("peak_step_off", step=step, warmup=w))
            if step <= 1:
                raise Hint(t("peak_step_rate", step=step))
            raise Hint(t("peak_step_where", step=step))
        rate = as_number(peak_rate, "peak_rate")
        mistakes = {
            t("factor_lr_factor", factor=f): (d * w) ** -0.5,
            t("factor_d_model", d_model=d): f * w**-0.5,
            t("uses_papers_warmup", warmup=w): f * (d * 4000) ** -0.5,
            t("rate_step_1"): f * d**-0.5 * w**-1.5,
            t("papers_base_model"): (512 * 4000) ** -0.5,
        }
        if math.isclose(rate, want_rate, rel_tol=5e-3):
            return
        for hint, value in mistakes.items():
            if math.isclose(rate, value, rel_tol=5e-3):
                raise Hint(t("peak_rate", rate=rate, hint=hint))
        raise Hint(t("peak_rate_put", rate=rate))

    return run_check(t("peak_schedule"), check, t("passed_step_rate", warmup=w, factor=f, d_model=d, rate=want_rate))


# ---- questions (letters: 'c', 'C', '(c)' all work; numbers in any numeric form) ----------------------------

QUESTIONS = questions(
    "nb08_training_loop",
    lazy_t,
    q1="dcee16c698a59560fee0a386",
    q2="65d6feb4082d29a5ebb1d67f",
    q3="90e810a2eb10fcd3909f601a",
)


check_quiz = quiz_checker(QUESTIONS)  # one line per question

read_only(__name__)  # what the checks use stays what it was at import (ex.no_shortcuts = … is refused)

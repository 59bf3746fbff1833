"""The checkers of notebooks 08 and 09 pass the reference solutions and catch plausible mistakes with a hint."""

import math

import torch

from transformer_course.exercises import nb08_training_loop as ex08
from transformer_course.solutions import nb08_training_loop as sol08


def not_done(*args, **kwargs):
    raise NotImplementedError  # the learner's stub as the notebook ships it


# --- notebook 08 --------------------------------------------------------------------------------------

def test_shift_target_checker_passes_the_solution():
    assert ex08.check_shift_target(sol08.shift_target).passed


def test_shift_target_checker_catches_swapped_input_and_output():
    result = ex08.check_shift_target(lambda tgt, pad: (tgt[:, 1:], tgt[:, :-1], int((tgt[:, 1:] != pad).sum())))
    assert not result.passed and "swapped" in result.message


def test_shift_target_checker_catches_counting_padding():
    result = ex08.check_shift_target(lambda tgt, pad: (tgt[:, :-1], tgt[:, 1:], tgt[:, 1:].numel()))
    assert not result.passed and "padding" in result.message


def test_shift_target_checker_catches_counting_the_start_symbol():
    result = ex08.check_shift_target(lambda tgt, pad: (tgt[:, :-1], tgt[:, 1:], int((tgt != pad).sum())))
    assert not result.passed and "tgt_out" in result.message


def test_shift_target_checker_catches_a_hard_coded_pad_id():
    result = ex08.check_shift_target(lambda tgt, pad: (tgt[:, :-1], tgt[:, 1:], int((tgt[:, 1:] != 0).sum())))
    assert not result.passed and "pad=1" in result.message


def test_label_smoothing_checker_passes_the_solution():
    assert ex08.check_label_smoothing_loss(sol08.label_smoothing_loss).passed


def test_label_smoothing_checker_passes_the_pytorch_builtin():
    def builtin(logits, target, eps, pad):
        return torch.nn.functional.cross_entropy(logits.transpose(1, 2), target, label_smoothing=eps, ignore_index=pad)
    assert ex08.check_label_smoothing_loss(builtin).passed


def test_label_smoothing_checker_catches_log_of_softmax():
    def unstable(logits, target, eps, pad):  # log(0) = -inf for the very confident position, then 0·-inf = nan
        p = logits.softmax(-1)
        q = torch.full_like(p, eps / p.size(-1)).scatter_add(-1, target[..., None], torch.full_like(p[..., :1], 1 - eps))
        loss = -(q * p.log()).sum(-1)
        real = target != pad
        return (loss * real).sum() / real.sum()
    result = ex08.check_label_smoothing_loss(unstable)
    assert not result.passed and "log_softmax" in result.message


def test_label_smoothing_checker_catches_pads_counted():
    def with_pads(logits, target, eps, pad):
        log_p = logits.log_softmax(-1)
        nll = -log_p.gather(-1, target[..., None]).squeeze(-1)
        return ((1 - eps) * nll + eps * -log_p.mean(-1)).mean()
    result = ex08.check_label_smoothing_loss(with_pads)
    assert not result.passed and "pad" in result.message


def test_label_smoothing_checker_catches_eps_over_v_minus_1():
    def spread_v1(logits, target, eps, pad):
        log_p = logits.log_softmax(-1)
        nll = -log_p.gather(-1, target[..., None]).squeeze(-1)
        rest = -log_p.sum(-1) - nll
        loss = (1 - eps) * nll + eps / (logits.size(-1) - 1) * rest
        real = target != pad
        return (loss * real).sum() / real.sum()
    result = ex08.check_label_smoothing_loss(spread_v1)
    assert not result.passed and "V − 1" in result.message


def test_label_smoothing_checker_catches_a_sum_instead_of_a_mean():
    def summed(logits, target, eps, pad):
        return sol08.label_smoothing_loss(logits, target, eps, pad) * (target != pad).sum()
    result = ex08.check_label_smoothing_loss(summed)
    assert not result.passed and "mean" in result.message


def test_noam_checker_passes_the_solution_and_the_package():
    from transformer_course.train import noam_rate
    assert ex08.check_noam_rate(sol08.noam_rate).passed
    assert ex08.check_noam_rate(noam_rate).passed


def test_noam_checker_catches_a_missing_model_size_factor():
    result = ex08.check_noam_rate(lambda step, d_model, warmup: min(step ** -0.5, step * warmup ** -1.5))
    assert not result.passed and "d_model^-0.5" in result.message


def test_noam_checker_catches_max_instead_of_min():
    result = ex08.check_noam_rate(lambda s, d, w: d ** -0.5 * max(s ** -0.5, s * w ** -1.5))
    assert not result.passed and "min" in result.message


def test_noam_checker_catches_a_wrong_warmup_power():
    result = ex08.check_noam_rate(lambda s, d, w: d ** -0.5 * min(s ** -0.5, s * w ** -0.5))
    assert not result.passed and "-1.5" in result.message


def test_checkers_of_notebook_08_report_a_stub_as_not_done_yet():
    for check in (ex08.check_shift_target, ex08.check_label_smoothing_loss, ex08.check_noam_rate):
        result = check(not_done)
        assert not result.passed and "not done yet" in result.message

"""The checkers of notebooks 08 and 09 pass the reference solutions and catch plausible mistakes with a hint."""

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
        q = torch.full_like(p, eps / p.size(-1)).scatter_add(
            -1, target[..., None], torch.full_like(p[..., :1], 1 - eps)
        )
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
    result = ex08.check_noam_rate(lambda step, d_model, warmup: min(step**-0.5, step * warmup**-1.5))
    assert not result.passed and "d_model^-0.5" in result.message


def test_noam_checker_catches_max_instead_of_min():
    result = ex08.check_noam_rate(lambda s, d, w: d**-0.5 * max(s**-0.5, s * w**-1.5))
    assert not result.passed and "min" in result.message


def test_noam_checker_catches_a_wrong_warmup_power():
    result = ex08.check_noam_rate(lambda s, d, w: d**-0.5 * min(s**-0.5, s * w**-0.5))
    assert not result.passed and "-1.5" in result.message


def test_checkers_of_notebook_08_report_a_stub_as_not_done_yet():
    for check in (ex08.check_shift_target, ex08.check_label_smoothing_loss, ex08.check_noam_rate):
        result = check(not_done)
        assert not result.passed and "not done yet" in result.message


# --- notebook 09 --------------------------------------------------------------------------------------

from transformer_course.exercises import nb09_decoding as ex09  # noqa: E402
from transformer_course.solutions import nb09_decoding as sol09  # noqa: E402


def test_greedy_checker_passes_the_solution():
    assert ex09.check_greedy(sol09.greedy).passed


def test_greedy_checker_passes_the_package_greedy_decode():
    from transformer_course.decode import greedy_decode

    def package(model, src, src_mask, max_len, start, end):
        out = greedy_decode(model, src, src_mask, max_len, start, end)[0]
        return out[out != 0].tolist()

    assert ex09.check_greedy(package).passed


def test_greedy_checker_catches_reading_the_first_position():
    def first_position(model, src, src_mask, max_len, start, end):
        memory, ys = model.encode(src, src_mask), [start]
        while len(ys) < max_len:
            hidden = model.decode(memory, src_mask, torch.tensor([ys]), None)
            ys.append(int(model.generator(hidden[:, 0]).argmax()))
            if ys[-1] == end:
                break
        return ys

    result = ex09.check_greedy(first_position)
    assert not result.passed and "LAST position" in result.message


def test_greedy_checker_catches_not_stopping_at_the_end_symbol():
    def no_stop(model, src, src_mask, max_len, start, end):
        return sol09.greedy(model, src, src_mask, max_len, start, end_symbol=-1)

    result = ex09.check_greedy(no_stop)
    assert not result.passed and "after </s>" in result.message


def test_greedy_checker_catches_a_missing_start_symbol():
    result = ex09.check_greedy(lambda *args: sol09.greedy(*args)[1:])
    assert not result.passed and "start symbol" in result.message


def test_beam_score_checker_passes_the_solution_and_the_package_penalty():
    from transformer_course.decode import gnmt_length_penalty

    assert ex09.check_beam_score(sol09.beam_score).passed
    assert ex09.check_beam_score(lambda lp, n, a: lp / gnmt_length_penalty(n, a)).passed


def test_beam_score_checker_catches_multiplying_by_the_penalty():
    result = ex09.check_beam_score(lambda lp, n, a: lp * ((5 + n) / 6) ** a)
    assert not result.passed and "divide" in result.message


def test_beam_score_checker_catches_length_to_the_alpha():
    result = ex09.check_beam_score(lambda lp, n, a: lp / n**a)
    assert not result.passed and "((5 + |Y|) / 6)^α" in result.message


def test_top_k_checker_passes_the_solution():
    assert ex09.check_top_k_extensions(sol09.top_k_extensions).passed


def test_top_k_checker_catches_ignoring_the_beam_scores():
    def no_beam_scores(beam_log_probs, next_log_probs, k):
        scores, index = next_log_probs.flatten().topk(k)
        return scores, index // next_log_probs.size(1), index % next_log_probs.size(1)

    result = ex09.check_top_k_extensions(no_beam_scores)
    assert not result.passed and "beam_log_probs[b]" in result.message


def test_top_k_checker_catches_a_wrong_flat_index():
    def wrong_index(beam_log_probs, next_log_probs, k):
        scores, index = (beam_log_probs[:, None] + next_log_probs).flatten().topk(k)
        return scores, index % k, index // k

    result = ex09.check_top_k_extensions(wrong_index)
    assert not result.passed and "index // V" in result.message


def test_checkers_of_notebook_09_report_a_stub_as_not_done_yet():
    for check in (ex09.check_greedy, ex09.check_beam_score, ex09.check_top_k_extensions):
        result = check(not_done)
        assert not result.passed and "not done yet" in result.message


def test_table_model_gives_the_table_as_next_word_distribution():
    probs = torch.tensor([[0.5, 0.5], [0.1, 0.9]])
    model = ex09.TableModel(probs)
    hidden = model.decode(None, None, torch.tensor([[1, 0]]), None)  # (1, 2, 2)
    torch.testing.assert_close(model.generator(hidden).log_softmax(-1).exp()[0], probs[[1, 0]])

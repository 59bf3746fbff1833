"""The checkers of notebooks 10 and 11 pass the reference solutions and catch plausible mistakes with a hint."""

import math

from transformer_course.exercises import nb10_attention_visualization as ex10
from transformer_course.exercises import nb11_train_multi30k as ex11
from transformer_course.solutions import nb10_attention_visualization as sol10
from transformer_course.solutions import nb11_train_multi30k as sol11
from transformer_course.viz import attention_entropy


def failed_with(result, *words):
    """The check failed and its message names the mistake."""
    return not result.passed and all(w.lower() in result.message.lower() for w in words)


# ---- notebook 10: head entropy ----------------------------------------------------------------------


def test_head_entropy_checker_passes_the_solution():
    assert ex10.check_head_entropy(sol10.head_entropy).passed


def test_head_entropy_checker_passes_the_package_version():
    assert ex10.check_head_entropy(attention_entropy).passed


def test_head_entropy_checker_catches_nan_from_zero_weights():
    def naive(w):
        return -(w * w.log()).sum(-1).mean(-1)  # 0 · log 0 = NaN

    assert failed_with(ex10.check_head_entropy(naive), "NaN", "0 · log 0")


def test_head_entropy_checker_catches_bits_instead_of_nats():
    def bits(w):
        return -(w * w.clamp_min(1e-30).log2()).sum(-1).mean(-1)

    assert failed_with(ex10.check_head_entropy(bits), "bits")


def test_head_entropy_checker_catches_a_sum_over_queries():
    def summed(w):
        return -(w * w.clamp_min(1e-30).log()).sum(-1).sum(-1)

    assert failed_with(ex10.check_head_entropy(summed), "mean over the queries")


def test_head_entropy_checker_catches_the_wrong_axis():
    def columns(w):
        return -(w * w.clamp_min(1e-30).log()).sum(-2).mean(-1)

    assert failed_with(ex10.check_head_entropy(columns), "dim -1")


def test_head_entropy_checker_reports_a_stub_as_not_done():
    def stub(w):
        raise NotImplementedError

    assert failed_with(ex10.check_head_entropy(stub), "not done yet")


# ---- notebook 10: alignment from cross-attention ----------------------------------------------------


def test_alignment_checker_passes_the_solution():
    assert ex10.check_alignment(sol10.alignment).passed


def test_alignment_checker_catches_head_zero_alone():
    assert failed_with(ex10.check_alignment(lambda w: w[0].argmax(-1)), "head 0")


def test_alignment_checker_catches_argmax_over_queries():
    assert failed_with(ex10.check_alignment(lambda w: w.mean(0).argmax(0)), "dim -1")


def test_alignment_checker_catches_no_head_average():
    assert failed_with(ex10.check_alignment(lambda w: w.argmax(-1)), "average the heads")


def test_alignment_checker_catches_max_over_heads():
    assert not ex10.check_alignment(lambda w: w.max(0).values.argmax(-1)).passed


# ---- notebook 11: padding fraction ------------------------------------------------------------------


def test_padding_fraction_checker_passes_the_solution():
    assert ex11.check_padding_fraction(sol11.padding_fraction).passed


def test_padding_fraction_solution_matches_the_data_module():
    from transformer_course.data import collate, padding_fraction

    lengths = [[5, 5, 6, 6], [2, 9, 3]]
    batches = [collate([([4] * n, [4] * n) for n in b]) for b in lengths]  # source = target lengths
    assert math.isclose(padding_fraction(batches)["src"], sol11.padding_fraction(lengths))


def test_padding_fraction_checker_catches_a_mean_of_ratios():
    def mean_of_ratios(batches):
        return sum((len(b) * max(b) - sum(b)) / (len(b) * max(b)) for b in batches) / len(batches)

    assert failed_with(ex11.check_padding_fraction(mean_of_ratios), "averaged")


def test_padding_fraction_checker_catches_padding_to_the_global_longest():
    def global_max(batches):
        longest = max(max(b) for b in batches)
        return sum(longest - n for b in batches for n in b) / (longest * sum(len(b) for b in batches))

    assert failed_with(ex11.check_padding_fraction(global_max), "own longest")


def test_padding_fraction_checker_catches_dividing_by_real_tokens():
    def per_real(batches):
        return sum(len(b) * max(b) - sum(b) for b in batches) / sum(sum(b) for b in batches)

    assert failed_with(ex11.check_padding_fraction(per_real), "real tokens")


# ---- notebook 11: checkpoint averaging --------------------------------------------------------------


def test_average_checker_passes_the_solution():
    assert ex11.check_average_state_dicts(sol11.average_state_dicts).passed


def test_average_checker_catches_a_sum():
    def summed(dicts):
        return {k: sum(d[k] for d in dicts) for k in dicts[0]}

    assert failed_with(ex11.check_average_state_dicts(summed), "sum")


def test_average_checker_catches_the_last_checkpoint_only():
    assert failed_with(ex11.check_average_state_dicts(lambda dicts: dict(dicts[-1])), "last checkpoint")


def test_average_checker_catches_changing_the_inputs():
    def in_place(dicts):
        out = dicts[0]
        for d in dicts[1:]:
            for k in out:
                out[k] += d[k]
        for k in out:
            out[k] /= len(dicts)
        return out

    assert failed_with(ex11.check_average_state_dicts(in_place), "changed the input")


# ---- notebook 11: BLEU's brevity penalty ------------------------------------------------------------


def test_brevity_penalty_checker_passes_the_solution():
    assert ex11.check_brevity_penalty(sol11.brevity_penalty).passed


def test_brevity_penalty_checker_catches_the_missing_cap():
    assert failed_with(ex11.check_brevity_penalty(lambda c, r: math.exp(1 - r / c)), "capped at 1")


def test_brevity_penalty_checker_catches_the_inverted_ratio():
    assert failed_with(ex11.check_brevity_penalty(lambda c, r: 1.0 if c > r else math.exp(1 - c / r)), "upside down")

"""The checkers of notebooks 00–03 pass the reference solutions and catch plausible mistakes with a hint."""

import math

import torch

from transformer_course.exercises import nb00_introduction as ex00
from transformer_course.exercises import nb01_masks as ex01
from transformer_course.exercises import nb02_attention as ex02
from transformer_course.exercises import nb03_multi_head_attention as ex03
from transformer_course.solutions import nb00_introduction as sol00
from transformer_course.solutions import nb01_masks as sol01
from transformer_course.solutions import nb02_attention as sol02
from transformer_course.solutions import nb03_multi_head_attention as sol03


def not_done(*args, **kwargs):
    raise NotImplementedError  # the learner's stub as the notebook ships it


# --- notebook 00 --------------------------------------------------------------------------------------


def test_cost_per_layer_checker_passes_the_solution():
    assert ex00.check_cost_per_layer(sol00.cost_per_layer).passed


def test_cost_per_layer_checker_catches_n_and_d_swapped():
    def swapped(layer, n, d, k):
        return {"self-attention": n * d * d, "recurrent": n * n * d, "convolutional": k * n * d * d}[layer]

    result = ex00.check_cost_per_layer(swapped)
    assert not result.passed and "every pair of positions" in result.message


def test_cost_per_layer_checker_catches_a_missing_kernel_width():
    def no_k(layer, n, d, k):
        return {"self-attention": n * n * d, "recurrent": n * d * d, "convolutional": n * d * d}[layer]

    result = ex00.check_cost_per_layer(no_k)
    assert not result.passed and "convolution" in result.message


def test_a_stub_is_reported_as_not_done_yet():
    result = ex00.check_cost_per_layer(not_done)
    assert not result.passed and "not done yet" in result.message


# --- notebook 01 --------------------------------------------------------------------------------------


def test_mask_checkers_pass_the_solutions():
    assert ex01.check_padding_mask(sol01.padding_mask).passed
    assert ex01.check_subsequent_mask(sol01.subsequent_mask).passed
    assert ex01.check_target_mask(sol01.target_mask).passed


def test_padding_mask_checker_catches_an_inverted_mask():
    result = ex01.check_padding_mask(lambda tokens, pad_idx: (tokens == pad_idx)[:, None, None, :])
    assert not result.passed and "inverted" in result.message


def test_padding_mask_checker_catches_missing_broadcast_dimensions():
    result = ex01.check_padding_mask(lambda tokens, pad_idx: tokens != pad_idx)
    assert not result.passed and "(batch, 1, 1, len)" in result.message


def test_padding_mask_checker_catches_a_hard_coded_pad_id():
    result = ex01.check_padding_mask(lambda tokens, pad_idx: (tokens != 0)[:, None, None, :])
    assert not result.passed and "pad_idx" in result.message


def test_subsequent_mask_checker_catches_the_upper_triangle():
    result = ex01.check_subsequent_mask(lambda size: torch.ones(size, size, dtype=torch.bool).triu()[None, None])
    assert not result.passed and "future" in result.message


def test_subsequent_mask_checker_catches_a_hidden_diagonal():
    result = ex01.check_subsequent_mask(lambda size: torch.ones(size, size, dtype=torch.bool).tril(-1)[None, None])
    assert not result.passed and "itself" in result.message


def test_subsequent_mask_checker_catches_a_float_mask():
    result = ex01.check_subsequent_mask(lambda size: torch.ones(size, size).tril()[None, None])
    assert not result.passed and "boolean" in result.message


def test_target_mask_checker_catches_a_mask_without_padding():
    result = ex01.check_target_mask(
        lambda tgt, pad_idx: sol01.subsequent_mask(tgt.size(1)).expand(tgt.size(0), 1, -1, -1)
    )
    assert not result.passed and "padding" in result.message


def test_target_mask_checker_catches_or_instead_of_and():
    result = ex01.check_target_mask(
        lambda tgt, pad_idx: sol01.padding_mask(tgt, pad_idx) | sol01.subsequent_mask(tgt.size(1))
    )
    assert not result.passed and "&" in result.message


def test_local_mask_checker_passes_the_solution():
    assert ex01.check_local_mask(sol01.local_mask).passed


def test_local_mask_checker_catches_an_off_by_one_window():
    result = ex01.check_local_mask(lambda size, window: sol01.local_mask(size, window + 1))
    assert not result.passed and "keys before it" in result.message


def test_local_mask_checker_catches_a_window_that_sees_the_future():
    def symmetric(size, window):
        i, j = torch.arange(size)[:, None], torch.arange(size)[None, :]
        return ((i - j).abs() < window)[None, None]

    result = ex01.check_local_mask(symmetric)
    assert not result.passed and "after it" in result.message


# --- notebook 02 --------------------------------------------------------------------------------------


def attention_with(scale=None, dim=-1, invert_mask=False, use_mask=True):
    """A learner's attention with one mistake: another scale, softmax over another dim, the mask inverted or ignored."""

    def attention(query, key, value, mask=None):
        d = math.sqrt(query.size(-1)) if scale is None else scale(query.size(-1))
        scores = query @ key.transpose(-2, -1) / d
        if mask is not None and use_mask:
            scores = scores.masked_fill(mask if invert_mask else ~mask, float("-inf"))
        weights = scores.softmax(dim=dim)
        return weights @ value, weights

    return attention


def test_attention_checker_passes_the_solution_and_the_package():
    assert ex02.check_attention(sol02.attention).passed
    from transformer_course.attention import scaled_dot_product_attention

    assert ex02.check_attention(scaled_dot_product_attention).passed


def test_attention_checker_catches_missing_scaling():
    result = ex02.check_attention(attention_with(scale=lambda d_k: 1.0))
    assert not result.passed and "not scaled" in result.message


def test_attention_checker_catches_division_by_d_k_instead_of_its_root():
    result = ex02.check_attention(attention_with(scale=lambda d_k: d_k))
    assert not result.passed and "divided by d_k" in result.message


def test_attention_checker_catches_softmax_over_the_queries():
    result = ex02.check_attention(attention_with(dim=-2))
    assert not result.passed and "dim=-1" in result.message


def test_attention_checker_catches_an_inverted_mask():
    result = ex02.check_attention(attention_with(invert_mask=True))
    assert not result.passed and "wrong way round" in result.message


def test_attention_checker_catches_an_ignored_mask():
    result = ex02.check_attention(attention_with(use_mask=False))
    assert not result.passed and "weight 0" in result.message


def test_dot_product_std_checker_passes_the_solution():
    assert ex02.check_dot_product_std(sol02.dot_product_std).passed


def test_dot_product_std_checker_catches_the_variance():
    result = ex02.check_dot_product_std(
        lambda d_k, samples: (torch.randn(samples, d_k) * torch.randn(samples, d_k)).sum(-1).var().item()
    )
    assert not result.passed and "variance" in result.message


def test_dot_product_std_checker_catches_a_scaled_dot_product():
    result = ex02.check_dot_product_std(
        lambda d_k, samples: (
            ((torch.randn(samples, d_k) * torch.randn(samples, d_k)).sum(-1) / math.sqrt(d_k)).std().item()
        )
    )
    assert not result.passed and "raw q·k" in result.message


# --- notebook 03 --------------------------------------------------------------------------------------


def test_head_checkers_pass_the_solutions_and_the_package():
    assert ex03.check_split_heads(sol03.split_heads).passed
    assert ex03.check_merge_heads(sol03.merge_heads).passed
    assert ex03.check_parameter_count(sol03.mha_parameter_count).passed
    from transformer_course.attention import MultiHeadAttention

    assert ex03.check_parameter_count(
        lambda d_model, heads: sum(p.numel() for p in MultiHeadAttention(d_model, heads).parameters())
    ).passed


def test_split_heads_checker_catches_a_direct_view():
    result = ex03.check_split_heads(lambda x, heads: x.view(x.size(0), heads, x.size(1), -1))
    assert not result.passed and "mixes positions" in result.message


def test_split_heads_checker_catches_a_missing_transpose():
    result = ex03.check_split_heads(lambda x, heads: x.view(x.size(0), x.size(1), heads, -1))
    assert not result.passed and "transpose(1, 2)" in result.message


def test_merge_heads_checker_catches_heads_merged_in_the_wrong_order():
    result = ex03.check_merge_heads(lambda x: x.reshape(x.size(0), x.size(2), -1))
    assert not result.passed and "wrong order" in result.message


def test_merge_heads_checker_catches_a_wrong_shape():
    result = ex03.check_merge_heads(lambda x: x.transpose(1, 2))
    assert not result.passed and "shape" in result.message


def test_parameter_count_checker_catches_missing_biases():
    result = ex03.check_parameter_count(lambda d_model, heads: 4 * d_model * d_model)
    assert not result.passed and "bias" in result.message


def test_parameter_count_checker_catches_a_count_that_grows_with_heads():
    result = ex03.check_parameter_count(lambda d_model, heads: heads * 4 * (d_model * d_model + d_model))
    assert not result.passed and "grows with the number of heads" in result.message

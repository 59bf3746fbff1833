import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.testing import assert_close

import transformer_course as tc
from transformer_course.attention import KVCache, MultiHeadAttention, scaled_dot_product_attention
from transformer_course.masks import padding_mask, subsequent_mask


def qkv(batch=2, heads=3, q_len=5, k_len=7, d_k=8):
    return (
        torch.randn(batch, heads, q_len, d_k),
        torch.randn(batch, heads, k_len, d_k),
        torch.randn(batch, heads, k_len, d_k),
    )


def test_attention_equals_pytorch_sdpa_without_mask():
    q, k, v = qkv()
    out, _ = scaled_dot_product_attention(q, k, v)
    assert_close(out, F.scaled_dot_product_attention(q, k, v))


def test_attention_equals_pytorch_sdpa_with_padding_mask():
    q, k, v = qkv()
    mask = torch.tensor([[1, 1, 1, 1, 1, 0, 0], [1, 1, 0, 0, 0, 0, 0]], dtype=torch.bool)[:, None, None, :]
    out, _ = scaled_dot_product_attention(q, k, v, mask)
    assert_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=mask))


def test_attention_equals_pytorch_sdpa_with_causal_mask():
    q, k, v = qkv(q_len=6, k_len=6)
    out, _ = scaled_dot_product_attention(q, k, v, subsequent_mask(6))
    assert_close(out, F.scaled_dot_product_attention(q, k, v, is_causal=True))


def test_attention_weights_sum_to_one_and_ignore_masked_keys():
    q, k, v = qkv()
    mask = torch.tensor([[1, 1, 1, 0, 0, 0, 0], [1] * 7], dtype=torch.bool)[:, None, None, :]
    _, weights = scaled_dot_product_attention(q, k, v, mask)
    assert weights.shape == (2, 3, 5, 7)
    assert_close(weights.sum(-1), torch.ones(2, 3, 5))
    assert torch.all(weights[0, :, :, 3:] == 0)


def test_attention_matches_a_brute_force_loop():
    q, k, v = qkv(batch=1, heads=1, q_len=2, k_len=3, d_k=4)
    out, _ = scaled_dot_product_attention(q, k, v)
    for i in range(2):
        scores = [sum(q[0, 0, i, c] * k[0, 0, j, c] for c in range(4)) / math.sqrt(4) for j in range(3)]
        exp = [math.exp(s) for s in scores]
        w = [e / sum(exp) for e in exp]
        expected = sum(w[j] * v[0, 0, j] for j in range(3))
        assert_close(out[0, 0, i], expected)


def test_fully_masked_row_gives_finite_output():
    q, k, v = qkv(batch=1, heads=1, q_len=1, k_len=3)
    out, weights = scaled_dot_product_attention(q, k, v, torch.zeros(1, 1, 1, 3, dtype=torch.bool))
    assert torch.isfinite(out).all() and torch.isfinite(weights).all()


def copy_into_torch_mha(ours: MultiHeadAttention) -> nn.MultiheadAttention:
    ref = nn.MultiheadAttention(ours.d_model, ours.heads, batch_first=True)
    with torch.no_grad():
        ref.in_proj_weight.copy_(ours.in_proj.weight)
        ref.in_proj_bias.copy_(ours.in_proj.bias)
        ref.out_proj.weight.copy_(ours.out_proj.weight)
        ref.out_proj.bias.copy_(ours.out_proj.bias)
    return ref.eval()


def test_self_attention_equals_nn_multiheadattention_with_copied_weights():
    ours = MultiHeadAttention(32, 4).eval()
    ref = copy_into_torch_mha(ours)
    x = torch.randn(3, 6, 32)
    tokens = torch.tensor([[1] * 6, [1] * 4 + [0] * 2, [1] * 2 + [0] * 4])
    expected, _ = ref(x, x, x, key_padding_mask=tokens == 0, need_weights=False)
    assert_close(ours(x, mask=padding_mask(tokens, 0)), expected)


def test_cross_attention_equals_nn_multiheadattention_with_copied_weights():
    ours = MultiHeadAttention(32, 4).eval()
    ref = copy_into_torch_mha(ours)
    x, memory = torch.randn(3, 5, 32), torch.randn(3, 9, 32)
    expected, _ = ref(x, memory, memory, need_weights=False)
    assert_close(ours(x, memory), expected)


def test_per_head_weights_equal_nn_multiheadattention_weights():
    ours = MultiHeadAttention(32, 4).eval()
    ref = copy_into_torch_mha(ours)
    x = torch.randn(2, 6, 32)
    _, expected = ref(x, x, x, need_weights=True, average_attn_weights=False)
    ours.keep_weights = True
    ours(x)
    assert_close(ours.weights, expected)


@pytest.mark.parametrize("masked", [False, True])
def test_readable_and_fast_paths_agree(masked):
    fast = MultiHeadAttention(32, 4).eval()
    fast.keep_weights = False  # as in the models make_model builds: F.scaled_dot_product_attention
    readable = MultiHeadAttention(32, 4, fast=False).eval()
    readable.load_state_dict(fast.state_dict())
    x = torch.randn(2, 6, 32)
    mask = subsequent_mask(6) if masked else None
    assert_close(fast(x, mask=mask), readable(x, mask=mask))


def test_incremental_self_attention_with_cache_equals_full_causal_attention():
    mha = MultiHeadAttention(32, 4).eval()
    x = torch.randn(2, 6, 32)
    full = mha(x, mask=subsequent_mask(6))
    cache = KVCache()
    steps = [mha(x[:, t : t + 1], cache=cache) for t in range(6)]
    assert len(cache) == 6
    assert_close(torch.cat(steps, dim=1), full)


def test_cross_attention_cache_projects_memory_once():
    mha = MultiHeadAttention(32, 4).eval()
    x, memory = torch.randn(2, 3, 32), torch.randn(2, 5, 32)
    cache = KVCache()
    first = mha(x, memory, cache=cache)
    key = cache.key
    second = mha(x, memory * 0, cache=cache)  # memory is not read again
    assert cache.key is key
    assert_close(first, second)


def test_cache_reorder_picks_batch_rows():
    cache = KVCache()
    cache.key, cache.value = torch.arange(3.0)[:, None, None, None], torch.arange(3.0)[:, None, None, None]
    cache.reorder(torch.tensor([2, 2, 0]))
    assert cache.key.flatten().tolist() == [2.0, 2.0, 0.0]


def test_d_model_not_divisible_by_heads_is_a_clear_error():
    with pytest.raises(ValueError, match="d_model=500 is not divisible by heads=8"):
        MultiHeadAttention(500, 8)


def test_wrong_mask_shape_is_a_clear_error():
    mha = MultiHeadAttention(16, 2)
    with pytest.raises(ValueError, match="does not broadcast"):
        mha(torch.randn(2, 4, 16), mask=torch.ones(2, 1, 1, 5, dtype=torch.bool))


def test_query_of_wrong_width_is_a_clear_error():
    with pytest.raises(ValueError, match="d_model=16"):
        MultiHeadAttention(16, 2)(torch.randn(2, 4, 8))


def test_a_module_alone_keeps_its_weights_and_the_models_of_make_model_do_not():
    """A MultiHeadAttention built alone keeps the weights of its last call, as notebook 03's does (a skipped
    multi_head.py's fallback is this class); the models make_model builds take the fast kernel instead."""
    mha = MultiHeadAttention(32, 4).eval()
    x = torch.randn(2, 6, 32)
    mha(x, x, x)
    assert mha.weights.shape == (2, 4, 6, 6)
    model = tc.make_model(10, 10, N=1, d_model=32, d_ff=64, h=4)
    assert not any(m.keep_weights for m in model.attention_modules())


@pytest.mark.parametrize("call", ["self", "cross", "apart"])
def test_the_learners_call_with_query_key_and_value_equals_the_fused_path(call):
    """mha(query, key, value, mask): the readable path (three products, key and value apart) and the fused one
    (key is value, or all three one tensor) give the same numbers."""
    mha = MultiHeadAttention(32, 4).eval()
    x, memory = torch.randn(2, 6, 32), torch.randn(2, 5, 32)
    if call == "self":
        assert_close(mha(x, x, x, subsequent_mask(6)), mha(x, mask=subsequent_mask(6)))
    elif call == "cross":
        assert_close(mha(x, memory, memory), mha(x, memory))
    else:  # three tensors: the readable path of the learner's file; the fused one reads key for value too
        assert_close(mha(x, memory, memory.clone()), mha(x, memory, memory))

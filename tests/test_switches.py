"""The switches later models flipped (notebook 12), each one ModelConfig field, each against an independent
reference: RMSNorm, SwiGLU, grouped-query attention, rotary positions, and the decoder-only LM built of the
package's blocks."""

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.testing import assert_close

from transformer_course.attention import FixedLengthCache, KVCache, MultiHeadAttention, rotate
from transformer_course.config import Config
from transformer_course.layers import (
    LayerNorm,
    PositionwiseFeedForward,
    ResidualConnection,
    RMSNorm,
    SwiGLUFeedForward,
    swiglu_hidden,
)
from transformer_course.masks import subsequent_mask
from transformer_course.model import (
    GPT,
    Decoder,
    DecoderLayer,
    Embeddings,
    Generator,
    ModelConfig,
    count_parameters,
    lm_loss,
    make_lm,
    make_model,
)

SMALL = dict(N=2, d_model=32, d_ff=64, h=4, dropout=0.0)


# RMSNorm
def test_rmsnorm_is_its_formula():
    torch.manual_seed(0)
    norm = RMSNorm(16)
    with torch.no_grad():
        norm.weight.normal_()
    x = torch.randn(3, 5, 16)
    expected = norm.weight * x / torch.sqrt((x**2).mean(-1, keepdim=True) + 1e-5)
    assert_close(norm(x), expected)


def test_rmsnorm_equals_torch_rmsnorm_with_copied_weights():
    torch.manual_seed(0)
    ours, ref = RMSNorm(16), nn.RMSNorm(16, eps=1e-5)
    with torch.no_grad():
        ours.weight.normal_()
        ref.weight.copy_(ours.weight)
    x = torch.randn(3, 5, 16)
    assert_close(ours(x), ref(x))


def test_norm_rms_replaces_every_layernorm_of_the_model():
    model = make_model(11, 11, **SMALL, norm="rms", norm_first=True)
    assert not any(isinstance(m, LayerNorm) for m in model.modules())
    assert sum(isinstance(m, RMSNorm) for m in model.modules()) == 2 * 2 + 2 * 3 + 2  # sub-layers + final norms


# SwiGLU
def test_swiglu_is_its_formula():
    torch.manual_seed(0)
    ffn = SwiGLUFeedForward(16, 48)
    x = torch.randn(2, 3, 16)
    gate = x @ ffn.w_1.weight.T + ffn.w_1.bias
    value = x @ ffn.w_3.weight.T + ffn.w_3.bias
    expected = (gate * torch.sigmoid(gate) * value) @ ffn.w_2.weight.T + ffn.w_2.bias
    assert_close(ffn(x), expected)


@pytest.mark.parametrize("d_model, d_ff", [(512, 2048), (32, 64), (16, 48), (7, 5)])
def test_swiglu_has_the_parameters_of_the_relu_ffn_within_the_rounding(d_model, d_ff):
    relu = sum(p.numel() for p in PositionwiseFeedForward(d_model, d_ff).parameters())
    swiglu = sum(p.numel() for p in SwiGLUFeedForward(d_model, d_ff).parameters())
    assert abs(swiglu - relu) <= (3 * d_model + 2) / 2  # half a hidden unit
    assert swiglu_hidden(512, 2048) == 1365  # about 2/3 of d_ff


def test_ffn_swiglu_keeps_the_model_s_parameter_count_within_the_rounding():
    paper, swiglu = make_model(11, 11, **SMALL), make_model(11, 11, **SMALL, ffn="swiglu")
    layers = 2 * SMALL["N"]
    assert abs(count_parameters(swiglu) - count_parameters(paper)) <= layers * (3 * 32 + 2) / 2
    assert sum(isinstance(m, SwiGLUFeedForward) for m in swiglu.modules()) == layers


# grouped-query attention
def test_gqa_with_as_many_kv_heads_as_heads_is_multi_head_attention_with_the_same_weights():
    torch.manual_seed(0)
    mha, gqa = MultiHeadAttention(32, 4), MultiHeadAttention(32, 4, kv_heads=4)
    gqa.load_state_dict(mha.state_dict(), strict=True)  # the same names and shapes
    x, memory = torch.randn(2, 5, 32), torch.randn(2, 7, 32)
    assert_close(gqa(x), mha(x))
    assert_close(gqa(x, memory, memory), mha(x, memory, memory))


def test_a_model_with_n_kv_heads_equal_to_h_loads_today_s_checkpoint_strictly():
    torch.manual_seed(0)
    paper = make_model(11, 11, **SMALL)
    make_model(11, 11, **SMALL, n_kv_heads=4).load_state_dict(paper.state_dict(), strict=True)


@pytest.mark.parametrize("kv_heads", [1, 2])
@pytest.mark.parametrize("keep_weights", [True, False])
def test_gqa_equals_torch_sdpa_with_enable_gqa(kv_heads, keep_weights):
    torch.manual_seed(0)
    attention = MultiHeadAttention(32, 4, kv_heads=kv_heads)
    attention.keep_weights = keep_weights  # the readable path, then the fused one
    x = torch.randn(2, 5, 32)
    mask = subsequent_mask(5)
    assert attention.in_proj.weight.shape == (32 + 2 * kv_heads * 8, 32)
    q, k, v = F.linear(x, attention.in_proj.weight, attention.in_proj.bias).split([32, kv_heads * 8, kv_heads * 8], -1)
    heads = lambda t, n: t.view(2, 5, n, 8).transpose(1, 2)  # noqa: E731
    ref = F.scaled_dot_product_attention(heads(q, 4), heads(k, kv_heads), heads(v, kv_heads), mask, enable_gqa=True)
    expected = attention.out_proj(ref.transpose(1, 2).reshape(2, 5, 32))
    assert_close(attention(x, mask=mask), expected)


def test_gqa_cached_decoding_equals_full_decoding_and_the_cache_keeps_kv_heads():
    torch.manual_seed(0)
    attention = MultiHeadAttention(32, 4, kv_heads=2)
    x = torch.randn(2, 6, 32)
    full = attention(x, mask=subsequent_mask(6))
    cache = KVCache()
    steps = torch.cat([attention(x[:, t : t + 1], cache=cache) for t in range(6)], dim=1)
    assert_close(steps, full)
    assert cache.key.shape == (2, 2, 6, 8)  # (B, kv_heads, len, d_k): the memory GQA saves


def test_a_bad_n_kv_heads_is_one_line():
    with pytest.raises(ValueError, match=r"n_kv_heads=3 does not divide h=4"):
        Config(d_model=32, h=4, n_kv_heads=3)
    with pytest.raises(ValueError, match=r"n_kv_heads=3 does not divide h=4"):
        MultiHeadAttention(32, 4, kv_heads=3)
    with pytest.raises(ValueError, match=r"n_kv_heads=0"):
        make_model(11, 11, **SMALL, n_kv_heads=0)


# rotary positions
def brute_force_rotation(x, positions, base=10000.0):
    """Each adjacent pair (x[2i], x[2i+1]) at position m times the 2×2 rotation matrix of angle m·base^(−2i/d)."""
    out = torch.empty_like(x)
    d = x.size(-1)
    for t, m in enumerate(positions.tolist()):
        for i in range(d // 2):
            angle = m * base ** (-2 * i / d)
            rotation = torch.tensor([[math.cos(angle), -math.sin(angle)], [math.sin(angle), math.cos(angle)]])
            out[..., t, 2 * i : 2 * i + 2] = x[..., t, 2 * i : 2 * i + 2] @ rotation.T
    return out


def test_rotate_equals_a_brute_force_rotation_of_each_pair():
    torch.manual_seed(0)
    x, positions = torch.randn(2, 3, 5, 8), torch.arange(4, 9)
    assert_close(rotate(x, positions), brute_force_rotation(x, positions))


def test_rotate_equals_the_complex_number_form():
    torch.manual_seed(0)
    x, positions = torch.randn(2, 3, 5, 8), torch.arange(5)
    theta = 10000.0 ** (-torch.arange(0, 8, 2).float() / 8)  # (4,)
    turn = torch.polar(torch.ones(5, 4), positions[:, None].float() * theta)  # (5, 4): e^(i·m·θ)
    expected = torch.view_as_real(torch.view_as_complex(x.reshape(2, 3, 5, 4, 2)) * turn).flatten(-2)
    assert_close(rotate(x, positions), expected)


def test_rotated_q_dot_k_depends_only_on_the_distance():
    torch.manual_seed(0)
    q, k = torch.randn(16), torch.randn(16)
    dot = lambda m, n: rotate(q[None], torch.tensor([m])) @ rotate(k[None], torch.tensor([n]))[0]  # noqa: E731
    assert_close(dot(3, 1), dot(12, 10))
    assert_close(dot(0, 5), dot(20, 25))
    assert not torch.allclose(dot(3, 1), dot(3, 2))


def test_rope_turns_queries_and_keys_not_values():
    torch.manual_seed(0)
    attention = MultiHeadAttention(16, 2, rotary=True, fast=False)
    x = torch.randn(1, 4, 16)
    attention(x)
    q, k, v = attention.split_heads_all(attention.in_proj(x))
    pos = torch.arange(4)
    expected = (rotate(q, pos) @ rotate(k, pos).transpose(-2, -1) / math.sqrt(8)).softmax(-1)
    assert_close(attention.weights, expected)
    v_out = attention.out_proj(attention.merge_heads(expected @ v))  # the values as they are
    assert_close(attention(x), v_out)


@pytest.mark.parametrize("switches", [dict(positional="rope"), dict(positional="rope", n_kv_heads=2, norm="rms")])
def test_encoder_decoder_cached_decoding_equals_full_decoding(switches):
    torch.manual_seed(0)
    model = make_model(11, 13, **SMALL, **switches).eval()
    src, tgt = torch.randint(1, 11, (2, 7)), torch.randint(1, 13, (2, 6))
    with torch.no_grad():
        memory = model.encode(src, None)
        full = model.decode(memory, None, tgt, subsequent_mask(6))
        cache = model.new_cache()
        steps = torch.cat([model.decode(memory, None, tgt[:, t : t + 1], None, cache) for t in range(6)], dim=1)
    assert_close(steps, full)


def test_rope_with_a_fixed_length_cache_uses_its_position():
    torch.manual_seed(0)
    attention = MultiHeadAttention(16, 2, rotary=True)
    x = torch.randn(1, 5, 16)
    full = attention(x, mask=subsequent_mask(5))
    key = value = torch.zeros(1, 2, 5, 8)
    for t in range(5):
        cache = FixedLengthCache(key, value, torch.tensor([t]))
        out = attention(x[:, t : t + 1], mask=cache.mask(), cache=cache)
        key, value = cache.key, cache.value
        assert_close(out, full[:, t : t + 1])


def test_rope_model_has_no_position_table_and_a_bad_head_size_is_one_line():
    model = make_model(11, 11, **SMALL, positional="rope")
    assert not any("table" in name for name in model.state_dict())
    assert all(layer.self_attn.rotary and not layer.cross_attn.rotary for layer in model.decoder.layers)
    with pytest.raises(ValueError, match=r"d_model / h must be even"):
        Config(d_model=12, h=4, positional="rope")


# the switches are config values
def test_each_switch_is_one_modelconfig_field_checked_by_the_run_config():
    assert {"norm", "ffn", "n_kv_heads"} <= {f for f in ModelConfig.__dataclass_fields__}
    assert (ModelConfig().norm, ModelConfig().ffn, ModelConfig().n_kv_heads) == ("layer", "relu", None)
    for field, bad in [("norm", "batch"), ("ffn", "gelu"), ("positional", "alibi")]:
        with pytest.raises(ValueError, match=rf"{field} must be one of"):
            Config(**{field: bad})


# the decoder-only LM
def test_the_lm_is_built_of_the_package_s_classes():
    model = make_lm(17, **SMALL)
    assert isinstance(model, GPT)
    assert type(model.decoder) is Decoder and type(model.embed) is Embeddings and type(model.generator) is Generator
    assert all(type(layer) is DecoderLayer and layer.cross_attn is None for layer in model.decoder.layers)
    assert all(type(layer.sublayer[0]) is ResidualConnection for layer in model.decoder.layers)
    assert model.generator.proj.weight is model.embed.lut.weight  # tied


def test_the_lm_is_causal_a_position_never_sees_the_ones_after_it():
    torch.manual_seed(0)
    model = make_lm(17, **SMALL).eval()
    ids = torch.randint(0, 17, (2, 8))
    changed = ids.clone()
    changed[:, 5:] = (changed[:, 5:] + 1) % 17
    with torch.no_grad():
        assert_close(model(ids)[:, :5], model(changed)[:, :5])
        assert model(ids).shape == (2, 8, 17)


def test_lm_loss_is_the_shifted_next_token_cross_entropy():
    torch.manual_seed(0)
    logits, ids = torch.randn(2, 5, 7), torch.randint(0, 7, (2, 5))
    expected = sum(-logits[b, t].log_softmax(-1)[ids[b, t + 1]] for b in range(2) for t in range(4)) / 8
    assert_close(lm_loss(logits, ids), expected)


@pytest.mark.parametrize(
    "switches", [dict(), dict(positional="rope", norm="rms", ffn="swiglu", n_kv_heads=2, norm_first=True)]
)
def test_lm_cached_generation_equals_uncached_token_for_token(switches):
    torch.manual_seed(0)
    model = make_lm(17, **{**SMALL, **switches}).eval()
    prompt = torch.randint(0, 17, (2, 3))
    assert torch.equal(model.generate(prompt, 10), model.generate(prompt, 10, use_cache=False))


def test_lm_trains_a_little():
    torch.manual_seed(0)
    model = make_lm(11, **{**SMALL, "positional": "rope", "norm": "rms", "ffn": "swiglu", "n_kv_heads": 2})
    ids = torch.arange(10).repeat(4, 2)  # (4, 20): 0 1 … 9 0 1 … 9
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    first = lm_loss(model(ids), ids).item()
    for _ in range(40):
        loss = lm_loss(model(ids), ids)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert loss.item() < first / 4


@pytest.mark.parametrize("switches", [dict(), dict(positional="rope", n_kv_heads=1, norm_first=True)])
def test_lm_logits_one_token_at_a_time_with_the_cache_equal_the_full_forward(switches):
    torch.manual_seed(0)
    model = make_lm(17, **{**SMALL, **switches}).eval()
    ids = torch.randint(0, 17, (2, 7))
    with torch.no_grad():
        cache = model.new_cache()
        prompt = model(ids[:, :3], cache)  # three tokens at once, then one at a time
        steps = torch.cat([prompt] + [model(ids[:, t : t + 1], cache) for t in range(3, 7)], dim=1)
        assert_close(steps, model(ids))


@pytest.mark.parametrize(
    "switches", [dict(positional="rope", n_kv_heads=2), dict(positional="rope", n_kv_heads=1, ffn="swiglu")]
)
def test_the_package_s_decoders_agree_with_the_switches_on(switches):
    from transformer_course.decode import beam_search, greedy_decode

    torch.manual_seed(0)
    model = make_model(11, 13, **SMALL, **switches).eval()
    src = torch.randint(4, 11, (3, 6))
    with torch.no_grad():
        full = greedy_decode(model, src, None, 12, 1, 2, use_cache=False, return_result=True)  # the whole prefix
        cached = greedy_decode(model, src, None, 12, 1, 2, return_result=True)  # the readable cached loop
        fast = greedy_decode(model, src, None, 12, 1, 2)  # the fast path: a buffered cache
        beam = beam_search(model, src, None, 12, 1, 2, beam_size=1, length_penalty=0.0)
    uncached = full.tokens
    assert_close(cached.logits, full.logits)  # every step's scores, not only their argmax
    assert torch.equal(cached.tokens, uncached) and torch.equal(fast[:, : uncached.size(1)], uncached)
    assert torch.equal(beam[:, : uncached.size(1)], uncached)


def test_a_checkpoint_with_the_switches_loads_the_same_model(tmp_path):
    from transformer_course.checkpoint import load_checkpoint, save_checkpoint
    from transformer_course.data import SPECIALS, Vocab

    torch.manual_seed(0)
    switches = dict(positional="rope", norm="rms", ffn="swiglu", n_kv_heads=2)
    model = make_model(12, 12, **SMALL, **switches).eval()
    vocab = Vocab(SPECIALS + [f"w{i}" for i in range(4, 12)])
    save_checkpoint(tmp_path / "m.pt", model, model.config, vocab, vocab, rng=False)
    loaded = load_checkpoint(tmp_path / "m.pt").model.eval()
    assert loaded.model_config == model.model_config
    src, tgt = torch.randint(4, 12, (2, 5)), torch.randint(4, 12, (2, 4))
    with torch.no_grad():
        assert torch.equal(loaded(src, tgt, None, subsequent_mask(4)), model(src, tgt, None, subsequent_mask(4)))

"""The web graphs run the package's own forward (course_tools/web/graphs.py): the encoder-decoder is written once.

The graphs hold no attention arithmetic of their own (read from their source with ``ast``); in PyTorch they give
``model.encode``'s memory, the cross-attention keys/values the package's decoder cache holds, and, step by step,
the logits of ``model.decode`` + the generator; the package's export-friendly pieces they use
(:class:`FixedLengthCache`, ``keeping_weights``, ``memory_keys_values``, ``PositionalEncoding.at``) equal the
package's ordinary path. No ONNX export here: tests/test_web_export.py exports and runs the graphs."""

import ast
import inspect

import pytest
import torch
from torch.testing import assert_close

from course_tools.web import graphs
from transformer_course import make_model, subsequent_mask
from transformer_course.attention import FixedLengthCache, KVCache, MultiHeadAttention, keeping_weights
from transformer_course.data import BOS
from transformer_course.viz import capture_attention

VOCAB = 30
# post-LN and pre-LN, sinusoidal, learned and rotary positions, untied and tied embeddings, LayerNorm and RMSNorm,
# the ReLU and the SwiGLU FFN
MODELS = [
    dict(norm_first=False, positional="sinusoidal", tie_embeddings="none"),
    dict(norm_first=True, positional="learned", tie_embeddings="decoder"),
    dict(norm_first=True, positional="sinusoidal", tie_embeddings="all"),
    dict(norm_first=True, positional="rope", tie_embeddings="decoder", norm="rms", ffn="swiglu"),
    dict(norm_first=False, positional="rope", tie_embeddings="none", norm="rms"),
]


def small_model(seed, **options):
    torch.manual_seed(seed)
    return make_model(VOCAB, VOCAB, N=2, d_model=32, d_ff=64, h=4, max_len=16, **options).eval()


def called_names(tree):
    """The names of every function or method called in ``tree``: ``F.linear(…)`` → "linear"."""
    calls = [n.func for n in ast.walk(tree) if isinstance(n, ast.Call)]
    return {c.attr if isinstance(c, ast.Attribute) else getattr(c, "id", "") for c in calls}


def test_the_graphs_hold_no_attention_arithmetic_of_their_own():
    tree = ast.parse(inspect.getsource(graphs))
    arithmetic = {"scaled_dot_product_attention", "softmax", "linear", "matmul", "bmm", "masked_fill", "where"}
    assert called_names(tree) & arithmetic == set()
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.BinOp) and isinstance(n.op, ast.MatMult)], "a @"
    by_hand = {"in_proj", "out_proj", "split_heads", "split_heads_all", "merge_heads", "sublayer", "table"}
    touched = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    assert touched & by_hand == set(), "the graphs take a layer apart instead of calling its forward"


def test_the_check_of_the_source_sees_attention_written_by_hand():
    tree = ast.parse("def f(q, k, mha):\n    return (q @ k).softmax(-1), F.linear(q, mha.in_proj.weight)\n")
    assert {"softmax", "linear"} <= called_names(tree)


@pytest.mark.parametrize("seed, options", list(enumerate(MODELS)))
def test_the_encoder_graph_gives_encode_its_attention_and_the_decoder_caches_cross_keys_values(seed, options):
    model = small_model(seed, **options)
    for S in (1, 4, 16):
        src = torch.randint(4, VOCAB, (1, S))  # (1, S)
        with torch.no_grad():
            memory, attention, keys, values = graphs.EncoderForWeb(model)(src)
            assert_close(memory, model.encode(src, None))  # the fast path: the same numbers to rounding
            cache = model.new_cache()
            model.decode(memory, None, torch.tensor([[BOS]]), None, cache)  # fills the cross-attention caches
        assert torch.equal(attention, torch.stack(capture_attention(model, src[0], [BOS]).encoder))  # (N, h, S, S)
        assert torch.equal(keys, torch.stack([layer.cross_attn.key for layer in cache.layers]))  # (N, 1, h, S, d_k)
        assert torch.equal(values, torch.stack([layer.cross_attn.value for layer in cache.layers]))


@pytest.mark.parametrize("seed, options", list(enumerate(MODELS)))
def test_each_decoder_step_gives_decode_and_the_generator_on_the_tokens_so_far(seed, options):
    model = small_model(seed, **options)
    c = model.config
    src = torch.randint(4, VOCAB, (1, 6))  # (1, S)
    tgt = torch.cat([torch.tensor([[BOS]]), torch.randint(4, VOCAB, (1, 9))], dim=1)  # (1, T)
    L = tgt.size(1) + 2  # a cache longer than the sentence: slots stay empty at the end
    with torch.no_grad():
        memory, _, cross_keys, cross_values = graphs.EncoderForWeb(model)(src)
        hidden = model.decode(memory, None, tgt, subsequent_mask(tgt.size(1)))  # (1, T, d_model), one pass
        expected = model.generator(hidden)[0]  # (T, vocab)
        capture = capture_attention(model, src[0], tgt[0])  # teacher-forced, one pass
        decoder, cross = torch.stack(capture.decoder), torch.stack(capture.cross)  # (N, h, T, T), (N, h, T, S)
        keys = values = torch.zeros(c.N, 1, c.h, L, c.d_model // c.h)  # (N, 1, h, L, d_k)
        for position in range(tgt.size(1)):
            args = (tgt[:, position : position + 1], torch.tensor([position]), keys, values, cross_keys, cross_values)
            logits, log_probs, keys, values, self_weights, cross_weights = graphs.DecoderStepForWeb(model)(*args)
            assert_close(logits[0], expected[position])
            assert_close(log_probs, logits.log_softmax(-1))
            assert_close(self_weights[:, :, 0, : position + 1], decoder[:, :, position, : position + 1])
            assert (self_weights[:, :, 0, position + 1 :] == 0).all()  # the slots ahead are masked
            assert_close(cross_weights[:, :, 0], cross[:, :, position])
        assert (keys[:, :, :, tgt.size(1) :] == 0).all()  # never written


def test_the_graphs_leave_the_model_on_its_fast_path():
    model = small_model(0)
    modules = model.attention_modules()
    with torch.no_grad():
        _, _, k, v = graphs.EncoderForWeb(model)(torch.randint(4, VOCAB, (1, 5)))
        cache = torch.zeros(2, 1, 4, 3, 8)
        graphs.DecoderStepForWeb(model)(torch.tensor([[BOS]]), torch.tensor([0]), cache, cache, k, v)
    assert all(not m.keep_weights and m.weights is None for m in modules)


# The package's export-friendly pieces equal its ordinary path -------------------------------------------------------


def test_self_attention_with_a_fixed_length_cache_equals_full_causal_attention():
    mha = MultiHeadAttention(32, 4).eval()
    x = torch.randn(1, 6, 32)  # (B, T, d_model)
    full = mha(x, mask=subsequent_mask(6))  # (B, T, d_model)
    keys = values = torch.zeros(1, 4, 8, 8)  # (B, h, L, d_k), L = 8 > T
    steps = []
    for t in range(6):
        cache = FixedLengthCache(keys, values, torch.tensor([t]))
        steps.append(mha(x[:, t : t + 1], mask=cache.mask(), cache=cache))  # (B, 1, d_model)
        keys, values = cache.key, cache.value
    assert_close(torch.cat(steps, dim=1), full)
    grown = KVCache()
    for t in range(6):
        mha(x[:, t : t + 1], cache=grown)
    assert torch.equal(keys[:, :, :6], grown.key) and (keys[:, :, 6:] == 0).all()  # the same keys, slot by slot


def test_a_fixed_length_cache_writes_one_slot_and_masks_the_ones_after_it():
    cache = FixedLengthCache(torch.zeros(1, 1, 4, 2), torch.zeros(1, 1, 4, 2), torch.tensor([1]))
    key, value = cache.update(torch.ones(1, 1, 1, 2), 2 * torch.ones(1, 1, 1, 2))  # (B, h, 1, d_k) each
    assert key[0, 0, :, 0].tolist() == [0.0, 1.0, 0.0, 0.0] and value[0, 0, :, 0].tolist() == [0.0, 2.0, 0.0, 0.0]
    assert cache.mask().flatten().tolist() == [True, True, False, False]  # True = may attend


def test_cross_attention_reads_a_filled_cache_without_the_memory():
    mha = MultiHeadAttention(32, 4).eval()
    x, memory = torch.randn(2, 3, 32), torch.randn(2, 5, 32)
    cache = KVCache(from_memory=True)
    cache.key, cache.value = mha.memory_keys_values(memory)  # 2 × (B, h, S, d_k)
    assert torch.equal(mha(x, None, cache=cache), mha(x, memory))
    with pytest.raises(ValueError, match="pass the memory"):
        mha(x, None, cache=KVCache(from_memory=True))


def test_keeping_weights_keeps_them_inside_the_block_only():
    mha = MultiHeadAttention(32, 4).eval()
    mha.keep_weights = False  # as in every model make_model builds
    x = torch.randn(2, 6, 32)
    with keeping_weights(mha) as modules:
        mha(x)
        assert modules == [mha] and mha.weights.shape == (2, 4, 6, 6)
    assert not mha.keep_weights and mha.weights is None


def test_the_positional_encoding_at_a_position_tensor_equals_the_slice_at_that_start():
    model = small_model(1, positional="learned")
    x = torch.randn(1, 1, 32)  # (B, 1, d_model)
    for position in (0, 7, 15):
        assert torch.equal(model.tgt_pos.at(x, torch.tensor([position])), model.tgt_pos(x, start=position))


def test_the_graphs_refuse_grouped_query_attention_and_a_decoder_only_lm_in_one_line():
    from transformer_course.model import make_lm

    model = small_model(0, n_kv_heads=2)
    for graph in (graphs.EncoderForWeb, graphs.DecoderStepForWeb):
        with pytest.raises(ValueError, match=r"export-web cannot express n_kv_heads=2") as err:
            graph(model)
        assert "\n" not in str(err.value)
        with pytest.raises(ValueError, match=r"decoder-only LM"):
            graph(make_lm(VOCAB, N=1, d_model=16, d_ff=32, h=2))
    graphs.check_exportable(small_model(0, n_kv_heads=4))  # n_kv_heads = h: multi-head attention

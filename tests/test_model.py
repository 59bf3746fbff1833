import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.testing import assert_close

import transformer_course as tc
from transformer_course.model import DecoderLayer, EncoderLayer

PAD = 0


def copy_attention(ours, ref):
    ref.in_proj_weight.copy_(ours.in_proj.weight)
    ref.in_proj_bias.copy_(ours.in_proj.bias)
    ref.out_proj.weight.copy_(ours.out_proj.weight)
    ref.out_proj.bias.copy_(ours.out_proj.bias)


def copy_norm(ours, ref):
    ref.weight.copy_(ours.weight)
    ref.bias.copy_(ours.bias)


@torch.no_grad()
def copy_encoder_layer(ours: EncoderLayer, ref: nn.TransformerEncoderLayer):
    copy_attention(ours.self_attn, ref.self_attn)
    ref.linear1.load_state_dict(ours.feed_forward.w_1.state_dict())
    ref.linear2.load_state_dict(ours.feed_forward.w_2.state_dict())
    copy_norm(ours.sublayer[0].norm, ref.norm1)
    copy_norm(ours.sublayer[1].norm, ref.norm2)


@torch.no_grad()
def copy_decoder_layer(ours: DecoderLayer, ref: nn.TransformerDecoderLayer):
    copy_attention(ours.self_attn, ref.self_attn)
    copy_attention(ours.cross_attn, ref.multihead_attn)
    ref.linear1.load_state_dict(ours.feed_forward.w_1.state_dict())
    ref.linear2.load_state_dict(ours.feed_forward.w_2.state_dict())
    for i, norm in enumerate((ref.norm1, ref.norm2, ref.norm3)):
        copy_norm(ours.sublayer[i].norm, norm)


def random_tokens(batch, length, vocab, lengths):
    tokens = torch.randint(4, vocab, (batch, length))
    for b, n in enumerate(lengths):
        tokens[b, n:] = PAD
    return tokens


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer_equals_nn_transformer_encoder_layer(norm_first, no_mha_fastpath):
    ours = EncoderLayer(32, 4, 64, dropout=0.1, norm_first=norm_first).eval()
    ref = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.1, batch_first=True, norm_first=norm_first).eval()
    copy_encoder_layer(ours, ref)
    x = torch.randn(3, 7, 32)
    tokens = random_tokens(3, 7, 20, [7, 5, 2])
    expected = ref(x, src_key_padding_mask=tokens == PAD)
    assert_close(ours(x, tc.padding_mask(tokens, PAD)), expected)


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_layer_equals_nn_transformer_decoder_layer(norm_first, no_mha_fastpath):
    ours = DecoderLayer(32, 4, 64, dropout=0.1, norm_first=norm_first).eval()
    ref = nn.TransformerDecoderLayer(32, 4, 64, dropout=0.1, batch_first=True, norm_first=norm_first).eval()
    copy_decoder_layer(ours, ref)
    x, memory = torch.randn(2, 6, 32), torch.randn(2, 8, 32)
    src = random_tokens(2, 8, 20, [8, 3])
    causal = nn.Transformer.generate_square_subsequent_mask(6, dtype=torch.bool)  # True = blocked
    expected = ref(x, memory, tgt_mask=causal, memory_key_padding_mask=src == PAD)
    ours_out = ours(x, memory, tc.padding_mask(src, PAD), tc.subsequent_mask(6))
    assert_close(ours_out, expected)


@pytest.mark.parametrize("norm_first", [False, True])
def test_whole_model_equals_nn_transformer_with_copied_weights(norm_first, no_mha_fastpath):
    vocab = 30
    ours = tc.make_model(vocab, vocab, N=2, d_model=32, d_ff=64, h=4, norm_first=norm_first).eval()
    ref = nn.Transformer(32, 4, 2, 2, 64, dropout=0.1, batch_first=True, norm_first=norm_first)
    ref.encoder.enable_nested_tensor = False  # keep every position (the nested fast path drops padded ones)
    ref.eval()
    for o, r in zip(ours.encoder.layers, ref.encoder.layers):
        copy_encoder_layer(o, r)
    for o, r in zip(ours.decoder.layers, ref.decoder.layers):
        copy_decoder_layer(o, r)
    with torch.no_grad():
        if norm_first:  # pre-LN stacks end with a LayerNorm, as nn.Transformer's do
            copy_norm(ours.encoder.norm, ref.encoder.norm)
            copy_norm(ours.decoder.norm, ref.decoder.norm)
        else:  # the paper's post-LN stack has no extra final LayerNorm; nn.Transformer always adds one
            ref.encoder.norm = None
            ref.decoder.norm = None
    src = random_tokens(3, 9, vocab, [9, 6, 2])
    tgt = random_tokens(3, 7, vocab, [7, 7, 4])
    # nn.Transformer starts from embedded inputs: feed it the package's (tested separately) embeddings.
    src_x = ours.src_pos(ours.src_embed(src))
    tgt_x = ours.tgt_pos(ours.tgt_embed(tgt))
    causal = nn.Transformer.generate_square_subsequent_mask(7, dtype=torch.bool)
    expected = ref(
        src_x,
        tgt_x,
        tgt_mask=causal,
        src_key_padding_mask=src == PAD,
        tgt_key_padding_mask=tgt == PAD,
        memory_key_padding_mask=src == PAD,
    )
    hidden = ours(src, tgt, tc.padding_mask(src, PAD), tc.target_mask(tgt, PAD))
    assert_close(hidden, expected)
    assert_close(ours.generator(hidden), F.linear(expected, ours.tgt_embed.lut.weight, ours.generator.proj.bias))


def small_model(**options):
    return tc.make_model(25, 27, N=2, d_model=32, d_ff=64, h=4, **options).eval()


@pytest.mark.parametrize("norm_first", [False, True])
def test_appending_padding_changes_no_real_position(norm_first):
    model = small_model(norm_first=norm_first)
    src = torch.randint(4, 25, (2, 6))
    tgt = torch.randint(4, 27, (2, 5))
    out = model(src, tgt, tc.padding_mask(src, PAD), tc.target_mask(tgt, PAD))
    src_padded = torch.cat([src, torch.full((2, 4), PAD)], dim=1)
    tgt_padded = torch.cat([tgt, torch.full((2, 3), PAD)], dim=1)
    out_padded = model(src_padded, tgt_padded, tc.padding_mask(src_padded, PAD), tc.target_mask(tgt_padded, PAD))
    assert_close(out_padded[:, :5], out)
    memory = model.encode(src, tc.padding_mask(src, PAD))
    assert_close(model.encode(src_padded, tc.padding_mask(src_padded, PAD))[:, :6], memory)


@pytest.mark.parametrize("norm_first", [False, True])
def test_changing_future_target_tokens_changes_no_earlier_output(norm_first):
    model = small_model(norm_first=norm_first)
    src = torch.randint(4, 25, (2, 6))
    tgt = torch.randint(4, 27, (2, 8))
    t = 3
    changed = tgt.clone()
    changed[:, t + 1 :] = torch.randint(4, 27, (2, 8 - t - 1))
    src_mask = tc.padding_mask(src, PAD)
    out = model(src, tgt, src_mask, tc.target_mask(tgt, PAD))
    out_changed = model(src, changed, src_mask, tc.target_mask(changed, PAD))
    assert_close(out_changed[:, : t + 1], out[:, : t + 1])
    assert not torch.allclose(out_changed[:, t + 1 :], out[:, t + 1 :])


@pytest.mark.slow
@pytest.mark.parametrize("options", [{}, {"norm_first": True}, {"positional": "learned", "tie_embeddings": "none"}])
def test_gradients_reach_every_parameter(options):
    model = tc.make_model(25, 25, N=2, d_model=32, d_ff=64, h=4, **options)
    src, tgt = torch.randint(4, 25, (2, 6)), torch.randint(4, 25, (2, 5))
    logits = model.generator(model(src, tgt, tc.padding_mask(src, PAD), tc.target_mask(tgt, PAD)))
    F.cross_entropy(logits.flatten(0, 1), torch.randint(4, 25, (10,))).backward()
    for name, p in model.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, name


def closed_form_parameter_count(vocab, N=6, d=512, d_ff=2048):
    attention = 4 * d * d + 4 * d  # W^Q, W^K, W^V, W^O and their biases
    ffn = d * d_ff + d_ff + d_ff * d + d
    norm = 2 * d
    encoder_layer = attention + ffn + 2 * norm
    decoder_layer = 2 * attention + ffn + 3 * norm
    return N * (encoder_layer + decoder_layer) + vocab * d + vocab  # one shared embedding + output bias


@pytest.mark.slow
def test_base_model_parameter_count_matches_closed_form_and_the_paper():
    model = tc.make_model(37000, 37000, tie_embeddings="all")
    n = tc.count_parameters(model)
    assert n == closed_form_parameter_count(37000)
    assert 60e6 < n < 65e6  # the paper's Table 3 says 65M for the base model


def test_tied_embeddings_share_one_matrix():
    model = tc.make_model(30, 30, N=1, d_model=16, d_ff=32, h=2, tie_embeddings="all")
    assert model.generator.proj.weight is model.tgt_embed.lut.weight is model.src_embed.lut.weight
    untied = tc.make_model(30, 30, N=1, d_model=16, d_ff=32, h=2, tie_embeddings="none")
    assert untied.generator.proj.weight is not untied.tgt_embed.lut.weight
    decoder_tied = tc.make_model(30, 40, N=1, d_model=16, d_ff=32, h=2)  # default: decoder in/out tied
    assert decoder_tied.generator.proj.weight is decoder_tied.tgt_embed.lut.weight


def test_sharing_all_embeddings_needs_one_vocabulary():
    with pytest.raises(ValueError, match="shared vocabulary"):
        tc.make_model(30, 40, N=1, d_model=16, d_ff=32, h=2, tie_embeddings="all")


@pytest.mark.slow
@pytest.mark.parametrize("norm_first", [False, True])
def test_incremental_decoding_with_cache_equals_full_decoder(norm_first):
    model = small_model(norm_first=norm_first)
    src = random_tokens(2, 7, 25, [7, 4])
    tgt = torch.randint(4, 27, (2, 6))
    src_mask = tc.padding_mask(src, PAD)
    memory = model.encode(src, src_mask)
    full = model.decode(memory, src_mask, tgt, tc.subsequent_mask(6))
    cache = model.new_cache()
    steps = [model.decode(memory, src_mask, tgt[:, t : t + 1], None, cache) for t in range(6)]
    assert len(cache) == 6
    assert_close(torch.cat(steps, dim=1), full)


def test_make_model_rejects_unknown_options():
    with pytest.raises(ValueError, match="unknown config fields"):
        tc.make_model(10, 10, N=1, d_model=16, d_ff=32, h=2, norm_frist=True)


@pytest.mark.parametrize("field", ["N", "d_model", "d_ff", "h"])
def test_non_positive_model_sizes_are_clear_errors(field):
    sizes = dict(N=1, d_model=16, d_ff=32, h=2)
    sizes[field] = 0
    with pytest.raises(ValueError, match=f"{field} must be a positive integer"):
        tc.make_model(10, 10, **sizes)


def test_model_dropout_outside_unit_interval_is_a_clear_error():
    with pytest.raises(ValueError, match=r"dropout=1.2 is outside \[0, 1\)"):
        tc.make_model(10, 10, N=1, d_model=16, d_ff=32, h=2, dropout=1.2)


def test_model_rejects_a_float_source_mask():
    model = small_model()
    src = torch.randint(4, 25, (2, 5))
    with pytest.raises(ValueError, match="src_mask must be a boolean"):
        model.encode(src, torch.ones(2, 1, 1, 5))


def test_model_rejects_out_of_range_tokens():
    model = small_model()
    src = torch.tensor([[4, 5, 99]])
    with pytest.raises(ValueError, match=r"\[0, 25\)"):
        model.encode(src, None)


def test_model_rejects_sources_longer_than_the_positional_table():
    model = tc.make_model(10, 10, N=1, d_model=16, d_ff=32, h=2, max_len=8).eval()
    with pytest.raises(ValueError, match="max_len=8"):
        model.encode(torch.randint(4, 10, (1, 9)), None)


def test_presets_are_configs_and_build_models():
    for name, config in tc.PRESETS.items():
        assert isinstance(config, tc.Config) and config.name == name
    model = tc.build_model(tc.get_preset("toy-copy"), 20, 20)
    assert model.config.d_model == 64
    with pytest.raises(ValueError, match="unknown preset"):
        tc.get_preset("multi30k-huge")


def test_config_round_trips_through_a_dict():
    config = tc.get_preset("multi30k-cpu")
    assert tc.Config.from_dict(config.to_dict()) == config


def test_dropout_sits_where_the_paper_puts_it_by_default():
    # §5.4: on each sub-layer output and on the embedding + position sums; nowhere else.
    model = tc.make_model(20, 20, N=2, d_model=16, d_ff=32, h=2, dropout=0.1)
    active = [name for name, m in model.named_modules() if isinstance(m, nn.Dropout) and m.p > 0]
    expected_count = 2 + 2 * 2 + 2 * 3  # two position encodings, 2 sub-layers per encoder layer, 3 per decoder layer
    assert len(active) == expected_count
    assert all(
        name.endswith(("pos.dropout", "sublayer.0.dropout", "sublayer.1.dropout", "sublayer.2.dropout"))
        for name in active
    )


def test_attention_and_ffn_dropout_can_match_nn_transformer():
    model = tc.make_model(20, 20, N=1, d_model=16, d_ff=32, h=2, attention_dropout=0.1, ffn_dropout=0.1)
    assert model.decoder.layers[0].cross_attn.dropout.p == 0.1
    assert model.encoder.layers[0].feed_forward.dropout.p == 0.1


# The model's own config, and the names of its sizes -------------------------------------------------------------


def test_the_model_keeps_its_architecture_beside_the_run_config():
    from dataclasses import fields

    from transformer_course.model import ModelConfig

    run = tc.get_preset("multi30k-cpu")
    model = tc.build_model(run, 30, 40)
    assert model.config is run  # what checkpoints store
    assert isinstance(model.model_config, ModelConfig)
    for f in fields(ModelConfig):  # every architecture field, copied from the run config
        assert getattr(model.model_config, f.name) == getattr(run, f.name), f.name
    assert {f.name for f in fields(ModelConfig)} < {f.name for f in fields(tc.Config)}  # the model's part only


def test_a_model_config_alone_builds_the_same_model_as_the_run_config():
    from transformer_course.model import ModelConfig, build_model

    run = tc.get_preset("toy-copy")
    torch.manual_seed(3)
    from_run = build_model(run, 14, 14)
    torch.manual_seed(3)
    from_architecture = build_model(ModelConfig.of(run), 14, 14)
    assert from_architecture.model_config == from_run.model_config
    for (name, a), (_, b) in zip(from_run.state_dict().items(), from_architecture.state_dict().items()):
        assert_close(a, b, rtol=0, atol=0, msg=name)


def test_the_vocabulary_sizes_are_named_as_sizes_and_the_old_names_warn():
    model = tc.make_model(11, 13, N=1, d_model=16, d_ff=32, h=2)
    assert (model.src_vocab_size, model.tgt_vocab_size) == (11, 13)
    with pytest.warns(DeprecationWarning, match="src_vocab_size"):
        assert model.src_vocab == 11
    with pytest.warns(DeprecationWarning, match="tgt_vocab_size"):
        assert model.tgt_vocab == 13


def test_a_learned_positional_table_keeps_its_normal_0_02_start():
    """Xavier initialises every matrix except the learned position table, which starts as N(0, 0.02²)
    (layers.PositionalEncoding). Xavier for a (512, 256) matrix would have std sqrt(2 / 768) ≈ 0.051."""
    model = tc.make_model(50, 50, N=1, d_model=256, d_ff=64, h=4, positional="learned", max_len=512)
    for pos in (model.src_pos, model.tgt_pos):
        table = pos.table.detach()  # (512, 256): 131,072 draws
        assert abs(table.mean().item()) < 0.001
        assert 0.0195 < table.std().item() < 0.0205
    bound = (6 / (50 + 256)) ** 0.5  # Xavier uniform's bound for the (50, 256) embedding
    lut = model.src_embed.lut.weight.detach()
    assert lut.abs().max().item() <= bound and lut.std().item() > 0.8 * bound / 3**0.5

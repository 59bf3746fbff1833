"""The checkers of notebooks 04–07 pass the reference solutions and catch plausible mistakes with a hint."""

import math

import torch

from transformer_course.exercises import nb04_layernorm_residual as ex04
from transformer_course.exercises import nb05_embeddings_positional_encoding as ex05
from transformer_course.exercises import nb06_encoder as ex06
from transformer_course.exercises import nb07_decoder as ex07
from transformer_course.solutions import nb04_layernorm_residual as sol04
from transformer_course.solutions import nb05_embeddings_positional_encoding as sol05
from transformer_course.solutions import nb06_encoder as sol06
from transformer_course.solutions import nb07_decoder as sol07


def failed_with(result, *words):
    """The check failed and its message names the mistake."""
    return not result.passed and all(w.lower() in result.message.lower() for w in words)


# ---- notebook 04: LayerNorm and residual connections ------------------------------------------------


def test_layer_norm_checker_passes_the_solution():
    assert ex04.check_layer_norm(sol04.layer_norm).passed


def test_layer_norm_checker_catches_batch_norm():
    def batch_norm(x, gamma, beta, eps=1e-5):
        return gamma * (x - x.mean(0, keepdim=True)) / torch.sqrt(x.var(0, unbiased=False, keepdim=True) + eps) + beta

    assert failed_with(ex04.check_layer_norm(batch_norm), "BatchNorm")


def test_layer_norm_checker_catches_the_unbiased_variance():
    def unbiased(x, gamma, beta, eps=1e-5):
        return gamma * (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, keepdim=True) + eps) + beta

    assert failed_with(ex04.check_layer_norm(unbiased), "unbiased")


def test_layer_norm_checker_catches_missing_gain_and_bias():
    def no_affine(x, gamma, beta, eps=1e-5):
        return (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, unbiased=False, keepdim=True) + eps)

    assert failed_with(ex04.check_layer_norm(no_affine), "γ")


def test_layer_norm_checker_says_not_done_for_the_stub():
    def stub(x, gamma, beta, eps=1e-5):
        raise NotImplementedError

    assert failed_with(ex04.check_layer_norm(stub), "not done yet")


def test_residual_checker_passes_the_solution():
    assert ex04.check_residual(sol04.residual).passed


def test_residual_checker_catches_post_and_pre_ln_swapped():
    def swapped(x, sublayer, norm, norm_first):
        return sol04.residual(x, sublayer, norm, not norm_first)

    assert failed_with(ex04.check_residual(swapped), "norm_first=False", "LayerNorm(x + Sublayer(x))")


def test_residual_checker_catches_a_missing_residual():
    def no_residual(x, sublayer, norm, norm_first):
        return sublayer(norm(x)) if norm_first else norm(sublayer(x))

    assert failed_with(ex04.check_residual(no_residual), "residual x is missing")


def test_residual_checker_reports_an_error_in_the_learner_code_without_traceback():
    def broken(x, sublayer, norm, norm_first):
        return x + sublayer(x[..., :3])

    result = ex04.check_residual(broken)
    assert failed_with(result, "your code raised")


# ---- notebook 05: embeddings and positional encoding ------------------------------------------------


def test_positional_encoding_checker_passes_the_solution():
    assert ex05.check_positional_encoding(sol05.positional_encoding).passed


def test_positional_encoding_checker_catches_sin_and_cos_swapped():
    def swapped(max_len, d_model):
        pe = sol05.positional_encoding(max_len, d_model)
        return pe[:, [i + 1 if i % 2 == 0 else i - 1 for i in range(d_model)]]

    assert failed_with(ex05.check_positional_encoding(swapped), "swapped")


def test_positional_encoding_checker_catches_halves_instead_of_interleaving():
    def halves(max_len, d_model):
        pe = sol05.positional_encoding(max_len, d_model)
        return torch.cat([pe[:, 0::2], pe[:, 1::2]], dim=1)

    assert failed_with(ex05.check_positional_encoding(halves), "interleaves")


def test_positional_encoding_checker_catches_the_exponent_i_over_d_model():
    def wrong_exponent(max_len, d_model):
        pos = torch.arange(max_len)[:, None].float()
        angle = pos / 10000 ** (torch.arange(d_model // 2).float() / d_model)
        pe = torch.zeros(max_len, d_model)
        pe[:, 0::2], pe[:, 1::2] = angle.sin(), angle.cos()
        return pe

    assert failed_with(ex05.check_positional_encoding(wrong_exponent), "2i/d_model")


def test_positional_encoding_checker_names_a_wrong_shape():
    assert failed_with(ex05.check_positional_encoding(lambda n, d: sol05.positional_encoding(d, n)), "shape")


def test_embed_checker_passes_the_solution():
    assert ex05.check_embed(sol05.embed).passed


def test_embed_checker_catches_the_missing_sqrt_d_model():
    assert failed_with(ex05.check_embed(lambda tokens, lut, pe: lut(tokens) + pe[: tokens.size(1)]), "√d_model")


def test_embed_checker_catches_positions_scaled_too():
    def both_scaled(tokens, lut, pe):
        return (lut(tokens) + pe[: tokens.size(1)]) * math.sqrt(lut.embedding_dim)

    assert failed_with(ex05.check_embed(both_scaled), "only the embeddings")


def test_embed_checker_catches_missing_positions():
    assert failed_with(ex05.check_embed(lambda tokens, lut, pe: lut(tokens) * math.sqrt(16)), "not added")


def test_shift_matrix_checker_passes_the_solution():
    assert ex05.check_shift_matrix(sol05.shift_matrix).passed


def test_shift_matrix_checker_catches_the_backward_rotation():
    assert failed_with(ex05.check_shift_matrix(lambda k, d: sol05.shift_matrix(k, d).T), "backwards")


def test_shift_matrix_checker_catches_one_frequency_for_every_pair():
    def one_frequency(k, d_model):
        c, s = math.cos(k), math.sin(k)
        return torch.block_diag(*[torch.tensor([[c, s], [-s, c]])] * (d_model // 2))

    assert failed_with(ex05.check_shift_matrix(one_frequency), "pair")


def test_shift_matrix_checker_catches_the_identity():
    assert failed_with(ex05.check_shift_matrix(lambda k, d: torch.eye(d)), "differs")


# ---- notebook 06: the encoder ----------------------------------------------------------------------


def test_encoder_layer_checker_passes_the_solution():
    assert ex06.check_encoder_layer(sol06.encoder_layer).passed


def test_encoder_layer_checker_catches_an_ignored_padding_mask():
    def no_mask(x, src_mask, self_attn, feed_forward, norm_1, norm_2):
        return sol06.encoder_layer(x, None, self_attn, feed_forward, norm_1, norm_2)

    assert failed_with(ex06.check_encoder_layer(no_mask), "padding mask")


def test_encoder_layer_checker_catches_pre_ln():
    def pre_ln(x, src_mask, self_attn, feed_forward, norm_1, norm_2):
        x = x + self_attn(norm_1(x), mask=src_mask)
        return x + feed_forward(norm_2(x))

    assert failed_with(ex06.check_encoder_layer(pre_ln), "pre-LN")


def test_encoder_layer_checker_catches_missing_residuals():
    def no_residual(x, src_mask, self_attn, feed_forward, norm_1, norm_2):
        return norm_2(feed_forward(norm_1(self_attn(x, mask=src_mask))))

    assert failed_with(ex06.check_encoder_layer(no_residual), "residual")


def test_encoder_parameter_count_checker_passes_the_solution():
    assert ex06.check_encoder_parameter_count(sol06.encoder_parameter_count).passed


def test_encoder_parameter_count_checker_catches_missing_biases():
    def no_bias(N, d_model, d_ff):
        return N * (4 * d_model * d_model + 2 * d_model * d_ff + 4 * d_model)

    assert failed_with(ex06.check_encoder_parameter_count(no_bias), "biases")


def test_encoder_parameter_count_checker_catches_a_single_layer():
    def one_layer(N, d_model, d_ff):
        return sol06.encoder_parameter_count(1, d_model, d_ff)

    assert failed_with(ex06.check_encoder_parameter_count(one_layer), "N of them")


def test_encoder_parameter_count_checker_catches_three_projections():
    def no_output_projection(N, d_model, d_ff):
        return sol06.encoder_parameter_count(N, d_model, d_ff) - N * (d_model * d_model + d_model)

    assert failed_with(ex06.check_encoder_parameter_count(no_output_projection), "W^O")


# ---- notebook 07: the decoder and the whole model ------------------------------------------------


def test_decoder_layer_checker_passes_the_solution():
    assert ex07.check_decoder_layer(sol07.decoder_layer).passed


def test_decoder_layer_checker_catches_an_unmasked_self_attention():
    def unmasked(x, memory, src_mask, tgt_mask, self_attn, cross_attn, feed_forward, norms):
        return sol07.decoder_layer(x, memory, src_mask, None, self_attn, cross_attn, feed_forward, norms)

    assert failed_with(ex07.check_decoder_layer(unmasked), "tgt_mask")


def test_decoder_layer_checker_catches_cross_attention_to_itself():
    def self_instead_of_cross(x, memory, src_mask, tgt_mask, self_attn, cross_attn, feed_forward, norms):
        x = norms[0](x + self_attn(x, mask=tgt_mask))
        x = norms[1](x + cross_attn(x, x))
        return norms[2](x + feed_forward(x))

    assert failed_with(ex07.check_decoder_layer(self_instead_of_cross), "encoder output")


def test_decoder_layer_checker_catches_a_missing_source_mask():
    def no_src_mask(x, memory, src_mask, tgt_mask, self_attn, cross_attn, feed_forward, norms):
        return sol07.decoder_layer(x, memory, None, tgt_mask, self_attn, cross_attn, feed_forward, norms)

    assert failed_with(ex07.check_decoder_layer(no_src_mask), "src_mask")


def test_decoder_layer_checker_turns_a_mask_shape_error_into_a_message():
    def swapped_masks(x, memory, src_mask, tgt_mask, self_attn, cross_attn, feed_forward, norms):
        return sol07.decoder_layer(x, memory, tgt_mask, src_mask, self_attn, cross_attn, feed_forward, norms)

    assert failed_with(ex07.check_decoder_layer(swapped_masks), "your code raised ValueError")


def test_transformer_parameter_count_checker_passes_the_solution():
    assert ex07.check_transformer_parameter_count(sol07.transformer_parameter_count).passed


def test_transformer_parameter_count_checker_catches_untied_embeddings():
    def untied(vocab, N, d_model, d_ff):
        return sol07.transformer_parameter_count(vocab, N, d_model, d_ff) + 2 * vocab * d_model

    assert failed_with(ex07.check_transformer_parameter_count(untied), "tied")


def test_transformer_parameter_count_checker_catches_a_decoder_without_cross_attention():
    def no_cross(vocab, N, d_model, d_ff):
        return sol06.encoder_parameter_count(N, d_model, d_ff) * 2 + vocab * d_model + vocab

    assert failed_with(ex07.check_transformer_parameter_count(no_cross), "cross-attention")


def test_transformer_parameter_count_checker_agrees_with_the_paper_base_model_size():
    n = sol07.transformer_parameter_count(37000, 6, 512, 2048)
    assert 60e6 < n < 65e6  # Table 3: 65M for the base model (the paper's count is rounded up)


def test_next_word_log_probs_checker_passes_the_solution():
    assert ex07.check_next_word_log_probs(sol07.next_word_log_probs).passed


def test_next_word_log_probs_checker_catches_logits():
    def logits(model, memory, src_mask, tgt, tgt_mask):
        return model.generator(model.decode(memory, src_mask, tgt, tgt_mask)[:, -1])

    assert failed_with(ex07.check_next_word_log_probs(logits), "logits", "log_softmax")


def test_next_word_log_probs_checker_catches_every_position():
    def every_position(model, memory, src_mask, tgt, tgt_mask):
        return model.generator(model.decode(memory, src_mask, tgt, tgt_mask)).log_softmax(-1)

    assert failed_with(ex07.check_next_word_log_probs(every_position), "last one")


def test_next_word_log_probs_checker_catches_the_first_position():
    def first(model, memory, src_mask, tgt, tgt_mask):
        return model.generator(model.decode(memory, src_mask, tgt, tgt_mask)[:, 0]).log_softmax(-1)

    assert failed_with(ex07.check_next_word_log_probs(first), "LAST position")

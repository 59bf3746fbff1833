"""Checkers for the exercises of notebook 07 (the decoder and the whole model; paper §3.1, §3.2.3, §3.4).

from transformer_course.exercises import nb07_decoder as ex
ex.check_decoder_layer(decoder_layer)
ex.check_transformer_parameter_count(transformer_parameter_count)
ex.check_next_word_log_probs(next_word_log_probs)
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from ..masks import padding_mask, subsequent_mask, target_mask
from ..model import DecoderLayer, count_parameters, make_model
from . import Hint, Result, expect_tensor, name_known_mistake, run_check


def check_decoder_layer(decoder_layer: Callable[..., Tensor]) -> Result:
    """``decoder_layer(x, memory, src_mask, tgt_mask, self_attn, cross_attn, feed_forward, norms)`` must
    equal the package's post-LN ``DecoderLayer`` with the same parts."""

    def check() -> None:
        torch.manual_seed(7)
        layer = DecoderLayer(16, 4, 32, dropout=0.0).eval()
        norms = [s.norm for s in layer.sublayer]
        with torch.no_grad():
            for norm in norms:
                norm.weight.uniform_(0.5, 1.5)
                norm.bias.normal_(0, 0.5)
        src = torch.tensor([[5, 6, 7, 8, 9, 10], [5, 6, 7, 0, 0, 0]])
        src_mask = padding_mask(src, 0)  # (2, 1, 1, 6)
        tgt_mask = subsequent_mask(4)  # (1, 1, 4, 4)
        x, memory = torch.randn(2, 4, 16), torch.randn(2, 6, 16)
        sa, ca, ffn = layer.self_attn, layer.cross_attn, layer.feed_forward

        def layer_with(self_mask, cross_keys, cross_mask):
            h = norms[0](x + sa(x, mask=self_mask))
            h = norms[1](h + ca(h, cross_keys(h), mask=cross_mask))
            return norms[2](h + ffn(h))

        with torch.no_grad():
            expected = layer(x, memory, src_mask, tgt_mask)
            wrong = {
                "the self-attention was not masked: each position saw the words after it. "
                "Pass tgt_mask to self_attn": layer_with(None, lambda h: memory, src_mask),
                "cross-attention must take its keys and values from the encoder output: "
                "cross_attn(x, memory, mask=src_mask)": layer_with(tgt_mask, lambda h: h, None),
                "the source padding mask was not passed to cross-attention: the decoder attended to <pad> "
                "in the source. Pass mask=src_mask": layer_with(tgt_mask, lambda h: memory, None),
                "that is pre-LN (x + Sublayer(LayerNorm(x))); the paper's layer is post-LN: "
                "LayerNorm(x + Sublayer(x))": DecoderLayer.forward(_pre_ln_copy(layer), x, memory, src_mask, tgt_mask),
            }
            got = decoder_layer(x.clone(), memory, src_mask, tgt_mask, sa, ca, ffn, norms)
        name_known_mistake(got, expected, wrong)
        expect_tensor(got, expected, "decoder_layer(x, memory, …) for x (2, 4, 16) and memory (2, 6, 16)")

    return run_check("decoder_layer", check, "equals the package's DecoderLayer (masked self, cross, FFN; post-LN)")


def _pre_ln_copy(layer: DecoderLayer) -> DecoderLayer:
    pre = DecoderLayer(16, 4, 32, dropout=0.0, norm_first=True).eval()
    pre.load_state_dict(layer.state_dict())
    return pre


def check_transformer_parameter_count(transformer_parameter_count: Callable[[int, int, int, int], int]) -> Result:
    """``transformer_parameter_count(vocab, N, d_model, d_ff)`` must equal the parameters of
    ``make_model(vocab, vocab, N, d_model, d_ff, tie_embeddings="all")``."""

    def check() -> None:
        for vocab, N, d_model, d_ff in ((11, 1, 8, 16), (50, 2, 16, 24)):
            model = make_model(vocab, vocab, N=N, d_model=d_model, d_ff=d_ff, h=4, tie_embeddings="all")
            expected = count_parameters(model)
            got = transformer_parameter_count(vocab, N, d_model, d_ff)
            what = f"transformer_parameter_count(vocab={vocab}, N={N}, d_model={d_model}, d_ff={d_ff})"
            if isinstance(got, float) and got.is_integer():
                got = int(got)
            if not isinstance(got, int) or isinstance(got, bool):
                raise Hint(f"{what} should return an int, got {type(got).__name__}")
            if got == expected:
                continue
            d = d_model
            misses = {
                expected + 2 * vocab * d: "the three embedding matrices are tied (§3.4): source embedding, "
                "target embedding and generator weight are one vocab × d_model matrix",
                expected + vocab * d: "with tie_embeddings='all' the source and target embeddings and the "
                "generator share ONE matrix; you counted two",
                expected
                - N * (4 * d * d + 4 * d + 2 * d): "each decoder layer has a second attention (cross-attention "
                "over the encoder output) with its own LayerNorm",
                expected - vocab: "the generator has a bias, one per word of the vocabulary",
                expected
                - vocab * d
                - vocab: "the embedding (vocab × d_model, shared) and the generator's bias are missing",
            }
            raise Hint(
                f"{what} returned {got:,}, expected {expected:,}: "
                + misses.get(
                    got,
                    "count: encoder layer = attention + FFN + 2 LayerNorms; decoder layer = 2 attentions + FFN "
                    "+ 3 LayerNorms; times N; plus one shared vocab × d_model matrix and the generator bias",
                )
            )

    return run_check("transformer_parameter_count", check, "matches count_parameters(make_model(...)) for two sizes")


def check_next_word_log_probs(next_word_log_probs: Callable[..., Tensor]) -> Result:
    """``next_word_log_probs(model, memory, src_mask, tgt, tgt_mask)`` must return
    log_softmax(generator(decoder output at the last position)): (batch, tgt_vocab)."""

    def check() -> None:
        torch.manual_seed(7)
        model = make_model(13, 17, N=1, d_model=16, d_ff=32, h=4, dropout=0.0).eval()
        src = torch.tensor([[5, 6, 7, 8], [9, 10, 0, 0]])
        tgt = torch.tensor([[2, 4, 5], [2, 6, 7]])
        src_mask, tgt_mask = padding_mask(src, 0), target_mask(tgt, 0)
        with torch.no_grad():
            memory = model.encode(src, src_mask)
            hidden = model.decode(memory, src_mask, tgt, tgt_mask)  # (2, 3, 16)
            logits = model.generator(hidden)  # (2, 3, 17)
            expected = logits[:, -1].log_softmax(-1)  # (2, 17)
            wrong = {
                "these are logits: model.generator returns scores, not log-probabilities; apply "
                ".log_softmax(dim=-1)": logits[:, -1],
                "these are probabilities (softmax); the function should return log-probabilities "
                "(.log_softmax(dim=-1))": logits[:, -1].softmax(-1),
                "you took the first target position; the LAST position predicts the next word": logits[
                    :, 0
                ].log_softmax(-1),
                "the softmax ran over the wrong dimension: it should run over the vocabulary (dim=-1)": logits.log_softmax(
                    1
                )[:, -1],
            }
            got = next_word_log_probs(model, memory, src_mask, tgt, tgt_mask)
        if isinstance(got, Tensor) and got.shape == logits.shape:
            raise Hint(
                f"got shape {tuple(got.shape)} = (batch, tgt_len, vocab): that is every position; "
                "keep only the last one, hidden[:, -1], to get (batch, vocab)"
            )
        name_known_mistake(got, expected, wrong)
        expect_tensor(got, expected, "next_word_log_probs(...) for a batch of 2 and a vocabulary of 17")

    return run_check("next_word_log_probs", check, "log-probabilities of the next word, (batch, vocab)")

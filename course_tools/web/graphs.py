"""The two graphs the browser runs: the encoder, and one decoder step with its key/value cache (notebooks 09 and
10; paper §3.2, §6.1).

A translation model is exported as two pieces, and the decoding loop runs in JavaScript:

    src ids (1, S) ──EncoderForWeb──▶ memory, encoder self-attention, the cross-attention keys/values
    token (1, 1), position ──DecoderStepForWeb──▶ log-probabilities of the next token, the updated self-attention
                                                 cache, decoder self- and cross-attention of this step

Both wrap a trained :class:`~transformer_course.model.Transformer` and run its own forward methods: the encoder
is ``model.encode``; a step is the decoder's ``forward`` with the package's caches, then the generator. Nothing
of attention is written here. They differ from ``model.encode`` / ``model.decode`` only in what goes in and out:

- every attention weight is an output (as in Georgia Tech's Transformer Explainer): the attention modules keep
  them inside :func:`~transformer_course.attention.keeping_weights`, on their readable path;
- the cache is plain tensors in and out, which an ONNX graph can hold, instead of the Python objects of
  :class:`~transformer_course.model.DecoderCache`. Each step wraps them in the package's caches again: the
  cross-attention keys/values, projected once by the encoder graph with
  :meth:`~transformer_course.attention.MultiHeadAttention.memory_keys_values`, and the self-attention keys/values
  in a :class:`~transformer_course.attention.FixedLengthCache`.

The self-attention cache has a fixed length ``L`` (the most positions the sentence may reach, chosen by the
caller): step ``position`` writes its key and value into slot ``position`` and attends to slots ``0 …
position`` only (the others are masked, so their weights are exactly 0). One graph then serves every step,
the first one included, without a dimension that starts at 0.

Sentences go one at a time (batch 1) and have no padding, as in :func:`transformer_course.decode.translate`
(which decodes sentences of equal length together, so no mask is needed there either).

Of the later switches (notebook 12) the graphs carry RMSNorm, the SwiGLU FFN and rotary positions (the step's
``position`` turns its query and key), all inside the package's forward. Grouped-query attention is refused in
one line (the page's caches hold h heads), and so is a decoder-only LM (it has no encoder): :func:`check_exportable`.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from transformer_course.attention import FixedLengthCache, keeping_weights
from transformer_course.model import GPT, DecoderCache, Transformer

__all__ = ["EncoderForWeb", "DecoderStepForWeb", "ENCODER_OUTPUTS", "STEP_INPUTS", "STEP_OUTPUTS", "check_exportable"]

ENCODER_OUTPUTS = ["memory", "encoder_attention", "cross_keys", "cross_values"]
STEP_INPUTS = ["token", "position", "self_keys", "self_values", "cross_keys", "cross_values"]
STEP_OUTPUTS = ["logits", "log_probs", "new_self_keys", "new_self_values", "decoder_attention", "cross_attention"]


def check_exportable(model: nn.Module) -> None:
    """One ValueError naming what the page cannot run: a decoder-only LM, or grouped-query attention."""
    if isinstance(model, GPT):
        raise ValueError("export-web exports a translation model (encoder-decoder); a decoder-only LM has no encoder")
    c = model.model_config
    if c.n_kv_heads not in (None, c.h):
        raise ValueError(
            f"export-web cannot express n_kv_heads={c.n_kv_heads}: the page's caches hold h={c.h} heads; "
            "translate with the course's decoder, or train with n_kv_heads=None"
        )


class EncoderForWeb(nn.Module):
    """src (1, S) token ids → memory (1, S, d_model), encoder_attention (N, h, S, S),
    cross_keys and cross_values (N, 1, h, S, d_k): what every decoder layer's cross-attention reads."""

    def __init__(self, model: Transformer) -> None:
        super().__init__()
        check_exportable(model)
        self.model = model
        self.eval()  # no dropout: the graphs are for inference

    def forward(self, src: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        m = self.model
        with keeping_weights(m.encoder):
            memory = m.encode(src, None)  # (1, S, d_model)
            attention = torch.stack([layer.self_attn.weights[0] for layer in m.encoder.layers])  # (N, h, S, S)
        kv = [layer.cross_attn.memory_keys_values(memory) for layer in m.decoder.layers]  # N × 2 × (1, h, S, d_k)
        keys, values = (torch.stack(t) for t in zip(*kv))  # 2 × (N, 1, h, S, d_k)
        return memory, attention, keys, values


def step_cache(
    model: Transformer,
    position: Tensor,
    self_keys: Tensor,
    self_values: Tensor,
    cross_keys: Tensor,
    cross_values: Tensor,
) -> DecoderCache:
    """The step's cache tensors as the package's :class:`DecoderCache`: layer i's self-attention keys/values in a
    :class:`FixedLengthCache` (slot ``position`` is this step's), its cross-attention keys/values as they are."""
    cache = model.new_cache()
    for i, layer in enumerate(cache.layers):
        layer.self_attn = FixedLengthCache(self_keys[i], self_values[i], position)  # 2 × (1, h, L, d_k)
        layer.cross_attn.key, layer.cross_attn.value = cross_keys[i], cross_values[i]  # 2 × (1, h, S, d_k)
    return cache


class DecoderStepForWeb(nn.Module):
    """One greedy (or beam) step: the token at ``position`` → the next token's scores.

    Inputs: token (1, 1), position (1,) int64, self_keys and self_values (N, 1, h, L, d_k) (the cache of
    the decoder's self-attention, L ≥ position + 1), cross_keys and cross_values (N, 1, h, S, d_k) from
    :class:`EncoderForWeb`. Outputs: logits and log_probs (1, vocab), new_self_keys and new_self_values
    (N, 1, h, L, d_k) (slot ``position`` filled in), decoder_attention (N, h, 1, L) (0 beyond ``position``)
    and cross_attention (N, h, 1, S).
    """

    def __init__(self, model: Transformer) -> None:
        super().__init__()
        check_exportable(model)
        self.model = model
        self.eval()  # no dropout: the graphs are for inference

    def forward(
        self,
        token: Tensor,
        position: Tensor,
        self_keys: Tensor,
        self_values: Tensor,
        cross_keys: Tensor,
        cross_values: Tensor,
    ) -> tuple[Tensor, ...]:
        m = self.model
        cache = step_cache(m, position, self_keys, self_values, cross_keys, cross_values)
        tgt_mask = cache.layers[0].self_attn.mask()  # (1, 1, 1, L): this step's slot and the ones before it
        x = m.tgt_pos.at(m.tgt_embed(token), position)  # (1, 1, d_model)
        with keeping_weights(m.decoder):
            hidden = m.decoder(x, None, None, tgt_mask, cache)  # (1, 1, d_model); no memory: the cache holds it
            self_weights = torch.stack([layer.self_attn.weights[0] for layer in m.decoder.layers])  # (N, h, 1, L)
            cross_weights = torch.stack([layer.cross_attn.weights[0] for layer in m.decoder.layers])  # (N, h, 1, S)
        logits = m.generator(hidden[:, -1])  # (1, vocab)
        return (
            logits,
            logits.log_softmax(dim=-1),  # (1, vocab): what greedy_decode takes the argmax of
            torch.stack([layer.self_attn.key for layer in cache.layers]),  # (N, 1, h, L, d_k)
            torch.stack([layer.self_attn.value for layer in cache.layers]),
            self_weights,
            cross_weights,
        )

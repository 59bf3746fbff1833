"""The two graphs the browser runs: the encoder, and one decoder step with its key/value cache (issue 24;
notebooks 09 and 10; paper §3.2, §6.1).

A translation model is exported as two pieces, and the decoding loop runs in JavaScript:

    src ids (1, S) ──EncoderForWeb──▶ memory, encoder self-attention, the cross-attention keys/values
    token (1, 1), position ──DecoderStepForWeb──▶ log-probabilities of the next token, the updated self-attention
                                                 cache, decoder self- and cross-attention of this step

Both wrap a trained :class:`~transformer_course.model.Transformer` and use its own modules and weights; they
differ from ``model.encode`` / ``model.decode`` only in what they return: every attention weight is an output
(as in Georgia Tech's Transformer Explainer), and the cache is plain tensors in and out instead of the Python
:class:`~transformer_course.model.DecoderCache` objects, which an ONNX graph cannot hold.

The self-attention cache has a fixed length ``L`` (the most positions the sentence may reach, chosen by the
caller): step ``position`` writes its key and value into slot ``position`` and attends to slots ``0 …
position`` only (the others are masked, so their weights are exactly 0). One graph then serves every step,
the first one included, without a dimension that starts at 0.

Sentences go one at a time (batch 1) and have no padding, as in :func:`transformer_course.decode.translate`
(which decodes sentences of equal length together, so no mask is needed there either).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from transformer_course.attention import MultiHeadAttention, scaled_dot_product_attention
from transformer_course.model import Transformer

__all__ = ["EncoderForWeb", "DecoderStepForWeb", "ENCODER_OUTPUTS", "STEP_INPUTS", "STEP_OUTPUTS"]

ENCODER_OUTPUTS = ["memory", "encoder_attention", "cross_keys", "cross_values"]
STEP_INPUTS = ["token", "position", "self_keys", "self_values", "cross_keys", "cross_values"]
STEP_OUTPUTS = ["logits", "log_probs", "new_self_keys", "new_self_values", "decoder_attention", "cross_attention"]


def self_attention(mha: MultiHeadAttention, x: Tensor) -> tuple[Tensor, Tensor]:
    """The readable path of ``mha(x)`` with no mask: (output (B, T, d_model), weights (B, h, T, T))."""
    q, k, v = mha.split_heads_all(mha.in_proj(x))  # 3 × (B, h, T, d_k)
    out, weights = scaled_dot_product_attention(q, k, v)  # (B, h, T, d_k), (B, h, T, T)
    return mha.out_proj(mha.merge_heads(out)), weights  # (B, T, d_model)


def cross_keys_values(mha: MultiHeadAttention, memory: Tensor) -> tuple[Tensor, Tensor]:
    """The keys and values cross-attention reads from the memory, as its cache holds them: 2 × (B, h, S, d_k)."""
    d = mha.d_model
    kv = F.linear(memory, mha.in_proj.weight[d:], mha.in_proj.bias[d:])  # (B, S, 2·d_model)
    k, v = kv.chunk(2, dim=-1)  # 2 × (B, S, d_model)
    return mha.split_heads(k), mha.split_heads(v)  # 2 × (B, h, S, d_k)


class EncoderForWeb(nn.Module):
    """src (1, S) token ids → memory (1, S, d_model), encoder_attention (N, h, S, S),
    cross_keys and cross_values (N, 1, h, S, d_k): what every decoder layer's cross-attention reads."""

    def __init__(self, model: Transformer) -> None:
        super().__init__()
        self.model = model
        self.eval()  # no dropout: the graphs are for inference

    def forward(self, src: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        m = self.model
        x = m.src_pos(m.src_embed(src))  # (1, S, d_model)
        attention = []
        for layer in m.encoder.layers:

            def attend(x, layer=layer):
                out, weights = self_attention(layer.self_attn, x)  # (1, S, d_model), (1, h, S, S)
                attention.append(weights[0])  # (h, S, S)
                return out

            x = layer.sublayer[0](x, attend)  # (1, S, d_model)
            x = layer.sublayer[1](x, layer.feed_forward)  # (1, S, d_model)
        memory = m.encoder.norm(x)  # (1, S, d_model)
        keys, values = zip(*(cross_keys_values(layer.cross_attn, memory) for layer in m.decoder.layers))
        return memory, torch.stack(attention), torch.stack(keys), torch.stack(values)  # (N, …) each


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
        slots = torch.arange(self_keys.size(3), device=token.device)  # (L,)
        write = (slots == position).view(1, 1, -1, 1)  # (1, 1, L, 1): the slot of this step
        mask = (slots <= position).view(1, 1, 1, -1)  # (1, 1, 1, L): True = may attend (this step and before)
        x = m.tgt_embed(token) + m.tgt_pos.table[position]  # (1, 1, d_model)
        x = m.tgt_pos.dropout(x)
        new_keys, new_values, self_weights, cross_weights = [], [], [], []
        for i, layer in enumerate(m.decoder.layers):

            def attend_self(x, layer=layer, i=i):
                mha = layer.self_attn
                q, k, v = mha.split_heads_all(mha.in_proj(x))  # 3 × (1, h, 1, d_k)
                keys = torch.where(write, k, self_keys[i])  # (1, h, L, d_k)
                values = torch.where(write, v, self_values[i])  # (1, h, L, d_k)
                out, weights = scaled_dot_product_attention(q, keys, values, mask)  # (1, h, 1, d_k), (1, h, 1, L)
                new_keys.append(keys)
                new_values.append(values)
                self_weights.append(weights[0])  # (h, 1, L)
                return mha.out_proj(mha.merge_heads(out))  # (1, 1, d_model)

            def attend_cross(x, layer=layer, i=i):
                mha, d = layer.cross_attn, layer.cross_attn.d_model
                q = mha.split_heads(F.linear(x, mha.in_proj.weight[:d], mha.in_proj.bias[:d]))  # (1, h, 1, d_k)
                out, weights = scaled_dot_product_attention(
                    q, cross_keys[i], cross_values[i]
                )  # (1, h, 1, d_k), (1, h, 1, S)
                cross_weights.append(weights[0])  # (h, 1, S)
                return mha.out_proj(mha.merge_heads(out))  # (1, 1, d_model)

            x = layer.sublayer[0](x, attend_self)  # (1, 1, d_model)
            x = layer.sublayer[1](x, attend_cross)  # (1, 1, d_model)
            x = layer.sublayer[2](x, layer.feed_forward)  # (1, 1, d_model)
        logits = m.generator(m.decoder.norm(x)[:, -1])  # (1, vocab)
        return (
            logits,
            logits.log_softmax(dim=-1),  # (1, vocab): what greedy_decode takes the argmax of
            torch.stack(new_keys),  # (N, 1, h, L, d_k)
            torch.stack(new_values),
            torch.stack(self_weights),  # (N, h, 1, L)
            torch.stack(cross_weights),  # (N, h, 1, S)
        )

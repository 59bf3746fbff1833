"""Reference solutions for notebook 07 (the decoder and the whole model; paper §3.1, §3.2.3, §3.4)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from torch import Tensor


def decoder_layer(
    x: Tensor,
    memory: Tensor,
    src_mask: Tensor,
    tgt_mask: Tensor,
    self_attn: Callable,
    cross_attn: Callable,
    feed_forward: Callable,
    norms: Sequence[Callable],
) -> Tensor:
    """One post-LN decoder layer: masked self-attention, cross-attention over memory, FFN."""
    x = norms[0](x + self_attn(x, mask=tgt_mask))  # (B, T, d_model), each position sees itself and the past
    x = norms[1](x + cross_attn(x, memory, mask=src_mask))  # (B, T, d_model), queries from x, keys/values from memory
    return norms[2](x + feed_forward(x))  # (B, T, d_model)


def transformer_parameter_count(vocab: int, N: int, d_model: int, d_ff: int) -> int:
    """Parameters of the whole model with one shared vocabulary and all three embedding matrices tied."""
    attention = 4 * d_model * d_model + 4 * d_model
    ffn = 2 * d_model * d_ff + d_ff + d_model
    norm = 2 * d_model
    encoder_layer = attention + ffn + 2 * norm
    decoder_layer = 2 * attention + ffn + 3 * norm  # self- and cross-attention, three LayerNorms
    embedding = vocab * d_model  # one matrix: source embedding = target embedding = generator weight
    return N * (encoder_layer + decoder_layer) + embedding + vocab  # + the generator's bias


def next_word_log_probs(model, memory: Tensor, src_mask: Tensor, tgt: Tensor, tgt_mask: Tensor) -> Tensor:
    """log P(next word | source, tgt so far) for every sentence: (batch, tgt_vocab)."""
    hidden = model.decode(memory, src_mask, tgt, tgt_mask)  # (B, T, d_model)
    logits = model.generator(hidden[:, -1])  # (B, tgt_vocab): the last position predicts the next word
    return logits.log_softmax(dim=-1)  # (B, tgt_vocab)

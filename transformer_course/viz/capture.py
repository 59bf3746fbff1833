"""Capturing attention: every weight of one (source, target) pair, layer by layer (notebook 10; paper §3.2).

- :func:`capture_attention` runs a model once on a (source, target) pair and keeps every attention weight:
  encoder self-attention, decoder self-attention and cross-attention, per layer, each ``(heads, q_len,
  k_len)``, with the tokens of both axes, in an :class:`AttentionCapture`.
- :func:`translate_and_capture` translates a sentence with :mod:`transformer_course.decode`'s own code (the
  same words ``translate`` gives) and captures the attention on (sentence, its translation).
- :func:`to_ids` turns a sentence, token strings or token ids into ids and axis labels.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, replace
from typing import Any

import torch
from torch import Tensor, nn

from ..checkpoint import resolve_model
from ..data import BOS, EOS, PAD, tokenize
from ..decode import decode_sentences, to_text
from ..masks import padding_mask, target_mask

__all__ = [
    "KINDS",
    "KIND_TITLES",
    "AttentionCapture",
    "capture_attention",
    "check_kind",
    "to_ids",
    "translate_and_capture",
]

KINDS = ("encoder", "decoder", "cross")
KIND_TITLES = {
    "encoder": "encoder self-attention",
    "decoder": "decoder self-attention (masked)",
    "cross": "cross-attention (decoder → encoder)",
}


def check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {list(KINDS)} (encoder self, decoder self, cross), got {kind!r}")


@dataclass
class AttentionCapture:
    """Every attention weight of one (source, target) pair.

    ``encoder[l]``: (heads, src_len, src_len); ``decoder[l]``: (heads, tgt_len, tgt_len);
    ``cross[l]``: (heads, tgt_len, src_len) — rows are queries, columns are keys, and each row sums to 1
    over the keys its mask allows (0 on the others). ``tgt_tokens`` are the decoder's *inputs*
    (``<s> y_1 … y_n``): row i of decoder and cross attention is the step that predicts y_{i+1}.
    """

    src_tokens: list[str]
    tgt_tokens: list[str]
    encoder: list[Tensor]
    decoder: list[Tensor]
    cross: list[Tensor]

    @property
    def layers(self) -> int:
        return len(self.encoder)

    @property
    def heads(self) -> int:
        return self.encoder[0].size(0)

    def axis_tokens(self, kind: str) -> tuple[list[str], list[str]]:
        """(query tokens, key tokens) of one kind: rows, then columns."""
        check_kind(kind)
        return {
            "encoder": (self.src_tokens, self.src_tokens),
            "decoder": (self.tgt_tokens, self.tgt_tokens),
            "cross": (self.tgt_tokens, self.src_tokens),
        }[kind]

    def weights(self, kind: str, layer: int, head: int | None = None) -> Tensor:
        """(heads, q, k) of one layer, or (q, k) of one head; ``head=None`` keeps all heads."""
        check_kind(kind)
        self.check_layer_head(layer, head)
        w = getattr(self, kind)[layer]  # (heads, q, k)
        return w if head is None else w[head]  # (q, k)

    def check_layer_head(self, layer: int | None, head: int | None = None) -> None:
        if layer is not None and not 0 <= layer < self.layers:
            raise IndexError(
                f"layer={layer} is out of range: this model has {self.layers} layers, 0 … {self.layers - 1}"
            )
        if head is not None and not 0 <= head < self.heads:
            raise IndexError(f"head={head} is out of range: this model has {self.heads} heads, 0 … {self.heads - 1}")


def to_ids(tokens: Any, vocab: Any, lang: str, name: str) -> tuple[list[int], list[str]]:
    """A sentence (str), token strings, token ids (list or 1-D tensor) → (ids, labels for the axis)."""
    if isinstance(tokens, str):
        tokens = tokenize(tokens, lang)  # the sentence → words
    if isinstance(tokens, Tensor):
        if tokens.dim() != 1:
            raise ValueError(f"{name} must be one sentence, a 1-D tensor of ids, got shape {tuple(tokens.shape)}")
        tokens = tokens.tolist()
    tokens = list(tokens)
    if not tokens:
        raise ValueError(f"{name} is empty; give at least one token")
    if all(isinstance(t, str) for t in tokens):
        if vocab is None:
            raise ValueError(
                f"{name} holds token strings, so pass its vocabulary too ({name[:3]}_vocab=...) to turn them into ids"
            )
        return vocab.encode(tokens), tokens
    if all(isinstance(t, numbers.Integral) for t in tokens):
        tokens = [int(t) for t in tokens]  # also numpy integers
        labels = [vocab.itos[i] if vocab is not None and 0 <= i < len(vocab) else str(i) for i in tokens]
        return tokens, labels
    raise ValueError(
        f"{name} must be a sentence, a list of token strings or a list of token ids, not a mix: {tokens[:5]}"
    )


def capture_attention(
    model: nn.Module,
    src_tokens: Any,
    tgt_tokens: Any,
    src_vocab: Any = None,
    tgt_vocab: Any = None,
    add_bos: bool = True,
    src_lang: str = "de",
    tgt_lang: str = "en",
) -> AttentionCapture:
    """Run ``model`` once on one (source, target) pair and return all its attention weights (notebook 10).

    ``src_tokens`` / ``tgt_tokens``: a sentence (tokenized with ``data.tokenize``), token strings (give
    the vocabulary), or token ids (a list or 1-D tensor; with a vocabulary the axes show words).
    The target is what the decoder reads: ``<s>`` is put in front unless it is already there
    (``add_bos=False`` to leave it as given).

    The model runs in eval mode (no dropout) and without gradients. Each ``MultiHeadAttention`` takes
    its readable path and keeps its weights (``keep_weights``) only during this call; its flag, its
    weights and the model's train/eval mode are restored afterwards, so training and decoding keep the
    fast path.
    """
    src_ids, src_labels = to_ids(src_tokens, src_vocab, src_lang, "src_tokens")
    tgt_ids, tgt_labels = to_ids(tgt_tokens, tgt_vocab, tgt_lang, "tgt_tokens")
    if add_bos and tgt_ids[0] != BOS:
        tgt_ids, tgt_labels = [BOS, *tgt_ids], ["<s>", *tgt_labels]
    device = next(model.parameters()).device
    src = torch.tensor([src_ids], device=device)  # (1, S)
    tgt = torch.tensor([tgt_ids], device=device)  # (1, T)

    modules = model.attention_modules()
    saved = [(m.keep_weights, m.weights) for m in modules]
    was_training = model.training
    try:
        for m in modules:
            m.keep_weights = True
        model.eval()
        with torch.no_grad():
            src_mask = padding_mask(src, PAD)  # (1, 1, 1, S)
            memory = model.encode(src, src_mask)  # (1, S, d_model)
            model.decode(memory, src_mask, tgt, target_mask(tgt, PAD))  # (1, T, d_model)
        encoder = [layer.self_attn.weights[0].float().cpu() for layer in model.encoder.layers]  # (h, S, S) each
        decoder = [layer.self_attn.weights[0].float().cpu() for layer in model.decoder.layers]  # (h, T, T) each
        cross = [layer.cross_attn.weights[0].float().cpu() for layer in model.decoder.layers]  # (h, T, S) each
    finally:
        for m, (keep, weights) in zip(modules, saved):
            m.keep_weights, m.weights = keep, weights
        model.train(was_training)
    return AttentionCapture(src_labels, tgt_labels, encoder, decoder, cross)


def translate_and_capture(
    model_or_checkpoint: Any,
    sentence: str,
    src_vocab: Any = None,
    tgt_vocab: Any = None,
    beam_size: int = 1,
    max_len: int | None = None,
    length_penalty: float | None = None,
    src_lang: str | None = None,
    tokenizer: Any = None,
) -> tuple[str, AttentionCapture]:
    """Translate ``sentence`` with the model, then capture its attention on (sentence, its translation).

    ``model_or_checkpoint``: a checkpoint path, a :class:`~transformer_course.checkpoint.Checkpoint` (its
    vocabularies and source language are used), or a model with both vocabularies (source language "de").
    ``src_lang`` overrides the source language. The translation is ``decode.translate``'s, word for word:
    the same tokenizer, length limit (source length + 50), greedy (``beam_size=1``) or beam search, and
    length penalty (None: ``config.length_penalty``). Returns (translation text, capture); the capture's
    target axis is what the decoder read: ``<s>`` and the words, without ``</s>``.

    A subword checkpoint (or a bare model with its ``tokenizer``) shows pieces on the axes, made readable by
    ``SubwordTokenizer.display_pieces``: ``Schnee ·mobil ·en`` (``·``: the piece continues the word before).
    """
    resolved = resolve_model(model_or_checkpoint, src_vocab, tgt_vocab, tokenizer)
    model, src_vocab, tgt_vocab, own_src_lang, tgt_lang = resolved
    src_lang, tokenizer = src_lang or own_src_lang, resolved.tokenizer
    [(words, out)] = decode_sentences(
        model, src_vocab, [sentence], beam_size, max_len, length_penalty, src_lang=src_lang, tokenizer=tokenizer
    )  # out: <s> y_1 … y_n </s> (PAD …)
    if not words:
        raise ValueError(f"the sentence is empty; type a few words of the source language ({src_lang!r})")
    ids = out[1:]  # drop <s>
    ids = ids[: ids.index(EOS)] if EOS in ids else ids  # up to </s>
    ids = [i for i in ids if i != PAD]
    capture = capture_attention(model, words, [BOS, *ids], src_vocab, tgt_vocab, src_lang=src_lang, tgt_lang=tgt_lang)
    text = to_text([(words, out)], tgt_vocab, tokenizer)[0]  # as decode.translate writes it
    if tokenizer is None:
        return text, capture
    readable = {"src_tokens": tokenizer.display_pieces(capture.src_tokens)}
    readable["tgt_tokens"] = tokenizer.display_pieces(capture.tgt_tokens)  # <s> stays <s>
    return text, replace(capture, **readable)

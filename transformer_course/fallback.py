"""The package's Transformer with the API of the learner's files (notebooks 02–07): what a fallback runs.

The learner's files in ``my_transformer/`` (see :mod:`transformer_course.learner`) have the API their notebooks'
build cells give them; the package's classes mostly share it, but not everywhere: the package's
``MultiHeadAttention.forward(query, memory, mask, cache)`` takes no separate key and value, its ``Encoder`` takes a
list of layers instead of one layer and N, and its whole model is built from a :class:`~transformer_course.config.Config`.
This module closes those gaps with small classes built on the package's own modules, with the learner's
constructor and forward signatures, attribute names and parameter names, so a fallback file and the learner's
own file are interchangeable (``load_state_dict(strict=True)`` copies weights between them).

Nothing here is the learner's code: :func:`transformer_course.learner.load` and the fallback files that
:func:`transformer_course.learner.fill_missing_files` writes name it "the package's (a fallback, not yours)".

    file              names (the learner's API)
    attention.py      scaled_dot_product_attention(query, key, value, mask=None, dropout=None)
    multi_head.py     MultiHeadAttention(d_model, heads, dropout=0.0); forward(query, key, value, mask=None)
    norm_residual.py  LayerNorm(features, eps=1e-5), ResidualConnection(d_model, dropout, norm_first=False)
    embeddings.py     Embeddings(vocab, d_model), PositionalEncoding(d_model, dropout, max_len=512, kind="sinusoidal"),
                      PositionwiseFeedForward(d_model, d_ff, dropout=0.0)
    encoder.py        EncoderLayer(d_model, heads, d_ff, dropout, norm_first=False), Encoder(layer, N)
    decoder.py        DecoderLayer(...), Decoder(layer, N), Generator(d_model, vocab),
                      EncoderDecoder(encoder, decoder, src_embed, tgt_embed, src_pos, tgt_pos, generator), make_model(...)
"""

from __future__ import annotations

import copy

from torch import Tensor, nn

from . import attention as _attention
from . import layers as _layers
from . import model as _model

__all__ = [
    "NAMES",
    "Decoder",
    "DecoderLayer",
    "Embeddings",
    "Encoder",
    "EncoderDecoder",
    "EncoderLayer",
    "Generator",
    "LayerNorm",
    "MultiHeadAttention",
    "PositionalEncoding",
    "PositionwiseFeedForward",
    "ResidualConnection",
    "clones",
    "final_norm",
    "make_model",
    "sinusoidal_table",
    "scaled_dot_product_attention",
]


# The package's pieces whose API is already the learner's, each as a name of this module (a function that calls
# the package's, a subclass with nothing added), so a checker can tell an earlier file's fallback, which a later
# exercise may use (exercises.guard.earlier_fallbacks), from the package's own code, which it may not.
def scaled_dot_product_attention(query, key, value, mask=None, dropout=None):
    """attention.py's function (notebook 02): the package's."""
    return _attention.scaled_dot_product_attention(query, key, value, mask, dropout)


def sinusoidal_table(max_len: int, d_model: int):
    """embeddings.py's function (notebook 05), with its signature: the package's."""
    return _layers.sinusoidal_table(max_len, d_model)


class LayerNorm(_layers.LayerNorm):
    """norm_residual.py's class (notebook 04): the package's."""


class ResidualConnection(_layers.ResidualConnection):
    """norm_residual.py's class (notebook 04): the package's."""


class Embeddings(_layers.Embeddings):
    """embeddings.py's class (notebook 05): the package's."""


class PositionalEncoding(_layers.PositionalEncoding):
    """embeddings.py's class (notebook 05): the package's."""


class PositionwiseFeedForward(_layers.PositionwiseFeedForward):
    """embeddings.py's class (notebook 05): the package's."""


class Generator(_model.Generator):
    """decoder.py's class (notebook 07): the package's."""


def clones(layer: nn.Module, N: int) -> nn.ModuleList:
    """encoder.py's helper (notebook 06): N deep copies of ``layer``."""
    return nn.ModuleList([copy.deepcopy(layer) for _ in range(N)])


def final_norm(d_model: int, norm_first: bool) -> nn.Module:
    """encoder.py's helper (notebook 06): a LayerNorm after a pre-LN stack, nothing after a post-LN one."""
    return _layers.LayerNorm(d_model) if norm_first else nn.Identity()


class MultiHeadAttention(_attention.MultiHeadAttention):
    """The package's multi-head attention called as the learner's: ``forward(query, key, value, mask=None)``.

    It keeps the weights of its last call in ``self.weights`` (batch, heads, q_len, k_len), as the learner's does,
    so it runs the package's readable path. Called the package's way (``forward(query, mask=…)`` for self-attention,
    ``forward(query, memory, mask=…, cache=…)`` for cross-attention) it behaves as the package's class.
    """

    def __init__(self, d_model: int, heads: int, dropout: float = 0.0) -> None:
        super().__init__(d_model, heads, dropout, fast=False)
        self.keep_weights = True

    def forward(self, query: Tensor, key=None, value=None, mask=None, cache=None) -> Tensor:
        """query (batch, q_len, d_model), key and value (batch, k_len, d_model) → (batch, q_len, d_model)."""
        value = key if value is None else value
        if key is None or (key is query and value is query):
            return super().forward(query, None, mask, cache)  # self-attention
        if key is value:
            return super().forward(query, key, mask, cache)  # cross-attention: keys and values from one memory
        d = self.d_model  # three different inputs: project each with its own rows of in_proj
        w_q, w_k, w_v = self.in_proj.weight.split(d)  # 3 × (d_model, d_model)
        b_q, b_k, b_v = self.in_proj.bias.split(d)
        q = self.split_heads(nn.functional.linear(query, w_q, b_q))  # (B, h, q_len, d_k)
        k = self.split_heads(nn.functional.linear(key, w_k, b_k))  # (B, h, k_len, d_k)
        v = self.split_heads(nn.functional.linear(value, w_v, b_v))  # (B, h, k_len, d_k)
        x, weights = scaled_dot_product_attention(q, k, v, mask, self.dropout)  # (B, h, q_len, d_k)
        self.weights = weights.detach() if self.keep_weights else None
        return self.out_proj(self.merge_heads(x))  # (B, q_len, d_model)


class EncoderLayer(_model.EncoderLayer):
    """The package's encoder layer with the learner's attributes (``d_model``, ``norm_first``) and attention."""

    def __init__(self, d_model: int, heads: int, d_ff: int, dropout: float, norm_first: bool = False) -> None:
        super().__init__(d_model, heads, d_ff, dropout, norm_first)
        self.self_attn = MultiHeadAttention(d_model, heads)
        self.d_model, self.norm_first = d_model, norm_first


class Encoder(_model.Encoder):
    """``Encoder(layer, N)``: N deep copies of ``layer``; a pre-LN stack ends with one more LayerNorm."""

    def __init__(self, layer: nn.Module, N: int) -> None:
        super().__init__([copy.deepcopy(layer) for _ in range(N)], layer.d_model, layer.norm_first)


class DecoderLayer(_model.DecoderLayer):
    """The package's decoder layer with the learner's attributes (``d_model``, ``norm_first``) and attention."""

    def __init__(self, d_model: int, heads: int, d_ff: int, dropout: float, norm_first: bool = False) -> None:
        super().__init__(d_model, heads, d_ff, dropout, norm_first)
        self.self_attn = MultiHeadAttention(d_model, heads)
        self.cross_attn = MultiHeadAttention(d_model, heads)
        self.d_model, self.norm_first = d_model, norm_first


class Decoder(_model.Decoder):
    """``Decoder(layer, N)``: N deep copies of ``layer``; a pre-LN stack ends with one more LayerNorm."""

    def __init__(self, layer: nn.Module, N: int) -> None:
        super().__init__([copy.deepcopy(layer) for _ in range(N)], layer.d_model, layer.norm_first)


class EncoderDecoder(nn.Module):
    """Figure 1 with the learner's constructor: embed and encode the source, embed and decode the target."""

    def __init__(self, encoder, decoder, src_embed, tgt_embed, src_pos, tgt_pos, generator) -> None:
        super().__init__()
        self.src_embed, self.tgt_embed = src_embed, tgt_embed
        self.src_pos, self.tgt_pos = src_pos, tgt_pos
        self.encoder, self.decoder = encoder, decoder
        self.generator = generator

    def encode(self, src: Tensor, src_mask: Tensor | None) -> Tensor:
        return self.encoder(self.src_pos(self.src_embed(src)), src_mask)  # (B, S) → memory (B, S, d_model)

    def decode(self, memory: Tensor, src_mask, tgt: Tensor, tgt_mask) -> Tensor:
        return self.decoder(self.tgt_pos(self.tgt_embed(tgt)), memory, src_mask, tgt_mask)  # (B, T, d_model)

    def forward(self, src: Tensor, tgt: Tensor, src_mask, tgt_mask) -> Tensor:
        return self.decode(self.encode(src, src_mask), src_mask, tgt, tgt_mask)  # (B, T, d_model)


def make_model(
    src_vocab: int,
    tgt_vocab: int,
    N: int = 6,
    d_model: int = 512,
    d_ff: int = 2048,
    h: int = 8,
    dropout: float = 0.1,
    norm_first: bool = False,
    tie_embeddings: str = "decoder",
    max_len: int = 512,
    positional: str = "sinusoidal",
) -> EncoderDecoder:
    """The learner's ``make_model`` (notebook 07) from the classes above: the paper's base sizes by default,
    Xavier-uniform matrices, the target embedding tied to the output layer ("decoder") or all three ("all")."""
    if tie_embeddings not in ("none", "decoder", "all"):
        raise ValueError(f"tie_embeddings must be 'none', 'decoder' or 'all', got {tie_embeddings!r}")
    if tie_embeddings == "all" and src_vocab != tgt_vocab:
        raise ValueError(f"tie_embeddings='all' needs one vocabulary, got {src_vocab} and {tgt_vocab} words")
    model = EncoderDecoder(
        Encoder(EncoderLayer(d_model, h, d_ff, dropout, norm_first), N),
        Decoder(DecoderLayer(d_model, h, d_ff, dropout, norm_first), N),
        Embeddings(src_vocab, d_model),
        Embeddings(tgt_vocab, d_model),
        PositionalEncoding(d_model, dropout, max_len, positional),
        PositionalEncoding(d_model, dropout, max_len, positional),
        Generator(d_model, tgt_vocab),
    )
    for p in model.parameters():
        if p.dim() > 1:
            nn.init.xavier_uniform_(p)
    if tie_embeddings in ("decoder", "all"):
        model.generator.proj.weight = model.tgt_embed.lut.weight
    if tie_embeddings == "all":
        model.src_embed.lut.weight = model.tgt_embed.lut.weight
    return model


# file → the names it holds, in the learner's files and here
NAMES = {
    "attention.py": ("scaled_dot_product_attention",),
    "multi_head.py": ("MultiHeadAttention",),
    "norm_residual.py": ("LayerNorm", "ResidualConnection"),
    "embeddings.py": ("Embeddings", "sinusoidal_table", "PositionalEncoding", "PositionwiseFeedForward"),
    "encoder.py": ("clones", "final_norm", "EncoderLayer", "Encoder"),
    "decoder.py": ("DecoderLayer", "Decoder", "Generator", "EncoderDecoder", "make_model"),
}

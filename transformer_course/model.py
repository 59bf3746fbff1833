"""The encoder-decoder Transformer (notebooks 06 and 07; paper §3.1, Figure 1).

    src → Embeddings + positions → Encoder (N × [self-attention, FFN]) → memory
    tgt → Embeddings + positions → Decoder (N × [masked self-attention, cross-attention, FFN]) → Generator → logits

The model reads only :class:`ModelConfig`, the architecture (nanoGPT's ``GPTConfig``); ``make_model`` builds it
from sizes, ``build_model`` from a run's ``Config`` (kept as ``model.config``). :class:`DecoderCache`: notebook 09.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, fields

from torch import Tensor, nn

from .attention import KVCache, MultiHeadAttention
from .dropout import use_fast_dropout
from .layers import (
    Embeddings,
    LayerNorm,
    PositionalEncoding,
    PositionwiseFeedForward,
    ResidualConnection,
    check_positive,
)
from .masks import check_mask, check_token_ids

__all__ = [
    "ModelConfig",
    "EncoderLayer",
    "Encoder",
    "LayerCache",
    "DecoderCache",
    "DecoderLayer",
    "Decoder",
    "Generator",
    "Transformer",
    "build_model",
    "make_model",
    "count_parameters",
]


@dataclass(frozen=True)
class ModelConfig:
    """The architecture alone, what :class:`Transformer` reads; defaults: the paper's base model (Table 3). A
    run's :class:`~transformer_course.config.Config` holds these fields too (and checks them) beside its own."""

    N: int = 6  # layers in the encoder and in the decoder
    d_model: int = 512
    d_ff: int = 2048
    h: int = 8  # attention heads
    dropout: float = 0.1  # P_drop (§5.4)
    attention_dropout: float = 0.0  # on the attention weights (not in §5.4; nn.Transformer uses P_drop)
    ffn_dropout: float = 0.0  # on the FFN's hidden layer (not in the paper)
    norm_first: bool = False  # False: post-LN as in the paper; True: pre-LN
    positional: str = "sinusoidal"  # or "learned"
    max_len: int = 512  # longest sequence the positional table holds
    tie_embeddings: str = "decoder"  # "none", "decoder" or "all" (§3.4)

    @classmethod
    def of(cls, config) -> ModelConfig:
        """The architecture fields of a run's config (any object with these attributes), or ``config`` itself."""
        if isinstance(config, cls):
            return config
        return cls(**{f.name: getattr(config, f.name) for f in fields(cls)})


class EncoderLayer(nn.Module):
    """Self-attention, then the feed-forward network, each inside a residual connection.

    ``dropout`` is the paper's P_drop on each sub-layer's output (§5.4); ``attention_dropout`` (on the
    attention weights) and ``ffn_dropout`` (on the FFN's hidden layer) are not in the paper but in
    tensor2tensor and ``nn.Transformer``, which use ``dropout`` for both.
    """

    def __init__(
        self,
        d_model: int,
        heads: int,
        d_ff: int,
        dropout: float,
        norm_first: bool = False,
        attention_dropout: float = 0.0,
        ffn_dropout: float = 0.0,
    ) -> None:
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, heads, attention_dropout)
        self.feed_forward = PositionwiseFeedForward(d_model, d_ff, ffn_dropout)
        self.sublayer = nn.ModuleList([ResidualConnection(d_model, dropout, norm_first) for _ in range(2)])

    def forward(self, x: Tensor, src_mask: Tensor | None) -> Tensor:
        x = self.sublayer[0](x, lambda x: self.self_attn(x, mask=src_mask))  # (B, S, d_model)
        return self.sublayer[1](x, self.feed_forward)  # (B, S, d_model)


class Encoder(nn.Module):
    """N identical layers; pre-LN stacks end with one more LayerNorm."""

    def __init__(self, layers: list[EncoderLayer], d_model: int, norm_first: bool) -> None:
        super().__init__()
        self.layers = nn.ModuleList(layers)
        self.norm = LayerNorm(d_model) if norm_first else nn.Identity()

    def forward(self, x: Tensor, src_mask: Tensor | None) -> Tensor:
        for layer in self.layers:
            x = layer(x, src_mask)
        return self.norm(x)


class LayerCache:
    """What one decoder layer keeps between decoding steps: its self- and cross-attention keys/values."""

    def __init__(self) -> None:
        self.self_attn = KVCache()
        self.cross_attn = KVCache(from_memory=True)  # the memory's keys/values, projected at the first step


class DecoderCache:
    """Per-layer key/value caches for incremental decoding. ``len(cache)`` = target positions done so far."""

    def __init__(self, layers: int) -> None:
        self.layers = [LayerCache() for _ in range(layers)]

    def __len__(self) -> int:
        return len(self.layers[0].self_attn)

    def reorder(self, index: Tensor) -> None:
        """Keep batch rows ``index`` (beam search: the beams that survive, in their new order)."""
        for layer in self.layers:
            layer.self_attn.reorder(index)
            layer.cross_attn.reorder(index)


class DecoderLayer(nn.Module):
    """Masked self-attention, cross-attention over the encoder output (memory), then the FFN.

    The dropout arguments mean what they mean in :class:`EncoderLayer`. ``memory`` may be None when the
    ``cache`` holds cross-attention's keys/values already.
    """

    def __init__(
        self,
        d_model: int,
        heads: int,
        d_ff: int,
        dropout: float,
        norm_first: bool = False,
        attention_dropout: float = 0.0,
        ffn_dropout: float = 0.0,
    ) -> None:
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, heads, attention_dropout)
        self.cross_attn = MultiHeadAttention(d_model, heads, attention_dropout)
        self.feed_forward = PositionwiseFeedForward(d_model, d_ff, ffn_dropout)
        self.sublayer = nn.ModuleList([ResidualConnection(d_model, dropout, norm_first) for _ in range(3)])

    def forward(
        self,
        x: Tensor,
        memory: Tensor | None,
        src_mask: Tensor | None,
        tgt_mask: Tensor | None,
        cache: LayerCache | None = None,
    ) -> Tensor:
        self_cache = cache.self_attn if cache is not None else None
        cross_cache = cache.cross_attn if cache is not None else None
        x = self.sublayer[0](x, lambda x: self.self_attn(x, mask=tgt_mask, cache=self_cache))  # (B, T, d_model)
        x = self.sublayer[1](x, lambda x: self.cross_attn(x, memory, mask=src_mask, cache=cross_cache))
        return self.sublayer[2](x, self.feed_forward)  # (B, T, d_model)


class Decoder(nn.Module):
    def __init__(self, layers: list[DecoderLayer], d_model: int, norm_first: bool) -> None:
        super().__init__()
        self.layers = nn.ModuleList(layers)
        self.norm = LayerNorm(d_model) if norm_first else nn.Identity()

    def forward(
        self,
        x: Tensor,
        memory: Tensor | None,
        src_mask: Tensor | None,
        tgt_mask: Tensor | None,
        cache: DecoderCache | None = None,
    ) -> Tensor:
        for i, layer in enumerate(self.layers):
            x = layer(x, memory, src_mask, tgt_mask, cache.layers[i] if cache is not None else None)
        return self.norm(x)


class Generator(nn.Module):
    """The final linear layer: decoder output → one score (logit) per target word (§3.4). Returns logits: apply
    ``log_softmax`` for log-probabilities (decoding) or pass them to ``F.cross_entropy`` (training)."""

    def __init__(self, d_model: int, vocab: int) -> None:
        super().__init__()
        self.proj = nn.Linear(d_model, vocab)

    def forward(self, hidden: Tensor) -> Tensor:
        return self.proj(hidden)  # (B, T, d_model) → (B, T, vocab)


class Transformer(nn.Module):
    """The encoder-decoder model of Figure 1. ``config``: a :class:`ModelConfig`, or a run's
    :class:`~transformer_course.config.Config` (kept as ``model.config``; its architecture is ``model.model_config``)."""

    def __init__(self, config, src_vocab: int, tgt_vocab: int) -> None:
        super().__init__()
        c = ModelConfig.of(config)
        check_positive(src_vocab=src_vocab, tgt_vocab=tgt_vocab, N=c.N, d_model=c.d_model, d_ff=c.d_ff, h=c.h)
        if c.tie_embeddings not in ("none", "decoder", "all"):
            raise ValueError(f"tie_embeddings must be 'none', 'decoder' or 'all', got {c.tie_embeddings!r}")
        if c.tie_embeddings == "all" and src_vocab != tgt_vocab:
            raise ValueError(
                f"tie_embeddings='all' shares one matrix between both languages, so it needs one shared "
                f"vocabulary, got src_vocab={src_vocab}, tgt_vocab={tgt_vocab}; build a shared vocabulary "
                "or use tie_embeddings='decoder'"
            )
        self.model_config, self.config = c, config  # the architecture; the run's config (or the same)
        self.src_vocab_size, self.tgt_vocab_size = src_vocab, tgt_vocab
        self.src_embed, self.tgt_embed = Embeddings(src_vocab, c.d_model), Embeddings(tgt_vocab, c.d_model)
        self.src_pos = PositionalEncoding(c.d_model, c.dropout, c.max_len, c.positional)  # each side its own table
        self.tgt_pos = PositionalEncoding(c.d_model, c.dropout, c.max_len, c.positional)
        sizes = (c.d_model, c.h, c.d_ff, c.dropout, c.norm_first, c.attention_dropout, c.ffn_dropout)
        self.encoder = Encoder([EncoderLayer(*sizes) for _ in range(c.N)], c.d_model, c.norm_first)
        self.decoder = Decoder([DecoderLayer(*sizes) for _ in range(c.N)], c.d_model, c.norm_first)
        self.generator = Generator(c.d_model, tgt_vocab)
        # Xavier/Glorot uniform for every matrix, as in the reference implementations, except a learned
        # positional table, which keeps its own N(0, 0.02²) start (layers.PositionalEncoding).
        tables = {id(pos.table) for pos in (self.src_pos, self.tgt_pos) if isinstance(pos.table, nn.Parameter)}
        for p in self.parameters():
            if p.dim() > 1 and id(p) not in tables:
                nn.init.xavier_uniform_(p)
        if c.tie_embeddings in ("decoder", "all"):
            self.generator.proj.weight = self.tgt_embed.lut.weight  # one (tgt_vocab, d_model) matrix
        if c.tie_embeddings == "all":
            self.src_embed.lut.weight = self.tgt_embed.lut.weight

    @property
    def src_vocab(self) -> int:  # deprecated in 0.2: an int here, the Vocab itself in Checkpoint.src_vocab
        warnings.warn("model.src_vocab is deprecated: use model.src_vocab_size", DeprecationWarning, stacklevel=2)
        return self.src_vocab_size

    @property
    def tgt_vocab(self) -> int:  # deprecated in 0.2, as src_vocab
        warnings.warn("model.tgt_vocab is deprecated: use model.tgt_vocab_size", DeprecationWarning, stacklevel=2)
        return self.tgt_vocab_size

    def encode(self, src: Tensor, src_mask: Tensor | None) -> Tensor:
        """src (batch, src_len) token ids → memory (batch, src_len, d_model)."""
        check_token_ids(src, "src")  # a 1-D sentence: the decoders' clear error, not a shape error deep inside
        if src_mask is not None:
            check_mask(src_mask, src.size(0), 1, src.size(1), "src_mask")
        return self.encoder(self.src_pos(self.src_embed(src)), src_mask)

    def decode(
        self,
        memory: Tensor,
        src_mask: Tensor | None,
        tgt: Tensor,
        tgt_mask: Tensor | None,
        cache: DecoderCache | None = None,
    ) -> Tensor:
        """tgt (batch, tgt_len) token ids → decoder output (batch, tgt_len, d_model).

        With a ``cache``, ``tgt`` holds only the new tokens (usually one per sentence); the positions
        already decoded are read from the cache, and ``tgt_mask`` may be None (a new token may attend to
        everything before it).
        """
        check_token_ids(tgt, "tgt")
        start = len(cache) if cache is not None else 0
        x = self.tgt_pos(self.tgt_embed(tgt), start=start)  # (B, T, d_model)
        return self.decoder(x, memory, src_mask, tgt_mask, cache)

    def forward(self, src: Tensor, tgt: Tensor, src_mask: Tensor | None, tgt_mask: Tensor | None) -> Tensor:
        """Encode, then decode: (batch, tgt_len, d_model). Apply ``self.generator`` for logits."""
        return self.decode(self.encode(src, src_mask), src_mask, tgt, tgt_mask)

    def new_cache(self) -> DecoderCache:
        return DecoderCache(self.model_config.N)

    def attention_modules(self) -> list[MultiHeadAttention]:
        return [m for m in self.modules() if isinstance(m, MultiHeadAttention)]


def build_model(config, src_vocab: int, tgt_vocab: int) -> Transformer:
    """The model a run's :class:`~transformer_course.config.Config` describes (``model.config`` is that config),
    with the run's own choices applied: ``fast_dropout`` draws the dropout masks with :class:`FastDropout`
    (dropout.py), a run option, not the architecture: the same weights, the same model in eval mode."""
    model = Transformer(config, src_vocab, tgt_vocab)
    if getattr(config, "fast_dropout", False):
        use_fast_dropout(model)
    return model


def make_model(
    src_vocab: int,
    tgt_vocab: int,
    N: int = 6,
    d_model: int = 512,
    d_ff: int = 2048,
    h: int = 8,
    dropout: float = 0.1,
    **options,
) -> Transformer:
    """The Transformer with the paper's base sizes by default.

    ``options`` are other :class:`Config` fields: ``norm_first`` (False = post-LN, the paper), ``positional``
    ("sinusoidal" or "learned"), ``max_len``, ``tie_embeddings`` ("none", "decoder", "all"), ``attention_dropout``
    and ``ffn_dropout`` (0 in the paper; ``nn.Transformer`` uses ``dropout``), ``fast_dropout`` (dropout.py).
    """
    from .config import Config  # the run config it is stored with: checks every value, and checkpoints save it

    config = Config.from_dict(dict(N=N, d_model=d_model, d_ff=d_ff, h=h, dropout=dropout, **options))
    return build_model(config, src_vocab, tgt_vocab)


def count_parameters(model: nn.Module) -> int:
    """Trainable parameters, each shared (tied) matrix counted once."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)

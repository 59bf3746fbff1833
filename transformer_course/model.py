"""The encoder-decoder Transformer (notebooks 06 and 07; paper §3.1, Figure 1).

    src → Embeddings + positions → Encoder (N × [self-attention, FFN]) → memory
    tgt → Embeddings + positions → Decoder (N × [masked self-attention, cross-attention, FFN]) → Generator → logits

``make_model`` builds an :class:`EncoderDecoder` from its parts, ``Encoder(EncoderLayer(…), N)`` and
``Decoder(DecoderLayer(…), N)`` among them, exactly as the learner's ``my_transformer/encoder.py`` and
``decoder.py`` (notebooks 06, 07) do: those files are cut from the regions marked ``# learner file:`` here
(``python -m course_tools.edition.learner_files sync``), and the lines marked ``package only`` (the key/value
cache of notebook 09, the input checks, the run's config) stay out of them. The model keeps the run's config
(``model.config``) and its architecture alone (``model.model_config``, a :class:`ModelConfig`, nanoGPT's
``GPTConfig``); ``build_model`` builds it from a run's ``Config``. ``Transformer`` is the package's name for it.

The switches later models flipped are ModelConfig fields too (notebook 12): ``norm="rms"``, ``ffn="swiglu"``,
``n_kv_heads`` (grouped-query attention) and ``positional="rope"``; :func:`use_switches` puts them into the model
make_model builds. :func:`make_lm` builds a decoder-only language model (:class:`GPT`) from the same blocks: a
``Decoder`` of ``DecoderLayer(…, cross_attention=False)``, a causal mask, the embedding tied to the output layer.
"""

from __future__ import annotations

import copy
import warnings
from dataclasses import asdict, dataclass, fields

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .attention import KVCache, MultiHeadAttention
from .dropout import use_fast_dropout
from .layers import (
    Embeddings,
    LayerNorm,
    PositionalEncoding,
    PositionwiseFeedForward,
    ResidualConnection,
    RMSNorm,
    RotaryPositions,
    SwiGLUFeedForward,
    check_positive,
)
from .masks import check_mask, check_token_ids
from .sampling import sample_next

__all__ = [
    "ModelConfig",
    "clones",
    "final_norm",
    "EncoderLayer",
    "Encoder",
    "LayerCache",
    "DecoderCache",
    "DecoderLayer",
    "Decoder",
    "Generator",
    "EncoderDecoder",
    "Transformer",
    "check_options",
    "build_model",
    "first_draws",
    "make_model",
    "count_parameters",
    "positions",
    "use_switches",
    "GPT",
    "make_lm",
    "lm_loss",
    "causal_mask",
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
    positional: str = "sinusoidal"  # or "learned", or "rope" (rotary, inside attention)
    max_len: int = 512  # longest sequence the positional table holds
    tie_embeddings: str = "decoder"  # "none", "decoder" or "all" (§3.4)
    norm: str = "layer"  # "layer": LayerNorm (the paper); "rms": RMSNorm
    ffn: str = "relu"  # "relu": the paper's FFN (§3.3); "swiglu": gated, at the same parameter count
    n_kv_heads: int | None = None  # key/value heads; None: h (the paper); fewer: grouped-query attention

    @classmethod
    def of(cls, config) -> ModelConfig:
        """The architecture fields of a run's config (any object with these attributes), or ``config`` itself."""
        if isinstance(config, cls):
            return config
        return cls(**{f.name: getattr(config, f.name) for f in fields(cls)})


# learner file: encoder.py
def clones(layer: nn.Module, N: int) -> nn.ModuleList:
    """N deep copies of ``layer`` in an nn.ModuleList: N layers of one shape, each with its own weights."""
    # exercise: copy.deepcopy makes a layer with its own weights; an nn.ModuleList registers them as sub-modules
    return nn.ModuleList([copy.deepcopy(layer) for _ in range(N)])


def final_norm(d_model: int, norm_first: bool) -> nn.Module:
    """What a stack puts after its last layer: a LayerNorm(d_model) for pre-LN (``norm_first=True``); nothing
    (``nn.Identity()``) for post-LN, whose last layer already ends with one."""
    # exercise:
    return LayerNorm(d_model) if norm_first else nn.Identity()


class EncoderLayer(nn.Module):
    """Self-attention, then the FFN, each inside a residual connection (post-LN, or pre-LN)."""

    # learner: def __init__(self, d_model, heads, d_ff, dropout, norm_first=False):
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
        # learner: self.self_attn = MultiHeadAttention(d_model, heads)
        self.self_attn = MultiHeadAttention(d_model, heads, attention_dropout)
        # learner: self.feed_forward = PositionwiseFeedForward(d_model, d_ff)
        self.feed_forward = PositionwiseFeedForward(d_model, d_ff, ffn_dropout)
        self.sublayer = nn.ModuleList([ResidualConnection(d_model, dropout, norm_first) for _ in range(2)])
        self.d_model, self.norm_first = d_model, norm_first

    def forward(self, x: Tensor, src_mask: Tensor | None) -> Tensor:
        """x (batch, S, d_model), src_mask (batch, 1, 1, S), True = may attend → (batch, S, d_model)."""
        # exercise: two lines: self.sublayer[i](x, f) runs the sub-layer f inside Add & Norm (your ResidualConnection, 04);
        # exercise: f must take one argument, so wrap self-attention in a lambda: queries, keys and values are all x
        x = self.sublayer[0](x, lambda x: self.self_attn(x, x, x, src_mask))  # (B, S, d_model): Q = K = V = x
        return self.sublayer[1](x, self.feed_forward)  # (B, S, d_model)


class Encoder(nn.Module):
    """N copies of one layer, each with its own weights; a pre-LN stack ends with one more LayerNorm."""

    def __init__(self, layer: EncoderLayer, N: int) -> None:
        super().__init__()
        self.layers = clones(layer, N)
        self.norm = final_norm(layer.d_model, layer.norm_first)

    def forward(self, x: Tensor, src_mask: Tensor | None) -> Tensor:
        """x (batch, S, d_model), src_mask (batch, 1, 1, S) → memory (batch, S, d_model)."""
        # exercise: every layer in turn, each reading the output of the one before; then self.norm
        for layer in self.layers:
            x = layer(x, src_mask)  # (B, S, d_model) → (B, S, d_model)
        return self.norm(x)


# end learner file


class LayerCache:
    """What one decoder layer keeps between decoding steps: its self- and cross-attention keys/values."""

    def __init__(self, buffered: bool = False) -> None:
        self.self_attn = KVCache(buffered=buffered)  # buffered: written in place (the decoders' fast path)
        self.cross_attn = KVCache(from_memory=True)  # the memory's keys/values, projected at the first step


class DecoderCache:
    """Per-layer key/value caches for incremental decoding. ``len(cache)`` = target positions done so far.
    ``buffered=True``: self-attention writes each step into a buffer instead of a ``torch.cat`` (``KVCache``)."""

    def __init__(self, layers: int, buffered: bool = False) -> None:
        self.layers = [LayerCache(buffered) for _ in range(layers)]

    def __len__(self) -> int:
        return len(self.layers[0].self_attn)

    def reorder(self, index: Tensor, cross_attention: bool = True) -> None:
        """Keep batch rows ``index`` (beam search: the beams that survive, in their new order). With
        ``cross_attention=False`` the memory's keys/values stay as they are: beam search's rows of one sentence
        share them, so following the beams within each sentence changes none of them."""
        for layer in self.layers:
            layer.self_attn.reorder(index)
            if cross_attention:
                layer.cross_attn.reorder(index)


# learner file: decoder.py
class DecoderLayer(nn.Module):
    """Masked self-attention, cross-attention over the memory, then the FFN; each in a residual connection."""

    # learner: def __init__(self, d_model, heads, d_ff, dropout, norm_first=False):
    def __init__(
        self,
        d_model: int,
        heads: int,
        d_ff: int,
        dropout: float,
        norm_first: bool = False,
        attention_dropout: float = 0.0,
        ffn_dropout: float = 0.0,
        cross_attention: bool = True,
    ) -> None:
        super().__init__()
        # learner: self.self_attn = MultiHeadAttention(d_model, heads)
        self.self_attn = MultiHeadAttention(d_model, heads, attention_dropout)
        # learner: self.cross_attn = MultiHeadAttention(d_model, heads)
        self.cross_attn = MultiHeadAttention(d_model, heads, attention_dropout) if cross_attention else None
        # learner: self.feed_forward = PositionwiseFeedForward(d_model, d_ff)
        self.feed_forward = PositionwiseFeedForward(d_model, d_ff, ffn_dropout)
        # learner: self.sublayer = nn.ModuleList([ResidualConnection(d_model, dropout, norm_first) for _ in range(3)])
        self.sublayer = nn.ModuleList(
            [ResidualConnection(d_model, dropout, norm_first) for _ in range(3 if cross_attention else 2)]
        )  # cross_attention=False: a decoder-only LM's layer (GPT), masked self-attention and the FFN
        self.d_model, self.norm_first = d_model, norm_first

    # learner: def forward(self, x, memory, src_mask, tgt_mask):
    def forward(
        self,
        x: Tensor,
        memory: Tensor | None,
        src_mask: Tensor | None,
        tgt_mask: Tensor | None,
        cache: LayerCache | None = None,
    ) -> Tensor:
        """x (batch, T, d_model), memory (batch, S, d_model), src_mask (batch, 1, 1, S), tgt_mask (batch, 1, T, T)
        → (batch, T, d_model)."""
        # exercise: three sub-layers, each through its self.sublayer[i] (as in your EncoderLayer): which mask goes where,
        # exercise: and where do the keys and values of cross-attention come from (§3.2.3)?
        # package only: begin
        # With a cache (decoding step by step), x holds the new positions only; memory may be None once the
        # cross-attention cache holds the memory's keys and values.
        mine, cross = (cache.self_attn, cache.cross_attn) if cache is not None else (None, None)
        # package only: end
        # learner: x = self.sublayer[0](x, lambda x: self.self_attn(x, x, x, tgt_mask))  # (B, T, d_model): x and its past
        x = self.sublayer[0](x, lambda x: self.self_attn(x, x, x, tgt_mask, mine))  # (B, T, d_model): x and its past
        # package only: begin
        if self.cross_attn is None:  # a decoder-only LM: no memory to attend to
            return self.sublayer[1](x, self.feed_forward)  # (B, T, d_model)
        # package only: end
        # learner: x = self.sublayer[1](x, lambda x: self.cross_attn(x, memory, memory, src_mask))  # K, V: the memory
        x = self.sublayer[1](x, lambda x: self.cross_attn(x, memory, memory, src_mask, cross))  # K, V: the memory
        return self.sublayer[2](x, self.feed_forward)  # (B, T, d_model)


class Decoder(nn.Module):
    """N copies of one decoder layer; a pre-LN stack ends with one more LayerNorm."""

    def __init__(self, layer: DecoderLayer, N: int) -> None:
        super().__init__()
        self.layers = clones(layer, N)  # notebook 06's clones
        self.norm = final_norm(layer.d_model, layer.norm_first)

    # learner: def forward(self, x, memory, src_mask, tgt_mask):
    def forward(
        self,
        x: Tensor,
        memory: Tensor | None,
        src_mask: Tensor | None,
        tgt_mask: Tensor | None,
        cache: DecoderCache | None = None,
    ) -> Tensor:
        """x (batch, T, d_model), memory (batch, S, d_model) → (batch, T, d_model)."""
        # exercise:
        caches = cache.layers if cache is not None else [None] * len(self.layers)  # package only
        # learner: for layer in self.layers:
        for layer, layer_cache in zip(self.layers, caches):
            # learner: x = layer(x, memory, src_mask, tgt_mask)  # (B, T, d_model) → (B, T, d_model)
            x = layer(x, memory, src_mask, tgt_mask, layer_cache)  # (B, T, d_model) → (B, T, d_model)
        return self.norm(x)


class Generator(nn.Module):
    """The final linear layer: one score (logit) per target word; the softmax is left to the loss or the search."""

    def __init__(self, d_model: int, vocab: int) -> None:
        super().__init__()
        self.proj = nn.Linear(d_model, vocab)

    def forward(self, hidden: Tensor) -> Tensor:
        """hidden (batch, T, d_model) → logits (batch, T, vocab)."""
        # exercise:
        return self.proj(hidden)  # (B, T, d_model) → (B, T, vocab)


class EncoderDecoder(nn.Module):
    """Figure 1: embed and encode the source; embed the target and decode it against the memory."""

    def __init__(
        self,
        encoder: Encoder,
        decoder: Decoder,
        src_embed: Embeddings,
        tgt_embed: Embeddings,
        src_pos: PositionalEncoding,
        tgt_pos: PositionalEncoding,
        generator: Generator,
    ) -> None:
        super().__init__()
        self.src_embed, self.tgt_embed = src_embed, tgt_embed
        self.src_pos, self.tgt_pos = src_pos, tgt_pos
        self.encoder, self.decoder = encoder, decoder
        self.generator = generator

    def encode(self, src: Tensor, src_mask: Tensor | None) -> Tensor:
        """src (batch, S) token ids, src_mask (batch, 1, 1, S) → memory (batch, S, d_model)."""
        # exercise:
        # package only: begin
        check_token_ids(src, "src")  # a 1-D sentence: the decoders' clear error, not a shape error deep inside
        if src_mask is not None:
            check_mask(src_mask, src.size(0), 1, src.size(1), "src_mask")
        # package only: end
        return self.encoder(self.src_pos(self.src_embed(src)), src_mask)  # (B, S) → (B, S, d_model)

    # learner: def decode(self, memory, src_mask, tgt, tgt_mask):
    def decode(
        self,
        memory: Tensor | None,
        src_mask: Tensor | None,
        tgt: Tensor,
        tgt_mask: Tensor | None,
        cache: DecoderCache | None = None,
    ) -> Tensor:
        """memory (batch, S, d_model), tgt (batch, T) token ids, tgt_mask (batch, 1, T, T) → (batch, T, d_model)."""
        # exercise:
        # package only: begin
        # With a cache, tgt holds only the new tokens (usually one per sentence) at positions len(cache) …; the
        # positions before are read from the cache, and tgt_mask may be None (a new token sees all before it).
        check_token_ids(tgt, "tgt")
        start = len(cache) if cache is not None else 0
        # package only: end
        # learner: return self.decoder(self.tgt_pos(self.tgt_embed(tgt)), memory, src_mask, tgt_mask)  # (B, T, d_model)
        return self.decoder(self.tgt_pos(self.tgt_embed(tgt), start), memory, src_mask, tgt_mask, cache)

    def forward(self, src: Tensor, tgt: Tensor, src_mask: Tensor | None, tgt_mask: Tensor | None) -> Tensor:
        """Encode, then decode: (batch, T, d_model). Apply ``self.generator`` for logits."""
        # exercise:
        return self.decode(self.encode(src, src_mask), src_mask, tgt, tgt_mask)  # (B, T, d_model)

    # end learner file

    def new_cache(self, buffered: bool = False) -> DecoderCache:
        """An empty key/value cache for decoding one position at a time (notebook 09); ``buffered=True`` for the
        decoders' fast path (``DecoderCache``)."""
        return DecoderCache(len(self.decoder.layers), buffered)

    def attention_modules(self) -> list[MultiHeadAttention]:
        return [m for m in self.modules() if isinstance(m, MultiHeadAttention)]

    @property
    def src_vocab(self) -> int:  # deprecated in 0.2: an int here, the Vocab itself in Checkpoint.src_vocab
        warnings.warn("model.src_vocab is deprecated: use model.src_vocab_size", DeprecationWarning, stacklevel=2)
        return self.src_vocab_size

    @property
    def tgt_vocab(self) -> int:  # deprecated in 0.2, as src_vocab
        warnings.warn("model.tgt_vocab is deprecated: use model.tgt_vocab_size", DeprecationWarning, stacklevel=2)
        return self.tgt_vocab_size


# The package's name for the model make_model builds: an EncoderDecoder that also carries ``config`` (the run's
# config), ``model_config`` (its architecture), ``src_vocab_size`` and ``tgt_vocab_size``.
Transformer = EncoderDecoder


# learner file: decoder.py
def check_options(src_vocab: int, tgt_vocab: int, tie_embeddings: str, positional: str) -> None:
    """One clear line for an option make_model cannot build."""
    if tie_embeddings not in ("none", "decoder", "all"):
        raise ValueError(f"tie_embeddings must be 'none', 'decoder' or 'all', got {tie_embeddings!r}")
    if tie_embeddings == "all" and src_vocab != tgt_vocab:
        raise ValueError(
            f"tie_embeddings='all' shares one matrix between both languages, so it needs one shared vocabulary, "
            f"got src_vocab={src_vocab}, tgt_vocab={tgt_vocab}; build a shared vocabulary or use tie_embeddings='decoder'"
        )
    # learner: if positional not in ("sinusoidal", "learned"):
    if positional not in ("sinusoidal", "learned", "rope"):
        # learner: raise ValueError(f"positional must be 'sinusoidal' or 'learned', got {positional!r}")
        raise ValueError(f"positional must be 'sinusoidal', 'learned' or 'rope', got {positional!r}")


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
    **options,  # package only
) -> Transformer:
    """The whole model; the defaults are the paper's base model (Table 3). ``norm_first=True``: pre-LN
    (notebook 04); ``positional="learned"``: learned positions (notebook 05); ``tie_embeddings``: "none",
    "decoder" (target embedding = generator) or "all" (the source embedding too; one vocabulary)."""
    # exercise: 1. check_options(...) (given above) first
    # exercise: 2. model = EncoderDecoder(encoder, decoder, src_embed, tgt_embed, src_pos, tgt_pos, generator): your pieces
    # exercise:    of 04–07, each with the sizes it needs; norm_first goes to every layer, positional to both encodings
    # exercise: 3. nn.init.xavier_uniform_ on every matrix (p.dim() > 1) of model.parameters()
    # exercise: 4. tying (§3.4): make the generator's weight the target embedding's (and with "all" the source's too):
    # exercise:    assign the Parameter itself, so that the two are one tensor
    # exercise: 5. return model
    # package only: begin
    # ``options``: other Config fields, e.g. attention_dropout and ffn_dropout (0 in the paper; nn.Transformer uses
    # dropout), fast_dropout (dropout.py). The Config checks every value, and checkpoints save it (model.config).
    from .config import Config

    sizes = dict(N=N, d_model=d_model, d_ff=d_ff, h=h, dropout=dropout, norm_first=norm_first, max_len=max_len)
    config = Config.from_dict(dict(sizes, tie_embeddings=tie_embeddings, positional=positional, **options))
    check_positive(src_vocab=src_vocab, tgt_vocab=tgt_vocab)
    extra = dict(attention_dropout=config.attention_dropout, ffn_dropout=config.ffn_dropout)  # not in the paper
    seed_state = torch.random.get_rng_state()  # first_draws starts again from here
    # package only: end
    check_options(src_vocab, tgt_vocab, tie_embeddings, positional)
    model = EncoderDecoder(
        # learner: Encoder(EncoderLayer(d_model, h, d_ff, dropout, norm_first), N),
        Encoder(EncoderLayer(d_model, h, d_ff, dropout, norm_first, **extra), N),
        # learner: Decoder(DecoderLayer(d_model, h, d_ff, dropout, norm_first), N),
        Decoder(DecoderLayer(d_model, h, d_ff, dropout, norm_first, **extra), N),
        Embeddings(src_vocab, d_model),
        Embeddings(tgt_vocab, d_model),
        # learner: PositionalEncoding(d_model, dropout, max_len, positional),
        positions(d_model, dropout, max_len, positional),
        # learner: PositionalEncoding(d_model, dropout, max_len, positional),
        positions(d_model, dropout, max_len, positional),
        Generator(d_model, tgt_vocab),
    )
    use_switches(model, config)  # package only
    first_draws(model, seed_state)  # package only
    for p in model.parameters():
        # learner: if p.dim() > 1:
        if p.dim() > 1 and p is not model.src_pos.table and p is not model.tgt_pos.table:  # learned: N(0, 0.02²)
            nn.init.xavier_uniform_(p)  # every matrix; biases, γ and β keep their starting values
    if tie_embeddings in ("decoder", "all"):
        model.generator.proj.weight = model.tgt_embed.lut.weight  # one (tgt_vocab, d_model) matrix (§3.4)
    if tie_embeddings == "all":
        model.src_embed.lut.weight = model.tgt_embed.lut.weight
    # package only: begin
    model.config, model.model_config = config, ModelConfig.of(config)  # the run's config; the architecture alone
    model.src_vocab_size, model.tgt_vocab_size = src_vocab, tgt_vocab
    for attention in model.attention_modules():
        attention.keep_weights = False  # the fast path: attention.keeping_weights turns it on for a block
    if config.fast_dropout:
        use_fast_dropout(model)  # a run option, not the architecture: the same weights, the same model in eval mode
    # package only: end
    return model


# end learner file


def positions(d_model: int, dropout: float, max_len: int, positional: str) -> PositionalEncoding | RotaryPositions:
    """The positions module of ``positional``: the table (sinusoidal or learned), or for "rope" a module that adds
    nothing, since the queries and keys are turned inside attention."""
    if positional == "rope":
        return RotaryPositions(d_model, dropout, max_len)
    return PositionalEncoding(d_model, dropout, max_len, positional)


def use_switches(model: nn.Module, config) -> None:
    """Put the architecture switches of ``config`` (a ModelConfig or a run's Config) into a model built of the
    paper's blocks, before its weights are drawn: every LayerNorm becomes an RMSNorm (``norm="rms"``), every FFN a
    SwiGLU FFN (``ffn="swiglu"``), every attention a grouped-query one (``n_kv_heads``), and self-attention turns
    its queries and keys (``positional="rope"``). With the paper's values nothing changes."""
    c = ModelConfig.of(config)
    kv_heads = c.n_kv_heads if c.n_kv_heads is not None else c.h
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if isinstance(child, LayerNorm) and c.norm == "rms":
                setattr(parent, name, RMSNorm(child.weight.numel(), child.eps))
            elif isinstance(child, PositionwiseFeedForward) and c.ffn == "swiglu":
                d_model, d_ff = child.w_1.in_features, child.w_1.out_features
                setattr(parent, name, SwiGLUFeedForward(d_model, d_ff, child.dropout.p))
            elif isinstance(child, MultiHeadAttention) and (kv_heads != c.h or c.positional == "rope"):
                rotary = c.positional == "rope" and name == "self_attn"  # cross-attention: no positions to relate
                setattr(
                    parent,
                    name,
                    MultiHeadAttention(child.d_model, child.heads, child.dropout.p, child.fast, int(kv_heads), rotary),
                )


def first_draws(model: EncoderDecoder, seed_state: Tensor) -> None:
    """Draw every part's starting values again from ``seed_state`` on, in the order of a model whose stacks build
    their N layers one by one (the package did so up to 0.2): a seed gives the model it gave then, so the runs in
    docs/results.md replay from their seeds. The Xavier draws of make_model follow these."""
    torch.random.set_rng_state(seed_state)
    with torch.no_grad():
        model.src_embed.lut.reset_parameters()  # N(0, 1)
        model.tgt_embed.lut.reset_parameters()
        for pos in (model.src_pos, model.tgt_pos):
            if isinstance(pos.table, nn.Parameter):  # a learned table: N(0, 0.02²)
                pos.table.copy_(torch.randn(pos.table.shape) * 0.02)
        for layer in (*model.encoder.layers, *model.decoder.layers):
            for linear in (m for m in layer.modules() if isinstance(m, nn.Linear)):  # attention, then the FFN
                linear.reset_parameters()
        model.generator.proj.reset_parameters()


def build_model(config, src_vocab: int, tgt_vocab: int) -> Transformer:
    """The model a run's :class:`~transformer_course.config.Config` (or a :class:`ModelConfig`) describes, with the
    run's own choices applied (``fast_dropout``); ``model.config`` is ``config`` itself."""
    model = make_model(
        src_vocab, tgt_vocab, **asdict(ModelConfig.of(config)), fast_dropout=getattr(config, "fast_dropout", False)
    )
    model.config = config
    return model


def count_parameters(model: nn.Module) -> int:
    """Trainable parameters, each shared (tied) matrix counted once."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def causal_mask(length: int, past: int, device: torch.device | str | None = None) -> Tensor:
    """(1, 1, length, past + length), True = may attend: the query at position past + i sees positions 0 … past + i."""
    keys = torch.arange(past + length, device=device)  # (past + length,)
    queries = torch.arange(past, past + length, device=device)  # (length,)
    return (keys[None, :] <= queries[:, None]).view(1, 1, length, past + length)  # (1, 1, length, past + length)


class GPT(nn.Module):
    """A decoder-only language model built of the package's blocks (notebook 12): ids → Embeddings + positions →
    Decoder (N × ``DecoderLayer(…, cross_attention=False)``) under a causal mask → Generator (tied to the embedding)
    → logits. :func:`make_lm` builds it; ``model.model_config`` is its architecture."""

    def __init__(self, embed: Embeddings, pos: nn.Module, decoder: Decoder, generator: Generator) -> None:
        super().__init__()
        self.embed, self.pos, self.decoder, self.generator = embed, pos, decoder, generator

    def forward(self, ids: Tensor, cache: DecoderCache | None = None) -> Tensor:
        """ids (batch, T) → logits (batch, T, vocab): the scores of the token after each position. With a cache,
        ids holds the new tokens only, at positions len(cache) …; the ones before are read from the cache."""
        check_token_ids(ids, "ids")
        past = len(cache) if cache is not None else 0
        mask = causal_mask(ids.size(1), past, ids.device)  # (1, 1, T, past + T)
        hidden = self.decoder(self.pos(self.embed(ids), past), None, None, mask, cache)  # (B, T, d_model)
        return self.generator(hidden)  # (B, T, vocab)

    def new_cache(self, buffered: bool = False) -> DecoderCache:
        """An empty key/value cache for generating one token at a time."""
        return DecoderCache(len(self.decoder.layers), buffered)

    @torch.no_grad()
    def generate(
        self,
        ids: Tensor,
        steps: int,
        use_cache: bool = True,
        *,
        temperature: float = 0.0,
        top_k: int | None = None,
        top_p: float | None = None,
        generator: torch.Generator | None = None,
        eos: int | None = None,
    ) -> Tensor:
        """ids (batch, T) followed by up to ``steps`` tokens, each chosen after the ones before → (batch, T + steps).
        The default, ``temperature=0``, is greedy (the argmax); a temperature > 0 samples, after ``top_k`` and
        ``top_p`` (:func:`~transformer_course.sampling.sample_next`), with ``generator`` (a fixed seed: the same
        tokens). With ``eos`` a row that has said it repeats it, and generation stops once every row has (a host
        sync per step). ``use_cache=False`` runs the whole sequence again at every step (the same tokens, slower)."""
        cache = self.new_cache() if use_cache else None
        out, new = ids, ids
        finished = torch.zeros(ids.size(0), 1, dtype=torch.bool, device=ids.device)  # (B, 1)
        for _ in range(steps):
            logits = self(new if cache is not None else out, cache)[:, -1]  # (B, vocab): the last position's
            token = sample_next(logits, temperature, top_k, top_p, generator)  # (B, 1)
            if eos is not None:
                token = token.masked_fill(finished, eos)  # a row that has ended stays ended
                finished |= token == eos
            out, new = torch.cat([out, token], dim=1), token  # (B, T + 1)
            if eos is not None and bool(finished.all()):  # the sync: every row has ended
                break
        return out


def lm_loss(logits: Tensor, ids: Tensor, pad_idx: int | None = None) -> Tensor:
    """The next-token loss: position t's logits (batch, T, vocab) against token t + 1 of ids (batch, T); the last
    position has no next token. Padding (``pad_idx``) is left out of the mean."""
    vocab = logits.size(-1)
    predicted = logits[:, :-1].reshape(-1, vocab)  # (B·(T − 1), vocab)
    target = ids[:, 1:].reshape(-1)  # (B·(T − 1),): the shifted ids
    return F.cross_entropy(predicted, target, ignore_index=-100 if pad_idx is None else pad_idx)


def make_lm(
    vocab: int,
    N: int = 6,
    d_model: int = 512,
    d_ff: int = 2048,
    h: int = 8,
    dropout: float = 0.1,
    norm_first: bool = False,
    max_len: int = 512,
    positional: str = "sinusoidal",
    **switches,
) -> GPT:
    """A decoder-only language model of the paper's blocks; the defaults are the paper's choices (post-LN,
    sinusoidal positions, LayerNorm, the ReLU FFN, multi-head attention), ``switches`` the modern ones:
    ``norm="rms"``, ``ffn="swiglu"``, ``n_kv_heads`` and ``positional="rope"`` (checked by the run's Config,
    as every other value)."""
    from .config import Config

    sizes = dict(N=N, d_model=d_model, d_ff=d_ff, h=h, dropout=dropout, norm_first=norm_first, max_len=max_len)
    config = Config.from_dict(dict(sizes, positional=positional, **switches))
    check_positive(vocab=vocab)
    extra = dict(attention_dropout=config.attention_dropout, ffn_dropout=config.ffn_dropout)
    layer = DecoderLayer(d_model, h, d_ff, dropout, norm_first, **extra, cross_attention=False)
    model = GPT(
        Embeddings(vocab, d_model),
        positions(d_model, dropout, max_len, positional),
        Decoder(layer, N),
        Generator(d_model, vocab),
    )
    use_switches(model, config)
    for p in model.parameters():
        if p.dim() > 1 and p is not model.pos.table:  # a learned table keeps N(0, 0.02²)
            nn.init.xavier_uniform_(p)
    model.generator.proj.weight = model.embed.lut.weight  # tied: one (vocab, d_model) matrix (§3.4)
    model.config, model.model_config, model.vocab_size = config, ModelConfig.of(config), vocab
    for attention in (m for m in model.modules() if isinstance(m, MultiHeadAttention)):
        attention.keep_weights = False  # the fast path
    return model

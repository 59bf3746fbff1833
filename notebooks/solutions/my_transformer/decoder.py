"""Notebook 07: the decoder layer and stack, the generator, and the whole encoder-decoder model (§3)."""

from torch import nn

from .embeddings import Embeddings, PositionalEncoding, PositionwiseFeedForward
from .encoder import Encoder, EncoderLayer, clones, final_norm
from .multi_head import MultiHeadAttention
from .norm_residual import ResidualConnection


class DecoderLayer(nn.Module):
    """Masked self-attention, cross-attention over the memory, then the FFN; each in a residual connection."""

    def __init__(self, d_model, heads, d_ff, dropout, norm_first=False):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, heads)
        self.cross_attn = MultiHeadAttention(d_model, heads)
        self.feed_forward = PositionwiseFeedForward(d_model, d_ff)
        self.sublayer = nn.ModuleList([ResidualConnection(d_model, dropout, norm_first) for _ in range(3)])
        self.d_model, self.norm_first = d_model, norm_first

    def forward(self, x, memory, src_mask, tgt_mask):
        """x (batch, T, d_model), memory (batch, S, d_model), src_mask (batch, 1, 1, S), tgt_mask (batch, 1, T, T)
        → (batch, T, d_model)."""
        x = self.sublayer[0](x, lambda x: self.self_attn(x, x, x, tgt_mask))  # (B, T, d_model): x and its past
        x = self.sublayer[1](x, lambda x: self.cross_attn(x, memory, memory, src_mask))  # K, V: the memory
        return self.sublayer[2](x, self.feed_forward)  # (B, T, d_model)


class Decoder(nn.Module):
    """N copies of one decoder layer; a pre-LN stack ends with one more LayerNorm."""

    def __init__(self, layer, N):
        super().__init__()
        self.layers = clones(layer, N)  # notebook 06's clones
        self.norm = final_norm(layer.d_model, layer.norm_first)

    def forward(self, x, memory, src_mask, tgt_mask):
        """x (batch, T, d_model), memory (batch, S, d_model) → (batch, T, d_model)."""
        for layer in self.layers:
            x = layer(x, memory, src_mask, tgt_mask)  # (B, T, d_model) → (B, T, d_model)
        return self.norm(x)


class Generator(nn.Module):
    """The final linear layer: one score (logit) per target word; the softmax is left to the loss or the search."""

    def __init__(self, d_model, vocab):
        super().__init__()
        self.proj = nn.Linear(d_model, vocab)

    def forward(self, hidden):
        """hidden (batch, T, d_model) → logits (batch, T, vocab)."""
        return self.proj(hidden)  # (B, T, d_model) → (B, T, vocab)


class EncoderDecoder(nn.Module):
    """Figure 1: embed and encode the source; embed the target and decode it against the memory."""

    def __init__(self, encoder, decoder, src_embed, tgt_embed, src_pos, tgt_pos, generator):
        super().__init__()
        self.src_embed, self.tgt_embed = src_embed, tgt_embed
        self.src_pos, self.tgt_pos = src_pos, tgt_pos
        self.encoder, self.decoder = encoder, decoder
        self.generator = generator

    def encode(self, src, src_mask):
        """src (batch, S) token ids, src_mask (batch, 1, 1, S) → memory (batch, S, d_model)."""
        return self.encoder(self.src_pos(self.src_embed(src)), src_mask)  # (B, S) → (B, S, d_model)

    def decode(self, memory, src_mask, tgt, tgt_mask):
        """memory (batch, S, d_model), tgt (batch, T) token ids, tgt_mask (batch, 1, T, T) → (batch, T, d_model)."""
        return self.decoder(self.tgt_pos(self.tgt_embed(tgt)), memory, src_mask, tgt_mask)  # (B, T, d_model)

    def forward(self, src, tgt, src_mask, tgt_mask):
        """Encode, then decode: (batch, T, d_model). Apply ``self.generator`` for logits."""
        return self.decode(self.encode(src, src_mask), src_mask, tgt, tgt_mask)  # (B, T, d_model)


def check_options(src_vocab, tgt_vocab, tie_embeddings, positional):
    """One clear line for an option make_model cannot build."""
    if tie_embeddings not in ("none", "decoder", "all"):
        raise ValueError(f"tie_embeddings must be 'none', 'decoder' or 'all', got {tie_embeddings!r}")
    if tie_embeddings == "all" and src_vocab != tgt_vocab:
        raise ValueError(
            f"tie_embeddings='all' shares one matrix between both languages, so it needs one shared vocabulary, "
            f"got src_vocab={src_vocab}, tgt_vocab={tgt_vocab}; build a shared vocabulary or use tie_embeddings='decoder'"
        )
    if positional not in ("sinusoidal", "learned"):
        raise ValueError(f"positional must be 'sinusoidal' or 'learned', got {positional!r}")


def make_model(
    src_vocab,
    tgt_vocab,
    N=6,
    d_model=512,
    d_ff=2048,
    h=8,
    dropout=0.1,
    norm_first=False,
    tie_embeddings="decoder",
    max_len=512,
    positional="sinusoidal",
):
    """The whole model; the defaults are the paper's base model (Table 3). ``norm_first=True``: pre-LN
    (notebook 04); ``positional="learned"``: learned positions (notebook 05); ``tie_embeddings``: "none",
    "decoder" (target embedding = generator) or "all" (the source embedding too; one vocabulary)."""
    check_options(src_vocab, tgt_vocab, tie_embeddings, positional)
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
            nn.init.xavier_uniform_(p)  # every matrix; biases, γ and β keep their starting values
    if tie_embeddings in ("decoder", "all"):
        model.generator.proj.weight = model.tgt_embed.lut.weight  # one (tgt_vocab, d_model) matrix (§3.4)
    if tie_embeddings == "all":
        model.src_embed.lut.weight = model.tgt_embed.lut.weight
    return model

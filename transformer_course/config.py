"""One configuration dataclass for the model and its training; presets are instances of it.

The defaults are the paper's base model (Table 3): N=6, d_model=512, d_ff=2048, h=8, P_drop=0.1,
ε_ls=0.1, warmup 4000 steps.

Every Config is checked when it is made (:meth:`Config.validate`, run by the constructor, so also by
``replace``, ``from_dict``, the presets and a checkpoint's config): types (``N=True`` is not a number of
layers), ranges (``lr_factor > 0``, dropout in [0, 1), ``h`` divides ``d_model`` …) and upper bounds
(:data:`LIMITS`), so that a typo or a damaged file is one clear ValueError before any tensor is allocated.
"""

from __future__ import annotations

import math
import numbers
import os
from dataclasses import asdict, dataclass, fields, replace

__all__ = [
    "Config",
    "check_fits_in_memory",
    "machine_memory_bytes",
    "training_bytes",
    "LIMITS",
    "MAX_BEAM_SIZE",
    "MAX_LENGTH_PENALTY",
    "PRESETS",
    "get_preset",
    "fast_mode",
]

MAX_LENGTH_PENALTY = 10.0  # α of the GNMT length penalty; the paper uses 0.6, GNMT tried 0 to 1 (Wu et al., 2016)
MAX_BEAM_SIZE = 1000  # the paper decodes with 4 (§6.1); a beam's cost in time and memory grows linearly with it

# The smallest and largest value of each integer field. The upper bounds lie far above any model this course
# trains (the paper's big model: N=6, d_model=1024, d_ff=4096, h=16) and stop a typo or a damaged
# checkpoint from building for minutes and allocating gigabytes.
LIMITS: dict[str, tuple[int, int]] = {
    "N": (1, 64),
    "d_model": (1, 16384),
    "d_ff": (1, 65536),
    "h": (1, 1024),
    "max_len": (1, 65536),
    "min_freq": (1, 1_000_000),
    "tokens_per_batch": (1, 10_000_000),
    "warmup": (1, 10_000_000),
    "epochs": (1, 1_000_000),
    "validate_every": (1, 1_000_000),
    "accumulate": (1, 10_000),
    "seed": (0, 2**63 - 1),
    "beam_size": (1, MAX_BEAM_SIZE),
    "subword_vocab": (5, 1_000_000),  # the 4 specials + at least one character; the paper: about 37000 (§5.1)
    "context": (1, 65536),  # a language model's row: context + 1 ids, context predictions
}
PROBABILITIES = {  # fields that are probabilities in [0, 1), with the paper's value to suggest
    "dropout": "0.1 (the paper's P_drop)",
    "attention_dropout": "0.0 (the paper's)",
    "ffn_dropout": "0.0 (the paper's)",
    "label_smoothing": "0.1 (the paper's ε_ls)",
    "ema_decay": "0.999 (0: no EMA)",
    "word_dropout": "0.1 (0: off)",
}
FRACTIONS = {  # fields that are a fraction in (0, 1), with a value to suggest
    "warmup_fraction": "0.1 (the 45-minute CPU run warmed up for 300 of its 2,338 steps: 0.13)",
}
CHOICES = {
    "positional": ("sinusoidal", "learned", "rope"),
    "norm": ("layer", "rms"),
    "ffn": ("relu", "swiglu"),
    "tie_embeddings": ("none", "decoder", "all"),
    "task": ("multi30k", "copy", "reverse", "captions"),
    "tokenizer": ("words", "bpe"),
    "schedule": ("noam", "budget"),
    "word_dropout_on": ("both", "source", "target"),
}


def _is_int(value) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)  # True is not a number of layers


def _is_real(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)


@dataclass(frozen=True)
class Config:
    name: str = "custom"
    # model (§3, Table 3)
    N: int = 6  # layers in the encoder and in the decoder
    d_model: int = 512
    d_ff: int = 2048
    h: int = 8  # attention heads
    dropout: float = 0.1  # P_drop: on every sub-layer output and on embeddings + positions (§5.4)
    attention_dropout: float = 0.0  # on attention weights: §6.3 names it ("dropout, both attention and residual") but §5.4 applies only residual dropout; nn.Transformer uses P_drop
    ffn_dropout: float = 0.0  # on the FFN's hidden layer: not in the paper (nn.Transformer uses P_drop)
    norm_first: bool = False  # False: post-LN as in the paper; True: pre-LN
    positional: str = "sinusoidal"  # or "learned", or "rope" (rotary: queries and keys turned inside attention)
    max_len: int = 512  # longest sequence the positional table holds
    tie_embeddings: str = "decoder"  # "none", "decoder" (target embedding = output layer) or "all" (§3.4)
    norm: str = "layer"  # "layer": LayerNorm (the paper); "rms": RMSNorm
    ffn: str = "relu"  # "relu": the paper's FFN (§3.3); "swiglu": gated, at the same parameter count
    n_kv_heads: int | None = None  # key/value heads; None: h (the paper); fewer: grouped-query attention
    # data
    task: str = "multi30k"  # "multi30k", "copy", "reverse", or "captions" (a decoder-only LM, notebook 12)
    min_freq: int = 2  # a word seen fewer times in train becomes <unk>
    shared_vocab: bool = False  # one vocabulary for both languages (needed for tie_embeddings="all")
    tokenizer: str = "words"  # "words": spaCy words, min_freq vocabularies; "bpe": one joint subword model (§5.1)
    subword_vocab: int = 8000  # with tokenizer="bpe": pieces in the shared vocabulary, specials included
    # True: train on the reversed pairs too (en→de beside de→en), on one shared vocabulary: a German target starts
    # with </s> where an English one starts with <s>, an id the decoder never reads otherwise, so the first input
    # names the language to write; validation, decoding and every export stay de→en (data/loaders.py)
    both_directions: bool = False
    context: int = 64  # task="captions": the ids a language model reads before each prediction (a row is context + 1)
    # training (§5.3, §5.4)
    tokens_per_batch: int = 4000  # target tokens per batch
    label_smoothing: float = 0.1
    fast_dropout: bool = False  # True: dropout masks drawn 4 per 64-bit word on a CPU (dropout.py); eval unchanged
    fused_loss: bool = False  # True: the loss's backward written out (train/loss.py): same gradient, other rounding
    warmup: int = 4000
    lr_factor: float = 1.0  # lr = lr_factor · d_model^-0.5 · min(step^-0.5, step · warmup^-1.5)
    epochs: int = 10
    validate_every: int = 1  # validate (best.pt, epoch-NNN.pt, last.pt) after every this many epochs, and at the stop
    accumulate: int = 1  # gradient accumulation steps
    clip_norm: float | None = None
    seed: int = 0
    # "noam": the paper's schedule, warmup counted in steps (§5.3). "budget": the run's length in steps is
    # planned (from epochs / max_steps, or from the step rate measured in the first seconds of a --max-minutes
    # run), then a linear warmup over warmup_fraction of it to the peak rate of the Noam schedule with this
    # config's warmup and lr_factor, and a linear decay to 0 at the planned end (train/schedule.py)
    schedule: str = "noam"
    warmup_fraction: float = 0.1  # with schedule="budget": the share of the planned steps spent warming up
    # regularizers and averages for small data (0 = off: a run trains exactly as without them)
    ema_decay: float = 0.0  # > 0: an EMA of the weights after every step, saved as ema.pt / best-ema.pt (train/ema.py)
    word_dropout: float = 0.0  # in training, each input word becomes <unk> at this rate (never pad, <s>, </s>)
    word_dropout_on: str = "both"  # the inputs word_dropout touches: "both", "source" or "target" (tgt_in)
    rdrop: float = 0.0  # > 0: R-Drop's α, each batch twice through the model + α · their symmetric KL (train/step.py)
    # decoding (§6.1)
    beam_size: int = 4
    length_penalty: float = 0.6

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> Config:
        """Raise a ValueError naming the first field that is of the wrong type, out of range or above its
        limit (:data:`LIMITS`); return the config when every field is fine."""
        for f in fields(self):
            name, value = f.name, getattr(self, f.name)
            if name in LIMITS:
                low, high = LIMITS[name]
                if not _is_int(value) or value < low:
                    kind = "a positive integer" if low == 1 else f"an integer >= {low}"
                    of_type = "" if _is_int(value) else f" of type {type(value).__name__}"
                    raise ValueError(f"{name} must be {kind}, got {name}={value!r}{of_type}")
                if value > high:
                    raise ValueError(
                        f"{name}={value} is above {high}, the largest this package accepts (a typo or a damaged "
                        f"file would allocate gigabytes); use {name} <= {high}"
                    )
                object.__setattr__(self, name, int(value))  # numpy/torch integers become plain ints
            elif name in PROBABILITIES:
                if not _is_real(value) or not 0.0 <= value < 1.0:
                    raise ValueError(
                        f"{name}={value!r} is outside [0, 1); use a probability such as {PROBABILITIES[name]}"
                    )
            elif name in FRACTIONS:
                if not _is_real(value) or not 0.0 < value < 1.0:
                    raise ValueError(f"{name}={value!r} is outside (0, 1); use a fraction such as {FRACTIONS[name]}")
            elif name in CHOICES:
                if value not in CHOICES[name]:
                    raise ValueError(f"{name} must be one of {list(CHOICES[name])}, got {name}={value!r}")
            elif f.type in ("bool", bool):
                if not isinstance(value, bool):
                    raise ValueError(f"{name} must be True or False, got {name}={value!r} ({type(value).__name__})")
            elif name == "name":
                if not isinstance(value, str) or not value:
                    raise ValueError(f"name must be a non-empty string, got name={value!r}")
        if not _is_real(self.lr_factor) or not self.lr_factor > 0:
            raise ValueError(
                f"lr_factor must be a positive finite number (it scales the learning rate), got "
                f"lr_factor={self.lr_factor!r}; the paper's schedule is lr_factor=1.0"
            )
        if not _is_real(self.length_penalty) or not 0 <= self.length_penalty <= MAX_LENGTH_PENALTY:
            raise ValueError(
                f"length_penalty must be a finite number >= 0 and <= {MAX_LENGTH_PENALTY} (α of the GNMT length penalty), got "
                f"length_penalty={self.length_penalty!r}; the paper uses 0.6"
            )
        if not _is_real(self.rdrop) or not 0 <= self.rdrop <= 100:
            raise ValueError(
                f"rdrop must be a number in [0, 100] (0: off; R-Drop's α, e.g. 0.5 or 1), got rdrop={self.rdrop!r}"
            )
        if self.clip_norm is not None and (not _is_real(self.clip_norm) or not self.clip_norm > 0):
            raise ValueError(
                f"clip_norm must be None (no clipping) or a positive finite number, got clip_norm={self.clip_norm!r}"
            )
        if self.d_model % self.h:
            raise ValueError(
                f"d_model={self.d_model} is not divisible by h={self.h} heads; choose d_model as a multiple of "
                f"h (e.g. d_model={self.h * max(1, round(self.d_model / self.h))})"
            )
        if self.n_kv_heads is not None and (
            not _is_int(self.n_kv_heads) or self.n_kv_heads <= 0 or self.h % self.n_kv_heads
        ):
            raise ValueError(
                f"n_kv_heads={self.n_kv_heads!r} does not divide h={self.h} heads; choose a divisor of h "
                f"(None or {self.h}: multi-head attention, 1: one key/value head for all)"
            )
        if self.n_kv_heads is not None:
            object.__setattr__(self, "n_kv_heads", int(self.n_kv_heads))  # a numpy integer becomes a plain int
        if self.positional == "rope" and (self.d_model // self.h) % 2:
            raise ValueError(
                f"rotary positions turn pairs of features, so d_model / h must be even, got "
                f"d_model={self.d_model}, h={self.h}; choose an even d_model / h or another positional"
            )
        if self.tokenizer == "bpe" and not self.shared_vocab:
            raise ValueError(
                "tokenizer='bpe' learns one joint German+English subword model with one vocabulary for both "
                "languages; set shared_vocab=True (or use tokenizer='words')"
            )
        if self.both_directions and (self.task != "multi30k" or not self.shared_vocab):
            raise ValueError(
                "both_directions=True trains Multi30k in both directions with one model, so both languages need "
                f"one vocabulary: set task='multi30k' and shared_vocab=True (got task={self.task!r}, "
                f"shared_vocab={self.shared_vocab})"
            )
        if self.task == "captions" and self.context + 1 > self.max_len:
            raise ValueError(
                f"a language model's row holds context + 1 = {self.context + 1} positions, more than max_len="
                f"{self.max_len}; raise max_len to at least {self.context + 1} or lower context"
            )
        if self.positional == "sinusoidal" and self.d_model % 2:
            raise ValueError(
                f"sinusoidal positions need an even d_model (sin/cos pairs), got d_model={self.d_model}; "
                "use an even d_model or positional='learned'"
            )
        return self

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, values: dict) -> Config:
        if not isinstance(values, dict):
            raise ValueError(f"a config must be a dict of field values, got {type(values).__name__}")
        known = {f.name for f in fields(cls)}
        unknown = set(values) - known
        if unknown:
            raise ValueError(f"unknown config fields {sorted(unknown)}; known fields: {sorted(known)}")
        return cls(**values)

    def replace(self, **changes) -> Config:
        return replace(self, **changes)


# A copy task a 2-core CPU learns in seconds (notebooks 08–10).
TOY_COPY = Config(
    name="toy-copy",
    task="copy",
    N=2,
    d_model=64,
    d_ff=128,
    h=4,
    dropout=0.0,
    max_len=64,
    tie_embeddings="all",
    shared_vocab=True,
    tokens_per_batch=1024,
    warmup=100,
    lr_factor=1.0,
    label_smoothing=0.0,
    epochs=1,
)

# The word-level recipe (spaCy words, min_freq 2, ~9.2M parameters): what notebook 11 trains on a CPU, and
# the default until the subword contest (docs/results.md: 37.40 sacreBLEU with beam 4, 288 outputs with <unk>).
# Every Multi30k preset draws its dropout masks with FastDropout (dropout.py) and takes the loss's written-out
# backward (train/loss.py): the same training procedure, a cheaper CPU step; the runs of docs/results.md measured
# before them (commit 911ecfb and older) used nn.Dropout and autograd's backward.
MULTI30K_CPU_WORDS = Config(
    name="multi30k-cpu-words",
    N=3,
    d_model=256,
    d_ff=1024,
    h=8,
    dropout=0.1,
    fast_dropout=True,
    fused_loss=True,
    tokens_per_batch=4000,
    warmup=150,
    lr_factor=0.2,
    epochs=20,
)

# The word recipe on subwords with the paper's three-way tying (§3.4): one matrix for both embeddings and the
# pre-softmax layer. Within 45 CPU-minutes the German-only rows of that matrix collapse (docs/results.md);
# the paper trained 100,000 steps.
MULTI30K_CPU_BPE = MULTI30K_CPU_WORDS.replace(
    name="multi30k-cpu-bpe", tokenizer="bpe", subword_vocab=8000, shared_vocab=True, tie_embeddings="all"
)

PRESETS: dict[str, Config] = {
    "toy-copy": TOY_COPY,
    "toy-reverse": TOY_COPY.replace(name="toy-reverse", task="reverse"),  # the same model, the output reversed
    # The 45-minute recipe for Multi30k on 2 CPU cores (docs/results.md): one joint de+en byte-pair vocabulary of
    # 4000 pieces (§5.1), target embedding = pre-softmax layer, batches of ~2000 target tokens, a peak rate of
    # 1.02e-3 (the Noam peak of warmup 300 and lr_factor 0.2·√2) reached over the first 10 % of the steps the run
    # plans and decayed linearly to 0 at its end (schedule="budget"), an EMA of the weights beside (best-ema.pt),
    # and word dropout 0.1 (each input piece of a training batch becomes <unk> at that rate): the search of
    # docs/results.md, its candidates ranked by validation BLEU with beam 4, word dropout kept after three seeds.
    # The beam's length penalty α = 1.2, not the paper's 0.6: the α of a grid with the highest mean validation BLEU
    # over those three seeds (the paper chose its own on its development set, §6.1). Its runs report the checkpoint
    # with the highest validation BLEU (README: choose --by bleu --beam 4).
    "multi30k-cpu": MULTI30K_CPU_BPE.replace(
        name="multi30k-cpu",
        tie_embeddings="decoder",
        subword_vocab=4000,
        word_dropout=0.1,
        length_penalty=1.2,
        tokens_per_batch=2000,
        warmup=300,
        lr_factor=0.2 * 2**0.5,
        schedule="budget",
        ema_decay=0.999,
        epochs=40,
    ),
    "multi30k-cpu-words": MULTI30K_CPU_WORDS,
    "multi30k-cpu-bpe": MULTI30K_CPU_BPE,
    # The paper's base model (Table 3: N=6, d_model=512, d_ff=2048, h=8) for one GPU, with what the CPU contest
    # found (docs/results.md: the joint BPE vocabulary of 4,000 pieces, the target embedding tied to the output
    # layer only, an EMA of the weights, word dropout 0.1: none depends on the model's size or the machine, and
    # word dropout acts on the same 29k pairs, which a model 5x larger overfits sooner; not the CPU recipe's α,
    # which is fitted to that model's own length bias on validation: the paper's 0.6 until one is chosen) and what
    # small-corpus recipes use for a model of this size: dropout 0.3 and a peak rate of
    # 5e-4, fairseq's transformer_iwslt_de_en (160k pairs; Multi30k has 29k), where the paper's 0.1 is its WMT
    # setting (4.5M pairs). 8,000 tokens per batch: a GPU's step costs about the same at 4,000, so a bigger
    # batch sees more data per minute. schedule="budget": a 5-minute run warms up for 10 % of the steps it
    # measures it can take and decays to 0 at its end (4,000 warmup steps might not fit in 5 minutes at all).
    "multi30k-base": MULTI30K_CPU_BPE.replace(
        name="multi30k-base",
        N=6,
        d_model=512,
        d_ff=2048,
        h=8,
        dropout=0.3,
        tie_embeddings="decoder",
        subword_vocab=4000,
        ema_decay=0.999,
        word_dropout=0.1,
        tokens_per_batch=8000,
        warmup=4000,
        lr_factor=5e-4 * (512 * 4000) ** 0.5,  # the Noam peak factor · (d_model · warmup)^-0.5 = 5e-4
        schedule="budget",
        warmup_fraction=0.1,
        epochs=200,
        validate_every=5,  # on a GPU an epoch of Multi30k takes seconds: validating and saving each would dominate
    ),
}

# A decoder-only language model of the same blocks on Multi30k's English captions (notebook 12; train/lm.py): an
# English byte-pair vocabulary of 2,000 pieces, rows of 33 ids (a caption is about 16), 32 rows a step, a linear
# warmup over the first 10 % of the planned steps to a peak rate of 3e-3 and a linear decay to 0
# (schedule="budget"; the peak is lr_factor · (d_model · warmup)^-0.5, as for multi30k-base). The blocks are the
# modern ones (pre-LN, rotary positions, RMSNorm, SwiGLU, 2 key/value heads of 4): docs/results.md measures each
# against the paper's choice. 4 epochs of the train captions, 1,892 steps: 23 minutes on one thread of a busy
# 2-core VM, test perplexity 20.54 against the bigram's 38.76 (docs/results.md).
GPT_CPU = Config(
    name="gpt-cpu",
    task="captions",
    N=4,
    d_model=128,
    d_ff=512,
    h=4,
    n_kv_heads=2,
    norm_first=True,
    positional="rope",
    norm="rms",
    ffn="swiglu",
    dropout=0.0,
    max_len=256,
    tie_embeddings="decoder",
    tokenizer="bpe",
    shared_vocab=True,  # one vocabulary (the LM has one language; the field keeps the Config's rule for bpe)
    subword_vocab=2000,
    context=32,
    tokens_per_batch=32 * 32,
    label_smoothing=0.0,
    schedule="budget",
    warmup_fraction=0.1,
    warmup=100,
    lr_factor=3e-3 * (128 * 100) ** 0.5,  # peak 3e-3
    epochs=4,
)
PRESETS["gpt-cpu"] = GPT_CPU
# The same recipe scaled for one GPU, reasoned, NOT yet measured on a GPU: 8 layers of the paper's base width
# (d_model 512, d_ff 2048) with GPT-2 small's 64 features per head (8 heads, 2 key/value heads), rows of 129 ids,
# 64 rows a step (8,192 tokens, multi30k-base's batch), an English vocabulary of 8,000 pieces: 26 M parameters.
# A model this size overfits half a million caption tokens quickly, so dropout 0.1 and a peak rate of 6e-4
# (GPT-2 small's, for a model of its width), for 20 epochs.
PRESETS["gpt-gpu"] = GPT_CPU.replace(
    name="gpt-gpu",
    N=8,
    d_model=512,
    d_ff=2048,
    h=8,
    n_kv_heads=2,
    dropout=0.1,
    subword_vocab=8000,
    context=128,
    tokens_per_batch=64 * 128,
    lr_factor=6e-4 * (512 * 100) ** 0.5,  # peak 6e-4
    epochs=20,
)


def machine_memory_bytes() -> int | None:
    """This machine's physical memory in bytes (None where the system does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, OSError, ValueError):
        return None


def training_bytes(config: Config, src_vocab: int, tgt_vocab: int) -> tuple[int, int]:
    """(parameters, bytes) a training step of ``config`` needs at least, in float32: the weights, their
    gradients and Adam's two moments (16 bytes a parameter), and the activations autograd keeps for one batch
    of ``tokens_per_batch`` target tokens (per layer and token about 16·d_model + 2·d_ff numbers; the logits and
    their softmax, 3·tgt_vocab). A lower bound: attention's (q_len × k_len) maps come on top."""
    d, f, n = config.d_model, config.d_ff, config.N
    per_layer = 4 * d * d + 2 * d * f  # self-attention's projections and the feed-forward network (no biases)
    matrices = {"none": src_vocab + 2 * tgt_vocab, "decoder": src_vocab + tgt_vocab, "all": max(src_vocab, tgt_vocab)}
    parameters = n * per_layer + n * (per_layer + 4 * d * d) + matrices[config.tie_embeddings] * d  # encoder, decoder
    tokens = 2 * config.tokens_per_batch  # source tokens about as many as target ones
    activations = tokens * (2 * n * (16 * d + 2 * f)) + config.tokens_per_batch * 3 * tgt_vocab
    return parameters, 16 * parameters + 4 * activations


def check_fits_in_memory(config: Config, src_vocab: int, tgt_vocab: int, available: int | None = None) -> None:
    """Refuse, before any tensor is allocated, a model whose training needs more memory than this machine has
    (``available`` bytes; default: :func:`machine_memory_bytes`), in one line naming what to make smaller."""
    available = machine_memory_bytes() if available is None else available
    if available is None:
        return
    parameters, needed = training_bytes(config, src_vocab, tgt_vocab)
    if needed > available:
        raise ValueError(
            f"N={config.N}, d_model={config.d_model}, d_ff={config.d_ff} with tokens_per_batch="
            f"{config.tokens_per_batch}: {parameters / 1e6:,.0f} M parameters, and training needs at least "
            f"{needed / 2**30:,.1f} GiB (weights, gradients, Adam, one batch's activations), more than this "
            f"machine's {available / 2**30:,.1f} GiB; make N, d_model, d_ff or tokens_per_batch smaller"
        )


def get_preset(name: str) -> Config:
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; choose one of {sorted(PRESETS)}")
    return PRESETS[name]


def fast_mode() -> bool:
    """True when ``TC_FAST=1``: notebooks and examples use tiny sizes and few steps (CI sets it)."""
    return os.environ.get("TC_FAST", "") not in ("", "0")

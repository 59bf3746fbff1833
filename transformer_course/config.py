"""One configuration dataclass for the model and its training; presets are instances of it.

The defaults are the paper's base model (Table 3): N=6, d_model=512, d_ff=2048, h=8, P_drop=0.1,
ε_ls=0.1, warmup 4000 steps.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, fields, replace

__all__ = ["Config", "PRESETS", "get_preset", "fast_mode"]


@dataclass(frozen=True)
class Config:
    name: str = "custom"
    # model (§3, Table 3)
    N: int = 6  # layers in the encoder and in the decoder
    d_model: int = 512
    d_ff: int = 2048
    h: int = 8  # attention heads
    dropout: float = 0.1  # P_drop: on every sub-layer output and on embeddings + positions (§5.4)
    attention_dropout: float = 0.0  # on attention weights: not in the paper (nn.Transformer uses P_drop)
    ffn_dropout: float = 0.0  # on the FFN's hidden layer: not in the paper (nn.Transformer uses P_drop)
    norm_first: bool = False  # False: post-LN as in the paper; True: pre-LN
    positional: str = "sinusoidal"  # or "learned"
    max_len: int = 512  # longest sequence the positional table holds
    tie_embeddings: str = "decoder"  # "none", "decoder" (target embedding = output layer) or "all" (§3.4)
    # data
    task: str = "multi30k"  # "multi30k", "copy" or "reverse"
    min_freq: int = 2  # a word seen fewer times in train becomes <unk>
    shared_vocab: bool = False  # one vocabulary for both languages (needed for tie_embeddings="all")
    # training (§5.3, §5.4)
    tokens_per_batch: int = 4000  # target tokens per batch
    label_smoothing: float = 0.1
    warmup: int = 4000
    lr_factor: float = 1.0  # lr = lr_factor · d_model^-0.5 · min(step^-0.5, step · warmup^-1.5)
    epochs: int = 10
    accumulate: int = 1  # gradient accumulation steps
    clip_norm: float | None = None
    seed: int = 0
    # decoding (§6.1)
    beam_size: int = 4
    length_penalty: float = 0.6

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, values: dict) -> Config:
        known = {f.name for f in fields(cls)}
        unknown = set(values) - known
        if unknown:
            raise ValueError(f"unknown config fields {sorted(unknown)}; known fields: {sorted(known)}")
        return cls(**values)

    def replace(self, **changes) -> Config:
        return replace(self, **changes)


PRESETS: dict[str, Config] = {
    # A copy task a 2-core CPU learns in seconds (notebooks 08–10).
    "toy-copy": Config(
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
    ),
    "toy-reverse": Config(
        name="toy-reverse",
        task="reverse",
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
    ),
    # Sized for Multi30k on 2 CPU cores (~9M parameters).
    "multi30k-cpu": Config(
        name="multi30k-cpu",
        N=3,
        d_model=256,
        d_ff=1024,
        h=8,
        dropout=0.1,
        tokens_per_batch=4000,
        warmup=150,
        lr_factor=0.2,
        epochs=20,
    ),
    # The paper's base model (Table 3), for a GPU.
    "multi30k-base": Config(
        name="multi30k-base",
        N=6,
        d_model=512,
        d_ff=2048,
        h=8,
        dropout=0.1,
        tokens_per_batch=8000,
        warmup=4000,
        lr_factor=1.0,
        epochs=20,
    ),
}


def get_preset(name: str) -> Config:
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; choose one of {sorted(PRESETS)}")
    return PRESETS[name]


def fast_mode() -> bool:
    """True when ``TC_FAST=1``: notebooks and examples use tiny sizes and few steps (CI sets it)."""
    return os.environ.get("TC_FAST", "") not in ("", "0")

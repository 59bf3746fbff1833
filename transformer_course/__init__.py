"""transformer_course: the tested package behind the notebooks of the course.

"Attention Is All You Need" (Vaswani et al., 2017), built step by step.

The names below are the ones notebooks use, each re-exported once from the module that defines it. The
subpackages load on first use: ``from transformer_course import viz`` (or ``tc.viz``) imports the charts,
so ``import transformer_course`` stays free of the chart stack. The tools that publish the course (the HTML
edition, slides, the classroom build, the web export, results) are the package ``course_tools`` beside this one:
it imports this package, never the reverse (docs/architecture.md).
"""

__version__ = "0.2.0"  # the one place the version is written (pyproject.toml reads it; CHANGELOG.md)

from .attention import KVCache, MultiHeadAttention, scaled_dot_product_attention
from .config import PRESETS, Config, fast_mode, get_preset
from .data import (
    BOS,
    EOS,
    PAD,
    SPECIALS,
    UNK,
    Batch,
    PairDataset,
    TokenBatchSampler,
    Vocab,
    collate,
    detokenize,
    download_multi30k,
    load_pairs,
    prepare_multi30k,
    tokenize,
    tokenize_many,
    toy_batches,
    toy_pairs,
)
from .decode import BeamResult, GreedyResult, beam_search, greedy_decode, score_sequences, translate
from .i18n import get_language, set_language
from .layers import (
    Embeddings,
    LayerNorm,
    PositionalEncoding,
    PositionwiseFeedForward,
    ResidualConnection,
    sinusoidal_table,
)
from .masks import padding_mask, subsequent_mask, target_mask
from .model import (
    GPT,
    DecoderCache,
    ModelConfig,
    Transformer,
    build_model,
    count_parameters,
    lm_loss,
    make_lm,
    make_model,
)
from .paths import course_path, course_root
from .train import (
    Checkpoint,
    LabelSmoothingLoss,
    RunOptions,
    average_checkpoints,
    fit,
    learning_rate,
    load_checkpoint,
    make_optimizer,
    make_scheduler,
    noam_lambda,
    noam_rate,
    save_checkpoint,
    train_toy_model,
)

__all__ = [
    "average_checkpoints",
    "Batch",
    "beam_search",
    "BeamResult",
    "BOS",
    "build_model",
    "Checkpoint",
    "collate",
    "Config",
    "count_parameters",
    "course_path",
    "course_root",
    "DecoderCache",
    "detokenize",
    "download_multi30k",
    "Embeddings",
    "EOS",
    "fast_mode",
    "fit",
    "get_preset",
    "greedy_decode",
    "GreedyResult",
    "get_language",
    "KVCache",
    "LabelSmoothingLoss",
    "LayerNorm",
    "learning_rate",
    "load_checkpoint",
    "load_pairs",
    "make_lm",
    "make_model",
    "lm_loss",
    "GPT",
    "make_optimizer",
    "make_scheduler",
    "ModelConfig",
    "MultiHeadAttention",
    "noam_lambda",
    "noam_rate",
    "PAD",
    "padding_mask",
    "PairDataset",
    "PositionalEncoding",
    "PositionwiseFeedForward",
    "prepare_multi30k",
    "PRESETS",
    "ResidualConnection",
    "RunOptions",
    "save_checkpoint",
    "scaled_dot_product_attention",
    "set_language",
    "score_sequences",
    "sinusoidal_table",
    "SPECIALS",
    "subsequent_mask",
    "target_mask",
    "TokenBatchSampler",
    "tokenize",
    "tokenize_many",
    "toy_batches",
    "toy_pairs",
    "train_toy_model",
    "Transformer",
    "translate",
    "UNK",
    "Vocab",
]

SUBPACKAGES = ("exercises", "learner", "viz")  # imported when first asked for (PEP 562)


def __getattr__(name: str):
    if name in SUBPACKAGES:
        import importlib

        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'transformer_course' has no attribute {name!r}")

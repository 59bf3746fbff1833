"""Checkpoints: save, load, average, and turn "a path, a Checkpoint or a model" into a model (notebook 11; §6.1).

A checkpoint holds everything needed to translate with a model (weights, config, both vocabularies, the
source and target language) and — when written by the training loop — to resume training exactly
(optimizer, scheduler, random number generator states, position in the epoch).

- :func:`save_checkpoint` / :func:`read_checkpoint` / :func:`load_checkpoint` — files that load with
  ``torch.load(weights_only=True)``, written atomically (:func:`transformer_course.files.atomic_write`).
  A checkpoint is one self-consistent unit, checked by :mod:`transformer_course.integrity`: it is written
  only from finite weights, carries a SHA-256 of each tensor (verified on load), and its config must
  describe its weights before a model is built. A damaged, edited or foreign file raises
  :class:`CheckpointError`, one line naming the file and what is wrong.
- :func:`average_checkpoints` — the paper averages the last 5 (base) or 20 (big) checkpoints (§6.1).
- :func:`resolve_model` — the one place that turns what a user hands to ``translate``, ``evaluate`` or the
  attention views (a path, a :class:`Checkpoint`, or a model with its vocabularies) into a model.

This module needs no training code: decoding, evaluation and the views import it alone.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import nn

from .config import Config
from .data import SubwordTokenizer, Vocab
from .failures import DISK_FULL, HINTS
from .files import atomic_write, claim_file, crash_point, refuse_writing_onto_inputs
from .integrity import (
    CHECKSUMS,
    CheckpointError,
    check_state,
    check_tokenizer,
    check_vocabulary,
    check_vocabulary_size,
    checksums,
    difference,
    first_non_finite,
    load_untrusted,
    stored_tokenizer,
    tensors,
    tokenizer_entries,
    unwrap,
    weights_problem,
)
from .model import Transformer, build_model
from .rng import rng_states

__all__ = [
    "FORMAT",
    "Checkpoint",
    "CheckpointError",
    "Resolved",
    "RunLockedError",
    "average_checkpoints",
    "is_averaged_checkpoint",
    "languages_problem",
    "epoch_checkpoints",
    "epochs_around_best",
    "load_checkpoint",
    "read_checkpoint",
    "resolve_model",
    "save_checkpoint",
    "unwrap",
]

FORMAT = "transformer_course/checkpoint-v2"  # the "format" entry of every checkpoint written now
# v1 files (written before checksums) are still read: their weights are checked finite, not byte for byte.
FORMATS = (FORMAT, "transformer_course/checkpoint-v1")
DEFAULT_SRC_LANG, DEFAULT_TGT_LANG = "de", "en"  # Multi30k; files written before languages were stored


class RunLockedError(CheckpointError):
    """A run folder that another training run is writing to (it holds the lock on ``out/.lock``)."""


@dataclass
class Checkpoint:
    """A loaded checkpoint. ``model`` is in eval mode; ``state`` holds the raw dictionary
    (optimizer, scheduler, RNG states, history …) for resuming."""

    model: Transformer
    config: Config
    src_vocab: Vocab
    tgt_vocab: Vocab
    step: int
    epoch: int
    path: Path
    state: dict = field(repr=False)
    src_lang: str = DEFAULT_SRC_LANG  # spaCy language of the source side ("de" for Multi30k)
    tgt_lang: str = DEFAULT_TGT_LANG
    tokenizer: SubwordTokenizer | None = None  # a subword checkpoint's tokenizer; None: spaCy words


def _write(state: dict, path: str | Path) -> Path:
    """``torch.save`` through :func:`atomic_write` (a reader, or a crash, never sees half a checkpoint),
    only from finite weights, with the checksums of everything in the file."""
    path = Path(path)
    bad = first_non_finite(tensors(state))
    if bad is not None:
        raise CheckpointError(
            f"refusing to write {path}: the tensor '{bad}' holds NaN or infinite values (the training diverged); "
            "the file already there, if any, is left as it was"
        )
    state = {**state, "format": FORMAT}
    state[CHECKSUMS] = checksums(state)
    try:
        with atomic_write(path) as f:
            torch.save(state, f)
            crash_point("checkpoint-write")  # a test hook (files.crash_point): bytes written, not yet renamed
    except (OSError, RuntimeError) as err:  # a full disk: torch's zip writer says "enforce fail at inline_container"
        if isinstance(err, RuntimeError) and "inline_container" not in str(err):
            raise
        if isinstance(err, OSError) and err.errno is not None and err.errno not in DISK_FULL:  # read-only, forbidden …
            hint = HINTS.get(err.errno, "write somewhere else")
            raise OSError(f"could not write {path}: {err.strerror or err}; {hint}") from None
        reason = err.strerror if isinstance(err, OSError) and err.strerror else "the write stopped short"
        limit = file_size_limit()
        if limit is not None:  # torch's writer names no errno: a limit on the size of one file is the likely cause
            raise OSError(
                f"could not write {path}: {reason}; this process may write files of at most {limit:,} bytes (the "
                "shell's `ulimit -f`): raise the limit, or save a smaller model; the file already there, if any, "
                "is left as it was"
            ) from None
        free = shutil.disk_usage(path.parent).free // 2**20
        raise OSError(
            f"could not write {path}: {reason} (a full disk? {free} MiB free in {path.parent}); the file already "
            "there, if any, is left as it was: free some space or write elsewhere"
        ) from None
    return path


def file_size_limit() -> int | None:
    """The largest file this process may write, in bytes (``ulimit -f``), or None when there is no limit."""
    try:
        import resource
    except ImportError:  # Windows
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
    return None if soft == resource.RLIM_INFINITY else soft


def save_checkpoint(
    path: str | Path,
    model: nn.Module,
    config: Config,
    src_vocab: Vocab,
    tgt_vocab: Vocab,
    optimizer: torch.optim.Optimizer | None = None,
    scheduler=None,
    step: int = 0,
    epoch: int = 0,
    batch_in_epoch: int = 0,
    rng: bool = True,
    *,
    src_lang: str = DEFAULT_SRC_LANG,
    tgt_lang: str = DEFAULT_TGT_LANG,
    tokenizer: SubwordTokenizer | None = None,
    **extra,
) -> Path:
    """Write everything needed to translate with the model, and — with optimizer and scheduler — to
    resume training exactly. Only tensors, numbers, strings, lists and dicts are stored, so the file
    loads with ``torch.load(weights_only=True)``; with them a SHA-256 of each tensor. Weights (or optimizer
    state) holding NaN or ±inf are refused with a :class:`CheckpointError`, and the old file is kept."""
    problem = languages_problem(src_lang, tgt_lang)
    if problem is not None:
        raise ValueError(f"cannot write {path}: {problem}")
    state = {
        "format": FORMAT,
        "model": unwrap(model).state_dict(),
        "config": config.to_dict(),
        "src_vocab": src_vocab.to_dict(),
        "tgt_vocab": tgt_vocab.to_dict(),
        "src_lang": str(src_lang),
        "tgt_lang": str(tgt_lang),
        "step": int(step),
        "epoch": int(epoch),
        "batch_in_epoch": int(batch_in_epoch),
        **tokenizer_entries(tokenizer, src_vocab, tgt_vocab),  # a subword run's tokenizer travels with its model
        **extra,
    }
    if optimizer is not None:
        state["optimizer"] = optimizer.state_dict()
    if scheduler is not None:
        state["scheduler"] = scheduler.state_dict()
    if rng:
        state["rng"] = rng_states()
    return _write(state, path)


def read_checkpoint(path: str | Path, map_location="cpu") -> dict:
    """The raw checkpoint dictionary, read with ``weights_only=True`` (no arbitrary code runs) and checked:
    the expected entries, the checksums of a v2 file, finite values. Raises :class:`CheckpointError`."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(
            f"no checkpoint at {path}; train one with: python -m transformer_course train --preset NAME --out DIR"
        )
    return check_state(load_untrusted(path, map_location), path, FORMATS)


def _config_and_vocabularies(state: dict, path: Path) -> tuple[Config, Vocab, Vocab]:
    """The stored config, validated, and both vocabularies, their fingerprints checked."""
    try:
        config = Config.from_dict(state["config"])
        if hasattr(config, "validate"):
            config.validate()
        src_vocab, tgt_vocab = Vocab.from_dict(state["src_vocab"]), Vocab.from_dict(state["tgt_vocab"])
    except (ValueError, TypeError) as err:  # a config or vocabulary entry that was edited or damaged
        raise CheckpointError(f"{path} cannot be used: {' '.join(str(err).split())}") from None
    return config, src_vocab, tgt_vocab


def check_usable(state: dict, path: Path, weights: dict | None = None):
    """Every check :func:`load_checkpoint` makes before it builds a model — the config valid, both vocabularies'
    fingerprints, the subword tokenizer (present when the config says ``tokenizer="bpe"``, matching its
    fingerprint and the vocabularies), the weights' names and shapes against the config — so that resuming
    a run applies exactly the same ones. Returns (config, src_vocab, tgt_vocab, tokenizer or None)."""
    config, src_vocab, tgt_vocab = _config_and_vocabularies(state, path)
    problem = languages_problem(state.get("src_lang", DEFAULT_SRC_LANG), state.get("tgt_lang", DEFAULT_TGT_LANG))
    if problem is not None:
        raise CheckpointError(f"{path} cannot be used: {problem}")
    tokenizer = stored_tokenizer(state, src_vocab, tgt_vocab, path)  # None: spaCy words
    problem = weights_problem(config, len(src_vocab), len(tgt_vocab), state["model"] if weights is None else weights)
    if problem is not None:
        raise CheckpointError(f"{path} cannot be used: {problem}")
    return config, src_vocab, tgt_vocab, tokenizer


def languages_problem(src_lang, tgt_lang) -> str | None:
    """Why (``src_lang``, ``tgt_lang``) is not the language pair of a translation model, or None: each a spaCy
    language code ("de", "en"), and two different ones."""
    for side, code in (("src_lang", src_lang), ("tgt_lang", tgt_lang)):
        if not (isinstance(code, str) and code.isascii() and code.isalpha() and 2 <= len(code) <= 3):
            return f"its {side} is {code!r}, not a language code such as 'de' or 'en'"
    if src_lang == tgt_lang:
        return (
            f"its source and target languages are both {src_lang!r}: a translation model goes from one language to "
            "another (src_lang, tgt_lang)"
        )
    return None


def _checkpoint_from_state(state: dict, weights: dict, path: Path, device="cpu") -> Checkpoint:
    """Build the model a state describes, load ``weights`` into it, eval mode. The config is checked against
    the weights first (on the meta device), so a config that claims a huge model allocates nothing."""
    config, src_vocab, tgt_vocab, tokenizer = check_usable(state, path, weights)
    model = build_model(config, len(src_vocab), len(tgt_vocab))
    model.load_state_dict(weights)
    model.to(device).eval()
    languages = [str(state.get(k, d)) for k, d in (("src_lang", DEFAULT_SRC_LANG), ("tgt_lang", DEFAULT_TGT_LANG))]
    return Checkpoint(
        model, config, src_vocab, tgt_vocab, state["step"], state["epoch"], path, state, *languages, tokenizer
    )


def load_checkpoint(path: str | Path, map_location="cpu") -> Checkpoint:
    """Load a checkpoint written by :func:`save_checkpoint`; the model comes back in eval mode."""
    state = read_checkpoint(path, map_location)
    return _checkpoint_from_state(state, state["model"], Path(path), map_location)


def average_checkpoints(paths: list[str | Path], out: str | Path | None = None) -> Checkpoint:
    """Average the parameters of several checkpoints of one run (the paper averages the last 5 or 20,
    §6.1). Returns the averaged checkpoint (model in eval mode) and writes it to ``out`` if given.
    Checkpoints whose configs, vocabularies or languages differ are refused."""
    if not paths:
        raise ValueError("average_checkpoints needs at least one checkpoint path")
    if out is not None:
        refuse_writing_onto_inputs(out, paths)  # before reading: `--out RUN/epoch-002.pt` would destroy an input
        claim_file(out, "average", is_averaged_checkpoint)  # nor a run's last.pt, best.pt or any file not its own
    states = [read_checkpoint(p) for p in paths]
    for p, s in zip(paths, states):
        _config_and_vocabularies(s, Path(p))
        s.setdefault("src_lang", DEFAULT_SRC_LANG)  # files written before languages were stored
        s.setdefault("tgt_lang", DEFAULT_TGT_LANG)
    first = states[0]
    for p, s in zip(paths[1:], states[1:]):
        how = difference(first, s)
        if how is not None:
            raise CheckpointError(
                f"{p} comes from a different model than {paths[0]}: {how}; average checkpoints of one run only"
            )
    averaged = {}
    for key, value in first["model"].items():
        if value.is_floating_point():
            averaged[key] = sum(s["model"][key].double() for s in states).div(len(states)).to(value.dtype)
        else:  # integer buffers are not averaged
            averaged[key] = value
    state = {k: v for k, v in states[-1].items() if k not in ("optimizer", "scheduler", "rng", CHECKSUMS)}
    state["model"] = averaged
    state["averaged_from"] = [str(p) for p in paths]
    checkpoint = _checkpoint_from_state(state, averaged, Path(out) if out else Path(paths[-1]))
    if out is not None:
        _write(state, out)
    return checkpoint


def epoch_checkpoints(out_dir: str | Path) -> list[Path]:
    """The per-epoch checkpoints of a run, oldest first. A name that leads to no file (a broken symbolic link,
    or one that loops) is refused in one line."""
    paths = sorted(Path(out_dir).glob("epoch-*.pt"))
    for path in paths:
        if not path.is_file():
            raise CheckpointError(
                f"{path} is not a file (a symbolic link that leads nowhere or to itself?); remove it or put the "
                "epoch's checkpoint there"
            )
    return paths


def epochs_around_best(history: list[dict], paths: list[Path], k: int) -> tuple[int, list[Path]]:
    """The epoch with the lowest validation loss in a run's ``history`` and, of its epoch files ``paths``
    (epoch-NNN.pt), those of epochs best − ⌊k/2⌋ … best − ⌊k/2⌋ + k − 1 that exist: ``k`` epochs centred on
    the best one, fewer at the ends of the run. The choice reads validation losses only, never test."""
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise ValueError(f"around the best epoch: k must be a positive number of epochs, got {k!r}")
    rows = [r for r in history if isinstance(r, dict) and isinstance(r.get("val_loss"), (int, float))]
    if not rows:
        raise ValueError("the run's history holds no validation loss: no epoch can be called the best")
    best = int(min(rows, key=lambda r: r["val_loss"])["epoch"])  # the first of equal losses
    first = best - k // 2
    by_epoch = {int(p.stem.split("-")[-1]): p for p in paths}
    chosen = [by_epoch[e] for e in range(first, first + k) if e in by_epoch]
    if not chosen:
        raise ValueError(
            f"the best epoch is {best}, and the run holds none of the epoch files {first} … {first + k - 1}"
            f" (it holds {', '.join(p.name for p in paths) or 'none'}); train with keep_epochs"
        )
    return best, chosen


def is_averaged_checkpoint(path: str | Path) -> bool:
    """Whether ``path`` is a checkpoint that :func:`average_checkpoints` wrote (it names what it averaged)."""
    try:
        return "averaged_from" in read_checkpoint(path)
    except (CheckpointError, OSError, ValueError):
        return False


@dataclass(frozen=True)
class Resolved:
    """A model ready to translate, with its vocabularies and languages. Unpacks like a tuple:
    ``model, src_vocab, tgt_vocab, src_lang, tgt_lang = resolve_model(...)``."""

    model: nn.Module
    src_vocab: Vocab
    tgt_vocab: Vocab
    src_lang: str = DEFAULT_SRC_LANG
    tgt_lang: str = DEFAULT_TGT_LANG
    tokenizer: SubwordTokenizer | None = None  # not unpacked: None means spaCy words

    def __iter__(self):
        return iter((self.model, self.src_vocab, self.tgt_vocab, self.src_lang, self.tgt_lang))


def resolve_model(model_or_checkpoint, src_vocab=None, tgt_vocab=None, tokenizer=None) -> Resolved:
    """A checkpoint path, a loaded :class:`Checkpoint`, or a model with both vocabularies → :class:`Resolved`.

    A checkpoint brings its own vocabularies and languages; ``src_vocab`` / ``tgt_vocab`` given next to
    it must be the same ones (same fingerprint), or :class:`~transformer_course.data.VocabMismatchError`
    is raised; so must a ``tokenizer`` (a subword checkpoint carries its own). A bare model has no languages
    stored: it gets Multi30k's (de → en), and spaCy words unless a ``tokenizer`` is given.
    """
    if isinstance(model_or_checkpoint, (str, os.PathLike)):
        model_or_checkpoint = load_checkpoint(model_or_checkpoint)
    if isinstance(model_or_checkpoint, Checkpoint):
        checkpoint = model_or_checkpoint
        return Resolved(
            checkpoint.model,
            check_vocabulary(src_vocab, checkpoint.src_vocab, "src", str(checkpoint.path)),
            check_vocabulary(tgt_vocab, checkpoint.tgt_vocab, "tgt", str(checkpoint.path)),
            checkpoint.src_lang,
            checkpoint.tgt_lang,
            check_tokenizer(tokenizer, checkpoint.tokenizer, str(checkpoint.path)),
        )
    if isinstance(model_or_checkpoint, nn.Module):
        if src_vocab is None or tgt_vocab is None:
            raise ValueError(
                "got a model without vocabularies; pass src_vocab= and tgt_vocab=, "
                "or pass the checkpoint (path or load_checkpoint(...)) that stores them"
            )
        check_vocabulary_size(src_vocab, model_or_checkpoint, "src")
        check_vocabulary_size(tgt_vocab, model_or_checkpoint, "tgt")
        tokenizer_entries(tokenizer, src_vocab, tgt_vocab)  # a tokenizer must match both vocabularies
        return Resolved(model_or_checkpoint, src_vocab, tgt_vocab, tokenizer=tokenizer)
    raise TypeError(f"expected a checkpoint path, a Checkpoint or a model, got {type(model_or_checkpoint).__name__}")

"""Checkpoints: save, load, average, and turn "a path, a Checkpoint or a model" into a model (notebook 11; §6.1).

A checkpoint holds everything needed to translate with a model (weights, config, both vocabularies, the
source and target language) and — when written by the training loop — to resume training exactly
(optimizer, scheduler, random number generator states, position in the epoch).

- :func:`save_checkpoint` / :func:`read_checkpoint` / :func:`load_checkpoint` — files that load with
  ``torch.load(weights_only=True)``, written atomically (:func:`transformer_course.files.atomic_write`).
- :func:`average_checkpoints` — the paper averages the last 5 (base) or 20 (big) checkpoints (§6.1).
- :func:`resolve_model` — the one place that turns what a user hands to ``translate``, ``evaluate`` or the
  attention views (a path, a :class:`Checkpoint`, or a model with its vocabularies) into a model.

This module needs no training code: decoding, evaluation and the views import it alone.
"""

from __future__ import annotations

import os
import pickle
import random
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import nn

from .config import Config
from .data import Vocab
from .files import atomic_write
from .model import Transformer, build_model

__all__ = [
    "FORMAT",
    "Checkpoint",
    "CheckpointError",
    "Resolved",
    "average_checkpoints",
    "epoch_checkpoints",
    "load_checkpoint",
    "read_checkpoint",
    "resolve_model",
    "rng_states",
    "save_checkpoint",
    "set_rng_states",
    "unwrap",
]

FORMAT = "transformer_course/checkpoint-v1"  # the "format" entry of every checkpoint file
DEFAULT_SRC_LANG, DEFAULT_TGT_LANG = "de", "en"  # Multi30k; files written before languages were stored


class CheckpointError(ValueError):
    """A checkpoint file that cannot be used (unsafe, damaged or from another kind of run)."""


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


def unwrap(model: nn.Module) -> nn.Module:
    """The plain model inside a DDP and/or ``torch.compile`` wrapper."""
    model = getattr(model, "module", model)  # DistributedDataParallel
    return getattr(model, "_orig_mod", model)  # torch.compile


def rng_states() -> dict:
    """The random number generators a training step uses: torch (CPU and CUDA) and Python's ``random``."""
    version, internal, gauss = random.getstate()
    states = {"torch": torch.get_rng_state(), "python": [version, list(internal), gauss]}
    if torch.cuda.is_available():
        states["cuda"] = torch.cuda.get_rng_state_all()
    return states


def set_rng_states(states: dict) -> None:
    """Put back the generator states :func:`rng_states` returned (resume continues the same random stream)."""
    torch.set_rng_state(states["torch"])
    version, internal, gauss = states["python"]
    random.setstate((version, tuple(internal), gauss))
    if "cuda" in states and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(states["cuda"])


def _write(state: dict, path: str | Path) -> Path:
    """``torch.save`` through :func:`atomic_write`: a reader, or a crash, never sees half a checkpoint."""
    with atomic_write(path) as f:
        torch.save(state, f)
    return Path(path)


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
    **extra,
) -> Path:
    """Write everything needed to translate with the model, and — with optimizer and scheduler — to
    resume training exactly. Only tensors, numbers, strings, lists and dicts are stored, so the file
    loads with ``torch.load(weights_only=True)``."""
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
    """The raw checkpoint dictionary, read with ``weights_only=True`` (no arbitrary code runs)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(
            f"no checkpoint at {path}; train one with: python -m transformer_course train --preset NAME --out DIR"
        )
    try:
        state = torch.load(path, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as err:
        lines = str(err).splitlines()
        reason = next((line.strip() for line in lines if "Unsupported global" in line), lines[0])
        raise CheckpointError(
            f"refusing to load {path}: it holds Python objects other than tensors, numbers, strings, lists "
            f"and dicts, and loading those could run arbitrary code (torch.load(weights_only=True) said: "
            f"{reason}). Only use checkpoints written by transformer_course.save_checkpoint."
        ) from None
    except (RuntimeError, EOFError) as err:
        raise CheckpointError(f"{path} is not a readable checkpoint ({str(err).splitlines()[0]})") from None
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        raise CheckpointError(
            f"{path} is not a transformer_course checkpoint (no 'format' entry); write it with save_checkpoint"
        )
    return state


def _checkpoint_from_state(state: dict, weights: dict, path: Path, device="cpu") -> Checkpoint:
    """Build the model a state describes, load ``weights`` into it, eval mode."""
    config = Config.from_dict(state["config"])
    src_vocab, tgt_vocab = Vocab.from_dict(state["src_vocab"]), Vocab.from_dict(state["tgt_vocab"])
    model = build_model(config, len(src_vocab), len(tgt_vocab))
    model.load_state_dict(weights)
    model.to(device).eval()
    return Checkpoint(
        model,
        config,
        src_vocab,
        tgt_vocab,
        state["step"],
        state["epoch"],
        path,
        state,
        state.get("src_lang", DEFAULT_SRC_LANG),  # files written before languages were stored: Multi30k de→en
        state.get("tgt_lang", DEFAULT_TGT_LANG),
    )


def load_checkpoint(path: str | Path, map_location="cpu") -> Checkpoint:
    """Load a checkpoint written by :func:`save_checkpoint`; the model comes back in eval mode."""
    state = read_checkpoint(path, map_location)
    return _checkpoint_from_state(state, state["model"], Path(path), map_location)


def average_checkpoints(paths: list[str | Path], out: str | Path | None = None) -> Checkpoint:
    """Average the parameters of several checkpoints of one run (the paper averages the last 5 or 20,
    §6.1). Returns the averaged checkpoint (model in eval mode) and writes it to ``out`` if given."""
    if not paths:
        raise ValueError("average_checkpoints needs at least one checkpoint path")
    states = [read_checkpoint(p) for p in paths]
    first = states[0]
    for p, s in zip(paths[1:], states[1:]):
        if s["config"] != first["config"] or s["model"].keys() != first["model"].keys():
            raise CheckpointError(
                f"{p} comes from a different model than {paths[0]}; average checkpoints of one run only"
            )
    averaged = {}
    for key, value in first["model"].items():
        if value.is_floating_point():
            averaged[key] = sum(s["model"][key].double() for s in states).div(len(states)).to(value.dtype)
        else:  # integer buffers are not averaged
            averaged[key] = value
    state = {k: v for k, v in states[-1].items() if k not in ("optimizer", "scheduler", "rng")}
    state["model"] = averaged
    state["averaged_from"] = [str(p) for p in paths]
    if out is not None:
        _write(state, out)
    return _checkpoint_from_state(state, averaged, Path(out) if out else Path(paths[-1]))


def epoch_checkpoints(out_dir: str | Path) -> list[Path]:
    """The per-epoch checkpoints of a run, oldest first."""
    return sorted(Path(out_dir).glob("epoch-*.pt"))


@dataclass(frozen=True)
class Resolved:
    """A model ready to translate, with its vocabularies and languages. Unpacks like a tuple:
    ``model, src_vocab, tgt_vocab, src_lang, tgt_lang = resolve_model(...)``."""

    model: nn.Module
    src_vocab: Vocab
    tgt_vocab: Vocab
    src_lang: str = DEFAULT_SRC_LANG
    tgt_lang: str = DEFAULT_TGT_LANG

    def __iter__(self):
        return iter((self.model, self.src_vocab, self.tgt_vocab, self.src_lang, self.tgt_lang))


def resolve_model(model_or_checkpoint, src_vocab: Vocab | None = None, tgt_vocab: Vocab | None = None) -> Resolved:
    """A checkpoint path, a loaded :class:`Checkpoint`, or a model with both vocabularies → :class:`Resolved`.

    A checkpoint brings its own vocabularies and languages; ``src_vocab`` / ``tgt_vocab`` given next to
    it replace its own. A bare model has no languages stored: it gets Multi30k's (de → en).
    """
    if isinstance(model_or_checkpoint, (str, os.PathLike)):
        model_or_checkpoint = load_checkpoint(model_or_checkpoint)
    if isinstance(model_or_checkpoint, Checkpoint):
        checkpoint = model_or_checkpoint
        return Resolved(
            checkpoint.model,
            src_vocab or checkpoint.src_vocab,
            tgt_vocab or checkpoint.tgt_vocab,
            checkpoint.src_lang,
            checkpoint.tgt_lang,
        )
    if isinstance(model_or_checkpoint, nn.Module):
        if src_vocab is None or tgt_vocab is None:
            raise ValueError(
                "got a model without vocabularies; pass src_vocab= and tgt_vocab=, "
                "or pass the checkpoint (path or load_checkpoint(...)) that stores them"
            )
        return Resolved(model_or_checkpoint, src_vocab, tgt_vocab)
    raise TypeError(f"expected a checkpoint path, a Checkpoint or a model, got {type(model_or_checkpoint).__name__}")

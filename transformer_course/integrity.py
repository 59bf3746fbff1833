"""Is a checkpoint whole and sound? Safe loading, checksums, finite weights, a config that fits its
weights, checkpoints that agree (notebook 11; used by :mod:`transformer_course.checkpoint`).

A checkpoint is one self-consistent unit: weights, config and vocabularies that describe one model.

- :func:`load_untrusted` — ``torch.load(weights_only=True)``; every way a damaged or hostile file makes it
  fail becomes one :class:`CheckpointError` line naming the file.
- :func:`checksums` — a SHA-256 of every tensor's bytes (with its dtype and shape) and one of everything
  else in the file (config, vocabularies, counters, history); stored in the file and recomputed on load by
  :func:`check_state`, so a flipped byte anywhere is found and named.
- :func:`first_non_finite` — the first floating-point tensor holding NaN or ±inf (cheap: one sum per tensor).
- :func:`weights_problem` — does the config describe the stored weights? Checked on the ``meta`` device
  (shapes only, no memory), so a config that claims N = 10⁶ layers is refused before anything is built.
- :func:`difference` — how two checkpoints that should come from one run differ (averaging refuses them).
"""

from __future__ import annotations

import hashlib
import pickle
from collections.abc import Iterable, Iterator
from pathlib import Path

import torch
from torch import Tensor, nn

from .config import Config
from .data import SubwordTokenizer, Vocab, VocabMismatchError
from .model import build_model

__all__ = [
    "CHECKSUMS",
    "CheckpointError",
    "check_state",
    "checksums",
    "difference",
    "first_non_finite",
    "load_untrusted",
    "tensors",
    "weights_problem",
    "check_vocabulary",
    "check_vocabulary_size",
    "check_tokenizer",
    "stored_tokenizer",
    "tokenizer_entries",
    "unwrap",
]

CHECKSUMS = "checksums"  # the entry of a checkpoint that holds them


class CheckpointError(ValueError):
    """A checkpoint file that cannot be used (unsafe, damaged or from another kind of run)."""


def load_untrusted(path: Path, map_location="cpu") -> object:
    """``torch.load(path, weights_only=True)`` (no code in the file runs), with every failure on a damaged or
    foreign file turned into a :class:`CheckpointError` that names the file."""
    try:
        return torch.load(path, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as err:
        if "weights only load failed" not in str(err).lower():
            raise CheckpointError(f"{path} is not a readable checkpoint (damaged pickle data: {err})") from None
        # Name what was refused, and leave out torch's advice on how to load it anyway.
        lines = [line.strip() for line in str(err).splitlines()]
        reason = next((line for line in lines if "GLOBAL" in line or "Unsupported" in line), "an unsupported object")
        reason = reason.split(". ")[0].rstrip(".")
        raise CheckpointError(
            f"refusing to load {path}: it holds Python objects other than tensors, numbers, strings, lists "
            f"and dicts, and loading those could run arbitrary code ({reason}). "
            "Only use checkpoints written by transformer_course.save_checkpoint."
        ) from None
    except (PermissionError, IsADirectoryError, MemoryError):
        raise  # not the file's content: the message already says what to do
    except Exception as err:  # EOFError, OSError, RuntimeError, KeyError, UnicodeDecodeError … from a bad file
        first = (str(err).splitlines() or [""])[0].split(". ")[0]
        raise CheckpointError(
            f"{path} is not a readable checkpoint: it is empty, truncated or damaged "
            f"({type(err).__name__}{': ' + first if first else ''}); use another copy or train again"
        ) from None


def tensors(tree, prefix: str = "") -> Iterator[tuple[str, Tensor]]:
    """Every tensor in nested dicts and lists, named by its path: ``model/encoder.layers.0.…``."""
    if isinstance(tree, Tensor):
        yield prefix, tree
    elif isinstance(tree, dict):
        for key, value in tree.items():
            if not (prefix == "" and key == CHECKSUMS):
                yield from tensors(value, f"{prefix}/{key}" if prefix else str(key))
    elif isinstance(tree, (list, tuple)):
        for i, value in enumerate(tree):
            yield from tensors(value, f"{prefix}/{i}")


def _tensor_digest(t: Tensor) -> str:
    t = t.detach().to("cpu").contiguous().reshape(-1)  # the bytes in logical order, whatever the device
    digest = hashlib.sha256(f"{t.dtype}{tuple(t.shape)}".encode())
    digest.update(t.view(torch.uint8).numpy())  # (numel · element size,) bytes
    return digest.hexdigest()


def _skeleton(tree):
    """Everything but the tensors, in a canonical form (dict keys sorted, tuples as lists)."""
    if isinstance(tree, Tensor):
        return "<tensor>"
    if isinstance(tree, dict):
        return sorted((repr(k), _skeleton(v)) for k, v in tree.items() if k != CHECKSUMS)
    if isinstance(tree, (list, tuple)):
        return [_skeleton(v) for v in tree]
    return repr(tree)


def _rest_digest(state: dict) -> str:
    return hashlib.sha256(repr(_skeleton(state)).encode()).hexdigest()


def checksums(state: dict) -> dict:
    """``{"tensors": {path: sha256}, "rest": sha256}`` of a checkpoint's contents (its own checksums left out)."""
    return {"tensors": {name: _tensor_digest(t) for name, t in tensors(state)}, "rest": _rest_digest(state)}


def _checksums_problem(state: dict) -> str | None:
    stored = state.get(CHECKSUMS)
    if not (
        isinstance(stored, dict) and isinstance(stored.get("tensors"), dict) and isinstance(stored.get("rest"), str)
    ):
        return "it has no checksums, which every file of its format carries (an incomplete or edited file)"
    found = dict(tensors(state))
    for name in sorted(stored["tensors"].keys() - found.keys()):
        return f"the tensor '{name}' is missing (the file was edited or is damaged)"
    for name, t in found.items():
        if name not in stored["tensors"]:
            return f"the tensor '{name}' has no stored checksum (the file was edited or is damaged)"
        if _tensor_digest(t) != stored["tensors"][name]:
            return f"the bytes of tensor '{name}' do not match its stored SHA-256 (the file is damaged)"
    if _rest_digest(state) != stored["rest"]:
        return "its config, vocabularies or counters do not match their stored SHA-256 (the file was edited or damaged)"
    return None


def first_non_finite(named: Iterable[tuple[str, Tensor]]) -> str | None:
    """The name of the first floating-point tensor holding NaN or ±inf, or None.

    Cheap enough for every training step: one sum per tensor and one device sync. A NaN or ±inf makes a
    tensor's sum NaN or ±inf; only then is each tensor checked element by element (a sum can also overflow
    from large finite values: then no tensor is named)."""
    named = [(name, t.detach()) for name, t in named if t.is_floating_point()]
    if not named:
        return None
    device = named[0][1].device
    sums = torch.stack([t.sum().float().to(device) for _, t in named])  # (n,)
    if bool(torch.isfinite(sums).all()):
        return None
    return next((name for name, t in named if not bool(torch.isfinite(t).all())), None)


def _is_vocab(d) -> bool:
    return isinstance(d, dict) and isinstance(d.get("itos"), list) and all(isinstance(t, str) for t in d["itos"])


def _entries_problem(state, formats: tuple[str, ...]) -> str | None:
    if not isinstance(state, dict):
        return f"it holds a {type(state).__name__}, not a checkpoint dictionary"
    if state.get("format") not in formats:
        return f"it is not a transformer_course checkpoint (format {state.get('format')!r}, expected {formats[0]!r})"
    missing = [k for k in ("model", "config", "src_vocab", "tgt_vocab", "step", "epoch") if k not in state]
    if missing:
        return f"it lacks the entries {missing} (an incomplete or foreign file)"
    model = state["model"]
    if not isinstance(model, dict) or not all(isinstance(k, str) and isinstance(v, Tensor) for k, v in model.items()):
        return "its 'model' entry is not a dictionary of named tensors"
    if not isinstance(state["config"], dict):
        return f"its 'config' entry is a {type(state['config']).__name__}, not a dictionary"
    for key in ("src_vocab", "tgt_vocab"):
        if not _is_vocab(state[key]):
            return f"its '{key}' entry is not a vocabulary (a dictionary with a token list 'itos')"
    for key in ("step", "epoch", "batch_in_epoch"):
        if key in state and (type(state[key]) is not int or state[key] < 0):
            return f"its '{key}' entry is {state[key]!r}, not a count"
    return None


def check_state(state, path: Path, formats: tuple[str, ...]) -> dict:
    """``state`` if it is a whole checkpoint: the entries every checkpoint has, matching checksums (files of
    the current format, ``formats[0]``), finite values; else a :class:`CheckpointError` naming ``path``."""
    problem = _entries_problem(state, formats)
    if problem is None and state["format"] == formats[0]:
        problem = _checksums_problem(state)
    if problem is not None:
        raise CheckpointError(f"{path} cannot be used: {problem}")
    bad = first_non_finite(tensors(state))
    if bad is not None:
        raise CheckpointError(
            f"{path} cannot be used: the tensor '{bad}' holds NaN or infinite values (written by a run that "
            "diverged); use an earlier checkpoint of the run, or train again with a lower learning rate"
        )
    return state


def weights_problem(config: Config, src_vocab: int, tgt_vocab: int, weights: dict[str, Tensor]) -> str | None:
    """What keeps a model of ``config`` from having exactly these weights, or None. Compared on the ``meta``
    device: shapes only, nothing allocated."""
    layers = {k.split(".")[2] for k in weights if k.startswith(("encoder.layers.", "decoder.layers."))}
    if config.N != len(layers):  # first, so that a huge N is refused before a skeleton of N layers is built
        return f"its config says N={config.N} layers but its weights hold {len(layers)}"
    try:
        with torch.device("meta"):  # whatever the config says, nothing is allocated
            expected = {k: tuple(v.shape) for k, v in build_model(config, src_vocab, tgt_vocab).state_dict().items()}
    except ValueError as err:
        return f"its config does not describe a model ({err})"
    for name in sorted(expected.keys() - weights.keys()):
        return f"the weight '{name}' that its config needs is missing"
    for name in sorted(weights.keys() - expected.keys()):
        return f"it holds a weight '{name}' that its config does not have"
    for name, shape in expected.items():
        if tuple(weights[name].shape) != shape:
            return f"the weight '{name}' has shape {tuple(weights[name].shape)}, but its config needs {shape}"
    return None


def difference(a: dict, b: dict) -> str | None:
    """How two checkpoints of what should be one run differ (config, vocabularies, languages, weight
    shapes), or None."""
    changed = sorted(k for k in a["config"].keys() | b["config"].keys() if a["config"].get(k) != b["config"].get(k))
    if changed:
        k = changed[0]
        return f"their configs differ ({k}: {a['config'].get(k)!r} vs {b['config'].get(k)!r})"
    for key, side in (("src_vocab", "source"), ("tgt_vocab", "target")):
        fa, fb = Vocab.from_dict(a[key]).fingerprint(), Vocab.from_dict(b[key]).fingerprint()
        if fa != fb:
            return f"their {side} vocabularies differ (fingerprints {fa} vs {fb})"
    if a.get("run_id") and b.get("run_id") and a["run_id"] != b["run_id"]:  # files older than run ids pass
        return f"they come from different training runs (run ids {a['run_id']} vs {b['run_id']})"
    if a.get("data_fingerprint") and b.get("data_fingerprint") and a["data_fingerprint"] != b["data_fingerprint"]:
        return f"they were trained on different data (fingerprints {a['data_fingerprint']} vs {b['data_fingerprint']})"
    for key in ("tokenizer_fingerprint", "src_lang", "tgt_lang"):  # words (None) vs subwords, or two subword models
        if a.get(key) != b.get(key):
            what = "subword tokenizers" if key == "tokenizer_fingerprint" else "languages"
            return f"their {what} differ ({key}: {a.get(key)!r} vs {b.get(key)!r})"
    if {k: tuple(v.shape) for k, v in a["model"].items()} != {k: tuple(v.shape) for k, v in b["model"].items()}:
        return "their weights have different names or shapes"
    return None


def unwrap(model: nn.Module) -> nn.Module:
    """The plain model inside a DDP and/or ``torch.compile`` wrapper."""
    model = getattr(model, "module", model)  # DistributedDataParallel
    return getattr(model, "_orig_mod", model)  # torch.compile


def check_vocabulary(given: Vocab | None, own: Vocab, side: str, where: str) -> Vocab:
    """``given`` if it is the vocabulary the model was trained with (same fingerprint), else an error."""
    if given is None or given.fingerprint() == own.fingerprint():
        return own if given is None else given
    raise VocabMismatchError(
        f"{side}_vocab ({len(given)} tokens, fingerprint {given.fingerprint()}) is not the {side} vocabulary "
        f"{where} was trained with ({len(own)} tokens, fingerprint {own.fingerprint()}): its ids would mean "
        f"other words. Leave {side}_vocab out to use the checkpoint's own vocabulary"
    )


def check_vocabulary_size(given: Vocab, model: nn.Module, side: str) -> None:
    """A bare model stores no vocabulary, but its embedding size says how many tokens it was trained with."""
    size = getattr(unwrap(model), f"{side}_vocab_size", None)  # Transformer keeps src_vocab_size / tgt_vocab_size
    if isinstance(size, int) and size != len(given):
        raise VocabMismatchError(
            f"{side}_vocab has {len(given)} tokens but the model was built for {size}; "
            "pass the vocabularies the model was trained with"
        )


def tokenizer_entries(tokenizer: SubwordTokenizer | None, src_vocab: Vocab, tgt_vocab: Vocab) -> dict:
    """The checkpoint entries of a subword tokenizer (``{}`` for spaCy words): its JSON (a plain str, safe for
    ``weights_only=True``) and fingerprint. Both vocabularies must be the tokenizer's own (same fingerprint)."""
    if tokenizer is None:
        return {}
    tokenizer.check_vocabularies(src_vocab, tgt_vocab)
    return {"tokenizer": tokenizer.to_json(), "tokenizer_fingerprint": tokenizer.fingerprint()}


def stored_tokenizer(state: dict, src_vocab: Vocab, tgt_vocab: Vocab, path) -> SubwordTokenizer | None:
    """The subword tokenizer a checkpoint carries (None: a word-level checkpoint), checked against its stored
    fingerprint and against both vocabularies; a damaged one is a :class:`CheckpointError`."""
    if state.get("tokenizer") is None:
        if isinstance(state.get("config"), dict) and state["config"].get("tokenizer") == "bpe":
            raise CheckpointError(
                f"{path} cannot be used: its config says tokenizer='bpe' but it carries no subword tokenizer "
                "(the entry was removed or lost); its ids cannot be turned into text — use the file as training wrote it"
            )
        return None
    try:
        tokenizer = SubwordTokenizer.from_json(state["tokenizer"], fingerprint=state.get("tokenizer_fingerprint"))
        tokenizer_entries(tokenizer, src_vocab, tgt_vocab)
    except (ValueError, TypeError) as err:  # VocabMismatchError is a ValueError
        raise CheckpointError(f"{path} cannot be used: its subword tokenizer: {' '.join(str(err).split())}") from None
    return tokenizer


def check_tokenizer(given: SubwordTokenizer | None, own: SubwordTokenizer | None, where: str):
    """``own`` (the checkpoint's tokenizer) unless a different ``given`` one is passed next to it: an error."""
    if given is None or given == own:
        return own
    own_name = f"the subword tokenizer {own.fingerprint()}" if own is not None else "spaCy words"
    raise VocabMismatchError(
        f"the tokenizer given ({given.fingerprint()}) is not the one {where} was trained with ({own_name}): its ids "
        "would mean other pieces. Leave tokenizer out to use the checkpoint's own"
    )

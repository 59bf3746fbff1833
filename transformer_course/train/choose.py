"""The checkpoint a run reports, chosen by validation and recorded: ``python -m transformer_course choose``.

A run leaves several candidates — ``best.pt`` (the raw weights' lowest validation loss), ``best-ema.pt`` (the
EMA's, with Config.ema_decay) and the ``averaged-….pt`` files of ``average`` — and the score a course quotes
must not come from picking among them on test. :func:`choose_checkpoint` scores each on the validation split
(its label-smoothed loss per target token, the number ``fit`` reports, or its BLEU) and writes the winner's
label to ``RUN/chosen.json``; test is evaluated afterwards, on that one checkpoint only.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import torch

from ..checkpoint import load_checkpoint
from ..data import PAD
from ..files import atomic_write_text
from .loss import LabelSmoothingLoss
from .state import data_fingerprint
from .step import validation_loss

__all__ = ["CHOSEN_FILE", "candidates", "checkpoint_or_chosen", "choose_checkpoint", "chosen_label"]

CHOSEN_FILE = "chosen.json"  # in a run folder: {"chosen": "best-ema", "by": "val_loss", "scores": {…}}


def candidates(run: str | Path) -> dict[str, Path]:
    """The run's candidate checkpoints by label (the file name without .pt): best, best-ema, averaged-…"""
    run = Path(run)
    paths = [run / "best.pt", run / "best-ema.pt", *sorted(run.glob("averaged-*.pt"))]
    found = {p.stem: p for p in paths if p.is_file()}
    if not found:
        raise ValueError(f"{run} holds none of best.pt, best-ema.pt, averaged-*.pt: train into it first")
    return found


def _validation_data(checkpoint, root: str | Path, limit: int | None):
    """The validation batches the run validated on, rebuilt from the checkpoint's config (the same data only:
    its fingerprint must be the checkpoint's)."""
    from ..data import multi30k_data, toy_data

    config = checkpoint.config
    if config.task in ("copy", "reverse"):
        data = toy_data(config.task, seed=config.seed)
    else:
        data = multi30k_data(config, root, limit=limit, progress=False)
    own = checkpoint.state.get("data_fingerprint")
    if own is not None and own != data_fingerprint(data):
        raise ValueError(
            f"{checkpoint.path} was trained on other data than {root} gives with limit={limit}: pass the --root "
            "and --limit its run was trained with"
        )
    return data


def _scores(paths: dict[str, Path], by: str, root, limit, beam: int, device, alpha) -> dict[str, float]:
    if by == "bleu":
        from ..evaluate import evaluate_checkpoint

        return {
            label: evaluate_checkpoint(p, "val", beam, root, limit, progress=False, length_penalty=alpha).bleu
            for label, p in paths.items()
        }
    scores, data = {}, None
    for label, path in paths.items():
        checkpoint = load_checkpoint(path, map_location=torch.device(device))
        data = data or _validation_data(checkpoint, root, limit)  # one run: the same data for every candidate
        loss_fn = LabelSmoothingLoss(
            checkpoint.config.label_smoothing, PAD, reduction="sum", fused=checkpoint.config.fused_loss
        )  # fit's loss
        scores[label] = validation_loss(checkpoint.model, data.val_batches(), loss_fn, device, autocast=False)
    return scores


def choose_checkpoint(
    run: str | Path,
    by: str = "val_loss",
    root: str | Path = "data",
    limit: int | None = None,
    beam: int = 1,
    device: str = "cpu",
    length_penalty: float | None = None,
) -> dict:
    """Score every candidate of ``run`` on the validation split — ``by="val_loss"`` (lowest wins) or
    ``"bleu"`` (sacreBLEU with ``beam`` and the beam's α ``length_penalty``, None: each checkpoint's own; highest
    wins) — and write ``RUN/chosen.json``: the winner's label (``chosen``), what decided, and every candidate's
    score. Test is never read. Returns that record."""
    if by not in ("val_loss", "bleu"):
        raise ValueError(f"choose by 'val_loss' or 'bleu' (on the validation split), got by={by!r}")
    paths = candidates(run)
    scores = _scores(paths, by, root, limit, beam, device, length_penalty)
    bad = [label for label, score in scores.items() if not math.isfinite(score)]
    if bad:
        raise ValueError(f"the validation {by} of {', '.join(bad)} is not finite: that checkpoint cannot be chosen")
    pick = min if by == "val_loss" else max
    chosen = pick(scores, key=lambda label: (scores[label], label))  # ties: the first label in sorted order
    record = {
        "chosen": chosen,
        "checkpoint": paths[chosen].name,
        "by": by,
        "split": "val",
        **({"beam_size": beam} if by == "bleu" else {}),
        **({"length_penalty": length_penalty} if by == "bleu" and length_penalty is not None else {}),
        "scores": {label: round(score, 6) for label, score in scores.items()},
    }
    atomic_write_text(Path(run) / CHOSEN_FILE, json.dumps(record, indent=1) + "\n")
    return record


def chosen_label(run: str | Path) -> str | None:
    """The label ``choose`` recorded in ``RUN/chosen.json``, or None when the run has none."""
    path = Path(run) / CHOSEN_FILE
    if not path.is_file():
        return None
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as err:
        raise ValueError(
            f"{path} is damaged ({err}); run `python -m transformer_course choose --run {run}` again"
        ) from None
    label = record.get("chosen") if isinstance(record, dict) else None
    if not isinstance(label, str):
        raise ValueError(f"{path} names no chosen checkpoint; run `python -m transformer_course choose` again")
    return label


def checkpoint_or_chosen(path: str | Path) -> Path:
    """``path`` itself when it is a file; for a run folder, the checkpoint ``choose`` recorded in it."""
    path = Path(path)
    if not path.is_dir():
        return path
    label = chosen_label(path)
    if label is None:
        raise ValueError(
            f"{path} is a run folder with no {CHOSEN_FILE}: run `python -m transformer_course choose --run {path}` "
            "first, or give a .pt file"
        )
    chosen = path / f"{label}.pt"
    if not chosen.is_file():
        raise ValueError(f"{path / CHOSEN_FILE} chose {label}, but {chosen} is missing; run `choose` again")
    return chosen

"""The command line's argument checks (:mod:`transformer_course.cli`): each refuses a value before any work starts,
with one line that names the option and says what to give instead."""

from __future__ import annotations

import math
import os

from .config import MAX_BEAM_SIZE, MAX_LENGTH_PENALTY

__all__ = ["check_beam", "check_device", "check_length_penalty_option", "check_positive", "check_train_options"]


def check_positive(args, names: tuple[str, ...]) -> None:
    """Each option in ``names`` that was given must be a positive finite number (``--max-minutes nan`` or
    ``inf`` would switch the limit off without a word)."""
    for name in names:
        value = getattr(args, name)
        if value is not None and not (math.isfinite(value) and value > 0):
            raise ValueError(f"--{name.replace('_', '-')} must be a positive number, got {value}")


def check_beam(beam: int) -> None:
    if not 1 <= beam <= MAX_BEAM_SIZE:
        raise ValueError(
            f"--beam must be at least 1 (1 = greedy) and at most {MAX_BEAM_SIZE}, got {beam}; the paper uses 4"
        )


def check_length_penalty_option(alpha: float | None) -> None:
    if alpha is not None and not 0 <= alpha <= MAX_LENGTH_PENALTY:  # NaN fails too
        raise ValueError(
            f"--length-penalty is the beam's α, from 0 (none) to {MAX_LENGTH_PENALTY}, got {alpha}; the paper uses 0.6"
        )


def check_device(name: str | None) -> None:
    """Refuse a device this machine does not have before anything is written (no empty run folder)."""
    if name is None:
        return
    import torch

    try:
        device = torch.device(name)
    except (RuntimeError, ValueError) as err:
        raise ValueError(f"--device {name!r} is not a device ({err}); use cpu, cuda or cuda:N") from None
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(
                f"--device {name}: CUDA is not available on this machine (torch {torch.__version__}); "
                "pass --device cpu, or leave --device out to use a GPU only when there is one"
            )
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise ValueError(
                f"--device {name}: this machine has {torch.cuda.device_count()} GPU(s), cuda:0 to "
                f"cuda:{torch.cuda.device_count() - 1}"
            )
    elif device.type == "mps" and not torch.backends.mps.is_available():
        raise ValueError(f"--device {name}: Apple's MPS is not available on this machine; pass --device cpu")


def check_train_options(args, config) -> None:
    """Options that do not apply to the preset are refused, not ignored; --threads is bounded by the machine
    (torch would start that many OS threads per pool, and 1000 threads on 2 cores run ten times slower)."""
    if config.task in ("copy", "reverse"):
        given = [f"--{name}" for name in ("limit", "root") if getattr(args, name, None) is not None]
        if given:
            raise ValueError(
                f"{' and '.join(given)} {'apply' if len(given) > 1 else 'applies'} to Multi30k presets only; "
                f"{config.name} trains on made-up "
                f"{config.task} sequences — drop {' and '.join(given)}"
            )
    cores = os.cpu_count() or 1
    if getattr(args, "threads", None) is not None and args.threads > cores:
        raise ValueError(f"--threads {args.threads} is more than this machine's {cores} CPU cores; use 1 to {cores}")

"""How one run of ``fit`` goes: where it writes, how long it runs, on what (notebooks 08 and 11).

The model and its recipe live in :class:`~transformer_course.config.Config` (saved in every checkpoint, the
same on resume); :class:`RunOptions` holds what may change from one run to the next without changing what is
trained: the run folder, the stopping rules, the device, the cadence of logs and saves. nanoGPT keeps the
two apart in the same way (``GPTConfig`` beside ``train.py``'s settings).

    fit(config, data)                                              # train, keep nothing on disk
    fit(config, data, RunOptions("runs/toy", max_minutes=5))       # into a run folder, for 5 minutes
    fit(config, data, RunOptions("runs/toy", max_minutes=10, resume=True))   # go on where it stopped
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import torch

__all__ = ["RunOptions"]


@dataclass(frozen=True)
class RunOptions:
    """The settings of one run of :func:`~transformer_course.train.fit`, each checked when it is made."""

    # where it writes: last.pt, best.pt, epoch-NNN.pt, history.json/.csv, loss.png (None: nothing is written)
    out_dir: str | Path | None = None
    # how long it runs: whichever limit comes first stops it (steps and minutes count over resumes)
    epochs: int | None = None  # None: config.epochs
    max_steps: int | None = None  # optimizer steps
    max_minutes: float | None = None  # of training time (validation and saving not counted)
    budget_minutes: float | None = None  # schedule="budget": the minutes it plans for (None: max_minutes)
    # an existing run folder: resume=True goes on from its last.pt; "adopt" continues a last.pt copied from
    # another run as a new run; overwrite=True removes the files an earlier run wrote there
    resume: bool | str = False
    overwrite: bool = False
    # on what
    device: str | torch.device | None = None  # None: CUDA when there is one, else the CPU
    compile: bool = False  # torch.compile the model (dynamic shapes)
    autocast: bool | None = None  # bfloat16 forward pass; None: on CUDA only (True on a CPU rehearses the GPU path)
    # what it shows and keeps
    save_every: int | None = None  # write last.pt every this many steps too (None: at epoch ends and the stop only)
    log_every: int = 10  # a history row (and a sync point) every this many steps
    keep_epochs: bool = True  # write epoch-NNN.pt after each full epoch (for checkpoint averaging)
    progress: bool = True  # the progress bar and the epoch lines

    def __post_init__(self) -> None:
        for name in ("epochs", "max_steps", "save_every", "log_every"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
                raise ValueError(f"{name} must be a positive whole number (or None), got {name}={value!r}")
        for name in ("max_minutes", "budget_minutes"):
            value = getattr(self, name)
            number = isinstance(value, (int, float)) and not isinstance(value, bool)
            if value is not None and (not number or not math.isfinite(value) or value < 0):
                raise ValueError(f"{name} must be a finite number of minutes >= 0 (or None), got {name}={value!r}")
        if self.resume not in (False, True, "adopt"):
            raise ValueError(f"resume must be False, True or 'adopt', got resume={self.resume!r}")
        if self.resume and self.out_dir is None:
            raise ValueError("resume=True needs the out_dir of the run to resume")
        for name in ("overwrite", "compile", "keep_epochs", "progress"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be True or False, got {name}={getattr(self, name)!r}")
        if self.autocast not in (None, True, False):
            raise ValueError(f"autocast must be None (bfloat16 on CUDA only), True or False, got {self.autocast!r}")

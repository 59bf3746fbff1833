"""The record of a run: history.json / history.csv and the loss-curve PNG (notebooks 08 and 11).

One history row per logged step (training loss, learning rate, tokens per second) and one per epoch end
(validation loss). A training row covers every step since the row before it: the running totals
(:class:`LogWindow`) are saved in ``last.pt``, so the first row after a resume covers the same steps as in
a run that never stopped. The plot is drawn on a ``matplotlib.figure.Figure`` of its own: no pyplot state, no
backend switch, so a notebook's inline plots are left as they were.

The plot takes its words as an argument (:data:`ENGLISH_LABELS` by default, what ``fit`` writes to loss.png):
training never imports the chart stack (:mod:`transformer_course.viz`). The 中文版's words, in the CJK font,
come from :func:`transformer_course.viz.loss_plot_labels` (English with one warning line where no CJK font is
installed): ``history_figure(history, title, labels=viz.loss_plot_labels())``.
"""

from __future__ import annotations

import csv
import io
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..data import PAD, Batch
from ..files import atomic_write_bytes, atomic_write_text

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "ENGLISH_LABELS",
    "HISTORY_COLUMNS",
    "LogWindow",
    "history_figure",
    "history_title",
    "plot_history",
    "write_history",
]

HISTORY_COLUMNS = ["step", "epoch", "loss", "lr", "tokens_per_s", "val_loss", "elapsed_s"]
# The loss plot's words: every key a template, "font" a font family or None (matplotlib's default).
ENGLISH_LABELS = {
    "train": "train (label-smoothed, per token)",
    "validation": "validation (label-smoothed, per token)",
    "x": "optimizer step",
    "y": "loss",
    "parameters": "{name}: {parameters:,} parameters",
    "font": None,
}


@dataclass
class LogWindow:
    """Training-loss and speed totals since the last history row (saved in ``last.pt``)."""

    loss: float = 0.0  # summed label-smoothed loss
    tokens: int = 0  # target tokens the loss is summed over
    all_tokens: int = 0  # source + target tokens processed (for tokens per second)
    start_seconds: float = 0.0  # the run's training time when the window opened

    def add(self, loss_sum: float, batch: Batch) -> None:
        self.add_tokens(batch)
        self.add_loss(loss_sum)

    def add_tokens(self, batch: Batch) -> None:
        """Count a batch's tokens (``fit`` does it on the host, before the batch moves to the device)."""
        self.tokens += int(batch.n_tokens)
        self.all_tokens += int(batch.n_tokens) + int((batch.src != PAD).sum())

    def add_loss(self, loss_sum: float) -> None:
        """Add one micro-batch's summed loss (``fit`` reads them at the next check, one sync for all)."""
        self.loss += loss_sum

    def row(self, step: int, epoch: int, lr: float, train_seconds: float) -> dict:
        """One history row: the loss per target token over the window, the rate, the speed."""
        return {
            "step": step,
            "epoch": epoch,
            "loss": self.loss / max(self.tokens, 1),
            "lr": lr,
            "tokens_per_s": self.all_tokens / max(train_seconds - self.start_seconds, 1e-9),
            "val_loss": None,
            "elapsed_s": round(train_seconds, 2),
        }

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, values: dict | None) -> LogWindow:
        return cls(**values) if values else cls()  # files written before the window was saved: an empty one


def write_history(history: list[dict], out_dir: str | Path) -> None:
    """history.json and history.csv (one row per logged step; val_loss on the rows that end an epoch)."""
    out_dir = Path(out_dir)
    atomic_write_text(out_dir / "history.json", json.dumps(history, indent=1))
    table = io.StringIO(newline="")
    writer = csv.DictWriter(table, fieldnames=HISTORY_COLUMNS, extrasaction="ignore")
    writer.writeheader()
    writer.writerows(history)
    atomic_write_text(out_dir / "history.csv", table.getvalue())


def history_title(name: str, parameters: int, labels: dict | None = None) -> str:
    """The loss plot's title: "toy-copy: 12,345 parameters" (``labels``: see :data:`ENGLISH_LABELS`)."""
    return (labels or ENGLISH_LABELS)["parameters"].format(name=name, parameters=parameters)


def history_figure(history: list[dict], title: str = "", labels: dict | None = None) -> Figure:
    """The training loss (per logged step) and the validation loss (per epoch) on a ``Figure`` of its own.

    ``labels`` holds the words (the keys of :data:`ENGLISH_LABELS`, its values by default) and the font they
    are set in; :func:`transformer_course.viz.loss_plot_labels` gives them in the course's language."""
    os.environ.setdefault("MPLCONFIGDIR", "/tmp/matplotlib")  # a writable cache where $HOME is not
    from matplotlib.figure import Figure  # a figure of its own: pyplot's figures and backend stay untouched

    words = {**ENGLISH_LABELS, **(labels or {})}
    font = {"family": [words["font"], "DejaVu Sans"]} if words["font"] else {}  # DejaVu Sans: glyphs it lacks
    train = [(h["step"], h["loss"]) for h in history if h.get("loss") is not None]
    val = [(h["step"], h["val_loss"]) for h in history if h.get("val_loss") is not None]
    fig = Figure(figsize=(7, 4))
    ax = fig.subplots()
    if train:
        ax.plot(*zip(*train), label=words["train"], linewidth=1)
    if val:
        ax.plot(*zip(*val), "o-", label=words["validation"])
    ax.set_xlabel(words["x"], **font)
    ax.set_ylabel(words["y"], **font)
    ax.set_title(title, **font)
    ax.grid(alpha=0.3)
    if train or val:
        ax.legend(prop=font or None)
    fig.tight_layout()
    return fig


def plot_history(history: list[dict], path: str | Path, title: str = "", labels: dict | None = None) -> Path:
    """A PNG of the training loss (per logged step) and the validation loss (per epoch): :func:`history_figure`."""
    png = io.BytesIO()
    history_figure(history, title, labels).savefig(png, format="png", dpi=110)
    return atomic_write_bytes(path, png.getvalue())

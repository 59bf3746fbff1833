"""Where a run stands, and the files that keep it: last.pt, best.pt, epoch-NNN.pt, the history (notebook 11).

``fit`` saves a :class:`RunState` with the model, optimizer, scheduler and random number generators in
``last.pt`` after optimizer steps and at each epoch end; :func:`restore_run` puts all of it back, so a
resumed run continues with the same numbers as a run that never stopped — the weights and the history
(the logging window's totals are saved too). Every file is written only from finite weights
(:func:`~transformer_course.checkpoint.save_checkpoint` refuses others), and ``last.pt`` is read back
only if its checksums match, its values are finite and it was written by the same config on the same data.

A run has an identity: :func:`~transformer_course.train.folder.claimed_run_folder` gives a new run a random id
in ``out/run.json``, and every checkpoint it writes carries that ``run_id`` and the ``data_fingerprint`` of its
vocabularies, tokenizer and languages. Resuming accepts only a ``last.pt`` of the folder's own run (a copy from
another run of the same preset would mix two histories), unless the resume is an explicit adoption
(``resume="adopt"``, ``train --resume --adopt``), which continues the file as the start of a new run; averaging
accepts only epoch files of one run. Resuming applies every check :func:`~transformer_course.checkpoint.load_checkpoint`
applies (:func:`~transformer_course.checkpoint.check_usable`), and the data's tokenizer must be the file's.
"""

from __future__ import annotations

import hashlib
import json
import math
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from torch import nn

from ..checkpoint import CheckpointError, check_usable, read_checkpoint, save_checkpoint, unwrap
from ..config import Config
from ..data import TrainingData
from ..files import atomic_write_text
from ..model import count_parameters
from .ema import EMA
from .history import LogWindow, history_title, plot_history, write_history

__all__ = [
    "RUN_FILE",
    "RunState",
    "check_run_inputs",
    "data_fingerprint",
    "end_epoch",
    "folder_run",
    "new_run_id",
    "restore_run",
    "save_last",
    "write_folder_run",
]

RUN_FILE = "run.json"  # in a run folder: {"run_id": …}, the identity every checkpoint of the run carries


def new_run_id() -> str:
    return uuid.uuid4().hex[:16]


def folder_run(out: str | Path) -> dict:
    """The run folder's ``run.json`` (``{}`` when it has none: a new folder, or one written before run ids)."""
    path = Path(out) / RUN_FILE
    if not path.is_file():
        return {}
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as err:
        raise CheckpointError(f"{path} is damaged ({err}); delete it to let the run folder take last.pt's id") from None
    return info if isinstance(info, dict) and isinstance(info.get("run_id"), str) else {}


def write_folder_run(out: str | Path, run_id: str, **more) -> None:
    atomic_write_text(Path(out) / RUN_FILE, json.dumps({"run_id": run_id, **more}, indent=1) + "\n")


def data_fingerprint(data: TrainingData) -> str:
    """What a run was trained on, as 16 hex digits: both vocabularies, the subword tokenizer (or words), the
    languages. Two runs with the same fingerprint tokenize and number their text the same way."""
    tokenizer = getattr(data, "tokenizer", None)
    parts = [
        data.src_vocab.fingerprint(),
        data.tgt_vocab.fingerprint(),
        tokenizer.fingerprint() if tokenizer is not None else "words",
        str(getattr(data, "src_lang", "de")),
        str(getattr(data, "tgt_lang", "en")),
    ]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def check_run_inputs(config: Config, data: TrainingData) -> None:
    """Refuse, before anything is built, a config that says subwords with data that has no tokenizer."""
    if getattr(config, "tokenizer", "words") == "bpe" and getattr(data, "tokenizer", None) is None:
        raise ValueError(
            f"config {config.name!r} says tokenizer='bpe' but the data has no subword tokenizer; build the data "
            "with multi30k_data(config, …) (it learns one), or use a word-level config"
        )


@dataclass
class RunState:
    """The counters of a run: all of it is saved in ``last.pt`` and restored by ``resume=True``."""

    step: int = 0  # optimizer steps taken
    epoch: int = 0  # full epochs done
    batch_in_epoch: int = 0  # micro-batches of the current epoch done
    train_seconds: float = 0.0  # training time over all resumes (validation and saving not counted)
    history: list[dict] = field(default_factory=list)
    best_val: float = math.inf  # lowest validation loss so far (best.pt holds that model)
    window: LogWindow = field(default_factory=LogWindow)  # training-loss totals since the last history row
    run_id: str = ""  # the run's identity; "" until restore_run sets it, then the run folder's run.json gives it
    best_ema_val: float = math.inf  # with Config.ema_decay: the EMA's lowest validation loss (best-ema.pt)


def _identity(run: RunState, data: TrainingData, out: Path) -> dict:
    """The entries that tie a checkpoint to its run and its data."""
    run_id = run.run_id or folder_run(out).get("run_id", "")
    return {"data_fingerprint": data_fingerprint(data), **({"run_id": run_id} if run_id else {})}


def _languages(data: TrainingData) -> dict:
    """The data's source and target language (Multi30k's de → en unless the data says otherwise) and its
    subword tokenizer (None: spaCy words): every checkpoint carries them, so it translates with no other file."""
    return {
        "src_lang": getattr(data, "src_lang", "de"),
        "tgt_lang": getattr(data, "tgt_lang", "en"),
        "tokenizer": getattr(data, "tokenizer", None),
    }


def restore_run(
    path: Path, config: Config, data: TrainingData, model: nn.Module, optimizer, scheduler, ema: EMA | None = None
):
    """Load ``path`` (a ``last.pt``) into the model, optimizer, scheduler (and ``ema``); returns the
    :class:`RunState` and the saved random number generator states (to set when training continues).
    A damaged, non-finite or foreign file raises :class:`CheckpointError`: the run does not start."""
    # Read onto the CPU: load_state_dict copies to the model's device, and the RNG states must stay CPU tensors.
    state = read_checkpoint(path, map_location="cpu")  # checksums and finite values verified
    missing = [k for k in ("optimizer", "scheduler", "rng") if k not in state]
    if missing:
        raise CheckpointError(
            f"{path} holds no {' / '.join(missing)} state: it is a model-only checkpoint (for translating and "
            "averaging, like best.pt or epoch-NNN.pt), not the last.pt of a run; it cannot be resumed"
        )
    try:
        same_config = Config.from_dict(state["config"]) == config
    except (TypeError, ValueError):
        same_config = False
    if not same_config:
        raise CheckpointError(f"{path} was trained with a different config; resume with the same preset and options")
    for key, vocab in (("src_vocab", data.src_vocab), ("tgt_vocab", data.tgt_vocab)):
        if state[key]["itos"] != vocab.itos:  # the same tokens in the same order: the same fingerprint
            raise CheckpointError(f"the vocabularies in {path} do not match the data; resume on the same data")
    _, _, _, tokenizer = check_usable(state, path)  # every check load_checkpoint makes, the tokenizer's included
    own = getattr(data, "tokenizer", None)
    if (tokenizer and tokenizer.fingerprint()) != (own and own.fingerprint()):
        name = lambda t: f"the subword tokenizer {t.fingerprint()}" if t is not None else "spaCy words"  # noqa: E731
        raise CheckpointError(
            f"{path} was trained with {name(tokenizer)}, the data uses {name(own)}; resume on the same data"
        )
    run_id = _check_run_identity(state, path)
    try:
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        if ema is not None:
            if "ema" not in state:
                raise KeyError("it holds no EMA of the weights")
            ema.load_state_dict(state["ema"])
    except (RuntimeError, ValueError, KeyError) as err:
        raise CheckpointError(f"{path} does not fit this model and optimizer ({str(err).splitlines()[0]})") from None
    run = RunState(
        state["step"],
        state["epoch"],
        state.get("batch_in_epoch", 0),
        state.get("train_seconds", 0.0),
        list(state.get("history", [])),
        state.get("best_val", math.inf),
        LogWindow.from_dict(state.get("log_window")),
        run_id,
        state.get("best_ema_val", math.inf),
    )
    return run, state["rng"]


def _check_run_identity(state: dict, path: Path) -> str:
    """The run id the resumed run continues under: the folder's, which ``path`` must carry too. A folder
    written before run ids takes the file's; an adoption (run.json says ``adopt``) takes the foreign file as
    the start of the folder's new run."""
    folder, own = folder_run(path.parent), state.get("run_id")
    if folder.get("adopt"):
        write_folder_run(path.parent, folder["run_id"], adopted_from=own or "unknown")
        return folder["run_id"]
    if not folder:  # no run.json: a foreign folder unless another file of the run proves last.pt its own
        if own and not _siblings_carry(path, own):
            raise CheckpointError(
                f"{path.parent} has no {RUN_FILE}, and nothing else in it comes from the run of {path.name} "
                f"(run id {own}): the file was copied from elsewhere; train into a new folder, or continue the file "
                "as a new run with --resume --adopt (resume='adopt')"
            )
        run_id = own or new_run_id()  # a file written before run ids takes a new one
        write_folder_run(path.parent, run_id)
        return run_id
    if own and own != folder["run_id"]:
        raise CheckpointError(
            f"{path} belongs to another run (run id {own}) than {path.parent} (run {folder['run_id']}, its "
            f"{RUN_FILE}): it was copied from elsewhere and resuming would mix two runs' histories; train into a "
            "new folder, or continue that file as a new run with --resume --adopt (resume='adopt')"
        )
    return folder["run_id"]


def _siblings_carry(path: Path, run_id: str) -> bool:
    """Whether another checkpoint beside ``path`` (best.pt, an epoch file) carries ``run_id``."""
    for other in [path.parent / "best.pt", *sorted(path.parent.glob("epoch-*.pt"))]:
        if other.is_file() and not other.is_symlink():
            try:
                if read_checkpoint(other).get("run_id") == run_id:
                    return True
            except (CheckpointError, OSError):
                continue
    return False


def save_last(
    path: Path,
    run: RunState,
    model: nn.Module,
    config: Config,
    data: TrainingData,
    optimizer,
    scheduler,
    ema: EMA | None = None,
):
    """``last.pt``: everything ``resume=True`` needs to continue exactly here (the EMA of the weights too)."""
    with_ema = {"ema": ema.state_dict(), "best_ema_val": run.best_ema_val} if ema is not None else {}
    save_checkpoint(
        path,
        model,
        config,
        data.src_vocab,
        data.tgt_vocab,
        optimizer,
        scheduler,
        run.step,
        run.epoch,
        run.batch_in_epoch,
        **_languages(data),
        **_identity(run, data, path.parent),
        train_seconds=run.train_seconds,
        history=run.history,
        best_val=run.best_val,
        log_window=run.window.to_dict(),
        **with_ema,
    )


def end_epoch(
    run: RunState,
    val_loss: float,
    lr: float,
    epoch_done: bool,
    model: nn.Module,
    config: Config,
    data: TrainingData,
    out: Path | None,
    keep_epochs: bool = True,
    ema: nn.Module | None = None,
    ema_val: float | None = None,
) -> None:
    """Record the validation loss in the history; with ``out`` also write best.pt (when the loss is the
    lowest so far), epoch-NNN.pt (when the epoch ended and ``keep_epochs``), the history and the plot.
    With an ``ema`` model (Config.ema_decay) and its validation loss ``ema_val``: ema.pt at every validation and
    best-ema.pt when ``ema_val`` is the EMA's lowest so far."""
    with_ema = {"ema_val_loss": ema_val} if ema is not None else {}  # no new column for a run without EMA
    run.history.append(
        {
            "step": run.step,
            "epoch": run.epoch if epoch_done else run.epoch + 1,  # the epoch this validation belongs to
            "loss": None,
            "lr": lr,
            "tokens_per_s": None,
            "val_loss": val_loss,
            "elapsed_s": round(run.train_seconds, 2),
            **with_ema,
        }
    )
    improved = val_loss < run.best_val
    run.best_val = min(run.best_val, val_loss)
    ema_improved = ema is not None and ema_val < run.best_ema_val
    if ema is not None:
        run.best_ema_val = min(run.best_ema_val, ema_val)
    if out is None:
        return
    names = (["best.pt"] if improved else []) + ([f"epoch-{run.epoch:03d}.pt"] if keep_epochs and epoch_done else [])
    files = [(name, model, val_loss) for name in names]
    if ema is not None:
        files += [("ema.pt", ema, ema_val)] + ([("best-ema.pt", ema, ema_val)] if ema_improved else [])
    for name, weights, loss in files:  # model only (no optimizer, no RNG): for translating and averaging
        save_checkpoint(
            out / name,
            weights,
            config,
            data.src_vocab,
            data.tgt_vocab,
            step=run.step,
            epoch=run.epoch,
            rng=False,
            **_languages(data),
            **_identity(run, data, out),
            val_loss=loss,
        )
    write_history(run.history, out)
    try:
        plot_history(run.history, out / "loss.png", history_title(config.name, count_parameters(unwrap(model))))
    except ImportError:  # matplotlib comes with the [notebooks] extra; the history files are enough
        pass

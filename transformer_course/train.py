"""Training: label smoothing, the Noam schedule, the loop, checkpoints (notebooks 08 and 11; paper §5).

- :class:`LabelSmoothingLoss` — §5.4 "Label Smoothing", the same numbers as
  ``F.cross_entropy(label_smoothing=ε, ignore_index=PAD)``.
- :func:`noam_rate` / :func:`make_scheduler` — §5.3, the learning rate
  ``lrate = d_model^-0.5 · min(step^-0.5, step · warmup^-1.5)`` as a ``LambdaLR``.
- :func:`make_optimizer` — Adam with β1 = 0.9, β2 = 0.98, ε = 1e-9 (§5.3).
- :func:`fit` — the loop: gradient accumulation, clipping, bf16 autocast on CUDA, optional
  ``torch.compile``, a progress bar, a history (JSON and CSV), a loss-curve plot, checkpoints that
  resume exactly, and DDP when started with ``torchrun``.
- :func:`save_checkpoint` / :func:`load_checkpoint` / :func:`average_checkpoints`.
- :func:`train_toy_model` — a copy (or reverse) model trained on CPU in seconds (notebooks 08–10).
"""

from __future__ import annotations

import csv
import itertools
import json
import math
import os
import pickle
import random
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import Tensor, nn

from .config import Config, get_preset
from .data import PAD, SPECIALS, Batch, Vocab, collate
from .model import Transformer, build_model, count_parameters

# ---------------------------------------------------------------------------------------------------
# The loss (§5.4)


class LabelSmoothingLoss(nn.Module):
    """Cross-entropy against a smoothed target: 1 − ε on the right word, ε spread over the vocabulary.

    For each target position with log-probabilities ``log p`` over V words:

        loss = (1 − ε) · (−log p[target]) + ε · mean_v(−log p[v])

    which is exactly what ``F.cross_entropy(logits, target, label_smoothing=ε, ignore_index=PAD)``
    computes. Positions whose target is ``padding_idx`` count for nothing. ``reduction="sum"`` returns
    the total over real tokens (the loop divides by the token count itself); ``"mean"`` the average
    per real token.
    """

    def __init__(self, smoothing: float = 0.1, padding_idx: int = PAD, reduction: str = "mean") -> None:
        super().__init__()
        if not 0.0 <= smoothing < 1.0:
            raise ValueError(f"label smoothing must be in [0, 1), got {smoothing}; the paper uses 0.1")
        if reduction not in ("mean", "sum", "none"):
            raise ValueError(f"reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
        self.smoothing, self.padding_idx, self.reduction = smoothing, padding_idx, reduction

    def forward(self, logits: Tensor, target: Tensor) -> Tensor:
        """logits (..., V), target (...) of word ids → a scalar (or per-position losses for 'none')."""
        if logits.shape[:-1] != target.shape:
            raise ValueError(
                f"logits {tuple(logits.shape)} and target {tuple(target.shape)} do not match: logits must be "
                "target's shape plus one vocabulary dimension"
            )
        log_probs = logits.float().log_softmax(dim=-1)  # (..., V)
        nll = -log_probs.gather(-1, target.unsqueeze(-1)).squeeze(-1)  # (...) −log p[target]
        smooth = -log_probs.mean(dim=-1)  # (...) the uniform part: mean over all V words
        loss = (1.0 - self.smoothing) * nll + self.smoothing * smooth  # (...)
        real = target != self.padding_idx  # (...) True for real tokens
        loss = loss.masked_fill(~real, 0.0)
        if self.reduction == "none":
            return loss
        if self.reduction == "sum":
            return loss.sum()
        return loss.sum() / real.sum().clamp(min=1)


# ---------------------------------------------------------------------------------------------------
# Optimizer and learning-rate schedule (§5.3)


def noam_rate(step: int, d_model: int, warmup: int, factor: float = 1.0) -> float:
    """The paper's learning rate at ``step`` (counted from 1): factor · d_model^-0.5 · min(step^-0.5, step · warmup^-1.5).

    It rises linearly for ``warmup`` steps, peaks at ``factor · (d_model · warmup)^-0.5``, then decays
    as 1/√step.
    """
    if step < 1:
        raise ValueError(f"the Noam schedule counts steps from 1, got step={step}")
    if warmup < 1:
        raise ValueError(f"warmup must be at least 1 step, got warmup={warmup}")
    return factor * d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)


def noam_lambda(d_model: int, warmup: int, factor: float = 1.0) -> Callable[[int], float]:
    """The multiplier for ``LambdaLR``: after ``k`` optimizer steps the rate is ``noam_rate(k + 1)``,
    so the first update uses ``noam_rate(1)`` (the optimizer's base lr must be 1.0)."""
    return lambda k: noam_rate(k + 1, d_model, warmup, factor)


def make_optimizer(model: nn.Module) -> torch.optim.Adam:
    """Adam with β1 = 0.9, β2 = 0.98, ε = 1e-9 and base lr 1.0 (the schedule gives the real rate)."""
    return torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)


def make_scheduler(optimizer: torch.optim.Optimizer, config: Config) -> torch.optim.lr_scheduler.LambdaLR:
    """The Noam schedule of ``config`` (d_model, warmup, lr_factor) as a ``LambdaLR``."""
    return torch.optim.lr_scheduler.LambdaLR(optimizer, noam_lambda(config.d_model, config.warmup, config.lr_factor))


# ---------------------------------------------------------------------------------------------------
# Checkpoints


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
    torch.set_rng_state(states["torch"])
    version, internal, gauss = states["python"]
    random.setstate((version, tuple(internal), gauss))
    if "cuda" in states and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(states["cuda"])


def atomic_save(obj: dict, path: str | Path) -> Path:
    """``torch.save`` to a temporary file in the same folder, then rename: a reader (or a crash) never
    sees a half-written checkpoint."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as f:
            torch.save(obj, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return path


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
    **extra,
) -> Path:
    """Write everything needed to translate with the model, and — with optimizer and scheduler — to
    resume training exactly. Only tensors, numbers, strings, lists and dicts are stored, so the file
    loads with ``torch.load(weights_only=True)``."""
    state = {
        "format": "transformer_course/checkpoint-v1",
        "model": unwrap(model).state_dict(),
        "config": config.to_dict(),
        "src_vocab": src_vocab.to_dict(),
        "tgt_vocab": tgt_vocab.to_dict(),
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
    return atomic_save(state, path)


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
    if not isinstance(state, dict) or state.get("format") != "transformer_course/checkpoint-v1":
        raise CheckpointError(
            f"{path} is not a transformer_course checkpoint (no 'format' entry); write it with save_checkpoint"
        )
    return state


def load_checkpoint(path: str | Path, map_location="cpu") -> Checkpoint:
    """Load a checkpoint written by :func:`save_checkpoint`; the model comes back in eval mode."""
    state = read_checkpoint(path, map_location)
    config = Config.from_dict(state["config"])
    src_vocab, tgt_vocab = Vocab.from_dict(state["src_vocab"]), Vocab.from_dict(state["tgt_vocab"])
    model = build_model(config, len(src_vocab), len(tgt_vocab))
    model.load_state_dict(state["model"])
    model.to(map_location).eval()
    return Checkpoint(model, config, src_vocab, tgt_vocab, state["step"], state["epoch"], Path(path), state)


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
        atomic_save(state, out)
    config = Config.from_dict(state["config"])
    src_vocab, tgt_vocab = Vocab.from_dict(state["src_vocab"]), Vocab.from_dict(state["tgt_vocab"])
    model = build_model(config, len(src_vocab), len(tgt_vocab))
    model.load_state_dict(averaged)
    return Checkpoint(
        model.eval(),
        config,
        src_vocab,
        tgt_vocab,
        state["step"],
        state["epoch"],
        Path(out) if out else Path(paths[-1]),
        state,
    )


def epoch_checkpoints(out_dir: str | Path) -> list[Path]:
    """The per-epoch checkpoints of a run, oldest first."""
    return sorted(Path(out_dir).glob("epoch-*.pt"))


# ---------------------------------------------------------------------------------------------------
# Data for training: what the loop needs from the data module


class TrainingData:
    """Vocabularies plus batches: ``train_batches(epoch, start)`` yields the batches of one epoch from
    batch number ``start`` on (resume mid-epoch), the same batches for the same epoch every time;
    ``val_batches()`` yields the validation batches."""

    def __init__(
        self,
        src_vocab: Vocab,
        tgt_vocab: Vocab,
        train_batches: Callable[[int, int], Iterator[Batch]],
        val_batches: Callable[[], Iterable[Batch]],
        batches_per_epoch: Callable[[int], int] | None = None,
    ):
        self.src_vocab, self.tgt_vocab = src_vocab, tgt_vocab
        self.train_batches, self.val_batches = train_batches, val_batches
        self.batches_per_epoch = batches_per_epoch or (lambda epoch: None)


def toy_vocab(vocab_size: int) -> Vocab:
    """The vocabulary of a toy task: the specials, then the symbols ``"4" … str(vocab_size - 1)``."""
    return Vocab.from_dict({"itos": list(SPECIALS) + [str(i) for i in range(len(SPECIALS), vocab_size)]})


def toy_data(
    task: str = "copy",
    n_train: int = 2000,
    n_val: int = 200,
    vocab_size: int = 14,
    min_len: int = 4,
    max_len: int = 10,
    batch_size: int = 64,
    seed: int = 0,
    rank: int = 0,
    world_size: int = 1,
) -> TrainingData:
    """A toy copy/reverse task as :class:`TrainingData`. Each epoch shuffles the training pairs with a
    generator seeded by (seed, epoch); with ``world_size`` > 1 each rank takes every world_size-th batch."""
    from .data import toy_pairs

    train = toy_pairs(task, n_train, vocab_size, min_len, max_len, seed)
    val = toy_pairs(task, n_val, vocab_size, min_len, max_len, seed + 1)
    n_batches = len(train) // (batch_size * world_size)  # every rank gets the same number of batches

    def train_batches(epoch: int, start: int = 0) -> Iterator[Batch]:
        g = torch.Generator().manual_seed(seed * 1000 + epoch)
        order = torch.randperm(len(train), generator=g).tolist()
        for b in range(start, n_batches):
            first = (b * world_size + rank) * batch_size
            yield collate([train[i] for i in order[first : first + batch_size]])

    def val_batches() -> Iterator[Batch]:
        for first in range(rank * batch_size, len(val), batch_size * world_size):
            yield collate(val[first : first + batch_size])

    vocab = toy_vocab(vocab_size)
    return TrainingData(vocab, vocab, train_batches, val_batches, lambda epoch: n_batches)


def multi30k_data(
    config: Config,
    root: str | Path = "data",
    rank: int = 0,
    world_size: int = 1,
    limit: int | None = None,
    progress: bool = True,
) -> TrainingData:
    """Multi30k de→en as :class:`TrainingData`: the data module's ``prepare_multi30k`` (download, verify,
    tokenize, vocabularies from train only) and its length-bucketed ``TokenBatchSampler`` with
    ``config.tokens_per_batch``, shuffled per (seed, epoch) and shared between DDP ranks."""
    from .data import TokenBatchSampler, prepare_multi30k

    if progress:
        print(f"preparing Multi30k in {root}/ (download, verify, tokenize, vocabularies) …", flush=True)
    m = prepare_multi30k(root, min_freq=config.min_freq, shared_vocab=config.shared_vocab, limit=limit)
    train_sampler = TokenBatchSampler(
        m.train, config.tokens_per_batch, shuffle=True, seed=config.seed, num_replicas=world_size, rank=rank
    )
    val_sampler = TokenBatchSampler(m.val, config.tokens_per_batch, shuffle=False, num_replicas=world_size, rank=rank)
    if progress:
        print(
            f"Multi30k: {len(m.train):,} training pairs, vocabularies de {len(m.src_vocab):,} / "
            f"en {len(m.tgt_vocab):,}, {len(train_sampler)} batches per epoch per process",
            flush=True,
        )

    def train_batches(epoch: int, start: int = 0) -> Iterator[Batch]:
        train_sampler.set_epoch(epoch)
        for indices in itertools.islice(iter(train_sampler), start, None):
            yield collate([m.train[i] for i in indices])

    def val_batches() -> Iterator[Batch]:
        for indices in val_sampler:
            yield collate([m.val[i] for i in indices])

    def batches_per_epoch(epoch: int) -> int:
        train_sampler.set_epoch(epoch)
        return len(train_sampler)

    return TrainingData(m.src_vocab, m.tgt_vocab, train_batches, val_batches, batches_per_epoch)


# ---------------------------------------------------------------------------------------------------
# Distributed training (torchrun)


@dataclass
class Distributed:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @property
    def enabled(self) -> bool:
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def setup_distributed() -> Distributed:
    """Join the process group ``torchrun`` describes in RANK / WORLD_SIZE / LOCAL_RANK (NCCL on GPUs,
    gloo on CPU); a single process without those variables runs alone."""
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    if world_size <= 1:
        return Distributed()
    rank, local_rank = int(os.environ["RANK"]), int(os.environ.get("LOCAL_RANK", "0"))
    if not torch.distributed.is_initialized():
        backend = "nccl" if torch.cuda.is_available() else "gloo"
        torch.distributed.init_process_group(backend)
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
    return Distributed(rank, world_size, local_rank)


def all_reduce_sum(values: list[float], dist: Distributed) -> list[float]:
    if not dist.enabled:
        return values
    t = torch.tensor(values, dtype=torch.float64)
    torch.distributed.all_reduce(t)
    return t.tolist()


# ---------------------------------------------------------------------------------------------------
# The loop


class TrainingDiverged(RuntimeError):
    """The loss became NaN or infinite; the last good checkpoint is left in place."""


@dataclass
class FitResult:
    model: Transformer
    history: list[dict]
    step: int
    epoch: int
    out_dir: Path | None
    train_seconds: float
    stopped_by: str  # "epochs", "max_steps" or "max_minutes"


def loss_on_batch(model: nn.Module, batch: Batch, loss_fn: LabelSmoothingLoss, autocast: bool) -> Tensor:
    """Summed label-smoothed loss of one batch (divide by ``batch.n_tokens`` for the per-token loss)."""
    with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
        hidden = model(batch.src, batch.tgt_in, batch.src_mask, batch.tgt_mask)  # (B, T, d_model)
        logits = unwrap(model).generator(hidden)  # (B, T, tgt_vocab)
    return loss_fn(logits, batch.tgt_out)  # scalar: sum over real target tokens


@torch.no_grad()
def validation_loss(
    model: nn.Module, batches: Iterable[Batch], loss_fn: LabelSmoothingLoss, device, dist: Distributed = Distributed()
) -> float:
    """Label-smoothed loss per target token over the validation batches (summed over all ranks)."""
    was_training = model.training
    model.eval()
    total, tokens = 0.0, 0
    for batch in batches:
        batch = batch.to(device)
        total += loss_on_batch(unwrap(model), batch, loss_fn, device.type == "cuda").item()
        tokens += int(batch.n_tokens)
    model.train(was_training)
    total, tokens = all_reduce_sum([total, float(tokens)], dist)
    return total / max(tokens, 1.0)


def write_history(history: list[dict], out_dir: Path) -> None:
    """history.json and history.csv (one row per logged step; val_loss on the rows that end an epoch)."""
    (out_dir / ".history.json.tmp").write_text(json.dumps(history, indent=1))
    os.replace(out_dir / ".history.json.tmp", out_dir / "history.json")
    columns = ["step", "epoch", "loss", "lr", "tokens_per_s", "val_loss", "elapsed_s"]
    with open(out_dir / "history.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(history)


def plot_history(history: list[dict], path: str | Path, title: str = "") -> Path:
    """A PNG of the training loss (per logged step) and the validation loss (per epoch)."""
    os.environ.setdefault("MPLCONFIGDIR", "/tmp/matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    train = [(h["step"], h["loss"]) for h in history if h.get("loss") is not None]
    val = [(h["step"], h["val_loss"]) for h in history if h.get("val_loss") is not None]
    fig, ax = plt.subplots(figsize=(7, 4))
    if train:
        ax.plot(*zip(*train), label="train (label-smoothed, per token)", linewidth=1)
    if val:
        ax.plot(*zip(*val), "o-", label="validation (label-smoothed, per token)")
    ax.set_xlabel("optimizer step")
    ax.set_ylabel("loss")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return Path(path)


def fit(
    config: Config,
    data: TrainingData,
    out_dir: str | Path | None = None,
    *,
    epochs: int | None = None,
    max_minutes: float | None = None,
    max_steps: int | None = None,
    resume: bool = False,
    device: str | torch.device | None = None,
    compile: bool = False,
    save_every: int | None = None,
    log_every: int = 10,
    keep_epochs: bool = True,
    progress: bool = True,
    dist: Distributed | None = None,
) -> FitResult:
    """Train a model of ``config`` on ``data``.

    Stops after ``epochs`` (default ``config.epochs``), ``max_steps`` optimizer steps or ``max_minutes``
    of training time (counted over resumes), whichever comes first. With ``out_dir`` it writes
    ``last.pt`` (every ``save_every`` steps, each epoch end and at the stop), ``epoch-NNN.pt`` (model only,
    for averaging), ``best.pt`` (lowest validation loss), ``history.json``/``.csv`` and ``loss.png``.
    ``resume=True`` continues from ``out_dir/last.pt`` exactly where it stopped.
    """
    dist = dist or setup_distributed()
    device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    if device.type == "cuda" and dist.enabled:
        device = torch.device("cuda", dist.local_rank)
    epochs = config.epochs if epochs is None else epochs
    out = Path(out_dir) if out_dir is not None else None
    if resume and out is None:
        raise ValueError("resume=True needs the out_dir of the run to resume")
    writer = out is not None and dist.is_main
    if writer:
        out.mkdir(parents=True, exist_ok=True)

    torch.manual_seed(config.seed)
    random.seed(config.seed)
    model = build_model(config, len(data.src_vocab), len(data.tgt_vocab)).to(device)
    optimizer = make_optimizer(model)
    scheduler = make_scheduler(optimizer, config)
    step, epoch, batch_in_epoch, train_seconds, history, best_val = 0, 0, 0, 0.0, [], math.inf
    saved_rng = None
    if resume:
        last = out / "last.pt"
        state = read_checkpoint(last, map_location=device)
        if Config.from_dict(state["config"]) != config:
            raise CheckpointError(
                f"{last} was trained with a different config; resume with the same preset and options"
            )
        if state["src_vocab"] != data.src_vocab.to_dict() or state["tgt_vocab"] != data.tgt_vocab.to_dict():
            raise CheckpointError(f"the vocabularies in {last} do not match the data; resume on the same data")
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        step, epoch, batch_in_epoch = state["step"], state["epoch"], state["batch_in_epoch"]
        train_seconds, history = state.get("train_seconds", 0.0), list(state.get("history", []))
        best_val = state.get("best_val", math.inf)
        saved_rng = state["rng"]
    if compile:
        os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", "/tmp/torchinductor_cache")
        model = torch.compile(model)
    if dist.enabled:
        model = nn.parallel.DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)
    loss_fn = LabelSmoothingLoss(config.label_smoothing, PAD, reduction="sum")
    autocast = device.type == "cuda"
    accumulate = max(1, config.accumulate)

    def save_last(batch_index: int) -> None:
        if writer:
            save_checkpoint(
                out / "last.pt",
                model,
                config,
                data.src_vocab,
                data.tgt_vocab,
                optimizer,
                scheduler,
                step,
                epoch,
                batch_index,
                train_seconds=train_seconds,
                history=history,
                best_val=best_val,
            )

    def time_over() -> bool:
        over = max_minutes is not None and train_seconds >= 60 * max_minutes
        if dist.enabled:  # every rank must stop at the same step: rank 0's clock decides
            flag = torch.tensor([float(over)])
            torch.distributed.broadcast(flag, src=0)
            over = bool(flag.item())
        return over

    stopped_by = "epochs"
    model.train()
    while epoch < epochs:
        batches = data.train_batches(epoch, batch_in_epoch)
        if saved_rng is not None:  # after the sampler has set up this epoch, as in the straight run
            set_rng_states(saved_rng)
            saved_rng = None
        total = data.batches_per_epoch(epoch)
        bar = _progress(batches, total, batch_in_epoch, f"epoch {epoch + 1}/{epochs}", progress and dist.is_main)
        window_loss, window_tokens, window_all_tokens, window_start = 0.0, 0, 0, time.monotonic()
        micro, tick = 0, time.monotonic()
        stop = False
        for batch in bar:
            batch = batch.to(device)
            sync = (micro + 1) % accumulate == 0
            ctx = model.no_sync() if dist.enabled and not sync else _nullcontext()
            with ctx:
                loss_sum = loss_on_batch(model, batch, loss_fn, autocast)
                n_tokens = int(batch.n_tokens)
                (loss_sum / max(n_tokens, 1) / accumulate).backward()
            loss_value = loss_sum.item()
            if not math.isfinite(loss_value):
                raise TrainingDiverged(
                    f"the loss became {loss_value} at step {step + 1} (epoch {epoch + 1}); stopped without saving. "
                    f"The last good checkpoint is {out / 'last.pt' if out else '(none: no out_dir)'}. "
                    f"Lower lr_factor (now {config.lr_factor}), raise warmup (now {config.warmup}) or set clip_norm."
                )
            micro += 1
            batch_in_epoch += 1
            window_loss += loss_value
            window_tokens += n_tokens
            window_all_tokens += n_tokens + int((batch.src != PAD).sum())
            if not sync:
                continue
            _optimizer_step(model, optimizer, scheduler, config.clip_norm)
            step += 1
            now = time.monotonic()
            train_seconds += now - tick
            tick = now
            if step % log_every == 0:
                seconds = max(now - window_start, 1e-9)
                entry = {
                    "step": step,
                    "epoch": epoch + 1,
                    "loss": window_loss / max(window_tokens, 1),
                    "lr": scheduler.get_last_lr()[0],
                    "tokens_per_s": window_all_tokens / seconds,
                    "val_loss": None,
                    "elapsed_s": round(train_seconds, 2),
                }
                history.append(entry)
                if progress and dist.is_main:
                    bar.set_postfix(
                        loss=f"{entry['loss']:.3f}", lr=f"{entry['lr']:.2e}", tok_s=f"{entry['tokens_per_s']:.0f}"
                    )
                window_loss, window_tokens, window_all_tokens, window_start = 0.0, 0, 0, now
            if save_every and step % save_every == 0:
                save_last(batch_in_epoch)
                tick = time.monotonic()
            if max_steps is not None and step >= max_steps:
                stop, stopped_by = True, "max_steps"
            elif time_over():
                stop, stopped_by = True, "max_minutes"
            if stop:
                break
        if micro % accumulate != 0 and not stop:  # the last, shorter accumulation group of the epoch
            _optimizer_step(model, optimizer, scheduler, config.clip_norm)
            step += 1
        if not stop:  # the epoch ended
            epoch, batch_in_epoch = epoch + 1, 0
        val = validation_loss(model, data.val_batches(), loss_fn, device, dist)
        history.append(
            {
                "step": step,
                "epoch": epoch if not stop else epoch + 1,
                "loss": None,
                "lr": scheduler.get_last_lr()[0],
                "tokens_per_s": None,
                "val_loss": val,
                "elapsed_s": round(train_seconds, 2),
            }
        )
        if progress and dist.is_main:
            print(
                f"epoch {epoch if not stop else epoch + 1}: step {step}, validation loss {val:.4f}, "
                f"{train_seconds / 60:.1f} min",
                flush=True,
            )
        if writer:
            if val < best_val:
                best_val = val
                save_checkpoint(
                    out / "best.pt",
                    model,
                    config,
                    data.src_vocab,
                    data.tgt_vocab,
                    step=step,
                    epoch=epoch,
                    rng=False,
                    val_loss=val,
                )
            if keep_epochs and not stop:
                save_checkpoint(
                    out / f"epoch-{epoch:03d}.pt",
                    model,
                    config,
                    data.src_vocab,
                    data.tgt_vocab,
                    step=step,
                    epoch=epoch,
                    rng=False,
                    val_loss=val,
                )
            save_last(batch_in_epoch)
            write_history(history, out)
            try:
                plot_history(
                    history, out / "loss.png", f"{config.name}: {count_parameters(unwrap(model)):,} parameters"
                )
            except ImportError:  # matplotlib comes with the [notebooks] extra; the history files are enough
                pass
        if dist.enabled:
            torch.distributed.barrier()
        if stop:
            break
    return FitResult(unwrap(model).eval(), history, step, epoch, out, train_seconds, stopped_by)


def _optimizer_step(model: nn.Module, optimizer, scheduler, clip_norm: float | None) -> None:
    if clip_norm:
        nn.utils.clip_grad_norm_(model.parameters(), clip_norm)
    optimizer.step()
    scheduler.step()
    optimizer.zero_grad(set_to_none=True)


class _nullcontext:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _progress(batches, total, initial, desc, enabled):
    if not enabled:
        return batches
    import sys

    from tqdm.auto import tqdm

    # In a log file (not a terminal) redraw rarely, so that the log stays readable.
    return tqdm(
        batches,
        total=total,
        initial=initial,
        desc=desc,
        unit="batch",
        dynamic_ncols=True,
        mininterval=0.1 if sys.stderr.isatty() else 30.0,
    )


# ---------------------------------------------------------------------------------------------------
# A toy model for notebooks 08–10


def train_toy_model(
    task: str = "copy",
    steps: int = 400,
    *,
    config: Config | None = None,
    vocab_size: int = 14,
    min_len: int = 4,
    max_len: int = 10,
    batch_size: int = 64,
    seed: int = 0,
    progress: bool = False,
) -> Transformer:
    """A small model that learns to copy (or reverse) sequences of symbols on a CPU in seconds.

    ``config`` defaults to the ``toy-copy`` / ``toy-reverse`` preset. Returns the model in eval mode;
    its vocabulary is ``toy_vocab(vocab_size)`` (symbol ids 4 … vocab_size − 1, the specials first).
    """
    if task not in ("copy", "reverse"):
        raise ValueError(f"task must be 'copy' or 'reverse', got {task!r}")
    config = config or get_preset(f"toy-{task}")
    config = config.replace(seed=seed)
    data = toy_data(
        task,
        n_train=steps * batch_size,
        n_val=batch_size,
        vocab_size=vocab_size,
        min_len=min_len,
        max_len=max_len,
        batch_size=batch_size,
        seed=seed,
    )
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # matrices this small: syncing several threads costs more than the arithmetic
    try:
        result = fit(config, data, None, epochs=1, max_steps=steps, progress=progress, device="cpu", dist=Distributed())
    finally:
        torch.set_num_threads(threads)
    return result.model

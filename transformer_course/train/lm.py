"""Training the decoder-only language model on the captions, its perplexity, and its checkpoint (notebook 12).

:func:`train_lm` is a short loop in nanoGPT's shape: draw a batch of rows, the shifted next-token loss
(:func:`~transformer_course.model.lm_loss`), AdamW, and one function for the learning rate
(:func:`lm_rate`: the course's budget schedule, a linear warmup to the peak, then a linear decay to 0 at the
planned last step). A run is planned in steps; given minutes instead, it measures its step rate over its first
steps and plans the rest as ``fit`` does (:func:`~transformer_course.train.schedule.plan_steps`).

:func:`lm_perplexity` is exp of the mean loss over every predicted id of a held-out split. :func:`save_lm` /
:func:`load_lm` write and read an LM checkpoint: the weights, the run's Config, the tokenizer and the history, in
a file that loads with ``torch.load(weights_only=True)``, with the checksums of the translation checkpoints.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import Tensor, nn

from ..config import Config
from ..data.captions import Captions
from ..data.subword import SubwordTokenizer
from ..files import atomic_write
from ..integrity import CHECKSUMS, CheckpointError, checksums, first_non_finite, load_untrusted, tensors
from ..model import GPT, ModelConfig, lm_loss, make_lm
from .schedule import noam_peak, plan_steps

__all__ = [
    "LM_FORMAT",
    "LMResult",
    "build_lm",
    "load_lm",
    "lm_perplexity",
    "lm_rate",
    "save_lm",
    "train_from_config",
    "train_lm",
]

LM_FORMAT = "transformer_course/lm-checkpoint-v1"  # the "format" entry of a language model's checkpoint


@dataclass
class LMResult:
    """What :func:`train_lm` did: the loss every ``log_every`` steps, the steps and seconds, held-out perplexity."""

    history: list[dict] = field(default_factory=list)  # {"step", "loss", "lr", "elapsed_s"} rows
    steps: int = 0
    seconds: float = 0.0
    tokens: int = 0  # ids predicted in training
    valid_perplexity: float | None = None


def lm_rate(step: int, peak: float, warmup: int, total: int) -> float:
    """The rate of update ``step`` (from 1): a linear rise to ``peak`` over ``warmup`` steps, then a linear fall
    that reaches 0 just after step ``total`` (the budget schedule of train/schedule.py)."""
    if step <= warmup:
        return peak * step / warmup
    return peak * max(0.0, (total + 1 - step) / (total + 1 - warmup))


def make_adamw(model: nn.Module, weight_decay: float) -> torch.optim.AdamW:
    """AdamW with the paper's β and ε; the weight decay on the matrices only (not on biases and norm gains)."""
    matrices = [p for p in model.parameters() if p.dim() >= 2]
    others = [p for p in model.parameters() if p.dim() < 2]
    groups = [{"params": matrices, "weight_decay": weight_decay}, {"params": others, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=0.0, betas=(0.9, 0.98), eps=1e-9)


def _check_budget(steps, minutes) -> None:
    if steps is None and minutes is None:
        raise ValueError("train_lm needs a budget: steps (a whole number >= 1) or minutes (> 0)")
    if steps is not None and (not isinstance(steps, int) or isinstance(steps, bool) or steps < 1):
        raise ValueError(f"steps must be a whole number >= 1, got steps={steps!r}")
    if minutes is not None and (not isinstance(minutes, (int, float)) or not 0 < minutes < math.inf):
        raise ValueError(f"minutes must be a number > 0, got minutes={minutes!r}")


def train_lm(
    model: GPT,
    data: Captions,
    steps: int | None = None,
    minutes: float | None = None,
    lr: float = 2e-3,
    warmup: float = 0.1,
    seed: int = 0,
    batch_size: int = 32,
    context: int = 64,
    weight_decay: float = 0.1,
    log_every: int = 25,
    progress: bool = False,
) -> LMResult:
    """Train ``model`` on ``data.train`` for ``steps`` optimizer steps (or ``minutes`` of training, whichever comes
    first), on random rows of ``context + 1`` ids drawn with ``seed``; the rate rises over ``warmup`` (a fraction)
    of the planned steps to ``lr`` and falls to 0 at the end. Returns the loss history and the validation
    perplexity. The same seed and steps give the same model, however busy the machine."""
    _check_budget(steps, minutes)
    if not 0 < warmup < 1:
        raise ValueError(f"warmup is a fraction of the planned steps in (0, 1), e.g. 0.1, got warmup={warmup!r}")
    device = next(model.parameters()).device
    generator = torch.Generator().manual_seed(seed)  # the batches: one seed, one sequence of rows
    optimizer = make_adamw(model, weight_decay)
    planned = steps  # a time-bounded run plans its steps once it has measured its rate
    result, start, since, step = LMResult(), time.perf_counter(), None, 0
    model.train()
    while planned is None or step < planned:
        step += 1
        if planned is None:  # before the plan: the rise of a 100-step warmup
            rate = lm_rate(step, lr, 100, 10**9)
        else:
            rate = lm_rate(step, lr, max(1, round(warmup * planned)), planned)
        for group in optimizer.param_groups:
            group["lr"] = rate
        rows = data.train_rows(batch_size, context, generator).to(device)  # (B, context + 1)
        loss = lm_loss(model(rows), rows)  # the mean over B · context predictions
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        result.tokens += rows.size(0) * (rows.size(1) - 1)
        elapsed = time.perf_counter() - start
        if minutes is not None:
            if step == 2:
                since = (step, elapsed)  # the first steps warm up allocators: measure the rate after them
            elif planned is None and since is not None and elapsed - since[1] >= min(5.0, 3 * minutes):
                planned = plan_steps(step, elapsed, since, 60 * minutes, steps)  # 5 s, or 5 % of a short budget
            if elapsed >= 60 * minutes:
                planned = step  # the time is up
        if step % log_every == 0 or step == planned:
            value = loss.item()  # a sync point, on log steps only
            if not math.isfinite(value):
                raise ValueError(f"the loss became {value} at step {step}; lower lr (now {lr}) or raise warmup")
            result.history.append({"step": step, "loss": value, "lr": rate, "elapsed_s": round(elapsed, 2)})
            if progress:
                print(f"step {step:>5}{'/' + str(planned) if planned else ''}  loss {value:.3f}  lr {rate:.2e}")
    result.steps, result.seconds = step, time.perf_counter() - start
    result.valid_perplexity = lm_perplexity(model, data.eval_rows("valid", batch_size, context))
    return result


@torch.no_grad()
def lm_perplexity(model: GPT, batches: Iterable[Tensor]) -> float:
    """exp(mean −log P(next id)) over every prediction of ``batches`` (rows (b, L)): each row's L − 1 next ids,
    weighted by their number, so a short last row counts as much per id as a full one."""
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    total, count = 0.0, 0
    for rows in batches:
        rows = rows.to(device)  # (b, L)
        n = rows.size(0) * (rows.size(1) - 1)
        total += lm_loss(model(rows), rows).item() * n
        count += n
    model.train(was_training)
    if count == 0:
        raise ValueError("lm_perplexity got no row with a prediction: pass rows of at least 2 ids")
    return math.exp(total / count)


# ---- the checkpoint ----------------------------------------------------------------------------------------


def build_lm(config: Config, vocab: int) -> GPT:
    """The :class:`GPT` a run's Config describes (its architecture fields), over ``vocab`` ids."""
    arch = ModelConfig.of(config)
    switches = dict(norm=arch.norm, ffn=arch.ffn, n_kv_heads=arch.n_kv_heads)
    extra = dict(attention_dropout=arch.attention_dropout, ffn_dropout=arch.ffn_dropout)
    sizes = dict(N=arch.N, d_model=arch.d_model, d_ff=arch.d_ff, h=arch.h, dropout=arch.dropout)
    model = make_lm(vocab, **sizes, norm_first=arch.norm_first, max_len=arch.max_len, positional=arch.positional,
                    **switches, **extra)  # fmt: skip
    model.config = config
    return model


def save_lm(path: str | Path, model: GPT, config: Config, tokenizer: SubwordTokenizer, history: list[dict]) -> Path:
    """Write an LM checkpoint atomically, only from finite weights, with the checksums of its contents."""
    path = Path(path)
    state = {
        "format": LM_FORMAT,
        "model": model.state_dict(),
        "config": config.to_dict(),
        "tokenizer": tokenizer.to_json(),
        "history": history,
    }
    bad = first_non_finite(tensors(state))
    if bad is not None:
        raise CheckpointError(f"refusing to write {path}: the tensor '{bad}' holds NaN or infinite values")
    state[CHECKSUMS] = checksums(state)
    with atomic_write(path) as f:
        torch.save(state, f)
    return path


def load_lm(path: str | Path, map_location="cpu") -> tuple[GPT, Config, SubwordTokenizer]:
    """(model in eval mode, config, tokenizer) of an LM checkpoint; a translation checkpoint, a missing, damaged
    or foreign file is one line saying so."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} does not exist (or is not a file): give the .pt that `train --preset gpt-cpu` wrote"
        )
    state = load_untrusted(path, map_location)
    kind = state.get("format") if isinstance(state, dict) else None
    if isinstance(kind, str) and kind.startswith("transformer_course/checkpoint-"):
        raise CheckpointError(
            f"{path} is a translation checkpoint (an encoder-decoder); generate needs a language model: "
            "train one with `train --preset gpt-cpu`, or translate with this one"
        )
    if kind != LM_FORMAT:
        raise CheckpointError(f"{path} is not a language model checkpoint of this course (no {LM_FORMAT!r} format)")
    stored = state.get(CHECKSUMS)
    if stored != checksums({k: v for k, v in state.items() if k != CHECKSUMS}):
        raise CheckpointError(f"{path} cannot be used: its contents do not match its checksums (edited or damaged)")
    bad = first_non_finite(tensors(state))
    if bad is not None:
        raise CheckpointError(f"{path} cannot be used: the tensor '{bad}' holds NaN or infinite values")
    try:
        config = Config.from_dict(state["config"])
        tokenizer = SubwordTokenizer.from_json(state["tokenizer"])
        model = build_lm(config, len(tokenizer))
        model.load_state_dict(state["model"])
    except (KeyError, TypeError, ValueError, RuntimeError) as err:
        first = (str(err).splitlines() or [""])[0]
        raise CheckpointError(f"{path} cannot be used: {type(err).__name__}: {first}") from None
    return model.to(map_location).eval(), config, tokenizer


def train_from_config(
    config: Config,
    data: Captions,
    steps: int | None = None,
    minutes: float | None = None,
    progress: bool = False,
    device: str | torch.device = "cpu",
) -> tuple[GPT, LMResult]:
    """A model built from ``config`` (seeded with ``config.seed``) trained with its recipe: rows of
    ``config.context + 1`` ids, ``tokens_per_batch // context`` rows a step, the peak rate of its Noam factor, the
    warmup fraction of its budget schedule; ``steps`` default to ``config.epochs`` passes over the train stream."""
    torch.manual_seed(config.seed)
    model = build_lm(config, data.vocab_size).to(device)
    rows = max(1, config.tokens_per_batch // config.context)
    if steps is None and minutes is None:
        steps = max(1, round(config.epochs * len(data.train) / (rows * config.context)))
    result = train_lm(
        model,
        data,
        steps=steps,
        minutes=minutes,
        lr=noam_peak(config.d_model, config.warmup, config.lr_factor),
        warmup=config.warmup_fraction,
        seed=config.seed,
        batch_size=rows,
        context=config.context,
        progress=progress,
    )
    return model, result

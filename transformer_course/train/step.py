"""One optimizer step's parts: the loss of a batch, accumulation groups, the update (notebook 08; §5.3–5.4).

:func:`~transformer_course.train.loop.fit` is built from these; notebook 08 writes the same step by hand
(forward, loss, backward, optimizer step, schedule step) and checks it against ``fit``.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator

import torch
from torch import Tensor, nn

from ..checkpoint import unwrap
from ..data import Batch
from ..files import crash_point
from .distributed import Distributed, all_reduce_sum
from .loss import LabelSmoothingLoss

__all__ = [
    "TrainingDiverged",
    "accumulation_groups",
    "loss_on_batch",
    "optimizer_step",
    "validation_loss",
]


class TrainingDiverged(RuntimeError):
    """The loss or the weights became NaN or infinite; nothing was written, and the message names the last
    good checkpoint (or says that none exists)."""


def loss_on_batch(model: nn.Module, batch: Batch, loss_fn: LabelSmoothingLoss, autocast: bool = False) -> Tensor:
    """Summed label-smoothed loss of one batch (divide by ``batch.n_tokens`` for the per-token loss).

    ``autocast=True`` runs the forward pass in bfloat16 mixed precision on the batch's device type
    (what ``fit`` does on a GPU); the loss itself is computed in float32.
    """
    with torch.autocast(batch.src.device.type, dtype=torch.bfloat16, enabled=autocast):
        hidden = model(batch.src, batch.tgt_in, batch.src_mask, batch.tgt_mask)  # (B, T, d_model)
        logits = unwrap(model).generator(hidden)  # (B, T, tgt_vocab)
    return loss_fn(logits, batch.tgt_out)  # scalar: sum over real target tokens


@torch.no_grad()
def validation_loss(
    model: nn.Module,
    batches: Iterable[Batch],
    loss_fn: LabelSmoothingLoss,
    device,
    dist: Distributed | None = None,
    autocast: bool | None = None,
) -> float:
    """Label-smoothed loss per target token over the validation batches (summed over all ranks).
    ``autocast`` as in :func:`fit`: None = bfloat16 on CUDA only."""
    device = torch.device(device)
    autocast = device.type == "cuda" if autocast is None else autocast
    was_training = model.training
    model.eval()
    total, tokens = 0.0, 0
    try:
        for batch in batches:
            batch = batch.to(device)
            total += loss_on_batch(unwrap(model), batch, loss_fn, autocast).item()
            tokens += int(batch.n_tokens)
            crash_point("validation")  # a test hook (files.crash_point): killed in the middle of validation
    finally:
        model.train(was_training)
    total, tokens = all_reduce_sum([total, float(tokens)], dist or Distributed())
    return total / max(tokens, 1.0)


def accumulation_groups(batches: Iterable[Batch], accumulate: int) -> Iterator[list[Batch]]:
    """The micro-batches of one epoch in groups of ``accumulate`` (the last group may be shorter):
    each group becomes one optimizer step."""
    batches = iter(batches)
    while group := list(itertools.islice(batches, accumulate)):
        yield group


def optimizer_step(model: nn.Module, optimizer, scheduler, clip_norm: float | None) -> None:
    """Clip the gradient norm (if set), update the weights, advance the schedule, clear the gradients."""
    if clip_norm:
        nn.utils.clip_grad_norm_(model.parameters(), clip_norm)
    optimizer.step()
    scheduler.step()
    optimizer.zero_grad(set_to_none=True)

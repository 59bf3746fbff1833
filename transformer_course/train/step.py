"""One optimizer step's parts: the loss of a batch, accumulation groups, the update (notebook 08; §5.3–5.4).

:func:`~transformer_course.train.loop.fit` is built from these; notebook 08 writes the same step by hand
(forward, loss, backward, optimizer step, schedule step) and checks it against ``fit``.

No step waits on the device. Reading a number back from a GPU (``.item()``, ``bool(t)``, ``float(t)``) makes
the host wait until every queued kernel has run, so ``fit`` keeps what it must check — each micro-batch's
loss and the largest absolute weight after each update — as device scalars in :class:`PendingChecks` and
reads them all at once (one sync) on log steps, before anything is saved and at the end of an epoch, as
nanoGPT reads its loss only on log steps. A NaN is still found at the step that made it.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..checkpoint import unwrap
from ..data import Batch
from ..files import crash_point
from ..layers import check_token_range
from .distributed import Distributed, all_reduce_sum
from .loss import LabelSmoothingLoss

__all__ = [
    "PendingChecks",
    "TrainingDiverged",
    "accumulation_groups",
    "check_batch",
    "prepare_batch",
    "loss_on_batch",
    "rdrop_loss",
    "optimizer_step",
    "validation_loss",
]


class TrainingDiverged(RuntimeError):
    """The loss or the weights became NaN or infinite; nothing was written, and the message names the last
    good checkpoint (or says that none exists)."""


def loss_on_batch(
    model: nn.Module, batch: Batch, loss_fn: LabelSmoothingLoss, autocast: bool = False, rdrop: float = 0.0
) -> Tensor:
    """Summed label-smoothed loss of one batch (divide by ``batch.n_tokens`` for the per-token loss).

    ``autocast=True`` runs the forward pass in bfloat16 mixed precision on the batch's device type
    (what ``fit`` does on a GPU); the loss itself is computed in float32. ``rdrop`` > 0 (``Config.rdrop``, in
    training only): the batch goes through the model twice in one forward (stacked, so each copy draws its own
    dropout masks) and the loss is :func:`rdrop_loss` of the two.
    """
    twice = rdrop > 0
    src, tgt_in, src_mask, tgt_mask = batch.src, batch.tgt_in, batch.src_mask, batch.tgt_mask
    if twice:  # (2B, …): the same sentences twice
        src, tgt_in, src_mask, tgt_mask = (torch.cat([t, t]) for t in (src, tgt_in, src_mask, tgt_mask))
    with torch.autocast(batch.src.device.type, dtype=torch.bfloat16, enabled=autocast):
        hidden = model(src, tgt_in, src_mask, tgt_mask)  # (B, T, d_model), or (2B, T, d_model) with rdrop
        logits = unwrap(model).generator(hidden)  # (B, T, tgt_vocab)
    if twice:
        return rdrop_loss(logits, batch.tgt_out, loss_fn, rdrop)
    return loss_fn(logits, batch.tgt_out)  # scalar: sum over real target tokens


def rdrop_loss(logits: Tensor, target: Tensor, loss_fn: LabelSmoothingLoss, alpha: float) -> Tensor:
    """R-Drop (Liang et al., 2021) from the logits of two passes of one batch, stacked ``(2B, T, V)``: the mean
    of their label-smoothed losses plus ``alpha`` times the symmetric KL divergence of their distributions,

        (L(p1) + L(p2)) / 2 + alpha · (KL(p1 ‖ p2) + KL(p2 ‖ p1)) / 2

    each summed over the real target tokens of ``target`` (B, T), as :func:`loss_on_batch`'s sum is."""
    first, second = logits.float().chunk(2)  # (B, T, V) each
    cross_entropy = (loss_fn(first, target) + loss_fn(second, target)) / 2
    log_p, log_q = F.log_softmax(first, dim=-1), F.log_softmax(second, dim=-1)  # (B, T, V)
    kl = F.kl_div(log_q, log_p, log_target=True, reduction="none") + F.kl_div(
        log_p, log_q, log_target=True, reduction="none"
    )
    real = (target != loss_fn.padding_idx).unsqueeze(-1)  # (B, T, 1)
    return cross_entropy + alpha * (kl * real).sum() / 2


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
    wide = torch.float32 if device.type == "mps" else torch.float64  # MPS has no float64
    total, tokens = torch.zeros((), dtype=wide, device=device), 0  # summed on the device: one sync at the end
    try:
        for batch in batches:
            tokens += int(batch.n_tokens)
            batch = batch.to(device, non_blocking=device.type == "cuda")
            total += loss_on_batch(unwrap(model), batch, loss_fn, autocast).to(wide)  # as a Python float sum
            crash_point("validation")  # a test hook (files.crash_point): killed in the middle of validation
    finally:
        model.train(was_training)
    total, tokens = all_reduce_sum([total.item(), float(tokens)], dist or Distributed())  # sync point
    return total / max(tokens, 1.0)


def check_batch(batch: Batch, model: nn.Module) -> None:
    """The token-id check of :class:`~transformer_course.layers.Embeddings`, once per batch on the host
    tensors (before they move to the device): the same clear error for an id outside the vocabulary, and no
    read-back from the device in the model (``fit`` runs it under ``token_ids_checked()``)."""
    plain = unwrap(model)
    check_token_range(batch.src, plain.src_vocab_size)
    check_token_range(batch.tgt_in, plain.tgt_vocab_size)
    check_token_range(batch.tgt_out, plain.tgt_vocab_size)


def prepare_batch(batch: Batch, model: nn.Module, window, device: torch.device) -> Batch:
    """The host side of a micro-batch: check its token ids (:func:`check_batch`) and count its tokens into
    the logging ``window``, both on the host tensors the data pipeline made, then move it to ``device``
    (asynchronously on a GPU). Nothing here waits for the device."""
    check_batch(batch, model)
    window.add_tokens(batch)
    return batch.to(device, non_blocking=device.type == "cuda")


class PendingChecks:
    """What the steps since the last check must prove finite, kept on the device: each micro-batch's summed
    loss and, after each update, the largest absolute weight (NaN or ±inf when any weight is).
    :meth:`read` brings them all to the host in one transfer (the one sync point)."""

    def __init__(self) -> None:
        self.losses: list[tuple[int, Tensor]] = []  # (the step the micro-batch belongs to, its summed loss)
        self.weights: list[tuple[int, Tensor]] = []  # (the step that updated, max |weight| after it)

    def __len__(self) -> int:
        return len(self.losses) + len(self.weights)

    def add_loss(self, step: int, loss_sum: Tensor) -> None:
        self.losses.append((step, loss_sum.detach().float()))

    def add_weights(self, step: int, model: nn.Module) -> None:
        """The ∞-norm of all weights (one fused pass, no host sync): finite exactly when every weight is
        (a sum could overflow to inf from large finite values; a maximum cannot)."""
        weights = [p.detach() for p in unwrap(model).parameters() if p.is_floating_point()]
        if hasattr(nn.utils, "get_total_norm"):  # torch >= 2.6: fused over all tensors
            largest = nn.utils.get_total_norm(weights, float("inf"))
        else:
            largest = torch.stack([w.abs().amax() for w in weights]).amax()
        self.weights.append((step, largest.float()))

    def read(self) -> tuple[list[tuple[int, float]], list[tuple[int, float]]]:
        """The losses and weight maxima as Python floats, and empty the lists. One sync point."""
        pending, n_losses = self.losses + self.weights, len(self.losses)
        self.losses, self.weights = [], []
        if not pending:
            return [], []
        device = pending[0][1].device
        values = torch.stack([value.to(device) for _, value in pending]).tolist()  # sync point
        read = [(step, value) for (step, _), value in zip(pending, values)]
        return read[:n_losses], read[n_losses:]


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

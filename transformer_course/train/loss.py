"""The training loss: cross-entropy against a label-smoothed target (notebook 08; paper §5.4).

"During training, we employed label smoothing of value ε_ls = 0.1. This hurts perplexity, as the model
learns to be more unsure, but improves accuracy and BLEU score." (§5.4)
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from ..data import PAD

__all__ = ["LabelSmoothingLoss"]


class LabelSmoothingLoss(nn.Module):
    """Cross-entropy against a smoothed target: 1 − ε on the right word, ε spread over the vocabulary.

    For each target position with log-probabilities ``log p`` over V words:

        loss = (1 − ε) · (−log p[target]) + ε · mean_v(−log p[v])

    which is exactly what ``F.cross_entropy(logits, target, label_smoothing=ε, ignore_index=PAD)``
    computes. Positions whose target is ``padding_idx`` count for nothing. ``reduction="sum"`` returns
    the total over real tokens (the loop divides by the token count itself); ``"mean"`` the average
    per real token. ``fused=True`` (``Config.fused_loss``, the Multi30k presets) computes the same numbers with
    the backward pass written out, cheaper for a large vocabulary; its rounding differs from autograd's.
    """

    def __init__(
        self, smoothing: float = 0.1, padding_idx: int = PAD, reduction: str = "mean", fused: bool = False
    ) -> None:
        super().__init__()
        if not 0.0 <= smoothing < 1.0:
            raise ValueError(f"label smoothing must be in [0, 1), got {smoothing}; the paper uses 0.1")
        if reduction not in ("mean", "sum", "none"):
            raise ValueError(f"reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
        self.smoothing, self.padding_idx, self.reduction, self.fused = smoothing, padding_idx, reduction, fused

    def forward(self, logits: Tensor, target: Tensor) -> Tensor:
        """logits (..., V), target (...) of word ids → a scalar (or per-position losses for 'none')."""
        if logits.shape[:-1] != target.shape:
            raise ValueError(
                f"logits {tuple(logits.shape)} and target {tuple(target.shape)} do not match: logits must be "
                "target's shape plus one vocabulary dimension"
            )
        if logits.dtype in (torch.float16, torch.bfloat16):  # autocast's half-precision logits: softmax in float32
            logits = logits.float()
        if self.fused:  # the same numbers, a cheaper backward pass (see _SmoothedCrossEntropy)
            flat = _SmoothedCrossEntropy.apply(logits.reshape(-1, logits.size(-1)), target.reshape(-1), self.smoothing)
            loss = flat.view(target.shape)  # (...)
        else:  # autograd through the formula, op for op what notebook 08's loop computes
            log_probs = logits.log_softmax(dim=-1)  # (..., V)
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


class _SmoothedCrossEntropy(torch.autograd.Function):
    """(1 − ε) · (−log p[target]) + ε · mean_v(−log p[v]) per row of logits (N, V), with its gradient written out:

        ∂loss / ∂logits = softmax(logits) − (1 − ε) · onehot(target) − ε / V

    Autograd would get the same numbers from log_softmax, gather and mean, but its backward pass through them
    writes four (N, V) tensors (the mean's expanded gradient, the gather's zeros, their sum, log_softmax's
    gradient); this one writes two (the softmax, then the gradient). At the multi30k-cpu step's 2,160 × 8,000
    logits each is 69 MB (benchmarks/gemm_fraction.py profiles the step)."""

    @staticmethod
    def forward(ctx, logits: Tensor, target: Tensor, smoothing: float) -> Tensor:
        log_probs = logits.log_softmax(dim=-1)  # (N, V)
        nll = -log_probs.gather(-1, target.unsqueeze(-1)).squeeze(-1)  # (N,) −log p[target]
        smooth = -log_probs.mean(dim=-1)  # (N,) the uniform part: mean over all V words
        ctx.save_for_backward(log_probs, target)
        ctx.smoothing = smoothing
        return (1.0 - smoothing) * nll + smoothing * smooth  # (N,)

    @staticmethod
    def backward(ctx, grad: Tensor):  # grad (N,): the gradient of each row's loss
        log_probs, target = ctx.saved_tensors
        eps, vocab = ctx.smoothing, log_probs.size(-1)
        g = grad.unsqueeze(-1)  # (N, 1)
        out = torch.addcmul(g * (-eps / vocab), log_probs.exp(), g)  # (softmax − ε / V) · g, one new (N, V) tensor
        out.scatter_add_(-1, target.unsqueeze(-1), g * -(1.0 - eps))  # − (1 − ε) · g at the target word
        return out, None, None

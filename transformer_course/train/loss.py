"""The training loss: cross-entropy against a label-smoothed target (notebook 08; paper §5.4).

"During training, we employed label smoothing of value ε_ls = 0.1. This hurts perplexity, as the model
learns to be more unsure, but improves accuracy and BLEU score." (§5.4)
"""

from __future__ import annotations

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

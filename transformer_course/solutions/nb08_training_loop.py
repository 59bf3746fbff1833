"""Reference solutions of notebook 08's exercises (the training loop; §3.1, §5.3, §5.4). Try the exercises first."""

import torch


def shift_target(tgt: torch.Tensor, pad: int):
    tgt_in = tgt[:, :-1]  # (batch, T): <s> y1 … yn, what the decoder reads
    tgt_out = tgt[:, 1:]  # (batch, T): y1 … yn </s>, what it must predict
    n_tokens = int((tgt_out != pad).sum())
    return tgt_in, tgt_out, n_tokens


def label_smoothing_loss(logits: torch.Tensor, target: torch.Tensor, eps: float, pad: int) -> torch.Tensor:
    log_p = logits.log_softmax(dim=-1)  # (..., V): never -inf, unlike softmax(...).log()
    nll = -log_p.gather(-1, target.unsqueeze(-1)).squeeze(-1)  # (...): −log p[target]
    uniform = -log_p.mean(dim=-1)  # (...): −(1/V) Σ_v log p[v]
    loss = (1 - eps) * nll + eps * uniform  # (...)
    real = target != pad  # (...)
    return (loss * real).sum() / real.sum()


def noam_rate(step: int, d_model: int, warmup: int) -> float:
    return d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)

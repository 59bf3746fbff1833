"""Checkers for the exercises of notebook 08 (the training loop; paper §3.1, §5.3, §5.4).

from transformer_course.exercises import nb08_training_loop as ex
ex.check_shift_target(shift_target)
ex.check_label_smoothing_loss(label_smoothing_loss)
ex.check_noam_rate(noam_rate)
"""

from __future__ import annotations

import math

import torch

from . import Hint, Result, expect_tensor, run_check

PAD, BOS, EOS = 0, 2, 3
# Three targets wrapped as <s> … </s> and padded: (3, 6)
TGT = torch.tensor([[BOS, 5, 6, 7, EOS, PAD], [BOS, 8, 9, 10, 11, EOS], [BOS, 12, EOS, PAD, PAD, PAD]])


def _as_int(value, what: str) -> int:
    if isinstance(value, torch.Tensor):
        if value.numel() != 1:
            raise Hint(f"{what} should be one number, got a tensor of shape {tuple(value.shape)}")
        value = value.item()
    if isinstance(value, float) and not value.is_integer():
        raise Hint(f"{what} should be a whole number of tokens, got {value}")
    try:
        return int(value)
    except (TypeError, ValueError):
        raise Hint(f"{what} should be a number, got {type(value).__name__}") from None


def check_shift_target(shift_target) -> Result:
    """``shift_target(tgt, pad)`` → ``(tgt_in, tgt_out, n_tokens)``: decoder input, what it must predict,
    and the number of real (non-pad) tokens in ``tgt_out``."""

    def check():
        for pad in (PAD, 1):  # another pad id catches a hard-coded 0
            tgt = TGT.masked_fill(TGT == PAD, pad)  # (3, 6)
            got = shift_target(tgt.clone(), pad)
            if not isinstance(got, tuple) or len(got) != 3:
                raise Hint("return three things: (tgt_in, tgt_out, n_tokens)")
            tgt_in, tgt_out, n_tokens = got
            want_in, want_out = tgt[:, :-1], tgt[:, 1:]  # (3, 5) each
            if isinstance(tgt_in, torch.Tensor) and isinstance(tgt_out, torch.Tensor):
                if torch.equal(tgt_in, want_out) and torch.equal(tgt_out, want_in):
                    raise Hint(
                        "tgt_in and tgt_out are swapped: the decoder reads <s> y1 … (tgt[:, :-1]) "
                        "and must predict y1 … </s> (tgt[:, 1:])"
                    )
                if tgt_in.shape == tgt.shape or tgt_out.shape == tgt.shape:
                    raise Hint(
                        f"tgt_in and tgt_out are one position shorter than tgt {tuple(tgt.shape)}: "
                        "drop the last position for the input and the first for the output"
                    )
            expect_tensor(tgt_in, want_in, "tgt_in")
            expect_tensor(tgt_out, want_out, "tgt_out")
            want_n = int((want_out != pad).sum())
            n = _as_int(n_tokens, "n_tokens")
            if pad != PAD and n == int((want_out != PAD).sum()):
                raise Hint(f"with pad={pad} your n_tokens={n} counts the ids != 0; compare with the argument pad")
            if n == int((tgt != pad).sum()):
                raise Hint(
                    f"n_tokens={n} counts the real tokens of the whole tgt; count them in tgt_out "
                    "(what the loss is computed on), which has no <s>"
                )
            if n == tgt_out.numel():
                raise Hint(f"n_tokens={n} counts the padding too; count only tokens != pad")
            if n == int((tgt_in != pad).sum()) and n != want_n:
                raise Hint(f"n_tokens={n} counts tgt_in; count the targets, tgt_out")
            if n != want_n:
                raise Hint(f"n_tokens is {n}, expected {want_n} (non-pad tokens of tgt_out) for pad={pad}")

    return run_check("shift target", check, "passed: the decoder reads <s> y1 … and predicts y1 … </s>")


def _reference_loss(logits: torch.Tensor, target: torch.Tensor, eps: float, pad: int) -> torch.Tensor:
    """Written out from the definition, position by position (independent of F.cross_entropy)."""
    total, count = 0.0, 0
    flat_logits, flat_target = logits.reshape(-1, logits.size(-1)).double(), target.reshape(-1)
    vocab = logits.size(-1)
    for row, y in zip(flat_logits, flat_target.tolist()):
        if y == pad:
            continue
        log_p = row - torch.logsumexp(row, dim=0)
        q = torch.full((vocab,), eps / vocab, dtype=torch.float64)
        q[y] += 1.0 - eps
        total += float(-(q * log_p).sum())
        count += 1
    return torch.tensor(total / count)


def check_label_smoothing_loss(label_smoothing_loss) -> Result:
    """``label_smoothing_loss(logits, target, eps, pad)``: the mean over real tokens of
    −Σ_v q(v) log p(v), with q = (1 − ε) one-hot + ε/V."""

    def check():
        g = torch.Generator().manual_seed(8)
        logits = torch.randn(2, 5, 7, generator=g) * 3  # (batch, len, vocab)
        target = torch.tensor([[4, 5, 6, 3, PAD], [5, 3, PAD, PAD, PAD]])  # (batch, len)
        logits[0, 0, 4] = 200.0  # a very confident right answer: the other probabilities round to 0
        for eps in (0.1, 0.0, 0.3):
            want = _reference_loss(logits, target, eps, PAD).float()
            got = label_smoothing_loss(logits.clone(), target.clone(), eps, PAD)
            if not isinstance(got, torch.Tensor):
                raise Hint(f"return a tensor (the mean loss), got {type(got).__name__}")
            if got.dim() != 0:
                raise Hint(f"return one number (the mean over real tokens), got shape {tuple(got.shape)}")
            if not torch.isfinite(got):
                raise Hint(
                    f"the loss is {got.item()}: take log_softmax of the logits instead of log(softmax(...)), "
                    "which gives -inf when a probability rounds to 0"
                )
            real = target != PAD
            vocab = logits.size(-1)
            if eps > 0:
                wrong_v1 = _smoothed(logits, target, eps, PAD, spread=vocab - 1)
                if torch.allclose(got.float(), wrong_v1, atol=1e-4) and not torch.allclose(want, wrong_v1, atol=1e-4):
                    raise Hint(
                        "you spread ε over the V − 1 wrong words; the paper's form (and F.cross_entropy) "
                        "spreads ε over all V words: q = (1 − ε)·one-hot + ε/V"
                    )
            all_positions = _smoothed(logits, target, eps, PAD, count_pads=True)
            if torch.allclose(got.float(), all_positions, atol=1e-4):
                raise Hint(
                    "pad positions are counted: a target equal to pad must add nothing to the loss "
                    f"and not to the count (here {int(real.sum())} real tokens of {target.numel()})"
                )
            summed = want * real.sum()
            if torch.allclose(got.float(), summed, atol=1e-3):
                raise Hint("this is the sum over tokens; divide by the number of real tokens for the mean")
            if torch.allclose(got.float(), -want, atol=1e-4):
                raise Hint("the sign is wrong: the loss is −Σ q log p, a positive number")
            expect_tensor(got.float(), want, f"the loss with eps={eps}", atol=1e-4)

    return run_check(
        "label smoothing loss",
        check,
        "passed: equals F.cross_entropy(logits, target, label_smoothing=ε, ignore_index=pad)",
    )


def _smoothed(logits, target, eps, pad, spread=None, count_pads=False) -> torch.Tensor:
    """Variants of the loss a learner may write (for hints)."""
    log_p = logits.double().log_softmax(-1)  # (B, T, V)
    safe = target.clamp(min=0)
    nll = -log_p.gather(-1, safe[..., None]).squeeze(-1)  # (B, T)
    if spread is None:
        smooth = -log_p.mean(-1)
        loss = (1 - eps) * nll + eps * smooth
    else:  # ε over the other V − 1 words
        rest = -log_p.sum(-1) - nll
        loss = (1 - eps) * nll + eps / spread * rest
    real = target != pad
    if count_pads:
        return loss.mean().float()
    return (loss * real).sum().div(real.sum()).float()


def check_noam_rate(noam_rate) -> Result:
    """``noam_rate(step, d_model, warmup)`` = d_model^-0.5 · min(step^-0.5, step · warmup^-1.5) (§5.3)."""

    def check():
        cases = [(1, 512, 4000), (100, 512, 4000), (4000, 512, 4000), (10000, 512, 4000), (50, 64, 100), (400, 64, 100)]
        for step, d_model, warmup in cases:
            want = d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)
            got = noam_rate(step, d_model, warmup)
            if isinstance(got, torch.Tensor):
                got = got.item()
            if not isinstance(got, (int, float)):
                raise Hint(f"return a number, got {type(got).__name__}")
            if math.isclose(got, want, rel_tol=1e-6):
                continue
            no_scale = min(step**-0.5, step * warmup**-1.5)
            if math.isclose(got, no_scale, rel_tol=1e-6):
                raise Hint("the factor d_model^-0.5 is missing: bigger models get a smaller rate")
            if math.isclose(got, d_model**-0.5 * max(step**-0.5, step * warmup**-1.5), rel_tol=1e-6):
                raise Hint(f"at step {step} you took the larger of the two terms; the schedule uses min(…)")
            if math.isclose(got, d_model**-0.5 * min(step**-0.5, step * warmup**-0.5), rel_tol=1e-6):
                raise Hint("the warmup term is step · warmup^-1.5 (power −1.5, so the two terms meet at step = warmup)")
            raise Hint(f"noam_rate({step}, {d_model}, {warmup}) = {got:.3e}, expected {want:.3e}")
        peak = max(range(1, 300), key=lambda s: noam_rate(s, 64, 100))
        if peak != 100:
            raise Hint(f"the rate should peak at step = warmup = 100, yours peaks at {peak}")

    return run_check("Noam learning rate", check, "passed: a linear rise for warmup steps, then 1/√step")

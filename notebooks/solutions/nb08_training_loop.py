"""Reference answers of notebook 08's exercises (the training loop; §5.1, §5.3, §5.4). Try the exercises first."""

import math

from transformer_course.config import get_preset

# Exercise 1 — four targets of 7, 3, 5 and 9 words. Wrapped: <s> + words + </s>, so tgt has 9 + 2 = 11
# columns; tgt_out drops the first column (<s>): (4, 10). Its real tokens are each sentence's words and
# its </s>: 8 + 4 + 6 + 10 = 28. tgt_in drops the last column: only the longest sentence has its </s>
# there; the three others have a pad there and keep their </s>.
TGT_OUT_SHAPE = (4, 10)
N_TOKENS = 28
EOS_IN_TGT_IN = 3

# Exercise 2 — line 3: log(softmax) is −inf where a probability rounds to 0 (then inf, or nan with ε = 0);
# logits.log_softmax(-1) never is. Line 6: the right word gets 1 − ε, the uniform part ε. Line 7: the mean
# over every position counts the pads; sum over real tokens and divide by their number.
BUG_LINES = [3, 6, 7]


def fixed_label_smoothing_loss(logits, target, eps, pad):
    log_p = logits.log_softmax(dim=-1)  # (batch, T, V), finite for any finite logits
    nll = -log_p.gather(-1, target.unsqueeze(-1)).squeeze(-1)  # (batch, T)
    uniform = -log_p.mean(dim=-1)  # (batch, T)
    loss = (1 - eps) * nll + eps * uniform  # (batch, T)
    real = target != pad  # (batch, T)
    return (loss * real).sum() / real.sum()


# Exercise 3 — −Σ q log p = H(q) + KL(q ‖ p) is smallest at p = q, where it equals the entropy of q.
def loss_floor(eps: float = 0.1, vocab: int = 14) -> float:
    right, other = 1 - eps + eps / vocab, eps / vocab  # q(y), and q(v) of each of the other V − 1 words
    return -(right * math.log(right) + (vocab - 1) * other * math.log(other))


LOSS_FLOOR = loss_floor()  # ≈ 0.547 nats


# Exercise 4 — the two terms of the min are equal at step = warmup: the peak is lr_factor · (d_model · warmup)^-0.5.
def peak(preset: str = "multi30k-cpu-words") -> tuple[int, float]:
    c = get_preset(preset)
    return c.warmup, c.lr_factor * (c.d_model * c.warmup) ** -0.5


PEAK_STEP = peak()[0]  # 150: the step where the two terms of the min meet (= warmup)
PEAK_RATE = peak()[1]  # ≈ 1.02e-3 for multi30k-cpu-words

# Questions — q1: d_model^-0.5, so 1/√2; q2: perplexity rewards confidence, smoothing removes some on purpose;
# q3: 25,000 target tokens per batch (§5.1) × 100,000 steps (§5.2).
QUIZ = {"q1": "c", "q2": "b", "q3": 25_000 * 100_000}

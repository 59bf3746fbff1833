"""Reference answers of notebook 08's exercises (the training loop; §5.1, §5.3, §5.4). Try the exercises first."""

import math

import torch

from transformer_course.config import get_preset


# Exercise 1 — tgt is <s> + words + </s> padded to the longest: longest + 2 columns; tgt_out drops the first
# column, so (batch, longest + 1). Its real tokens are each sentence's words and its </s>. tgt_in drops the last
# column, where only the sentences of the longest length have their </s> (all of them, if several tie); the
# others have a pad there and keep their </s>.
def batch_numbers(lengths):
    longest = max(lengths)
    return (len(lengths), longest + 1), sum(n + 1 for n in lengths), sum(n < longest for n in lengths)


# Exercise 2 — softmax then log: a word whose logit is more than about 104 below the best gets a probability that
# rounds to 0 in float32, log 0 = −inf, and the ε·mean_v(−log p(v)) term makes the loss inf. Subtracting the
# maximum does not help (it only protects the largest logit). One position, a gap of 200, a real target id 1:
LOGITS_INPUT = torch.tensor([[[200.0, 0.0, 0.0]]])  # (1, 1, 3)
TARGET_INPUT = torch.tensor([[1]])  # (1, 1)


# Exercise 3 — −Σ q log p = H(q) + KL(q ‖ p) is smallest at p = q, where it equals the entropy of q:
# q(y) = 1 − ε + ε/V = 0.9 + 0.1/14, and q(v) = ε/V = 0.1/14 for each of the other 13 words.
LOSS_FLOOR = -((0.9 + 0.1 / 14) * math.log(0.9 + 0.1 / 14) + 13 * (0.1 / 14) * math.log(0.1 / 14))  # ≈ 0.547 nats

# Exercise 4 — the two terms of the min are equal at step = warmup: the peak is lr_factor · (d_model · warmup)^-0.5.
# multi30k-cpu-words: d_model 256, warmup 150, lr_factor 0.2.
PEAK_STEP = 150  # the step where the two terms of the min meet (= warmup)
PEAK_RATE = 0.2 * (256 * 150) ** -0.5  # ≈ 1.02e-3


def peak(preset: str = "multi30k-cpu-words") -> tuple[int, float]:
    """The same from the preset itself (the tests call it): (warmup, lr_factor · (d_model · warmup)^-0.5)."""
    c = get_preset(preset)
    return c.warmup, c.lr_factor * (c.d_model * c.warmup) ** -0.5


# Questions — q1: d_model^-0.5, so 1/√2; q2: perplexity rewards confidence, smoothing removes some on purpose;
# q3: 25,000 target tokens per batch (§5.1) × 100,000 steps (§5.2).
QUIZ = {"q1": "c", "q2": "b", "q3": 25_000 * 100_000}

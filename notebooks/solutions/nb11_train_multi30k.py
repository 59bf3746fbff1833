"""Reference solutions of notebook 11's exercises (Multi30k; §5.4, §6.1, BLEU). Try the exercises first."""

import math


def update_average(average: dict, state_dict: dict, count: int) -> dict:
    # the mean of count checkpoints = the mean of the first count − 1, moved 1/count of the way to the new one
    return {name: average[name] + (state_dict[name] - average[name]) / count for name in average}


def bleu_from_counts(correct, total, sys_len, ref_len):
    log_precisions = [math.log(c / t) for c, t in zip(correct, total)]  # n = 1 … 4
    brevity_penalty = 1.0 if sys_len > ref_len else math.exp(1 - ref_len / sys_len)
    return 100 * brevity_penalty * math.exp(sum(log_precisions) / len(log_precisions))


def loss_floor(epsilon, vocab_size):
    right = 1 - epsilon + epsilon / vocab_size  # the smoothed target: the right word …
    other = epsilon / vocab_size  # … and each of the V − 1 others
    entropy = -right * math.log(right)
    if other > 0:
        entropy -= (vocab_size - 1) * other * math.log(other)
    return entropy  # the loss is smallest, and equal to this, when the model predicts the target exactly


QUIZ = {"q1": "b", "q2": 32000, "q3": "b"}

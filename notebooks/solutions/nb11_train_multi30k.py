"""Reference solutions of notebook 11's exercises (Multi30k; §5.1, §6.1, BLEU). Try the exercises first."""

import math


def update_average(average: dict, state_dict: dict, count: int) -> dict:
    # the mean of count checkpoints = the mean of the first count − 1, moved 1/count of the way to the new one
    return {name: average[name] + (state_dict[name] - average[name]) / count for name in average}


def bleu_change(before, after):
    """ln BLEU = ln BP + ¼ Σ ln p_n: a sum, so the change of ln BLEU splits into the change of each term."""

    def log_terms(correct, total, sys_len, ref_len):  # [ln BP, ¼ ln p_1, …, ¼ ln p_4]
        log_penalty = 0.0 if sys_len > ref_len else 1 - ref_len / sys_len
        return [log_penalty] + [math.log(c / t) / 4 for c, t in zip(correct, total)]

    return [a - b for a, b in zip(log_terms(*after), log_terms(*before))]


def length_batches(lengths, max_tokens):
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])  # shortest first: neighbours have about one length
    batches, batch, longest = [], [], 0
    for i in order:
        if batch and (len(batch) + 1) * max(longest, lengths[i]) > max_tokens:  # one more would not fit: close it
            batches.append(batch)
            batch, longest = [], 0
        batch.append(i)
        longest = max(longest, lengths[i])
    return batches + [batch]


# q1: 40 × 25 = 1,000 positions, 880 real: 120 / 1,000. q2: 4 GPUs × 2 accumulated batches × 8,000 tokens.
# q3: 100,000 > 65,504, the largest float16: it overflows to inf.
QUIZ = {"q1": 0.12, "q2": 4 * 2 * 8000, "q3": "b"}

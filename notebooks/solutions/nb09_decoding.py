"""Reference solutions of notebook 09's exercises (decoding, §6.1). Try the exercises first."""

import math

# Exercise 1, a design. The most likely sentence starts with the word ranked third after <s> (C, 0.2) and ends
# at once (C </s> = 0.2 · 0.95 = 0.19); A and B win the first step but end worse. Greedy: A (0.42), then </s>
# (0.4): A </s> = 0.168. Beam k = 2 keeps A and B; at step 2, B </s> = 0.171 and A </s> = 0.168 finish, and
# nothing open (at most 0.095) can beat 0.171: B </s>. Beam k = 3 also keeps C: C </s> = 0.19 wins.
TABLE_DESIGN = {
    "<s>": {"A": 0.42, "B": 0.38, "C": 0.2},
    "A": {"</s>": 0.4, "A": 0.2, "B": 0.2, "C": 0.2},
    "B": {"</s>": 0.45, "A": 0.25, "B": 0.15, "C": 0.15},
    "C": {"</s>": 0.95, "A": 0.02, "B": 0.02, "C": 0.01},
}


def top_k_extensions(beam_log_probs, next_log_probs, k):
    V = next_log_probs.size(1)
    candidates = beam_log_probs[:, None] + next_log_probs  # (k, V): log P of every extension
    scores, index = candidates.flatten().topk(k)  # (k,), (k,): index = beam · V + word
    return scores, index // V, index % V


def crossover_alpha(log_p_short, len_short, log_p_long, len_long):
    # log P_s / lp_s^α = log P_l / lp_l^α  ⇔  (lp_l / lp_s)^α = log P_l / log P_s; the 6 of lp cancels
    return math.log(log_p_long / log_p_short) / math.log((5 + len_long) / (5 + len_short))


def cache_numbers(batch, layers, heads, d_k, t, src_len):
    per_position = 2 * batch * heads * d_k  # keys and values of one position in one layer
    return layers * per_position * (t + src_len)  # self-attention: t positions; cross-attention: src_len


# q1: without the causal mask the self-attention cache goes stale; the memory (cross-attention) does not change.
# q2: 4 prefixes × 6,190 words. q3: with α > 0 a longer hypothesis is divided by a larger lp(Y).
QUIZ = {"q1": "b", "q2": 4 * 6190, "q3": "b"}

"""Reference solutions of notebook 09's exercises (decoding, §6.1). Try the exercises first."""

import math

# Exercise 1, by hand. Greedy: A (0.5), then C (0.4), then </s> (0.9): P = 0.18.
# Beam search, k = 2: step 1 keeps A (0.5) and B (0.4). Step 2: B C = 0.28, A C = 0.2, A B = 0.15, …:
# keeps B C and A C. Step 3: B C </s> = 0.252 and A C </s> = 0.18 finish; nothing open can beat 0.252.
GREEDY_PREDICTION = ["A", "C", "</s>"]
BEAM_PREDICTION = ["B", "C", "</s>"]


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


QUIZ = {"q1": "b", "q2": 4 * 6190, "q3": "a"}

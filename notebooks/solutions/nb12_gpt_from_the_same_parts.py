"""Reference solutions of notebook 12's exercises (a GPT from the same parts). Try the exercises first."""

import torch


def next_token_pairs(ids):
    # position t reads tokens 0 … t and predicts token t + 1: inputs lose the last token, targets the first
    return ids[:, :-1], ids[:, 1:]  # (batch, T − 1), (batch, T − 1)


def top_k_filter(logits, k):
    kth_best = logits.topk(k, dim=-1).values[:, -1:]  # (batch, 1): the k-th highest score of each row
    return logits.masked_fill(logits < kth_best, float("-inf"))  # (batch, V): the others can never be drawn


def top_p_probs(logits, p):
    probs = logits.softmax(dim=-1)  # (batch, V)
    ranked, order = probs.sort(dim=-1, descending=True)  # (batch, V): the most probable first, and their ids
    mass_before = ranked.cumsum(dim=-1) - ranked  # (batch, V): what the tokens ranked above each one hold
    ranked = ranked.masked_fill(mass_before >= p, 0.0)  # the nucleus: up to the token that crosses p
    ranked = ranked / ranked.sum(dim=-1, keepdim=True)  # renormalised: the kept tokens sum to 1
    return torch.zeros_like(probs).scatter(-1, order, ranked)  # (batch, V): each back at its token's index


def rope(q, k, v, positions):
    d_k = q.size(-1)
    theta = 10000.0 ** (-torch.arange(0, d_k, 2, dtype=torch.float32) / d_k)  # (d_k/2,): one frequency per pair
    angle = positions.float()[:, None] * theta  # (T, d_k/2)
    cos, sin = angle.cos(), angle.sin()

    def turn(x):  # (batch, heads, T, d_k): each pair (x[2i], x[2i+1]) turned by its angle
        first, second = x[..., 0::2], x[..., 1::2]  # (batch, heads, T, d_k/2) each
        return torch.stack([first * cos - second * sin, first * sin + second * cos], dim=-1).flatten(-2)

    return turn(q), turn(k), v  # the values are not turned


# q1: the peaked distribution keeps 1 token (0.95 alone passes 0.9), the flat one 900 of its 1,000.
# q2: the nucleus is 0.5 + 0.2 + 0.15 = 0.85; renormalised, 0.2 / 0.85. q3: only the new key (and query) turn.
QUIZ = {"q1": "a", "q2": 0.2 / 0.85, "q3": "b"}

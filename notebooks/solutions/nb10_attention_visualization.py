"""Reference solutions of notebook 10's exercises (attention visualization, §3.2). Try the exercises first."""

import math

import torch


def head_focus(weights: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    plogp = torch.where(weights > 0, weights * weights.clamp_min(1e-30).log(), torch.zeros_like(weights))  # (h, q, k)
    entropy = -plogp.sum(-1)  # (h, q): each row's entropy, in nats
    allowed = mask.sum(-1)  # (q,): the keys each row may see; a row's entropy is at most ln of that
    counted = allowed > 1  # (q,): a row that may see one key has no choice (0 / ln 1): left out
    focus = 1 - entropy[:, counted] / allowed[counted].log()  # (h, rows counted)
    return focus.mean(-1)  # (h,)


def rollout(layers: list[torch.Tensor]) -> torch.Tensor:
    S = layers[0].size(-1)
    eye = torch.eye(S, dtype=layers[0].dtype)
    result = eye  # (S, S): before the first layer, each position holds its own token
    for weights in layers:  # first layer first: each new layer reads what the layers below made
        with_residual = 0.5 * weights.mean(0) + 0.5 * eye  # (heads, S, S) → (S, S); the residual keeps ½ of x
        result = with_residual @ result  # (S, S): Ā_l · … · Ā_1
    return result


# Exercise 1, by hand: 4 heads; the source has 6 positions; the decoder reads <s> + 4 symbols = 5 positions.
ENCODER_SHAPE = (4, 6, 6)  # (heads, source queries, source keys)
DECODER_SHAPE = (4, 5, 5)  # (heads, target queries, target keys), <s> included
CROSS_SHAPE = (4, 5, 6)  # (heads, target queries, source keys)

# q1: row i is uniform over i + 1 positions: (ln 1 + … + ln 8) / 8. q2: 0.5 ln 2 + 0.5 ln 14 = 0.5 ln 28.
# q3: the model does not depend on that head alone (other heads carry the same information).
QUIZ = {"q1": math.lgamma(9) / 8, "q2": 0.5 * math.log(28), "q3": "b"}

"""Choosing the next token of a language model: greedy, temperature, top-k and nucleus (top-p) sampling
(notebook 12).

A language model gives one score (logit) per vocabulary entry for the next position. :func:`sample_next` turns
a batch of them into one token each, in this order:

    logits (B, V) ──÷ temperature──▶ ──filter_top_k──▶ ──filter_top_p──▶ softmax (renormalised) ──multinomial──▶ ids (B, 1)

- **temperature** T divides the logits: T < 1 sharpens the distribution, T > 1 flattens it, T = 0 is the argmax
  (greedy: no randomness at all).
- **top-k** keeps the k highest logits and sets the rest to −inf (Fan et al., 2018). A token whose logit equals
  the k-th highest is kept too, so more than k tokens survive when there are ties at the cut.
- **top-p**, nucleus sampling (Holtzman et al., 2020, "The Curious Case of Neural Text Degeneration"): keep the
  smallest set of most probable tokens whose probabilities sum to at least p. The token whose probability makes
  the sum cross p is *kept*, so the set is never empty; a token as probable as the least probable one kept is
  kept too (ties); p = 1 keeps every token.

The filters set what they drop to −inf, so the softmax after them gives the kept tokens all the probability,
renormalised; ``torch.multinomial`` then draws from it with the caller's ``generator`` (a fixed seed gives the
same tokens). Every bad value is one ValueError that says what to change.
"""

from __future__ import annotations

import math
import numbers

import torch
from torch import Tensor

__all__ = ["check_logits", "check_settings", "filter_top_k", "filter_top_p", "sample_next"]


def check_logits(logits: Tensor, what: str = "logits") -> None:
    """A floating tensor (..., V) with V >= 1, no NaN and at least one finite score per row."""
    if not isinstance(logits, Tensor) or not logits.is_floating_point() or logits.dim() < 1 or logits.size(-1) < 1:
        shape = tuple(logits.shape) if isinstance(logits, Tensor) else type(logits).__name__
        raise ValueError(f"{what} must be a floating tensor (..., vocab) with vocab >= 1, got {shape}")
    if torch.isnan(logits).any():  # a host sync: sampling reads its result back anyway
        raise ValueError(
            f"{what} hold NaN: the model's output is broken (check its weights and inputs), not the sampler"
        )
    if (logits.amax(dim=-1) == -math.inf).any():
        raise ValueError(f"a row of {what} is -inf everywhere: no token is left to choose; keep at least one")


def _check_k(k) -> int:
    if not isinstance(k, numbers.Integral) or isinstance(k, bool) or k < 1:
        raise ValueError(f"top_k must be a whole number >= 1 (1: greedy, e.g. 40), got top_k={k!r}")
    return int(k)


def _check_p(p) -> float:
    if not isinstance(p, numbers.Real) or isinstance(p, bool) or not 0.0 < p <= 1.0:  # NaN fails 0 < p
        raise ValueError(f"top_p must be a probability in (0, 1] (1: no filter, e.g. 0.9), got top_p={p!r}")
    return float(p)


def _check_temperature(temperature) -> float:
    if not isinstance(temperature, numbers.Real) or isinstance(temperature, bool) or not 0.0 <= temperature < math.inf:
        raise ValueError(
            f"temperature must be a finite number >= 0 (0: greedy, 1: the model's distribution, e.g. 0.8), "
            f"got temperature={temperature!r}"
        )
    return float(temperature)


def check_settings(temperature: float = 1.0, top_k: int | None = None, top_p: float | None = None) -> None:
    """One ValueError naming the first bad setting: temperature a finite number >= 0, top_k a whole number >= 1,
    top_p in (0, 1]; None for top_k or top_p: that filter is off."""
    _check_temperature(temperature)
    if top_k is not None:
        _check_k(top_k)
    if top_p is not None:
        _check_p(top_p)


def filter_top_k(logits: Tensor, k: int) -> Tensor:
    """logits (..., V) with all but the k largest of each row set to −inf → (..., V). Ties at the k-th largest
    value are all kept (so a row may keep more than k); k >= V keeps everything."""
    k = _check_k(k)
    k = min(k, logits.size(-1))
    kth = logits.topk(k, dim=-1).values[..., -1:]  # (..., 1): the k-th largest score of each row
    return logits.masked_fill(logits < kth, -math.inf)  # (..., V)


def filter_top_p(logits: Tensor, p: float) -> Tensor:
    """Nucleus: logits (..., V) with every token outside the smallest most-probable set whose probabilities sum to
    at least ``p`` set to −inf → (..., V). The token that crosses p is kept (at least one token always is), and so
    is every token tied with the least probable one kept; p = 1 keeps every token."""
    p = _check_p(p)
    if p == 1.0:
        return logits  # the whole distribution: nothing to cut
    probs = logits.double().softmax(dim=-1)  # (..., V), in float64 so the running sums round less
    ranked = probs.sort(dim=-1, descending=True).values  # (..., V): the most probable first
    before = ranked.cumsum(dim=-1) - ranked  # (..., V): the mass of the tokens ranked above each one
    kept = before < p  # (..., V): a token is needed while the ones above it have not reached p; the first always is
    smallest = ranked.masked_fill(~kept, math.inf).amin(dim=-1, keepdim=True)  # (..., 1): the least probable kept
    return logits.masked_fill(probs < smallest, -math.inf)  # (..., V): ties with it are kept too


def sample_next(
    logits: Tensor,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    generator: torch.Generator | None = None,
) -> Tensor:
    """The next token of each row: logits (B, V) → ids (B, 1). Temperature first (0: the argmax, no draw), then
    top-k, then top-p, then a draw from the softmax of what is left (renormalised) with ``generator``."""
    check_settings(temperature, top_k, top_p)
    if not isinstance(logits, Tensor) or logits.dim() != 2:
        shape = tuple(logits.shape) if isinstance(logits, Tensor) else type(logits).__name__
        raise ValueError(f"logits must be a tensor (batch, vocab), got {shape}; take the model's logits[:, -1]")
    if temperature == 0.0:  # no value check here: greedy decoding stays free of host syncs
        return logits.argmax(dim=-1, keepdim=True)  # (B, 1): greedy
    check_logits(logits)
    # the best score becomes 0 before dividing (in float64), so a tiny temperature sends the others to -inf, not NaN
    scores = logits.double()  # (B, V)
    scaled = (scores - scores.amax(dim=-1, keepdim=True)) / temperature  # (B, V)
    if top_k is not None:
        scaled = filter_top_k(scaled, top_k)
    if top_p is not None:
        scaled = filter_top_p(scaled, top_p)
    probs = scaled.softmax(dim=-1)  # (B, V): the kept tokens' probabilities, summing to 1 again
    return torch.multinomial(probs, 1, generator=generator)  # (B, 1)

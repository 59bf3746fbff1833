"""The steps of :func:`transformer_course.decode.beam_search` (notebook 09; paper §6.1, GNMT length penalty).

``beam_search`` reads as these steps: :func:`start_beams` (encode once, k copies), then per output position
:func:`extend` (one decoder call for every open prefix), :func:`ended` (the hypotheses that end here) into
:class:`Finished` (the n best so far), :func:`go_on` (the k open prefixes that continue, the cache following
them) and :func:`cannot_improve` (a sentence is done), and :func:`keep_sentences` drops the done sentences from
the batch. Shapes: B sentences, k beams each, n = n_best, V words.

Work that would change no word is skipped: a done sentence leaves the batch (its rows of the memory and the cache
with it), the cache is buffered (``KVCache``: each step writes in place), and following the beams moves only
self-attention's keys/values, since a sentence's beams share the memory's.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from .data import PAD
from .model import DecoderCache, EncoderDecoder

__all__ = [
    "Finished",
    "cannot_improve",
    "best_extensions",
    "ended",
    "extend",
    "gnmt_length_penalty",
    "go_on",
    "keep_sentences",
    "new_cache",
    "start_beams",
]


def gnmt_length_penalty(length: Tensor | int, alpha: float) -> Tensor | float:
    """lp(Y) = ((5 + |Y|) / 6)^α (Wu et al., 2016, eq. 14). α = 0 gives 1: plain log-probabilities."""
    return ((5 + length) / 6) ** alpha


def start_beams(model: nn.Module, src: Tensor, src_mask: Tensor | None, start_symbol: int, k: int):
    """Encode once and give every beam its own copy of the memory: row b·k + j is beam j of sentence b.
    The k open prefixes are ``<s>``; only beam 0 counts at first (log P 0, the others -inf), so the first
    choices are k distinct words."""
    B = src.size(0)
    memory = model.encode(src, src_mask).repeat_interleave(k, dim=0)  # (B·k, S, d_model)
    if src_mask is not None and src_mask.size(0) == B:
        src_mask = src_mask.repeat_interleave(k, dim=0)  # (B·k, 1, 1, S)
    alive = torch.full((B, k, 1), start_symbol, dtype=torch.long, device=src.device)  # (B, k, t): open prefixes
    alive_log_probs = torch.full((B, k), float("-inf"), device=src.device)  # (B, k)
    alive_log_probs[:, 0] = 0.0
    return memory, src_mask, new_cache(model), alive, alive_log_probs


def new_cache(model: nn.Module):
    """The package's model gets a buffered cache (written in place, ``KVCache``); a hand-built model its own."""
    return model.new_cache(buffered=True) if isinstance(model, EncoderDecoder) else model.new_cache()


def extend(model: nn.Module, memory: Tensor, src_mask, alive: Tensor, alive_log_probs: Tensor, cache) -> Tensor:
    """One decoder call for every open prefix's newest word: log P of each prefix + each word, (B, k, V)."""
    B, k, _ = alive.shape
    hidden = model.decode(memory, src_mask, alive[:, :, -1].reshape(B * k, 1), None, cache)  # (B·k, 1, d_model)
    log_p = model.generator(hidden[:, -1]).log_softmax(dim=-1)  # (B·k, V)
    return alive_log_probs[:, :, None] + log_p.view(B, k, -1)  # (B, k, V)


def best_extensions(candidates: Tensor) -> tuple[Tensor, Tensor]:
    """The 2k best of the k·V extensions by log P, best first: (B, 2k) log P and indices (beam · V + word). The
    beam's k choices are the first k; only k extensions end in ``</s>`` (one per beam), so the k best that go on
    are among the 2k too: one ``topk`` serves :func:`ended` and :func:`go_on`."""
    B, k, V = candidates.shape
    return candidates.view(B, k * V).topk(min(2 * k, k * V), dim=1)  # (B, 2k), (B, 2k)


def ended(candidates: Tensor, t: int, longest: int, end_symbol: int, alpha: float, done: Tensor, best=None):
    """The hypotheses that end at step t, as (scores, index into the k·V extensions, log P), up to n per sentence:
    of the beam's k choices those that chose ``</s>`` — at the last step every extension. Their score is
    log P / lp(t); done sentences get none (-inf). ``best``: :func:`best_extensions`, if already computed."""
    B, k, V = candidates.shape
    flat = candidates.view(B, k * V)  # (B, k·V); index = beam · V + word
    if t == longest:  # the last step: every extension ends here
        end_log_probs, end_index = flat, torch.arange(k * V, device=flat.device).expand(B, -1)  # (B, k·V)
    else:  # the beam's k choices; those that chose </s> end
        best_log_probs, best_index = best if best is not None else best_extensions(candidates)  # (B, 2k)
        end_log_probs, end_index = best_log_probs[:, :k], best_index[:, :k]  # (B, k)
        end_log_probs = end_log_probs.masked_fill(end_index % V != end_symbol, float("-inf"))
    end_scores = end_log_probs / gnmt_length_penalty(t, alpha)  # (B, ·)
    end_scores = end_scores.masked_fill(done[:, None], float("-inf"))  # done sentences stay as they are
    return end_scores, end_index, flat


@dataclass
class Finished:
    """The n best finished hypotheses of each sentence, best first (what ``decode.BeamResult`` returns)."""

    tokens: Tensor  # (B, n, max_len)
    scores: Tensor  # (B, n)
    log_probs: Tensor  # (B, n)
    lengths: Tensor  # (B, n)

    @classmethod
    def empty(cls, B: int, n: int, max_len: int, device) -> Finished:
        return cls(
            torch.full((B, n, max_len), PAD, dtype=torch.long, device=device),
            torch.full((B, n), float("-inf"), device=device),
            torch.full((B, n), float("-inf"), device=device),
            torch.zeros((B, n), dtype=torch.long, device=device),
        )

    def add(self, ended_at_t, alive: Tensor, t: int) -> None:
        """Keep the n best of these n and the (at most n) best that ended at step t."""
        end_scores, end_index, flat = ended_at_t
        B, n, max_len = self.tokens.shape
        V = flat.size(1) // alive.size(1)
        rows = torch.arange(B, device=flat.device)[:, None]  # (B, 1): for gathering per sentence
        new_scores, pick = end_scores.topk(n, dim=1)  # (B, n): at most n new ones can enter the n best
        new_index = end_index.gather(1, pick)  # (B, n)
        new_log_probs = flat.gather(1, new_index).masked_fill(new_scores == float("-inf"), float("-inf"))  # (B, n)
        new_beam, new_word = new_index // V, new_index % V  # (B, n), (B, n)
        new_tokens = torch.cat([alive[rows, new_beam], new_word[..., None]], dim=2)  # (B, n, t + 1)
        new_tokens = nn.functional.pad(new_tokens, (0, max_len - t - 1), value=PAD)  # (B, n, max_len)
        self.scores, keep = torch.cat([self.scores, new_scores], dim=1).topk(n, dim=1)  # (B, n) of the 2n
        self.tokens = torch.cat([self.tokens, new_tokens], dim=1)[rows, keep]  # (B, n, max_len)
        self.log_probs = torch.cat([self.log_probs, new_log_probs], dim=1)[rows, keep]  # (B, n)
        self.lengths = torch.cat([self.lengths, torch.full_like(self.lengths, t)], dim=1)[rows, keep]  # (B, n)

    def select(self, index: Tensor) -> Finished:
        """The sentences ``index`` (b,), in that order."""
        return Finished(self.tokens[index], self.scores[index], self.log_probs[index], self.lengths[index])

    def put(self, rows: Tensor, other: Finished) -> None:
        """Write ``other``'s sentences into rows ``rows`` (b,) of these."""
        self.tokens[rows], self.scores[rows] = other.tokens, other.scores  # (b, n, max_len), (b, n)
        self.log_probs[rows], self.lengths[rows] = other.log_probs, other.lengths  # (b, n), (b, n)

    def best_first(self) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """tokens (cut after the longest hypothesis kept), scores, log_probs, lengths: a BeamResult's fields."""
        length = int(self.lengths.max()) + 1  # <s> + the longest hypothesis kept
        return self.tokens[:, :, :length], self.scores, self.log_probs, self.lengths


def go_on(candidates: Tensor, alive: Tensor, end_symbol: int, cache, best=None) -> tuple[Tensor, Tensor]:
    """The k best extensions that do not end in ``</s>`` are the next open prefixes; the cache rows follow them.
    ``best``: :func:`best_extensions`, if already computed."""
    B, k, V = candidates.shape
    best_log_probs, best_index = best if best is not None else best_extensions(candidates)  # (B, 2k), best first
    ends = (best_index % V == end_symbol).int()  # (B, 2k): 1 where the extension is </s>
    pick = ends.argsort(dim=1, stable=True)[:, :k]  # (B, k): the first k that go on, in their order
    alive_log_probs, index = best_log_probs.gather(1, pick), best_index.gather(1, pick)  # (B, k)
    beam, word = index // V, index % V  # (B, k), (B, k): which prefix each new hypothesis extends
    rows = torch.arange(B, device=candidates.device)[:, None]  # (B, 1)
    alive = torch.cat([alive[rows, beam], word[..., None]], dim=2)  # (B, k, t + 1)
    index = (rows * k + beam).view(-1)  # (B·k,): each new row reads its prefix's keys/values
    if isinstance(cache, DecoderCache):  # a sentence's beams share the memory's keys/values: only the past moves
        cache.reorder(index, cross_attention=False)
    else:
        cache.reorder(index)
    return alive, alive_log_probs


def cannot_improve(finished: Finished, alive_log_probs: Tensor, t: int, longest: int, alpha: float) -> Tensor:
    """(B,): True where no open hypothesis can beat the n-th finished one. log P only falls as words are added,
    so an open prefix at best reaches log P_now / max lp over the lengths still allowed."""
    best_future = max(gnmt_length_penalty(t + 1, alpha), gnmt_length_penalty(longest, alpha))
    bound = alive_log_probs.max(dim=1).values / best_future  # (B,)
    return finished.scores[:, -1] >= bound


def keep_sentences(keep: Tensor, k: int, memory: Tensor, src_mask, cache) -> tuple[Tensor, Tensor | None]:
    """Drop the sentences that are done from the batch: ``keep`` (b,) are the sentences that go on. Their k rows
    each of the memory, the mask and the cache (self- and cross-attention) stay, the others' are freed."""
    beam_rows = (keep[:, None] * k + torch.arange(k, device=keep.device)).view(-1)  # (b·k,)
    if src_mask is not None and src_mask.size(0) == memory.size(0):
        src_mask = src_mask.index_select(0, beam_rows)  # (b·k, 1, 1, S)
    cache.reorder(beam_rows)
    return memory.index_select(0, beam_rows), src_mask  # (b·k, S, d_model)

"""Checkers for the exercises of notebook 09 (decoding: greedy, beam search, length penalty; paper §6.1).

from transformer_course.exercises import nb09_decoding as ex
ex.check_greedy(greedy)
ex.check_beam_score(beam_score)
ex.check_top_k_extensions(top_k_extensions)
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from . import Hint, Result, expect_tensor, run_check

PAD, BOS, EOS = 0, 2, 3


class _NoCache:
    def __len__(self) -> int:
        return 0

    def reorder(self, index: Tensor) -> None:
        pass


class TableModel(nn.Module):
    """A hand-built "model" whose next word depends only on the last word: log P(next | last) = table[last].

    It has the interface of the course's Transformer (``encode``, ``decode``, ``generator``, ``new_cache``);
    the source is ignored. ``decode`` returns the one-hot of each target token as its "hidden state" and
    the generator multiplies it with the log-probability table, so position t's logits are table[tgt[t]].
    """

    def __init__(self, probs: Tensor) -> None:
        super().__init__()
        if probs.dim() != 2 or probs.size(0) != probs.size(1):
            raise ValueError(f"probs must be a square (V, V) table of P(next | last), got shape {tuple(probs.shape)}")
        probs = probs / probs.sum(dim=1, keepdim=True)  # each row a distribution
        self.tgt_vocab = probs.size(0)
        self.generator = nn.Linear(self.tgt_vocab, self.tgt_vocab, bias=False)
        with torch.no_grad():
            self.generator.weight.copy_(probs.log().T)  # one-hot(last) @ W^T = log P(· | last)
        self.eval()

    def encode(self, src: Tensor, src_mask: Tensor | None) -> Tensor:
        return torch.zeros(src.size(0), src.size(1), 1)  # (batch, S, 1): nothing to remember

    def decode(self, memory: Tensor, src_mask, tgt: Tensor, tgt_mask=None, cache=None) -> Tensor:
        return nn.functional.one_hot(tgt, self.tgt_vocab).float()  # (batch, T, V)

    def new_cache(self) -> _NoCache:
        return _NoCache()


def _table(rows: dict[int, dict[int, float]], vocab: int) -> Tensor:
    probs = torch.full((vocab, vocab), 1e-4)  # every word stays possible (no log 0)
    for last, nexts in rows.items():
        for word, p in nexts.items():
            probs[last, word] = p
    return probs


def _checker_model() -> TableModel:
    # ids: 0 <pad>, 1 <unk>, 2 <s>, 3 </s>, 4…7 words. After <s>: 5; then 6; then 4; then </s>.
    # The first position's row (<s>) prefers 5; a decoder that reads the wrong position keeps saying 5.
    rows = {
        BOS: {5: 0.6, 4: 0.3},
        5: {6: 0.7, EOS: 0.2},
        6: {4: 0.5, 7: 0.4},
        4: {EOS: 0.8, 5: 0.1},
        7: {7: 0.9},
        EOS: {4: 0.9},
    }
    return TableModel(_table(rows, 8))


def _reference_greedy(model, src, src_mask, max_len, start_symbol, end_symbol) -> list[int]:
    ys = [start_symbol]
    memory = model.encode(src, src_mask)
    while len(ys) < max_len:
        tgt = torch.tensor([ys])  # (1, t)
        causal = torch.ones(len(ys), len(ys), dtype=torch.bool).tril()[None, None]  # (1, 1, t, t)
        logits = model.generator(model.decode(memory, src_mask, tgt, causal)[:, -1])  # (1, V)
        ys.append(int(logits.argmax(-1)))
        if ys[-1] == end_symbol:
            break
    return ys


def check_greedy(greedy) -> Result:
    """``greedy(model, src, src_mask, max_len, start_symbol, end_symbol)`` → one sentence's ids as a list,
    ``start_symbol`` first, ``end_symbol`` last if it was produced, at most ``max_len`` ids."""

    def check():
        model = _checker_model()
        src = torch.tensor([[4, 5, 6]])  # (1, S)
        src_mask = torch.ones(1, 1, 1, 3, dtype=torch.bool)
        for max_len, start in ((10, BOS), (3, BOS), (10, 6)):
            want = _reference_greedy(model, src, src_mask, max_len, start, EOS)
            with torch.no_grad():
                got = greedy(model, src, src_mask, max_len, start, EOS)
            if isinstance(got, Tensor):
                got = got.flatten().tolist()
            if not isinstance(got, (list, tuple)):
                raise Hint(f"return a list of ids, got {type(got).__name__}")
            got = [int(g) for g in got]
            if got == want:
                continue
            if got == want[1:]:
                raise Hint("the start symbol is missing: the output begins with start_symbol, then the words")
            if len(got) > max_len:
                raise Hint(f"with max_len={max_len} you returned {len(got)} ids; max_len counts every id, <s> included")
            if got[: len(want)] == want and len(got) > len(want):
                raise Hint(f"you went on after </s> (id {EOS}): stop as soon as end_symbol is produced")
            if len(got) > 1 and all(g == got[1] for g in got[1:]) and len(set(want[1:])) > 1:
                raise Hint(
                    "you keep producing the same word: predict from the LAST position, "
                    "model.generator(hidden[:, -1]), not the first"
                )
            raise Hint(f"for max_len={max_len}, start_symbol={start} expected {want}, got {got}")

    return run_check("greedy decoding", check, "passed: the most likely word at each step, stopping at </s>")


def check_beam_score(beam_score) -> Result:
    """``beam_score(log_prob, length, alpha)`` = log_prob / lp(length), lp = ((5 + length) / 6)^α (GNMT)."""

    def check():
        for log_prob, length, alpha in [
            (-2.4, 3, 0.6),
            (-3.0, 8, 0.6),
            (-3.0, 8, 0.0),
            (-5.0, 20, 1.0),
            (-1.0, 1, 0.6),
        ]:
            want = log_prob / ((5 + length) / 6) ** alpha
            got = beam_score(log_prob, length, alpha)
            if isinstance(got, Tensor):
                got = got.item()
            if not isinstance(got, (int, float)):
                raise Hint(f"return a number, got {type(got).__name__}")
            if math.isclose(got, want, rel_tol=1e-6):
                continue
            if alpha > 0 and math.isclose(got, log_prob * ((5 + length) / 6) ** alpha, rel_tol=1e-6):
                raise Hint(
                    "you multiplied by lp(Y); divide: score = log P / lp(Y), so a longer sentence's "
                    "(more negative) log P is shrunk"
                )
            if alpha > 0 and math.isclose(got, log_prob / length**alpha, rel_tol=1e-6):
                raise Hint("lp(Y) is ((5 + |Y|) / 6)^α, not |Y|^α: the 5 and the 6 soften it for short sentences")
            if math.isclose(got, log_prob / ((5 + length) / 6), rel_tol=1e-6):
                raise Hint("the power α is missing: lp(Y) = ((5 + |Y|) / 6)^α")
            raise Hint(f"beam_score({log_prob}, {length}, {alpha}) = {got:.4f}, expected {want:.4f}")

    return run_check("beam score", check, "passed: log P / ((5 + |Y|) / 6)^α")


def _reference_top_k(beam_log_probs: Tensor, next_log_probs: Tensor, k: int):
    candidates = []
    for b in range(next_log_probs.size(0)):
        for w in range(next_log_probs.size(1)):
            candidates.append((float(beam_log_probs[b] + next_log_probs[b, w]), b, w))
    candidates.sort(key=lambda c: -c[0])
    best = candidates[:k]
    return (torch.tensor([c[0] for c in best]), torch.tensor([c[1] for c in best]), torch.tensor([c[2] for c in best]))


def check_top_k_extensions(top_k_extensions) -> Result:
    """``top_k_extensions(beam_log_probs (k,), next_log_probs (k, V), k)`` → ``(scores (k,), beam (k,), word (k,))``:
    the k best one-word extensions over all beams, best first."""

    def check():
        g = torch.Generator().manual_seed(9)
        beam_log_probs = torch.tensor([-0.5, -1.2, -3.0])  # (k,), best beam first
        next_log_probs = torch.randn(3, 7, generator=g).mul(2).log_softmax(-1)  # (k, V)
        next_log_probs[2, 5] = -0.01  # the weakest beam has the single most likely next word
        k = 3
        want_scores, want_beam, want_word = _reference_top_k(beam_log_probs, next_log_probs, k)
        got = top_k_extensions(beam_log_probs.clone(), next_log_probs.clone(), k)
        if not isinstance(got, tuple) or len(got) != 3:
            raise Hint("return three tensors: (scores, beam, word)")
        scores, beam, word = got
        if isinstance(scores, Tensor) and scores.shape == (k,):
            plain = next_log_probs.flatten().topk(k).values
            if torch.allclose(scores.float(), plain, atol=1e-5):
                raise Hint(
                    "the scores ignore the beams' own log-probabilities: a candidate's score is "
                    "beam_log_probs[b] + next_log_probs[b, w]"
                )
        expect_tensor(scores, want_scores, "scores", atol=1e-5)
        if isinstance(beam, Tensor) and isinstance(word, Tensor):
            V = next_log_probs.size(1)
            flat = want_beam * V + want_word
            if torch.equal(beam.long(), flat % k) or torch.equal(word.long(), flat // k):
                raise Hint("the flat index over (k, V) is beam · V + word: beam = index // V, word = index % V")
            if torch.equal(beam.long(), want_word) and torch.equal(word.long(), want_beam):
                raise Hint("beam and word are swapped")
        expect_tensor(beam, want_beam.to(beam.dtype) if isinstance(beam, Tensor) else want_beam, "beam")
        expect_tensor(word, want_word.to(word.dtype) if isinstance(word, Tensor) else want_word, "word")

    return run_check("top-k extensions", check, "passed: the k best (beam, word) pairs over all beams at once")

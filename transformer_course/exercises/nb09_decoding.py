"""Checkers for the exercises of notebook 09 (decoding: greedy, beam search, length penalty; paper §6.1).

from transformer_course.exercises import nb09_decoding as ex
ex.check_predictions(greedy_prediction, beam_prediction)  # predict greedy and beam search on a table model
ex.check_top_k_extensions(top_k_extensions)               # one batched beam step
ex.check_crossover_alpha(crossover_alpha)                 # where the length penalty changes the winner
ex.check_cache_numbers(cache_numbers)                     # the memory of the key/value cache
ex.check_quiz(q1=..., q2=..., q3=...)

Numbers may be a Python int or float, a numpy scalar or a one-number tensor; lists may be lists or tuples.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from ..i18n import lazy_t, register, t
from . import Choice, Hint, Numeric, Result, as_int, as_number, as_sequence, expect_tensor, run_check
from . import check_quiz as _check_quiz
from .zh.nb09_decoding import ZH

register("zh", ZH)

__all__ = [
    "TableModel",
    "WORDS",
    "EXERCISE_TABLE",
    "exercise_model",
    "check_predictions",
    "check_top_k_extensions",
    "crossover_by_bisection",
    "CROSSOVER_CASES",
    "check_crossover_alpha",
    "counted_cache_numbers",
    "CACHE_CASES",
    "check_cache_numbers",
    "QUESTIONS",
    "check_quiz",
]

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


# ---------------------------------------------------------------------------------------------------
# Exercise 1: predict what greedy decoding and beam search write

WORDS = ["<pad>", "<unk>", "<s>", "</s>", "A", "B", "C"]
A, B, C = 4, 5, 6
# The notebook's exercise table: P(next word | last word). Greedy and beam search (k = 2) disagree on it.
EXERCISE_TABLE = {
    BOS: {A: 0.5, B: 0.4, C: 0.1},
    A: {EOS: 0.2, A: 0.1, B: 0.3, C: 0.4},
    B: {EOS: 0.1, A: 0.1, B: 0.1, C: 0.7},
    C: {EOS: 0.9, A: 0.05, B: 0.03, C: 0.02},
    EOS: {EOS: 1.0},
}


def exercise_model() -> TableModel:
    return TableModel(_table(EXERCISE_TABLE, len(WORDS)))


def _decoded_words(beam_size: int) -> list[str]:
    """The package's greedy decoding (beam_size 1) or beam search (α = 0) on the exercise table, as words."""
    from ..decode import beam_search, greedy_decode

    model = exercise_model()
    src, src_mask = torch.tensor([[A]]), torch.ones(1, 1, 1, 1, dtype=torch.bool)  # the source is ignored
    with torch.no_grad():
        if beam_size == 1:
            ids = greedy_decode(model, src, src_mask, 10, BOS, EOS)[0]
        else:
            ids = beam_search(model, src, src_mask, 10, BOS, EOS, beam_size=beam_size, length_penalty=0.0)[0]
    return [WORDS[i] for i in ids[1:].tolist() if i != PAD]  # without <s>


def _as_words(answer, what: str) -> list[str]:
    words = as_sequence(answer, None, what)
    if not all(isinstance(w, str) for w in words):
        raise Hint(t("{what}: write the words as strings, e.g. ['A', 'B', '</s>']", what=what))
    words = [w.strip() for w in words]
    if words and words[0] == "<s>":  # allowed: with or without the start symbol
        words = words[1:]
    unknown = [w for w in words if w not in WORDS[3:]]
    if unknown:
        raise Hint(
            t("{what}: {unknown} are not words of the table; use 'A', 'B', 'C' and '</s>'", what=what, unknown=unknown)
        )
    return words


def check_predictions(greedy_prediction, beam_prediction) -> Result:
    """Both predictions are lists or tuples of words ('A', 'B', 'C', '</s>'), the output after <s> (a
    leading '<s>' may be written or not), up to and including '</s>'."""

    def check():
        if greedy_prediction is ... or beam_prediction is ...:
            raise NotImplementedError
        greedy = _as_words(greedy_prediction, "greedy_prediction")
        beam = _as_words(beam_prediction, "beam_prediction")
        want_greedy, want_beam = _decoded_words(1), _decoded_words(2)
        for got, want, what in ((greedy, want_greedy, "greedy_prediction"), (beam, want_beam, "beam_prediction")):
            if got and got[-1] != "</s>" and got + ["</s>"] == want:
                raise Hint(t("{what}: the output ends with '</s>'; write it too", what=what))
        if greedy != want_greedy:
            if greedy == want_beam:
                raise Hint(
                    t(
                        "greedy_prediction is the better sentence, but greedy cannot find it: it takes the most "
                        "likely word at each step (0.5 for A at the first step) and never goes back"
                    )
                )
            raise Hint(t("greedy_prediction: follow the largest probability of each row, starting from the row <s>"))
        if beam != want_beam:
            if beam == want_greedy:
                raise Hint(
                    t(
                        "beam_prediction equals greedy: beam search keeps the 2 best prefixes at each step, so B "
                        "(0.4) survives the first step; compare the products of the probabilities at step 2"
                    )
                )
            if beam == ["B", "</s>"]:
                raise Hint(t("beam_prediction: B </s> has P = 0.4 · 0.1; B is far more often followed by C"))
            raise Hint(
                t(
                    "beam_prediction: at each step extend both prefixes by every word, multiply the "
                    "probabilities, keep the best 2; a prefix that ends in </s> is finished"
                )
            )

    return run_check(
        t("predictions"), check, t("passed: greedy says A C </s> (P = 0.18), beam search B C </s> (P = 0.252)")
    )


# ---------------------------------------------------------------------------------------------------
# Exercise 2: one batched beam step


def _reference_top_k(beam_log_probs: Tensor, next_log_probs: Tensor, k: int):
    candidates = []
    for b in range(next_log_probs.size(0)):
        for w in range(next_log_probs.size(1)):
            candidates.append((float(beam_log_probs[b] + next_log_probs[b, w]), b, w))
    candidates.sort(key=lambda c: -c[0])
    best = candidates[:k]
    return (torch.tensor([c[0] for c in best]), torch.tensor([c[1] for c in best]), torch.tensor([c[2] for c in best]))


def check_top_k_extensions(top_k_extensions) -> Result:
    """``top_k_extensions(beam_log_probs (k,), next_log_probs (k, V), k)`` → ``(scores (k,), beam (k,), word (k,))``
    as a tuple or a list: the k best one-word extensions over all beams, best first. ``beam`` and ``word`` may
    have any integer dtype."""

    def check():
        g = torch.Generator().manual_seed(9)
        beam_log_probs = torch.tensor([-0.5, -1.2, -3.0])  # (k,), best beam first
        next_log_probs = torch.randn(3, 7, generator=g).mul(2).log_softmax(-1)  # (k, V)
        next_log_probs[2, 5] = -0.01  # the weakest beam has the single most likely next word
        k = 3
        want_scores, want_beam, want_word = _reference_top_k(beam_log_probs, next_log_probs, k)
        got = top_k_extensions(beam_log_probs.clone(), next_log_probs.clone(), k)
        scores, beam, word = as_sequence(got, 3, t("the result of top_k_extensions, (scores, beam, word),"))
        if isinstance(scores, Tensor) and scores.shape == (k,):
            plain = next_log_probs.flatten().topk(k).values
            if torch.allclose(scores.float(), plain, atol=1e-5):
                raise Hint(
                    t(
                        "the scores ignore the beams' own log-probabilities: a candidate's score is "
                        "beam_log_probs[b] + next_log_probs[b, w]"
                    )
                )
        expect_tensor(scores, want_scores, "scores", atol=1e-5)
        if isinstance(beam, Tensor) and isinstance(word, Tensor):
            V = next_log_probs.size(1)
            flat = want_beam * V + want_word
            if torch.equal(beam.long(), flat % k) or torch.equal(word.long(), flat // k):
                raise Hint(t("the flat index over (k, V) is beam · V + word: beam = index // V, word = index % V"))
            if torch.equal(beam.long(), want_word) and torch.equal(word.long(), want_beam):
                raise Hint(t("beam and word are swapped"))
        expect_tensor(beam, want_beam.to(beam.dtype) if isinstance(beam, Tensor) else want_beam, "beam")
        expect_tensor(word, want_word.to(word.dtype) if isinstance(word, Tensor) else want_word, "word")

    return run_check(t("top-k extensions"), check, t("passed: the k best (beam, word) pairs over all beams at once"))


# ---------------------------------------------------------------------------------------------------
# Exercise 3: the α at which the length penalty changes the winner


def _score(log_p: float, length: int, alpha: float) -> float:
    return log_p / ((5 + length) / 6) ** alpha  # GNMT's length penalty (Wu et al., 2016), as the paper uses it


def crossover_by_bisection(log_p_short: float, len_short: int, log_p_long: float, len_long: int) -> float:
    """The α where both scores are equal, found by bisection on the scores themselves (no formula)."""
    low, high = 0.0, 10.0  # the short one wins at α = 0, the long one at α = 10 in every checker case
    for _ in range(100):
        middle = (low + high) / 2
        if _score(log_p_short, len_short, middle) > _score(log_p_long, len_long, middle):
            low = middle  # the short hypothesis still wins: the crossover is further right
        else:
            high = middle
    return (low + high) / 2


# (log P short, |Y| short, log P long, |Y| long): the long one is less likely as a whole, better per word
CROSSOVER_CASES = [(-4.0, 4, -5.2, 12), (-2.0, 3, -3.5, 20), (-6.0, 10, -6.6, 11)]


def check_crossover_alpha(crossover_alpha) -> Result:
    """``crossover_alpha(log_p_short, len_short, log_p_long, len_long)`` → the α at which both hypotheses
    get the same score log P / ((5 + |Y|) / 6)^α (below it the short one wins, above it the long one)."""

    def check():
        for case in CROSSOVER_CASES:
            log_p_s, n_s, log_p_l, n_l = case
            what = f"crossover_alpha{case}"
            got = as_number(crossover_alpha(*case), what)
            want = crossover_by_bisection(*case)
            if math.isclose(got, want, rel_tol=1e-6, abs_tol=1e-9):
                continue
            mistakes = {
                t("lp(Y) uses 5 + |Y|, not |Y|: the ratio of the penalties is (5 + |Y_long|) / (5 + |Y_short|)"): (
                    math.log(log_p_l / log_p_s) / math.log(n_l / n_s)
                ),
                t(
                    "the sign is flipped: at α = 0 the short hypothesis wins, so the crossover is a positive α "
                    "(put log P_long / log P_short over (5 + |Y_long|) / (5 + |Y_short|))"
                ): -want,
                t("the scores are quotients, so compare the ratio log P_long / log P_short, not the difference"): (
                    (log_p_l - log_p_s) / math.log((5 + n_l) / (5 + n_s))
                ),
            }
            for hint, value in mistakes.items():
                if math.isclose(got, value, rel_tol=1e-6):
                    raise Hint(t("{what} = {got:.4f}: {hint}", what=what, got=got, hint=hint))
            raise Hint(
                t("{what} = {got:.4f}, but the scores are equal at α = {want:.4f}", what=what, got=got, want=want)
            )

    return run_check(
        t("crossover α"), check, t("passed: α = ln(log P_long / log P_short) / ln((5 + |Y_long|) / (5 + |Y_short|))")
    )


# ---------------------------------------------------------------------------------------------------
# Exercise 4: how many numbers the key/value cache holds


def _numbers_in(obj, seen=None) -> int:
    """Count the numbers in every tensor reachable from ``obj``'s attributes (lists and objects walked)."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return 0
    seen.add(id(obj))
    if isinstance(obj, Tensor):
        return obj.numel()
    if isinstance(obj, (list, tuple)):
        return sum(_numbers_in(o, seen) for o in obj)
    if hasattr(obj, "__dict__"):
        return sum(_numbers_in(o, seen) for o in vars(obj).values())
    return 0


def counted_cache_numbers(batch: int, layers: int, heads: int, d_k: int, t: int, src_len: int) -> int:
    """Run a small model of these sizes for t decoding steps with the package's cache and count what it stores."""
    from ..model import make_model

    torch.manual_seed(0)
    model = make_model(11, 11, N=layers, d_model=heads * d_k, d_ff=8, h=heads, dropout=0.0).eval()
    src = torch.randint(4, 11, (batch, src_len))  # (batch, S)
    src_mask = torch.ones(batch, 1, 1, src_len, dtype=torch.bool)
    cache = model.new_cache()
    with torch.no_grad():
        memory = model.encode(src, src_mask)  # (batch, S, d_model)
        word = torch.full((batch, 1), BOS)  # (batch, 1)
        for _ in range(t):  # the decoder reads t tokens, <s> first, one per step
            hidden = model.decode(memory, src_mask, word, None, cache)  # (batch, 1, d_model)
            word = model.generator(hidden[:, -1]).argmax(-1, keepdim=True)  # (batch, 1)
    return _numbers_in(cache)


# (batch, layers, heads, d_k, t, src_len): all different, so each mistake shows
CACHE_CASES = [(2, 3, 4, 5, 6, 7), (3, 2, 2, 8, 9, 4)]


def check_cache_numbers(cache_numbers) -> Result:
    """``cache_numbers(batch, layers, heads, d_k, t, src_len)``: how many numbers the decoder's cache holds
    after the decoder has read t tokens (<s> included), self- and cross-attention of every layer."""

    def check():
        for case in CACHE_CASES:
            batch, layers, heads, d_k, read, src_len = case  # read: the t tokens read
            what = (
                f"cache_numbers(batch={batch}, layers={layers}, heads={heads}, d_k={d_k}, t={read}, src_len={src_len})"
            )
            got = as_int(cache_numbers(*case), what)
            want = counted_cache_numbers(*case)
            if got == want:
                continue
            per = batch * heads * d_k  # one position of one layer's keys (or values)
            mistakes = {
                t("the values are missing: each attention keeps its keys AND its values"): want // 2,
                t("the cross-attention is missing: it keeps the projected memory, src_len positions per layer"): (
                    2 * layers * per * read
                ),
                t("that is one layer: every decoder layer keeps its own cache"): want // layers,
                t("the self-attention holds t positions after t tokens were read, not t + 1"): (
                    2 * layers * per * (read + 1 + src_len)
                ),
                t("the cross-attention's length is the source's, src_len, not t"): 2 * layers * per * (2 * read),
            }
            for hint, value in mistakes.items():
                if got == value:
                    raise Hint(t("{what} = {got:,}: {hint}", what=what, got=got, hint=hint))
            raise Hint(t("{what} = {got:,}; the package's cache holds {want:,} numbers", what=what, got=got, want=want))

    return run_check(t("cache numbers"), check, t("passed: 2 · layers · batch · heads · d_k · (t + src_len)"))


# ---------------------------------------------------------------------------------------------------
# Questions

QUESTIONS = {
    "q1": Choice(
        key="nb09-q1",
        digest="d38cda64a0414622b1868e54",
        letters="abc",
        why=lazy_t("with the causal mask, position i never reads later positions, so its keys and values never change"),
        wrong={
            "a": lazy_t(
                "eval mode turns dropout off, but that is not why old keys stay valid: without the causal mask a new "
                "word would change every earlier position's output, in every layer above the first"
            ),
            "c": lazy_t(
                "that is true of the cross-attention's keys and values only; the self-attention's keys come from "
                "the target words, which grow by one each step"
            ),
        },
    ),
    "q2": Numeric(
        key="nb09-q2",
        digests=("d4edfdd175438ad02b17a4c6",),
        why=lazy_t(
            "each of the k = 4 prefixes is extended by each of the 6,190 words: 24,760 candidates, one topk over them"
        ),
        mistakes={
            lazy_t("that is one prefix's extensions; all k = 4 prefixes are extended"): 6190,
            lazy_t("the beam keeps k prefixes, but it scores every word after each of them"): 4 * 4,
        },
        rel_tol=0,
        otherwise=lazy_t("count the (prefix, next word) pairs"),
    ),
    "q3": Choice(
        key="nb09-q3",
        digest="3054cfe9c375147058c9fcd6",
        letters="abc",
        why=lazy_t("every word multiplies P by a number below 1, so plain log P (α = 0) favours short outputs"),
        wrong={
            "b": lazy_t("it is the other way round: α = 1 divides log P by about the length, which helps long outputs"),
            "c": lazy_t("log P falls with every word; only the length penalty makes up for it"),
        },
    ),
}


def check_quiz(**answers) -> Result:
    """``check_quiz(q1="b", q2=123, q3="a")``: one line per question."""
    return _check_quiz(QUESTIONS, answers)

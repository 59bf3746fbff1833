"""Checkers for the exercises of notebook 09 (decoding: greedy, beam search, length penalty; paper §6.1).

from transformer_course.exercises import nb09_decoding as ex
ex.check_table_design(table_design)        # a table on which greedy, beam k = 2 and beam k = 3 all differ
ex.check_top_k_extensions(top_k_extensions)  # one batched beam step
ex.check_crossover_alpha(crossover_alpha)    # where the length penalty changes the winner
ex.check_cache_numbers(cache_numbers)        # the memory of the key/value cache, as a closed form
ex.check_quiz(q1=..., q2=..., q3=...)
"""

from __future__ import annotations

import itertools
import math

import torch
from torch import Tensor, nn

from ..decode import beam_search as _PACKAGE_BEAM_SEARCH  # the references, bound at import
from ..decode import greedy_decode as _PACKAGE_GREEDY_DECODE
from ..i18n import messages
from ..model import make_model as _PACKAGE_MAKE_MODEL
from . import Hint, as_int, as_number, as_sequence, checker, expect_tensor, questions, quiz_checker
from .guard import no_shortcuts, read_only
from .seal import answer_check

t, lazy_t = messages("nb09_decoding")

__all__ = [
    "check_table_design",
    "check_top_k_extensions",
    "check_crossover_alpha",
    "check_cache_numbers",
    "QUESTIONS",
    "check_quiz",
]

_PAD, _BOS, _EOS = 0, 2, 3
_WORDS = ("<pad>", "<unk>", "<s>", "</s>", "A", "B", "C")


class _NoCache:
    def __len__(self) -> int:
        return 0

    def reorder(self, index: Tensor) -> None:
        pass


class _TableModel(nn.Module):
    """A hand-built "model" whose next word depends only on the last word: log P(next | last) = log table[last].

    It has the interface of the course's Transformer (``encode``, ``decode``, ``generator``, ``new_cache``);
    the source is ignored. ``decode`` returns the one-hot of each target token as its "hidden state" and
    the generator multiplies it with the log-probability table, so position t's logits are log table[tgt[t]].
    """

    def __init__(self, probs: Tensor) -> None:
        super().__init__()
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


# ---------------------------------------------------------------------------------------------------
# Exercise 1: design a table on which greedy decoding, beam search with k = 2 and with k = 3 all write
# different sentences, and only k = 3 finds the most likely one

_MAX_LEN = 8  # <s> + at most 7 tokens, </s> included
_ROWS = ("<s>", "A", "B", "C")
_NEXT = ("</s>", "A", "B", "C")


def _as_table(table) -> Tensor:
    """The learner's {row word: {next word: P}} as a (7, 7) table of P(next | last); a Hint for a bad one."""
    if table is ... or table is None:
        raise NotImplementedError
    if not isinstance(table, dict):
        raise Hint(t("table_design_dict", type=type(table).__name__))
    unknown = sorted(str(row) for row in table if row not in _ROWS)
    if unknown:
        raise Hint(t("not_rows_table", unknown=unknown))
    missing = [row for row in _ROWS if row not in table]
    if missing:
        raise Hint(t("table_design_no", missing=missing))
    probs = torch.full((len(_WORDS), len(_WORDS)), 1e-12, dtype=torch.float64)  # a word left out: P ≈ 0 (not log 0)
    probs[_EOS, _EOS] = 1.0  # a finished sentence stays finished
    for row in _ROWS:
        nexts = table[row]
        if not isinstance(nexts, dict):
            raise Hint(t("row_dict_next", row=row, type=type(nexts).__name__))
        bad = sorted(str(word) for word in nexts if word not in _NEXT)
        if bad:
            raise Hint(t("row_not_words", row=row, bad=bad))
        for word, p in nexts.items():
            p = as_number(p, t("word_given_row", word=word, row=row))
            if not 0 <= p <= 1:
                raise Hint(t("p_probability_lies", word=word, row=row, p=p))
            probs[_WORDS.index(row), _WORDS.index(word)] = max(p, 1e-12)
        total = sum(as_number(p, "p") for p in nexts.values())
        if not math.isclose(total, 1.0, abs_tol=1e-6):
            raise Hint(t("row_sums_each", row=row, total=total))
    return probs


def _sentence(ids) -> tuple[str, ...]:
    """Token ids (with <s>, maybe padded) → the words after <s>."""
    return tuple(_WORDS[i] for i in ids if i not in (_PAD, _BOS))


def _log_p(words: tuple[str, ...], probs: Tensor) -> float:
    ids = [_BOS, *(_WORDS.index(w) for w in words)]
    return sum(math.log(float(probs[a, b])) for a, b in zip(ids, ids[1:]))


def _show(words: tuple[str, ...], probs: Tensor) -> str:
    return f"{' '.join(words) or '(empty)'} (P = {math.exp(_log_p(words, probs)):.4f})"


@answer_check
@checker(lazy_t("table_design"), lazy_t("passed_greedy_beam"))
def check_table_design(table_design):
    """``table_design``: {'<s>': {...}, 'A': {...}, 'B': {...}, 'C': {...}}, each row a dict next word →
    probability (next words '</s>', 'A', 'B', 'C'; a word left out has probability 0; each row sums to 1). The
    checker decodes the table with the package's greedy_decode and beam_search (α = 0, at most 7 tokens after
    <s>) and finds the most likely sentence by trying them all."""
    beam_search, greedy_decode = _PACKAGE_BEAM_SEARCH, _PACKAGE_GREEDY_DECODE

    probs = _as_table(table_design)
    model = _TableModel(probs.float().clamp_min(1e-30))
    src, mask = torch.tensor([[4]]), torch.ones(1, 1, 1, 1, dtype=torch.bool)  # the source is ignored
    with torch.no_grad():
        greedy = _sentence(greedy_decode(model, src, mask, _MAX_LEN, _BOS, _EOS)[0].tolist())
        beam = {
            k: _sentence(
                beam_search(model, src, mask, _MAX_LEN, _BOS, _EOS, beam_size=k, length_penalty=0.0)[0].tolist()
            )
            for k in (2, 3)
        }
    sentences = [
        (*words, "</s>") for n in range(_MAX_LEN - 1) for words in itertools.product(("A", "B", "C"), repeat=n)
    ]
    ranked = sorted(sentences, key=lambda words: -_log_p(words, probs))
    best = ranked[0]
    if math.isclose(_log_p(ranked[0], probs), _log_p(ranked[1], probs), rel_tol=1e-6, abs_tol=1e-9):
        raise Hint(t("two_sentences_tie", a=_show(ranked[0], probs), b=_show(ranked[1], probs)))
    if not greedy or greedy[-1] != "</s>":
        raise Hint(t("greedy_decoding_writes", sentence=" ".join(greedy), n=_MAX_LEN - 1))
    if greedy == best:
        raise Hint(t("greedy_decoding_already", sentence=_show(best, probs)))
    if beam[2] == greedy:
        raise Hint(t("beam_k2_equals_greedy", sentence=_show(greedy, probs)))
    if beam[2] == best:
        raise Hint(t("beam_k2_finds_best", sentence=_show(best, probs)))
    if beam[3] != best:
        raise Hint(t("beam_k3_misses_best", got=_show(beam[3], probs), best=_show(best, probs)))


# ---- Exercise 2: one batched beam step ------------------------------------------------------------------------------


@checker(lazy_t("top_k_extensions"), lazy_t("passed_k_best"))
def check_top_k_extensions(top_k_extensions):
    """``top_k_extensions(beam_log_probs (k,), next_log_probs (k, V), k)`` → ``(scores (k,), beam (k,), word (k,))``
    as a tuple or a list: the k best one-word extensions over all beams, best first. ``beam`` and ``word`` may
    have any integer dtype."""
    g = torch.Generator().manual_seed(9)
    beam_log_probs = torch.tensor([-0.5, -1.2, -3.0])  # (k,), best beam first
    next_log_probs = torch.randn(3, 7, generator=g).mul(2).log_softmax(-1)  # (k, V)
    next_log_probs[2, 5] = -0.01  # the weakest beam has the single most likely next word
    k, V = 3, next_log_probs.size(1)
    candidates = sorted(
        ((float(beam_log_probs[b] + next_log_probs[b, w]), b, w) for b in range(k) for w in range(V)),
        key=lambda c: -c[0],
    )[:k]  # every (beam, word) pair, one by one: the k best
    want_scores = torch.tensor([c[0] for c in candidates])
    want_beam, want_word = torch.tensor([c[1] for c in candidates]), torch.tensor([c[2] for c in candidates])
    with no_shortcuts(t("beam_step")):
        got = top_k_extensions(beam_log_probs.clone(), next_log_probs.clone(), k)
    scores, beam, word = as_sequence(got, 3, t("result_top_k"))
    if isinstance(scores, Tensor) and scores.shape == (k,):
        plain = next_log_probs.flatten().topk(k).values
        if torch.allclose(scores.float(), plain, atol=1e-5):
            raise Hint(t("scores_ignore_beams"))
    expect_tensor(scores, want_scores, "scores", atol=1e-5)
    if isinstance(beam, Tensor) and isinstance(word, Tensor):
        flat = want_beam * V + want_word
        if torch.equal(beam.long(), flat % k) or torch.equal(word.long(), flat // k):
            raise Hint(t("flat_index_over"))
        if torch.equal(beam.long(), want_word) and torch.equal(word.long(), want_beam):
            raise Hint(t("beam_word_swapped"))
    expect_tensor(beam, want_beam.to(beam.dtype) if isinstance(beam, Tensor) else want_beam, "beam")
    expect_tensor(word, want_word.to(word.dtype) if isinstance(word, Tensor) else want_word, "word")


# ---- Exercise 3: the α at which the length penalty changes the winner -----------------------------------------------

# (log P short, |Y| short, log P long, |Y| long): the long one is less likely as a whole, better per word.
# The last pair's scores meet only beyond α = 10, where a search over a fixed range [0, 10] stops.
_CROSSOVER_CASES = [(-4.0, 4, -5.2, 12), (-2.0, 3, -3.5, 20), (-6.0, 10, -12.0, 11)]


def _gap(case: tuple, alpha: float) -> float:
    """(score of the long hypothesis − score of the short one) / |score of the short one| at ``alpha``: it rises
    with α, below 0 where the short one wins."""
    log_p_s, n_s, log_p_l, n_l = case
    try:
        short, long = log_p_s / ((5 + n_s) / 6) ** alpha, log_p_l / ((5 + n_l) / 6) ** alpha
    except OverflowError:
        return math.inf
    return (long - short) / abs(short)


@checker(lazy_t("crossover_alpha_name"), lazy_t("passed_ln_log"))
def check_crossover_alpha(crossover_alpha):
    """``crossover_alpha(log_p_short, len_short, log_p_long, len_long)`` → the α at which both hypotheses
    get the same score log P / ((5 + |Y|) / 6)^α (below it the short one wins, above it the long one).
    The check is that the two scores are equal at the returned α (there is one such α)."""
    for case in _CROSSOVER_CASES:
        log_p_s, n_s, log_p_l, n_l = case
        what = f"crossover_alpha{case}"
        with no_shortcuts(t("crossover"), allow=("transformer_course.decode", "transformer_course.beam")):
            answer = crossover_alpha(*case)
        got = as_number(answer, what)

        if math.isfinite(got) and abs(_gap(case, got)) < 1e-7:
            continue
        # where the scores meet, found by halving an interval that surely holds it (the gap rises with α)
        low, high = 0.0, 1.0
        while _gap(case, high) < 0:
            high *= 2
        for _ in range(200):
            low, high = (low, (low + high) / 2) if _gap(case, (low + high) / 2) >= 0 else ((low + high) / 2, high)
        want = (low + high) / 2
        mistakes = {
            t("lp_y_uses"): (math.log(log_p_l / log_p_s) / math.log(n_l / n_s)),
            t("sign_flipped_0"): -want,
            t("scores_quotients_compare"): ((log_p_l - log_p_s) / math.log((5 + n_l) / (5 + n_s))),
        }
        for hint, value in mistakes.items():
            if math.isclose(got, value, rel_tol=1e-6):
                raise Hint(t("what_got_hint", what=what, got=got, hint=hint))
        if want > 10 and 0 <= got <= 10:
            raise Hint(t("here_scores_equal", what=what, got=got, want=want))
        raise Hint(t("but_scores_equal", what=what, got=got, want=want))


# ---- Exercise 4: how many numbers the key/value cache holds ---------------------------------------------------------


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


# (batch, layers, heads, d_k, t, src_len): small enough to build and count; chosen so that every mistake
# below gives its own number (tests/test_exercises_nb09.py checks that)
_CACHE_CASES = [(2, 3, 4, 5, 6, 11), (3, 4, 2, 8, 9, 5)]
# too large to build (48 layers of d_model 4096: about 10 billion weights): a closed form only
_BIG_CACHE_CASE = (256, 48, 32, 128, 2048, 1024)


@checker(lazy_t("cache_numbers"), lazy_t("passed_cache_formula"))
def check_cache_numbers(cache_numbers):
    """``cache_numbers(batch, layers, heads, d_k, t, src_len)``: how many numbers the decoder's cache holds
    after the decoder has read t tokens (<s> included), self- and cross-attention of every layer. Checked
    against the package's cache, counted after decoding with a model of those sizes, and then on a
    configuration far too large to build."""

    def counted(batch: int, layers: int, heads: int, d_k: int, read: int, src_len: int) -> int:
        make_model = _PACKAGE_MAKE_MODEL

        torch.manual_seed(0)
        model = make_model(11, 11, N=layers, d_model=heads * d_k, d_ff=8, h=heads, dropout=0.0).eval()
        src = torch.randint(4, 11, (batch, src_len))  # (batch, S)
        src_mask = torch.ones(batch, 1, 1, src_len, dtype=torch.bool)
        cache = model.new_cache()
        with torch.no_grad():
            memory = model.encode(src, src_mask)  # (batch, S, d_model)
            word = torch.full((batch, 1), _BOS)  # (batch, 1)
            for _ in range(read):  # the decoder reads t tokens, <s> first, one per step
                hidden = model.decode(memory, src_mask, word, None, cache)  # (batch, 1, d_model)
                word = model.generator(hidden[:, -1]).argmax(-1, keepdim=True)  # (batch, 1)
        return _numbers_in(cache)

    for case in [*_CACHE_CASES, _BIG_CACHE_CASE]:
        batch, layers, heads, d_k, read, src_len = case  # read: the t tokens read
        what = f"cache_numbers(batch={batch}, layers={layers}, heads={heads}, d_k={d_k}, t={read}, src_len={src_len})"
        with no_shortcuts(t("count")):
            answer = cache_numbers(*case)
        got = as_int(answer, what)
        if case == _BIG_CACHE_CASE:
            entry = QUESTIONS["cache_big"].unlock(got)  # locked with the right count (.answer_key)
            if entry is None or not entry["right"]:
                raise Hint(t("right_small_models", what=what, got=got))
            continue
        want = counted(*case)
        if got == want:
            continue
        per = batch * heads * d_k  # one position of one layer's keys (or values)
        mistakes = {
            t("values_missing_each"): want // 2,
            t("cross_attention_missing"): (2 * layers * per * read),
            t("layer_every_decoder"): want // layers,
            t("self_attention_holds"): (2 * layers * per * (read + 1 + src_len)),
            t("self_attention_holds_t"): (2 * layers * per * (read - 1 + src_len)),
            t("cross_attentions_length"): 2 * layers * per * (2 * read),
        }
        for hint, value in mistakes.items():
            if got == value:
                raise Hint(t("answer_is_hint_count", what=what, got=got, hint=hint))
        raise Hint(t("packages_cache_holds", what=what, got=got, want=want))


# ---- Questions ------------------------------------------------------------------------------------------------------

QUESTIONS = questions(
    "nb09_decoding",
    lazy_t,
    q1="63f323e94458d78c05619d47",
    q2="db1e2204f6cff58fde0e15a0",
    q3="54b7d2b5887c230d6a6cf195",
    cache_big="d59ca697fd4abc38e06bc550",
)


check_quiz = quiz_checker({name: QUESTIONS[name] for name in ("q1", "q2", "q3")})  # one line per question

read_only(__name__)  # what the checks use stays what it was at import (ex.no_shortcuts = … is refused)

"""Next-token choice (transformer_course.sampling, notebook 12) against independent references: top-k and top-p's
kept sets against brute force over every subset of a small vocabulary (exact fractions), the sampler's draws
against the exact distribution (a chi-square test), the temperature's limits, and the LM's generation with
sampling on: cached equal to uncached token for token under a fixed seed."""

import itertools
import math
from fractions import Fraction

import pytest
import torch

from transformer_course.model import make_lm
from transformer_course.sampling import filter_top_k, filter_top_p, sample_next

SMALL = dict(N=2, d_model=32, d_ff=64, h=4, dropout=0.0)


def kept(filtered: torch.Tensor) -> set[int]:
    """The tokens a filter left: those whose score is not -inf."""
    return {i for i, x in enumerate(filtered.tolist()) if x != -math.inf}


# ---- top-k: the union of the k-subsets with the largest total score ---------------------------------------


def brute_force_top_k(scores: list[int], k: int) -> set[int]:
    """Every k-subset of the tokens, by its total score; the tokens of the best ones (several when tied)."""
    k = min(k, len(scores))
    subsets = list(itertools.combinations(range(len(scores)), k))
    best = max(sum(scores[i] for i in s) for s in subsets)
    return {i for s in subsets if sum(scores[i] for i in s) == best for i in s}


@pytest.mark.parametrize("seed", range(6))
def test_top_k_keeps_the_k_best_tokens_and_every_tie_at_the_cut(seed):
    g = torch.Generator().manual_seed(seed)
    for vocab in range(1, 7):
        scores = torch.randint(-2, 3, (vocab,), generator=g).tolist()  # few values: many ties
        for k in range(1, vocab + 2):  # k > vocab keeps everything
            assert kept(filter_top_k(torch.tensor(scores, dtype=torch.float), k)) == brute_force_top_k(scores, k)


def test_top_k_works_on_every_row_of_a_batch():
    logits = torch.tensor([[3.0, 1.0, 2.0, 0.0], [0.0, 5.0, 5.0, 1.0]])
    filtered = filter_top_k(logits, 2)
    assert [kept(row) for row in filtered] == [{0, 2}, {1, 2}]
    assert torch.equal(filtered[0, [0, 2]], logits[0, [0, 2]])  # the kept scores are unchanged


# ---- top-p: the most probable smallest sets that reach p --------------------------------------------------


def brute_force_top_p(weights: list[int], p: Fraction) -> set[int]:
    """Exact: probabilities w_i / Σw; the smallest size m of a subset whose probabilities sum to at least p; of the
    subsets of size m that reach p, those with the largest sum; the union of their tokens."""
    total = sum(weights)
    probs = [Fraction(w, total) for w in weights]
    for m in range(1, len(probs) + 1):
        reaching = [s for s in itertools.combinations(range(len(probs)), m) if sum(probs[i] for i in s) >= p]
        if reaching:
            best = max(sum(probs[i] for i in s) for s in reaching)
            return {i for s in reaching if sum(probs[i] for i in s) == best for i in s}
    raise AssertionError("the whole vocabulary reaches any p <= 1")


def logits_of(weights: list[int]) -> torch.Tensor:
    return torch.tensor([math.log(w) if w else -math.inf for w in weights], dtype=torch.float64)


@pytest.mark.parametrize("seed", range(6))
def test_top_p_keeps_the_smallest_most_probable_set_that_reaches_p(seed):
    g = torch.Generator().manual_seed(seed)
    for vocab in range(1, 7):
        weights = torch.randint(1, 6, (vocab,), generator=g).tolist()  # small integers: ties between tokens
        total = sum(weights)
        # p halfway between two multiples of 1/total, so no subset sums to p exactly (rounding cannot decide)
        for p in [Fraction(2 * j + 1, 2 * total) for j in range(total)] + [Fraction(1)]:
            assert kept(filter_top_p(logits_of(weights), float(p))) == brute_force_top_p(weights, p), (weights, p)


def test_top_p_keeps_the_token_that_crosses_p():
    logits = logits_of([5, 3, 2])  # probabilities 0.5, 0.3, 0.2
    assert kept(filter_top_p(logits, 0.5)) == {0}  # 0.5 reaches 0.5
    assert kept(filter_top_p(logits, 0.51)) == {0, 1}  # 0.5 does not; the 0.3 that crosses it is kept
    assert kept(filter_top_p(logits, 0.81)) == {0, 1, 2}


def test_top_p_always_keeps_one_token_and_p_1_keeps_all():
    logits = logits_of([1, 2, 3, 4])
    assert kept(filter_top_p(logits, 1e-9)) == {3}
    assert torch.equal(filter_top_p(logits, 1.0), logits)


def test_top_p_of_a_one_hot_distribution_keeps_its_token():
    logits = torch.tensor([-math.inf, 0.0, -math.inf, -math.inf])
    for p in (0.01, 0.5, 0.99, 1.0):
        assert kept(filter_top_p(logits, p)) == {1}


def test_top_p_keeps_more_of_a_flat_distribution_than_of_a_peaked_one():
    almost_flat, peaked = torch.linspace(0.0, 0.01, 10), torch.tensor([5.0] + [0.0] * 9)
    assert len(kept(filter_top_p(almost_flat, 0.5))) == 5  # each about 0.1: five reach 0.5
    assert len(kept(filter_top_p(peaked, 0.5))) == 1  # 0.94 alone


def test_top_p_of_an_exactly_flat_distribution_keeps_every_tied_token():
    assert kept(filter_top_p(torch.zeros(10), 0.5)) == set(range(10))  # no token is more probable than another


# ---- the draws against the exact distribution --------------------------------------------------------------


def chi2_sf(x: float, df: int) -> float:
    """P(X > x) for X ~ chi-square(df): 1 − P(df/2, x/2), the regularized lower incomplete gamma by its series."""
    s, z = df / 2, x / 2
    term = total = 1.0 / s
    n = 0
    while term > 1e-17 * total:
        n += 1
        term *= z / (s + n)
        total += term
    return max(0.0, 1.0 - math.exp(s * math.log(z) - z - math.lgamma(s)) * total) if z > 0 else 1.0


def test_chi2_sf_matches_its_closed_forms():
    for x in (0.5, 3.0, 12.0, 40.0):
        assert chi2_sf(x, 2) == pytest.approx(math.exp(-x / 2), abs=1e-12)
        assert chi2_sf(x, 4) == pytest.approx(math.exp(-x / 2) * (1 + x / 2), abs=1e-12)


def exact_distribution(logits: list[float], temperature: float, top_k=None, top_p=None) -> list[float]:
    """Written out in float64 lists: softmax(logits / T); keep the k most probable; renormalise; walk down the
    sorted probabilities until their sum reaches p; renormalise."""
    scaled = [x / temperature for x in logits]
    top = max(scaled)
    probs = [math.exp(x - top) for x in scaled]
    probs = [q / sum(probs) for q in probs]
    order = sorted(range(len(probs)), key=lambda i: -probs[i])
    if top_k is not None:
        probs = [q if i in order[:top_k] else 0.0 for i, q in enumerate(probs)]
        probs = [q / sum(probs) for q in probs]
    if top_p is not None:
        keep, mass = set(), 0.0
        for i in order:
            if mass >= top_p:
                break
            keep.add(i)
            mass += probs[i]
        probs = [q if i in keep else 0.0 for i, q in enumerate(probs)]
        probs = [q / sum(probs) for q in probs]
    return probs


def chi2_statistic(counts: list[int], probs: list[float]) -> tuple[float, int]:
    """Pearson's statistic over the tokens of nonzero probability, and its degrees of freedom."""
    n = sum(counts)
    cells = [(c, n * q) for c, q in zip(counts, probs) if q > 0]
    return sum((c - e) ** 2 / e for c, e in cells), len(cells) - 1


DRAWS = 20_000
# The threshold: a correct sampler's p-value falls below 1e-6 once in a million seeds. The seed is fixed, so the
# test gives the same answer every run; with 20,000 draws a mistake that moves a few percent of the probability
# gives a p-value far below it (the last test shows that it does, for three such mistakes).
P_VALUE = 1e-6
LOGITS = [2.0, 1.5, 1.0, 0.2, 0.0, -0.5, -1.5]  # distinct, so the cuts do not fall on a tie
SETTINGS = [dict(temperature=1.0), dict(temperature=0.7, top_k=4), dict(temperature=1.3, top_p=0.8)]
SETTINGS += [dict(temperature=0.8, top_k=5, top_p=0.7)]


def draw_counts(settings: dict, seed: int = 0) -> list[int]:
    g = torch.Generator().manual_seed(seed)
    ids = sample_next(torch.tensor(LOGITS).expand(DRAWS, -1), generator=g, **settings)  # (DRAWS, 1): one each
    return torch.bincount(ids.view(-1), minlength=len(LOGITS)).tolist()


@pytest.mark.parametrize("settings", SETTINGS, ids=lambda s: ",".join(f"{k}={v}" for k, v in s.items()))
def test_draws_follow_the_exact_distribution(settings):
    counts, probs = draw_counts(settings), exact_distribution(LOGITS, **settings)
    assert all(c == 0 for c, q in zip(counts, probs) if q == 0)  # a token cut off is never drawn
    statistic, df = chi2_statistic(counts, probs)
    assert chi2_sf(statistic, df) > P_VALUE, (counts, [round(DRAWS * q) for q in probs])


def test_the_chi_square_test_rejects_plausible_mistakes():
    counts = draw_counts(dict(temperature=1.3, top_p=0.8))
    one_too_few = exact_distribution(LOGITS, 1.3, top_p=0.8)
    last = min((i for i, q in enumerate(one_too_few) if q > 0), key=lambda i: one_too_few[i])
    one_too_few[last] = 0.0  # the token that crosses p dropped
    at_1_3, at_1 = exact_distribution(LOGITS, 1.3), exact_distribution(LOGITS, 1.0, top_p=0.8)  # T=1's cut
    at_1_3 = [q * (k > 0) for q, k in zip(at_1_3, at_1)]
    wrong = {
        "top-p before the temperature": [q / sum(at_1_3) for q in at_1_3],
        "no temperature": exact_distribution(LOGITS, 1.0, top_p=0.8),
        "the temperature multiplied": exact_distribution(LOGITS, 1 / 1.3, top_p=0.8),
        "a temperature of 1.2": exact_distribution(LOGITS, 1.2, top_p=0.8),
        "the cut one token too early": [q / sum(one_too_few) for q in one_too_few],
    }
    for mistake, probs in wrong.items():
        forbidden_drawn = any(c > 0 and q == 0 for c, q in zip(counts, probs))
        statistic, df = chi2_statistic(counts, probs)
        assert forbidden_drawn or chi2_sf(statistic, df) < P_VALUE, mistake


# ---- temperature, seeds, bad values --------------------------------------------------------------------------


def test_temperature_0_is_the_argmax_and_draws_nothing():
    logits = torch.randn(5, 11, generator=torch.Generator().manual_seed(0))
    g = torch.Generator().manual_seed(1)
    state = g.get_state()
    assert torch.equal(sample_next(logits, 0.0, top_k=3, top_p=0.5, generator=g), logits.argmax(-1, keepdim=True))
    assert torch.equal(g.get_state(), state)


def test_a_tiny_temperature_is_the_argmax_and_a_huge_one_is_uniform():
    logits = torch.tensor([[0.3, 2.0, -1.0, 1.9]])
    g = torch.Generator().manual_seed(0)
    for temperature in (1e-4, 1e-300):  # the scores are divided in float64: no inf − inf, no NaN
        assert sample_next(logits.expand(200, -1), temperature, generator=g).eq(1).all()
    counts = torch.bincount(sample_next(logits.expand(DRAWS, -1), 1e9, generator=g).view(-1), minlength=4)
    statistic, df = chi2_statistic(counts.tolist(), [0.25] * 4)
    assert chi2_sf(statistic, df) > P_VALUE


def test_top_k_1_is_greedy():
    logits = torch.randn(50, 9, generator=torch.Generator().manual_seed(0))
    g = torch.Generator().manual_seed(0)
    assert torch.equal(sample_next(logits, 1.5, top_k=1, generator=g), logits.argmax(-1, keepdim=True))


def test_one_seed_gives_the_same_tokens_and_another_seed_others():
    logits = torch.zeros(64, 50)  # uniform: 64 draws from 50 tokens
    first = sample_next(logits, generator=torch.Generator().manual_seed(3))
    assert torch.equal(first, sample_next(logits, generator=torch.Generator().manual_seed(3)))
    assert not torch.equal(first, sample_next(logits, generator=torch.Generator().manual_seed(4)))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(temperature=-0.5), "temperature must be a finite number >= 0"),
        (dict(temperature=float("nan")), "temperature must be a finite number >= 0"),
        (dict(temperature=float("inf")), "temperature must be a finite number >= 0"),
        (dict(top_k=0), r"top_k must be a whole number >= 1"),
        (dict(top_k=2.5), r"top_k must be a whole number >= 1"),
        (dict(top_k=True), r"top_k must be a whole number >= 1"),
        (dict(top_p=0.0), r"top_p must be a probability in \(0, 1\]"),
        (dict(top_p=1.5), r"top_p must be a probability in \(0, 1\]"),
        (dict(top_p=float("nan")), r"top_p must be a probability in \(0, 1\]"),
    ],
)
def test_a_bad_setting_is_one_line_naming_it(kwargs, match):
    with pytest.raises(ValueError, match=match) as error:
        sample_next(torch.zeros(2, 5), **kwargs)
    assert "\n" not in str(error.value)


def test_bad_logits_are_one_line():
    for logits, match in [
        (torch.tensor([[0.0, float("nan")]]), "hold NaN"),
        (torch.tensor([[0.0, 1.0], [-math.inf, -math.inf]]), "is -inf everywhere"),
        (torch.zeros(5), r"must be a tensor \(batch, vocab\), got \(5,\)"),
        ([[0.0, 1.0]], r"must be a tensor \(batch, vocab\), got list"),
    ]:
        with pytest.raises(ValueError, match=match) as error:
            sample_next(logits)
        assert "\n" not in str(error.value)
    with pytest.raises(ValueError, match="top_k must be"):
        filter_top_k(torch.zeros(3), 0)
    with pytest.raises(ValueError, match="top_p must be"):
        filter_top_p(torch.zeros(3), -0.1)


# ---- the LM's generation -----------------------------------------------------------------------------------

MODERN = dict(positional="rope", norm="rms", ffn="swiglu", n_kv_heads=2, norm_first=True)


@pytest.mark.parametrize("switches", [dict(), MODERN], ids=["paper", "modern"])
def test_sampled_generation_with_the_cache_equals_without_token_for_token(switches):
    torch.manual_seed(0)
    model = make_lm(17, **{**SMALL, **switches}).eval()
    prompt = torch.randint(0, 17, (3, 4))
    settings = dict(temperature=1.2, top_k=12, top_p=0.95)
    cached = model.generate(prompt, 12, generator=torch.Generator().manual_seed(5), **settings)
    uncached = model.generate(prompt, 12, use_cache=False, generator=torch.Generator().manual_seed(5), **settings)
    assert cached.shape == (3, 16) and torch.equal(cached, uncached)
    again = model.generate(prompt, 12, generator=torch.Generator().manual_seed(5), **settings)
    assert torch.equal(cached, again)


def test_greedy_generation_is_the_argmax_of_the_full_forward_at_every_step():
    torch.manual_seed(0)
    model = make_lm(17, **SMALL).eval()
    ids = torch.randint(0, 17, (2, 3))
    with torch.no_grad():
        expected = ids
        for _ in range(8):
            expected = torch.cat([expected, model(expected)[:, -1].argmax(-1, keepdim=True)], dim=1)
    assert torch.equal(model.generate(ids, 8), expected)


def test_a_row_that_says_eos_repeats_it_and_generation_stops_when_all_have():
    torch.manual_seed(0)
    model = make_lm(17, **SMALL).eval()
    prompt = torch.randint(0, 17, (2, 3))
    free = model.generate(prompt, 10)
    eos = int(free[0, 5])  # a token row 0 says at its third step
    out = model.generate(prompt, 10, eos=eos)
    for row in range(2):
        said = (free[row, 3:] == eos).nonzero()
        if len(said):
            end = 3 + int(said[0])
            assert torch.equal(out[row, : end + 1], free[row, : end + 1]) and out[row, end:].eq(eos).all()
        else:
            assert torch.equal(out[row], free[row])
    assert out.size(1) == 13 or out[:, -1].eq(eos).all()
    assert model.generate(prompt, 10, eos=17 + 5).shape == (2, 13)  # an id never said: every step runs


def test_generation_refuses_a_bad_setting_in_one_line():
    model = make_lm(17, **SMALL).eval()
    with pytest.raises(ValueError, match="top_p must be a probability"):
        model.generate(torch.zeros(1, 2, dtype=torch.long), 3, temperature=1.0, top_p=2.0)

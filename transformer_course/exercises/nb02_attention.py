"""Checkers for notebook 02 (scaled dot-product attention; paper §3.2.1).

    from transformer_course.exercises import nb02_attention as ex
    ex.check_attention(scaled_dot_product_attention)   # the function of my_transformer/attention.py (the build cell)
    ex.check_additive_attention(additive_attention)    # exercise 1: a variant (Bahdanau's additive attention)
    ex.check_bug_lines(bug_lines)                      # exercise 2: which lines of ex.buggy_attention are wrong
    ex.check_exposing_inputs(cases)                    # exercise 2: inputs of your own on which each bug shows
    ex.check_longest_sentence(longest_sentence)        # exercise 3: how long a sentence the weights' memory allows
    ex.check_question_scaling(…), ex.check_question_mask_sum(…), ex.check_question_saturation(…)

Each call of the learner's code gets copies of its inputs (an input changed in place is named) and has its dropout
calls recorded (:mod:`.dropout_calls`).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from ..attention import scaled_dot_product_attention as _PACKAGE_ATTENTION  # the reference, bound at import
from ..i18n import messages
from . import (
    Hint,
    Result,
    answer_check,
    as_int,
    as_sequence,
    check_question,
    checker,
    expect_tensor,
    print_numbered,  # noqa: F401 (the notebook calls ex.print_numbered)
    questions,
    unlocked_text,
)
from .compare import close
from .dropout_calls import DROPOUT_WATCH, DropoutCalls
from .guard import TORCH_ATTENTION, no_shortcuts, read_only

t, lazy_t = messages("nb02_attention")

__all__ = [
    "check_attention",
    "check_additive_attention",
    "buggy_attention",
    "check_bug_lines",
    "check_exposing_inputs",
    "check_longest_sentence",
    "SCALING",
    "MASK_SUM",
    "SATURATION",
    "check_question_scaling",
    "check_question_mask_sum",
    "check_question_saturation",
]


def _pair(got, what):
    """(output, weights) as a tuple or a list."""
    if not isinstance(got, (tuple, list)):
        raise Hint(t("return_pair_output", what=what, type=type(got).__name__))
    if len(got) != 2:
        raise Hint(t("return_pair_output_weights", what=what, count=len(got)))
    output, weights = got
    return output, weights


def _check_mask_direction(weights, want_w, kept: int):
    """Sentence 0 may attend to its first ``kept`` keys only: name an inverted or ignored mask."""
    if isinstance(weights, torch.Tensor) and weights.shape == want_w.shape and weights.is_floating_point():
        allowed, hidden = weights[0, ..., :kept], weights[0, ..., kept:]
        if torch.allclose(allowed, torch.zeros_like(allowed), atol=1e-6):
            raise Hint(t("mask_used_wrong"))
        if not torch.allclose(hidden, torch.zeros_like(hidden), atol=1e-6):
            raise Hint(t("mask_keys_where"))


INPUTS = ("query", "key", "value", "mask")


def _call(attention, what, *args):
    """The learner's attention on copies of ``args`` (query, key, value[, mask[, dropout]]), watched for the
    package's and PyTorch's own attention. Each call gets fresh copies, so that one call cannot change the next
    one's inputs; an input the learner's code changed in place is named, and so is a dropout that acted although
    the ``dropout`` argument did not ask for one."""
    copies = [x.clone() if isinstance(x, torch.Tensor) else x for x in args]
    guard = no_shortcuts(t("scaled_dot_product"), TORCH_ATTENTION, allow=(DROPOUT_WATCH,))
    with DropoutCalls() as calls, guard:
        got = attention(*copies)
    changed = [name for name, x, copy in zip(INPUTS, args, copies)
               if isinstance(x, torch.Tensor) and not torch.equal(x.detach(), copy.detach())]  # fmt: skip
    if changed:
        raise Hint(t("attention_changes_input", names=", ".join(changed)))
    dropout = args[4] if len(args) > 4 else None
    allowed = dropout.p if isinstance(dropout, nn.Dropout) and dropout.training else 0.0
    unasked = [call for call in calls.dropping if call.p != allowed]
    if unasked:
        if dropout is None:
            why = t("no_dropout_given")
        elif not dropout.training:
            why = t("dropout_given_eval")
        else:
            why = t("dropout_given_p", p=dropout.p)
        _dropout_is_the_arguments_job(t("dropout_p", p=unasked[0].p), why)
    return _pair(got, what)


def _dropout_is_the_arguments_job(done: str, why: str) -> None:
    """Raise the hint for a dropout the caller did not ask for (``done``: what dropped, ``why``: why it may not)."""
    raise Hint(t("attention_applies_although", done=done, why=why))


def _looks_dropped(weights: torch.Tensor, want: torch.Tensor) -> float | None:
    """The factor 1 / (1 − p) when ``weights`` are ``want`` with some entries zeroed and the rest scaled by one
    factor above 1 (inverted dropout); None otherwise."""
    kept = weights != 0
    if kept.all() or not kept.any() or not bool((want[~kept] > 1e-6).any()):
        return None
    ratios = weights[kept] / want[kept].clamp_min(1e-30)
    scale = float(ratios.mean())
    return scale if scale > 1.01 and float((ratios - scale).abs().max()) < 1e-3 * scale else None


@checker(lazy_t("scaled_dot_product"), lazy_t("passed_attention"))
def check_attention(attention):
    """``attention(query, key, value, mask=None, dropout=None)`` → (output, weights), the paper's equation (1),
    compared with the package's ``scaled_dot_product_attention`` (values, shapes, masks, dropout, gradients)."""
    package = _PACKAGE_ATTENTION

    g = torch.Generator().manual_seed(0)
    # d_k = 16, d_v = 4; a heads axis in front (…, q_len, d_k), as multi-head attention will call it
    q, k, v = (torch.randn(2, 2, 3, 16, generator=g), torch.randn(2, 2, 5, 16, generator=g),
               torch.randn(2, 2, 5, 4, generator=g))  # fmt: skip
    out, weights = _call(attention, "attention(query, key, value)", q, k, v)
    want_out, want_w = package(q, k, v)
    if isinstance(weights, torch.Tensor) and weights.shape == want_w.shape and weights.is_floating_point():
        scale = _looks_dropped(weights.detach(), want_w)
        if scale is not None:
            _dropout_is_the_arguments_job(t("dropout_zeros_rest", scale=scale),
                                          t("no_dropout_given"))  # fmt: skip
        scores = q @ k.transpose(-2, -1)
        if close(weights, scores.softmax(-2)) or close(weights, (scores / 4).softmax(-2)):
            raise Hint(t("softmax_runs_over"))
        sums = weights.sum(-1)
        if not torch.allclose(sums, torch.ones_like(sums), atol=1e-4):
            raise Hint(t("weights_each_query"))
        for wrong_scale, name in ((1.0, t("not_scaled")), (16.0, t("divided_d_k")), (2.0, t("divided_d_v")),
                                  (math.sqrt(5), t("divided_k_len"))):  # fmt: skip
            if close(weights, (scores / wrong_scale).softmax(-1)):
                raise Hint(t("scores_divide_q", name=name, root=math.sqrt(16)))
    expect_tensor(weights, want_w, "weights (…, q_len, k_len)")
    expect_tensor(out, want_out, "output (…, q_len, d_v)")

    # sentence 0 may see its first 3 keys; sentence 1 all 5; (batch, 1, 1, k_len) broadcasts over heads and queries
    mask = torch.tensor([[True, True, True, False, False], [True] * 5])[:, None, None, :]
    out, weights = _call(attention, "attention(query, key, value, mask)", q, k, v, mask)
    want_out, want_w = package(q, k, v, mask)
    _check_mask_direction(weights, want_w, 3)
    expect_tensor(weights, want_w, t("weights_mask"))
    expect_tensor(out, want_out, t("output_mask"))

    # a dropout module in eval mode drops nothing: the same numbers as without one
    out, weights = _call(attention, "attention(query, key, value, mask, dropout)", q, k, v, mask, nn.Dropout(0.5).eval())  # fmt: skip
    expect_tensor(weights, want_w, t("weights_dropout_module"))
    expect_tensor(out, want_out, t("output_dropout_module"))

    # a row with every key masked (a pad query under a window mask, notebook 01): finite, not NaN
    empty = torch.ones(3, 5, dtype=torch.bool)
    empty[1] = False  # query 1 may see no key
    out, weights = _call(attention, "attention(query, key, value, mask)", q, k, v, empty)
    if isinstance(weights, torch.Tensor) and weights.is_floating_point() and torch.isnan(weights).any():
        raise Hint(t("query_whose_keys"))
    want_out, want_w = package(q, k, v, empty)
    expect_tensor(weights, want_w, t("weights_when_query"))
    expect_tensor(out, want_out, t("output_when_query"))

    # a correct float64 version passes at float64 precision: float32 inside shows as a dtype or as lost digits
    q64, k64, v64 = q.double(), k.double(), v.double()
    out, weights = _call(attention, "attention(float64 tensors)", q64, k64, v64, mask)
    want_out, want_w = package(q64, k64, v64, mask)
    for name, got in (("output", out), ("weights", weights)):
        if isinstance(got, torch.Tensor) and got.is_floating_point() and got.dtype != torch.float64:
            raise Hint(t("float64_inputs_expected", name=name, dtype=got.dtype))
    expect_tensor(weights, want_w, t("weights_float64_inputs"), atol=1e-10, rtol=1e-8)
    expect_tensor(out, want_out, t("output_float64_inputs"), atol=1e-10, rtol=1e-8)

    # dropout on the weights, before weights @ value (the package's place): same seed, same zeros
    dropout = nn.Dropout(0.5).train()
    torch.manual_seed(7)
    want_out, _ = package(q, k, v, mask, dropout)
    torch.manual_seed(7)
    out, _ = _call(attention, "attention(query, key, value, mask, dropout)", q, k, v, mask, dropout)
    if isinstance(out, torch.Tensor) and out.shape == want_out.shape:
        plain_out, plain_w = package(q, k, v, mask)
        torch.manual_seed(7)
        on_output = dropout(plain_out)
        torch.manual_seed(7)
        scores = (q @ k.transpose(-2, -1) / 4).masked_fill(~mask, torch.finfo(q.dtype).min)
        on_scores = dropout(scores).softmax(-1) @ v
        if close(out, plain_out):
            raise Hint(t("dropout_module_not"))
        if close(out, on_output):
            raise Hint(t("dropout_applied_output"))
        if close(out, on_scores):
            raise Hint(t("dropout_applied_scores"))
    expect_tensor(out, want_out, t("output_dropout_weights"))

    # gradients reach the query, the key and the value, as the package's do
    leaves = [x.clone().requires_grad_() for x in (q, k, v)]
    out, weights = _call(attention, "attention(query, key, value, mask)", *leaves, mask)
    if not isinstance(out, torch.Tensor) or out.grad_fn is None:
        raise Hint(t("no_gradient_flows"))
    out.pow(2).sum().backward()
    mine = [x.grad for x in leaves]
    reference = [x.clone().requires_grad_() for x in (q, k, v)]
    package(*reference, mask)[0].pow(2).sum().backward()
    for name, got, want in zip(("query", "key", "value"), mine, (x.grad for x in reference)):
        if got is None:
            raise Hint(t("no_gradient_reaches", name=name))
        expect_tensor(got, want, t("gradient_respect", name=name))


# ---- exercise 1: additive attention ------------------------------------------------------------------


@checker(lazy_t("additive_attention"), lazy_t("passed_additive_attention"))
def check_additive_attention(additive_attention):
    """``additive_attention(query, key, value, W_q, W_k, w_v, mask=None)`` → (output, weights)."""

    def reference(query, key, value, W_q, W_k, w_v, mask=None):
        """score(q_i, k_j) = w_vᵀ tanh(q_i W_q + k_j W_k), one (query, key) pair at a time, in float64."""
        batch, q_len, _ = query.shape
        scores = torch.zeros(batch, q_len, key.size(1), dtype=torch.float64)
        for b in range(batch):
            for i in range(q_len):
                for j in range(key.size(1)):
                    scores[b, i, j] = (w_v * torch.tanh(query[b, i] @ W_q + key[b, j] @ W_k)).sum()
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = scores.softmax(-1)  # (batch, q_len, k_len)
        return weights @ value.double(), weights

    def variants(query, key, W_q, W_k, w_v) -> dict[str, torch.Tensor]:
        """Weights of plausible wrong versions (no mask), each with the hint that names its mistake."""
        features = (query @ W_q)[:, :, None, :] + (key @ W_k)[:, None, :, :]  # (batch, q_len, k_len, d_hidden)
        scores = torch.tanh(features) @ w_v  # (batch, q_len, k_len)
        found = {
            t("tanh_missing_without"): (features @ w_v).softmax(-1),
            t("papers_additive_attention"): (features.relu() @ w_v).softmax(-1),
        }
        for name, size in (("d_hidden", w_v.numel()), (t("key_size"), key.size(-1)), (t("query_size"), query.size(-1))):  # fmt: skip
            found[t("scores_divided_additive", name=name)] = (scores / math.sqrt(size)).softmax(-1)
        return found

    g = torch.Generator().manual_seed(2)
    # queries and keys of different sizes (6 and 5): additive attention allows it, dot products do not
    query, key, value = (torch.randn(2, 3, 6, generator=g), torch.randn(2, 4, 5, generator=g),
                         torch.randn(2, 4, 2, generator=g))  # fmt: skip
    W_q, W_k, w_v = (torch.randn(6, 7, generator=g) * 0.6, torch.randn(5, 7, generator=g) * 0.6,
                     torch.randn(7, generator=g) * 1.5)  # fmt: skip
    want_out, want_w = reference(query, key, value, W_q, W_k, w_v)
    with no_shortcuts(t("additive_attention"), TORCH_ATTENTION):
        got = additive_attention(query, key, value, W_q, W_k, w_v)
    out, weights = _pair(got, "additive_attention(...)")
    if isinstance(weights, torch.Tensor) and weights.shape == want_w.shape and weights.is_floating_point():
        sums = weights.sum(-1)
        if not torch.allclose(sums, torch.ones_like(sums), atol=1e-4):
            raise Hint(t("each_querys_weights"))
        for hint, wrong in variants(query, key, W_q, W_k, w_v).items():
            if close(weights, wrong):
                raise Hint(hint)
    expect_tensor(weights, want_w, "weights (batch, q_len, k_len)")
    expect_tensor(out, want_out, "output (batch, q_len, d_v)")

    mask = torch.tensor([[True, True, False, False], [True, True, True, True]])[:, None, :]  # (2, 1, 4)
    want_out, want_w = reference(query, key, value, W_q, W_k, w_v, mask)
    with no_shortcuts(t("additive_attention"), TORCH_ATTENTION):
        got = additive_attention(query, key, value, W_q, W_k, w_v, mask)
    out, weights = _pair(got, t("mask"))
    _check_mask_direction(weights, want_w, 2)
    expect_tensor(weights, want_w, t("weights_mask"))
    expect_tensor(out, want_out, t("output_mask"))

    args64 = [x.double() for x in (query, key, value, W_q, W_k, w_v)]  # a float64 version passes as well
    with no_shortcuts(t("additive_attention"), TORCH_ATTENTION):
        got = additive_attention(*args64, mask)
    out, weights = _pair(got, "additive_attention(float64 tensors)")
    expect_tensor(out, want_out, t("output_float64_inputs"))


# ---- exercise 2: find the bugs, and show each with an input of your own -------------------------------


def buggy_attention(query, key, value, mask=None):
    scale = value.size(-1) ** -0.5
    scores = torch.einsum("...qd,...kd->...qk", query, key) * scale
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    scores = scores - scores.amax(dim=(-2, -1), keepdim=True)
    weights = scores.exp() / scores.exp().sum(dim=-1, keepdim=True)
    return weights @ value, weights


@answer_check
@checker(lazy_t("find_bugs"), lazy_t("passed_now_show"))
def check_bug_lines(bug_lines):
    """``check_bug_lines([n, ...])``: the numbers of the lines of ``buggy_attention`` that are wrong (a list, tuple
    or set), as ``ex.print_numbered(ex.buggy_attention)`` shows them."""
    if bug_lines is ... or bug_lines is None:
        raise Hint(t("not_done_yet"))
    if not isinstance(bug_lines, (list, tuple, set, frozenset)):
        raise Hint(t("bug_lines_list", type=type(bug_lines).__name__))
    lines = {as_int(n, t("each_line_number")) for n in bug_lines}
    outside = sorted(n for n in lines if not 1 <= n <= 8)
    if outside:
        raise Hint(t("buggy_attention_lines", outside=outside))
    bugs = QUESTIONS["bug_lines"]  # an entry locked with the wrong lines, and one with each line (.answer_key)
    if bugs.unlock(lines) is not None:
        return
    for n in sorted(lines):  # a line named that is fine: why it is
        entry = bugs.unlock(n)
        if entry is not None and not entry["bug"]:
            raise Hint(unlocked_text(entry))
    for n in range(1, bugs.lines + 1):  # a wrong line left out: a nudge towards its bug, not its number
        if n not in lines:
            entry = bugs.unlock(n)
            if entry is not None and entry["bug"]:
                raise Hint(unlocked_text(entry))
    raise Hint(t("not_these_lines"))


@checker(lazy_t("inputs_show_bugs"), lazy_t("passed_every_bug"))
def check_exposing_inputs(cases):
    """``cases``: a list of inputs ``(query, key, value)`` or ``(query, key, value, mask)`` on which
    ``buggy_attention`` and the paper's attention differ. Passes when every bug of ``buggy_attention`` shows on
    at least one of them (a NaN where the formula is finite counts)."""
    package = _PACKAGE_ATTENTION

    def one_bug(query, key, value, mask, bug):
        """buggy_attention with only ``bug`` left in (the other two repaired)."""
        d = value.size(-1) if bug == "scale" else query.size(-1)
        scores = query @ key.transpose(-2, -1) / math.sqrt(d)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf") if bug == "fill" else torch.finfo(scores.dtype).min)
        biggest = scores.amax(dim=(-2, -1), keepdim=True) if bug == "max" else scores.amax(dim=-1, keepdim=True)
        scores = scores - biggest
        return scores.exp() / scores.exp().sum(dim=-1, keepdim=True)

    def differs(got, want) -> bool:
        if not torch.isfinite(got).all():
            return True
        return not torch.allclose(got, want, atol=1e-4, rtol=1e-3)

    if cases is ... or cases is None:
        raise NotImplementedError
    exposed = set()
    for i, case in enumerate(as_sequence(cases, None, t("cases"))):
        items = as_sequence(case, None, t("case", i=i))
        if len(items) not in (3, 4):
            raise Hint(t("case_query_key", i=i))
        query, key, value, mask = (*items, None)[:4]
        if not all(isinstance(x, torch.Tensor) and x.is_floating_point() for x in (query, key, value)):
            raise Hint(t("case_query_key_value", i=i))
        if not all(torch.isfinite(x).all() for x in (query, key, value)):
            raise Hint(t("case_input_itself", i=i))
        if mask is not None and (not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool):
            raise Hint(t("case_mask_boolean", i=i))
        if query.dim() < 2 or query.size(-1) != key.size(-1) or key.size(-2) != value.size(-2):
            raise Hint(t("case_not_attention", i=i))
        try:
            _, want = package(query, key, value, mask)
        except RuntimeError as error:
            raise Hint(t("case_does_not", i=i, error=str(error)[:120])) from None
        _, precise = package(query.double(), key.double(), value.double(), mask)
        if not torch.allclose(want.double(), precise, atol=1e-4, rtol=1e-3):
            raise Hint(t("case_extreme_formula", i=i, dtype=query.dtype))
        # the max's axes are judged on rows with a key allowed: a row with none shows the -inf fill instead
        seen = torch.ones(want.shape[:-1], dtype=torch.bool) if mask is None else mask.expand(want.shape).any(-1)
        shown = {bug for bug in ("scale", "fill") if differs(one_bug(query, key, value, mask, bug), want)}
        if differs(one_bug(query, key, value, mask, "max")[seen], want[seen]):
            shown.add("max")
        if not shown and not differs(buggy_attention(query, key, value, mask)[1], want):
            raise Hint(t("case_buggy_attention", i=i))
        exposed |= shown
    if len(exposed) < 3:
        raise Hint(t("cases_show_some_bugs", count=len(exposed)))


# ---- exercise 3: how long may a sentence be? ------------------------------------------------------------

# (memory_bytes, batch, heads, bytes_per_number): the first tells every mistake below apart; a weights tensor of
# exactly 2 · 8 · 100 · 100 · 4 bytes fits, one byte less does not; the last two are a GPU's sizes
_MEMORY_CASES = ((10**6, 3, 5, 2), (640_000, 2, 8, 4), (639_999, 2, 8, 4), (2**30, 64, 8, 4), (8 * 2**30, 32, 16, 2))


@checker(lazy_t("longest_sentence"), lazy_t("passed_longest_sentence"))
def check_longest_sentence(longest_sentence):
    """``longest_sentence(memory_bytes, batch, heads, bytes_per_number=4)``: the longest sentence length n (whole
    tokens) whose self-attention weights, a (batch, heads, n, n) tensor, fit in ``memory_bytes``."""
    for memory, batch, heads, size in _MEMORY_CASES:
        what = f"longest_sentence({memory}, {batch}, {heads}, bytes_per_number={size})"
        got = as_int(longest_sentence(memory, batch, heads, bytes_per_number=size), what)
        pair = batch * heads * size  # bytes per (query, key) pair of positions, over the batch and the heads
        right = math.isqrt(memory // pair)
        if got == right:
            continue
        wrong = {
            memory // pair: t("grows_linearly"),
            math.isqrt(memory // (batch * size)): t("forgets_heads_each"),
            math.isqrt(memory // (heads * size)): t("forgets_batch_each"),
            math.isqrt(memory * 8 // pair): t("counts_bits_byte"),
            math.isqrt(memory // (batch * heads)): t("forgets_bytes_per_number"),
        }
        wrong.pop(right, None)
        if got in wrong:
            raise Hint(t("what_got_hint", what=what, got=got, hint=wrong[got]))
        if got > right:
            raise Hint(t("does_not_fit", what=what, got=got, need=got * got * pair, memory=memory))
        if got == right - 1 and right * right * pair == memory:
            raise Hint(t("exactly_fits", what=what, got=got, fits=right))
        raise Hint(t("what_got_hint", what=what, got=got, hint=t("not_longest")))


# ---- questions: a number to work out, each ------------------------------------------------------------

QUESTIONS = questions(
    "nb02_attention",
    lazy_t,
    scaling="89cb89f63e0d6935de1eff83",
    mask_sum="5083a38c26c09a442140267d",
    saturation="a59c28b6bbf3bdda12855c30",
    bug_lines="ec224a0b8491a9fbb165db95",
)
SCALING, MASK_SUM, SATURATION = QUESTIONS["scaling"], QUESTIONS["mask_sum"], QUESTIONS["saturation"]


@answer_check
def check_question_scaling(answer) -> Result:
    """q and k entries with standard deviation 2, d_k = 256: the standard deviation of q·k / √d_k."""
    return check_question(t("question_1_scale"), SCALING, answer)


@answer_check
def check_question_mask_sum(answer) -> Result:
    """scores 0, 0, 0, 0; (scores + mask).softmax(-1) with mask [T, T, F, F]: the pads' total weight."""
    return check_question(t("question_2_scores"), MASK_SUM, answer)


@answer_check
def check_question_saturation(answer) -> Result:
    """Two keys, scores +8 and −8 before scaling, d_k = 64: the weight of the first key after scaling."""
    return check_question(t("question_3_softmax"), SATURATION, answer)


read_only(__name__)  # what the checks use stays what it was at import (ex.no_shortcuts = … is refused)

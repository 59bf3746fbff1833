"""Checkers for notebook 02 (scaled dot-product attention; paper §3.2.1).

    from transformer_course.exercises import nb02_attention as ex
    ex.check_attention(scaled_dot_product_attention)   # the function of my_transformer/attention.py (the build cell)
    ex.check_additive_attention(additive_attention)    # exercise 1: a variant (Bahdanau's additive attention)
    ex.check_bug_lines(bug_lines)                      # exercise 2: which lines of ex.buggy_attention are wrong
    ex.check_exposing_inputs(cases)                    # exercise 2: inputs of your own on which each bug shows
    ex.check_weights_bytes(weights_bytes)              # exercise 3: estimate the memory of the weights
    ex.check_question_scaling(…), ex.check_question_mask_sum(…), ex.check_question_saturation(…)

Every reference is computed inside a checker, with the package, outside the learner's code; the learner's code
runs inside :func:`~transformer_course.exercises.guard.no_shortcuts`, so the package's own attention, a
checker's helper or ``F.scaled_dot_product_attention`` is named, not counted. Each call gets copies of its inputs
(an input changed in place is named), and the dropouts it runs are recorded (:class:`_DropoutCalls`): dropout is
judged by where it acts, at which rate and in which mode, never by the package's random zeros. Bug lines and numeric
answers are stored as digests. Numbers may come as Python, numpy or one-element tensor numbers; lists as tuples or
lists.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from torch.overrides import TorchFunctionMode

from ..i18n import lazy_t, load_catalogue, register, t
from . import (
    Hint,
    Numeric,
    Result,
    answer_check,
    as_int,
    as_number,
    as_sequence,
    check_question,
    divmod_index,
    expect_tensor,
    print_numbered,  # noqa: F401 (the notebook calls ex.print_numbered)
    run_check,
)
from .guard import TORCH_ATTENTION, answer_digest, no_shortcuts

register("zh", load_catalogue("nb02_attention"))

__all__ = [
    "check_attention",
    "check_additive_attention",
    "buggy_attention",
    "check_bug_lines",
    "check_exposing_inputs",
    "check_weights_bytes",
    "SCALING",
    "MASK_SUM",
    "SATURATION",
    "check_question_scaling",
    "check_question_mask_sum",
    "check_question_saturation",
]


# ---- shared by the checkers of notebooks 02–07: values compared with the digits that show a difference, the
# dropout calls of the learner's code recorded, a layer built without its bias named


def _digits(value: float, other: float) -> int:
    """Significant digits that tell ``value`` from ``other``: 4, or more when they differ only further right."""
    gap, size = abs(value - other), max(abs(value), abs(other))
    if not math.isfinite(gap) or gap == 0 or size == 0:
        return 4
    return max(4, min(17, math.ceil(math.log10(size / gap)) + 2))


def _shown(value: float, other: float) -> str:
    return f"{value:.{_digits(value, other)}g}"


def _expect_values(got, expected: torch.Tensor, what: str, atol: float = 1e-5, rtol: float = 1e-4) -> None:
    """:func:`~transformer_course.exercises.expect_tensor` (type, shape, dtype, values), except that wrong values are
    printed with as many digits as it takes to see them differ, and a result that agrees with a float64 reference
    only as far as float32 can (a ``.float()`` inside, a float32 constant) is said to be that, dtypes named."""
    if (
        isinstance(got, torch.Tensor)
        and got.shape == expected.shape
        and got.is_floating_point()
        and expected.is_floating_point()
    ):
        wider = torch.promote_types(got.dtype, expected.dtype)
        mine, want = got.detach().to(wider), expected.detach().to(wider)
        if not torch.allclose(mine, want, atol=atol, rtol=rtol):
            gap = (mine - want).abs()
            if expected.dtype == torch.float64 and torch.allclose(mine, want, atol=1e-5, rtol=1e-4):
                if got.dtype != expected.dtype:
                    raise Hint(
                        t(
                            "{what} has dtype {got_dtype}, expected {expected_dtype}: its values agree only to float32 "
                            "precision (largest difference {gap:.1e}); keep the inputs' dtype all the way (no .float(), "
                            "no float32 constants or tensors made inside)",
                            what=what,
                            got_dtype=got.dtype,
                            expected_dtype=expected.dtype,
                            gap=float(gap.max()),
                        )
                    )
                raise Hint(
                    t(
                        "{what}: the values agree with the expected ones only to float32 precision (largest difference "
                        "{gap:.1e}, where {dtype} keeps about 16 digits): somewhere inside, your code computes in "
                        "float32 (a .float(), or a tensor or constant made in float32) and casts back; keep the "
                        "inputs' dtype all the way",
                        what=what,
                        gap=float(gap.max()),
                        dtype=expected.dtype,
                    )
                )
            index = divmod_index(int(gap.nan_to_num(float("inf")).argmax()), expected.shape)
            a, b = mine[tuple(index)].item(), want[tuple(index)].item()
            raise Hint(
                t(
                    "{what} has the right shape but wrong values: at index {index} got {got}, expected {expected}",
                    what=what,
                    index=index,
                    got=_shown(a, b),
                    expected=_shown(b, a),
                )
            )
    expect_tensor(got, expected, what, atol=atol, rtol=rtol)


@dataclass
class _Dropout:
    """One dropout call: what it got (a copy, taken before the call), what it gave, its rate and its mode."""

    input: torch.Tensor
    output: torch.Tensor
    p: float
    training: bool

    @property
    def drops(self) -> bool:
        return self.training and self.p > 0


_DROPOUTS = (F.dropout, torch.dropout, torch.dropout_)


class _DropoutCalls(TorchFunctionMode):
    """Records every dropout the code run inside calls (``nn.Dropout``, ``F.dropout``, ``torch.dropout``), whatever
    draws its mask: a checker can then see where dropout acted, at which rate and in which mode, without asking for
    the package's random zeros (a loop over heads draws them in another order, and is right)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[_Dropout] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func not in _DROPOUTS:
            return func(*args, **kwargs)
        x = args[0] if args else kwargs.get("input")
        before = x.detach().clone() if isinstance(x, torch.Tensor) else x
        out = func(*args, **kwargs)
        rest = dict(zip(("p", "training") if func is F.dropout else ("p", "train"), args[1:]))
        rest.update(kwargs)
        p = float(rest.get("p", 0.5))
        training = bool(rest.get("training", rest.get("train", True)))
        self.calls.append(_Dropout(before, out.detach() if isinstance(out, torch.Tensor) else out, p, training))
        return out

    @property
    def dropping(self) -> list[_Dropout]:
        """The calls that zeroed something: training mode and a rate above 0."""
        return [call for call in self.calls if call.drops]


# what no_shortcuts must let through: the recorder runs inside the learner's code, but it is the checker's
DROPOUT_WATCH = f"{__name__}._DropoutCalls"


def _missing_biases(what: str, missing) -> None:
    """Raise a Hint when the only parameters missing are biases: a layer built with ``bias=False``."""
    missing = sorted(missing)
    if missing and all(name.endswith("bias") for name in missing):
        raise Hint(
            t(
                "{what}: {missing} are missing, so a layer was built without its bias (bias=False); the paper's "
                "projections are x W + b, as the package's: keep nn.Linear's default, bias=True",
                what=what,
                missing=", ".join(missing),
            )
        )


def _close(got, want, atol=1e-5, rtol=1e-4) -> bool:
    """``got`` is a tensor of ``want``'s shape and values, compared at the wider of the two float dtypes."""
    if not isinstance(got, torch.Tensor) or got.shape != want.shape or not got.is_floating_point():
        return False
    wider = torch.promote_types(got.dtype, want.dtype)
    return bool(torch.allclose(got.to(wider), want.to(wider), atol=atol, rtol=rtol, equal_nan=False))


def _pair(got, what):
    """(output, weights) as a tuple or a list."""
    if not isinstance(got, (tuple, list)):
        raise Hint(
            t(
                "{what} should return the pair (output, weights); it should be a tuple or a list, got {type}",
                what=what,
                type=type(got).__name__,
            )
        )
    if len(got) != 2:
        raise Hint(
            t(
                "{what} should return the pair (output, weights); it should have 2 items, got {count}",
                what=what,
                count=len(got),
            )
        )
    output, weights = got
    return output, weights


def _check_mask_direction(weights, want_w, kept: int):
    """Sentence 0 may attend to its first ``kept`` keys only: name an inverted or ignored mask."""
    if isinstance(weights, torch.Tensor) and weights.shape == want_w.shape and weights.is_floating_point():
        allowed, hidden = weights[0, ..., :kept], weights[0, ..., kept:]
        if torch.allclose(allowed, torch.zeros_like(allowed), atol=1e-6):
            raise Hint(
                t(
                    "the mask is used the wrong way round: True means 'may attend', so fill the "
                    "scores where the mask is False (masked_fill(~mask, ...))"
                )
            )
        if not torch.allclose(hidden, torch.zeros_like(hidden), atol=1e-6):
            raise Hint(
                t(
                    "with a mask, keys where the mask is False must get weight 0: fill their scores "
                    "with -inf (or the most negative float) before the softmax, and do not add the mask"
                )
            )


INPUTS = ("query", "key", "value", "mask")


def _call(attention, what, *args):
    """The learner's attention on copies of ``args`` (query, key, value[, mask[, dropout]]), watched for the
    package's and PyTorch's own attention. Each call gets fresh copies, so that one call cannot change the next
    one's inputs; an input the learner's code changed in place is named, and so is a dropout that acted although
    the ``dropout`` argument did not ask for one."""
    copies = [x.clone() if isinstance(x, torch.Tensor) else x for x in args]
    guard = no_shortcuts(t("scaled dot-product attention"), TORCH_ATTENTION, allow=(DROPOUT_WATCH,))
    with _DropoutCalls() as calls, guard:
        got = attention(*copies)
    changed = [name for name, x, copy in zip(INPUTS, args, copies)
               if isinstance(x, torch.Tensor) and not torch.equal(x.detach(), copy.detach())]  # fmt: skip
    if changed:
        raise Hint(
            t(
                "your attention changes its input {names} in place: do not modify the inputs (query/key/value): the "
                "caller still holds them (multi-head attention passes the same tensors again), so compute new "
                "tensors instead of calling an in-place method (div_, mul_, add_, masked_fill_ …) on them",
                names=", ".join(changed),
            )
        )
    dropout = args[4] if len(args) > 4 else None
    allowed = dropout.p if isinstance(dropout, nn.Dropout) and dropout.training else 0.0
    unasked = [call for call in calls.dropping if call.p != allowed]
    if unasked:
        if dropout is None:
            why = t("no dropout was given")
        elif not dropout.training:
            why = t("the dropout given is in eval mode")
        else:
            why = t("the dropout given has p={p}", p=dropout.p)
        _dropout_is_the_arguments_job(t("dropout with p={p}", p=unasked[0].p), why)
    return _pair(got, what)


def _dropout_is_the_arguments_job(done: str, why: str) -> None:
    """Raise the hint for a dropout the caller did not ask for (``done``: what dropped, ``why``: why it may not)."""
    raise Hint(
        t(
            "your attention applies {done} although {why}: dropout is the `dropout` argument's job: apply it only "
            "when it is given (the module decides its rate and mode), never a dropout of your own",
            done=done,
            why=why,
        )
    )


def _looks_dropped(weights: torch.Tensor, want: torch.Tensor) -> float | None:
    """The factor 1 / (1 − p) when ``weights`` are ``want`` with some entries zeroed and the rest scaled by one
    factor above 1 (inverted dropout); None otherwise."""
    kept = weights != 0
    if kept.all() or not kept.any() or not bool((want[~kept] > 1e-6).any()):
        return None
    ratios = weights[kept] / want[kept].clamp_min(1e-30)
    scale = float(ratios.mean())
    return scale if scale > 1.01 and float((ratios - scale).abs().max()) < 1e-3 * scale else None


def check_attention(attention) -> Result:
    """``attention(query, key, value, mask=None, dropout=None)`` → (output, weights), the paper's equation (1),
    compared with the package's ``scaled_dot_product_attention`` (values, shapes, masks, dropout, gradients)."""
    from ..attention import scaled_dot_product_attention as package

    def check():
        g = torch.Generator().manual_seed(0)
        # d_k = 16, d_v = 4; a heads axis in front (…, q_len, d_k), as multi-head attention will call it
        q, k, v = (torch.randn(2, 2, 3, 16, generator=g), torch.randn(2, 2, 5, 16, generator=g),
                   torch.randn(2, 2, 5, 4, generator=g))  # fmt: skip
        out, weights = _call(attention, "attention(query, key, value)", q, k, v)
        want_out, want_w = package(q, k, v)
        if isinstance(weights, torch.Tensor) and weights.shape == want_w.shape and weights.is_floating_point():
            scale = _looks_dropped(weights.detach(), want_w)
            if scale is not None:
                _dropout_is_the_arguments_job(t("a dropout (zeros, the rest × {scale:.3g})", scale=scale),
                                              t("no dropout was given"))  # fmt: skip
            scores = q @ k.transpose(-2, -1)
            if _close(weights, scores.softmax(-2)) or _close(weights, (scores / 4).softmax(-2)):
                raise Hint(
                    t(
                        "the softmax runs over the queries (dim=-2): each query's weights, a row over the "
                        "keys, must sum to 1, so take it over dim=-1"
                    )
                )
            sums = weights.sum(-1)
            if not torch.allclose(sums, torch.ones_like(sums), atol=1e-4):
                raise Hint(
                    t(
                        "the weights of each query (a row, over the keys) should sum to 1: "
                        "take the softmax over the last dimension, dim=-1"
                    )
                )
            for wrong_scale, name in ((1.0, t("not scaled")), (16.0, t("divided by d_k")), (2.0, t("divided by √d_v")),
                                      (math.sqrt(5), t("divided by √k_len, the number of keys (key.size(-2))"))):  # fmt: skip
                if _close(weights, (scores / wrong_scale).softmax(-1)):
                    raise Hint(
                        t(
                            "the scores are {name}: divide Q Kᵀ by √d_k = {root:.0f} (d_k is query.size(-1))",
                            name=name,
                            root=math.sqrt(16),
                        )
                    )
        _expect_values(weights, want_w, "weights (…, q_len, k_len)")
        _expect_values(out, want_out, "output (…, q_len, d_v)")

        # sentence 0 may see its first 3 keys; sentence 1 all 5; (batch, 1, 1, k_len) broadcasts over heads and queries
        mask = torch.tensor([[True, True, True, False, False], [True] * 5])[:, None, None, :]
        out, weights = _call(attention, "attention(query, key, value, mask)", q, k, v, mask)
        want_out, want_w = package(q, k, v, mask)
        _check_mask_direction(weights, want_w, 3)
        _expect_values(weights, want_w, t("weights with a mask"))
        _expect_values(out, want_out, t("output with a mask"))

        # a dropout module in eval mode drops nothing: the same numbers as without one
        out, weights = _call(attention, "attention(query, key, value, mask, dropout)", q, k, v, mask, nn.Dropout(0.5).eval())  # fmt: skip
        _expect_values(weights, want_w, t("weights with a dropout module in eval mode (it drops nothing)"))
        _expect_values(out, want_out, t("output with a dropout module in eval mode (it drops nothing)"))

        # a row with every key masked (a pad query under a window mask, notebook 01): finite, not NaN
        empty = torch.ones(3, 5, dtype=torch.bool)
        empty[1] = False  # query 1 may see no key
        out, weights = _call(attention, "attention(query, key, value, mask)", q, k, v, empty)
        if isinstance(weights, torch.Tensor) and weights.is_floating_point() and torch.isnan(weights).any():
            raise Hint(
                t(
                    "a query whose keys are all masked gets NaN weights: with -inf in every score of a row the "
                    "softmax divides 0 by 0. Fill with the most negative float, torch.finfo(scores.dtype).min"
                )
            )
        want_out, want_w = package(q, k, v, empty)
        _expect_values(weights, want_w, t("weights when a query may see no key"))
        _expect_values(out, want_out, t("output when a query may see no key"))

        # a correct float64 version passes at float64 precision: float32 inside shows as a dtype or as lost digits
        q64, k64, v64 = q.double(), k.double(), v.double()
        out, weights = _call(attention, "attention(float64 tensors)", q64, k64, v64, mask)
        want_out, want_w = package(q64, k64, v64, mask)
        for name, got in (("output", out), ("weights", weights)):
            if isinstance(got, torch.Tensor) and got.is_floating_point() and got.dtype != torch.float64:
                raise Hint(
                    t(
                        "with float64 inputs the {name} is {dtype}, expected torch.float64: keep the inputs' dtype "
                        "(no .float(), no float32 constants or tensors made with torch.tensor(...) inside)",
                        name=name,
                        dtype=got.dtype,
                    )
                )
        _expect_values(weights, want_w, t("weights for float64 inputs"), atol=1e-10, rtol=1e-8)
        _expect_values(out, want_out, t("output for float64 inputs"), atol=1e-10, rtol=1e-8)

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
            if _close(out, plain_out):
                raise Hint(t("the dropout module is not used: apply it to the weights, weights = dropout(weights)"))
            if _close(out, on_output):
                raise Hint(t("dropout is applied to the output; apply it to the weights, before weights @ value"))
            if _close(out, on_scores):
                raise Hint(t("dropout is applied to the scores, before the softmax; apply it to the weights, after it"))
        _expect_values(out, want_out, t("output with dropout on the weights"))

        # gradients reach the query, the key and the value, as the package's do
        leaves = [x.clone().requires_grad_() for x in (q, k, v)]
        out, weights = _call(attention, "attention(query, key, value, mask)", *leaves, mask)
        if not isinstance(out, torch.Tensor) or out.grad_fn is None:
            raise Hint(
                t(
                    "no gradient flows through your output: build it from query, key and value with tensor "
                    "operations (no .detach(), torch.no_grad(), .item() or torch.tensor(...) on the way)"
                )
            )
        out.pow(2).sum().backward()
        mine = [x.grad for x in leaves]
        reference = [x.clone().requires_grad_() for x in (q, k, v)]
        package(*reference, mask)[0].pow(2).sum().backward()
        for name, got, want in zip(("query", "key", "value"), mine, (x.grad for x in reference)):
            if got is None:
                raise Hint(t("no gradient reaches {name}: it must be used with tensor operations", name=name))
            _expect_values(got, want, t("the gradient with respect to {name}", name=name))

    return run_check(
        t("scaled dot-product attention"),
        check,
        t("passed: softmax(Q Kᵀ / √d_k) V with masking, dropout on the weights and gradients, as the package's"),
    )


# ---- exercise 1: additive attention ------------------------------------------------------------------


def check_additive_attention(additive_attention) -> Result:
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
            t(
                "the tanh is missing: without it the query's part, q W_q · w_v, is the same for every key and "
                "cancels in the softmax, so every query gets the same weights"
            ): (features @ w_v).softmax(-1),
            t("the paper's additive attention uses tanh, not ReLU: w_vᵀ tanh(q W_q + k W_k)"): (
                features.relu() @ w_v
            ).softmax(-1),
        }
        for name, size in (("d_hidden", w_v.numel()), (t("the key size"), key.size(-1)), (t("the query size"), query.size(-1))):  # fmt: skip
            found[
                t(
                    "the scores are divided by √({name}); additive attention is not scaled: 1/√d_k belongs to "
                    "dot-product attention, whose scores grow with d_k",
                    name=name,
                )
            ] = (scores / math.sqrt(size)).softmax(-1)
        return found

    def check():
        g = torch.Generator().manual_seed(2)
        # queries and keys of different sizes (6 and 5): additive attention allows it, dot products do not
        query, key, value = (torch.randn(2, 3, 6, generator=g), torch.randn(2, 4, 5, generator=g),
                             torch.randn(2, 4, 2, generator=g))  # fmt: skip
        W_q, W_k, w_v = (torch.randn(6, 7, generator=g) * 0.6, torch.randn(5, 7, generator=g) * 0.6,
                         torch.randn(7, generator=g) * 1.5)  # fmt: skip
        want_out, want_w = reference(query, key, value, W_q, W_k, w_v)
        with no_shortcuts(t("additive attention"), TORCH_ATTENTION):
            got = additive_attention(query, key, value, W_q, W_k, w_v)
        out, weights = _pair(got, "additive_attention(...)")
        if isinstance(weights, torch.Tensor) and weights.shape == want_w.shape and weights.is_floating_point():
            sums = weights.sum(-1)
            if not torch.allclose(sums, torch.ones_like(sums), atol=1e-4):
                raise Hint(t("each query's weights (a row, over the keys) should sum to 1: softmax over dim=-1"))
            for hint, wrong in variants(query, key, W_q, W_k, w_v).items():
                if _close(weights, wrong):
                    raise Hint(hint)
        _expect_values(weights, want_w, "weights (batch, q_len, k_len)")
        _expect_values(out, want_out, "output (batch, q_len, d_v)")

        mask = torch.tensor([[True, True, False, False], [True, True, True, True]])[:, None, :]  # (2, 1, 4)
        want_out, want_w = reference(query, key, value, W_q, W_k, w_v, mask)
        with no_shortcuts(t("additive attention"), TORCH_ATTENTION):
            got = additive_attention(query, key, value, W_q, W_k, w_v, mask)
        out, weights = _pair(got, t("with a mask, it"))
        _check_mask_direction(weights, want_w, 2)
        _expect_values(weights, want_w, t("weights with a mask"))
        _expect_values(out, want_out, t("output with a mask"))

        args64 = [x.double() for x in (query, key, value, W_q, W_k, w_v)]  # a float64 version passes as well
        with no_shortcuts(t("additive attention"), TORCH_ATTENTION):
            got = additive_attention(*args64, mask)
        out, weights = _pair(got, "additive_attention(float64 tensors)")
        _expect_values(out, want_out, t("output for float64 inputs"))

    return run_check(t("additive attention"), check, t("passed: softmax(w_vᵀ tanh(q W_q + k W_k)) V, masked"))


# ---- exercise 2: find the bugs, and show each with an input of your own -------------------------------


def buggy_attention(query, key, value, mask=None):
    scale = value.size(-1) ** -0.5
    scores = torch.einsum("...qd,...kd->...qk", query, key) * scale
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    scores = scores - scores.amax(dim=(-2, -1), keepdim=True)
    weights = scores.exp() / scores.exp().sum(dim=-1, keepdim=True)
    return weights @ value, weights


_BUG_LINES = "d6e0dd10545f1f810dbb2071"  # answer_digest("nb02-bug-lines", the wrong lines); line 1 is the def
_RIGHT = {  # answer_digest("nb02-bug-right", n) of each line that is right → why it is right
    "b50e00590edf26f6d32258e0": lazy_t("line 1 is the signature; it is fine"),
    "03f5147e824ef35afea3e116": lazy_t(
        "line 3 is right: einsum '...qd,...kd->...qk' multiplies every query with every key over d, Q Kᵀ"
    ),
    "d41fec0be21d1c1baafbe006": lazy_t("line 4 is right: no mask, nothing to hide"),
    "0011719b882dfec827d55c17": lazy_t(
        "line 7 is right: exp(s) / Σ exp(s) over the last axis is the softmax over the keys"
    ),
    "38a6273ba874eba2c010df43": lazy_t(
        "line 8 is right: the output is weights @ value, the weights returned as they are"
    ),
}
_MISSED = {  # answer_digest("nb02-bug-missed", n) of each wrong line → a nudge when it is left out
    "3824746f5c2e4d179d49aa3b": lazy_t(
        "one bug is still hidden: which size is d_k? Every test its author ran had d_v = d_k"
    ),
    "20ae033c0a09efffd9fbf7c9": lazy_t(
        "one bug is still hidden: what does this function give a query that may see no key at all "
        "(notebook 01's pitfall)?"
    ),
    "fb15bb0ef1d4de11a512284c": lazy_t(
        "one bug is still hidden: subtracting the largest score keeps exp() from overflowing, but the "
        "largest score of what? Try two queries whose scores lie far apart"
    ),
}


@answer_check
def check_bug_lines(bug_lines) -> Result:
    """``bug_lines``: the numbers of the lines of ``buggy_attention`` that are wrong (a list, tuple or set)."""

    def check():
        if bug_lines is ... or bug_lines is None:
            raise Hint(t("not done yet: set bug_lines to the numbers of the wrong lines, e.g. [1, 5]"))
        if not isinstance(bug_lines, (list, tuple, set, frozenset)):
            raise Hint(
                t(
                    "bug_lines should be a list (or tuple, or set) of line numbers, got {type}",
                    type=type(bug_lines).__name__,
                )
            )
        lines = {as_int(n, t("each line number")) for n in bug_lines}
        outside = sorted(n for n in lines if not 1 <= n <= 8)
        if outside:
            raise Hint(t("buggy_attention has lines 1–8 (print_numbered shows them), got {outside}", outside=outside))
        if answer_digest("nb02-bug-lines", lines) == _BUG_LINES:
            return
        for n in sorted(lines):
            hint = _RIGHT.get(answer_digest("nb02-bug-right", n))
            if hint is not None:
                raise Hint(hint)
        for n in range(1, 9):
            hint = _MISSED.get(answer_digest("nb02-bug-missed", n))
            if n not in lines and hint is not None:
                raise Hint(hint)
        raise Hint(t("not these lines; run buggy_attention on inputs of your own and compare"))

    return run_check(t("find the bugs"), check, t("passed: now show each bug with an input of your own"))


def check_exposing_inputs(cases) -> Result:
    """``cases``: a list of inputs ``(query, key, value)`` or ``(query, key, value, mask)`` on which
    ``buggy_attention`` and the paper's attention differ. Passes when every bug of ``buggy_attention`` shows on
    at least one of them (a NaN where the formula is finite counts)."""
    from ..attention import scaled_dot_product_attention as package

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

    def check():
        if cases is ... or cases is None:
            raise NotImplementedError
        exposed = set()
        for i, case in enumerate(as_sequence(cases, None, t("cases"))):
            items = as_sequence(case, None, t("case {i}", i=i))
            if len(items) not in (3, 4):
                raise Hint(t("case {i} should be (query, key, value) or (query, key, value, mask)", i=i))
            query, key, value, mask = (*items, None)[:4]
            if not all(isinstance(x, torch.Tensor) and x.is_floating_point() for x in (query, key, value)):
                raise Hint(t("case {i}: query, key and value should be float tensors", i=i))
            if not all(torch.isfinite(x).all() for x in (query, key, value)):
                raise Hint(t("case {i}: your input itself holds inf or NaN; a bug must show on finite numbers", i=i))
            if mask is not None and (not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool):
                raise Hint(t("case {i}: the mask should be a boolean tensor, True = may attend", i=i))
            if query.dim() < 2 or query.size(-1) != key.size(-1) or key.size(-2) != value.size(-2):
                raise Hint(
                    t(
                        "case {i} is not an attention input: query (…, q_len, d_k), key (…, k_len, d_k) and "
                        "value (…, k_len, d_v) must share d_k and k_len",
                        i=i,
                    )
                )
            try:
                _, want = package(query, key, value, mask)
            except RuntimeError as error:
                raise Hint(t("case {i} does not broadcast: {error}", i=i, error=str(error)[:120])) from None
            _, precise = package(query.double(), key.double(), value.double(), mask)
            if not torch.allclose(want.double(), precise, atol=1e-4, rtol=1e-3):
                raise Hint(
                    t(
                        "case {i} is so extreme that the formula itself loses precision in {dtype}; a bug must "
                        "show where correct code is still exact (smaller numbers, or float64 tensors)",
                        i=i,
                        dtype=query.dtype,
                    )
                )
            # the max's axes are judged on rows with a key allowed: a row with none shows the -inf fill instead
            seen = torch.ones(want.shape[:-1], dtype=torch.bool) if mask is None else mask.expand(want.shape).any(-1)
            shown = {bug for bug in ("scale", "fill") if differs(one_bug(query, key, value, mask, bug), want)}
            if differs(one_bug(query, key, value, mask, "max")[seen], want[seen]):
                shown.add("max")
            if not shown and not differs(buggy_attention(query, key, value, mask)[1], want):
                raise Hint(t("case {i}: buggy_attention agrees with the formula on it, so it shows no bug", i=i))
            exposed |= shown
        if len(exposed) < 3:
            raise Hint(
                t(
                    "your cases show {count} of the 3 bugs; find an input for each bug still hidden",
                    count=len(exposed),
                )
            )

    return run_check(t("inputs that show the bugs"), check, t("passed: every bug shows on an input of yours"))


# ---- exercise 3: the memory of the weights -----------------------------------------------------------


def check_weights_bytes(weights_bytes) -> Result:
    """``weights_bytes(batch, heads, q_len, k_len, bytes_per_number=4)``: bytes of the weights tensor."""

    def check():
        for batch, heads, q_len, k_len, size in ((2, 8, 10, 12, 4), (32, 8, 100, 100, 4), (3, 1, 7, 5, 2)):
            what = f"weights_bytes({batch}, {heads}, {q_len}, {k_len}, bytes_per_number={size})"
            got = as_number(weights_bytes(batch, heads, q_len, k_len, bytes_per_number=size), what)
            numbers = batch * heads * q_len * k_len
            wrong = {
                numbers: t("counts numbers; multiply by bytes_per_number (4 for float32) for bytes"),
                numbers * size * 8: t("counts bits; a byte is 8 bits, and float32 takes 4 bytes"),
                batch * q_len * k_len * size: t("forgets the heads: each head has its own (q_len, k_len) weights"),
                heads * q_len * k_len * size: t("forgets the batch: each sentence has its own weights"),
                batch * heads * (q_len + k_len) * size: t(
                    "adds q_len and k_len: there is one weight per (query, key) pair, q_len × k_len of them"
                ),
            }
            if got != numbers * size:
                hint = wrong.get(got) or t("is not batch·heads·q_len·k_len·bytes_per_number")
                raise Hint(t("{what} = {got:g} {hint}", what=what, got=got, hint=hint))

    return run_check(t("memory of the weights"), check, t("passed: batch · heads · q_len · k_len · bytes_per_number"))


# ---- questions: a number to work out, each ------------------------------------------------------------

SCALING = Numeric(
    key="nb02-scaling",
    digests=("5040b76fa85fda5991a0fa9a", "95cb42ffe2333994c072a3b6", "5239be52f6d78a6c7c528c66"),
    why=lazy_t(
        "each product q_i k_i has variance 2² · 2² = 16, the sum of 256 of them 4,096, so q·k has standard "
        "deviation 64; divided by √256 = 16 that is 4: the scaling assumes unit-variance entries"
    ),
    mistakes={
        lazy_t("that is the unscaled q·k; divide it by √d_k = 16"): 64.0,
        lazy_t("that is the variance of the scaled score; the question asks for its standard deviation"): 16.0,
        lazy_t(
            "the scaling cancels √d_k, not the entries' spread: with standard deviation 2 in q and in k, each "
            "product has standard deviation 4"
        ): 1.0,
        lazy_t("both q and k have standard deviation 2, so each product q_i k_i has standard deviation 2 · 2"): 2.0,
    },
    rel_tol=1e-2,
    otherwise=lazy_t("find the variance of one product q_i k_i, then of the sum of d_k of them, then scale"),
)
MASK_SUM = Numeric(
    key="nb02-mask-sum",
    digests=("620181ea02b933b069196477", "695b763eba2ba9b342a59d3f", "38aef1d7e654aac81d6ea845"),
    why=lazy_t("the real keys get score 1, the pads 0: the pads keep 2 / (2e + 2) = 1 / (e + 1) ≈ 0.269"),
    mistakes={
        lazy_t("that is what masked_fill gives; adding True/False adds 1 or 0, never −∞"): 0.0,
        lazy_t("that is the share of the real keys; the question asks for the pads' total"): math.e / (math.e + 1),
        lazy_t("adding the mask changes the scores: True adds 1 to the real keys"): 0.5,
        lazy_t("that is one pad's weight; the question asks for both pads together"): 1 / (2 * math.e + 2),
    },
    rel_tol=1e-2,
    otherwise=lazy_t("add 1 to the scores of the real keys and 0 to the pads, then take the softmax"),
)
SATURATION = Numeric(
    key="nb02-saturation",
    digests=("db5026e80da2a8f689d09276", "fe1785173e382d89aa2ea078", "669d41cf830a4ad6e4c5a39b"),
    why=lazy_t(
        "scaled, the scores are +1 and −1: softmax gives 1 / (1 + e⁻²) ≈ 0.881; unscaled (+8, −8) it would be "
        "1 / (1 + e⁻¹⁶), one-hot for any practical purpose"
    ),
    mistakes={
        lazy_t("that is the unscaled softmax, scores +8 and −8; divide them by √64 = 8 first"): 1 / (1 + math.exp(-16)),
        lazy_t("the two scores are +1 and −1, two apart: softmax gives 1 / (1 + e^(−2))"): 1 / (1 + math.exp(-1)),
        lazy_t("the scores differ, so the weights do: the larger score gets more than half"): 0.5,
    },
    rel_tol=5e-3,
    otherwise=lazy_t("divide both scores by √d_k, then softmax([s₁, s₂])[0] = 1 / (1 + exp(s₂ − s₁))"),
)


@answer_check
def check_question_scaling(answer) -> Result:
    """q and k entries with standard deviation 2, d_k = 256: the standard deviation of q·k / √d_k."""
    return check_question(t("question 1 (the scale)"), SCALING, answer)


@answer_check
def check_question_mask_sum(answer) -> Result:
    """scores 0, 0, 0, 0; (scores + mask).softmax(-1) with mask [T, T, F, F]: the pads' total weight."""
    return check_question(t("question 2 (scores + mask)"), MASK_SUM, answer)


@answer_check
def check_question_saturation(answer) -> Result:
    """Two keys, scores +8 and −8 before scaling, d_k = 64: the weight of the first key after scaling."""
    return check_question(t("question 3 (the softmax after scaling)"), SATURATION, answer)

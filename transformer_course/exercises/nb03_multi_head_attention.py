"""Checkers for notebook 03 (multi-head attention; paper §3.2.2, §3.2.3).

    from transformer_course.exercises import nb03_multi_head_attention as ex
    ex.check_multi_head_attention(MultiHeadAttention)    # the class of my_transformer/multi_head.py (the build cell)
    ex.check_predicted_shapes(predicted_shapes)          # exercise 1: every shape, as a function of the sizes
    ex.check_attention_parameter_count(count)            # exercise 2: parameters when d_k, d_v are free
    ex.check_grouped_query_attention(grouped_query_attention)  # exercise 3: a variant, grouped-query attention
    ex.check_question_gqa_parameters(…), ex.check_question_cross(…)

Closed forms are checked on sizes too large to build (:mod:`.limits`).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from ..attention import MultiHeadAttention as _PACKAGE_MHA  # the references, bound at import
from ..attention import scaled_dot_product_attention as _PACKAGE_ATTENTION
from ..i18n import messages
from . import Hint, Result, as_int, as_shape, check_question, checker, expect_tensor, questions, run_check
from .compare import close, missing_biases
from .dropout_calls import DROPOUT_WATCH, DropoutCalls
from .guard import TORCH_ATTENTION, earlier_fallbacks, no_shortcuts, read_only
from .limits import too_big_to_build
from .seal import answer_check

t, lazy_t = messages("nb03_multi_head_attention")

# the learner's multi-head attention calls notebook 02's attention.py: the learner's, or if skipped its fallback,
# the package's scaled_dot_product_attention
EARLIER = earlier_fallbacks("03")
WATCHED = (*EARLIER, DROPOUT_WATCH)  # and the checker's dropout recorder runs inside the learner's code

__all__ = [
    "check_multi_head_attention",
    "check_predicted_shapes",
    "check_attention_parameter_count",
    "check_grouped_query_attention",
    "GQA_PARAMETERS",
    "CROSS",
    "check_question_gqa_parameters",
    "check_question_cross",
]

NAMES = {"in_proj.weight", "in_proj.bias", "out_proj.weight", "out_proj.bias"}


def _slice_of(x, weights: torch.Tensor):
    """Where in ``weights`` (batch, heads, T, S) the tensor ``x`` lies: all of it (in any shape of as many numbers, or
    heads first), one head, one sentence, or one sentence's head; None when it is none of them."""
    if not isinstance(x, torch.Tensor) or not x.is_floating_point():
        return None
    batch, heads = weights.shape[:2]
    if x.shape == (heads, batch, *weights.shape[2:]) and close(x.transpose(0, 1), weights):
        return (slice(None), slice(None)), True
    places = [(...,)] + [(slice(None), h) for h in range(heads)] + [(b,) for b in range(batch)]
    places += [(b, h) for b in range(batch) for h in range(heads)]
    for place in places:
        part = weights[place]
        if x.numel() == part.numel() and close(x.reshape(part.shape), part):
            return place, False
    return None


def _eval_drops_nothing(calls, what: str) -> None:
    """In eval mode no dropout may zero anything, whatever the block's rate."""
    if calls.dropping:
        raise Hint(t("eval_mode_block", what=what, p=calls.dropping[0].p))


def _check_weights_dropout(got, plain, weights, calls, state, package, memory) -> None:
    """The block in training mode, dropout 0.5: the recorded dropout calls act on (slices of) the attention weights at
    the rate 0.5, and the output is W^O · merge(dropped weights @ V) with exactly the zeros they drew."""
    what = t("cross_attention_dropout")
    if not calls.dropping:
        if close(got, plain):
            raise Hint(t("self_dropout_not"))
        raise Hint(t("output_changes_training", what=what))
    dropped = torch.zeros_like(weights)
    covered = torch.zeros_like(weights, dtype=torch.bool)
    for call in calls.dropping:
        if call.p != 0.5:
            raise Hint(t("dropout_uses_p", what=what, p=call.p))
        found = _slice_of(call.input, weights)
        if found is None:
            if call.input.shape == plain.shape and close(call.input, plain):
                raise Hint(t("dropout_applied_blocks"))
            raise Hint(t("dropout_applied_tensor", what=what, shape=tuple(call.input.shape)))
        place, heads_first = found
        out = call.output.transpose(0, 1) if heads_first else call.output
        dropped[place] = out.reshape(dropped[place].shape)
        covered[place] = True
    if not covered.all():
        raise Hint(t("dropout_acts_weights", what=what))
    d_model = memory.size(-1)
    w_v, b_v = state["in_proj.weight"][2 * d_model :], state["in_proj.bias"][2 * d_model :]
    with torch.no_grad():
        v = package.split_heads(F.linear(memory, w_v, b_v))  # (B, h, S, d_k)
        want = F.linear(package.merge_heads(dropped @ v), state["out_proj.weight"], state["out_proj.bias"])
    expect_tensor(got, want, t("built_weights_dropout", what=what))


def _attention_file_not_written(error: BaseException) -> bool:
    """The NotImplementedError came from my_transformer/attention.py (notebook 02's blank), not from this file."""
    import traceback

    frames = traceback.extract_tb(error.__traceback__)
    return bool(frames) and frames[-1].filename.replace("\\", "/").endswith("my_transformer/attention.py")


def check_multi_head_attention(MultiHeadAttention) -> Result:  # noqa: N803 (the learner's class)
    """``MultiHeadAttention(d_model, heads, dropout=0.0)``, ``split_heads``, ``merge_heads`` and
    ``forward(query, key, value, mask=None)``, compared with the package's ``MultiHeadAttention`` given the same
    weights: values (dropout off), shapes, masks, the kept weights (detached), dropout on the weights (where it acts,
    its rate and mode, recorded: any order of drawing its zeros is right) and gradients."""
    Package = _PACKAGE_MHA  # noqa: N806 (a class)

    def variant(query, key, value, state, heads, mask, mistake):
        """The block with one plausible mistake switched in (for naming it; never the right answer)."""
        d_model = query.size(-1)
        d_k = d_model // heads
        w, b = state["in_proj.weight"], state["in_proj.bias"]
        if mistake == "no_bias":
            b = torch.zeros_like(b)
        order = (1, 0, 2) if mistake == "kqv" else (0, 1, 2)  # which block of rows each of Q, K, V uses
        sources = (query, query, query) if mistake == "kv_from_query" else (query, key, value)
        q, k, v = (F.linear(x, w[i * d_model : (i + 1) * d_model], b[i * d_model : (i + 1) * d_model])
                   for x, i in zip(sources, order))  # fmt: skip

        def split(x):  # (B, L, d_model) → (B, h, L, d_k)
            if mistake == "direct_view":
                return x.reshape(x.size(0), heads, x.size(1), d_k)
            return x.reshape(x.size(0), x.size(1), heads, d_k).transpose(1, 2)

        q, k, v = split(q), split(k), split(v)
        scale = math.sqrt({"sqrt_d_model": d_model, "sqrt_k_len": k.size(-2)}.get(mistake, d_k))
        scores = q @ k.transpose(-2, -1) / scale  # (B, h, T, S)
        if mask is not None and mistake != "no_mask":
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        x = scores.softmax(-1) @ v  # (B, h, T, d_k)
        if mistake == "merge_no_transpose":
            x = x.reshape(x.size(0), x.size(2), d_model)
        else:
            x = x.transpose(1, 2).reshape(x.size(0), x.size(2), d_model)  # (B, T, d_model)
        if mistake == "no_out_proj":
            return x
        return F.linear(x, state["out_proj.weight"], state["out_proj.bias"])

    mistakes = {
        "direct_view": t("heads_split_view"),
        "merge_no_transpose": t("heads_merged_wrong"),
        "kqv": t("rows_proj_used"),
        "kv_from_query": t("keys_values_computed"),
        "sqrt_d_model": t("scores_divided_d"),
        "sqrt_k_len": t("scores_divided_k"),
        "no_bias": t("projections_leave_out"),
        "no_mask": t("mask_not_passed"),
        "no_out_proj": t("output_projection_w"),
    }

    def check():
        d_model, heads = 12, 3
        with no_shortcuts(t("multi_head_attention"), TORCH_ATTENTION, allow=EARLIER):
            torch.manual_seed(3)
            mha = MultiHeadAttention(d_model, heads, dropout=0.0).eval()
        names = set(mha.state_dict())
        if names != NAMES:
            if not names - NAMES:
                missing_biases("MultiHeadAttention(12, 3)", NAMES - names)
            raise Hint(
                t(
                    "parameters_named_packages",
                    names=sorted(NAMES),
                    missing=sorted(NAMES - names),
                    unexpected=sorted(names - NAMES),
                )
            )
        state = {name: p.detach().clone() for name, p in mha.state_dict().items()}
        package = Package(d_model, heads, fast=False).eval()
        package.load_state_dict(state)
        package.keep_weights = True
        g = torch.Generator().manual_seed(3)
        tgt, memory = torch.randn(2, 4, d_model, generator=g), torch.randn(2, 6, d_model, generator=g)

        # split_heads and merge_heads on their own, with numbers that show which feature lands where
        with no_shortcuts(t("multi_head_attention"), TORCH_ATTENTION, allow=EARLIER):
            split = mha.split_heads(memory)
        if isinstance(split, torch.Tensor) and split.shape == (2, 6, heads, d_model // heads):
            raise Hint(t("split_heads_returns"))  # fmt: skip
        if close(split, memory.reshape(2, heads, 6, d_model // heads)):
            raise Hint(t("split_heads", hint=mistakes["direct_view"]))
        expect_tensor(split, package.split_heads(memory), t("split_heads_x"))
        heads_out = package.split_heads(memory)  # (2, 3, 6, 4)
        with no_shortcuts(t("multi_head_attention"), TORCH_ATTENTION, allow=EARLIER):
            merged = mha.merge_heads(heads_out)
        if close(merged, heads_out.reshape(2, 6, d_model)):
            raise Hint(t("merge_heads", hint=mistakes["merge_no_transpose"]))
        expect_tensor(merged, memory, t("merge_heads_split"))

        src_mask = torch.tensor([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1]], dtype=torch.bool)[:, None, None, :]
        causal = torch.ones(4, 4, dtype=torch.bool).tril()[None, None]  # (1, 1, T, T)
        cases = (
            (t("self_attention_padding"), memory, None, src_mask),
            (t("masked_self_attention"), tgt, None, causal),
            (t("cross_attention"), tgt, memory, None),
            (t("cross_attention_padding"), tgt, memory, src_mask),
        )
        for what, query, kv, mask in cases:
            keys = query if kv is None else kv
            with torch.no_grad():
                want = package(query, kv, kv, mask)
                want_w = package.weights
                with DropoutCalls() as calls, no_shortcuts(t("multi_head_attention"), TORCH_ATTENTION, allow=WATCHED):
                    got = mha(query, keys, keys, mask)
            _eval_drops_nothing(calls, what)
            if isinstance(got, torch.Tensor) and got.shape == (*want.shape[:-2], keys.size(1), d_model) != want.shape:
                raise Hint(t("output_vector_per", what=what, keys=keys.size(1), queries=query.size(1)))
            if isinstance(got, torch.Tensor) and got.shape == want.shape and not close(got, want):
                for mistake, hint in mistakes.items():
                    if close(got, variant(query, keys, keys, state, heads, mask, mistake)):
                        raise Hint(t("what_hint", what=what, hint=hint))
            expect_tensor(got, want, t("output_shape_what", what=what))
            kept = getattr(mha, "weights", None)
            if kept is None:
                raise Hint(t("self_weights_none"))
            expect_tensor(kept, want_w, t("self_weights_batch", what=what))

        # dropout on the attention weights: the numbers were compared above with dropout off; in training mode the
        # learner's zeros need not be the package's (a loop over heads draws them in another order, and is right),
        # so each dropout call is recorded and must drop the weights at self.dropout's rate, and the output must be
        # the block's formula on the weights those calls returned
        with no_shortcuts(t("multi_head_attention"), TORCH_ATTENTION, allow=EARLIER):
            dropping = MultiHeadAttention(d_model, heads, dropout=0.5)
        dropping.load_state_dict(state)
        what = t("cross_attention_dropout_0")
        with torch.no_grad():
            plain = package(tgt, memory, memory, src_mask)
            weights = package.weights  # (B, h, T, S), nothing dropped
            with DropoutCalls() as calls, no_shortcuts(t("multi_head_attention"), TORCH_ATTENTION, allow=WATCHED):
                got = dropping.eval()(tgt, memory, memory, src_mask)
            _eval_drops_nothing(calls, what)
            expect_tensor(got, plain, what)
            with DropoutCalls() as calls, no_shortcuts(t("multi_head_attention"), TORCH_ATTENTION, allow=WATCHED):
                got = dropping.train()(tgt, memory, memory, src_mask)
        _check_weights_dropout(got, plain, weights, calls, state, package, memory)

        # gradients reach every parameter, as in the package; the kept weights hold no graph
        package.eval()
        mha.zero_grad()
        tgt_leaf, memory_leaf = tgt.clone().requires_grad_(), memory.clone().requires_grad_()
        with no_shortcuts(t("multi_head_attention"), TORCH_ATTENTION, allow=EARLIER):
            got = mha(tgt_leaf, memory_leaf, memory_leaf, src_mask)
        if not isinstance(got, torch.Tensor) or got.grad_fn is None:
            raise Hint(t("no_gradient_flows"))
        kept = getattr(mha, "weights", None)
        if isinstance(kept, torch.Tensor) and (kept.requires_grad or kept.grad_fn is not None):
            raise Hint(t("self_weights_not"))
        got.pow(2).sum().backward()
        package.zero_grad()
        package(tgt, memory, memory, src_mask).pow(2).sum().backward()
        mine = dict(mha.named_parameters())
        for name, p in package.named_parameters():
            grad = mine[name].grad
            if grad is None:
                raise Hint(t("no_gradient_reaches", name=name))
            if name == "in_proj.weight" and torch.equal(grad[: 2 * d_model], torch.zeros_like(grad[: 2 * d_model])):
                raise Hint(t("no_gradient_reaches_w"))
            expect_tensor(grad, p.grad, t("gradient", name=name), atol=1e-4)

        try:
            MultiHeadAttention(10, 4)
        except Exception:
            return
        raise Hint(t("multiheadattention_10_4"))

    def guarded():
        try:
            check()
        except NotImplementedError as error:
            if _attention_file_not_written(error):
                raise Hint(t("my_transformer_attention")) from None
            raise

    return run_check("MultiHeadAttention", guarded, t("passed_split_merge"))


# ---- exercise 1: every shape, as a function of the sizes --------------------------------------------------


NAMES_OF_SHAPES = ("q", "k", "weights", "heads_out", "output")
SIZES = [(2, 4, 6, 512, 8), (3, 7, 5, 64, 4), (1, 100_000, 50_000, 4096, 32)]  # the last is far too big to build


@checker(lazy_t("predicted_shapes"), lazy_t("passed_every_shape"))
def check_predicted_shapes(predicted_shapes):
    """``predicted_shapes(batch, T, S, d_model, heads)`` → a dict with the shapes of 'q', 'k', 'weights',
    'heads_out' and 'output' in cross-attention (T queries from the target, S keys and values from the memory)."""
    for batch, T, S, d_model, heads in SIZES:
        what = f"predicted_shapes(batch={batch}, T={T}, S={S}, d_model={d_model}, heads={heads})"
        with too_big_to_build(what):
            predicted = predicted_shapes(batch, T, S, d_model, heads)
        if not isinstance(predicted, dict):
            raise Hint(t("return_dict_such", what=what, type=type(predicted).__name__))
        missing = [name for name in NAMES_OF_SHAPES if name not in predicted]
        if missing:
            raise Hint(
                t("no_entry_give", what=what, missing=missing, names=list(NAMES_OF_SHAPES))  # fmt: skip
            )
        d_k = d_model // heads
        want = {
            "q": (batch, heads, T, d_k),
            "k": (batch, heads, S, d_k),
            "weights": (batch, heads, T, S),
            "heads_out": (batch, heads, T, d_k),
            "output": (batch, T, d_model),
        }
        wrong = {
            ("q", (batch, T, heads, d_k)): t("before_transpose_split"),  # fmt: skip
            ("q", (batch, heads, T, d_model)): t("each_head_d"),
            ("q", (batch, T, d_model)): t("before_split_queries"),
            ("k", (batch, heads, T, d_k)): t("keys_come_source"),
            ("k", (batch, S, heads, d_k)): t("before_transpose_heads"),
            ("weights", (batch, heads, S, T)): t("rows_queries_target"),  # fmt: skip
            ("weights", (batch, T, S)): t("each_head_own"),
            ("weights", (batch, heads, T, T)): t("cross_attention_weights"),  # fmt: skip
            ("heads_out", (batch, heads, S, d_k)): t("output_per_query"),  # fmt: skip
            ("heads_out", (batch, heads, T, S)): t("weights_weights_v"),
            ("output", (batch, S, d_model)): t("block_returns_vector"),
            ("output", (batch, T, d_k)): t("merging_heads_w"),
            ("output", (batch, heads, T, d_k)): t("before_merge_concat"),  # fmt: skip
        }
        for name in NAMES_OF_SHAPES:
            entry = f"{what}[{name!r}]"
            if predicted[name] is ... or predicted[name] is None:
                raise NotImplementedError
            got = as_shape(predicted[name], entry)
            if got == want[name]:
                continue
            hint = wrong.get((name, got))
            if hint is None and len(got) != len(want[name]):
                hint = t("dimensions_count_axes", got=len(got))
            if hint is None:
                axis = next(i for i, (a, b) in enumerate(zip(got, want[name])) if a != b)
                hint = t("number_dimensions_right", axis=axis)
            raise Hint(t("what_got_hint", what=entry, got=got, hint=hint))


# ---- exercise 2: parameters with free d_k and d_v (a closed form, checked on a size too big to build) ----


@checker(lazy_t("parameter_count"), lazy_t("passed_parameter_count"))
def check_attention_parameter_count(count):
    """``count(d_model, heads, d_k, d_v)``: the weights and biases of one multi-head attention block."""
    for d_model, heads, d_k, d_v in ((512, 8, 64, 64), (512, 8, 16, 64), (64, 4, 8, 24), (512, 1, 512, 512),
                                     (65536, 64, 2048, 1024)):  # fmt: skip
        what = f"count(d_model={d_model}, heads={heads}, d_k={d_k}, d_v={d_v})"
        with too_big_to_build(what):
            got = as_int(count(d_model, heads, d_k, d_v), what)
        qk, v = heads * d_k, heads * d_v
        want = 2 * (d_model * qk + qk) + (d_model * v + v) + (v * d_model + d_model)
        if got == want:
            continue
        wrong = {
            4 * d_model * d_model + 4 * d_model: t("uses_d_model"),
            want - 2 * qk - v - d_model: t("counts_weights_only"),
            want - v * d_model + qk * d_model: t("sizes_w_o"),
            2 * (d_model * d_k + d_k) + (d_model * d_v + d_v) + (d_v * d_model + d_model): t("counts_head_every"),
        }
        hint = wrong.get(got) or t("add_up_four")
        raise Hint(t("expected", what=what, got=got, want=want, hint=hint))


# ---- exercise 3: grouped-query attention (a variant) ------------------------------------------------------


@checker(lazy_t("grouped_query_attention"), lazy_t("passed_each_group"))
def check_grouped_query_attention(grouped_query_attention):
    """``grouped_query_attention(query, key, value, mask=None)``: query (batch, heads, T, d_k), key and value
    (batch, groups, S, d_k) with ``groups`` dividing ``heads``; query heads g·(heads/groups) … share key/value
    head g. Returns (output (batch, heads, T, d_k), weights (batch, heads, T, S))."""
    package = _PACKAGE_ATTENTION

    g = torch.Generator().manual_seed(5)
    for heads, groups in ((6, 2), (4, 4), (4, 1)):
        query = torch.randn(2, heads, 3, 8, generator=g)
        key, value = torch.randn(2, groups, 5, 8, generator=g), torch.randn(2, groups, 5, 8, generator=g)
        mask = torch.tensor([[True] * 5, [True, True, True, False, False]])[:, None, None, :]  # (2, 1, 1, 5)
        what = f"grouped_query_attention(query (2, {heads}, 3, 8), key (2, {groups}, 5, 8), value (2, {groups}, 5, 8), mask)"
        share = heads // groups
        want_out, want_w = package(query, key.repeat_interleave(share, 1), value.repeat_interleave(share, 1), mask)
        with no_shortcuts(t("grouped_query_attention"), TORCH_ATTENTION, allow=EARLIER):
            got = grouped_query_attention(query, key, value, mask)
        if not isinstance(got, (tuple, list)) or len(got) != 2:
            raise Hint(t("return_pair_output", what=what))
        out, weights = got
        if isinstance(out, torch.Tensor) and out.shape == want_out.shape and not close(out, want_out):
            tiled_out, _ = package(query, key.repeat(1, share, 1, 1), value.repeat(1, share, 1, 1), mask)
            if close(out, tiled_out):
                raise Hint(t("query_head_uses_group", what=what))
            unmasked, _ = package(query, key.repeat_interleave(share, 1), value.repeat_interleave(share, 1))
            if close(out, unmasked):
                raise Hint(t("mask_not_used", what=what))
        expect_tensor(weights, want_w, t("weights_batch_heads", what=what))
        expect_tensor(out, want_out, t("output_batch_heads", what=what))


# ---- questions: a number to work out and a consequence ---------------------------------------------------------

QUESTIONS = questions(
    "nb03_multi_head_attention",
    lazy_t,
    gqa_parameters="8a826b298f557b121def2628",
    cross="85953bf589c362b086c15ee4",
)
GQA_PARAMETERS, CROSS = QUESTIONS["gqa_parameters"], QUESTIONS["cross"]


@answer_check
def check_question_gqa_parameters(answer) -> Result:
    """Grouped-query attention, d_model 512, 8 query heads, 2 key/value heads: weights of W^Q, W^K, W^V."""
    return check_question(t("question_1_grouped"), GQA_PARAMETERS, answer)


@answer_check
def check_question_cross(answer) -> Result:
    """How often must one decoder layer's cross-attention project the memory while translating a sentence?"""
    return check_question(t("question_2_cross"), CROSS, answer)


read_only(__name__)  # what the checks use stays what it was at import (ex.no_shortcuts = … is refused)

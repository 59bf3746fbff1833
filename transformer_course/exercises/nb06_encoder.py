"""Checkers for notebook 06 (the encoder; paper §3.1, §3.2.3, §3.5, §5.4): the build cell and the exercises.

from transformer_course.exercises import nb06_encoder as ex
ex.check_encoder_layer(EncoderLayer)                # your my_transformer/encoder.py against the package
ex.check_encoder(Encoder, EncoderLayer)             # the stack: N copies, the final LayerNorm of pre-LN
ex.check_mask_effect(changes)                       # predict which outputs change without the padding mask
ex.check_left_padded_positions(left_padded_positions)   # a variant: seat numbers that ignore left padding
ex.check_encoder_parameter_count(encoder_parameter_count)   # estimate the cost, in closed form
ex.check_quiz(q1=q1, q2=q2, q3=q3)                  # three short questions

The build cells are checked with :mod:`.layer_checks`. Tables of yes/no answers may be nested lists or tuples, a
numpy array or a tensor, of booleans or of 0/1.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import torch
from torch import Tensor, nn

from ..i18n import messages
from ..masks import padding_mask
from . import Hint, as_int, as_mask, checker, questions, quiz_checker, same
from .guard import earlier_fallbacks, read_only
from .layer_checks import (
    allowing,
    check_dropout,
    check_gradients,
    closed_form,
    guarded,
    load_weights,
    meta_count,
    name_mistake,
    package_model,
    randomize,
    shares_weights,
)
from .seal import answer_check

t, lazy_t = messages("nb06_encoder")

__all__ = [
    "QUESTIONS",
    "check_encoder",
    "check_encoder_layer",
    "check_encoder_parameter_count",
    "check_left_padded_positions",
    "check_mask_effect",
    "check_quiz",
]

PAD = 0
D_MODEL, HEADS, D_FF = 16, 4, 32


# The pieces of earlier notebooks the learner's file builds on may be the package's (a marked fallback for a file
# the learner skipped: transformer_course.learner.fill_missing_files); the lesson here is the layer and the stack,
# so only the package's own layers (transformer_course.model: EncoderLayer, Encoder, clones, final_norm) and
# PyTorch's transformer functions count as shortcuts.
EARLIER_PIECES = (*earlier_fallbacks("06"), "transformer_course.attention", "transformer_course.layers")


def _src_batch(S: int = 5) -> tuple[Tensor, Tensor]:
    """Token ids (2, S), the second sentence padded after 3 real tokens, and its padding mask (2, 1, 1, S)."""
    src = torch.randint(4, 20, (2, S))
    src[1, 3:] = PAD
    return src, padding_mask(src, PAD)


# ---- The build cell: EncoderLayer -----------------------------------------------------------------------------------


def _check_encoder_layer_once(EncoderLayer, norm_first: bool, model, what: str) -> None:
    name = f"EncoderLayer(16, 4, 32, dropout=0.5, norm_first={norm_first})"
    mine = guarded(what, EncoderLayer, D_MODEL, HEADS, D_FF, 0.5, norm_first=norm_first)
    ref = randomize(model.EncoderLayer(D_MODEL, HEADS, D_FF, 0.5, norm_first=norm_first))
    load_weights(mine, ref, name)
    mine.eval(), ref.eval()
    _, mask = _src_batch()
    x = torch.randn(2, 5, D_MODEL)  # (B, S, d_model)
    with torch.no_grad():
        got = guarded(what, mine, x, mask)
        post = model.EncoderLayer(D_MODEL, HEADS, D_FF, 0.0, norm_first=not norm_first)
        post.load_state_dict(ref.state_dict())
        attn, ffn, s0, s1 = ref.self_attn, ref.feed_forward, ref.sublayer[0], ref.sublayer[1]
        mistakes = {
            t("padding_mask_does"): lambda: ref(x, None),
            t("norm_first_ignored"): lambda: post(x, mask),
            t("sub_layers_run"): lambda: s1(s0(x, ffn), lambda y: attn(y, mask=mask)),
            t("residual_missing_add"): lambda: s1.norm(ffn(s0.norm(attn(x, mask=mask)))),
            t("ffn_reads_layers"): lambda: s1(x, ffn),
            t("both_sub_layers"): lambda: s0(s0(x, lambda y: attn(y, mask=mask)), ffn),
            t("both_sub_layers_go"): lambda: s1(s1(x, lambda y: attn(y, mask=mask)), ffn),
        }
        name_mistake(got, ref(x, mask), mistakes, name)
    check_dropout(mine, ref, (x, mask), name)
    check_gradients(mine, ref, (x, mask), name)


@allowing(EARLIER_PIECES)
@checker(lazy_t("encoder_layer_name"), lazy_t("encoderlayer_equals_packages"))
def check_encoder_layer(EncoderLayer):
    """``EncoderLayer(d_model, heads, d_ff, dropout, norm_first=False)`` of my_transformer/encoder.py: the package's
    values (post-LN and pre-LN), its dropout placement and its gradients, with the package's weights loaded."""
    model = package_model()
    what = t("encoder_layer")
    for norm_first in (False, True):
        _check_encoder_layer_once(EncoderLayer, norm_first, model, what)


# ---- The build cell: the stack --------------------------------------------------------------------------------------


def _check_encoder_once(Encoder, EncoderLayer, norm_first: bool, model, what: str) -> None:
    name = f"Encoder(EncoderLayer(16, 4, 32, 0.0, norm_first={norm_first}), N=3)"
    layer = guarded(what, EncoderLayer, D_MODEL, HEADS, D_FF, 0.0, norm_first=norm_first)
    mine = guarded(what, Encoder, layer, 3)
    layers = getattr(mine, "layers", None)
    if not isinstance(layers, nn.ModuleList) or len(layers) != 3:
        raise Hint(
            t(
                "keep_3_layers",
                name=name,
                got=type(layers).__name__ if not isinstance(layers, nn.ModuleList) else len(layers),
            )
        )
    if shares_weights(layers):
        raise Hint(t("layers_share_weights", name=name))
    has_norm = any(k.startswith("norm.") for k in mine.state_dict())
    if has_norm and not norm_first:
        raise Hint(t("post_ln_stack", name=name))
    if norm_first and not has_norm:
        raise Hint(t("pre_ln_stack", name=name))
    ref = model.Encoder(model.EncoderLayer(D_MODEL, HEADS, D_FF, 0.0, norm_first), 3)
    randomize(ref)
    load_weights(mine, ref, name)
    mine.eval(), ref.eval()
    src, mask = _src_batch()
    x = torch.randn(2, 5, D_MODEL)
    with torch.no_grad():
        got = guarded(what, mine, x, mask)

        def layers_only(n: int, chain: bool = True) -> Tensor:
            y = x
            for layer in ref.layers[:n]:
                y = layer(y if chain else x, mask)
            return y

        mistakes = {
            t("final_layernorm_built"): (lambda: layers_only(3)),
            t("only_layer_runs"): lambda: ref.norm(layers_only(1)),
            t("each_layer_reads"): lambda: ref.norm(layers_only(3, chain=False)),
            t("mask_does_not"): lambda: ref(x, None),
        }
        name_mistake(got, ref(x, mask), mistakes, name)
        # padding changes nothing: sentence 0 alone, then with 4 <pad> appended (and its mask)
        alone = guarded(what, mine, x[:1], mask[:1])
        padded_x = torch.cat([x[:1], torch.randn(1, 4, D_MODEL)], dim=1)  # (1, 9, d_model)
        padded_mask = torch.cat([mask[:1], torch.zeros(1, 1, 1, 4, dtype=torch.bool)], dim=-1)
        with_pads = guarded(what, mine, padded_x, padded_mask)[:, :5]
        if not same(with_pads, alone, atol=1e-5):
            raise Hint(t("appending_pad_changes", name=name))


@allowing(EARLIER_PIECES)
@checker(lazy_t("encoder_name"), lazy_t("encoder_holds_n"))
def check_encoder(Encoder, EncoderLayer):
    """``Encoder(layer, N)``: N deep copies of ``layer`` (each its own weights) and, only when the layer is
    pre-LN, one more LayerNorm at the end; equal to the package's ``Encoder`` with the same weights; padding
    changes no real position's output."""
    model = package_model()
    what = t("encoder")
    for norm_first in (False, True):
        _check_encoder_once(Encoder, EncoderLayer, norm_first, model, what)


# ---- Exercise 1: predict which outputs change when the padding mask is left out -------------------------------------

# the notebook's batch: sentence 0 has five real tokens, sentence 1 three real tokens and two <pad>
SRC = torch.tensor([[5, 6, 7, 8, 9], [5, 6, 7, PAD, PAD]])


def _as_table(got, shape: tuple[int, ...], what: str) -> Tensor:
    """A yes/no table (nested lists or tuples, numpy array or tensor; booleans or 0/1) as a bool tensor."""
    if not isinstance(got, Tensor):
        try:
            got = torch.as_tensor(got.tolist() if hasattr(got, "tolist") else got)
        except (TypeError, ValueError, RuntimeError):
            raise Hint(t("table_list_lists", what=what, rows=shape[0], columns=shape[1])) from None
    return as_mask(got, shape, what)


def _change_mistakes(want: Tensor) -> dict[str, Tensor]:
    pads = SRC == PAD  # (B, S)
    has_pads = pads.any(dim=1, keepdim=True)  # (B, 1): the sentences that have <pad>
    return {
        t("real_tokens_sentence"): pads,
        t("pad_positions_sentence"): ~pads & has_pads,
        t("sentence_0_no"): torch.ones_like(want),
        t("leaving_mask_out"): torch.zeros_like(want),
    }


@answer_check
@checker(lazy_t("mask_effect"), lazy_t("only_sentence_pad"))
def check_mask_effect(changes):
    """``changes``: a (2, 5) table, True where the encoder's output at (sentence, position) changes when
    the padding mask is left out (``model.encode(src, None)`` instead of ``model.encode(src, src_mask)``)."""
    if changes is ... or changes is None:
        raise NotImplementedError
    got = _as_table(changes, tuple(SRC.shape), "changes")
    # measured now, on a fresh model of the notebook's sizes (never stored)
    torch.manual_seed(6)
    model = package_model().make_model(20, 20, N=2, d_model=16, d_ff=32, h=4, dropout=0.0).eval()
    with torch.no_grad():
        moved = model.encode(SRC, padding_mask(SRC, PAD)) - model.encode(SRC, None)  # (B, S, d_model)
    want = moved.abs().amax(dim=-1) > 1e-4  # (B, S)
    if torch.equal(got, want):
        return
    for hint, value in _change_mistakes(want).items():
        if torch.equal(got, value):
            raise Hint(hint)
    wrong = (got != want).nonzero()[0].tolist()
    raise Hint(t("sentence_position_said", sentence=wrong[0], position=wrong[1], said=bool(got[tuple(wrong)])))


# ---- Exercise 2: seat numbers that left padding does not move (a variant of §3.5's positions) -----------------------

LEFT_CASES = (  # (batch, S) token ids: right-padded, left-padded, mixed, no padding
    torch.tensor([[5, 6, 7, 8, 9], [5, 6, 7, PAD, PAD]]),
    torch.tensor([[PAD, PAD, 5, 6, 7], [PAD, 8, 9, 10, 11], [12, 13, 14, 15, 16]]),
    torch.tensor([[PAD, PAD, PAD, 4, 5, 6], [7, 8, 9, PAD, PAD, PAD], [PAD, 10, 11, 12, 13, PAD]]),
    torch.tensor([[9, 8, 7, 6]]),
)


@checker(lazy_t("left_padded_positions"), lazy_t("real_tokens_numbered"))
def check_left_padded_positions(left_padded_positions: Callable[[Tensor, int], Tensor]):
    """``left_padded_positions(src, pad)`` → (batch, S) integer seat numbers: the real tokens of each sentence
    numbered 0, 1, 2, … from its first real token, wherever its <pad> are; at a <pad> any seat in [0, S)."""
    for src in LEFT_CASES:
        what = f"left_padded_positions(src={src.tolist()}, pad={PAD})"
        got = left_padded_positions(src.clone(), PAD)
        if not isinstance(got, Tensor):
            raise Hint(t("torch_tensor_got", what=what, type=type(got).__name__))
        if tuple(got.shape) != tuple(src.shape):
            raise Hint(t("shape_expected_seat", what=what, got=tuple(got.shape), expected=tuple(src.shape)))
        if got.is_floating_point() or got.dtype == torch.bool:
            raise Hint(t("dtype_seat_numbers", what=what, dtype=got.dtype))
        real = src != PAD  # (B, S)
        S = src.size(1)
        for b in range(src.size(0)):
            seats = got[b][real[b]].tolist()
            want = list(range(int(real[b].sum())))
            if seats == want:
                continue
            plain = torch.arange(S)[real[b]].tolist()
            if seats == plain:
                raise Hint(t("sentence_those_plain", what=what, b=b))
            if seats == [s + 1 for s in want]:
                raise Hint(t("sentence_off_first", what=what, b=b))
            if seats == want[::-1]:
                raise Hint(t("sentence_counted_end", what=what, b=b))
            raise Hint(t("sentence_real_tokens", what=what, b=b, seats=seats, want=want))
        if bool(((got < 0) | (got >= S)).any()):
            raise Hint(t("seat_outside_0", what=what, S=S))


# ---- Exercise 3: how many parameters has the encoder? In closed form: no model built, no tensor made ----------------


@checker("encoder_parameter_count", lazy_t("closed_form_right"))
def check_encoder_parameter_count(encoder_parameter_count: Callable[[int, int, int], int]):
    """``encoder_parameter_count(N, d_model, d_ff)`` = the parameters of N post-LN encoder layers, for sizes up to
    N = 48, d_model = 4096, d_ff = 16384 (about 9.7 billion: 39 GB in float32), with no tensor made."""
    model = package_model()
    for N, d_model, d_ff in ((1, 8, 16), (2, 16, 48), (6, 512, 2048), (48, 4096, 16384), (13, 1000, 3000)):
        what = f"encoder_parameter_count(N={N}, d_model={d_model}, d_ff={d_ff})"
        got = as_int(closed_form(encoder_parameter_count, (N, d_model, d_ff), what), what)
        expected = N * meta_count(functools.partial(model.EncoderLayer, d_model, 8, d_ff, 0.0))
        if got == expected:
            continue
        d = d_model
        misses = {
            expected // N: t("one_layer_not_n"),
            expected - N * (4 * d + d_ff + d): t("biases_missing"),
            expected - N * 4 * d: t("two_layernorms_each"),
            expected - N * 2 * d: t("each_layer_two"),
            expected - N * (d * d + d): t("multi_head_attention"),
            expected - N * (d * d_ff + d_ff): t("ffn_two_matrices"),
        }
        hint = misses.get(got) or t("count_per_layer")
        raise Hint(t("returned_expected", what=what, got=got, expected=expected, hint=hint))


# ---- Questions ------------------------------------------------------------------------------------------------------

QUESTIONS = questions(
    "nb06_encoder",
    lazy_t,
    q1="a7ac22ec13bce75e648e47d2",
    q2="1b23c42e46bf75a22f8cc220",
    q3="c41a0c0f4d87a688b40c6098",
)


check_quiz = quiz_checker(QUESTIONS)  # one line per question

read_only(__name__)  # what the checks use stays what it was at import (ex.no_shortcuts = … is refused)

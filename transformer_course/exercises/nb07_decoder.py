"""Checkers for notebook 07 (the decoder and the whole model; paper §3.1, §3.2.3, §3.4, §5.4): the build cell
and the exercises.

from transformer_course.exercises import nb07_decoder as ex
ex.check_decoder_layer(DecoderLayer)                 # your my_transformer/decoder.py against the package
ex.check_decoder(Decoder, DecoderLayer)              # the stack
ex.check_make_model(make_model)                      # the whole model: Generator, EncoderDecoder, make_model
model_1, model_2 = ex.mystery_models()               # find the bug: each model has one
ex.check_mystery(model_1=bug_in_model_1, model_2=bug_in_model_2)   # the letter of each model's bug
ex.check_parameter_count(parameter_count)            # estimate the cost, in closed form, with each kind of tying
ex.check_quiz(q1=q1, q2=q2, q3=q3)                   # nn.Transformer as a PyTorch user meets it

The build cells are checked with :mod:`.layer_checks`. Letters may be given as 'b', 'B' or '(b)'.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable

import torch
from torch import Tensor, nn

from ..i18n import messages
from ..masks import padding_mask, target_mask
from . import Hint, as_choice, as_int, checker, questions, quiz_checker, unlocked_text
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

# what a decoder may call besides the learner's code: the earlier files' fallbacks (the package's encoder too), its
# attention and layers; the package's DecoderLayer, Decoder, Generator, EncoderDecoder, make_model … are shortcuts
EARLIER_PIECES = (*earlier_fallbacks("07"), "transformer_course.attention", "transformer_course.layers")


t, lazy_t = messages("nb07_decoder")

__all__ = [
    "QUESTIONS",
    "check_decoder",
    "check_decoder_layer",
    "check_make_model",
    "check_mystery",
    "check_parameter_count",
    "check_quiz",
    "mystery_models",
]

PAD, BOS = 0, 2
D_MODEL, HEADS, D_FF = 16, 4, 32


def _batch(S: int, T: int) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Source (2, S) and target (2, T) token ids, sentence 1 of each padded, and their masks (True = may attend):
    src_mask (2, 1, 1, S), tgt_mask (2, 1, T, T) = padding and causal."""
    src, tgt = torch.randint(4, 20, (2, S)), torch.randint(4, 20, (2, T))
    tgt[:, 0] = BOS
    src[1, S - 2 :] = PAD
    tgt[1, T - 2 :] = PAD
    return src, tgt, padding_mask(src, PAD), target_mask(tgt, PAD)


# ---- The build cell: DecoderLayer -----------------------------------------------------------------------------------


def _check_decoder_layer_once(DecoderLayer, norm_first: bool, S: int, model, what: str) -> None:
    name = f"DecoderLayer(16, 4, 32, dropout=0.5, norm_first={norm_first})"
    mine = guarded(what, DecoderLayer, D_MODEL, HEADS, D_FF, 0.5, norm_first=norm_first)
    ref = randomize(model.DecoderLayer(D_MODEL, HEADS, D_FF, 0.5, norm_first=norm_first))
    load_weights(mine, ref, name)
    mine.eval(), ref.eval()
    T = 5
    _, _, src_mask, tgt_mask = _batch(S, T)
    x, memory = torch.randn(2, T, D_MODEL), torch.randn(2, S, D_MODEL)  # (B, T, d_model), (B, S, d_model)
    args = (x, memory, src_mask, tgt_mask)
    with torch.no_grad():
        got = guarded(what, mine, *args)
        other = model.DecoderLayer(D_MODEL, HEADS, D_FF, 0.0, norm_first=not norm_first)
        other.load_state_dict(ref.state_dict())
        sa, ca, ffn = ref.self_attn, ref.cross_attn, ref.feed_forward

        def layer(self_mask, cross_kv, cross_mask, order=("self", "cross"), uses=(0, 1, 2), queries=None) -> Tensor:
            """The layer with one slip: other masks, keys and values, order, sub-layers, or queries from ``queries``."""
            first, second, third = (ref.sublayer[i] for i in uses)
            y = x
            for part in order:
                if part == "self":
                    y = first(y, lambda z: sa(z, mask=self_mask))
                elif queries is not None:  # the queries from the memory, the keys and values from the decoder
                    y = second(y, lambda z: ca(queries, z, mask=cross_mask))
                else:
                    y = second(y, lambda z: ca(z, cross_kv if cross_kv is not None else z, mask=cross_mask))
            return third(y, ffn)

        mistakes = {
            t("masks_swapped_self"): lambda: layer(src_mask, memory, tgt_mask),
            t("cross_attention_attends"): lambda: layer(tgt_mask, None, tgt_mask),
            t("cross_attention_attends_over"): (lambda: layer(tgt_mask, None, src_mask)),
            t("cross_attention_takes"): lambda: layer(tgt_mask, memory, src_mask, queries=memory),
            t("future_leaks_self"): lambda: layer(None, memory, src_mask),
            t("sources_pad_read"): lambda: layer(tgt_mask, memory, None),
            t("cross_attention_comes"): (lambda: layer(tgt_mask, memory, src_mask, order=("cross", "self"))),
            t("norm_first_ignored"): lambda: other(*args),
        }
        for uses in itertools.product(range(3), repeat=3):
            if len(set(uses)) < 3:  # one residual connection serves two or three sub-layers
                mistakes[t("three_sub_layers", used=", ".join(f"self.sublayer[{i}]" for i in uses))] = (
                    functools.partial(layer, tgt_mask, memory, src_mask, uses=uses)
                )
        name_mistake(got, ref(*args), mistakes, name)
    check_dropout(mine, ref, args, name)
    check_gradients(mine, ref, args, name)


@allowing(EARLIER_PIECES)
@checker(lazy_t("decoder_layer_name"), lazy_t("decoderlayer_equals_packages"))
def check_decoder_layer(DecoderLayer):
    """``DecoderLayer(d_model, heads, d_ff, dropout, norm_first=False)`` with ``forward(x, memory, src_mask,
    tgt_mask)``: the package's values (post-LN and pre-LN, source as long as the target and longer), dropout
    placement and gradients, with the package's weights loaded."""
    model = package_model()
    what = t("decoder_layer")
    for norm_first, S in ((False, 5), (True, 5), (False, 7)):  # S = T first, so that swapped masks still run
        _check_decoder_layer_once(DecoderLayer, norm_first, S, model, what)


# ---- The build cell: the decoder stack ------------------------------------------------------------------------------


def _check_decoder_once(Decoder, DecoderLayer, norm_first: bool, model, what: str) -> None:
    name = f"Decoder(DecoderLayer(16, 4, 32, 0.0, norm_first={norm_first}), N=3)"
    layer = guarded(what, DecoderLayer, D_MODEL, HEADS, D_FF, 0.0, norm_first=norm_first)
    mine = guarded(what, Decoder, layer, 3)
    layers = getattr(mine, "layers", None)
    if not isinstance(layers, nn.ModuleList) or len(layers) != 3:
        raise Hint(t("keep_3_layers", name=name))
    if shares_weights(layers):
        raise Hint(t("layers_share_weights", name=name))
    has_norm = any(k.startswith("norm.") for k in mine.state_dict())
    if has_norm != norm_first:
        raise Hint(t("pre_ln_stack", name=name))
    ref = model.Decoder(model.DecoderLayer(D_MODEL, HEADS, D_FF, 0.0, norm_first), 3)
    randomize(ref)
    load_weights(mine, ref, name)
    mine.eval(), ref.eval()
    _, _, src_mask, tgt_mask = _batch(5, 5)
    x, memory = torch.randn(2, 5, D_MODEL), torch.randn(2, 5, D_MODEL)
    with torch.no_grad():
        got = guarded(what, mine, x, memory, src_mask, tgt_mask)

        def stack(n: int = 3, chain: bool = True, kv: Tensor | None = memory, final: bool = True) -> Tensor:
            y = x
            for one in ref.layers[:n]:
                y = one(y if chain else x, memory if kv is None else kv, src_mask, tgt_mask)
            return ref.norm(y) if final else y

        mistakes = {
            t("final_layernorm_built"): lambda: stack(final=False),
            t("only_layer_runs"): lambda: stack(1),
            t("each_layer_reads"): lambda: stack(chain=False),
            t("every_layer_reads"): lambda: _chain_as_memory(ref, x, src_mask, tgt_mask),
            t("masks_swapped_their"): lambda: ref(x, memory, tgt_mask, src_mask),
        }
        name_mistake(got, ref(x, memory, src_mask, tgt_mask), mistakes, name)


def _chain_as_memory(ref, x, src_mask, tgt_mask) -> Tensor:
    """A stack that hands each layer its own input as the memory (the plausible mix-up of x and memory)."""
    y = x
    for one in ref.layers:
        y = one(y, y, src_mask, tgt_mask)
    return ref.norm(y)


@allowing(EARLIER_PIECES)
@checker(lazy_t("decoder_name"), lazy_t("decoder_holds_n"))
def check_decoder(Decoder, DecoderLayer):
    """``Decoder(layer, N)``: N independent copies, the final LayerNorm only when pre-LN, the memory and both
    masks handed to every layer; equal to the package's ``Decoder`` with the same weights."""
    model = package_model()
    what = t("decoder")
    for norm_first in (False, True):
        _check_decoder_once(Decoder, DecoderLayer, norm_first, model, what)


# ---- The build cell: Generator, EncoderDecoder and make_model, checked through make_model ---------------------------


def _is_xavier(p: Tensor) -> bool:
    """A matrix drawn from Xavier-uniform: inside ±√(6 / (fan_in + fan_out)), spread like a uniform on it."""
    bound = math.sqrt(6.0 / (p.size(0) + p.size(1)))
    return bool(p.abs().max() <= bound * (1 + 1e-6)) and abs(float(p.std()) / (bound / math.sqrt(3)) - 1) < 0.15


def _tying(model: nn.Module) -> tuple[bool, bool]:
    """(generator = target embedding, source embedding = target embedding): the same tensor, not equal values."""
    return (
        model.generator.proj.weight is model.tgt_embed.lut.weight,
        model.src_embed.lut.weight is model.tgt_embed.lut.weight,
    )


def _check_model_once(make_model, options: dict, model, what: str) -> None:
    sizes = dict(N=2, d_model=D_MODEL, d_ff=D_FF, h=HEADS, dropout=0.5)
    src_vocab = 23 if options.get("tie_embeddings") != "all" else 19
    extra = "".join(f", {key}={value!r}" for key, value in options.items())
    name = f"make_model({src_vocab}, 19, N=2, d_model=16, d_ff=32, h=4, dropout=0.5{extra})"
    mine = guarded(what, make_model, src_vocab, 19, **sizes, **options)
    for method in ("encode", "decode", "generator"):
        if not hasattr(mine, method):
            raise Hint(t("no_encoderdecoder_needs", name=name, method=method))
    ref = model.make_model(src_vocab, 19, **sizes, **options)
    tie = options.get("tie_embeddings", "decoder")
    want_tie = (tie in ("decoder", "all"), tie == "all")
    got_tie = _tying(mine)
    if got_tie[0] != want_tie[0]:
        if want_tie[0]:
            raise Hint(t("generator_target_embedding", name=name))
        raise Hint(t("tie_embeddings_none", name=name))
    if got_tie[1] != want_tie[1]:
        raise Hint(t("tie_embeddings_all", name=name))
    if options.get("norm_first") and not any(k.startswith("encoder.norm.") for k in mine.state_dict()):
        raise Hint(t("norm_first_does", name=name))
    if options.get("positional") == "learned" and "src_pos.table" not in dict(mine.named_parameters()):
        raise Hint(t("positional_learned_give", name=name))
    not_xavier = [n for n, p in mine.named_parameters() if p.dim() > 1 and not _is_xavier(p.detach())]
    if not_xavier:
        raise Hint(t("does_not_look", name=name, param=not_xavier[0]))
    load_weights(mine, ref, name)
    mine.eval(), ref.eval()
    S = T = 6
    src, tgt, src_mask, tgt_mask = _batch(S, T)
    src, tgt = src % src_vocab, tgt % 19
    with torch.no_grad():
        memory = ref.encode(src, src_mask)
        hidden = ref.decode(memory, src_mask, tgt, tgt_mask)
        got = guarded(what, mine.encode, src, src_mask)
        name_mistake(
            got,
            memory,
            {
                t("encode_skips_positions"): lambda: ref.encoder(ref.src_embed(src), src_mask),
                t("encode_drops_mask"): lambda: ref.encode(src, None),
            },
            f"{name}.encode",
        )
        got = guarded(what, mine.decode, memory, src_mask, tgt, tgt_mask)
        name_mistake(
            got,
            hidden,
            {
                t("decode_skips_positions"): lambda: ref.decoder(ref.tgt_embed(tgt), memory, src_mask, tgt_mask),
                t("decode_embeds_target"): lambda: ref.decoder(
                    ref.tgt_pos(ref.src_embed(tgt)), memory, src_mask, tgt_mask
                ),
                t("decode_swaps_masks"): lambda: ref.decoder(
                    ref.tgt_pos(ref.tgt_embed(tgt)), memory, tgt_mask, src_mask
                ),
            },
            f"{name}.decode",
        )
        got = guarded(what, mine.generator, hidden)
        logits = ref.generator(hidden)
        name_mistake(
            got,
            logits,
            {
                t("generator_returns_logits"): (lambda: logits.log_softmax(dim=-1)),
                t("generator_returns_logits_not"): lambda: logits.softmax(dim=-1),
            },
            f"{name}.generator",
        )
        got = guarded(what, mine, src, tgt, src_mask, tgt_mask)
        name_mistake(
            got,
            hidden,
            {
                t("forward_gives_decoder"): (lambda: ref.decode(ref.encode(src, src_mask), tgt_mask, tgt, tgt_mask)),
                t("forward_returns_logits"): (lambda: logits),
            },
            f"{name}.forward",
        )
    args = (src, tgt, src_mask, tgt_mask)
    if not options:  # the layers' dropout is checked above; here the embeddings' and positions' once
        check_dropout(mine, ref, args, name)
    if options.get("tie_embeddings") != "none":  # a tied matrix gets the gradients of both its uses
        check_gradients(mine, ref, args, name, head="generator")


@allowing(EARLIER_PIECES)
@checker(lazy_t("whole_model"), lazy_t("make_model_builds"))
def check_make_model(make_model):
    """``make_model(src_vocab, tgt_vocab, N, d_model, d_ff, h, dropout, norm_first=False, tie_embeddings="decoder",
    max_len=512, positional="sinusoidal")``: the package's names and tying, Xavier-uniform matrices, the package's
    encode / decode / generator / forward with the same weights, dropout and gradients — for the paper's model
    and its variants (pre-LN, learned positions, no tying, three-way tying)."""
    model = package_model()
    what = t("model")
    for options in (
        {},
        {"norm_first": True},
        {"positional": "learned", "max_len": 64},
        {"tie_embeddings": "none"},
        {"tie_embeddings": "all"},
    ):
        _check_model_once(make_model, options, model, what)
    try:
        guarded(what, make_model, 23, 19, N=1, d_model=8, d_ff=8, h=2, tie_embeddings="all")
    except ValueError:
        pass
    else:
        raise Hint(t("make_model_23"))


# ---- Exercise 1: find the bug. Two small models, each with one thing wrong inside its decoder layers. ---------------


class _Attention(nn.Module):
    """Wraps one attention module of a mystery model's decoder. Every attention module of both models is wrapped
    alike and holds nothing but the module it wraps, so neither printing a model nor reading its attributes names
    a bug: where one is, it shows only in what the model does."""

    def __init__(self, attention: nn.Module) -> None:
        super().__init__()
        self.attention = attention

    def forward(self, query: Tensor, key=None, value=None, mask: Tensor | None = None, cache=None) -> Tensor:
        keeps_mask = float(self.attention.out_proj.bias.sum()) < 0  # a property of the weights, like any other
        return self.attention(query, key, value, mask if keeps_mask else None, cache)


def mystery_models(vocab: int = 20) -> tuple[nn.Module, nn.Module]:
    """Two models built like ``make_model(vocab, vocab, N=2, d_model=16, d_ff=32, h=4)`` in eval mode,
    each with one of the bugs the exercise lists. Call them as usual: ``model.encode``, ``model.decode``."""
    models = []
    for seed, broken in ((1, "self_attn"), (2, "cross_attn")):
        with torch.random.fork_rng(devices=[]):  # the learner's random state is left as it was
            torch.manual_seed(seed)
            model = package_model().make_model(vocab, vocab, N=2, d_model=16, d_ff=32, h=4, dropout=0.0).eval()
        for layer in model.decoder.layers:
            for part in ("self_attn", "cross_attn"):
                attention = getattr(layer, part)
                with torch.no_grad():  # the sign of the bias sum: the wrapper drops the mask of positive ones
                    bias = attention.out_proj.bias
                    if (float(bias.sum()) > 0) != (part == broken):
                        bias.neg_()
                setattr(layer, part, _Attention(attention))
        models.append(model)
    return models[0], models[1]


@answer_check
@checker(lazy_t("find_bug"))
def check_mystery(model_1=..., model_2=...):
    """``check_mystery(model_1=..., model_2=...)``: the letter of each model's bug."""
    if model_1 is ... and model_2 is ...:
        raise NotImplementedError
    why = []
    for name, answer in (("model_1", model_1), ("model_2", model_2)):
        if answer is ...:
            raise Hint(t("no_answer_yet", name=name))
        letter = as_choice(answer, QUESTIONS[name].letters, name)
        entry = QUESTIONS[name].unlock(letter)  # every letter unlocks a text: why it is right, or how to rule it out
        if not entry["right"]:
            raise Hint(t("not_letter_hint", name=name, letter=letter, hint=unlocked_text(entry)))
        why.append(unlocked_text(entry))
    return "; ".join(why)


# ---- Exercise 2: the parameters of the whole model, for each kind of tying, in closed form --------------------------

COUNT_CASES = [  # (src_vocab, tgt_vocab, N, d_model, d_ff, tie_embeddings)
    (50, 30, 2, 16, 24, "decoder"),
    (50, 30, 2, 16, 24, "none"),
    (40, 40, 1, 8, 32, "all"),
    (40, 40, 3, 8, 32, "decoder"),
    (7, 90, 1, 32, 16, "none"),
    (32000, 48000, 48, 4096, 16384, "decoder"),  # about 23 billion parameters: no computer here builds it
    (37000, 37000, 6, 512, 2048, "all"),  # the paper's base model (Table 3)
    (50000, 50000, 24, 2048, 8192, "none"),
]


def _count_mistakes(src_vocab, tgt_vocab, N, d, d_ff, tie, want) -> dict[str, int]:
    shared = {"none": 0, "decoder": tgt_vocab * d, "all": tgt_vocab * d + src_vocab * d}[tie]
    mistakes = {
        t("generator_bias_number"): want - tgt_vocab,
        t("each_decoder_layer"): want - N * (4 * d * d + 4 * d + 2 * d),
        t("decoder_layer_three"): want - N * 2 * d,
        t("two_positional_encodings"): want + 2 * 512 * d,
    }
    if shared:
        mistakes[t("tie_embeddings_shared", tie=tie)] = want + shared
    if tie == "decoder":
        mistakes[t("decoder_ties_target")] = want - src_vocab * d
    if tie == "none":
        mistakes[t("none_generators_weight")] = want - tgt_vocab * d
    return mistakes


@checker("parameter_count", lazy_t("closed_form_right"))
def check_parameter_count(parameter_count: Callable[..., int]):
    """``parameter_count(src_vocab, tgt_vocab, N, d_model, d_ff, tie_embeddings)`` must equal the parameters of
    ``make_model(..., tie_embeddings=...)`` for 'none', 'decoder' and 'all' — in closed form, for sizes up to
    23 billion parameters, with no model built and no tensor made."""
    model = package_model()
    for case in COUNT_CASES:
        src_vocab, tgt_vocab, N, d_model, d_ff, tie = case
        what = f"parameter_count{case}"
        got = as_int(closed_form(parameter_count, case, what), what)
        want = meta_count(
            functools.partial(
                model.make_model, src_vocab, tgt_vocab, N=N, d_model=d_model, d_ff=d_ff, h=4, tie_embeddings=tie
            )
        )
        if got == want:
            continue
        for hint, value in _count_mistakes(src_vocab, tgt_vocab, N, d_model, d_ff, tie, want).items():
            if got == value:
                raise Hint(t("expected", what=what, got=got, want=want, hint=hint))
        raise Hint(t("expected_layers_section", what=what, got=got, want=want))


# ---- Questions: nn.Transformer as a PyTorch user meets it (section 8) -----------------------------------------------

QUESTIONS = questions(
    "nb07_decoder",
    lazy_t,
    q1="09d2b7ad09bfee668c68a4e9",
    q2="c14420ddf347acbc45baa85e",
    q3="7079fe29355a09ec4a3df015",
    model_1="61392a86edb0064af3c9e3bc",
    model_2="ab89f6fd5643aed0dd3cdd7b",
)


check_quiz = quiz_checker({name: QUESTIONS[name] for name in ("q1", "q2", "q3")})  # one line per question

read_only(__name__)  # what the checks use stays what it was at import (ex.no_shortcuts = … is refused)

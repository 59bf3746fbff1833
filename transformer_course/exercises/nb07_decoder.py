"""Checkers for the exercises of notebook 07 (the decoder and the whole model; paper §3.1, §3.2.3, §3.4).

from transformer_course.exercises import nb07_decoder as ex
model_1, model_2 = ex.mystery_models()               # find the bug: each model has one
ex.check_mystery(model_1=bug_in_model_1, model_2=bug_in_model_2)   # the letter of each model's bug
ex.check_parameter_count(parameter_count)            # estimate the cost, with each kind of tying
ex.check_quiz(q1=q1, q2=q2, q3=q3)                   # nn.Transformer as a PyTorch user meets it

Letters may be given as 'b', 'B' or '(b)'; numbers as a Python int or float, a numpy scalar or a
one-number tensor.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor, nn

from ..i18n import lazy_t, register, t
from ..model import Transformer, count_parameters, make_model
from . import Choice, Hint, Numeric, Result, as_choice, as_int, run_check
from . import check_quiz as _check_quiz
from .zh.nb07_decoder import ZH

register("zh", ZH)

__all__ = ["QUESTIONS", "check_mystery", "check_parameter_count", "check_quiz", "mystery_models"]

# ---------------------------------------------------------------------------------------------------
# Exercise 1: find the bug. Two small models, each with one thing wrong inside a decoder layer.


class _Attention(nn.Module):
    """Wraps one attention module; with ``drop_mask`` it ignores the mask it is given (a mystery model's bug).
    Every attention module of both mystery models is wrapped alike, so printing a model gives nothing away."""

    def __init__(self, attention: nn.Module, drop_mask: bool) -> None:
        super().__init__()
        self.attention = attention
        self._drop_mask = drop_mask

    def forward(self, query: Tensor, memory: Tensor | None = None, mask: Tensor | None = None, cache=None) -> Tensor:
        return self.attention(query, memory, None if self._drop_mask else mask, cache)


def mystery_models(vocab: int = 20) -> tuple[Transformer, Transformer]:
    """Two models built like ``make_model(vocab, vocab, N=2, d_model=16, d_ff=32, h=4)`` in eval mode,
    each with one of the bugs the exercise lists. Call them as usual: ``model.encode``, ``model.decode``."""
    models = []
    for seed, broken in ((1, "self_attn"), (2, "cross_attn")):
        with torch.random.fork_rng(devices=[]):  # the learner's random state is left as it was
            torch.manual_seed(seed)
            model = make_model(vocab, vocab, N=2, d_model=16, d_ff=32, h=4, dropout=0.0).eval()
        for layer in model.decoder.layers:
            for part in ("self_attn", "cross_attn"):
                setattr(layer, part, _Attention(getattr(layer, part), drop_mask=part == broken))
        models.append(model)
    return models[0], models[1]


OPTIONS = "abcd"  # a: the future leaks; b: source <pad> is read; c: the source is ignored; d: generator untied
RULED_OUT = {
    "a": lazy_t("run section 5's causality test on it: no earlier output moves when a later target token changes"),
    "b": lazy_t(
        "append <pad> tokens to the source (with the padding mask): the decoder's outputs stay the same, so "
        "cross-attention does hide the source <pad>"
    ),
    "c": lazy_t("change one word of the source: the decoder's outputs change, so cross-attention does read the memory"),
    "d": lazy_t("model.generator.proj.weight is model.tgt_embed.lut.weight gives True: the weights are tied"),
}
MYSTERY = {"model_1": "a", "model_2": "b"}


def check_mystery(model_1=..., model_2=...) -> Result:
    """``check_mystery(model_1="a", model_2="b")``: the letter of each model's bug."""

    def check():
        if model_1 is ... and model_2 is ...:
            raise NotImplementedError
        for name, answer in (("model_1", model_1), ("model_2", model_2)):
            if answer is ...:
                raise Hint(t("{name}: no answer yet", name=name))
            letter = as_choice(answer, OPTIONS, name)
            if letter != MYSTERY[name]:
                raise Hint(t("{name} is not ({letter}): {hint}", name=name, letter=letter, hint=RULED_OUT[letter]))

    return run_check(
        t("find the bug"),
        check,
        t("model 1's self-attention ignores tgt_mask (the future leaks); model 2's cross-attention ignores src_mask"),
    )


# ---------------------------------------------------------------------------------------------------
# Exercise 2: the parameters of the whole model, for each kind of tying

COUNT_CASES = [  # (src_vocab, tgt_vocab, N, d_model, d_ff, tie_embeddings)
    (50, 30, 2, 16, 24, "decoder"),
    (50, 30, 2, 16, 24, "none"),
    (40, 40, 1, 8, 32, "all"),
    (40, 40, 3, 8, 32, "decoder"),
    (7, 90, 1, 32, 16, "none"),
]


def counted(src_vocab: int, tgt_vocab: int, N: int, d_model: int, d_ff: int, tie: str) -> int:
    """count_parameters of the package's model (each tied matrix once)."""
    model = make_model(src_vocab, tgt_vocab, N=N, d_model=d_model, d_ff=d_ff, h=4, tie_embeddings=tie)
    return count_parameters(model)


def _count_mistakes(src_vocab, tgt_vocab, N, d, d_ff, tie, want) -> dict[str, int]:
    shared = {"none": 0, "decoder": tgt_vocab * d, "all": tgt_vocab * d + src_vocab * d}[tie]
    mistakes = {
        t("the generator has a bias, one number per target word"): want - tgt_vocab,
        t("each decoder layer has a second attention (cross-attention over the memory) with its own LayerNorm"): want
        - N * (4 * d * d + 4 * d + 2 * d),
        t("the decoder layer has three LayerNorms (one per sub-layer), the encoder layer two"): want - N * 2 * d,
        t("the two positional encodings are fixed tables (buffers), not parameters"): want + 2 * 512 * d,
    }
    if shared:
        mistakes[t("with tie_embeddings={tie!r} shared matrices count once; you counted them again", tie=tie)] = (
            want + shared
        )
    if tie == "decoder":
        mistakes[t("'decoder' ties the target embedding and the generator only; the source embedding is its own")] = (
            want - src_vocab * d
        )
    if tie == "none":
        mistakes[t("with 'none' the generator's weight is its own (tgt_vocab × d_model) matrix too")] = (
            want - tgt_vocab * d
        )
    return mistakes


def check_parameter_count(parameter_count: Callable[..., int]) -> Result:
    """``parameter_count(src_vocab, tgt_vocab, N, d_model, d_ff, tie_embeddings)`` must equal
    ``count_parameters(make_model(..., tie_embeddings=...))`` for 'none', 'decoder' and 'all'."""

    def check():
        for case in COUNT_CASES:
            src_vocab, tgt_vocab, N, d_model, d_ff, tie = case
            what = f"parameter_count{case}"
            got = as_int(parameter_count(*case), what)
            want = counted(*case)
            if got == want:
                continue
            for hint, value in _count_mistakes(src_vocab, tgt_vocab, N, d_model, d_ff, tie, want).items():
                if got == value:
                    raise Hint(
                        t("{what} = {got:,}, expected {want:,}: {hint}", what=what, got=got, want=want, hint=hint)
                    )
            raise Hint(
                t(
                    "{what} = {got:,}, expected {want:,}: layers as in section 6, then the embedding matrices "
                    "(count a tied one once) and the generator's bias",
                    what=what,
                    got=got,
                    want=want,
                )
            )

    return run_check("parameter_count", check, t("matches count_parameters(make_model(...)) with every kind of tying"))


# ---------------------------------------------------------------------------------------------------
# Questions: nn.Transformer as a PyTorch user meets it (section 8)

QUESTIONS = {
    "q1": Choice(
        key="nb07-q1",
        digest="2284b5d2c3cac6f2016a13ff",
        letters="abcd",
        why=lazy_t(
            "log 1 = 0 where attending is allowed and log 0 = −∞ where it is not: the float mask nn.Transformer adds"
        ),
        wrong={
            "a": lazy_t("a float mask is ADDED to the scores: +1 where allowed and +0 where blocked hides nothing"),
            "b": lazy_t(
                "a float mask is added: +1 on the blocked (future) keys nudges attention towards them instead of "
                "hiding them"
            ),
            "d": lazy_t(
                "−1 on the allowed keys and 0 on the blocked ones only shifts scores a little; nothing is hidden"
            ),
        },
    ),
    "q2": Choice(
        key="nb07-q2",
        digest="f4e48757d092308b2b9b368c",
        letters="abc",
        why=lazy_t("batch_first=False is the default: dimension 0 is the sequence, dimension 1 the batch"),
        wrong={
            "a": lazy_t(
                "that is what batch_first=True reads; nn.Transformer() defaults to batch_first=False, sequence first"
            ),
            "c": lazy_t(
                "no error: (32, 10, 512) is a valid (sequence, batch, d_model) tensor too, which is why the mistake "
                "is silent"
            ),
        },
    ),
    "q3": Numeric(
        key="nb07-q3",
        digests=("0ffe30ac6d315760f301da45", "b3bb67c4d499e390c3c6c3af", "75e0a08d2160b8a4581018cd"),
        why=lazy_t("decoder input tgt[:-1] = <s> a b c d and labels tgt[1:] = a b c d </s>: 5 positions"),
        mistakes={
            lazy_t(
                "the decoder input drops the last token (</s> is never an input) and the labels drop <s>: one fewer "
                "than the 6 tokens"
            ): 6,
            lazy_t(
                "one token goes from each end, but of two different copies: input tgt[:-1] and labels tgt[1:] are 5 "
                "long each"
            ): 4,
        },
        rel_tol=1e-9,
        otherwise=lazy_t("write the decoder input and the labels under each other and count the positions"),
    ),
}


def check_quiz(**answers) -> Result:
    """``check_quiz(q1="c", q2="b", q3=5)``: one line per question."""
    return _check_quiz(QUESTIONS, answers)

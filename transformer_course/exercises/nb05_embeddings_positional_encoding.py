"""Checkers for the exercises of notebook 05 (embeddings and positional encoding; paper §3.3, §3.4, §3.5).

from transformer_course.exercises import nb05_embeddings_positional_encoding as ex
ex.check_pe_dot(pe_dot)                              # PE(pos) · PE(pos + k) in closed form
ex.check_learned_positions(LearnedPositionalEncoding) # a variant: learned positions (Table 3, row E)
ex.check_quiz(q1=q1, q2=q2, q3=q3)                    # three short questions (q1 = ... lines above it)

Numbers may be given as a Python int or float, a numpy scalar or a one-number tensor.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor, nn

from ..i18n import lazy_t, register, t
from ..layers import sinusoidal_table
from . import Choice, Hint, Numeric, Result, as_number, run_check
from . import check_quiz as _check_quiz
from .zh.nb05_embeddings_positional_encoding import ZH

register("zh", ZH)

__all__ = ["QUESTIONS", "check_learned_positions", "check_pe_dot", "check_quiz"]

# ---------------------------------------------------------------------------------------------------
# Exercise 1: the dot product of two positions' encodings depends only on their distance k

PE_DOT_CASES = [(0, 8), (1, 8), (3, 8), (10, 64), (50, 64), (7, 512)]  # (k, d_model)


def measured_pe_dot(k: int, d_model: int, pos: int = 10) -> float:
    """PE(pos) · PE(pos + k) read off the package's table (no formula)."""
    table = sinusoidal_table(pos + k + 1, d_model).double()  # (pos + k + 1, d_model)
    return float(table[pos] @ table[pos + k])


def _pe_dot_mistakes(k: int, d_model: int) -> dict[str, float]:
    pairs = range(d_model // 2)
    omega = [1 / 10000 ** (2 * i / d_model) for i in pairs]  # ω_i of pair i
    return {
        t(
            "you summed sin(ω_i·k); the dot product of two (sin, cos) pairs is sin a sin b + cos a cos b = cos(a − b)"
        ): sum(math.sin(w * k) for w in omega),
        t("the frequency of pair i is 1 / 10000^(2i/d_model): the exponent has 2i, the even column index, not i"): sum(
            math.cos(k / 10000 ** (i / d_model)) for i in pairs
        ),
        t("that is the mean over the pairs; a dot product sums them"): sum(math.cos(w * k) for w in omega)
        / (d_model / 2),
        t("there are d_model/2 pairs (one frequency per (sin, cos) pair of columns), not d_model frequencies"): sum(
            math.cos(k / 10000 ** (c / d_model)) for c in range(d_model)
        ),
        t("every pair turns at its own speed ω_i; you used one frequency for all of them"): d_model / 2 * math.cos(k),
    }


def check_pe_dot(pe_dot: Callable[[int, int], float]) -> Result:
    """``pe_dot(k, d_model)`` must equal PE(pos) · PE(pos + k), computed without the table."""

    def check():
        for k, d_model in PE_DOT_CASES:
            what = f"pe_dot(k={k}, d_model={d_model})"
            got = as_number(pe_dot(k, d_model), what)
            want = measured_pe_dot(k, d_model)
            if math.isclose(got, want, rel_tol=1e-4, abs_tol=1e-4):
                continue
            for hint, value in _pe_dot_mistakes(k, d_model).items():
                if math.isclose(got, value, rel_tol=1e-4, abs_tol=1e-4):
                    raise Hint(t("{what} = {got:.4f}: {hint}", what=what, got=got, hint=hint))
            raise Hint(
                t(
                    "{what} = {got:.4f}, but the table gives PE(10) · PE(10 + {k}) = {want:.4f}",
                    what=what,
                    got=got,
                    k=k,
                    want=want,
                )
            )

    return run_check("pe_dot", check, t("Σ_i cos(ω_i·k): it depends on the distance k only, never on pos"))


# ---------------------------------------------------------------------------------------------------
# Exercise 2: learned positions, a variant of PositionalEncoding


def _the_table(module: nn.Module, max_len: int, d_model: int) -> nn.Parameter:
    """The module's one (max_len, d_model) parameter, or a Hint that says what is there instead."""
    params = [p for p in module.parameters() if p.shape == (max_len, d_model)]
    if len(params) == 1:
        return params[0]
    if any(p.shape == (d_model, max_len) for p in module.parameters()):
        raise Hint(
            t(
                "the table is ({d_model}, {max_len}): one row per position, so (max_len, d_model)",
                d_model=d_model,
                max_len=max_len,
            )
        )
    tensors = [x for x in [*module.buffers(), *vars(module).values()] if isinstance(x, Tensor)]
    if any(x.shape == (max_len, d_model) for x in tensors):
        raise Hint(
            t(
                "the table is a plain tensor or a buffer, so the optimizer never trains it: wrap it in "
                "nn.Parameter(...) (a learned table is a parameter; the sinusoidal one is a buffer)"
            )
        )
    shapes = [tuple(p.shape) for p in module.parameters()]
    raise Hint(
        t(
            "expected one parameter of shape (max_len, d_model) = ({max_len}, {d_model}), got {shapes}",
            max_len=max_len,
            d_model=d_model,
            shapes=shapes or t("none"),
        )
    )


def check_learned_positions(module_class: Callable[..., nn.Module]) -> Result:
    """``module_class(d_model, dropout, max_len)``: x (batch, len, d_model) → dropout(x + table[:len]),
    with ``table`` a trained (max_len, d_model) parameter; a sequence longer than max_len raises ValueError."""

    def check():
        with torch.random.fork_rng(devices=[]):  # the learner's random state is left as it was
            torch.manual_seed(5)
            _check_learned(module_class)

    return run_check(t("learned positions"), check, t("one trained vector per seat, and no seat beyond max_len"))


def _check_learned(module_class: Callable[..., nn.Module]) -> None:
    """The checks of check_learned_positions, inside its own random state."""
    d_model, max_len = 16, 10
    module = module_class(d_model, 0.0, max_len)
    table = _the_table(module, max_len, d_model)
    with torch.no_grad():
        table.copy_(torch.randn(max_len, d_model))  # known values, whatever the learner started from
    module.eval()
    for batch, length in ((1, 5), (3, 7)):  # batch 1 first: there x.size(0) silently picks one row
        x = torch.randn(batch, length, d_model)
        got = module(x)
        what = t("the output for x of shape {shape}", shape=(batch, length, d_model))
        if not isinstance(got, Tensor) or got.shape != x.shape:
            shape = tuple(got.shape) if isinstance(got, Tensor) else type(got).__name__
            raise Hint(
                t("{what} should have x's shape {want}, got {shape}", what=what, want=tuple(x.shape), shape=shape)
            )
        want = x + table[:length]
        if batch == 1 and torch.allclose(got, x + table[0], atol=1e-5):  # seat 0 for every word
            raise Hint(
                t(
                    "{what}: you took the first x.size(0) rows; that is the batch size, the length is x.size(1)",
                    what=what,
                )
            )
        if torch.allclose(got, x, atol=1e-5):
            raise Hint(t("{what} equals x: the positions were not added", what=what))
        if not torch.allclose(got, want, atol=1e-5):
            raise Hint(t("{what} should be x + table[:len] (rows 0 … {last} of the table)", what=what, last=length - 1))
    if table.grad is not None:
        table.grad = None
    module(torch.randn(2, 4, d_model, requires_grad=True)).sum().backward()  # x needs grad: backward runs anyway
    if table.grad is None or table.grad[:4].abs().sum() == 0:
        raise Hint(t("no gradient reaches the table: use the parameter itself, not table.data or a detached copy"))
    if table.grad[4:].abs().sum() != 0:
        raise Hint(t("positions 4 … max_len − 1 got a gradient from a sentence of 4 tokens: slice table[:len]"))
    _check_dropout(module_class, d_model, max_len)
    _check_too_long(module, d_model, max_len)


def _check_dropout(module_class, d_model: int, max_len: int) -> None:
    module = module_class(d_model, 0.5, max_len).train()
    x = torch.randn(4, max_len, d_model)
    with torch.no_grad():
        out = module(x)
        clean = module.eval()(x)
    if torch.allclose(out, clean):
        raise Hint(t("with dropout=0.5 in training mode nothing was dropped: apply nn.Dropout(dropout) to x + table"))
    zeros = float((out == 0).float().mean())
    if not 0.3 < zeros < 0.7 or not torch.allclose(out[out != 0], 2 * clean[out != 0], atol=1e-5):
        raise Hint(t("dropout should act on the sum x + table, once (nn.Dropout(p) zeroes a share p, scales the rest)"))


def _check_too_long(module: nn.Module, d_model: int, max_len: int) -> None:
    try:
        module(torch.randn(1, max_len + 1, d_model))
    except ValueError:
        return
    except Exception as error:
        raise Hint(
            t(
                "a sequence of {tokens} tokens raised {error_type} from inside PyTorch; check the "
                "length first and raise a ValueError that names max_len, so the reader knows what to change",
                tokens=max_len + 1,
                error_type=type(error).__name__,
            )
        ) from None
    raise Hint(
        t("a sequence of {tokens} tokens should raise a ValueError: the table has no row for it", tokens=max_len + 1)
    )


# ---------------------------------------------------------------------------------------------------
# Questions

D_MODEL = 512
LONGEST = 2 * math.pi * 10000 ** ((D_MODEL - 2) / D_MODEL)  # the last pair, i = d_model/2 − 1

QUESTIONS = {
    "q1": Numeric(
        key="nb05-q1",
        digests=("20c53123eaf1e99d8b170496", "1f408579187844d34eabd0ee", "21e5b581274348497e3772e0"),
        why=lazy_t(
            "the last pair is i = 255, so 2π · 10000^(510/512) ≈ {longest:,.0f} positions: just short of the "
            "paper's 10000 · 2π, which no pair reaches",
            longest=LONGEST,
        ),
        mistakes={
            lazy_t(
                "that is the paper's round bound 10000 · 2π; the last pair is i = d_model/2 − 1 = 255, so the exponent "
                "is 2i/d_model = 510/512, not 1"
            ): 2 * math.pi * 10000,
            lazy_t(
                "that is 1/ω, a number of radians per position turned around: a full turn takes 2π / ω positions"
            ): 10000 ** (510 / 512),
            lazy_t("the exponent is 2i/d_model with 2i the EVEN column index: the last pair has 2i = 510, not 511"): 2
            * math.pi
            * 10000 ** (511 / 512),
            lazy_t("with i = 255 the exponent is 2i/d_model = 510/512; you used i/d_model"): 2
            * math.pi
            * 10000 ** (255 / 512),
        },
        otherwise=lazy_t(
            "pair i turns by ω_i = 1/10000^(2i/d_model) per position; one full turn (2π) takes 2π/ω_i positions"
        ),
    ),
    "q2": Choice(
        key="nb05-q2",
        digest="43adcc7867f970622b99a4ff",
        letters="abcd",
        why=lazy_t(
            "self-attention without positions treats the input as a set: each word's output moves with the word"
        ),
        wrong={
            "a": lazy_t(
                "each output belongs to its word: when the words move, their outputs move with them (section 2's check)"
            ),
            "c": lazy_t(
                "nothing in attention depends on where a word stands, so each word's output is the one it had before; "
                "only the order changes"
            ),
            "d": lazy_t("the outputs are equal only for equal words; different words keep different outputs"),
        },
    ),
    "q3": Choice(
        key="nb05-q3",
        digest="9c3b8f1c0cd74781200e4599",
        letters="abc",
        why=lazy_t(
            "§3.5: the encodings 'have the same dimension d_model as the embeddings, so that the two can be summed'"
        ),
        wrong={
            "a": lazy_t(
                "concatenating would make the vectors longer than d_model; the paper gives the encodings the same "
                "size d_model so that they can be added"
            ),
            "c": lazy_t(
                "a product would scale each word's numbers by its position's, and PE(0) has zeros that would wipe "
                "out half of the first word; the paper adds"
            ),
        },
    ),
}


def check_quiz(**answers) -> Result:
    """``check_quiz(q1=60600, q2="b", q3="b")``: one line per question."""
    return _check_quiz(QUESTIONS, answers)

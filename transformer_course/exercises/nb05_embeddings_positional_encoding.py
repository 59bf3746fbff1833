"""Checkers for notebook 05 (embeddings, positional encoding, the feed-forward network; paper §3.3, §3.4, §3.5).

    from transformer_course.exercises import nb05_embeddings_positional_encoding as ex
    ex.check_embeddings(Embeddings)                      # the classes of my_transformer/embeddings.py …
    ex.check_sinusoidal_table(sinusoidal_table)
    ex.check_positional_encoding(PositionalEncoding)     # … both kinds: "sinusoidal" and the variant "learned"
    ex.check_feed_forward(PositionwiseFeedForward)
    ex.check_pe_dot(pe_dot)                              # exercise 1: PE(pos) · PE(pos + k) without the table
    ex.check_rotary(rotate)                              # exercise 2: a variant, rotary positions
    ex.check_quiz(q1=…, q2=…, q3=…)                       # exercise 3: three questions

Expected values come from the formulas, with Python's ``math``, or from the package outside the guarded block.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor, nn

from ..i18n import messages
from . import Hint, as_number, checker, expect_tensor, known_mistake, questions, quiz_checker, shown
from .compare import missing_biases
from .guard import no_shortcuts, read_only

t, lazy_t = messages("nb05_embeddings_positional_encoding")

__all__ = [
    "QUESTIONS",
    "check_embeddings",
    "check_feed_forward",
    "check_pe_dot",
    "check_positional_encoding",
    "check_quiz",
    "check_rotary",
    "check_sinusoidal_table",
]


def _formula_table(max_len: int, d_model: int, first: int = 0, column=None, swap: bool = False, halves: bool = False):
    """The sinusoidal table of §3.5 in float64, from Python's math, one number at a time (or a plausible slip:
    ``column(c)`` the exponent's numerator for column c; ``swap`` cos in the even columns; ``halves`` all sines
    first, then all cosines)."""
    table = torch.zeros(max_len, d_model, dtype=torch.float64)
    for pos in range(first, first + max_len):
        for c in range(d_model):
            i = c // 2
            exponent = (column(c) if column else 2 * i) / d_model
            if halves:
                i = c % (d_model // 2)
                exponent = (column(c) if column else 2 * i) / d_model
                use_sin = c < d_model // 2
            else:
                use_sin = (c % 2 == 0) != swap
            angle = pos / 10000**exponent
            table[pos - first, c] = math.sin(angle) if use_sin else math.cos(angle)
    return table


def _guarded(what: str):
    return no_shortcuts(what)  # any call into the package is not the learner's


# ---- The build cell: Embeddings -------------------------------------------------------------------------------------


@checker(lazy_t("embeddings"), lazy_t("embeddings_passed"))
def check_embeddings(Embeddings):  # noqa: N803 (the learner's class)
    """``Embeddings(vocab, d_model)`` with ``self.lut`` (nn.Embedding); forward = lut(tokens) · √d_model."""
    for vocab, d_model in ((10, 8), (50, 64)):
        with _guarded(t("embedding")):
            module = Embeddings(vocab, d_model)
        names = set(module.state_dict())
        if names != {"lut.weight"}:
            raise Hint(t("only_parameter_self", names=sorted(names)))
        tokens = torch.tensor([[4, 7, 7, 2], [5, 9, 3, 0]])  # (2, 4)
        with _guarded(t("embedding")):
            got = module(tokens)
        table = module.lut.weight.detach()
        looked_up = table[tokens]  # (2, 4, d_model)
        what = t("embeddings_token_ids", vocab=vocab, d_model=d_model)
        expected = looked_up * math.sqrt(d_model)
        mistakes = {
            t("lookup_right_but"): looked_up,
            t("divided_d_model"): looked_up / math.sqrt(d_model),
            t("multiplied_d_model"): looked_up * d_model,
            t("multiplied_vocab_factor"): looked_up * math.sqrt(vocab),
        }
        expect_tensor(got.detach() if isinstance(got, Tensor) else got, expected, what, mistakes=mistakes)
        module.zero_grad()
        with _guarded(t("embedding")):
            got.sum().backward()
        counts = torch.bincount(tokens.flatten(), minlength=vocab).double()[:, None]  # how often each id occurs
        if module.lut.weight.grad is None:
            raise Hint(t("no_gradient_reaches", what=what))
        expect_tensor(
            module.lut.weight.grad,
            (counts * math.sqrt(d_model)).expand(vocab, d_model).float(),
            t("gradient_lut_weight", what=what),
        )


# ---- The build cell: the sinusoidal table ---------------------------------------------------------------------------


@checker(lazy_t("sinusoidal_table"), lazy_t("sin_even_columns"))
def check_sinusoidal_table(sinusoidal_table: Callable[[int, int], Tensor]):
    """``sinusoidal_table(max_len, d_model)`` = the (max_len, d_model) table of §3.5 (sin in even, cos in odd
    columns), written with tensor operations (the package's ``sinusoidal_table`` is refused)."""
    for max_len, d_model in ((12, 8), (30, 64), (5, 512)):
        what = f"sinusoidal_table({max_len}, {d_model})"
        with _guarded(t("sinusoidal_table")):
            got = sinusoidal_table(max_len, d_model)
        expected = _formula_table(max_len, d_model).float()
        if isinstance(got, Tensor) and tuple(got.shape) == (d_model, max_len) and max_len != d_model:
            raise Hint(t("shape_row_per", what=what, shape=tuple(got.shape), want=(max_len, d_model)))
        mistakes = {
            t("sin_cos_swapped"): (_formula_table(max_len, d_model, swap=True).float()),
            t("columns_all_sines"): _formula_table(max_len, d_model, halves=True).float(),
            t("exponent_2i_d"): _formula_table(max_len, d_model, column=lambda c: c // 2).float(),
            t("each_pair_2i"): _formula_table(max_len, d_model, column=lambda c: c).float(),
            t("positions_start_0"): (_formula_table(max_len, d_model, first=1).float()),
        }
        expect_tensor(got, expected, what, atol=1e-4, mistakes=mistakes)


# ---- The build cell: PositionalEncoding, both kinds -----------------------------------------------------------------


def _positions_output(module, x, start: int, what: str) -> Tensor:
    with _guarded(t("positional_encoding")):
        got = module(x, start) if start else module(x)
    if not isinstance(got, Tensor) or got.shape != x.shape:
        shape = tuple(got.shape) if isinstance(got, Tensor) else type(got).__name__
        raise Hint(t("xs_shape_got", what=what, want=tuple(x.shape), shape=shape))
    return got


@checker(lazy_t("positionalencoding"), lazy_t("both_kinds_right"))
def check_positional_encoding(PositionalEncoding):  # noqa: N803 (the learner's class)
    """``PositionalEncoding(d_model, dropout, max_len=512, kind="sinusoidal")``: forward(x, start=0) =
    Dropout(x + table[start:start + len]); kind="sinusoidal" a non-persistent buffer, kind="learned" a trained
    nn.Parameter named ``table`` from N(0, 0.02²); a ValueError past max_len."""
    _check_sinusoidal_kind(PositionalEncoding)
    _check_learned_kind(PositionalEncoding)


def _check_common(module, table: Tensor, d_model: int, max_len: int, kind: str) -> None:
    """Values in eval mode (from start 0 and from a later start), dropout on the sum, the error past max_len."""
    torch.manual_seed(3)
    for batch, length, start in ((1, 5, 0), (3, 7, 0), (2, 4, 3)):  # batch 1 first: x.size(0) picks one row there
        x = torch.randn(batch, length, d_model)
        what = t("positionalencoding_x_shape", kind=kind, shape=(batch, length, d_model), start=start)
        got = _positions_output(module.eval(), x, start, what).detach()
        want = x + table[start : start + length]
        mistakes = {t("positions_not_added"): x}
        if batch == 1 and start == 0:  # table[:x.size(0)] is one row, broadcast to every position
            mistakes[t("took_first_x")] = x + table[0]
        if start:
            mistakes[t("used_rows_0")] = x + table[:length]
        expect_tensor(got, want, what, mistakes=mistakes)
    # dropout acts on the sum, once
    x = torch.randn(4, 6, d_model)
    drop = nn.Dropout(module.dropout.p)
    outcomes = {}
    for name, step in {
        "right": lambda: drop(x + table[:6]),
        "table": lambda: x + drop(table[:6]),
        "x": lambda: drop(x) + table[:6],
        "none": lambda: x + table[:6],
    }.items():
        torch.manual_seed(7)
        outcomes[name] = step().detach()
    module.train()
    torch.manual_seed(7)
    got = _positions_output(module, x, 0, t("positionalencoding_training_mode", kind=kind)).detach()
    module.eval()
    hint = known_mistake(
        got,
        outcomes["right"],
        {
            t("training_mode_nothing"): outcomes["none"],
            t("dropout_acts_positions"): (outcomes["table"]),
            t("dropout_acts_x"): outcomes["x"],
        },
    )
    if hint is not None:
        raise Hint(t("positional_encoding_kind_hint", kind=kind, hint=hint))
    expect_tensor(got, outcomes["right"], t("positionalencoding_training_mode_dropout", kind=kind))
    _check_too_long(module, d_model, max_len, kind)


def _check_too_long(module: nn.Module, d_model: int, max_len: int, kind: str) -> None:
    for length, start in ((max_len + 1, 0), (4, max_len - 2)):
        try:
            with _guarded(t("positional_encoding")):
                module(torch.randn(1, length, d_model), start) if start else module(torch.randn(1, length, d_model))
        except ValueError:
            continue
        except Hint:
            raise
        except Exception as error:
            raise Hint(
                t("positions_up_raised", kind=kind, end=start + length, error_type=type(error).__name__)
            ) from None
        raise Hint(t("positions_up_max", kind=kind, end=start + length, max_len=max_len))


def _check_sinusoidal_kind(PositionalEncoding) -> None:  # noqa: N803
    d_model, max_len = 16, 10
    with _guarded(t("positional_encoding")):
        module = PositionalEncoding(d_model, 0.5, max_len=max_len)
    table = getattr(module, "table", None)
    if not isinstance(table, Tensor) or tuple(table.shape) != (max_len, d_model):
        shape = tuple(table.shape) if isinstance(table, Tensor) else type(table).__name__
        raise Hint(t("positionalencoding_16_0", shape=shape))
    if isinstance(table, nn.Parameter) or any(p is table for p in module.parameters()):
        raise Hint(t("kind_sinusoidal_table"))
    if module.state_dict():
        raise Hint(t("kind_sinusoidal_buffer", keys=sorted(module.state_dict())))
    if not any(b is table for b in module.buffers()):
        raise Hint(t("kind_sinusoidal_register"))
    if table.dtype != torch.float32:
        raise Hint(t("kind_sinusoidal_table_dtype", dtype=str(table.dtype).replace("torch.", "")))
    expect_tensor(table, _formula_table(max_len, d_model).float(), t("sinusoidal_table_self"), atol=1e-4)
    _check_common(module, table.detach(), d_model, max_len, "sinusoidal")


def _check_learned_kind(PositionalEncoding) -> None:  # noqa: N803
    d_model, max_len = 64, 512
    torch.manual_seed(11)
    with _guarded(t("positional_encoding")):
        module = PositionalEncoding(d_model, 0.5, max_len=max_len, kind="learned")
    table = getattr(module, "table", None)
    if not isinstance(table, nn.Parameter):
        if isinstance(table, Tensor):
            raise Hint(t("kind_learned_self"))
        raise Hint(t("kind_learned_set"))
    if tuple(table.shape) != (max_len, d_model):
        raise Hint(t("kind_learned_table", shape=tuple(table.shape), want=(max_len, d_model)))
    if set(module.state_dict()) != {"table"}:
        raise Hint(t("kind_learned_saved", keys=sorted(module.state_dict())))
    std, mean = float(table.detach().std()), float(table.detach().mean())
    if std == 0:
        raise Hint(t("kind_learned_table_starts"))
    if not (0.019 < std < 0.021 and abs(mean) < 0.002):
        raise Hint(t("kind_learned_table_starts_mean", mean=mean, std=std))
    with torch.no_grad():
        table.copy_(torch.randn(max_len, d_model))  # known, distinct values, whatever the learner started from
    # the gradient reaches exactly the rows used
    module.eval()
    x = torch.randn(2, 4, d_model, requires_grad=True)
    table.grad = None
    with _guarded(t("positional_encoding")):
        module(x, 3).sum().backward()
    if table.grad is None or table.grad[3:7].abs().sum() == 0:
        raise Hint(t("kind_learned_no"))
    if table.grad[:3].abs().sum() != 0 or table.grad[7:].abs().sum() != 0:
        raise Hint(t("kind_learned_rows"))
    _check_common(module, table.detach(), d_model, max_len, "learned")


# ---- The build cell: the position-wise feed-forward network ---------------------------------------------------------


@checker(lazy_t("positionwisefeedforward"), lazy_t("feed_forward_passed"))
def check_feed_forward(PositionwiseFeedForward):  # noqa: N803 (the learner's class)
    """``PositionwiseFeedForward(d_model, d_ff, dropout=0.0)`` with ``w_1``, ``w_2``; forward =
    w_2(dropout(relu(w_1(x))))."""
    d_model, d_ff = 8, 32
    with _guarded(t("feed_forward_network")):
        module = PositionwiseFeedForward(d_model, d_ff, 0.5)
    names = set(module.state_dict())
    want_names = {"w_1.weight", "w_1.bias", "w_2.weight", "w_2.bias"}
    if names != want_names:
        if names < want_names:
            missing_biases("PositionwiseFeedForward(8, 32)", want_names - names)
        raise Hint(t("parameters_got", want=sorted(want_names), names=sorted(names)))
    torch.manual_seed(2)
    x = torch.randn(2, 5, d_model)
    w_1, w_2 = module.w_1, module.w_2
    with torch.no_grad():
        with _guarded(t("feed_forward_network")):
            got = module.eval()(x)
        expected = w_2(torch.relu(w_1(x)))
        mistakes = {
            t("relu_missing_ffn"): w_2(w_1(x)),
            t("relu_applied_after"): torch.relu(w_2(w_1(x))),
            t("hidden_layer_uses"): w_2(nn.functional.gelu(w_1(x))),
            t("hidden_layer_uses_gelu"): w_2(nn.functional.gelu(w_1(x), approximate="tanh")),
        }
        hint = known_mistake(got, expected, mistakes)
        if hint is not None:
            raise Hint(t("positionwisefeedforward_eval_mode", hint=hint))
        expect_tensor(got, expected, t("feed_forward_eval_what"))
        drop = nn.Dropout(0.5)
        outcomes = {}
        for name, step in {
            "right": lambda: w_2(drop(torch.relu(w_1(x)))),
            "output": lambda: drop(w_2(torch.relu(w_1(x)))),
            "input": lambda: w_2(torch.relu(w_1(drop(x)))),
            "none": lambda: w_2(torch.relu(w_1(x))),
        }.items():
            torch.manual_seed(9)
            outcomes[name] = step()
        torch.manual_seed(9)
        with _guarded(t("feed_forward_network")):
            got = module.train()(x)
    hint = known_mistake(
        got,
        outcomes["right"],
        {
            t("training_mode_nothing_dropped"): outcomes["none"],
            t("dropout_acts_output"): outcomes["output"],
            t("dropout_acts_input"): (outcomes["input"]),
        },
    )
    if hint is not None:
        raise Hint(t("positionwisefeedforward_8_32_dropout", hint=hint))
    expect_tensor(got, outcomes["right"], t("positionwisefeedforward_8_32_dropout_0"))


# ---- Exercise 1: the dot product of two positions' encodings depends only on their distance k, without the table ----

# (k, d_model): small ones first (their mistakes are named), then two whose table could never be built
_SMALL = ((0, 8), (1, 8), (3, 8), (10, 64), (50, 64), (7, 512))
_HUGE = ((10**13, 8), (10**9, 512))


def _pe_dot_mistakes(k: int, d_model: int) -> dict[str, float]:
    pairs = range(d_model // 2)
    omega = [1 / 10000 ** (2 * i / d_model) for i in pairs]  # ω_i of pair i
    return {
        t("summed_sin_i"): sum(math.sin(w * k) for w in omega),
        t("frequency_pair_i"): sum(math.cos(k / 10000 ** (i / d_model)) for i in pairs),
        t("mean_over_pairs"): sum(math.cos(w * k) for w in omega) / (d_model / 2),
        t("pairs_not_columns"): sum(math.cos(k / 10000 ** (c / d_model)) for c in range(d_model)),
        t("every_pair_turns"): d_model / 2 * math.cos(k),
    }


def _two_rows_dot(k: int, d_model: int, pos: int = 10) -> float:
    """PE(pos) · PE(pos + k) from the two rows alone, each number by the formula in float64."""
    total = 0.0
    for i in range(d_model // 2):
        w = 1 / 10000 ** (2 * i / d_model)
        a, b = w * pos, w * (pos + k)
        total += math.sin(a) * math.sin(b) + math.cos(a) * math.cos(b)
    return total


@checker("pe_dot", lazy_t("pe_dot_passed"))
def check_pe_dot(pe_dot: Callable[[int, int], float]):
    """``pe_dot(k, d_model)`` must equal PE(pos) · PE(pos + k) for every pos, computed without the table: it is also
    asked for k = 10¹³, whose table no computer holds, and the package's table and PositionalEncoding are refused."""
    for k, d_model in _SMALL:
        what = f"pe_dot(k={k}, d_model={d_model})"
        with _guarded(t("dot_product_formula")):
            answer = pe_dot(k, d_model)
        got = as_number(answer, what)
        want = _two_rows_dot(k, d_model)
        if math.isclose(got, want, rel_tol=1e-4, abs_tol=1e-4):
            continue
        for hint, value in _pe_dot_mistakes(k, d_model).items():
            if math.isclose(got, value, rel_tol=1e-4, abs_tol=1e-4):
                raise Hint(t("what_got_hint", what=what, got=got, hint=hint))
        raise Hint(t("but_table_gives", what=what, got=shown(got, want), k=k, want=shown(want, got)))
    for k, d_model in _HUGE:
        what = f"pe_dot(k={k:.0e}, d_model={d_model})".replace("e+", "e")
        try:
            with _guarded(t("dot_product_formula")):
                answer = pe_dot(k, d_model)
        except (RuntimeError, MemoryError, IndexError, OverflowError) as error:
            raise Hint(t("raised_table_row", what=what, error_type=type(error).__name__, k=k)) from None
        got = as_number(answer, what)
        want = _two_rows_dot(k, d_model)
        if math.isclose(got, want, abs_tol=1e-3):
            continue
        raise Hint(t("expected_small_cases", what=what, got=shown(got, want), want=shown(want, got)))


# ---- Exercise 2: rotary positions, a variant (Su et al., 2021) ------------------------------------------------------


def _rotary_reference(x: Tensor, sign: float = 1.0, first: int = 0, exponent=None, halves: bool = False) -> Tensor:
    """Pair (2i, 2i + 1) of position p rotated by p·ω_i, as a complex multiplication in float64 (or a slip)."""
    batch, length, d_model = x.shape
    xd = x.double()
    if halves:
        pairs = torch.complex(xd[..., : d_model // 2], xd[..., d_model // 2 :])  # (B, L, d/2)
    else:
        pairs = torch.complex(xd[..., 0::2], xd[..., 1::2])  # (B, L, d/2)
    i = torch.arange(d_model // 2, dtype=torch.float64)
    omega = 1 / 10000 ** ((exponent(i) if exponent else 2 * i) / d_model)  # (d/2,)
    angle = (torch.arange(length, dtype=torch.float64)[:, None] + first) * omega  # (L, d/2)
    rotated = pairs * torch.polar(torch.ones_like(angle), sign * angle)  # (B, L, d/2)
    out = torch.empty_like(xd)
    if halves:
        out[..., : d_model // 2], out[..., d_model // 2 :] = rotated.real, rotated.imag
    else:
        out[..., 0::2], out[..., 1::2] = rotated.real, rotated.imag
    return out.float()


@checker(lazy_t("rotary_positions"), lazy_t("each_pair_turned"))
def check_rotary(rotate: Callable[[Tensor], Tensor]):
    """``rotate(x)``: x (batch, len, d_model) → the same shape, each pair (2i, 2i + 1) of position p rotated by the
    angle p·ω_i, ω_i = 1/10000^(2i/d_model). The package's sinusoidal_table may help (it holds sin and cos of p·ω_i)."""
    g = torch.Generator().manual_seed(8)
    for shape in ((1, 6, 8), (2, 9, 16), (3, 5, 64)):
        x = torch.randn(*shape, generator=g)
        what = t("rotate_x_x", shape=shape)
        with no_shortcuts(t("rotation"), allow=("transformer_course.layers",)):
            got = rotate(x.clone())
        expected = _rotary_reference(x)
        mistakes = {
            t("rotate_other_way"): _rotary_reference(x, sign=-1),
            t("paired_dimension_j"): _rotary_reference(x, halves=True),
            t("angle_pair_i"): (_rotary_reference(x, exponent=lambda i: i)),
            t("first_position_p"): _rotary_reference(x, first=1),
            t("each_number_scaled"): _scaled_only(x),
        }
        expect_tensor(got, expected, what, atol=1e-4, mistakes=mistakes)
        if not torch.equal(got[:, 0], x[:, 0]) and not torch.allclose(got[:, 0], x[:, 0], atol=1e-6):
            raise Hint(t("position_0_come", what=what))


def _scaled_only(x: Tensor) -> Tensor:
    batch, length, d_model = x.shape
    i = torch.arange(d_model // 2, dtype=torch.float64)
    angle = torch.arange(length, dtype=torch.float64)[:, None] / 10000 ** (2 * i / d_model)  # (L, d/2)
    return (x.double() * torch.cos(angle).repeat_interleave(2, dim=-1)).float()


# ---- Exercise 3: questions ------------------------------------------------------------------------------------------

QUESTIONS = questions(
    "nb05_embeddings_positional_encoding",
    lazy_t,
    q1="f9aad29cf86ab3d6023f887c",
    q2="6e1d85e6da786bd33732f814",
    q3="22e841419e42122a15bb8cdb",
)


check_quiz = quiz_checker(QUESTIONS)  # one line per question

read_only(__name__)  # what the checks use stays what it was at import (ex.no_shortcuts = … is refused)

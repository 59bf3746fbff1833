"""Notebook 05's checkers: the reference passes, every plausible mistake is named, and no shortcut counts.

The build cell (my_transformer/embeddings.py) is a scaffold the learner completes; its reference is
notebooks/solutions/my_transformer/embeddings.py. The package's classes and table, a table built for pe_dot and
every attribute of the checker module fail the checkers."""

import ast
import math
import random

import numpy as np
import pytest
import torch
from torch import nn

import transformer_course as tc
from transformer_course.exercises import check_question
from transformer_course.exercises import nb05_embeddings_positional_encoding as ex

from helpers import (
    NOTEBOOKS_DIR,
    REFERENCE_FILES,
    build_cell,
    failed_with,
    function_bodies,
    load_module,
    reference,
    solutions,
)

sol = solutions("nb05_embeddings_positional_encoding")  # notebooks/solutions/nb05_embeddings_positional_encoding.py

NOTEBOOK = NOTEBOOKS_DIR / "05_embeddings_positional_encoding.ipynb"
REFERENCE = REFERENCE_FILES / "embeddings.py"


@pytest.fixture(scope="module")
def ref():
    """The reference my_transformer/embeddings.py."""
    return reference("embeddings")


@pytest.fixture(scope="module")
def blank(tmp_path_factory):
    """The build cell as the learner receives it."""
    path = tmp_path_factory.mktemp("blank") / "embeddings.py"
    path.write_text(build_cell(NOTEBOOK, "embeddings.py"))
    return load_module(path, "_blank_embeddings")


# ---- the build cell: a scaffold whose solution is the reference ----------------------------------------------


def test_the_build_cell_leaves_the_lessons_bodies_to_write_and_gives_the_rest():
    scaffold = function_bodies(ast.parse(build_cell(NOTEBOOK, "embeddings.py")))
    answer = function_bodies(ast.parse(REFERENCE.read_text()))
    assert set(scaffold) == set(answer)
    blanks = {name for name, body in scaffold.items() if len(body) == 1 and isinstance(body[0], ast.Raise)}
    assert blanks == {
        "Embeddings.forward",
        "sinusoidal_table",
        "PositionalEncoding.make_table",
        "PositionalEncoding.forward",
        "PositionwiseFeedForward.forward",
    }
    for name in set(scaffold) - blanks:
        assert ast.dump(ast.Module(scaffold[name], [])) == ast.dump(ast.Module(answer[name], []))


def test_the_blank_build_cell_says_not_done_yet(blank):
    assert failed_with(ex.check_embeddings(blank.Embeddings), "not done yet")
    assert failed_with(ex.check_sinusoidal_table(blank.sinusoidal_table), "not done yet")
    assert failed_with(ex.check_positional_encoding(blank.PositionalEncoding), "not done yet")
    assert failed_with(ex.check_feed_forward(blank.PositionwiseFeedForward), "not done yet")


def test_the_reference_passes_every_build_checker(ref):
    assert ex.check_embeddings(ref.Embeddings).passed
    assert ex.check_sinusoidal_table(ref.sinusoidal_table).passed
    assert ex.check_positional_encoding(ref.PositionalEncoding).passed
    assert ex.check_feed_forward(ref.PositionwiseFeedForward).passed


def test_the_reference_loads_the_packages_weights_by_name_and_gives_its_numbers(ref):
    torch.manual_seed(0)
    tokens, x = torch.tensor([[4, 7, 7, 2]]), torch.randn(2, 9, 64)
    embed = ref.Embeddings(10, 8)
    package_embed = tc.Embeddings(10, 8)
    package_embed.load_state_dict(embed.state_dict())
    torch.testing.assert_close(embed(tokens), package_embed(tokens))
    for kind in ("sinusoidal", "learned"):
        mine, package = ref.PositionalEncoding(64, 0.0, 100, kind=kind), tc.PositionalEncoding(64, 0.0, 100, kind=kind)
        mine.load_state_dict(package.state_dict())  # strict
        torch.testing.assert_close(mine(x), package(x))
        torch.testing.assert_close(mine(x[:, :3], 5), package(x[:, :3], 5))
    torch.testing.assert_close(ref.sinusoidal_table(100, 64), tc.sinusoidal_table(100, 64))


def test_the_checkers_leave_the_global_random_state_as_they_found_it(ref):
    torch.manual_seed(123)
    random.seed(5)
    torch_state, python_state = torch.get_rng_state(), random.getstate()
    ex.check_positional_encoding(ref.PositionalEncoding)
    ex.check_feed_forward(ref.PositionwiseFeedForward)
    assert torch.equal(torch.get_rng_state(), torch_state)
    assert random.getstate() == python_state


@pytest.mark.parametrize(
    ("checker", "package"),
    [
        (ex.check_embeddings, tc.Embeddings),
        (ex.check_sinusoidal_table, tc.sinusoidal_table),
        (ex.check_positional_encoding, tc.PositionalEncoding),
        (ex.check_feed_forward, tc.PositionwiseFeedForward),
    ],
    ids=["Embeddings", "sinusoidal_table", "PositionalEncoding", "PositionwiseFeedForward"],
)
def test_the_packages_own_version_is_not_counted(checker, package):
    assert failed_with(checker(package), "transformer_course.layers", "not counted as yours")


# ---- Embeddings -----------------------------------------------------------------------------------------------


def embeddings_with(scale):
    class Scaled(nn.Module):
        def __init__(self, vocab, d_model):
            super().__init__()
            self.lut, self.d_model, self.vocab = nn.Embedding(vocab, d_model), d_model, vocab

        def forward(self, tokens):
            return self.lut(tokens) * scale(self.d_model, self.vocab)

    return Scaled


@pytest.mark.parametrize(
    ("scale", "words"),
    [
        (lambda d, v: 1, ["√d_model factor is missing"]),
        (lambda d, v: 1 / math.sqrt(d), ["divided by √d_model"]),
        (lambda d, v: d, ["multiplied by d_model"]),
        (lambda d, v: math.sqrt(v), ["√vocab"]),
    ],
    ids=["none", "divided", "d_model", "vocab"],
)
def test_embeddings_checker_names_each_mistake(scale, words):
    assert failed_with(ex.check_embeddings(embeddings_with(scale)), *words)


def test_embeddings_checker_passes_another_correct_form_and_names_a_detached_output():
    assert ex.check_embeddings(embeddings_with(lambda d, v: d**0.5)).passed

    class Detached(embeddings_with(lambda d, v: math.sqrt(d))):
        def forward(self, tokens):
            return super().forward(tokens).detach()

    assert not ex.check_embeddings(Detached).passed


# ---- the sinusoidal table ---------------------------------------------------------------------------------------


def table_with(swap=False, halves=False, exponent=lambda two_i, i: two_i, first=0, transpose=False):
    def table(max_len, d_model):
        pos = torch.arange(first, first + max_len, dtype=torch.float64)[:, None]
        i = torch.arange(d_model // 2, dtype=torch.float64)
        angle = pos / 10000 ** (exponent(2 * i, i) / d_model)
        sin, cos = (torch.cos(angle), torch.sin(angle)) if swap else (torch.sin(angle), torch.cos(angle))
        out = torch.zeros(max_len, d_model, dtype=torch.float64)
        if halves:
            out[:, : d_model // 2], out[:, d_model // 2 :] = sin, cos
        else:
            out[:, 0::2], out[:, 1::2] = sin, cos
        return (out.T if transpose else out).float()

    return table


def test_sinusoidal_table_checker_accepts_a_float64_table():
    assert ex.check_sinusoidal_table(lambda n, d: table_with()(n, d).double()).passed


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"swap": True}, ["swapped"]),
        ({"halves": True}, ["interleaves"]),
        ({"exponent": lambda two_i, i: i}, ["i/d_model"]),
        ({"first": 1}, ["start at 0"]),
        ({"transpose": True}, ["one row per position"]),
    ],
    ids=["sin-cos swapped", "not interleaved", "exponent i", "from 1", "transposed"],
)
def test_sinusoidal_table_checker_names_each_mistake(options, words):
    assert failed_with(ex.check_sinusoidal_table(table_with(**options)), *words)


def test_sinusoidal_table_checker_names_one_frequency_per_column():
    def per_column(max_len, d_model):
        pos = torch.arange(max_len, dtype=torch.float64)[:, None]
        angle = pos / 10000 ** (torch.arange(d_model, dtype=torch.float64) / d_model)  # column c, not pair
        out = torch.where(torch.arange(d_model) % 2 == 0, torch.sin(angle), torch.cos(angle))
        return out.float()

    assert failed_with(ex.check_sinusoidal_table(per_column), "its own")


# ---- PositionalEncoding, both kinds ---------------------------------------------------------------------------


def positions_with(ref, mistake):
    class Wrong(ref.PositionalEncoding):
        def make_table(self, d_model, max_len):
            if mistake == "parameter_table" and self.kind == "sinusoidal":
                self.table = nn.Parameter(ref.sinusoidal_table(max_len, d_model))
            elif mistake == "float64" and self.kind == "sinusoidal":
                self.register_buffer("table", ref.sinusoidal_table(max_len, d_model).double(), persistent=False)
            elif mistake == "persistent" and self.kind == "sinusoidal":
                self.register_buffer("table", ref.sinusoidal_table(max_len, d_model))
            elif mistake == "learned_buffer" and self.kind == "learned":
                self.register_buffer("table", torch.randn(max_len, d_model) * 0.02)
            elif mistake == "learned_std1" and self.kind == "learned":
                self.table = nn.Parameter(torch.randn(max_len, d_model))
            elif mistake == "learned_zeros" and self.kind == "learned":
                self.table = nn.Parameter(torch.zeros(max_len, d_model))
            elif mistake == "learned_extra" and self.kind == "learned":
                self.table = nn.Parameter(torch.randn(max_len, d_model) * 0.02)
                self.scale = nn.Parameter(torch.ones(1))  # a second parameter the package's model does not have
            else:
                super().make_table(d_model, max_len)

        def forward(self, x, start=0):
            end = start + x.size(1)
            if mistake != "no_error" and end > self.max_len:
                raise ValueError("too long")
            if mistake == "no_error":
                return self.dropout(x + self.table[start:end])  # a slice past the end: PyTorch's shape error
            if mistake == "no_dropout":
                return x + self.table[start:end]
            if mistake == "drop_table":
                return x + self.dropout(self.table[start:end])
            if mistake == "batch_rows":
                return self.dropout(x + self.table[: x.size(0)])
            if mistake == "no_start":
                return self.dropout(x + self.table[: x.size(1)])
            if mistake == "detached":
                return self.dropout(x + self.table[start:end].detach())
            return super().forward(x, start)

    return Wrong


@pytest.mark.parametrize(
    ("mistake", "words"),
    [
        ("parameter_table", ["buffer", "not an nn.Parameter"]),
        ("persistent", ["persistent=False"]),
        ("float64", ["float32"]),
        ("learned_buffer", ["never trains it"]),
        ("learned_std1", ["std 0.02"]),
        ("learned_zeros", ["all equal"]),
        ("learned_extra", ["{table}", "scale"]),
        ("no_dropout", ["nothing was dropped"]),
        ("drop_table", ["positions alone"]),
        ("batch_rows", ["x.size(0)"]),
        ("no_start", ["whatever start is"]),
        ("no_error", ["raise a ValueError that names max_len"]),
        ("detached", ["no gradient reaches the table"]),
    ],
)
def test_positional_encoding_checker_names_each_mistake(ref, mistake, words):
    assert failed_with(ex.check_positional_encoding(positions_with(ref, mistake)), *words)


# ---- PositionwiseFeedForward ------------------------------------------------------------------------------------


def ffn_with(ref, forward):
    return type("FFN", (ref.PositionwiseFeedForward,), {"forward": forward})


@pytest.mark.parametrize(
    ("forward", "words"),
    [
        (lambda self, x: self.w_2(self.dropout(self.w_1(x))), ["ReLU is missing"]),
        (lambda self, x: torch.relu(self.w_2(self.dropout(self.w_1(x)))), ["after w_2"]),
        (lambda self, x: self.w_2(torch.relu(self.w_1(x))), ["nothing was dropped"]),
        (lambda self, x: self.dropout(self.w_2(torch.relu(self.w_1(x)))), ["acts on the output"]),
        (lambda self, x: self.w_2(torch.relu(self.w_1(self.dropout(x)))), ["acts on the input"]),
        (lambda self, x: self.w_2(self.dropout(nn.functional.gelu(self.w_1(x)))), ["uses GELU", "ReLU", "§3.3"]),
        (
            lambda self, x: self.w_2(self.dropout(nn.functional.gelu(self.w_1(x), approximate="tanh"))),
            ["GELU in its tanh approximation", "ReLU"],
        ),
    ],
    ids=["no relu", "relu after", "no dropout", "dropout on output", "dropout on input", "gelu", "gelu tanh"],
)
def test_feed_forward_checker_names_each_mistake(ref, forward, words):
    assert failed_with(ex.check_feed_forward(ffn_with(ref, forward)), *words)


def test_feed_forward_checker_names_linear_layers_built_without_their_bias(ref):
    """It used to list the parameter names only, without saying that bias=False removed them."""

    def init(self, d_model, d_ff, dropout=0.0):
        nn.Module.__init__(self)
        self.w_1, self.w_2 = nn.Linear(d_model, d_ff, bias=False), nn.Linear(d_ff, d_model, bias=False)
        self.dropout = nn.Dropout(dropout)

    no_bias = type("FFN", (ref.PositionwiseFeedForward,), {"__init__": init})
    assert failed_with(ex.check_feed_forward(no_bias), "w_1.bias, w_2.bias are missing", "bias=False", "x W + b")


def test_feed_forward_checker_passes_dropout_before_the_relu_which_is_the_same_numbers(ref):
    """relu(dropout(h)) = dropout(relu(h)): dropout scales by a positive number or zeroes."""
    assert ex.check_feed_forward(ffn_with(ref, lambda self, x: self.w_2(torch.relu(self.dropout(self.w_1(x)))))).passed


# ---- exercise 1: PE(pos) · PE(pos + k) without the table ----------------------------------------------------------


@pytest.mark.parametrize(
    "form",
    [float, np.float64, torch.tensor, lambda v: torch.tensor([v], dtype=torch.float64)],
    ids=["float", "numpy float64", "0-d tensor", "one-number tensor"],
)
def test_pe_dot_checker_accepts_every_number_form(form):
    assert ex.check_pe_dot(lambda k, d_model: form(sol.pe_dot(k, d_model))).passed


def test_pe_dot_checker_accepts_two_rows_computed_without_a_table():
    def two_rows(k, d_model):
        i = torch.arange(d_model // 2, dtype=torch.float64)
        angle = torch.tensor([3.0, 3.0 + k], dtype=torch.float64)[:, None] / 10000 ** (2 * i / d_model)
        return float((torch.sin(angle[0]) * torch.sin(angle[1]) + torch.cos(angle[0]) * torch.cos(angle[1])).sum())

    assert ex.check_pe_dot(two_rows).passed


def test_pe_dot_solution_agrees_with_the_packages_table():
    table = tc.sinusoidal_table(80, 64).double()  # (80, 64)
    for pos in (0, 3, 20):
        assert math.isclose(float(table[pos] @ table[pos + 17]), sol.pe_dot(17, 64), rel_tol=1e-5)


def omegas(d_model):
    return [1 / 10000 ** (2 * i / d_model) for i in range(d_model // 2)]


@pytest.mark.parametrize(
    ("wrong", "words"),
    [
        (lambda k, d: sum(math.sin(w * k) for w in omegas(d)), ["sin", "cos(a − b)"]),
        (lambda k, d: sum(math.cos(k / 10000 ** (i / d)) for i in range(d // 2)), ["2i", "not i"]),
        (lambda k, d: sol.pe_dot(k, d) / (d / 2), ["mean"]),
        (lambda k, d: sum(math.cos(k / 10000 ** (c / d)) for c in range(d)), ["d_model/2 pairs"]),
        (lambda k, d: d / 2 * math.cos(k), ["one frequency"]),
        (lambda k, d: sol.pe_dot(k, d) + 1, ["the table gives"]),
    ],
    ids=["sin", "exponent i", "mean", "d_model frequencies", "one frequency", "other"],
)
def test_pe_dot_checker_names_each_mistake(wrong, words):
    assert failed_with(ex.check_pe_dot(wrong), *words)


def test_pe_dot_checker_refuses_the_packages_table():
    def from_table(k, d_model):
        table = tc.sinusoidal_table(k + 11, d_model)
        return float(table[10] @ table[10 + k])

    assert failed_with(ex.check_pe_dot(from_table), "transformer_course.layers.sinusoidal_table")


def test_pe_dot_checker_refuses_a_table_of_ones_own(ref):
    """The learner's own sinusoidal_table passes the small cases, and cannot hold k = 10¹³ rows."""

    def from_own_table(k, d_model):
        table = ref.sinusoidal_table(k + 11, d_model)
        return float(table[10] @ table[10 + k])

    assert failed_with(ex.check_pe_dot(from_own_table), "cannot be built", "no table")


def test_pe_dot_checker_refuses_reading_the_notebooks_similarity_matrix():
    similarity = (lambda t: t @ t.T)(tc.sinusoidal_table(100, 64)).double()

    def from_matrix(k, d_model):
        assert d_model == 64 or k < 60
        table = tc.sinusoidal_table(100, d_model).double() if d_model != 64 else None
        return float(similarity[10, 10 + k]) if table is None else float(table[10] @ table[10 + k])

    assert not ex.check_pe_dot(from_matrix).passed


def test_pe_dot_checker_names_float32_precision_for_the_huge_offsets():
    def in_float32(k, d_model):
        return float(torch.cos(k / 10000 ** (torch.arange(0, d_model, 2) / d_model)).sum())

    assert failed_with(ex.check_pe_dot(in_float32), "float64")


def test_pe_dot_checker_refuses_a_string():
    assert failed_with(ex.check_pe_dot(lambda k, d: "2.5"), "number")


# ---- exercise 2: rotary positions --------------------------------------------------------------------------------


def test_rotary_checker_passes_the_solution_and_one_built_on_the_sinusoidal_table():
    assert ex.check_rotary(sol.rotate).passed

    def with_table(x):
        table = tc.sinusoidal_table(x.size(1), x.size(2))  # sin and cos of p·ω_i, allowed here
        sin, cos = table[:, 0::2], table[:, 1::2]
        even, odd = x[..., 0::2], x[..., 1::2]
        return torch.stack((even * cos - odd * sin, even * sin + odd * cos), dim=-1).flatten(-2)

    assert ex.check_rotary(with_table).passed


def rotate_with(sign=1, halves=False, exponent=lambda two_i, i: two_i, first=0, mix=True):
    def rotate(x):
        length, d = x.size(1), x.size(2)
        i = torch.arange(d // 2, dtype=torch.float32)
        angle = (torch.arange(length, dtype=torch.float32)[:, None] + first) / 10000 ** (exponent(2 * i, i) / d)
        cos, sin = torch.cos(angle), sign * torch.sin(angle)
        a, b = (x[..., : d // 2], x[..., d // 2 :]) if halves else (x[..., 0::2], x[..., 1::2])
        ya, yb = (a * cos - b * sin, a * sin + b * cos) if mix else (a * cos, b * cos)
        out = torch.empty_like(x)
        if halves:
            out[..., : d // 2], out[..., d // 2 :] = ya, yb
        else:
            out[..., 0::2], out[..., 1::2] = ya, yb
        return out

    return rotate


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"sign": -1}, ["other way"]),
        ({"halves": True}, ["GPT-NeoX"]),
        ({"exponent": lambda two_i, i: i}, ["i/d_model"]),
        ({"first": 1}, ["p = 0"]),
        ({"mix": False}, ["not mixed"]),
    ],
    ids=["other way", "halves", "exponent i", "from 1", "no mixing"],
)
def test_rotary_checker_names_each_mistake(options, words):
    assert failed_with(ex.check_rotary(rotate_with(**options)), *words)


def test_rotary_is_the_rotation_that_makes_query_key_products_depend_on_the_distance_only():
    torch.manual_seed(0)
    q, k = torch.randn(1, 1, 16), torch.randn(1, 1, 16)
    rq, rk = sol.rotate(q.expand(1, 30, 16).contiguous()), sol.rotate(k.expand(1, 30, 16).contiguous())
    dots = [float(rq[0, p] @ rk[0, p + 4]) for p in range(20)]
    assert max(dots) - min(dots) < 1e-4


# ---- exercise 3: questions ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "answers",
    [
        sol.QUIZ,
        {"q1": np.float64(sol.QUIZ["q1"]), "q2": "B", "q3": 768.0},
        {"q1": torch.tensor(sol.QUIZ["q1"]), "q2": " b ", "q3": torch.tensor(768)},
        {"q1": round(sol.QUIZ["q1"]), "q2": "(b)", "q3": np.int64(768)},
    ],
    ids=["solution", "numpy and capital", "tensor", "rounded"],
)
def test_quiz_accepts_every_form_of_the_right_answers(answers):
    assert ex.check_quiz(**answers).passed


def test_quiz_calls_the_notebooks_blanks_not_done_yet(capsys):
    result = ex.check_quiz(q1=..., q2=..., q3=...)  # the notebook's `q1 = ...` lines, run unchanged
    assert not result.passed and result.message == "0 of 3 right"
    assert capsys.readouterr().out.count("not done yet") == 3


@pytest.mark.parametrize(
    ("question", "value", "words"),
    [
        ("q1", 2 * math.pi * 10000, ["round bound", "510/512"]),
        ("q1", 10000 ** (510 / 512), ["2π / ω"]),
        ("q1", 2 * math.pi * 10000 ** (511 / 512), ["EVEN column"]),
        ("q1", 2 * math.pi * 10000 ** (255 / 512), ["i/d_model"]),
        ("q1", 6.283, ["one full turn"]),
        ("q2", "a", ["a mean does not see"]),
        ("q2", "c", ["float rounding"]),
        ("q3", 512, ["word vector alone"]),
        ("q3", 256, ["positional vector alone"]),
        ("q3", 257, ["× √d_model"]),
        ("q3", 1024, ["not d_model"]),
        ("q3", 700, ["cross term"]),
    ],
)
def test_quiz_names_each_wrong_answer(question, value, words):
    assert failed_with(check_question(question, ex.QUESTIONS[question], value), *words)


def test_quiz_refuses_a_letter_that_is_no_option():
    assert failed_with(check_question("q2", ex.QUESTIONS["q2"], "d"), "one of the letters")


# ---- no answer in reach ---------------------------------------------------------------------------------------

CHECKERS = {
    "check_embeddings": ex.check_embeddings,
    "check_sinusoidal_table": ex.check_sinusoidal_table,
    "check_positional_encoding": ex.check_positional_encoding,
    "check_feed_forward": ex.check_feed_forward,
    "check_pe_dot": ex.check_pe_dot,
    "check_rotary": ex.check_rotary,
    "check_quiz q1": lambda value: ex.check_quiz(q1=value),
    "check_quiz q2": lambda value: ex.check_quiz(q2=value),
    "check_quiz q3": lambda value: ex.check_quiz(q3=value),
}


@pytest.mark.parametrize("checker", CHECKERS, ids=list(CHECKERS))
def test_no_attribute_of_the_checker_module_passes_a_checker(checker, capsys):
    passed = []
    for name in dir(ex):
        if name.startswith("__"):
            continue
        try:
            result = CHECKERS[checker](getattr(ex, name))
        except Exception:  # noqa: S112 (a call that cannot even run is a fail)
            continue
        if result.passed:
            passed.append(name)
    assert not passed, f"{checker} passes ex.{passed}"

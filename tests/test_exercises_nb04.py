"""Notebook 04's checkers pass every allowed form of a right answer and name each plausible mistake."""

import difflib
import importlib
import inspect
import sys
from pathlib import Path

import nbformat
import numpy as np
import pytest
import torch
from torch import nn

import transformer_course as tc
from transformer_course.exercises import nb04_layernorm_residual as ex

from helpers import solutions

sol = solutions("nb04_layernorm_residual")  # notebooks/solutions/nb04_layernorm_residual.py

NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "04_layernorm_residual.ipynb"


def failed_with(result, *words):
    """The check failed and its message names the mistake."""
    return not result.passed and all(w.lower() in result.message.lower() for w in words)


@pytest.fixture
def norm_residual(tmp_path, monkeypatch):
    """my_transformer/norm_residual.py as notebook 04's %%writefile cell writes it, imported from tmp_path."""
    (tmp_path / "my_transformer").mkdir()
    (tmp_path / "my_transformer" / "__init__.py").touch()
    for cell in nbformat.read(NOTEBOOK, as_version=4).cells:
        first, _, body = cell.source.partition("\n")
        if cell.cell_type == "code" and first.startswith("%%writefile my_transformer/"):
            (tmp_path / first.split()[1]).write_text(body)
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [m for m in sys.modules if m == "my_transformer" or m.startswith("my_transformer.")]:
        monkeypatch.delitem(sys.modules, name)
    yield importlib.import_module("my_transformer.norm_residual")
    for name in [m for m in sys.modules if m == "my_transformer" or m.startswith("my_transformer.")]:
        del sys.modules[name]


# ---- the learner's LayerNorm (my_transformer/norm_residual.py) ------------------------------------------


class LayerNormWith(nn.Module):
    """A learner's LayerNorm with one switchable mistake."""

    mistake = None

    def __init__(self, features, eps=1e-5):
        super().__init__()
        self.eps = 1e-5 if self.mistake == "fixed_eps" else eps
        self.weight, self.bias = nn.Parameter(torch.ones(features)), nn.Parameter(torch.zeros(features))

    def forward(self, x):
        dim = 0 if self.mistake == "batch" else -1
        mean = x.mean(dim, keepdim=True)
        var = x.var(dim, unbiased=self.mistake == "unbiased", keepdim=True)
        if self.mistake == "eps_outside":
            return self.weight * (x - mean) / (var.sqrt() + self.eps) + self.bias
        if self.mistake == "no_affine":
            return (x - mean) / torch.sqrt(var + self.eps)
        if self.mistake == "variance":
            return self.weight * (x - mean) / (var + self.eps) + self.bias
        return self.weight * (x - mean) / torch.sqrt(var + self.eps) + self.bias


def layer_norm_with(mistake):
    return type(f"LayerNorm_{mistake}", (LayerNormWith,), {"mistake": mistake})


def test_layer_norm_checker_passes_the_notebooks_class_the_package_and_pytorch(norm_residual):
    assert ex.check_layer_norm_module(norm_residual.LayerNorm).passed
    assert ex.check_layer_norm_module(tc.LayerNorm).passed
    assert ex.check_layer_norm_module(lambda features, eps=1e-5: tc.LayerNorm(features, eps, fast=False)).passed
    assert ex.check_layer_norm_module(nn.LayerNorm).passed
    assert ex.check_layer_norm_module(layer_norm_with(None)).passed


def test_the_epsilon_mistake_passes_the_old_inputs_but_not_the_tiny_spread():
    """At atol 1e-5, ε outside the root is invisible on the course matrix; the small-spread rows expose it."""
    x = torch.tensor([[1.0, 2, 3], [8, 9, 10], [15, 16, 17]])
    right, wrong = layer_norm_with(None)(3), layer_norm_with("eps_outside")(3)
    assert torch.allclose(right(x), wrong(x), atol=1e-5)
    assert failed_with(ex.check_layer_norm_module(layer_norm_with("eps_outside")), "ε belongs inside", "(3, 8)")


@pytest.mark.parametrize(
    ("mistake", "words"),
    [
        ("batch", ["BatchNorm"]),
        ("unbiased", ["unbiased"]),
        ("no_affine", ["γ"]),
        ("variance", ["divided by the variance"]),
        ("fixed_eps", ["eps argument"]),
    ],
)
def test_layer_norm_checker_names_each_mistake(mistake, words):
    assert failed_with(ex.check_layer_norm_module(layer_norm_with(mistake)), *words)


def test_layer_norm_checker_names_wrong_parameter_names():
    class GammaBeta(nn.Module):
        def __init__(self, features, eps=1e-5):
            super().__init__()
            self.gamma, self.beta = nn.Parameter(torch.ones(features)), nn.Parameter(torch.zeros(features))

    assert failed_with(ex.check_layer_norm_module(GammaBeta), "'weight'", "gamma")


# ---- the learner's ResidualConnection ----------------------------------------------------------------


class ResidualWith(nn.Module):
    mistake = None

    def __init__(self, d_model, dropout, norm_first=False):
        super().__init__()
        self.norm, self.dropout, self.norm_first = nn.LayerNorm(d_model), nn.Dropout(dropout), norm_first
        if self.mistake == "swapped":
            self.norm_first = not norm_first

    def forward(self, x, sublayer):
        drop = (lambda t: t) if self.mistake == "no_dropout" else self.dropout
        if self.mistake == "no_residual":
            return sublayer(self.norm(x)) if self.norm_first else self.norm(sublayer(x))
        if self.norm_first:
            return drop(x + sublayer(self.norm(x))) if self.mistake == "drop_sum" else x + drop(sublayer(self.norm(x)))
        if self.mistake == "drop_sum":
            return self.norm(drop(x + sublayer(x)))
        if self.mistake == "drop_after":
            return drop(self.norm(x + sublayer(x)))
        return self.norm(x + drop(sublayer(x)))


def residual_with(mistake):
    return type(f"Residual_{mistake}", (ResidualWith,), {"mistake": mistake})


def test_residual_checker_passes_the_notebooks_class_the_package_and_the_fixed_buggy_one(norm_residual):
    assert ex.check_residual_connection(norm_residual.ResidualConnection).passed
    assert ex.check_residual_connection(tc.ResidualConnection).passed
    assert ex.check_residual_connection(sol.FixedResidualConnection).passed
    assert ex.check_residual_connection(residual_with(None)).passed


@pytest.mark.parametrize(
    ("mistake", "words"),
    [
        ("swapped", ["norm_first=False", "LayerNorm(x + Dropout(Sublayer(x)))"]),
        ("no_residual", ["residual x is missing"]),
        ("drop_sum", ["residual included", "§5.4"]),
        ("drop_after", ["after the LayerNorm"]),
        ("no_dropout", ["apply self.dropout"]),
    ],
)
def test_residual_checker_names_each_mistake(mistake, words):
    assert failed_with(ex.check_residual_connection(residual_with(mistake)), *words)


def test_residual_checker_reports_an_error_in_the_learner_code_without_traceback():
    class Broken(ResidualWith):
        def forward(self, x, sublayer):
            return x + sublayer(x[..., :3])

    assert failed_with(ex.check_residual_connection(Broken), "your code raised")


# ---- the notebook's classes equal the package's with copied weights -----------------------------------


def test_the_notebooks_classes_load_the_packages_weights_by_name(norm_residual):
    torch.manual_seed(0)
    x, sublayer = torch.randn(2, 5, 16), nn.Linear(16, 16)
    for norm_first in (False, True):
        package = tc.ResidualConnection(16, 0.1, norm_first).eval()
        with torch.no_grad():
            package.norm.weight.uniform_(0.5, 1.5)
            package.norm.bias.normal_()
        mine = norm_residual.ResidualConnection(16, 0.1, norm_first).eval()
        mine.load_state_dict(package.state_dict())  # strict: the names must match
        torch.testing.assert_close(mine(x, sublayer), package(x, sublayer))


# ---- exercise 1: RMSNorm ---------------------------------------------------------------------------------


def test_rms_norm_checker_passes_the_solution_and_pytorch():
    assert ex.check_rms_norm(sol.rms_norm).passed
    assert ex.check_rms_norm(lambda x, gamma, eps: torch.nn.functional.rms_norm(x, gamma.shape, gamma, eps)).passed
    assert ex.check_rms_norm(lambda x, gamma, eps: gamma * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def _rms(x, gamma, eps, dim=-1, center=False, sqrt=True, inside=True, reduce="mean", affine=True):
    centred = x - x.mean(dim, keepdim=True) if center else x
    square = centred.pow(2)
    ms = square.mean(dim, keepdim=True) if reduce == "mean" else square.sum(dim, keepdim=True)
    denominator = (torch.sqrt(ms + eps) if inside else torch.sqrt(ms) + eps) if sqrt else ms + eps
    return (gamma if affine else 1) * x / denominator if not center else gamma * centred / denominator


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"center": True}, ["subtracted the mean"]),
        ({"inside": False}, ["ε belongs inside", "(3, 8)"]),
        ({"sqrt": False}, ["square root"]),
        ({"reduce": "sum"}, ["summed"]),
        ({"dim": 0}, ["dim 0"]),
        ({"affine": False}, ["gain γ is missing"]),
    ],
)
def test_rms_norm_checker_names_each_mistake(options, words):
    assert failed_with(ex.check_rms_norm(lambda x, gamma, eps: _rms(x, gamma, eps, **options)), *words)


def test_rms_norm_checker_names_the_standard_deviation():
    def by_std(x, gamma, eps):
        return gamma * x / torch.sqrt(x.var(-1, unbiased=False, keepdim=True) + eps)

    assert failed_with(ex.check_rms_norm(by_std), "standard deviation")


# ---- exercise 2: find the bugs -----------------------------------------------------------------------


def test_the_bugs_are_real_and_fixing_exactly_those_lines_repairs_the_class():
    assert not ex.check_residual_connection(ex.BuggyResidualConnection).passed
    assert ex.check_residual_connection(sol.FixedResidualConnection).passed
    buggy = inspect.getsource(ex.BuggyResidualConnection).splitlines()
    fixed = inspect.getsource(sol.FixedResidualConnection).replace("Fixed", "Buggy").splitlines()
    changed = set()
    for tag, i1, i2, _, _ in difflib.SequenceMatcher(None, buggy, fixed).get_opcodes():
        if tag != "equal":
            changed.update(range(i1 + 1, i2 + 1))
    assert changed == ex.BUG_LINES == set(sol.bug_lines)


@pytest.mark.parametrize("answer", [[10, 11], (11, 10), {10, 11}, [np.int64(10), torch.tensor(11)]], ids=str)
def test_bug_lines_checker_accepts_every_form_of_the_answer(answer):
    assert ex.check_bug_lines(answer).passed


@pytest.mark.parametrize(
    ("answer", "words"),
    [
        ([11], ["pre-LN branch"]),
        ([10], ["post-LN branch", "§5.4"]),
        ([4, 10, 11], ["line 4 is right"]),
        ([9, 10, 11], ["line 9 is right"]),
        ([3, 10, 11], ["line 3 is right"]),
        ([10, 12], ["lines 1–11"]),
        (10, ["list"]),
        (..., ["not done yet"]),
    ],
)
def test_bug_lines_checker_names_what_is_wrong(answer, words):
    assert failed_with(ex.check_bug_lines(answer), *words)


# ---- exercise 3: LayerNorm parameters --------------------------------------------------------------------


def package_count(N, d_model, norm_first):
    """LayerNorm parameters of the package's model, counted module by module."""
    model = tc.make_model(11, 11, N=N, d_model=d_model, d_ff=2 * d_model, h=2, norm_first=norm_first)
    return sum(p.numel() for m in model.modules() if isinstance(m, tc.LayerNorm) for p in m.parameters())


@pytest.mark.parametrize(("N", "d_model", "norm_first"), [(2, 8, False), (2, 8, True), (3, 16, True)])
def test_layer_norm_count_solution_equals_the_packages_model(N, d_model, norm_first):
    assert sol.layer_norm_parameter_count(N, d_model, norm_first) == package_count(N, d_model, norm_first)
    assert ex.layer_norm_parameter_count(N, d_model, norm_first) == package_count(N, d_model, norm_first)


@pytest.mark.parametrize("convert", [int, float, np.int64, torch.tensor], ids=["int", "float", "numpy", "tensor"])
def test_layer_norm_count_checker_accepts_every_number_type(convert):
    assert ex.check_layer_norm_parameter_count(lambda *a: convert(sol.layer_norm_parameter_count(*a))).passed


@pytest.mark.parametrize(
    ("norms", "per_norm", "words"),
    [
        (lambda N, f: 5 * N + 2 * f, lambda d: d, ["γ only"]),
        (lambda N, f: 4 * N + 2 * f, lambda d: 2 * d, ["three sub-layers"]),
        (lambda N, f: 2 * N + f, lambda d: 2 * d, ["encoder only"]),
        (lambda N, f: 5 * N, lambda d: 2 * d, ["leaves out the final LayerNorm"]),
        (lambda N, f: 5 * N + f, lambda d: 2 * d, ["one final LayerNorm"]),
        (lambda N, f: 5 * N + 2, lambda d: 2 * d, ["post-LN"]),
        (lambda N, f: 7, lambda d: 2 * d, ["Add & Norm boxes"]),
    ],
)
def test_layer_norm_count_checker_names_each_mistake(norms, per_norm, words):
    def count(N, d_model, norm_first):
        return norms(N, int(norm_first)) * per_norm(d_model)

    assert failed_with(ex.check_layer_norm_parameter_count(count), *words)


# ---- conceptual questions --------------------------------------------------------------------------------

QUESTIONS = [
    (ex.check_question_batch_norm, sol.question_batch_norm, {"a": "speed", "c": "learned γ", "d": "2 · features"}),
    (ex.check_question_warmup, sol.question_warmup, {"b": "opposite", "c": "over-fitting", "d": "masks"}),
]


@pytest.mark.parametrize(("checker", "right", "hints"), QUESTIONS)
def test_question_checkers_accept_the_right_letter_in_any_form(checker, right, hints):
    for form in (right, right.upper(), f" ({right}) "):
        assert checker(form).passed


@pytest.mark.parametrize(("checker", "right", "hints"), QUESTIONS)
def test_question_checkers_explain_every_wrong_letter(checker, right, hints):
    assert set(hints) | {right} == set("abcd")
    for letter, words in hints.items():
        assert failed_with(checker(letter), words)
    assert failed_with(checker(...), "not done yet")

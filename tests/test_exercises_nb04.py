"""Notebook 04's checkers: the reference passes, every plausible mistake is named, and no shortcut counts.

The build cell (my_transformer/norm_residual.py) is a scaffold the learner completes; its reference is
notebooks/solutions/my_transformer/norm_residual.py. PyTorch's normalisations, the package's classes and every
attribute of the checker module fail the checkers."""

import ast
import random

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import transformer_course as tc
from transformer_course.exercises import check_question
from transformer_course.exercises import nb04_layernorm_residual as ex

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

sol = solutions("nb04_layernorm_residual")  # notebooks/solutions/nb04_layernorm_residual.py

NOTEBOOK = NOTEBOOKS_DIR / "04_layernorm_residual.ipynb"
REFERENCE = REFERENCE_FILES / "norm_residual.py"


@pytest.fixture(scope="module")
def ref():
    """The reference my_transformer/norm_residual.py."""
    return reference("norm_residual")


@pytest.fixture(scope="module")
def blank(tmp_path_factory):
    """The build cell as the learner receives it."""
    path = tmp_path_factory.mktemp("blank") / "norm_residual.py"
    path.write_text(build_cell(NOTEBOOK, "norm_residual.py"))
    return load_module(path, "_blank_norm_residual")


# ---- the build cell: a scaffold whose solution is the reference ----------------------------------------------


def test_the_build_cell_leaves_both_forward_methods_to_write_and_gives_the_rest():
    scaffold, answer = ast.parse(build_cell(NOTEBOOK, "norm_residual.py")), ast.parse(REFERENCE.read_text())
    stubs, full = function_bodies(scaffold), function_bodies(answer)
    assert set(stubs) == set(full)
    blanks = {name for name, body in stubs.items() if len(body) == 1 and isinstance(body[0], ast.Raise)}
    assert blanks == {"LayerNorm.forward", "ResidualConnection.forward"}
    for name in set(stubs) - blanks:  # the given methods are the reference's
        assert ast.dump(ast.Module(stubs[name], [])) == ast.dump(ast.Module(full[name], []))
    assert [ast.dump(n) for n in scaffold.body if not isinstance(n, ast.ClassDef)] == [
        ast.dump(n) for n in answer.body if not isinstance(n, ast.ClassDef)
    ]  # docstring and imports


def test_the_blank_build_cell_says_not_done_yet(blank):
    assert failed_with(ex.check_layer_norm_module(blank.LayerNorm), "not done yet")
    assert failed_with(ex.check_residual_connection(blank.ResidualConnection), "not done yet")


# ---- LayerNorm -------------------------------------------------------------------------------------------------


class LayerNormWith(nn.Module):
    """A learner's LayerNorm with one switchable mistake."""

    mistake = None

    def __init__(self, features, eps=1e-5):
        super().__init__()
        self.eps = 1e-5 if self.mistake == "fixed_eps" else eps
        self.weight, self.bias = nn.Parameter(torch.ones(features)), nn.Parameter(torch.zeros(features))

    def forward(self, x):
        dim = {"batch": 0, "two_dims": (-2, -1)}.get(self.mistake, -1)
        mean = x.mean(dim, keepdim=True)
        var = x.var(dim, unbiased=self.mistake == "unbiased", keepdim=True)
        if self.mistake == "eps_outside":
            return self.weight * (x - mean) / (var.sqrt() + self.eps) + self.bias
        if self.mistake == "no_affine":
            return (x - mean) / torch.sqrt(var + self.eps)
        if self.mistake == "no_bias":
            return self.weight * (x - mean) / torch.sqrt(var + self.eps)
        if self.mistake == "variance":
            return self.weight * (x - mean) / (var + self.eps) + self.bias
        out = self.weight * (x - mean) / torch.sqrt(var + self.eps) + self.bias
        return out.detach() if self.mistake == "detached" else out


def layer_norm_with(mistake):
    return type(f"LayerNorm_{mistake}", (LayerNormWith,), {"mistake": mistake})


def test_layer_norm_checker_passes_the_reference_and_a_second_correct_form(ref):
    assert ex.check_layer_norm_module(ref.LayerNorm).passed
    assert ex.check_layer_norm_module(layer_norm_with(None)).passed

    class Rsqrt(LayerNormWith):
        def forward(self, x):
            centred = x - x.mean(-1, keepdim=True)
            return self.weight * centred * torch.rsqrt(centred.pow(2).mean(-1, keepdim=True) + self.eps) + self.bias

    assert ex.check_layer_norm_module(Rsqrt).passed


def test_the_epsilon_mistake_passes_the_course_matrix_but_not_the_tiny_spread():
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
        ("no_bias", ["did not add β"]),
        ("variance", ["divided by the variance"]),
        ("fixed_eps", ["eps argument"]),
        ("two_dims", ["last two dimensions"]),
        ("detached", ["no gradient flows back"]),
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


class CallsLayerNorm(LayerNormWith):
    def forward(self, x):
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, self.eps)


class CallsRmsNorm(LayerNormWith):
    def forward(self, x):
        centred = x - x.mean(-1, keepdim=True)
        return F.rms_norm(centred, self.weight.shape, self.weight, self.eps) + self.bias


@pytest.mark.parametrize(
    ("shortcut", "words"),
    [
        (nn.LayerNorm, ["torch.nn.functional.layer_norm", "not counted as yours"]),
        (CallsLayerNorm, ["torch.nn.functional.layer_norm"]),
        (CallsRmsNorm, ["rms_norm"]),
        (tc.LayerNorm, ["transformer_course.layers.LayerNorm"]),
        (lambda features, eps=1e-5: tc.LayerNorm(features, eps, fast=False), ["transformer_course.layers"]),
        (ex.FusedLayerNorm, ["transformer_course.exercises.nb04_layernorm_residual"]),
    ],
    ids=["nn.LayerNorm", "F.layer_norm", "F.rms_norm", "tc.LayerNorm", "tc.LayerNorm(fast=False)", "ex.Fused"],
)
def test_layer_norm_checker_refuses_every_shortcut(shortcut, words):
    assert failed_with(ex.check_layer_norm_module(shortcut), *words)


# ---- ResidualConnection ----------------------------------------------------------------------------------------


def residual_with(mistake, ref_module):
    class ResidualWith(nn.Module):
        def __init__(self, d_model, dropout, norm_first=False):
            super().__init__()
            self.norm, self.dropout, self.norm_first = ref_module.LayerNorm(d_model), nn.Dropout(dropout), norm_first
            if mistake == "swapped":
                self.norm_first = not norm_first

        def forward(self, x, sublayer):
            drop = (lambda t: t) if mistake == "no_dropout" else self.dropout
            if mistake == "no_residual":
                return sublayer(self.norm(x)) if self.norm_first else self.norm(sublayer(x))
            if mistake == "norm_carried" and self.norm_first:
                return self.norm(x) + drop(sublayer(self.norm(x)))
            if mistake == "drop_input":
                return x + sublayer(drop(self.norm(x))) if self.norm_first else self.norm(x + sublayer(drop(x)))
            if self.norm_first:
                return drop(x + sublayer(self.norm(x))) if mistake == "drop_sum" else x + drop(sublayer(self.norm(x)))
            if mistake == "drop_sum":
                return self.norm(drop(x + sublayer(x)))
            if mistake == "drop_after":
                return drop(self.norm(x + sublayer(x)))
            if mistake == "detached":
                return self.norm(x + drop(sublayer(x))).detach()
            return self.norm(x + drop(sublayer(x)))

    return ResidualWith


def test_residual_checker_passes_the_reference(ref):
    assert ex.check_residual_connection(ref.ResidualConnection).passed
    assert ex.check_residual_connection(residual_with(None, ref)).passed


@pytest.mark.parametrize(
    ("mistake", "words"),
    [
        ("swapped", ["norm_first=False", "LayerNorm(x + Dropout(Sublayer(x)))"]),
        ("no_residual", ["residual x is missing"]),
        ("norm_carried", ["carries norm(x)"]),
        ("drop_sum", ["residual included", "§5.4"]),
        ("drop_after", ["after the LayerNorm"]),
        ("drop_input", ["sub-layer's input"]),
        ("no_dropout", ["apply self.dropout"]),
        ("detached", ["no gradient reaches x"]),
    ],
)
def test_residual_checker_names_each_mistake(mistake, words, ref):
    assert failed_with(ex.check_residual_connection(residual_with(mistake, ref)), *words)


def test_residual_checker_says_when_the_layer_norm_inside_is_wrong(ref):
    class WrongNorm(ref.ResidualConnection):
        def __init__(self, d_model, dropout, norm_first=False):
            super().__init__(d_model, dropout, norm_first)
            self.norm = layer_norm_with("unbiased")(d_model)

    assert failed_with(ex.check_residual_connection(WrongNorm), "check_layer_norm_module pass first")


def test_residual_checker_refuses_the_package_and_pytorchs_layer_norm(ref):
    class TorchNorm(ref.ResidualConnection):
        def __init__(self, d_model, dropout, norm_first=False):
            super().__init__(d_model, dropout, norm_first)
            self.norm = nn.LayerNorm(d_model)

    assert failed_with(ex.check_residual_connection(tc.ResidualConnection), "transformer_course.layers")
    assert failed_with(ex.check_residual_connection(TorchNorm), "torch.nn.functional.layer_norm")


def test_residual_checker_reports_an_error_in_the_learner_code_without_traceback(ref):
    class Broken(ref.ResidualConnection):
        def forward(self, x, sublayer):
            return x + sublayer(x[..., :3])

    assert failed_with(ex.check_residual_connection(Broken), "your code raised")


def test_the_reference_loads_the_packages_weights_by_name(ref):
    torch.manual_seed(0)
    x, sublayer = torch.randn(2, 5, 16), nn.Linear(16, 16)
    for norm_first in (False, True):
        package = tc.ResidualConnection(16, 0.1, norm_first).eval()
        with torch.no_grad():
            package.norm.weight.uniform_(0.5, 1.5)
            package.norm.bias.normal_()
        mine = ref.ResidualConnection(16, 0.1, norm_first).eval()
        mine.load_state_dict(package.state_dict())  # strict: the names must match
        torch.testing.assert_close(mine(x, sublayer), package(x, sublayer))


def test_the_checkers_leave_the_global_random_state_as_they_found_it(ref):
    torch.manual_seed(123)
    random.seed(5)
    torch_state, python_state = torch.get_rng_state(), random.getstate()
    ex.check_layer_norm_module(ref.LayerNorm)
    ex.check_residual_connection(ref.ResidualConnection)
    ex.check_rms_norm(sol.rms_norm)
    assert torch.equal(torch.get_rng_state(), torch_state)
    assert random.getstate() == python_state


# ---- exercise 1: RMSNorm ---------------------------------------------------------------------------------


def test_rms_norm_checker_passes_the_solution_and_a_second_correct_form():
    assert ex.check_rms_norm(sol.rms_norm).passed
    assert ex.check_rms_norm(lambda x, gamma, eps: gamma * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


@pytest.mark.parametrize(
    "shortcut",
    [
        lambda x, gamma, eps: F.rms_norm(x, gamma.shape, gamma, eps),
        lambda x, gamma, eps: torch.rms_norm(x, gamma.shape, gamma, eps),
        lambda x, gamma, eps: nn.functional.rms_norm(x, (x.size(-1),), gamma, eps),
    ],
    ids=["F.rms_norm", "torch.rms_norm", "nn.functional.rms_norm"],
)
def test_rms_norm_checker_refuses_pytorchs_rms_norm(shortcut):
    assert failed_with(ex.check_rms_norm(shortcut), "rms_norm", "not counted as yours")


def test_rms_norm_checker_refuses_nn_rms_norm():
    def module(x, gamma, eps):
        norm = nn.RMSNorm(x.size(-1), eps=eps)
        with torch.no_grad():
            norm.weight.copy_(gamma)
        return norm(x)

    assert failed_with(ex.check_rms_norm(module), "rms_norm", "not counted as yours")


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


# ---- exercise 2: a counterexample and the wrong line of FusedLayerNorm ---------------------------------------


def test_fused_layer_norm_is_right_on_the_course_matrix_and_wrong_on_the_solutions_counterexample():
    x = torch.tensor([[1.0, 2, 3], [8, 9, 10], [15, 16, 17]])
    torch.testing.assert_close(ex.FusedLayerNorm(3)(x), nn.LayerNorm(3)(x))
    c = sol.counterexample
    got = ex.FusedLayerNorm(c.size(-1))(c).double()
    gap = (got - F.layer_norm(c.double(), (c.size(-1),))).abs()
    assert not torch.isfinite(got).all() or gap.max() > 0.01  # here E[x²] − E[x]² even comes out negative: NaN


@pytest.mark.parametrize(
    "x",
    [
        torch.tensor([[1000.0, 1000.1, 1000.2, 1000.3]]),
        torch.randn(3, 8) * 0.01 + 100,
        torch.tensor([[1e4, 1e4 + 1, 1e4 + 2]]),
        torch.tensor([[1e12, 1e12 + 1, 1e12 + 2]], dtype=torch.float64),  # float64 needs a far larger offset
    ],
    ids=["solution-like", "random", "1e4", "float64"],
)
def test_counterexample_checker_accepts_every_input_that_exposes_the_bug(x):
    assert ex.check_counterexample(x).passed


@pytest.mark.parametrize(
    ("x", "words"),
    [
        (torch.tensor([[1.0, 2, 3], [8, 9, 10], [15, 16, 17]]), ["agrees", "large"]),
        (torch.tensor([[1.0, float("nan")]]), ["NaN"]),
        (torch.tensor([[1, 2, 3]]), ["float tensor"]),
        (torch.tensor([[1000.0], [1000.5]]), ["at least 2 features"]),
        ([[1000.0, 1000.1]], ["torch.Tensor"]),
        (..., ["not done yet"]),
    ],
    ids=["course matrix", "nan", "int", "one feature", "list", "blank"],
)
def test_counterexample_checker_names_what_is_wrong(x, words):
    assert failed_with(ex.check_counterexample(x), *words)


@pytest.mark.parametrize(
    "answer", [sol.bug_line, float(sol.bug_line), np.int64(sol.bug_line), torch.tensor(sol.bug_line), [sol.bug_line]]
)
def test_bug_line_checker_accepts_every_form_of_the_answer(answer):
    assert ex.check_bug_line(answer).passed


@pytest.mark.parametrize(
    ("answer", "words"),
    [
        (12, ["E[x²] exactly"]),
        (14, ["§2's formula"]),
        (11, ["mean E[x]"]),
        (5, ["sets the class up"]),
        (20, ["lines 1–14"]),
        ([12, 13], ["one number"]),
        ("line", ["number"]),
        (..., ["not done yet"]),
    ],
)
def test_bug_line_checker_names_what_is_wrong(answer, words):
    assert failed_with(ex.check_bug_line(answer), *words)


def test_the_right_line_is_the_one_whose_fix_repairs_fused_layer_norm():
    """Replacing line 13 (and only it) by the two-pass variance makes FusedLayerNorm right on the counterexample."""

    class Fixed(ex.FusedLayerNorm):
        def forward(self, x):
            mean = x.mean(dim=-1, keepdim=True)
            var = (x - mean).pow(2).mean(dim=-1, keepdim=True)  # line 13, fixed
            return self.weight * (x - mean) / torch.sqrt(var + self.eps) + self.bias

    c = sol.counterexample
    torch.testing.assert_close(
        Fixed(c.size(-1))(c).double(), F.layer_norm(c.double(), (c.size(-1),)), atol=1e-3, rtol=0
    )
    lines = [line.strip() for line in __import__("inspect").getsource(ex.FusedLayerNorm).splitlines()]
    assert lines[sol.bug_line - 1] == "var = mean_square - mean * mean"


# ---- exercise 3: LayerNorm parameters, by formula -----------------------------------------------------------------


def package_count(N, d_model, norm_first):
    """LayerNorm parameters of the package's model, counted module by module."""
    model = tc.make_model(11, 11, N=N, d_model=d_model, d_ff=2 * d_model, h=2, norm_first=norm_first)
    return sum(p.numel() for m in model.modules() if isinstance(m, tc.LayerNorm) for p in m.parameters())


@pytest.mark.parametrize(("N", "d_model", "norm_first"), [(2, 8, False), (2, 8, True), (3, 16, True)])
def test_layer_norm_count_solution_equals_the_packages_model(N, d_model, norm_first):
    assert sol.layer_norm_parameter_count(N, d_model, norm_first) == package_count(N, d_model, norm_first)


@pytest.mark.parametrize("convert", [int, float, np.int64, torch.tensor], ids=["int", "float", "numpy", "tensor"])
def test_layer_norm_count_checker_accepts_every_number_type(convert):
    assert ex.check_layer_norm_parameter_count(lambda *a: convert(sol.layer_norm_parameter_count(*a))).passed


def test_layer_norm_count_checker_refuses_a_model_built_and_counted():
    assert failed_with(ex.check_layer_norm_parameter_count(package_count), "make_model", "formula")


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


# ---- questions -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "answers",
    [sol.QUIZ, {"q1": 512.0, "q2": "B"}, {"q1": np.float32(511.995), "q2": " (b) "}, {"q1": torch.tensor(512)}],
    ids=["solution", "float and capital", "eps-sized difference", "tensor"],
)
def test_quiz_accepts_every_form_of_the_right_answers(answers):
    assert ex.check_quiz(**answers).passed


@pytest.mark.parametrize(
    ("question", "answer", "words"),
    [
        ("q1", 511, ["unbiased"]),
        ("q1", 1, ["not a unit vector"]),
        ("q1", 512**0.5, ["length √512"]),
        ("q1", 256, ["what does that make"]),
        ("q2", "a", ["pre-LN"]),
        ("q2", "c", ["does not shrink"]),
        ("q2", "d", ["x + 0 = x"]),
        ("q2", ..., ["not done yet"]),
    ],
)
def test_quiz_names_each_wrong_answer(question, answer, words):
    assert failed_with(ex.check_quiz(**{question: answer}), "0 of 1")
    assert failed_with(check_question(question, ex.QUESTIONS[question], answer), *words)


# ---- no answer in reach ---------------------------------------------------------------------------------------


CHECKERS = {
    "check_layer_norm_module": ex.check_layer_norm_module,
    "check_residual_connection": ex.check_residual_connection,
    "check_rms_norm": ex.check_rms_norm,
    "check_counterexample": ex.check_counterexample,
    "check_bug_line": ex.check_bug_line,
    "check_layer_norm_parameter_count": ex.check_layer_norm_parameter_count,
    "check_quiz q1": lambda value: ex.check_quiz(q1=value),
    "check_quiz q2": lambda value: ex.check_quiz(q2=value),
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

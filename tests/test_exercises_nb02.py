"""Notebook 02's checkers: the build cell (my_transformer/attention.py) and the exercises pass every right form,
name each plausible mistake, refuse the package's and PyTorch's own attention, and leak no answer."""

import ast
import importlib.util
import inspect
import json
import math
import random
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from transformer_course.attention import scaled_dot_product_attention as package_attention
from transformer_course.exercises import nb02_attention as ex

from helpers import reference_in_language, solutions

sol = solutions("nb02_attention")  # notebooks/solutions/nb02_attention.py
ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "notebooks" / "solutions" / "my_transformer" / "attention.py"
NOTEBOOKS = [ROOT / "notebooks" / "02_attention.ipynb", ROOT / "notebooks" / "zh" / "02_attention.ipynb"]


def load_file(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


reference = load_file(REFERENCE, "_reference_my_transformer_attention").scaled_dot_product_attention


def failed_with(result, *words):
    """The check failed and its message names the mistake."""
    return not result.passed and all(w.lower() in result.message.lower() for w in words)


def build_cell(notebook: Path) -> str:
    for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]:
        first, _, body = "".join(cell["source"]).partition("\n")
        if cell["cell_type"] == "code" and first == "%%writefile my_transformer/attention.py":
            return body
    raise AssertionError(f"{notebook.name} has no %%writefile my_transformer/attention.py cell")


# ---- the build cell: my_transformer/attention.py --------------------------------------------------------


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=["en", "zh"])
def test_the_build_cell_is_a_scaffold_that_says_not_done_yet(notebook, tmp_path):
    (tmp_path / "attention.py").write_text(build_cell(notebook), encoding="utf-8")
    scaffold = load_file(tmp_path / "attention.py", f"_scaffold_{notebook.parent.name}")
    (tmp_path / "reference.py").write_text(reference_in_language(REFERENCE.read_text(encoding="utf-8"), notebook))
    in_language = load_file(tmp_path / "reference.py", f"_reference_{notebook.parent.name}")
    assert inspect.signature(scaffold.scaled_dot_product_attention) == inspect.signature(reference)
    assert scaffold.scaled_dot_product_attention.__doc__ == in_language.scaled_dot_product_attention.__doc__
    assert failed_with(ex.check_attention(scaffold.scaled_dot_product_attention), "not done yet")


def test_the_reference_file_passes_and_keeps_a_row_with_no_key_finite():
    assert ex.check_attention(reference).passed
    q = k = v = torch.randn(1, 2, 3, 4)
    output, weights = reference(q, k, v, torch.zeros(1, 1, 1, 3, dtype=torch.bool))  # every key masked
    assert not output.isnan().any() and torch.allclose(weights, torch.full_like(weights, 1 / 3))


def test_the_package_and_pytorch_and_a_wrapper_of_either_are_not_counted_as_the_learners():
    assert failed_with(ex.check_attention(package_attention), "transformer_course.attention", "not counted")

    def wraps_pytorch(query, key, value, mask=None, dropout=None):
        out = F.scaled_dot_product_attention(query, key, value, attn_mask=mask)
        return out, None

    assert failed_with(ex.check_attention(wraps_pytorch), "scaled_dot_product_attention", "not counted")


def test_a_correct_float64_implementation_passes():
    def in_float64(query, key, value, mask=None, dropout=None):
        return reference(query.double(), key.double(), value.double(), mask, dropout)

    assert ex.check_attention(in_float64).passed


def test_forms_that_are_right_pass_a_list_and_minus_1e9_and_no_dropout_argument():
    assert ex.check_attention(lambda q, k, v, mask=None, dropout=None: list(reference(q, k, v, mask, dropout)))

    def big_negative(query, key, value, mask=None, dropout=None):
        scores = torch.einsum("...qd,...kd->...qk", query, key) / math.sqrt(query.size(-1))
        if mask is not None:
            scores = scores.masked_fill(mask.logical_not(), -1e9)
        weights = torch.softmax(scores, dim=-1)
        if dropout is not None:
            weights = dropout(weights)
        return torch.matmul(weights, value), weights

    assert ex.check_attention(big_negative).passed


def attention_with(scale=None, dim=-1, mask_use="fill", dropout_on="weights", detach=False):
    """A learner's attention with one mistake: another scale, softmax axis, mask use or dropout place."""

    def attention(query, key, value, mask=None, dropout=None):
        d = math.sqrt(query.size(-1)) if scale is None else scale(query, value)
        scores = query @ key.transpose(-2, -1) / d
        if mask is not None:
            if mask_use == "fill":
                scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
            elif mask_use == "-inf":
                scores = scores.masked_fill(~mask, float("-inf"))
            elif mask_use == "inverted":
                scores = scores.masked_fill(mask, float("-inf"))
            elif mask_use == "added":
                scores = scores + mask
        if dropout is not None and dropout_on == "scores":
            scores = dropout(scores)
        weights = scores.softmax(dim=dim)
        if dropout is not None and dropout_on == "weights":
            weights = dropout(weights)
        output = weights @ value
        if dropout is not None and dropout_on == "output":
            output = dropout(output)
        if detach:
            output = output.detach()
        return output, weights

    return attention


@pytest.mark.parametrize(
    ("mistake", "words"),
    [
        (attention_with(scale=lambda q, v: 1.0), ["not scaled"]),
        (attention_with(scale=lambda q, v: q.size(-1)), ["divided by d_k"]),
        (attention_with(scale=lambda q, v: math.sqrt(v.size(-1))), ["divided by √d_v"]),
        (attention_with(scale=lambda q, v: math.sqrt(v.size(-2))), ["divided by √k_len", "√d_k"]),
        (attention_with(dim=-2), ["over the queries", "dim=-1"]),
        (attention_with(mask_use="inverted"), ["wrong way round"]),
        (attention_with(mask_use="ignored"), ["weight 0"]),
        (attention_with(mask_use="added"), ["weight 0", "do not add"]),
        (attention_with(mask_use="-inf"), ["NaN", "finfo"]),
        (attention_with(dropout_on="nowhere"), ["not used"]),
        (attention_with(dropout_on="output"), ["applied to the output"]),
        (attention_with(dropout_on="scores"), ["applied to the scores"]),
        (attention_with(detach=True), ["no gradient"]),
        (lambda q, k, v, mask=None, dropout=None: reference(q, k, v, mask, dropout)[0], ["pair"]),
    ],
    ids=["unscaled", "by-d_k", "by-d_v", "by-k_len", "softmax-axis", "inverted", "ignored", "added", "minus-inf", "no-dropout",
         "dropout-output", "dropout-scores", "detached", "not-a-pair"],
)  # fmt: skip
def test_the_attention_checker_names_each_mistake(mistake, words):
    assert failed_with(ex.check_attention(mistake), *words)


def test_an_attention_that_changes_its_inputs_in_place_is_told_not_to_modify_them():
    """It used to read "the scores are not scaled": the first call divided the checker's query, so the checker's
    own scores were already scaled. Each call now gets copies, and a changed copy is named."""

    def divides_in_place(query, key, value, mask=None, dropout=None):
        query.div_(math.sqrt(query.size(-1)))  # the learner's "saves memory"
        return reference(query, key, value, mask, dropout)

    for changes, name in ((divides_in_place, "query"), (lambda q, k, v, mask=None, dropout=None: reference(q, k, v.mul_(1.0).add_(0.5), mask, dropout), "value")):  # fmt: skip
        result = ex.check_attention(changes)
        assert failed_with(result, "do not modify the inputs", f"input {name}", "in-place method", "div_")
        assert "math.sqrt" not in str(result)  # the hint names the mistake, not the line that fixes it


def attention_dropping(drop):
    """The reference with ``drop(weights, dropout)`` in place of its dropout line."""

    def attention(query, key, value, mask=None, dropout=None):
        scores = query @ key.transpose(-2, -1) / math.sqrt(query.size(-1))
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        weights = drop(scores.softmax(dim=-1), dropout)
        return weights @ value, weights

    return attention


@pytest.mark.parametrize(
    "drop",
    [
        lambda w, dropout: F.dropout(w, p=0.1),  # always, at a rate of its own, in training mode
        lambda w, dropout: F.dropout(w, p=dropout.p) if dropout is not None else w,  # ignores the module's eval()
        lambda w, dropout: torch.dropout(w, 0.1, True),
        lambda w, dropout: w * torch.bernoulli(torch.full_like(w, 0.9)) / 0.9,  # a mask of its own
    ],
    ids=["F.dropout-p0.1", "F.dropout-always-training", "torch.dropout", "own-mask"],
)
def test_a_dropout_the_caller_did_not_ask_for_gets_a_dropout_hint_not_a_softmax_one(drop):
    """A hard-coded F.dropout(weights, p=0.1) used to be told that the rows should sum to 1 (softmax over dim=-1)."""
    result = ex.check_attention(attention_dropping(drop))
    assert failed_with(result, "dropout is the `dropout` argument's job", "only when it is given", "rate and mode")
    assert "softmax" not in result.message


def test_a_right_dropout_in_any_form_passes():
    forms = [
        lambda w, dropout: dropout(w) if dropout is not None else w,
        lambda w, dropout: F.dropout(w, dropout.p, dropout.training) if dropout is not None else w,
    ]
    for form in forms:
        assert ex.check_attention(attention_dropping(form)).passed


def float32_inside(cast_back):
    def attention(query, key, value, mask=None, dropout=None):
        out, weights = reference(query.float(), key.float(), value.float(), mask, dropout)
        return (out.to(query.dtype), weights.to(query.dtype)) if cast_back else (out, weights)

    return attention


def test_float32_inside_a_float64_call_is_named_as_lost_precision_not_as_two_equal_numbers():
    """Cast back to float64 it used to read "got 0.9938, expected 0.9938"."""
    result = ex.check_attention(float32_inside(cast_back=True))
    assert failed_with(result, "for float64 inputs", "only to float32 precision", "torch.float64", ".float()")
    assert not failed_with(result, "right shape but wrong values")
    result = ex.check_attention(float32_inside(cast_back=False))
    assert failed_with(result, "with float64 inputs the output is torch.float32, expected torch.float64", ".float()")


def test_values_that_differ_beyond_the_fourth_digit_are_printed_with_the_digits_that_differ():
    from transformer_course.exercises import expect_tensor

    want = torch.tensor([1.0, 0.5608])
    got = want + torch.tensor([0.0, 3e-6])
    with pytest.raises(ex.Hint) as hint:
        expect_tensor(got, want, "x", atol=0, rtol=1e-6)
    assert "at index [1] got 0.560803, expected 0.5608" in str(hint.value)  # not "got 0.5608, expected 0.5608"
    with pytest.raises(ex.Hint) as hint:
        expect_tensor(torch.tensor([0.5, 2.25]), torch.tensor([0.5, 2.0]), "x")
    assert "got 2.25, expected 2" in str(hint.value)  # 4 significant digits at most where they suffice
    with pytest.raises(ex.Hint) as hint:  # whole numbers too: no decimals they do not have
        expect_tensor(torch.tensor([3, 7]), torch.tensor([3, 5]), "beam")
    assert "at index [1] got 7, expected 5" in str(hint.value)


def test_the_checker_leaves_the_global_random_state_as_it_found_it():
    torch.manual_seed(123)
    random.seed(5)
    before, before_py = torch.random.get_rng_state(), random.getstate()
    ex.check_attention(reference)
    ex.check_attention(attention_with(dropout_on="output"))
    assert torch.equal(torch.random.get_rng_state(), before) and random.getstate() == before_py


# ---- exercise 1: additive attention --------------------------------------------------------------------


def additive_with(activation=torch.tanh, scale=1.0, dim=-1, mask_use="fill", dtype=None):
    def additive_attention(query, key, value, W_q, W_k, w_v, mask=None):
        if dtype is not None:
            query, key, value, W_q, W_k, w_v = (x.to(dtype) for x in (query, key, value, W_q, W_k, w_v))
        features = (query @ W_q).unsqueeze(2) + (key @ W_k).unsqueeze(1)  # (B, q, k, h)
        scores = activation(features) @ w_v / scale
        if mask is not None and mask_use == "fill":
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        elif mask is not None and mask_use == "inverted":
            scores = scores.masked_fill(mask, float("-inf"))
        weights = scores.softmax(dim)
        return weights @ value, weights

    return additive_attention


def test_additive_checker_passes_the_solution_and_other_right_forms():
    assert ex.check_additive_attention(sol.additive_attention).passed
    assert ex.check_additive_attention(additive_with()).passed  # finfo.min instead of -inf
    assert ex.check_additive_attention(lambda *args, **kw: list(sol.additive_attention(*args, **kw))).passed


def test_additive_checker_passes_a_version_that_computes_in_float64():
    """It used to fail with "your code raised RuntimeError … (line 244)", a line of the checker."""
    assert ex.check_additive_attention(additive_with(dtype=torch.float64)).passed


def test_additive_checker_catches_a_missing_tanh():
    assert failed_with(ex.check_additive_attention(additive_with(activation=lambda t: t)), "tanh is missing")


def test_additive_checker_catches_relu_instead_of_tanh():
    assert failed_with(ex.check_additive_attention(additive_with(activation=torch.relu)), "not ReLU")


@pytest.mark.parametrize("size", [7, 5, 6])  # d_hidden, key size, query size in the checker
def test_additive_checker_catches_a_dot_product_style_scaling(size):
    result = ex.check_additive_attention(additive_with(scale=math.sqrt(size)))
    assert failed_with(result, "not scaled", "1/√d_k")


def test_additive_checker_catches_softmax_over_the_queries():
    assert failed_with(ex.check_additive_attention(additive_with(dim=-2)), "dim=-1")


def test_additive_checker_catches_an_inverted_and_an_ignored_mask():
    assert failed_with(ex.check_additive_attention(additive_with(mask_use="inverted")), "wrong way round")
    assert failed_with(ex.check_additive_attention(additive_with(mask_use="ignored")), "weight 0")


def test_additive_checker_says_not_done_for_the_stub():
    def stub(query, key, value, W_q, W_k, w_v, mask=None):
        raise NotImplementedError

    assert failed_with(ex.check_additive_attention(stub), "not done yet")


# ---- exercise 2: find the bugs, and show each one with an input --------------------------------------------


def test_buggy_attention_really_has_three_bugs_each_shown_by_one_reference_case():
    assert not ex.check_attention(ex.buggy_attention).passed
    for case in sol.cases:  # each case: the buggy function and the formula disagree
        got = ex.buggy_attention(*case)[1]
        want = package_attention(*case)[1]
        assert not torch.isfinite(got).all() or not torch.allclose(got, want, atol=1e-4)
    for i in range(3):  # no case can be left out: each shows a bug the other two do not
        assert failed_with(ex.check_exposing_inputs(sol.cases[:i] + sol.cases[i + 1 :]), "2 of the 3")


@pytest.mark.parametrize("answer", [[2, 5, 6], (6, 2, 5), {2, 5, 6}, [np.int64(2), torch.tensor(5), 6.0]], ids=str)
def test_bug_lines_checker_accepts_every_form_of_the_answer(answer):
    assert ex.check_bug_lines(answer).passed


@pytest.mark.parametrize(
    ("answer", "words"),
    [
        ([5, 6], ["which size is d_k"]),
        ([2, 6], ["no key at all"]),
        ([2, 5], ["largest score of what"]),
        ([2, 3, 5, 6], ["line 3 is right"]),
        ([2, 5, 6, 7], ["line 7 is right"]),
        ([2, 5, 9], ["lines 1–8"]),
        ("2, 5, 6", ["list"]),
    ],
)
def test_bug_lines_checker_names_what_is_wrong(answer, words):
    assert failed_with(ex.check_bug_lines(answer), *words)


def test_exposing_inputs_checker_passes_the_reference_cases_and_says_not_done_for_the_blank():
    assert ex.check_exposing_inputs(sol.cases).passed
    assert failed_with(ex.check_exposing_inputs(...), "not done yet")


@pytest.mark.parametrize(
    ("cases", "words"),
    [
        ([(torch.randn(1, 2, 4),) * 3], ["agrees with the formula", "no bug"]),  # square, d_v = d_k, no mask
        ([(torch.randn(1, 2, 4), torch.randn(1, 3, 5), torch.randn(1, 3, 2))], ["not an attention input"]),
        ([(torch.randn(1, 2, 4), torch.randn(1, 3, 4), torch.randn(1, 3, 4), torch.ones(1, 2, 3))], ["boolean"]),
        ([(torch.full((1, 2, 4), float("inf")), torch.randn(1, 3, 4), torch.randn(1, 3, 4))], ["inf or NaN"]),
        (  # q·k = 5·10⁷ + 4 against 5·10⁷: float32 rounds the first to 5·10⁷ + 8, and the weights move
            [(torch.tensor([[[1.5, 1.0]]]), torch.tensor([[[1e8 + 8, -1e8 - 8], [1e8, -1e8]]]), torch.randn(1, 2, 2))],
            ["loses precision"],
        ),
        ([(torch.randn(1, 2, 4), torch.randn(1, 3, 4), torch.randn(1, 3, 2))], ["1 of the 3"]),
    ],
    ids=["shows-nothing", "shapes", "float-mask", "inf-input", "too-extreme", "one-bug"],
)
def test_exposing_inputs_checker_names_each_mistake(cases, words):
    assert failed_with(ex.check_exposing_inputs(cases), *words)


# ---- exercise 3: how long a sentence fits ----------------------------------------------------------------


@pytest.mark.parametrize("convert", [int, float, np.int64, torch.tensor], ids=["int", "float", "numpy", "tensor"])
def test_longest_sentence_checker_accepts_every_number_type(convert):
    assert ex.check_longest_sentence(lambda *args, **kw: convert(sol.longest_sentence(*args, **kw))).passed


def test_the_reference_is_the_longest_length_that_fits_by_brute_force():
    """Independent of the formula: count n up until the (batch, heads, n, n) weights no longer fit."""
    for memory, batch, heads, size in [(640_000, 2, 8, 4), (639_999, 2, 8, 4), (10**6, 3, 1, 2), (12_345, 1, 2, 4)]:
        n = 0
        while batch * heads * (n + 1) * (n + 1) * size <= memory:
            n += 1
        assert sol.longest_sentence(memory, batch, heads, bytes_per_number=size) == n


@pytest.mark.parametrize(
    ("wrong", "words"),
    [
        (lambda m, b, h, bytes_per_number=4: m // (b * h * bytes_per_number), ["grow with n²"]),
        (lambda m, b, h, bytes_per_number=4: math.isqrt(m // (b * bytes_per_number)), ["forgets the heads"]),
        (lambda m, b, h, bytes_per_number=4: math.isqrt(m // (h * bytes_per_number)), ["forgets the batch"]),
        (lambda m, b, h, bytes_per_number=4: math.isqrt(m * 8 // (b * h * bytes_per_number)), ["bits and bytes"]),
        (lambda m, b, h, bytes_per_number=4: math.isqrt(m // (b * h)), ["not bytes"]),
        (lambda m, b, h, bytes_per_number=4: math.ceil(math.sqrt(m / (b * h * bytes_per_number))), ["does not fit"]),
        (lambda m, b, h, bytes_per_number=4: math.ceil(math.sqrt(m / (b * h * bytes_per_number))) - 1, ["exactly"]),
        (lambda m, b, h, bytes_per_number=4: math.sqrt(m / (b * h * bytes_per_number)), ["whole number"]),
        (lambda m, b, h, bytes_per_number=4: 7, ["not the longest"]),
    ],
    ids=["linear", "heads", "batch", "bits", "numbers", "rounds-up", "exclusive", "not-whole", "other"],
)
def test_longest_sentence_checker_names_each_mistake(wrong, words):
    assert failed_with(ex.check_longest_sentence(wrong), *words)


# ---- questions: numbers to work out -------------------------------------------------------------------------

QUESTIONS = [
    (ex.check_question_scaling, sol.question_scaling, [(64, "unscaled"), (16, "variance"), (2, "2 · 2")]),
    (ex.check_question_mask_sum, sol.question_mask_sum, [(0, "never −∞"), (0.731, "real keys"), (0.5, "adds 1")]),
    (ex.check_question_saturation, sol.question_saturation, [(1.0, "unscaled"), (0.731, "two apart"), (0.5, "more")]),
]


@pytest.mark.parametrize(("checker", "right", "mistakes"), QUESTIONS)
def test_question_checkers_accept_the_number_in_any_form(checker, right, mistakes):
    for form in (right, np.float64(right), torch.tensor(right), round(right, 3)):
        assert checker(form).passed


@pytest.mark.parametrize(("checker", "right", "mistakes"), QUESTIONS)
def test_question_checkers_name_the_plausible_mistakes(checker, right, mistakes):
    for value, words in mistakes:
        assert failed_with(checker(value), words)
    assert failed_with(checker("b"), "number")


# ---- no answer in reach: every attribute of the module fails every checker --------------------------------

CHECKERS = [
    ex.check_attention,
    ex.check_additive_attention,
    ex.check_bug_lines,
    ex.check_exposing_inputs,
    ex.check_longest_sentence,
    ex.check_question_scaling,
    ex.check_question_mask_sum,
    ex.check_question_saturation,
]


@pytest.mark.parametrize("checker", CHECKERS, ids=lambda c: c.__name__)
def test_no_attribute_of_the_checker_module_passes_a_checker(checker, capsys):
    for name in dir(ex):
        if name.startswith("__"):
            continue
        assert not checker(getattr(ex, name)).passed, f"ex.{name} passes {checker.__name__}"


def test_the_module_stores_no_bug_line_or_answer_in_plain_sight():
    assert not hasattr(ex, "BUG_LINES")
    for question in (ex.SCALING, ex.MASK_SUM, ex.SATURATION):
        assert not hasattr(question, "value") and not hasattr(question, "correct")


def solved(scaffold: str, reference_text: str) -> str:
    """The scaffold with each stub's body (after its docstring) replaced by the reference's, as ast.dump."""
    tree, ref = ast.parse(scaffold), ast.parse(reference_text)
    bodies = {n.name: n.body for n in ast.walk(ref) if isinstance(n, ast.FunctionDef)}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and isinstance(node.body[-1], ast.Raise):
            assert len(node.body) == 2, f"{node.name}: a stub holds its docstring and the raise, nothing else"
            node.body = node.body[:1] + bodies[node.name][1:]
    return ast.dump(tree)


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=["en", "zh"])
def test_solving_the_build_cell_gives_the_reference_file(notebook):
    text = reference_in_language(REFERENCE.read_text(encoding="utf-8"), notebook)
    assert solved(build_cell(notebook), text) == ast.dump(ast.parse(text))

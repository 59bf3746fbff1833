"""Notebook 02's checkers pass every allowed form of a right answer and name each plausible mistake."""

import difflib
import importlib.util
import inspect
import math
from pathlib import Path

import nbformat
import numpy as np
import pytest
import torch

from transformer_course.attention import scaled_dot_product_attention
from transformer_course.exercises import nb02_attention as ex

from helpers import solutions

sol = solutions("nb02_attention")  # notebooks/solutions/nb02_attention.py

NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "02_attention.ipynb"


def notebook_attention_module(tmp_path):
    """my_transformer/attention.py as notebook 02's %%writefile cell writes it, loaded from tmp_path."""
    for cell in nbformat.read(NOTEBOOK, as_version=4).cells:
        first, _, body = cell.source.partition("\n")
        if cell.cell_type == "code" and first == "%%writefile my_transformer/attention.py":
            (tmp_path / "attention.py").write_text(body)
    spec = importlib.util.spec_from_file_location("notebook_02_attention", tmp_path / "attention.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def failed_with(result, *words):
    """The check failed and its message names the mistake."""
    return not result.passed and all(w.lower() in result.message.lower() for w in words)


# ---- the learner's scaled_dot_product_attention (my_transformer/attention.py) -------------------------


def attention_with(scale=None, dim=-1, mask_use="fill", dropout_on="weights"):
    """A learner's attention with one mistake: another scale, softmax axis, mask use or dropout place."""

    def attention(query, key, value, mask=None, dropout=None):
        d = math.sqrt(query.size(-1)) if scale is None else scale(query.size(-1))
        scores = query @ key.transpose(-2, -1) / d
        if mask is not None:
            if mask_use == "fill":
                scores = scores.masked_fill(~mask, float("-inf"))
            elif mask_use == "inverted":
                scores = scores.masked_fill(mask, float("-inf"))
            elif mask_use == "added":
                scores = scores + mask
        weights = scores.softmax(dim=dim)
        if dropout is not None and dropout_on == "weights":
            weights = dropout(weights)
        output = weights @ value
        if dropout is not None and dropout_on == "output":
            output = dropout(output)
        return output, weights

    return attention


def test_attention_checker_passes_the_solution_and_the_package():
    assert ex.check_attention(sol.attention).passed
    assert ex.check_attention(scaled_dot_product_attention).passed


def test_attention_checker_passes_the_notebooks_file_which_keeps_fully_masked_rows_finite(tmp_path):
    attention = notebook_attention_module(tmp_path).scaled_dot_product_attention
    assert ex.check_attention(attention).passed
    q = k = v = torch.randn(1, 2, 3, 4)
    output, weights = attention(q, k, v, torch.zeros(1, 1, 1, 3, dtype=torch.bool))  # every key masked
    assert not output.isnan().any() and torch.allclose(weights, torch.full_like(weights, 1 / 3))


def test_attention_checker_accepts_a_list_and_a_function_without_dropout():
    assert ex.check_attention(lambda q, k, v, mask=None, dropout=None: list(sol.attention(q, k, v, mask, dropout)))
    assert ex.check_attention(lambda q, k, v, mask=None: sol.attention(q, k, v, mask)).passed


def test_attention_checker_catches_missing_scaling():
    assert failed_with(ex.check_attention(attention_with(scale=lambda d_k: 1.0)), "not scaled")


def test_attention_checker_catches_division_by_d_k_instead_of_its_root():
    assert failed_with(ex.check_attention(attention_with(scale=lambda d_k: d_k)), "divided by d_k")


def test_attention_checker_catches_softmax_over_the_queries():
    assert failed_with(ex.check_attention(attention_with(dim=-2)), "dim=-1")


def test_attention_checker_catches_an_inverted_mask():
    assert failed_with(ex.check_attention(attention_with(mask_use="inverted")), "wrong way round")


def test_attention_checker_catches_an_ignored_mask():
    assert failed_with(ex.check_attention(attention_with(mask_use="ignored")), "weight 0")


def test_attention_checker_catches_a_mask_added_to_the_scores():
    assert failed_with(ex.check_attention(attention_with(mask_use="added")), "weight 0", "do not add")


def test_attention_checker_catches_an_unused_dropout():
    assert failed_with(ex.check_attention(attention_with(dropout_on="nowhere")), "not used")


def test_attention_checker_catches_dropout_on_the_output():
    assert failed_with(ex.check_attention(attention_with(dropout_on="output")), "applied to the output")


def test_attention_checker_asks_for_a_pair():
    assert failed_with(ex.check_attention(lambda q, k, v, mask=None: sol.attention(q, k, v, mask)[0]), "pair")


# ---- exercise 1: additive attention --------------------------------------------------------------------


def additive_with(activation=torch.tanh, scale=1.0, dim=-1, mask_use="fill"):
    def additive_attention(query, key, value, W_q, W_k, w_v, mask=None):
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


# ---- exercise 2: find the bugs --------------------------------------------------------------------------


def test_the_bugs_are_real_and_fixing_exactly_those_lines_repairs_the_function():
    assert not ex.check_attention(ex.buggy_attention).passed
    assert ex.check_attention(sol.fixed_attention).passed
    buggy = inspect.getsource(ex.buggy_attention).splitlines()
    fixed = inspect.getsource(sol.fixed_attention).replace("fixed_attention", "buggy_attention").splitlines()
    changed = set()
    for tag, i1, i2, _, _ in difflib.SequenceMatcher(None, buggy, fixed).get_opcodes():
        if tag != "equal":
            changed.update(range(i1 + 1, i2 + 1))
    assert changed == ex.BUG_LINES == set(sol.bug_lines)


@pytest.mark.parametrize("answer", [[2, 6, 7], (7, 2, 6), {2, 6, 7}, [np.int64(2), torch.tensor(6), 7.0]], ids=str)
def test_bug_lines_checker_accepts_every_form_of_the_answer(answer):
    assert ex.check_bug_lines(answer).passed


@pytest.mark.parametrize(
    ("answer", "words"),
    [
        ([6, 7], ["which size is d_k"]),
        ([2, 7], ["True means 'may attend'"]),
        ([2, 6], ["which axis"]),
        ([2, 4, 6, 7], ["line 4 is right"]),
        ([2, 3, 6, 7], ["line 3 is right"]),
        ([2, 6, 7, 8], ["line 8 is right"]),
        ([2, 6, 9], ["lines 1–8"]),
        ("2, 6, 7", ["list"]),
    ],
)
def test_bug_lines_checker_names_what_is_wrong(answer, words):
    assert failed_with(ex.check_bug_lines(answer), *words)


# ---- exercise 3: memory of the weights -----------------------------------------------------------------


@pytest.mark.parametrize("convert", [int, float, np.int64, torch.tensor], ids=["int", "float", "numpy", "tensor"])
def test_weights_bytes_checker_accepts_every_number_type(convert):
    assert ex.check_weights_bytes(lambda *args, **kw: convert(sol.weights_bytes(*args, **kw))).passed


@pytest.mark.parametrize(
    ("wrong", "words"),
    [
        (lambda b, h, q, k, bytes_per_number=4: b * h * q * k, ["counts numbers"]),
        (lambda b, h, q, k, bytes_per_number=4: b * h * q * k * bytes_per_number * 8, ["bits"]),
        (lambda b, h, q, k, bytes_per_number=4: b * q * k * bytes_per_number, ["forgets the heads"]),
        (lambda b, h, q, k, bytes_per_number=4: h * q * k * bytes_per_number, ["forgets the batch"]),
        (lambda b, h, q, k, bytes_per_number=4: b * h * (q + k) * bytes_per_number, ["q_len × k_len"]),
        (lambda b, h, q, k, bytes_per_number=4: b * h * q * q * bytes_per_number, ["is not"]),
    ],
)
def test_weights_bytes_checker_names_each_mistake(wrong, words):
    assert failed_with(ex.check_weights_bytes(wrong), *words)


# ---- conceptual questions --------------------------------------------------------------------------------

QUESTIONS = [
    (ex.check_question_scaling, sol.question_scaling, {"a": "vanish", "b": "sharper", "d": "spread"}),
    (ex.check_question_mask_sum, sol.question_mask_sum, {"a": "never −∞", "c": "NaN needs", "d": "runs fine"}),
    (ex.check_question_additive, sol.question_additive, {"a": "opposite", "b": "in practice", "c": "masked"}),
]


@pytest.mark.parametrize(("checker", "right", "hints"), QUESTIONS)
def test_question_checkers_accept_the_right_letter_in_any_form(checker, right, hints):
    for form in (right, right.upper(), f" ({right}) ", f"{right})"):
        assert checker(form).passed


@pytest.mark.parametrize(("checker", "right", "hints"), QUESTIONS)
def test_question_checkers_explain_every_wrong_letter(checker, right, hints):
    assert set(hints) | {right} == set("abcd")
    for letter, words in hints.items():
        assert failed_with(checker(letter), words)
    assert failed_with(checker("e"), "one of the letters")
    assert failed_with(checker(2), "as a string")

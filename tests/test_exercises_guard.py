"""transformer_course.exercises.guard: shortcuts into the package or PyTorch are caught; answers by digest."""

from __future__ import annotations

import contextlib
import math
import random

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import transformer_course as tc
from transformer_course.exercises import Hint, run_check
from transformer_course.exercises.guard import (
    TORCH_ATTENTION,
    TORCH_NORM,
    no_shortcuts,
    watch_shortcuts,
)


def own_attention(q, k, v):
    weights = (q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))).softmax(-1)
    return weights @ v, weights


def package_attention(q, k, v):
    return tc.scaled_dot_product_attention(q, k, v)


def torch_attention(q, k, v):
    return F.scaled_dot_product_attention(q, k, v), None


QKV = [torch.randn(1, 3, 4) for _ in range(3)]


def test_own_code_is_not_a_shortcut():
    with watch_shortcuts(TORCH_ATTENTION) as found:
        own_attention(*QKV)
    assert not found


def test_a_call_into_the_package_is_named():
    with watch_shortcuts(TORCH_ATTENTION) as found:
        package_attention(*QKV)
    assert found.calls[0] == "transformer_course.attention.scaled_dot_product_attention"


def test_a_subclass_of_the_package_class_is_caught():
    class Mine(tc.MultiHeadAttention):
        pass

    mha = Mine(8, 2, dropout=0.0)
    x = torch.randn(1, 3, 8)
    with watch_shortcuts() as found:
        mha(x)
    assert any(c.startswith("transformer_course.attention.MultiHeadAttention") for c in found.calls)


def test_pytorch_fused_attention_is_caught():
    with watch_shortcuts(TORCH_ATTENTION) as found:
        torch_attention(*QKV)
    assert (
        found.calls == ["torch._C._nn.scaled_dot_product_attention"] or "scaled_dot_product_attention" in found.calls[0]
    )


@pytest.mark.parametrize(
    "norm", [lambda x: nn.LayerNorm(4)(x), lambda x: F.layer_norm(x, (4,)), lambda x: F.rms_norm(x, (4,))]
)
def test_pytorch_norms_are_caught(norm):
    with watch_shortcuts(TORCH_NORM) as found:
        norm(torch.randn(2, 4))
    assert found


def test_allowed_modules_are_not_shortcuts():
    with watch_shortcuts(allow=("transformer_course.masks",)) as found:
        tc.subsequent_mask(3)
    assert not found


def test_no_shortcuts_raises_a_hint_that_names_the_call():
    with pytest.raises(Hint, match="transformer_course.attention.scaled_dot_product_attention"):
        with no_shortcuts("attention", TORCH_ATTENTION):
            package_attention(*QKV)


def test_the_profile_hook_is_restored():
    def mine(frame, event, arg):
        return None

    import sys

    sys.setprofile(mine)
    try:
        with watch_shortcuts():
            pass
        assert sys.getprofile() is mine
    finally:
        sys.setprofile(None)


def test_an_answers_canonical_form_is_the_same_for_every_way_of_writing_it():
    from transformer_course.exercises.answer_key import canonical

    assert {canonical(form) for form in ["c", "C", "(c)", " c ", "c)"]} == {"letter:c"}
    assert {canonical(form) for form in [[5, 3], (3, 5), {3, 5}, [3, 3, 5]]} == {"lines:3,5"}
    assert canonical([3]) != canonical(3)  # the set of wrong lines and one line are different questions


@pytest.mark.parametrize("value", [3.04e18, 1.0, 37.5, -2.5, 125.0])
def test_a_number_is_accepted_within_rel_tol_and_refused_beyond_twice(value):
    from course_tools.quiz import number_forms
    from transformer_course.exercises.answer_key import number_form

    accepted = set(number_forms(value, 1e-3))
    for factor in (1.0, 1 + 9e-4, 1 - 9e-4):
        assert number_form(value * factor, 1e-3) in accepted
    for factor in (1.0025, 0.9975, 2.0, 0.5, -1.0):
        assert number_form(value * factor, 1e-3) not in accepted
    assert number_forms(value, 0) == [number_form(value, 0)] != [number_form(value * (1 + 1e-15), 0)]  # 0: exactly


def test_run_check_leaves_the_global_random_state_alone():
    torch.manual_seed(123)
    random.seed(5)
    expected_torch, expected_py = torch.rand(3), random.random()
    torch.manual_seed(123)
    random.seed(5)
    run_check("draws", lambda: (torch.manual_seed(0), torch.randn(10), random.seed(1)))
    assert torch.equal(torch.rand(3), expected_torch)
    assert random.random() == expected_py


def test_an_error_inside_the_package_is_not_blamed_on_a_line_of_the_learner(capsys):
    def learner():
        return torch.ones(2, dtype=torch.float64)

    def check():
        from transformer_course.exercises import expect_tensor

        expect_tensor(learner(), torch.ones(2), "x")  # float64 vs float32: compared at float64, passes

    assert run_check("dtype", check)

    def failing_check():
        tc.make_model(5, 5, N=1, d_model=7, h=2)  # the package raises: the learner's line is not in it

    result = run_check("package", failing_check)
    assert not result
    assert "could not be checked" in result.message or "line" in result.message


def test_an_earlier_files_fallback_may_run_the_package_but_this_notebooks_own_piece_may_not():
    """Notebook 03's multi-head attention calls notebook 02's attention.py: in a class (nbgrader runs each
    assignment alone) that is the package's, as a marked fallback; it is not the learner's shortcut there. The
    package's own piece of the notebook being checked is."""
    from transformer_course import attention
    from transformer_course.exercises.guard import earlier_fallbacks

    q = torch.randn(1, 2, 3, 4)
    allow = earlier_fallbacks("03")
    assert allow == ("transformer_course.attention.scaled_dot_product_attention",)
    with watch_shortcuts(TORCH_ATTENTION, allow=allow) as found:
        attention.scaled_dot_product_attention(q, q, q)  # notebook 02's piece: the fallback of attention.py
    assert not found, found.calls
    with watch_shortcuts(TORCH_ATTENTION) as found:
        attention.scaled_dot_product_attention(q, q, q)  # in notebook 02 itself: a shortcut
    assert found.calls == ["transformer_course.attention.scaled_dot_product_attention"]
    x = torch.randn(1, 3, 8)
    with watch_shortcuts(TORCH_ATTENTION, allow=allow) as found:
        attention.MultiHeadAttention(8, 2)(x, x, x)  # notebook 03's own piece: a shortcut there
    assert found and found.calls[0].startswith("transformer_course.attention.MultiHeadAttention")
    assert "transformer_course.attention.MultiHeadAttention" in earlier_fallbacks("06")
    assert not [name for name in earlier_fallbacks("06") if name.endswith(("EncoderLayer", ".Encoder", "clones"))]
    assert "transformer_course.model.Encoder" in earlier_fallbacks("07")
    assert not [name for name in earlier_fallbacks("07") if name.endswith(("DecoderLayer", "make_model"))]


# ---- the cheap holes: each shortcut is named ------------------------------------------------------------------


@pytest.mark.parametrize("op", ["_scaled_dot_product_attention_math", "_scaled_dot_product_flash_attention_for_cpu"])
def test_pytorchs_aten_attention_operators_are_named_as_pytorchs_attention(op):
    q = torch.randn(1, 2, 3, 4)

    def aten_attention(q, k, v):
        return getattr(torch.ops.aten, op)(q, k, v)[0], None

    with pytest.raises(Hint, match=op):
        with no_shortcuts("attention", TORCH_ATTENTION):
            aten_attention(q, q, q)


def test_the_checker_keeps_its_reference_when_the_package_attribute_is_replaced(monkeypatch, capsys):
    """A learner's function put in place of tc.attention.scaled_dot_product_attention does not become the
    reference: a wrong attention stays wrong."""
    from transformer_course import attention
    from transformer_course.exercises import nb02_attention as ex

    def wrong(query, key, value, mask=None, dropout=None):  # no scaling by √d_k
        scores = query @ key.transpose(-2, -1)
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        weights = scores.softmax(-1)
        if dropout is not None:
            weights = dropout(weights)
        return weights @ value, weights

    assert not ex.check_attention(wrong)
    monkeypatch.setattr(attention, "scaled_dot_product_attention", wrong)
    monkeypatch.setattr(tc, "scaled_dot_product_attention", wrong)
    assert not ex.check_attention(wrong)


def test_the_layer_checks_keep_the_package_model_they_imported(monkeypatch):
    from transformer_course import model
    from transformer_course.exercises.layer_checks import package_model

    reference = package_model().EncoderLayer
    monkeypatch.setattr(model, "EncoderLayer", lambda *args, **kwargs: None)
    assert package_model().EncoderLayer is reference


@pytest.mark.parametrize("name", ["no_shortcuts", "_PACKAGE_ATTENTION", "TORCH_ATTENTION", "_call"])
def test_a_checker_modules_guard_and_references_cannot_be_replaced(name):
    from transformer_course.exercises import nb02_attention as ex

    before = getattr(ex, name)
    with pytest.raises(AttributeError, match=f"nb02_attention.{name} is part of the checker"):
        setattr(ex, name, lambda *args, **kwargs: contextlib.nullcontext())
    with pytest.raises(AttributeError):
        delattr(ex, name)
    assert getattr(ex, name) is before


def test_the_guards_own_names_cannot_be_replaced():
    from transformer_course.exercises import guard

    for name in ("no_shortcuts", "watch_shortcuts", "TORCH_ATTENTION", "package_copy"):
        with pytest.raises(AttributeError, match="cannot be replaced"):
            setattr(guard, name, None)
    with pytest.raises(AttributeError):
        guard.__class__ = type(math)


def test_a_checker_module_takes_new_names_and_its_checks_may_be_replaced(monkeypatch):
    """Only what the checks use is fixed: a new name is the learner's, and a replaced check replaces one name."""
    from transformer_course.exercises import nb02_attention as ex

    monkeypatch.setattr(ex, "my_note", 1, raising=False)
    monkeypatch.setattr(ex, "check_longest_sentence", lambda longest_sentence: True)
    assert ex.my_note == 1 and ex.check_longest_sentence(None) is True


def test_exec_of_the_packages_source_is_named_as_the_packages_copy():
    import inspect

    from transformer_course import attention

    namespace = {}
    exec(inspect.getsource(attention.scaled_dot_product_attention), vars(attention).copy() | namespace, namespace)
    copied = namespace["scaled_dot_product_attention"]
    q = torch.randn(1, 2, 3, 4)
    with watch_shortcuts(TORCH_ATTENTION) as found:
        copied(q, q, q)
    assert found.calls == [
        "transformer_course.attention.scaled_dot_product_attention (a copy of its code, run with exec)"
    ]


def test_exec_of_the_packages_source_with_other_names_and_comments_is_still_the_copy():
    import inspect

    from transformer_course import attention

    source = inspect.getsource(attention.scaled_dot_product_attention)
    renamed = source.replace("scores", "my_scores").replace("weights", "my_weights")
    namespace = {}
    exec("# my own comment\n" + renamed, vars(attention).copy(), namespace)
    q = torch.randn(1, 2, 3, 4)
    with pytest.raises(Hint, match="a copy of its code"):
        with no_shortcuts("attention", TORCH_ATTENTION):
            namespace["scaled_dot_product_attention"](q, q, q)


def test_exec_of_the_learners_own_code_is_not_a_copy():
    namespace = {}
    exec(
        "def mine(q, k, v):\n    w = (q @ k.transpose(-2, -1) / q.size(-1) ** 0.5).softmax(-1)\n    return w @ v, w\n",
        namespace,
    )
    q = torch.randn(1, 2, 3, 4)
    with watch_shortcuts(TORCH_ATTENTION) as found:
        namespace["mine"](q, q, q)
    assert not found


def test_a_copy_of_an_allowed_piece_is_allowed():
    """Notebook 03 may run notebook 02's attention, the package's or a copy of it."""
    import inspect

    from transformer_course import attention
    from transformer_course.exercises.guard import earlier_fallbacks

    namespace = {}
    exec(inspect.getsource(attention.scaled_dot_product_attention), vars(attention).copy(), namespace)
    q = torch.randn(1, 2, 3, 4)
    with watch_shortcuts(TORCH_ATTENTION, allow=earlier_fallbacks("03")) as found:
        namespace["scaled_dot_product_attention"](q, q, q)
    assert not found

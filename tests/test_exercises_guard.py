"""transformer_course.exercises.guard: shortcuts into the package or PyTorch are caught; answers by digest."""

from __future__ import annotations

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
    answer_digest,
    matches_digest,
    no_shortcuts,
    number_digests,
    number_matches,
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


def test_answer_digest_accepts_every_form_of_a_letter_and_of_line_sets():
    key = "nbXX-q1"
    digest = answer_digest(key, "c")
    assert all(matches_digest(key, form, digest) for form in ["c", "C", "(c)", " c "])
    assert not matches_digest(key, "b", digest)
    lines = answer_digest("nbXX-bugs", [3, 5])
    assert all(matches_digest("nbXX-bugs", form, lines) for form in [[5, 3], (3, 5), {3, 5}, [3, 3, 5]])
    assert not matches_digest("nbXX-bugs", [3], lines)
    assert answer_digest("other-key", "c") != digest  # keyed: one digest does not answer another question


@pytest.mark.parametrize("value", [3.04e18, 1.0, 37.5, -2.5, 125.0])
def test_number_digests_accept_within_rel_tol_and_refuse_beyond_twice(value):
    digests = number_digests("k", value)
    for factor in (1.0, 1 + 9e-4, 1 - 9e-4):
        assert number_matches("k", value * factor, digests)
    for factor in (1.0025, 0.9975, 2.0, 0.5, -1.0):
        assert not number_matches("k", value * factor, digests)
    assert not number_matches("k", float("nan"), digests)


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

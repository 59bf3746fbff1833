"""Switching a head off (transformer_course.ablation) equals a model whose W^O columns for that head are zero."""

import copy

import pytest
import torch

from transformer_course import make_model
from transformer_course.ablation import KINDS, attention_module, head_importance, zero_head
from transformer_course.masks import padding_mask, subsequent_mask


@pytest.fixture
def model():
    torch.manual_seed(0)
    return make_model(20, 24, N=2, d_model=16, d_ff=32, h=4, dropout=0.0).eval()


def forward(model, src, tgt):
    src_mask = padding_mask(src, 0)
    with torch.no_grad():
        return model.decode(model.encode(src, src_mask), src_mask, tgt, subsequent_mask(tgt.size(1)))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("layer, head", [(0, 0), (1, 3), (0, 2)])
def test_a_zeroed_head_equals_a_model_whose_w_o_columns_for_it_are_zero(model, kind, layer, head):
    src, tgt = torch.randint(4, 20, (3, 7)), torch.randint(4, 24, (3, 5))
    brute = copy.deepcopy(model)
    d_k = attention_module(brute, kind, layer).d_k
    with torch.no_grad():
        attention_module(brute, kind, layer).out_proj.weight[:, head * d_k : (head + 1) * d_k] = 0
    with zero_head(model, kind, layer, head):
        ablated = forward(model, src, tgt)
    torch.testing.assert_close(ablated, forward(brute, src, tgt))
    assert not torch.allclose(ablated, forward(model, src, tgt)), "the head changed nothing"  # and the hook is gone


def test_the_hook_is_removed_even_when_the_block_raises(model):
    with pytest.raises(RuntimeError), zero_head(model, "cross", 0, 1):
        raise RuntimeError("inside")
    assert all(not attention_module(model, k, 0).out_proj._forward_pre_hooks for k in KINDS)


def test_a_bad_kind_layer_or_head_says_what_is_allowed(model):
    with pytest.raises(ValueError, match="kind must be one of"):
        attention_module(model, "self", 0)
    with pytest.raises(ValueError, match=r"layer must be in 0 … 1"):
        attention_module(model, "encoder", 2)
    with pytest.raises(ValueError, match=r"head must be in 0 … 3"):
        with zero_head(model, "encoder", 0, 4):
            pass


def test_head_importance_ranks_every_head_by_the_change_in_log_probability(model):
    rows = head_importance(model, [5, 6, 7, 8], [2, 9, 10, 3])
    assert len(rows) == 3 * 2 * 4 and len({r[:3] for r in rows}) == 24
    assert [r[3] for r in rows] == sorted(r[3] for r in rows)
    kind, layer, head, change = rows[0]
    from transformer_course.ablation import sequence_log_prob

    with zero_head(model, kind, layer, head):
        ablated = sequence_log_prob(model, [5, 6, 7, 8], [2, 9, 10, 3])
    assert change == pytest.approx(ablated - sequence_log_prob(model, [5, 6, 7, 8], [2, 9, 10, 3]))

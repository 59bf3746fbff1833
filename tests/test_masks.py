import pytest
import torch

from transformer_course.masks import check_mask, padding_mask, subsequent_mask, target_mask

PAD = 0


def test_padding_mask_is_true_on_real_tokens_shaped_for_keys():
    tokens = torch.tensor([[5, 6, 7, PAD], [8, PAD, PAD, PAD]])
    mask = padding_mask(tokens, PAD)
    assert mask.shape == (2, 1, 1, 4) and mask.dtype == torch.bool
    assert mask[:, 0, 0].tolist() == [[True, True, True, False], [True, False, False, False]]


def test_subsequent_mask_lets_position_i_see_positions_up_to_i():
    mask = subsequent_mask(4)
    assert mask.shape == (1, 1, 4, 4)
    brute = [[j <= i for j in range(4)] for i in range(4)]
    assert mask[0, 0].tolist() == brute


def test_target_mask_is_padding_and_causal():
    tgt = torch.tensor([[2, 5, 6, PAD, PAD], [2, 7, 8, 9, 3]])
    mask = target_mask(tgt, PAD)
    assert mask.shape == (2, 1, 5, 5)
    for b in range(2):
        for i in range(5):
            for j in range(5):
                assert mask[b, 0, i, j] == (j <= i and tgt[b, j] != PAD)


def test_masks_broadcast_to_batch_heads_queries_keys():
    src = torch.tensor([[5, 6, PAD], [7, PAD, PAD]])
    scores = torch.zeros(2, 8, 4, 3)  # (batch, heads, q, k)
    assert (scores + padding_mask(src, PAD)).shape == (2, 8, 4, 3)
    assert torch.broadcast_shapes(subsequent_mask(4).shape, (2, 8, 4, 4)) == (2, 8, 4, 4)


def test_check_mask_rejects_float_masks_with_a_hint():
    with pytest.raises(ValueError, match="boolean.*True = may attend"):
        check_mask(torch.ones(2, 1, 1, 3), 2, 4, 3)


def test_check_mask_rejects_three_dimensional_masks():
    with pytest.raises(ValueError, match="4 dimensions"):
        check_mask(torch.ones(2, 4, 3, dtype=torch.bool), 2, 4, 3)


def test_check_mask_rejects_wrong_key_length():
    with pytest.raises(ValueError, match="does not broadcast"):
        check_mask(torch.ones(2, 1, 1, 5, dtype=torch.bool), 2, 4, 3)


def test_padding_mask_needs_a_batch_dimension():
    with pytest.raises(ValueError, match="unsqueeze"):
        padding_mask(torch.tensor([1, 2, 3]), PAD)


def test_subsequent_mask_needs_a_positive_size():
    with pytest.raises(ValueError, match="positive"):
        subsequent_mask(0)

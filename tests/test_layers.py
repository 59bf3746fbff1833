import math

import pytest
import torch
from torch import nn
from torch.testing import assert_close

from transformer_course.layers import (
    Embeddings,
    LayerNorm,
    PositionalEncoding,
    PositionwiseFeedForward,
    ResidualConnection,
    sinusoidal_table,
)


@pytest.mark.parametrize("fast", [True, False])
def test_layernorm_equals_nn_layernorm(fast):
    ours, ref = LayerNorm(16, fast=fast), nn.LayerNorm(16)
    with torch.no_grad():
        for p in (ours.weight, ours.bias):
            p.normal_()
        ref.weight.copy_(ours.weight)
        ref.bias.copy_(ours.bias)
    x = torch.randn(4, 7, 16) * 5 + 3
    assert_close(ours(x), ref(x))


@pytest.mark.parametrize("fast", [True, False])
def test_layernorm_normalises_each_row_of_the_course_example(fast):
    x = torch.tensor([[1.0, 2, 3], [8, 9, 10], [15, 16, 17]])
    y = LayerNorm(3, fast=fast)(x)
    expected_row = torch.tensor([-1.0, 0.0, 1.0]) / math.sqrt(2 / 3 + 1e-5)
    assert_close(y, expected_row.expand(3, 3))


def test_feed_forward_equals_a_1x1_convolution_with_copied_weights():
    ffn = PositionwiseFeedForward(8, 32).eval()
    conv1 = nn.Conv1d(8, 32, kernel_size=1)
    conv2 = nn.Conv1d(32, 8, kernel_size=1)
    with torch.no_grad():
        conv1.weight.copy_(ffn.w_1.weight[:, :, None])
        conv1.bias.copy_(ffn.w_1.bias)
        conv2.weight.copy_(ffn.w_2.weight[:, :, None])
        conv2.bias.copy_(ffn.w_2.bias)
    x = torch.randn(2, 5, 8)
    expected = conv2(conv1(x.transpose(1, 2)).relu()).transpose(1, 2)
    assert_close(ffn(x), expected)


def test_sinusoidal_table_matches_the_formula_computed_independently():
    table = sinusoidal_table(50, 16)
    for pos in (0, 1, 7, 49):
        for i in range(8):
            angle = pos / 10000 ** (2 * i / 16)
            assert table[pos, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-5)
            assert table[pos, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-5)


def test_sinusoidal_shift_by_k_is_a_fixed_rotation():
    table = sinusoidal_table(60, 8).double()
    k = 5
    blocks = []
    for i in range(4):
        w = 1 / 10000 ** (2 * i / 8)
        c, s = math.cos(k * w), math.sin(k * w)
        blocks.append(torch.tensor([[c, -s], [s, c]], dtype=torch.float64))
    rotation = torch.block_diag(*blocks)  # the same matrix for every position
    assert_close(table[:-k] @ rotation, table[k:], atol=1e-5, rtol=0)


def test_positional_encoding_adds_rows_starting_at_an_offset():
    pe = PositionalEncoding(8, dropout=0.0, max_len=20)
    x = torch.zeros(1, 3, 8)
    assert_close(pe(x, start=4)[0], sinusoidal_table(20, 8)[4:7])


def test_learned_positions_are_parameters():
    pe = PositionalEncoding(8, dropout=0.0, max_len=20, kind="learned")
    assert any(p is pe.table for p in pe.parameters())
    assert pe(torch.zeros(2, 5, 8)).shape == (2, 5, 8)


def test_sequence_longer_than_positional_table_is_a_clear_error():
    pe = PositionalEncoding(8, dropout=0.0, max_len=10)
    with pytest.raises(ValueError, match="longer than the positional table.*max_len=10"):
        pe(torch.zeros(1, 11, 8))


def test_embeddings_are_scaled_by_sqrt_d_model():
    emb = Embeddings(10, 16)
    tokens = torch.tensor([[1, 2, 3]])
    assert_close(emb(tokens), emb.lut.weight[tokens] * 4.0)


def test_token_ids_out_of_range_are_a_clear_error():
    with pytest.raises(ValueError, match=r"must lie in \[0, 10\)"):
        Embeddings(10, 16)(torch.tensor([[1, 10]]))


def test_residual_connection_post_ln_and_pre_ln_formulas():
    x = torch.randn(2, 3, 8)
    sublayer = nn.Linear(8, 8)
    post = ResidualConnection(8, 0.0, norm_first=False)
    pre = ResidualConnection(8, 0.0, norm_first=True)
    ln = nn.LayerNorm(8)
    assert_close(post(x, sublayer), ln(x + sublayer(x)))
    assert_close(pre(x, sublayer), x + sublayer(ln(x)))


@pytest.mark.parametrize("dropout", [-0.1, 1.0, 1.5])
def test_dropout_outside_unit_interval_is_a_clear_error(dropout):
    with pytest.raises(ValueError, match=r"outside \[0, 1\)"):
        PositionwiseFeedForward(8, 16, dropout)


@pytest.mark.parametrize("size", [0, -4])
def test_non_positive_sizes_are_clear_errors(size):
    with pytest.raises(ValueError, match="d_ff must be a positive integer"):
        PositionwiseFeedForward(8, size)


def test_unknown_positional_kind_is_a_clear_error():
    with pytest.raises(ValueError, match="'sinusoidal' or 'learned'"):
        PositionalEncoding(8, 0.0, kind="rotary")

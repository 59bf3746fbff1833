"""Bucket padding (``collate(..., multiple=8)``): batches in a few shapes for torch.compile, the same numbers."""

import pytest
import torch

from transformer_course.config import get_preset
from transformer_course.data import collate
from transformer_course.data.batching import pad_sequences
from transformer_course.model import build_model
from transformer_course.train import LabelSmoothingLoss

PAIRS = [([5, 6, 7], [8, 9]), ([5] * 9, [7] * 12), ([4] * 17, [6] * 3)]


def test_lengths_are_padded_up_to_the_multiple_and_the_real_tokens_stay_the_same():
    plain, bucketed = collate(PAIRS), collate(PAIRS, multiple=8)
    assert plain.src.shape == (3, 17) and bucketed.src.shape == (3, 24)
    assert plain.tgt_in.shape == (3, 13) and bucketed.tgt_in.shape == bucketed.tgt_out.shape == (3, 16)
    assert bucketed.n_tokens == plain.n_tokens and bucketed.n_src_tokens == plain.n_src_tokens
    torch.testing.assert_close(bucketed.src[:, :17], plain.src)
    torch.testing.assert_close(bucketed.tgt_out[:, :13], plain.tgt_out)
    assert bucketed.tgt_mask.shape == (3, 1, 16, 16) and bucketed.src_mask.shape == (3, 1, 1, 24)


def test_a_stream_of_lengths_falls_into_a_handful_of_shapes():
    lengths = range(1, 41)
    shapes = {pad_sequences([[1] * n], multiple=8).shape[1] for n in lengths}
    assert shapes == {8, 16, 24, 32, 40}


def test_a_bucket_padded_batch_gives_the_same_loss_as_the_plain_one():
    torch.manual_seed(0)
    model = build_model(get_preset("toy-copy").replace(max_len=64), 20, 20).eval()
    loss_fn = LabelSmoothingLoss(0.1, 0, reduction="sum")
    losses = []
    for batch in (collate(PAIRS), collate(PAIRS, multiple=8)):
        with torch.no_grad():
            losses.append(
                loss_fn(model.generator(model(batch.src, batch.tgt_in, batch.src_mask, batch.tgt_mask)), batch.tgt_out)
            )
    torch.testing.assert_close(losses[1], losses[0], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("multiple", [0, -8, 2.5])
def test_a_bad_multiple_is_one_clear_line(multiple):
    with pytest.raises(ValueError, match=r"multiple must be a positive integer \(1: no bucket padding\)"):
        collate(PAIRS, multiple=multiple)

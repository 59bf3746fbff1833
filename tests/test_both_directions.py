"""Training on Multi30k in both directions with one model (Config.both_directions): each epoch holds every pair
and every pair reversed, a reversed pair's target starts with </s> where a forward one starts with <s>, and
validation stays de→en."""

import pytest
import torch

from transformer_course.config import Config, get_preset
from transformer_course.data import (
    BOS,
    EOS,
    MIRROR_ENV,
    PAD,
    REVERSED_START,
    PairDataset,
    both_ways_batch,
    collate,
    multi30k_data,
)

from helpers import MULTI30K, needs_multi30k

LIMIT = 300


def tiny(**changes):
    return get_preset("multi30k-cpu").replace(
        name="tiny", N=1, d_model=32, d_ff=64, h=2, subword_vocab=400, tokens_per_batch=600, **changes
    )


def test_a_reversed_pair_is_the_pair_swapped_with_its_target_started_by_eos_and_the_rest_as_collate_makes_it():
    train = PairDataset([[5, 6, 7], [8, 9]], [[10, 11], [12, 13, 14, 15]])
    batch = both_ways_batch(train, [0, 3, 2])  # pair 0, pair 1 reversed, pair 0 reversed
    want = collate([([5, 6, 7], [10, 11]), ([12, 13, 14, 15], [8, 9]), ([10, 11], [5, 6, 7])])
    assert REVERSED_START == EOS and REVERSED_START not in (BOS, PAD)
    assert batch.tgt_in[:, 0].tolist() == [BOS, EOS, EOS]
    assert torch.equal(batch.tgt_in[:, 1:], want.tgt_in[:, 1:])
    for name in ("src", "tgt_out", "src_mask", "tgt_mask"):
        assert torch.equal(getattr(batch, name), getattr(want, name)), name
    assert batch.n_tokens == want.n_tokens


def test_only_multi30k_on_one_shared_vocabulary_trains_both_ways():
    with pytest.raises(ValueError, match="set task='multi30k' and shared_vocab=True"):
        Config(both_directions=True)  # the word vocabularies, one per language
    with pytest.raises(ValueError, match="set task='multi30k' and shared_vocab=True"):
        get_preset("toy-copy").replace(both_directions=True)
    with pytest.raises(ValueError, match="must be True or False"):
        tiny(both_directions="yes")
    assert not get_preset("multi30k-cpu").both_directions


@needs_multi30k
def test_an_epoch_holds_every_pair_both_ways_and_validation_stays_de_en(tmp_path, monkeypatch):
    monkeypatch.setenv(MIRROR_ENV, str(MULTI30K))
    one = multi30k_data(tiny(), tmp_path, limit=LIMIT, progress=False)
    both = multi30k_data(tiny(both_directions=True), tmp_path, limit=LIMIT, progress=False)

    def pairs(batches, direction):
        seen = []
        for b in batches:
            for row in range(len(b)):
                if direction is None or (int(b.tgt_in[row, 0]) == EOS) == direction:
                    src = [int(i) for i in b.src[row] if i != PAD]
                    tgt = [int(i) for i in b.tgt_out[row] if i not in (PAD, EOS)]
                    seen.append((tuple(src), tuple(tgt)))
        return sorted(seen)

    forward = pairs(one.train_batches(0, 0), None)
    assert pairs(both.train_batches(0, 0), False) == forward
    assert pairs(both.train_batches(0, 0), True) == sorted((t, s) for s, t in forward)
    assert pairs(both.val_batches(), None) == pairs(one.val_batches(), None)
    assert all(int(b.tgt_in[r, 0]) == BOS for b in both.val_batches() for r in range(len(b)))
    assert both.batches_per_epoch(0) > one.batches_per_epoch(0)
    again = [b.src for b in both.train_batches(1, 2)]  # a resumed epoch: the same batches from batch 2 on
    assert all(torch.equal(x, y) for x, y in zip(again, [b.src for b in list(both.train_batches(1, 0))[2:]]))

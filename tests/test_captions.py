"""The language model's corpus and baselines (transformer_course.data.captions, notebook 12): the id stream, its
rows, and the add-k unigram and bigram perplexities against a brute-force count on a tiny corpus."""

import math
from collections import Counter

import pytest
import torch

from transformer_course.data import EOS, SubwordTokenizer
from transformer_course.data.captions import (
    Captions,
    best_k,
    bigram_perplexity,
    caption_stream,
    unigram_perplexity,
)

TRAIN = [3, 5, 6, 5, 6, 7, 3, 5, 7, 3, 4, 4]
TEST = [3, 5, 6, 7, 8, 3, 4]  # 8 never occurs in train


def brute_force_unigram(train, test, vocab, k):
    counts = Counter(train)
    log_p = [math.log((counts[w] + k) / (len(train) + k * vocab)) for w in test[1:]]
    return math.exp(-sum(log_p) / len(log_p))


def brute_force_bigram(train, test, vocab, k):
    pairs = Counter(zip(train, train[1:]))
    before = Counter(train[:-1])
    log_p = [math.log((pairs[(v, w)] + k) / (before[v] + k * vocab)) for v, w in zip(test, test[1:])]
    return math.exp(-sum(log_p) / len(log_p))


@pytest.mark.parametrize("k", [1.0, 0.5, 0.01])
def test_the_baselines_equal_a_brute_force_count(k):
    assert unigram_perplexity(TRAIN, TEST, 10, k) == pytest.approx(brute_force_unigram(TRAIN, TEST, 10, k), rel=1e-12)
    assert bigram_perplexity(TRAIN, TEST, 10, k) == pytest.approx(brute_force_bigram(TRAIN, TEST, 10, k), rel=1e-12)
    assert bigram_perplexity(torch.tensor(TRAIN), torch.tensor(TEST), 10, k) == bigram_perplexity(TRAIN, TEST, 10, k)


def test_a_uniform_guess_has_the_vocabulary_s_perplexity():
    # k huge: the counts vanish beside it, every word gets 1/vocab
    assert unigram_perplexity(TRAIN, TEST, 10, 1e12) == pytest.approx(10)
    assert bigram_perplexity(TRAIN, TEST, 10, 1e12) == pytest.approx(10)


def test_best_k_is_the_one_with_the_lowest_validation_perplexity():
    ks = (1.0, 0.1, 0.01)
    chosen = best_k(bigram_perplexity, TRAIN, TEST, 10, ks)
    assert chosen == min(ks, key=lambda k: brute_force_bigram(TRAIN, TEST, 10, k))


def test_bad_baseline_arguments_are_one_line():
    for call, match in [
        (lambda: bigram_perplexity(TRAIN, TEST, 10, 0), "k must be a positive add-k"),
        (lambda: unigram_perplexity(TRAIN, TEST, 0, 1.0), "vocab must be the vocabulary's size"),
        (lambda: bigram_perplexity(TRAIN, [3], 10, 1.0), "at least 2 ids"),
    ]:
        with pytest.raises(ValueError, match=match):
            call()


def tiny_captions() -> Captions:
    texts = ["a dog runs .", "a cat sits .", "two dogs run on grass .", "a man rides a bike ."] * 3
    tokenizer = SubwordTokenizer.train(texts, 60)
    streams = [caption_stream(tokenizer, texts[i : i + 4]) for i in (0, 4, 8)]
    return Captions(tokenizer, *streams)


def test_the_stream_is_each_caption_after_an_end_of_sentence():
    tokenizer = tiny_captions().tokenizer
    stream = caption_stream(tokenizer, ["a dog runs .", "a cat sits ."])
    ids = stream.tolist()
    assert ids[0] == EOS and ids[-1] == EOS and ids.count(EOS) == 3
    middle = ids.index(EOS, 1)
    assert (
        tokenizer.decode(ids[1:middle]) == "a dog runs ." and tokenizer.decode(ids[middle + 1 : -1]) == "a cat sits ."
    )


@pytest.mark.parametrize("context", [1, 3, 5, 100])
def test_held_out_rows_predict_every_id_after_the_first_exactly_once(context):
    data = tiny_captions()
    predicted = []  # (position of the id in the stream) of every prediction, through the rows' overlap
    position = 0
    for batch in data.eval_rows("test", 2, context):
        assert batch.dim() == 2 and batch.size(1) <= context + 1
        for row in batch:
            assert torch.equal(row, data.test[position : position + len(row)])
            predicted += range(position + 1, position + len(row))
            position += len(row) - 1
    assert predicted == list(range(1, len(data.test)))


def test_training_rows_are_windows_of_the_train_stream_drawn_by_the_seed():
    data = tiny_captions()
    rows = data.train_rows(4, 5, torch.Generator().manual_seed(0))
    assert rows.shape == (4, 6)
    stream = data.train.tolist()
    for row in rows.tolist():
        assert any(stream[i : i + 6] == row for i in range(len(stream) - 5))
    assert torch.equal(rows, data.train_rows(4, 5, torch.Generator().manual_seed(0)))


def test_a_bad_split_is_one_line():
    with pytest.raises(ValueError, match="unknown split 'val'"):
        next(tiny_captions().eval_rows("val", 2, 4))

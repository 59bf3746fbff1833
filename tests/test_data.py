"""Specifications of transformer_course.data: vocabulary, batches, toy tasks, Multi30k pipeline."""

import json
from collections import Counter

import pytest
import torch
from torch.utils.data import DataLoader

from transformer_course.data import (
    BOS,
    EOS,
    PAD,
    SPECIALS,
    UNK,
    Batch,
    PairDataset,
    Vocab,
    VocabMismatchError,
    collate,
    pad_sequences,
    toy_batches,
    toy_dataset,
    toy_pairs,
)
from transformer_course.masks import padding_mask, subsequent_mask

CORPUS = [["a", "dog", "runs", "."], ["a", "cat", "runs", "."], ["the", "dog", "sleeps", "."]]


# --- Vocab --------------------------------------------------------------------------------------------


def test_specials_have_the_agreed_ids():
    assert (PAD, UNK, BOS, EOS) == (0, 1, 2, 3)
    assert SPECIALS == ["<pad>", "<unk>", "<s>", "</s>"]
    vocab = Vocab.build(CORPUS)
    assert [vocab.stoi[s] for s in SPECIALS] == [PAD, UNK, BOS, EOS]


def test_vocab_keeps_exactly_the_tokens_seen_min_freq_times():
    for min_freq in (1, 2, 3):
        counts = Counter(t for s in CORPUS for t in s)
        expected = {t for t, c in counts.items() if c >= min_freq}
        vocab = Vocab.build(CORPUS, min_freq=min_freq)
        assert set(vocab.itos[4:]) == expected
        assert len(vocab) == 4 + len(expected)


def test_vocab_orders_by_frequency_then_alphabetically():
    vocab = Vocab.build(CORPUS, min_freq=1)
    assert vocab.itos[4:7] == [".", "a", "dog"]  # 3, 2, 2 occurrences; "a" < "dog" < "runs"
    assert vocab.itos[4:8] == [".", "a", "dog", "runs"]


def test_encode_maps_unknown_words_to_unk_and_adds_no_specials():
    vocab = Vocab.build(CORPUS, min_freq=2)
    ids = vocab.encode(["a", "zebra", "runs"])
    assert ids == [vocab.stoi["a"], UNK, vocab.stoi["runs"]]


def test_encode_refuses_a_plain_string():
    with pytest.raises(TypeError, match="tokenize"):
        Vocab.build(CORPUS).encode("a dog")


def test_decode_stops_at_eos_and_drops_pad_and_bos():
    vocab = Vocab.build(CORPUS, min_freq=1)
    ids = [BOS, vocab.stoi["a"], vocab.stoi["dog"], EOS, vocab.stoi["cat"], PAD]
    assert vocab.decode(ids) == ["a", "dog"]
    assert vocab.decode(torch.tensor(ids)) == ["a", "dog"]
    assert vocab.decode(ids, strip_specials=False) == ["<s>", "a", "dog", "</s>", "cat", "<pad>"]


def test_decode_of_encode_is_identity_on_known_words():
    vocab = Vocab.build(CORPUS, min_freq=1)
    for sentence in CORPUS:
        assert vocab.decode(vocab.encode(sentence)) == sentence


def test_vocab_json_round_trip(tmp_path):
    vocab = Vocab.build(CORPUS, min_freq=1)
    vocab.save(tmp_path / "v.json")
    loaded = Vocab.load(tmp_path / "v.json")
    assert loaded == vocab and loaded.stoi == vocab.stoi
    assert json.loads((tmp_path / "v.json").read_text())["itos"] == vocab.itos
    assert Vocab.from_dict(vocab.to_dict()) == vocab
    assert [p.name for p in tmp_path.iterdir()] == ["v.json"]  # no temporary file left


def test_fingerprint_differs_when_any_id_would_mean_another_word():
    a = Vocab(SPECIALS + ["dog", "cat"])
    b = Vocab(SPECIALS + ["cat", "dog"])
    assert a.fingerprint() == Vocab(SPECIALS + ["dog", "cat"]).fingerprint()
    assert a.fingerprint() != b.fingerprint()


def test_loading_a_vocabulary_that_does_not_match_the_checkpoint_fails(tmp_path):
    trained = Vocab.build(CORPUS, min_freq=1)
    other = Vocab.build(CORPUS, min_freq=2)
    other.save(tmp_path / "other.json")
    with pytest.raises(VocabMismatchError, match="does not match"):
        Vocab.load(tmp_path / "other.json", fingerprint=trained.fingerprint())
    assert Vocab.load(tmp_path / "other.json", fingerprint=other.fingerprint()) == other


def test_an_edited_vocabulary_file_is_refused(tmp_path):
    vocab = Vocab.build(CORPUS, min_freq=1)
    d = vocab.to_dict()
    d["itos"][4], d["itos"][5] = d["itos"][5], d["itos"][4]
    (tmp_path / "v.json").write_text(json.dumps(d))
    with pytest.raises(VocabMismatchError, match="edited or is corrupt"):
        Vocab.load(tmp_path / "v.json")


def test_vocab_must_start_with_the_specials_and_list_each_token_once():
    with pytest.raises(ValueError, match="specials"):
        Vocab(["dog", "cat"])
    with pytest.raises(ValueError, match="once"):
        Vocab(SPECIALS + ["dog", "dog"])
    with pytest.raises(ValueError, match="min_freq"):
        Vocab.build(CORPUS, min_freq=0)


def test_shared_vocab_counts_both_languages_together():
    de = [["ein", "hund"], ["ein", "mann"]]
    en = [["a", "dog"], ["a", "man"], ["hund"]]
    shared = Vocab.build_shared(de, en, min_freq=2)
    assert set(shared.itos[4:]) == {"ein", "a", "hund"}  # "hund": once in each language
    assert shared == Vocab.build(de + en, min_freq=2)


# --- Batch and collate ----------------------------------------------------------------------------------


def test_batch_shifts_the_target_and_builds_masks_like_the_masks_module():
    src = torch.tensor([[5, 6, 7], [8, PAD, PAD]])
    tgt = torch.tensor([[BOS, 9, 10, EOS], [BOS, 11, EOS, PAD]])
    batch = Batch.make(src, tgt)
    assert batch.tgt_in.tolist() == [[BOS, 9, 10], [BOS, 11, EOS]]
    assert batch.tgt_out.tolist() == [[9, 10, EOS], [11, EOS, PAD]]
    assert torch.equal(batch.src_mask, padding_mask(src, PAD))
    brute = torch.tensor([[[j <= i and batch.tgt_in[b, j] != PAD for j in range(3)] for i in range(3)] for b in range(2)])
    assert torch.equal(batch.tgt_mask[:, 0], brute)
    assert torch.equal(batch.tgt_mask & subsequent_mask(3), batch.tgt_mask)
    assert batch.n_tokens == 5 and batch.n_src_tokens == 4 and len(batch) == 2


def test_batch_make_explains_wrong_shapes():
    with pytest.raises(ValueError, match="unsqueeze"):
        Batch.make(torch.tensor([5, 6]), torch.tensor([[BOS, EOS]]))
    with pytest.raises(ValueError, match="pair up"):
        Batch.make(torch.tensor([[5, 6]]), torch.tensor([[BOS, EOS], [BOS, EOS]]))
    with pytest.raises(ValueError, match="at least 2"):
        Batch.make(torch.tensor([[5, 6]]), torch.tensor([[BOS]]))


def test_batch_to_moves_every_tensor_and_keeps_the_count():
    batch = collate([([5, 6], [7]), ([8], [9, 10])])
    moved = batch.to("meta")
    for name in ("src", "tgt_in", "tgt_out", "src_mask", "tgt_mask"):
        assert getattr(moved, name).device.type == "meta"
        assert getattr(moved, name).shape == getattr(batch, name).shape
    assert moved.n_tokens == batch.n_tokens


def test_collate_wraps_targets_in_bos_eos_and_pads():
    batch = collate([([5, 6, 7], [8]), ([9], [10, 11, 12])])
    assert batch.src.tolist() == [[5, 6, 7], [9, PAD, PAD]]
    assert batch.tgt_in.tolist() == [[BOS, 8, EOS, PAD], [BOS, 10, 11, 12]]
    assert batch.tgt_out.tolist() == [[8, EOS, PAD, PAD], [10, 11, 12, EOS]]
    assert batch.n_tokens == 2 + 4


def test_collate_refuses_an_empty_source():
    with pytest.raises(ValueError, match="empty source"):
        collate([([], [5])])


def test_pad_sequences_matches_torch_pad_sequence():
    seqs = [[5, 6, 7], [8], [9, 10]]
    ref = torch.nn.utils.rnn.pad_sequence([torch.tensor(s) for s in seqs], batch_first=True, padding_value=PAD)
    assert torch.equal(pad_sequences(seqs), ref)


# --- Toy tasks --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("task", ["copy", "reverse"])
def test_toy_pairs_follow_the_task_and_use_only_word_ids(task):
    pairs = toy_pairs(task, n=200, vocab_size=13, min_len=2, max_len=7, seed=1)
    assert len(pairs) == 200
    for src, tgt in pairs:
        assert 2 <= len(src) <= 7 and all(4 <= i < 13 for i in src)
        assert tgt == (src if task == "copy" else src[::-1])
    lengths = {len(s) for s, _ in pairs}
    assert lengths == set(range(2, 8))  # every length occurs


def test_toy_pairs_are_deterministic_under_a_seed():
    assert toy_pairs("copy", 50, seed=3) == toy_pairs("copy", 50, seed=3)
    assert toy_pairs("copy", 50, seed=3) != toy_pairs("copy", 50, seed=4)


def test_toy_pairs_reject_unknown_tasks_and_sizes():
    with pytest.raises(ValueError, match="copy"):
        toy_pairs("sort")
    with pytest.raises(ValueError, match="vocab_size"):
        toy_pairs("copy", vocab_size=4)
    with pytest.raises(ValueError, match="min_len"):
        toy_pairs("copy", min_len=5, max_len=3)


def test_toy_batches_are_batches_of_toy_pairs():
    batches = list(toy_batches("reverse", n_batches=3, batch_size=4, vocab_size=9, max_len=5, seed=2))
    pairs = toy_pairs("reverse", 12, vocab_size=9, max_len=5, seed=2)
    assert len(batches) == 3
    for b, batch in enumerate(batches):
        expected = collate(pairs[4 * b : 4 * b + 4])
        assert torch.equal(batch.src, expected.src) and torch.equal(batch.tgt_out, expected.tgt_out)


def test_toy_dataset_works_with_a_dataloader():
    dataset = toy_dataset("copy", n=10, seed=0)
    assert isinstance(dataset, PairDataset) and len(dataset) == 10
    batch = next(iter(DataLoader(dataset, batch_size=10, collate_fn=collate)))
    for i, (src, tgt) in enumerate(toy_pairs("copy", 10, seed=0)):
        assert batch.src[i, : len(src)].tolist() == src
        assert batch.tgt_out[i, : len(tgt) + 1].tolist() == tgt + [EOS]

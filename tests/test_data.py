"""Specifications of transformer_course.data: vocabulary, batches, toy tasks, tokenization, batching by
length and the Multi30k pipeline. The tests on the real corpus skip when its files are absent."""

import ast
import gzip
import importlib
import json
import os
from collections import Counter
from pathlib import Path

import pytest
import spacy
import torch
from torch.utils.data import DataLoader

from transformer_course import data as data_module
from transformer_course.data import (
    BOS,
    EOS,
    MIRROR_ENV,
    PAD,
    SPECIALS,
    UNK,
    Batch,
    Multi30k,
    PairDataset,
    TokenBatchSampler,
    Vocab,
    VocabMismatchError,
    collate,
    detokenize,
    pad_sequences,
    padding_fraction,
    prepare_multi30k,
    read_lines,
    tokenize,
    tokenize_file,
    tokenize_many,
    toy_batches,
    toy_dataset,
    toy_pairs,
)
from transformer_course.masks import padding_mask, subsequent_mask

from helpers import MULTI30K, NO_MULTI30K

# The module that holds tokenize_file and the tokenize_many it calls.
tokenize_module = importlib.import_module("transformer_course.data.tokenization")

CORPUS = [["a", "dog", "runs", "."], ["a", "cat", "runs", "."], ["the", "dog", "sleeps", "."]]


# --- The package: one topic per module, no import cycles -------------------------------------------------------

# Each module of transformer_course/data may import only the modules listed before it, and of the rest of the
# package only masks, config and files (never train, decode, evaluate or viz: they import data).
DATA_MODULES = [
    "vocab",
    "corpus",
    "download",
    "tokenization",
    "bpe",
    "subword",
    "batching",
    "toy",
    "multi30k",
    "captions",
    "loaders",
    "__init__",
]
ALLOWED_OUTSIDE = {"masks", "config", "files"}


def _imported_modules(path: Path) -> list[list[str]]:
    """Every transformer_course name a file imports, at module level or inside a function, as dotted parts:
    ``from .vocab import PAD`` → ["transformer_course", "data", "vocab", "PAD"]."""
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = ["transformer_course", "data"][: 3 - node.level] if node.level else []  # . = data, .. = package
            module = ".".join(base + ([node.module] if node.module else []))
            names += [f"{module}.{alias.name}" for alias in node.names]
    return [name.split(".") for name in names if name.startswith("transformer_course.")]


def test_the_data_package_has_one_module_per_topic_each_with_all():
    folder = Path(data_module.__file__).parent
    assert sorted(p.stem for p in folder.glob("*.py")) == sorted(DATA_MODULES)
    for name in DATA_MODULES[:-1]:
        module = importlib.import_module(f"transformer_course.data.{name}")
        assert module.__all__ and all(hasattr(module, n) for n in module.__all__), name
        assert set(module.__all__) <= set(data_module.__all__), f"{name} exports names the package does not"


def test_data_modules_import_only_earlier_data_modules_and_masks_config_files():
    folder = Path(data_module.__file__).parent
    for i, name in enumerate(DATA_MODULES):
        for parts in _imported_modules(folder / f"{name}.py"):
            if parts[1] == "data":
                imported = parts[2] if len(parts) > 2 else "__init__"
                assert imported in DATA_MODULES[:i], f"data/{name}.py imports data.{imported}, which is not above it"
            else:
                assert parts[1] in ALLOWED_OUTSIDE, f"data/{name}.py imports transformer_course.{parts[1]}"


def test_tokenize_in_the_package_is_the_function():
    assert data_module.tokenize is tokenize_module.tokenize and callable(data_module.tokenize)


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
    brute = torch.tensor(
        [[[j <= i and batch.tgt_in[b, j] != PAD for j in range(3)] for i in range(3)] for b in range(2)]
    )
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


# --- Tokenization -------------------------------------------------------------------------------------------

SENTENCES_EN = [
    "A dog's toy isn't red.",
    'Two men (one in a T-shirt) play "Pullman" at 5:30!',
    "A woman, smiling, holds 50% of a cake; a child watches?",
    "People aren't going to the well-known café they'll like.",
]
SENTENCES_DE = ["Ein Mann in einem T-Shirt spielt Gitarre.", "Zwei Hunde (braun) rennen über die Wiese!"]


def test_tokenize_splits_words_punctuation_and_clitics():
    assert tokenize("A dog's toy isn't red.", "en") == ["A", "dog", "'s", "toy", "is", "n't", "red", "."]
    assert tokenize("Ein Mann (alt) läuft.", "de") == ["Ein", "Mann", "(", "alt", ")", "läuft", "."]


def test_tokenize_many_equals_spacy_blank_sentence_by_sentence():
    for lang, sentences in (("en", SENTENCES_EN), ("de", SENTENCES_DE)):
        nlp = spacy.blank(lang)
        expected = [[t.text for t in nlp(s) if not t.is_space] for s in sentences]
        assert tokenize_many(sentences, lang) == expected
        assert [tokenize(s, lang) for s in sentences] == expected


def test_tokenize_drops_whitespace_tokens():
    assert tokenize("  A   dog  runs \n", "en") == ["A", "dog", "runs"]


def test_tokenize_refuses_unknown_languages_and_lists():
    with pytest.raises(ValueError, match="unknown language 'qq'"):
        tokenize("hello", "qq")
    with pytest.raises(TypeError, match="tokenize_many"):
        tokenize(["a", "b"], "en")


@pytest.mark.parametrize("sentence", SENTENCES_EN + ['She said "hi" (twice).'])
def test_detokenize_undoes_tokenize(sentence):
    assert detokenize(tokenize(sentence, "en")) == sentence


def test_detokenize_spacing_rules():
    assert detokenize(["T", "-", "shirt", ",", "(", "red", ")", "do", "n't", "!"]) == "T-shirt, (red) don't!"
    assert detokenize(["a", '"', "b", '"', "and", '"', "c", '"', "."]) == 'a "b" and "c".'
    assert detokenize([]) == ""


def _write_gz(path: Path, lines):
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.write("".join(line + "\n" for line in lines))


def test_tokenize_file_reads_its_cache_instead_of_tokenizing_again(tmp_path, monkeypatch):
    _write_gz(tmp_path / "val.en.gz", ["A dog runs.", "A cat sleeps."])
    first = tokenize_file(tmp_path / "val.en.gz", "en", tmp_path / "cache")
    assert first == [["A", "dog", "runs", "."], ["A", "cat", "sleeps", "."]]
    cached = list((tmp_path / "cache").iterdir())
    assert len(cached) == 1 and spacy.__version__ in cached[0].name

    def no_tokenizing(*args, **kwargs):
        raise AssertionError("tokenized again although a cache exists")

    monkeypatch.setattr(tokenize_module, "tokenize_many", no_tokenizing)
    assert tokenize_file(tmp_path / "val.en.gz", "en", tmp_path / "cache") == first


def test_tokenize_file_with_a_limit_reads_only_the_first_lines(tmp_path):
    _write_gz(tmp_path / "val.en.gz", ["A dog runs.", "A cat sleeps.", "Birds fly."])
    assert tokenize_file(tmp_path / "val.en.gz", "en", tmp_path / "cache", limit=2) == tokenize_many(
        ["A dog runs.", "A cat sleeps."], "en"
    )
    assert not (tmp_path / "cache").exists()  # a partial result is not cached
    full = tokenize_file(tmp_path / "val.en.gz", "en", tmp_path / "cache")
    assert tokenize_file(tmp_path / "val.en.gz", "en", tmp_path / "cache", limit=1) == full[:1]


def test_tokenize_cache_is_keyed_by_the_file_content(tmp_path):
    _write_gz(tmp_path / "val.en.gz", ["A dog runs."])
    tokenize_file(tmp_path / "val.en.gz", "en", tmp_path / "cache")
    _write_gz(tmp_path / "val.en.gz", ["Two cats sleep."])
    assert tokenize_file(tmp_path / "val.en.gz", "en", tmp_path / "cache") == [["Two", "cats", "sleep", "."]]
    assert len(list((tmp_path / "cache").iterdir())) == 2


# --- TokenBatchSampler ----------------------------------------------------------------------------------------


def random_lengths(n=500, seed=0):
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(1, 30, (n,), generator=g)
    tgt = (src + torch.randint(-3, 4, (n,), generator=g)).clamp(min=1)
    return list(zip(src.tolist(), tgt.tolist()))


def padded_size(lengths, batch):
    """Brute force: positions of the padded src and of the padded tgt_in/tgt_out of one batch."""
    return len(batch) * max(lengths[i][0] for i in batch), len(batch) * (max(lengths[i][1] for i in batch) + 1)


def test_sampler_yields_every_pair_exactly_once_per_epoch():
    lengths = random_lengths()
    sampler = TokenBatchSampler(lengths, tokens_per_batch=200, seed=0)
    for epoch in range(3):
        sampler.set_epoch(epoch)
        seen = [i for batch in sampler for i in batch]
        assert sorted(seen) == list(range(len(lengths)))


def test_sampler_batches_respect_tokens_per_batch_and_are_filled():
    lengths = random_lengths()
    sampler = TokenBatchSampler(lengths, tokens_per_batch=200, seed=0)
    batches = list(sampler)
    for batch in batches:
        assert max(padded_size(lengths, batch)) <= 200
    # greedy packing: on average at least half the budget is used
    assert sum(max(padded_size(lengths, b)) for b in batches) / len(batches) > 100


def test_sampler_is_deterministic_under_a_seed_and_reshuffles_each_epoch():
    lengths = random_lengths()
    a = TokenBatchSampler(lengths, 200, seed=1)
    b = TokenBatchSampler(lengths, 200, seed=1)
    assert list(a) == list(b)
    first = list(a)
    a.set_epoch(1)
    assert list(a) != first and sorted(map(sorted, a)) != sorted(map(sorted, first))
    assert list(TokenBatchSampler(lengths, 200, seed=2)) != first


def test_sampler_without_shuffle_goes_in_length_order():
    lengths = random_lengths()
    sampler = TokenBatchSampler(lengths, 200, shuffle=False, seed=5)
    order = [i for batch in sampler for i in batch]
    keys = [(lengths[i][1], lengths[i][0]) for i in order]
    assert keys == sorted(keys)
    assert list(sampler) == list(TokenBatchSampler(lengths, 200, shuffle=False, seed=6))


@pytest.mark.parametrize("num_replicas", [2, 3])
def test_sampler_gives_every_rank_the_same_number_of_disjoint_batches(num_replicas):
    lengths = random_lengths()
    single = TokenBatchSampler(lengths, 200, seed=3)
    single.set_epoch(4)
    ranks = []
    for rank in range(num_replicas):
        s = TokenBatchSampler(lengths, 200, seed=3, num_replicas=num_replicas, rank=rank)
        s.set_epoch(4)
        ranks.append(list(s))
        assert len(s) == len(ranks[-1])
    assert len({len(r) for r in ranks}) == 1
    seen = [i for r in ranks for batch in r for i in batch]
    assert len(seen) == len(set(seen))  # disjoint
    everything = list(single)
    kept = len(everything) - len(everything) % num_replicas
    assert sorted(map(tuple, (b for r in ranks for b in r))) == sorted(map(tuple, everything[:kept]))


def test_sampler_refuses_bad_tokens_per_batch():
    lengths = [(5, 6), (40, 30)]
    for bad in (0, -100, 2.5, "4000", True):
        with pytest.raises(ValueError, match="positive integer"):
            TokenBatchSampler(lengths, tokens_per_batch=bad)
    with pytest.raises(ValueError, match="at least 40"):
        TokenBatchSampler(lengths, tokens_per_batch=39)
    with pytest.raises(ValueError, match="rank"):
        TokenBatchSampler(lengths, 100, num_replicas=2, rank=2)
    with pytest.raises(ValueError, match="processes"):
        len(TokenBatchSampler(lengths, 100, num_replicas=4))


def test_padding_fraction_counts_pad_positions():
    batch = collate([([5, 6, 7], [8]), ([9], [10, 11, 12])])  # src 2 pads of 6; tgt_out 2 pads of 8
    assert padding_fraction([batch]) == {"src": 2 / 6, "tgt": 2 / 8, "both": 4 / 14}


# --- prepare_multi30k on a tiny hand-made corpus ------------------------------------------------------------

TINY = {
    "train": (
        ["Ein Hund rennt .", "Ein Hund schläft .", "Eine Katze rennt ."],
        ["A dog runs .", "A dog sleeps .", "A cat runs ."],
    ),
    "val": (["Ein Pferd rennt .", "Ein Hund ."], ["A horse runs .", "A dog ."]),
    "test_2016_flickr": (["Eine Katze schläft .", "Ein Vogel ."], ["A cat sleeps .", "A bird ."]),
}


@pytest.fixture
def tiny_root(tmp_path):
    for split, (de, en) in TINY.items():
        _write_gz(tmp_path / f"{split}.de.gz", de)
        _write_gz(tmp_path / f"{split}.en.gz", en)
    return tmp_path


def test_prepare_builds_vocabularies_on_train_only(tiny_root):
    m = prepare_multi30k(tiny_root, min_freq=1, download=False)
    assert isinstance(m, Multi30k)
    assert m.src_vocab == Vocab.build(tokenize_many(TINY["train"][0], "de"), min_freq=1)
    assert m.tgt_vocab == Vocab.build(tokenize_many(TINY["train"][1], "en"), min_freq=1)
    assert "horse" not in m.tgt_vocab and "bird" not in m.tgt_vocab  # only in val / test
    assert m.val[0][1] == [m.tgt_vocab.stoi["A"], UNK, m.tgt_vocab.stoi["runs"], m.tgt_vocab.stoi["."]]
    assert m.test.tgt_text == TINY["test_2016_flickr"][1] and m.test.tgt_tokens[1] == ["A", "bird", "."]


def test_prepare_min_freq_and_limit(tiny_root):
    m = prepare_multi30k(tiny_root, min_freq=2, limit=2, download=False)
    assert len(m.train) == len(m.val) == len(m.test) == 2
    assert m.tgt_vocab.itos[4:] == [".", "A", "dog"]  # counted on the first 2 train pairs only


def test_prepare_shared_vocab_covers_both_languages(tiny_root):
    m = prepare_multi30k(tiny_root, min_freq=1, shared_vocab=True, download=False)
    assert m.src_vocab is m.tgt_vocab
    assert {"Hund", "dog", "Katze", "cat"} <= set(m.src_vocab.itos)


def test_prepare_reuses_given_vocabularies(tiny_root):
    src_vocab, tgt_vocab = Vocab(SPECIALS + ["Hund"]), Vocab(SPECIALS + ["dog"])
    m = prepare_multi30k(tiny_root, src_vocab=src_vocab, tgt_vocab=tgt_vocab, download=False)
    assert m.src_vocab is src_vocab and m.train[0] == ([UNK, 4, UNK, UNK], [UNK, 4, UNK, UNK])


def test_prepare_refuses_mismatched_line_counts_and_empty_files(tiny_root):
    _write_gz(tiny_root / "val.en.gz", ["A horse runs ."])
    with pytest.raises(ValueError, match="val.de has 2 lines but val.en has 1"):
        prepare_multi30k(tiny_root, download=False)
    _write_gz(tiny_root / "val.en.gz", [])
    with pytest.raises(ValueError, match="is empty"):
        prepare_multi30k(tiny_root, download=False)


def test_prepare_refuses_bad_arguments(tiny_root):
    with pytest.raises(ValueError, match="limit"):
        prepare_multi30k(tiny_root, limit=0, download=False)
    with pytest.raises(ValueError, match="two languages"):
        prepare_multi30k(tiny_root, src_lang="en", tgt_lang="en", download=False)
    with pytest.raises(ValueError, match="unknown language 'fr'"):
        prepare_multi30k(tiny_root, src_lang="fr", download=False)


def test_loader_yields_batches_and_refuses_unknown_splits(tiny_root):
    m = prepare_multi30k(tiny_root, min_freq=1, download=False)
    batches = list(m.loader("train", tokens_per_batch=10))
    assert all(isinstance(b, Batch) for b in batches)
    assert sum(len(b) for b in batches) == 3
    with pytest.raises(ValueError, match="unknown split 'dev'"):
        m.loader("dev")


# --- The real Multi30k (skipped without the files) ------------------------------------------------------------


def _real_source():
    return MULTI30K  # $TC_DATA_MIRROR or data/ (tests/helpers.py)


@pytest.fixture(scope="module")
def multi30k(tmp_path_factory):
    source = _real_source()
    if source is None:
        pytest.skip(NO_MULTI30K)
    root = tmp_path_factory.mktemp("data")
    old = os.environ.get(MIRROR_ENV)
    os.environ[MIRROR_ENV] = str(Path(source).resolve())
    try:
        data_module.download_multi30k(root, url=None, verbose=False)
        return root, prepare_multi30k(root)
    finally:
        if old is None:
            del os.environ[MIRROR_ENV]
        else:
            os.environ[MIRROR_ENV] = old


@pytest.mark.slow
def test_multi30k_has_the_published_sizes(multi30k):
    _, m = multi30k
    assert (len(m.train), len(m.val), len(m.test)) == (29000, 1014, 1000)
    # de 8,012 and en 6,190 words with min_freq 2, as measured independently
    assert (len(m.src_vocab), len(m.tgt_vocab)) == (8012, 6190)


@pytest.mark.slow
def test_detokenize_restores_at_least_99_percent_of_the_english_test_set(multi30k):
    root, _ = multi30k
    lines = read_lines(root / "test_2016_flickr.en.gz")
    restored = sum(detokenize(tokens) == line for line, tokens in zip(lines, tokenize_many(lines, "en")))
    print(f"detokenize(tokenize(s)) == s for {restored}/{len(lines)} English test sentences")
    assert restored / len(lines) >= 0.99


@pytest.mark.slow
def test_length_bucketing_pads_at_most_10_percent_of_multi30k_train(multi30k):
    _, m = multi30k
    sampler = TokenBatchSampler(m.train, tokens_per_batch=4000, seed=0)
    fractions = padding_fraction(collate([m.train[i] for i in batch]) for batch in sampler)
    assert fractions["both"] <= 0.10


@pytest.mark.slow
def test_a_second_prepare_reads_the_token_cache(multi30k, monkeypatch):
    root, m = multi30k

    def no_tokenizing(*args, **kwargs):
        raise AssertionError("tokenized again although a cache exists")

    monkeypatch.setattr(tokenize_module, "tokenize_many", no_tokenizing)
    again = prepare_multi30k(root)
    assert again.src_vocab == m.src_vocab and again.train.tgt_ids == m.train.tgt_ids

"""The production subword tokenizer (transformer_course.data.subword, notebook 11; paper §5.1 byte-pair encoding
with a shared source-target vocabulary, §3.4 shared embeddings): one joint de+en model trained on the Multi30k
train split, exact detokenization, no <unk> on test2016, serialization, the shared Vocab, clear errors."""

import io
import json
import re
import time

import pytest
import torch
from tokenizers import Tokenizer, models

from transformer_course.data import multi30k_filename
from transformer_course.data.corpus import read_lines
from transformer_course.data.subword import SUBWORD_FORMAT, SubwordTokenizer
from transformer_course.data.tokenization import tokenize_many
from transformer_course.data.vocab import BOS, EOS, PAD, SPECIALS, UNK, Vocab, VocabMismatchError

from helpers import MULTI30K, NO_MULTI30K

SMALL = ["ein Hund rennt im Schnee", "a dog runs in the snow", "zwei Hunde rennen", "two dogs run"] * 3


def small_tokenizer(vocab_size=60):
    return SubwordTokenizer.train(SMALL, vocab_size=vocab_size, min_frequency=2)


# --- On a tiny corpus -----------------------------------------------------------------------------------------


def test_specials_have_the_course_ids():
    tokenizer = small_tokenizer()
    assert tokenizer.itos[:4] == SPECIALS
    assert [tokenizer.itos[i] for i in (PAD, UNK, BOS, EOS)] == ["<pad>", "<unk>", "<s>", "</s>"]
    assert "<s>" not in tokenizer.encode("ein Hund") and "</s>" not in tokenizer.encode("ein Hund")


def test_a_literal_special_in_the_text_is_text_not_a_special():
    tokenizer = SubwordTokenizer.train(["a <s> b </s>", "<unk> c"] * 2, vocab_size=40, min_frequency=2)
    ids = tokenizer.encode_ids("a <s> b")
    assert BOS not in ids and UNK not in ids
    assert tokenizer.decode(ids) == "a <s> b"


def test_decode_of_a_model_output_drops_bos_and_pad_and_stops_at_eos():
    tokenizer = small_tokenizer()
    ids = tokenizer.encode_ids("zwei Hunde rennen")
    assert tokenizer.decode([BOS, *ids, EOS, PAD, *ids]) == "zwei Hunde rennen"
    assert tokenizer.decode(torch.tensor([BOS, *ids, EOS])) == "zwei Hunde rennen"
    assert tokenizer.decode([*ids, UNK]) == "zwei Hunde rennen<unk>"  # <unk> stays visible
    assert tokenizer.decode([BOS, *ids, EOS], strip_specials=False) == "<s> zwei Hunde rennen</s>"


def test_decode_accepts_pieces_and_ids_alike():
    tokenizer = small_tokenizer()
    text = "two dogs run in the snow"
    assert tokenizer.decode(tokenizer.encode(text)) == tokenizer.decode(tokenizer.encode_ids(text)) == text
    assert tokenizer.decode([]) == ""


def test_encode_many_equals_encode_one_by_one():
    tokenizer = small_tokenizer()
    texts = SMALL[:4] + ["Schneehunde", ""]
    assert tokenizer.encode_many(texts) == [tokenizer.encode(t) for t in texts]
    assert tokenizer.encode_many(texts, ids=True) == [tokenizer.encode_ids(t) for t in texts]


def test_display_pieces_drops_the_word_start_marker_and_marks_continuations():
    tokenizer = small_tokenizer()
    assert tokenizer.display_pieces(["▁Schnee", "mobil", "en", "▁fährt"]) == ["Schnee", "·mobil", "·en", "fährt"]
    assert tokenizer.display_pieces(["▁Schnee", "mobil"], continuation="") == ["Schnee", "mobil"]
    assert tokenizer.display_pieces(["<s>", "▁", "▁a", "</s>"]) == ["<s>", "▁", "a", "</s>"]


def test_vocab_size_is_met_exactly_when_the_corpus_has_enough_pairs():
    alphabet = set("".join(SMALL).replace(" ", "▁")) | {"▁"}
    smallest = SubwordTokenizer.train(SMALL, vocab_size=len(SPECIALS) + len(alphabet), min_frequency=1)
    assert len(smallest) == len(SPECIALS) + len(alphabet) and smallest.merges == []  # characters only
    assert len(small_tokenizer(40)) == 40
    assert len(small_tokenizer(10_000)) < 10_000  # merging stops when no pair occurs min_frequency=2 times


def test_json_round_trip_and_fingerprint_on_a_tiny_corpus():
    tokenizer = small_tokenizer()
    again = SubwordTokenizer.from_json(tokenizer.to_json(), fingerprint=tokenizer.fingerprint())
    assert again == tokenizer and again.itos == tokenizer.itos and again.merges == tokenizer.merges
    assert small_tokenizer(50).fingerprint() != tokenizer.fingerprint()
    with pytest.raises(VocabMismatchError, match="does not match the checkpoint's"):
        SubwordTokenizer.from_json(tokenizer.to_json(), fingerprint="0123456789abcdef")
    tampered = json.loads(tokenizer.to_json())
    tampered["fingerprint"] = "0123456789abcdef"
    with pytest.raises(VocabMismatchError, match="its stored fingerprint"):
        SubwordTokenizer.from_json(json.dumps(tampered))


def test_both_sides_must_use_the_tokenizers_own_vocabulary():
    tokenizer = small_tokenizer()
    tokenizer.check_vocabularies(tokenizer.vocab(), tokenizer.vocab())  # one shared vocabulary: accepted
    other = small_tokenizer(50).vocab()
    with pytest.raises(VocabMismatchError, match="tgt_vocab .* is not the vocabulary of the subword tokenizer"):
        tokenizer.check_vocabularies(tokenizer.vocab(), other)


def test_the_json_travels_inside_a_weights_only_checkpoint():
    tokenizer = small_tokenizer()
    buffer = io.BytesIO()
    torch.save({"tokenizer": tokenizer.to_json(), "weights": torch.zeros(2)}, buffer)
    buffer.seek(0)
    loaded = torch.load(buffer, weights_only=True)
    assert SubwordTokenizer.from_json(loaded["tokenizer"]).encode_ids("zwei Hunde") == tokenizer.encode_ids(
        "zwei Hunde"
    )


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: SubwordTokenizer.train("ein Hund", 100), TypeError, "list of sentences, got one str"),
        (lambda: SubwordTokenizer.train([], 100), ValueError, "no text to learn from"),
        (lambda: SubwordTokenizer.train(["", ""], 100), ValueError, "no text to learn from"),
        (lambda: SubwordTokenizer.train(["ein Hund", 3], 100), TypeError, "item 1 is a int"),
        (lambda: SubwordTokenizer.train(SMALL, 10), ValueError, r"vocab_size=10 is smaller than the 4 specials"),
        (lambda: SubwordTokenizer.train(SMALL, "8000"), TypeError, "vocab_size must be an int"),
        (lambda: SubwordTokenizer.train(SMALL, 100, min_frequency=0), ValueError, "min_frequency must be at least"),
        (lambda: SubwordTokenizer.train(SMALL, 100, specials=["<s>"]), ValueError, "specials must start with"),
        (lambda: small_tokenizer().encode(["ein", "Hund"]), TypeError, "one sentence as a str"),
        (lambda: small_tokenizer().decode("ein Hund"), TypeError, "got one str"),
        (lambda: small_tokenizer().decode([10**6]), ValueError, "outside this tokenizer"),
        (lambda: small_tokenizer().decode([1.5]), TypeError, "pieces .str. or ids .int."),
        (lambda: SubwordTokenizer.from_json(b"{}"), TypeError, "the str that to_json wrote"),
        (lambda: SubwordTokenizer.from_json("not json"), ValueError, "not JSON"),
        (lambda: SubwordTokenizer.from_json('{"itos": []}'), ValueError, "format"),
        (lambda: SubwordTokenizer.from_json(json.dumps({"format": SUBWORD_FORMAT})), ValueError, "cannot be read"),
        (lambda: SubwordTokenizer("tokenizer"), TypeError, "wraps a tokenizers.Tokenizer"),
        (lambda: SubwordTokenizer(Tokenizer(models.BPE())), ValueError, "needs the Metaspace pre-tokenizer"),
    ],
)
def test_bad_input_gets_one_clear_error(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_the_smallest_vocab_size_named_in_the_error_works():
    with pytest.raises(ValueError, match=r"choose vocab_size >= \d+") as info:
        SubwordTokenizer.train(SMALL, 10)
    smallest = int(re.search(r"choose vocab_size >= (\d+)", str(info.value)).group(1))
    assert len(SubwordTokenizer.train(SMALL, smallest)) == smallest


# --- On Multi30k: one joint de+en model trained on the train split only (skipped without the files) ----------


@pytest.fixture(scope="module")
def multi30k_lines():
    if MULTI30K is None:
        pytest.skip(NO_MULTI30K)
    return {(s, l): read_lines(MULTI30K / multi30k_filename(s, l)) for s in ("train", "test") for l in ("de", "en")}


@pytest.fixture(scope="module")
def tokenizer(multi30k_lines):
    """vocab_size 8000 (the size of docs/results.md's probe), trained on the TRAIN split only, both languages."""
    start = time.perf_counter()
    tokenizer = SubwordTokenizer.train(multi30k_lines["train", "de"] + multi30k_lines["train", "en"], vocab_size=8000)
    print(f"\ntrained {tokenizer} on 58,000 train sentences in {time.perf_counter() - start:.1f} s")
    return tokenizer


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["de", "en"])
def test_encode_then_decode_is_the_identity_on_test2016(tokenizer, multi30k_lines, lang):
    lines = multi30k_lines["test", lang]
    exceptions = [line for line, pieces in zip(lines, tokenizer.encode_many(lines)) if tokenizer.decode(pieces) != line]
    print(f"decode(encode(s)) != s for {len(exceptions)}/{len(lines)} {lang} test sentences")
    assert exceptions == []  # nothing is normalized: no exception to report


@pytest.mark.slow
def test_encode_then_decode_is_the_identity_on_the_train_split_too(tokenizer, multi30k_lines):
    # the train split has double spaces (44 German lines), trailing spaces (40) and a tab: all come back
    lines = multi30k_lines["train", "de"] + multi30k_lines["train", "en"]
    assert [tokenizer.decode(ids) for ids in tokenizer.encode_many(lines, ids=True)] == lines


@pytest.mark.slow
def test_words_seen_only_in_test_still_encode_without_unk(tokenizer, multi30k_lines):
    train_words = {
        w for lang in ("de", "en") for line in multi30k_lines["train", lang] for w in re.findall(r"\w+", line)
    }
    test_lines = multi30k_lines["test", "de"] + multi30k_lines["test", "en"]
    test_only = sorted({w for line in test_lines for w in re.findall(r"\w+", line)} - train_words)
    unk = sum(ids.count(UNK) for ids in tokenizer.encode_many(test_lines, ids=True))
    print(f"{len(test_only)} test words never seen in train (e.g. {test_only[:5]}); <unk> in test: {unk}")
    assert len(test_only) > 100 and unk == 0
    assert all(UNK not in tokenizer.encode_ids(word) for word in test_only)


@pytest.mark.slow
def test_json_round_trip_gives_identical_encodings(tokenizer, multi30k_lines):
    text = tokenizer.to_json()
    assert isinstance(text, str)
    again = SubwordTokenizer.from_json(text, fingerprint=tokenizer.fingerprint())
    lines = multi30k_lines["test", "de"] + multi30k_lines["test", "en"]
    assert again.encode_many(lines, ids=True) == tokenizer.encode_many(lines, ids=True)
    assert again.to_json() == text


@pytest.mark.slow
def test_the_shared_vocab_has_the_tokenizer_ids(tokenizer, multi30k_lines):
    vocab = tokenizer.vocab()
    assert isinstance(vocab, Vocab) and len(vocab) == len(tokenizer) == 8000
    assert vocab.itos == tokenizer.itos
    for line in multi30k_lines["test", "de"][:200] + multi30k_lines["test", "en"][:200]:
        assert vocab.encode(tokenizer.encode(line)) == tokenizer.encode_ids(line)
        assert vocab.decode(tokenizer.encode_ids(line)) == tokenizer.encode(line)


@pytest.mark.slow
def test_sizes_for_a_few_vocab_sizes(tokenizer, multi30k_lines):
    """Printed (run with -s), asserted only where BPE guarantees it: tokens per sentence on train (spaCy words of
    the word-level pipeline vs subwords), <unk> on test (must be 0), share of test words (runs of letters and
    digits, each encoded alone) that are split into two or more pieces."""
    train_texts = multi30k_lines["train", "de"] + multi30k_lines["train", "en"]
    tokenizers = {4000: SubwordTokenizer.train(train_texts, 4000), 8000: tokenizer}
    tokenizers[16000] = SubwordTokenizer.train(train_texts, 16000)
    per_sentence = {}
    for lang in ("de", "en"):
        lines = multi30k_lines["train", lang]
        per_sentence["words", lang] = sum(len(t) for t in tokenize_many(lines, lang)) / len(lines)
    print(
        f"\nspaCy words per train sentence: de {per_sentence['words', 'de']:.2f}, en {per_sentence['words', 'en']:.2f}"
    )
    print("vocab_size  subwords/sentence de  en  <unk> in test  test words in >= 2 pieces de  en")
    for vocab_size, tok in tokenizers.items():
        row = [len(tok)]
        for lang in ("de", "en"):
            per_sentence[vocab_size, lang] = sum(map(len, tok.encode_many(multi30k_lines["train", lang])))
            row.append(per_sentence[vocab_size, lang] / len(multi30k_lines["train", lang]))
        test_lines = multi30k_lines["test", "de"] + multi30k_lines["test", "en"]
        row.append(sum(ids.count(UNK) for ids in tok.encode_many(test_lines, ids=True)))
        for lang in ("de", "en"):
            words = [w for line in multi30k_lines["test", lang] for w in re.findall(r"\w+", line)]
            row.append(sum(len(pieces) >= 2 for pieces in tok.encode_many(words)) / len(words))
        print("{:>10}  {:>19.2f}  {:>5.2f}  {:>13}  {:>27.1%}  {:>5.1%}".format(*row))
        assert len(tok) == vocab_size and row[3] == 0
    for lang in ("de", "en"):  # a larger vocabulary gives shorter sequences
        assert per_sentence[4000, lang] > per_sentence[8000, lang] > per_sentence[16000, lang]

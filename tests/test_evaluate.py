"""BLEU on a tiny hand-made corpus, against BLEU computed by hand (Papineni et al., 2002)."""

import math
from collections import Counter

import pytest

from transformer_course import evaluate
from transformer_course.checkpoint import load_checkpoint, save_checkpoint
from transformer_course.config import get_preset
from transformer_course.data import toy_vocab
from transformer_course.decode import translate
from transformer_course.evaluate import evaluate_checkpoint, sacre_bleu, tokenized_bleu
from transformer_course.model import build_model

HYPOTHESES = ["the cat sat on the mat", "a dog runs in the park today"]
REFERENCES = ["the cat sat on a mat", "a dog runs in the green park"]


def bleu_by_hand(hypotheses: list[str], references: list[str]) -> float:
    """Corpus BLEU-4 with one reference, whitespace tokens, no smoothing: clipped n-gram precisions summed
    over the corpus, geometric mean, brevity penalty exp(1 − r/c) when the output is shorter."""
    matches, totals = [0] * 4, [0] * 4
    hyp_len = ref_len = 0
    for hyp, ref in zip(hypotheses, references):
        h, r = hyp.split(), ref.split()
        hyp_len, ref_len = hyp_len + len(h), ref_len + len(r)
        for n in range(1, 5):
            h_grams = Counter(tuple(h[i : i + n]) for i in range(len(h) - n + 1))
            r_grams = Counter(tuple(r[i : i + n]) for i in range(len(r) - n + 1))
            matches[n - 1] += sum(min(c, r_grams[g]) for g, c in h_grams.items())
            totals[n - 1] += max(len(h) - n + 1, 0)
    log_precision = sum(math.log(m / t) for m, t in zip(matches, totals)) / 4
    brevity = 1.0 if hyp_len > ref_len else math.exp(1 - ref_len / hyp_len)
    return 100 * brevity * math.exp(log_precision)


def test_the_hand_made_corpus_has_the_score_computed_by_hand():
    # 1-grams 11/13, 2-grams 7/11, 3-grams 5/9, 4-grams 3/7; 13 output words against 13 reference words
    expected = 100 * (11 / 13 * 7 / 11 * 5 / 9 * 3 / 7) ** 0.25
    assert bleu_by_hand(HYPOTHESES, REFERENCES) == pytest.approx(expected)
    assert sacre_bleu(HYPOTHESES, REFERENCES)[0].score == pytest.approx(expected, abs=1e-6)
    assert tokenized_bleu(HYPOTHESES, REFERENCES).score == pytest.approx(expected, abs=1e-6)


def test_a_short_output_pays_the_brevity_penalty():
    hypotheses = ["the cat sat on the", "a dog runs in the park"]
    assert sacre_bleu(hypotheses, REFERENCES)[0].score == pytest.approx(bleu_by_hand(hypotheses, REFERENCES), abs=1e-6)


def test_identical_output_scores_100():
    assert sacre_bleu(REFERENCES, REFERENCES)[0].score == pytest.approx(100.0)


def test_sacrebleu_is_cased_and_the_tokenized_score_is_lowercase():
    hypotheses = ["The Cat sat on a mat", "A dog runs in the green park"]
    assert sacre_bleu(hypotheses, REFERENCES)[0].score < 100
    assert tokenized_bleu(hypotheses, REFERENCES).score == pytest.approx(100.0)


def test_the_tokenized_score_splits_punctuation_with_spacy_and_sacrebleu_with_13a():
    # "mat." is one whitespace token but two spaCy tokens ("mat", "."): both scores see the split
    hypotheses, references = ["the cat sat on the mat."], ["the cat sat on the mat ."]
    assert tokenized_bleu(hypotheses, references).score == pytest.approx(100.0)
    assert sacre_bleu(hypotheses, references)[0].score == pytest.approx(100.0)


def test_the_signature_says_how_sacrebleu_scored():
    _, signature = sacre_bleu(HYPOTHESES, REFERENCES)
    assert "case:mixed" in signature and "tok:13a" in signature and "nrefs:1" in signature


def test_bleu_refuses_lists_of_different_lengths():
    with pytest.raises(ValueError, match="2 translations but 1 references"):
        sacre_bleu(HYPOTHESES, REFERENCES[:1])
    with pytest.raises(TypeError, match="lists of sentences"):
        tokenized_bleu("the cat", "the cat")


@pytest.mark.slow
def test_evaluate_checkpoint_translates_with_the_checkpoints_vocabularies_and_languages(tmp_path, monkeypatch):
    config, vocab = get_preset("toy-copy"), toy_vocab(14)
    path = save_checkpoint(
        tmp_path / "c.pt", build_model(config, 14, 14), config, vocab, vocab, src_lang="en", tgt_lang="de"
    )
    pairs = [("4 5 6", "4 5 6"), ("7 8", "7 8"), ("9 10 11 12", "9 10 11 12")]
    asked = []

    def hand_made_pairs(split, root, src_lang, tgt_lang):  # instead of the Multi30k files
        asked.append((split, src_lang, tgt_lang))
        return pairs

    monkeypatch.setattr(evaluate, "load_pairs", hand_made_pairs)
    result = evaluate_checkpoint(path, "test", beam_size=2, progress=False)
    assert asked == [("test", "en", "de")]  # the checkpoint's own language pair
    assert result.sources == [s for s, _ in pairs] and result.references == [t for _, t in pairs]
    assert result.hypotheses == translate(load_checkpoint(path), result.sources, beam_size=2, src_lang="en")
    assert result.bleu == pytest.approx(sacre_bleu(result.hypotheses, result.references)[0].score)
    assert result.length_penalty == config.length_penalty  # the checkpoint's α unless one is given
    longer = evaluate_checkpoint(path, "test", beam_size=2, progress=False, length_penalty=2.5)
    assert longer.length_penalty == 2.5 and "α 2.5" in longer.summary()
    assert longer.hypotheses == translate(
        load_checkpoint(path), longer.sources, beam_size=2, src_lang="en", length_penalty=2.5
    )

"""Decoding (notebook 09): greedy with and without the key/value cache, beam search, translate.

References are independent of the decoders: one teacher-forced pass of the full model (argmax and
log-probabilities at every position), exhaustive search over every sequence on a tiny vocabulary,
hand-built models whose probabilities are known, and decoding sentences one by one.
"""

import itertools
import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.testing import assert_close

import transformer_course as tc
from transformer_course.data import BOS, EOS, PAD, UNK, Vocab, collate, toy_pairs
from transformer_course.decode import (
    beam_search,
    gnmt_length_penalty,
    greedy_decode,
    output_limit,
    score_sequences,
    translate,
)

from helpers import random_model, random_src


def teacher_forced_log_probs(model, src, src_mask, tokens):
    """log-probabilities of the next word at every position of ``tokens``, from one full pass."""
    tgt_in = tokens[:, :-1]  # (B, T)
    hidden = model(src, tgt_in, src_mask, tc.subsequent_mask(tgt_in.size(1)))  # (B, T, d_model)
    return model.generator(hidden).log_softmax(-1)  # (B, T, V)


def exhaustive_scores(model, src, src_mask, outputs, alpha):
    """GNMT scores log P(Y) / ((5 + |Y|) / 6)^α of every output in ``outputs`` (word lists, no <s>),
    from one teacher-forced pass over all of them."""
    width = max(len(words) for words in outputs)
    tokens = torch.tensor([[BOS, *words] + [PAD] * (width - len(words)) for words in outputs])  # (C, 1 + width)
    many = src.expand(len(outputs), -1)  # (C, S)
    log_p = teacher_forced_log_probs(model, many, src_mask, tokens)  # (C, width, V)
    scores = []
    for c, words in enumerate(outputs):
        log_prob = sum(log_p[c, i, w].item() for i, w in enumerate(words))
        scores.append(log_prob / ((5 + len(words)) / 6) ** alpha)
    return scores


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """These models are tiny: one thread is faster than two on a shared machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


# ---------------------------------------------------------------------------------------------------
# Greedy decoding


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-LN", "pre-LN"])
def test_greedy_with_cache_equals_greedy_without_cache(norm_first):
    model = random_model(norm_first)
    src, src_mask = random_src([7, 3, 5, 6, 2, 7])
    cached = greedy_decode(model, src, src_mask, 20, BOS, EOS, use_cache=True, return_result=True)
    full = greedy_decode(model, src, src_mask, 20, BOS, EOS, use_cache=False, return_result=True)
    assert torch.equal(cached.tokens, full.tokens)
    assert_close(cached.logits, full.logits)
    assert_close(cached.log_probs, full.log_probs)
    assert torch.equal(cached.lengths, full.lengths)
    ended = (cached.tokens == EOS).any(1)
    assert 0 < ended.sum() < len(ended), "the test should see sentences that end and sentences that do not"


def test_greedy_picks_the_argmax_of_the_full_model_at_every_position():
    model = random_model()
    src, src_mask = random_src([7, 3, 5, 6])
    tokens = greedy_decode(model, src, src_mask, 15, BOS, EOS)  # (B, T)
    argmax = teacher_forced_log_probs(model, src, src_mask, tokens).argmax(-1)  # (B, T - 1)
    for row, best in zip(tokens.tolist(), argmax.tolist()):
        words = row[1:]
        n = words.index(EOS) + 1 if EOS in words else len(words)
        assert words[:n] == best[:n]
        assert all(w == PAD for w in words[n:])
    assert tokens[:, 0].eq(BOS).all()


def test_greedy_log_probs_are_the_sum_over_generated_words():
    model = random_model(seed=3)
    src, src_mask = random_src([4, 6, 2])
    result = greedy_decode(model, src, src_mask, 12, BOS, EOS, return_result=True)
    log_p = teacher_forced_log_probs(model, src, src_mask, result.tokens)  # (B, T, V)
    for b, row in enumerate(result.tokens.tolist()):
        words = row[1:]
        n = words.index(EOS) + 1 if EOS in words else len(words)
        assert result.lengths[b].item() == n
        assert_close(result.log_probs[b], sum(log_p[b, i, w] for i, w in enumerate(words[:n])))


def test_greedy_without_end_symbol_generates_max_len_minus_one_words():
    model = random_model()
    src, src_mask = random_src([5, 3])
    tokens = greedy_decode(model, src, src_mask, 9, BOS, end_symbol=None)
    assert tokens.shape == (2, 9)


def test_greedy_stops_the_batch_when_every_sentence_has_ended():
    model = random_model(eos_bias=30.0)  # </s> is always the most likely word
    src, src_mask = random_src([5, 3])
    tokens = greedy_decode(model, src, src_mask, 30, BOS, EOS)
    assert tokens.tolist() == [[BOS, EOS], [BOS, EOS]]


@pytest.mark.parametrize("use_cache", [True, False])
def test_greedy_batch_equals_one_sentence_at_a_time(use_cache):
    model = random_model(seed=5)
    lengths = [7, 2, 5, 4]
    src, src_mask = random_src(lengths)
    batch = greedy_decode(model, src, src_mask, 15, BOS, EOS, use_cache=use_cache, return_result=True)
    for b, n in enumerate(lengths):
        one = greedy_decode(model, src[b : b + 1, :n], None, 15, BOS, EOS, use_cache=use_cache, return_result=True)
        width = one.tokens.size(1)
        assert torch.equal(batch.tokens[b, :width], one.tokens[0])
        assert batch.tokens[b, width:].eq(PAD).all()
        assert_close(batch.log_probs[b], one.log_probs[0])


# ---------------------------------------------------------------------------------------------------
# A model trained on the copy task (trained here, in a few seconds, with a plain loop)


@pytest.fixture(scope="module")
def copy_model():
    torch.manual_seed(0)
    vocab = 12
    model = tc.make_model(vocab, vocab, N=1, d_model=32, d_ff=64, h=4, dropout=0.0, max_len=40)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2, betas=(0.9, 0.98), eps=1e-9)
    steps, batch_size = 250, 32
    pairs = toy_pairs("copy", steps * batch_size, vocab_size=vocab, min_len=1, max_len=6, seed=0)
    model.train()
    for step in range(steps):
        batch = collate(pairs[step * batch_size : (step + 1) * batch_size])
        hidden = model(batch.src, batch.tgt_in, batch.src_mask, batch.tgt_mask)  # (B, T, d_model)
        loss = F.cross_entropy(model.generator(hidden).flatten(0, 1), batch.tgt_out.flatten(), ignore_index=PAD)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return model.eval()


def copy_batch(n=16, seed=7):
    pairs = toy_pairs("copy", n, vocab_size=12, min_len=1, max_len=6, seed=seed)
    batch = collate(pairs)
    return batch.src, batch.src_mask, [s for s, _ in pairs]


@pytest.mark.slow
def test_trained_copy_model_greedy_with_cache_equals_without(copy_model):
    src, src_mask, sources = copy_batch()
    cached = greedy_decode(copy_model, src, src_mask, 12, BOS, EOS, use_cache=True, return_result=True)
    full = greedy_decode(copy_model, src, src_mask, 12, BOS, EOS, use_cache=False, return_result=True)
    assert torch.equal(cached.tokens, full.tokens)
    assert_close(cached.logits, full.logits)
    assert_close(cached.log_probs, full.log_probs)
    # The equalities above are the test; this only shows the model is trained (an untrained one copies none),
    # with a margin no CPU's rounding of the training run can eat (15 of 16 here).
    copies = sum(row[1:].tolist()[: len(s) + 1] == [*s, EOS] for row, s in zip(cached.tokens, sources))
    assert copies >= 8, f"the toy model should copy most sentences, copied {copies} of 16"


@pytest.mark.slow
def test_trained_copy_model_beam_with_cache_equals_teacher_forced_scores(copy_model):
    src, src_mask, _ = copy_batch(8, seed=8)
    result = beam_search(copy_model, src, src_mask, 12, BOS, EOS, beam_size=4, n_best=4, return_result=True)
    for j in range(4):
        log_probs, lengths = score_sequences(copy_model, src, src_mask, result.tokens[:, j], EOS)
        assert_close(result.log_probs[:, j], log_probs)
        assert torch.equal(result.lengths[:, j], lengths)


# ---------------------------------------------------------------------------------------------------
# Beam search


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-LN", "pre-LN"])
def test_beam_scores_equal_an_independent_rescoring_of_its_outputs(norm_first):
    """If the cache followed the wrong beams, the words and their reported log P would disagree."""
    model = random_model(norm_first, seed=11)
    src, src_mask = random_src([6, 3, 7, 5])
    result = beam_search(model, src, src_mask, 14, BOS, EOS, beam_size=4, n_best=3, return_result=True)
    for j in range(3):
        tokens = result.tokens[:, j]  # (B, T)
        log_p = teacher_forced_log_probs(model, src, src_mask, tokens)  # (B, T - 1, V)
        for b, row in enumerate(tokens.tolist()):
            n = result.lengths[b, j].item()
            expected = sum(log_p[b, i, w] for i, w in enumerate(row[1 : n + 1]))
            assert_close(result.log_probs[b, j], expected)
            assert_close(result.scores[b, j], expected / ((5 + n) / 6) ** 0.6)
            assert all(w == PAD for w in row[n + 1 :])
    assert (result.scores[:, :-1] >= result.scores[:, 1:]).all(), "n-best must come best first"


@pytest.mark.parametrize("alpha", [0.0, 0.6])
def test_beam_size_one_and_no_length_penalty_equals_greedy(alpha):
    model = random_model(seed=2)
    src, src_mask = random_src([6, 3, 7, 5, 4])
    greedy = greedy_decode(model, src, src_mask, 16, BOS, EOS, return_result=True)
    beam = beam_search(model, src, src_mask, 16, BOS, EOS, beam_size=1, length_penalty=alpha, return_result=True)
    greedy_scores = greedy.log_probs / gnmt_length_penalty(greedy.lengths, alpha)
    if alpha == 0.0:  # the same search
        assert torch.equal(beam.best, greedy.tokens[:, : beam.best.size(1)])
        assert_close(beam.log_probs[:, 0], greedy.log_probs)
    else:  # a beam of one may go on after greedy stops (a longer sentence can score more), never worse
        assert (beam.scores[:, 0] >= greedy_scores - 1e-5).all()


@pytest.mark.parametrize("alpha", [0.0, 0.6, 1.5])
@pytest.mark.parametrize("max_words, beam_size", [(2, 6), (3, 30)], ids=["beam=vocab", "beam=vocab*(vocab-1)"])
def test_wide_beam_finds_the_exhaustive_best(alpha, max_words, beam_size):
    """Vocabulary of 6 (4 specials + 2 words). A beam as wide as the vocabulary holds every prefix of one
    word; with up to 3 words it needs 6·5 to hold every prefix of two. Then beam search is exact."""
    vocab = 6
    model = random_model(vocab=vocab, seed=4, eos_bias=0.0, suppress_specials=False)
    src, src_mask = random_src([3], vocab=vocab)
    outputs = []  # every output: words without </s> then </s>, or max_words words without </s>
    for n in range(1, max_words + 1):
        for words in itertools.product(range(vocab), repeat=n):
            if EOS not in words[:-1] and (n == max_words or words[-1] == EOS):
                outputs.append(list(words))
    scores = exhaustive_scores(model, src, src_mask, outputs, alpha)
    candidates = sorted(zip(scores, outputs), key=lambda c: -c[0])
    result = beam_search(
        model,
        src,
        src_mask,
        max_words + 1,
        BOS,
        EOS,
        beam_size=beam_size,
        length_penalty=alpha,
        n_best=3,
        return_result=True,
    )
    for j in range(3):
        score, words = candidates[j]
        assert result.tokens[0, j, 1 : len(words) + 1].tolist() == words
        assert_close(result.scores[0, j].item(), score, rtol=1e-5, atol=1e-5)


def test_beam_finds_a_better_score_than_greedy_on_random_models():
    """Not a theorem for beam > 1 (pruning can drop greedy's path), but it holds on these models."""
    for seed in range(4):
        model = random_model(seed=seed)
        src, src_mask = random_src([6, 3, 7, 5, 4, 8], seed=seed)
        greedy = greedy_decode(model, src, src_mask, 16, BOS, EOS)
        beam = beam_search(model, src, src_mask, 16, BOS, EOS, beam_size=4, length_penalty=0.6)
        scores = []
        for tokens in (greedy, beam):
            log_probs, lengths = score_sequences(model, src, src_mask, tokens, EOS)
            scores.append(log_probs / gnmt_length_penalty(lengths, 0.6))
        assert (scores[1] >= scores[0] - 1e-5).all()


def test_beam_batch_equals_one_sentence_at_a_time():
    model = random_model(seed=6)
    lengths = [7, 2, 5, 4, 6]
    src, src_mask = random_src(lengths, seed=6)
    batch = beam_search(model, src, src_mask, 15, BOS, EOS, beam_size=3, n_best=2, return_result=True)
    for b, n in enumerate(lengths):
        one = beam_search(model, src[b : b + 1, :n], None, 15, BOS, EOS, beam_size=3, n_best=2, return_result=True)
        width = one.tokens.size(2)
        assert torch.equal(batch.tokens[b, :, :width], one.tokens[0])
        assert batch.tokens[b, :, width:].eq(PAD).all()
        assert_close(batch.scores[b], one.scores[0])


# ---------------------------------------------------------------------------------------------------
# Hand-built models: next-word probabilities set by hand


class BigramModel(nn.Module):
    """The model's interface (encode, decode, generator, new_cache) around a table: P(next | previous word).

    ``decode`` returns one-hot rows of the input words; ``generator`` maps them to log P from the table.
    """

    class Cache:
        def __init__(self):
            self.length = 0

        def __len__(self):
            return self.length

        def reorder(self, index):
            pass  # a bigram model keeps nothing about the past

    def __init__(self, probabilities: dict[int, dict[int, float]], vocab: int = 8):
        super().__init__()
        table = torch.full((vocab, vocab), 1e-9)  # (previous, next)
        for previous, row in probabilities.items():
            for word, p in row.items():
                table[previous, word] = p
        self.tgt_vocab = vocab
        self.log_table = table.log()
        self.eval()

    def encode(self, src, src_mask):
        return torch.zeros(src.size(0), src.size(1), 1)  # (B, S, 1): nothing depends on the source

    def decode(self, memory, src_mask, tgt, tgt_mask, cache=None):
        if cache is not None:
            cache.length += tgt.size(1)
        return F.one_hot(tgt, self.tgt_vocab).float()  # (B, T, vocab)

    def generator(self, hidden):
        return hidden @ self.log_table  # (B, T, vocab): the row of the previous word

    def new_cache(self):
        return self.Cache()


A, B_, C, D = 4, 5, 6, 7  # word ids of the hand-built models


def test_hand_built_model_where_greedy_is_worse_than_beam():
    # <s> → a 0.55, b 0.45; a → c 0.34, d 0.33, </s> 0.33; b, c, d → </s> 1.
    model = BigramModel(
        {BOS: {A: 0.55, B_: 0.45}, A: {C: 0.34, D: 0.33, EOS: 0.33}, B_: {EOS: 1.0}, C: {EOS: 1.0}, D: {EOS: 1.0}}
    )
    src = torch.tensor([[A, B_]])
    greedy = greedy_decode(model, src, None, 6, BOS, EOS, return_result=True)
    beam = beam_search(model, src, None, 6, BOS, EOS, beam_size=2, length_penalty=0.6, return_result=True)
    assert greedy.tokens.tolist() == [[BOS, A, C, EOS]]
    assert beam.best.tolist() == [[BOS, B_, EOS]]
    assert_close(greedy.log_probs, torch.tensor([math.log(0.55 * 0.34)]))
    assert_close(beam.log_probs[:, 0], torch.tensor([math.log(0.45)]))
    assert_close(beam.scores[:, 0], torch.tensor([math.log(0.45) / (7 / 6) ** 0.6]))
    assert beam.scores[0, 0] > math.log(0.55 * 0.34) / (8 / 6) ** 0.6


def test_beam_keeps_searching_while_an_open_hypothesis_can_beat_a_finished_one():
    # <s> → </s> 0.4, a 0.6; a → </s> 0.9: "</s>" finishes first, "a </s>" (0.54) beats it a step later.
    model = BigramModel({BOS: {EOS: 0.4, A: 0.6}, A: {EOS: 0.9, C: 0.1}, C: {EOS: 1.0}})
    beam = beam_search(
        model, torch.tensor([[A]]), None, 6, BOS, EOS, beam_size=2, length_penalty=0.0, return_result=True
    )
    assert beam.best.tolist() == [[BOS, A, EOS]]
    assert_close(beam.log_probs[:, 0], torch.tensor([math.log(0.54)]))


def test_beam_keeps_an_early_finished_hypothesis_that_later_ones_do_not_beat():
    # <s> → </s> 0.5, a 0.5; a → c 0.9; c → </s> 0.9: "</s>" (0.5) beats "a c </s>" (0.405).
    model = BigramModel({BOS: {EOS: 0.5, A: 0.5}, A: {C: 0.9, EOS: 0.1}, C: {EOS: 0.9, D: 0.1}, D: {EOS: 1.0}})
    beam = beam_search(
        model, torch.tensor([[A]]), None, 8, BOS, EOS, beam_size=2, length_penalty=0.0, n_best=2, return_result=True
    )
    assert beam.tokens[0].tolist() == [[BOS, EOS, PAD, PAD], [BOS, A, C, EOS]]
    assert_close(beam.log_probs[0], torch.tensor([math.log(0.5), math.log(0.5 * 0.9 * 0.9)]))


# ---------------------------------------------------------------------------------------------------
# Errors a learner can act on


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(max_len=1), "max_len counts <s>"),
        (dict(max_len=65), "longer than the model's positional table"),
        (dict(beam_size=0), "beam_size must be a positive integer"),
        (dict(n_best=5), "n_best must be an integer between 1 and beam_size=4"),
        (dict(end_symbol=None), "beam_search needs an end_symbol"),
        (dict(end_symbol=20), "end_symbol=20 is not a target word id"),
    ],
)
def test_beam_search_bad_arguments_are_clear_errors(kwargs, message):
    model = random_model()
    src, src_mask = random_src([3, 2])
    args = dict(max_len=10, start_symbol=BOS, end_symbol=EOS) | kwargs
    with pytest.raises(ValueError, match=message):
        beam_search(model, src, src_mask, **args)


def test_decoding_one_dimensional_source_is_a_clear_error():
    model = random_model()
    with pytest.raises(ValueError, match=r"src.unsqueeze\(0\)"):
        greedy_decode(model, torch.tensor([4, 5, 6]), None, 10, BOS, EOS)


def test_decoding_a_model_in_training_mode_warns():
    model = random_model().train()
    src, src_mask = random_src([3])
    with pytest.warns(UserWarning, match="call model.eval"):
        greedy_decode(model, src, src_mask, 5, BOS, EOS)


# ---------------------------------------------------------------------------------------------------
# translate: text in, text out


WORDS = Vocab(["<pad>", "<unk>", "<s>", "</s>"] + [f"w{i}" for i in range(4, 12)])  # the copy model's words


def as_text(ids):
    return " ".join(f"w{i}" for i in ids)


def reference_translation(model, ids, beam_size=1):
    """The decoders called directly on ids, mapped back to words by hand."""
    src = torch.tensor([ids])  # (1, S)
    max_len = min(len(ids) + 50 + 1, model.config.max_len)  # <s> + source length + 50, within the table
    if beam_size == 1:
        out = greedy_decode(model, src, None, max_len, BOS, EOS)[0].tolist()
    else:
        out = beam_search(model, src, None, max_len, BOS, EOS, beam_size, 0.6)[0].tolist()
    words = out[1 : out.index(EOS)] if EOS in out else out[1:]
    return " ".join(WORDS.itos[i] for i in words)


@pytest.mark.slow
@pytest.mark.parametrize("beam_size", [1, 4])
def test_translate_equals_the_decoders_on_ids_and_copies(copy_model, beam_size):
    _, _, sources = copy_batch(12, seed=9)
    texts = [as_text(s) for s in sources]
    out = translate(copy_model, texts, beam_size=beam_size, src_vocab=WORDS, tgt_vocab=WORDS)
    assert out == [reference_translation(copy_model, s, beam_size) for s in sources]  # exact: the test
    assert sum(o == t for o, t in zip(out, texts)) >= 6  # a trained model (10 of 12 here), with a margin


@pytest.mark.slow
def test_translate_of_a_list_equals_one_sentence_at_a_time(copy_model):
    _, _, sources = copy_batch(8, seed=10)
    texts = [as_text(s) for s in sources]
    together = translate(copy_model, texts, beam_size=3, src_vocab=WORDS, tgt_vocab=WORDS, batch_size=3)
    assert together == [translate(copy_model, [t], beam_size=3, src_vocab=WORDS, tgt_vocab=WORDS)[0] for t in texts]


@pytest.mark.slow
def test_translate_empty_input_gives_empty_output(copy_model):
    assert translate(copy_model, [], src_vocab=WORDS, tgt_vocab=WORDS) == []
    out = translate(copy_model, ["", "w4 w5", "   "], src_vocab=WORDS, tgt_vocab=WORDS)
    assert out[0] == "" and out[2] == "" and out[1] == reference_translation(copy_model, [4, 5])


@pytest.mark.slow
def test_translate_maps_unknown_words_to_unk(copy_model):
    out = translate(copy_model, ["w4 zebra w6 w7"], src_vocab=WORDS, tgt_vocab=WORDS)
    assert out == [reference_translation(copy_model, [4, UNK, 6, 7])]


@pytest.mark.slow
def test_translate_max_len_limits_the_output_tokens(copy_model):
    out = translate(copy_model, ["w4 w5 w6 w7 w8 w9"], max_len=3, src_vocab=WORDS, tgt_vocab=WORDS)
    assert out == ["w4 w5 w6"]  # three tokens and no room for </s>


@pytest.mark.slow
def test_translate_input_longer_than_the_positional_table_is_a_clear_error(copy_model):
    too_long = as_text([4] * 41)  # the copy model's table holds 40 positions
    with pytest.raises(ValueError, match="sentence 1 has 41 tokens but the model's positional table holds 40"):
        translate(copy_model, ["w4", too_long], src_vocab=WORDS, tgt_vocab=WORDS)


@pytest.mark.slow
def test_translate_a_model_without_vocabularies_is_a_clear_error(copy_model):
    with pytest.raises(ValueError, match="pass src_vocab= and tgt_vocab="):
        translate(copy_model, ["w4"])
    with pytest.raises(TypeError, match=r"translate\(model, \[text\]\)"):
        translate(copy_model, "w4 w5", src_vocab=WORDS, tgt_vocab=WORDS)


@pytest.mark.slow
def test_translate_from_a_checkpoint_uses_its_vocabularies(copy_model, tmp_path):
    from transformer_course.checkpoint import load_checkpoint, save_checkpoint

    path = save_checkpoint(tmp_path / "copy.pt", copy_model, copy_model.config, WORDS, WORDS)
    texts = ["w4 w5 w6", "w7 w8", "w9 w10 w11 w4"]
    expected = translate(copy_model, texts, beam_size=2, src_vocab=WORDS, tgt_vocab=WORDS)
    assert translate(path, texts, beam_size=2) == expected
    assert translate(load_checkpoint(path), texts, beam_size=2) == expected


def test_a_model_built_from_its_architecture_alone_translates_with_the_papers_length_penalty():
    """A model built from a ModelConfig has no run config: beam search takes α = 0.6 (§6.1, Config's default)."""
    from transformer_course.data import toy_vocab
    from transformer_course.model import ModelConfig, build_model

    assert tc.Config().length_penalty == 0.6

    torch.manual_seed(0)
    model = build_model(ModelConfig(N=1, d_model=16, d_ff=32, h=2, dropout=0.0, max_len=64), 14, 14).eval()
    vocab = toy_vocab(14)
    beam = translate(model, ["4 5 6"], beam_size=2, src_vocab=vocab, tgt_vocab=vocab)
    assert beam == translate(model, ["4 5 6"], beam_size=2, length_penalty=0.6, src_vocab=vocab, tgt_vocab=vocab)


def test_the_output_limit_is_the_papers_source_length_plus_50_within_the_positional_table():
    assert output_limit(7, None, 5000) == 7 + 50 + 1  # §6.1: input length + 50 words, and <s>
    assert output_limit(7, 10, 5000) == 10 + 1  # max_len words, and <s>
    assert output_limit(7, None, 40) == 40  # never past the positions the model holds

"""The decoders' fast path (notebook 09's package side): the same words as the readable algorithms, token for token.

``greedy_decode`` (tokens with the cache) and ``beam_search`` drop finished sentences from the batch, write the
self-attention cache in place and reorder only what moves. The references here are the slow, readable ones: the
greedy loop without the cache one sentence at a time, and a beam search over Python lists that re-runs the full
model on every prefix (the algorithm ``beam_search`` documents, written out as notebook 09 traces it).
"""

import pytest
import torch

from transformer_course.attention import KVCache
from transformer_course.data import BOS, EOS, PAD, Vocab
from transformer_course.decode import beam_search, decode_sentences, gnmt_length_penalty, greedy_decode
from transformer_course.masks import subsequent_mask

from helpers import random_model, random_src

LENGTHS = [1, 12, 3, 25, 7, 2, 18, 5]  # one padded batch of very different source lengths


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def next_log_probs(model, src, prefix):
    """log P(next word | prefix) (V,) for one sentence, from the full model over the whole prefix (no cache)."""
    tgt = torch.tensor([prefix])  # (1, t)
    hidden = model(src, tgt, None, subsequent_mask(len(prefix)))  # (1, t, d_model)
    return model.generator(hidden[:, -1]).log_softmax(dim=-1)[0]  # (V,)


def reference_beam(model, src, max_len, k, alpha):
    """One sentence, the beam of ``beam_search`` over lists: the k best extensions by log P are its choices (those
    ending in </s> finish, scored log P / lp), the k best that do not end go on; at max_len every extension ends;
    stop when no open prefix can beat the best finished one."""
    lp = lambda n: gnmt_length_penalty(n, alpha)
    longest = max_len - 1
    beam, best = [([BOS], 0.0)], (None, float("-inf"))  # open (prefix, log P); best finished (tokens, score)
    for t in range(1, max_len):
        candidates = []
        for prefix, log_p in beam:
            step = next_log_probs(model, src, prefix)
            candidates += [(prefix + [w], log_p + step[w].item()) for w in range(step.size(0))]
        candidates.sort(key=lambda c: -c[1])
        ending = candidates if t == longest else [c for c in candidates[:k] if c[0][-1] == EOS]
        for tokens, log_p in ending:
            if log_p / lp(t) > best[1]:
                best = (tokens, log_p / lp(t))
        if t == longest:
            break
        beam = [c for c in candidates if c[0][-1] != EOS][:k]
        if best[1] >= beam[0][1] / max(lp(t + 1), lp(longest)):
            break
    return best[0]


def words(row):
    """A decoder's output row without its padding."""
    return [w for w in row if w != PAD]


@pytest.mark.parametrize("seed", [0, 3, 4])
def test_greedy_equals_the_readable_greedy_one_sentence_at_a_time(seed):
    model = random_model(seed=seed)
    src, src_mask = random_src(LENGTHS, seed=seed)
    fast = greedy_decode(model, src, src_mask, 30, BOS, EOS)  # (B, ≤ 30): the fast path
    readable = greedy_decode(model, src, src_mask, 30, BOS, EOS, return_result=True).tokens  # every row to the end
    assert torch.equal(fast, readable)
    for b, n in enumerate(LENGTHS):
        one = greedy_decode(model, src[b : b + 1, :n], None, 30, BOS, EOS, use_cache=False)  # (1, ≤ 30)
        assert words(fast[b].tolist()) == words(one[0].tolist())
    lengths = {len(words(row)) for row in fast.tolist()}
    assert len(lengths) > 2, f"sentences should leave the batch at different steps, got lengths {lengths}"


def test_greedy_without_end_symbol_gives_every_sentence_max_len_minus_one_words():
    model = random_model()
    src, src_mask = random_src(LENGTHS)
    fast = greedy_decode(model, src, src_mask, 12, BOS, None)
    assert torch.equal(fast, greedy_decode(model, src, src_mask, 12, BOS, None, use_cache=False))
    assert fast.shape == (len(LENGTHS), 12)


@pytest.mark.parametrize("alpha", [0.0, 0.6])
@pytest.mark.parametrize("seed", [0, 4])
def test_beam_equals_the_readable_beam_one_sentence_at_a_time(seed, alpha):
    model = random_model(seed=seed, eos_bias=3.0)
    src, src_mask = random_src(LENGTHS, seed=seed)
    out = beam_search(model, src, src_mask, 24, BOS, EOS, beam_size=4, length_penalty=alpha)  # (B, ≤ 24)
    lengths = [len(words(row)) for row in out.tolist()]
    assert len(set(lengths)) > 2, f"the sentences should finish at different steps, got lengths {lengths}"
    for b, n in enumerate(LENGTHS):
        assert words(out[b].tolist()) == reference_beam(model, src[b : b + 1, :n], 24, 4, alpha), f"sentence {b}"


def test_beam_n_best_of_a_batch_equals_each_sentence_alone():
    """Sentences leave the batch when they are done; the ones that stay must not notice."""
    model = random_model(seed=0, eos_bias=3.0)
    src, src_mask = random_src(LENGTHS, seed=0)
    batch = beam_search(model, src, src_mask, 20, BOS, EOS, beam_size=4, n_best=3, return_result=True)
    for b, n in enumerate(LENGTHS):
        one = beam_search(model, src[b : b + 1, :n], None, 20, BOS, EOS, beam_size=4, n_best=3, return_result=True)
        width = one.tokens.size(2)
        assert torch.equal(batch.tokens[b, :, :width], one.tokens[0])
        assert batch.tokens[b, :, width:].eq(PAD).all()
        torch.testing.assert_close(batch.scores[b], one.scores[0])
        assert torch.equal(batch.lengths[b], one.lengths[0])


def test_sentences_of_many_lengths_decode_as_each_alone_in_the_input_order():
    """``translate`` (``decode_sentences``) groups sentences by length and puts the results back in order."""
    model = random_model(seed=7, vocab=30, eos_bias=2.0)
    names = [f"w{i}" for i in range(26)]
    vocab = Vocab.build([names], min_freq=1)
    sentences = [" ".join(names[(3 * i + j) % 26] for j in range(n)) for i, n in enumerate([9, 2, 14, 2, 5, 21, 1])]
    for beam in (1, 4):
        decoded = decode_sentences(model, vocab, sentences, beam_size=beam, max_len=20, length_penalty=0.6)
        for tokens, ids in decoded:
            src = torch.tensor([vocab.encode(tokens)])  # (1, S)
            if beam == 1:
                expected = greedy_decode(model, src, None, 21, BOS, EOS, use_cache=False)[0].tolist()
            else:
                expected = reference_beam(model, src, 21, 4, 0.6)
            assert words(ids) == words(expected), (beam, tokens)
        assert [len(tokens) for tokens, _ in decoded] == [9, 2, 14, 2, 5, 21, 1]


def test_a_buffered_cache_holds_what_the_concatenating_cache_holds():
    plain, buffered = KVCache(), KVCache(buffered=True)
    g = torch.Generator().manual_seed(0)
    batch = 6
    for step in range(40):  # past the first room (16) and its doubling
        key, value = torch.randn(2, batch, 2, 1, 4, generator=g)  # 2 × (B, h, 1, d_k)
        for cache in (plain, buffered):
            got = cache.update(key, value)
        assert all(torch.equal(a, b) for a, b in zip(got, (plain.key, plain.value)))
        if step % 7 == 3:  # beams reordered, and a sentence dropped
            index = torch.randperm(batch, generator=g)[: batch - 1]
            plain.reorder(index)
            buffered.reorder(index)
            batch -= 1
        assert len(buffered) == len(plain) == step + 1
        assert torch.equal(buffered.key, plain.key) and torch.equal(buffered.value, plain.value)


def test_beam_reorders_only_self_attention_within_a_sentence():
    model = random_model()
    cache = model.new_cache(buffered=True)
    src, src_mask = random_src([4, 4])
    memory = model.encode(src, src_mask).repeat_interleave(2, dim=0)  # (4, S, d_model): 2 beams each
    with torch.no_grad():
        model.decode(memory, src_mask.repeat_interleave(2, dim=0), torch.full((4, 1), BOS), None, cache)
    cross = cache.layers[0].cross_attn.key.clone()
    self_keys = cache.layers[0].self_attn.key.clone()
    cache.reorder(torch.tensor([1, 1, 2, 3]), cross_attention=False)
    assert torch.equal(cache.layers[0].cross_attn.key, cross)
    assert torch.equal(cache.layers[0].self_attn.key, self_keys[[1, 1, 2, 3]])


READS = ("item", "tolist", "nonzero", "__bool__", "__int__", "__float__", "__index__")  # each waits for the device


@pytest.mark.parametrize("beam_size", [1, 4])
def test_each_step_reads_one_number_back_from_the_device(beam_size, monkeypatch):
    """The stop test (which sentences go on) is the decoder's one host sync of a step; a GPU runs ahead otherwise.
    The embeddings' check that token ids are in the vocabulary (layers.check_token_range) reads the source's and the
    start symbol's ids once; the later steps' ids are the generator's own."""
    model = random_model(seed=0, eos_bias=3.0)
    src, src_mask = random_src(LENGTHS)
    reads, steps = [], []
    for name in READS:
        original = getattr(torch.Tensor, name)

        def counted(self, *args, _original=original, _name=name, **kwargs):
            reads.append(_name)
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(torch.Tensor, name, counted)
    decode = model.decode
    monkeypatch.setattr(model, "decode", lambda *args: steps.append(1) or decode(*args))
    if beam_size == 1:
        greedy_decode(model, src, src_mask, 24, BOS, EOS)
    else:
        beam_search(model, src, src_mask, 24, BOS, EOS, beam_size=beam_size)
    monkeypatch.undo()
    assert len(steps) > 5
    # + 1: the result's width; + 4: the range checks of the source and of the start symbol (a min and a max each)
    assert len(reads) <= len(steps) + 5, f"{len(reads)} reads in {len(steps)} steps: {reads}"

"""Decoding: turning the model's next-word distributions into sentences (notebook 09; paper §6.1).

The model gives, for a source sentence and the target words so far, a distribution over the next
target word. Decoding chooses the words. This module does it three ways, in the order notebook 09
teaches them:

1. :func:`greedy_decode` with ``use_cache=False`` — take the most likely word, append it, run the
   whole decoder again on the longer prefix (what the Annotated Transformer does);
2. :func:`greedy_decode` with ``use_cache=True`` (the default) — *incremental decoding*: each decoder
   layer keeps the keys/values of the positions already decoded (a :class:`~transformer_course.model.
   DecoderCache`), so each step runs the decoder on the one new position only. Same words, same
   scores, far fewer operations;
3. :func:`beam_search` — keep the ``beam_size`` most likely prefixes instead of one, score finished
   sentences with the GNMT length penalty (Wu et al., 2016, §7), batched over sentences × beams.
   The paper (§6.1): "we used beam search with a beam size of 4 and length penalty α = 0.6 …
   We set the maximum output length during inference to input length + 50, but terminate early
   when possible."

and :func:`translate`, text in and text out.

The loops of 1 and 2 are written to be read. The package decodes by a fast path beside them (:func:`greedy_fast`,
which ``greedy_decode`` takes for tokens with the cache, and ``beam_search``): a sentence that is done leaves the
batch, the cache is written in place, and one host sync per step learns which sentences go on. The words are the
same; ``tests/test_decode_fast.py`` decodes with both.

Conventions used throughout:

- ``src`` (batch, src_len) token ids with ``src_mask`` (batch, 1, 1, src_len), True = real token;
- outputs are (batch, length) LongTensors that start with ``start_symbol`` (``<s>``), end with
  ``end_symbol`` (``</s>``) where the sentence ended, and are padded with ``PAD`` after it;
- ``max_len`` counts every output position, ``<s>`` included: at most ``max_len - 1`` words are generated;
- scores are natural-log probabilities; |Y| is the number of generated tokens, ``</s>`` included.
"""

from __future__ import annotations

import contextlib
import math
import numbers
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from .beam import (
    Finished,
    best_extensions,
    cannot_improve,
    ended,
    extend,
    gnmt_length_penalty,
    go_on,
    keep_sentences,
    new_cache,
    start_beams,
)
from .checkpoint import resolve_model
from .config import MAX_BEAM_SIZE, MAX_LENGTH_PENALTY
from .data import BOS, EOS, PAD, detokenize, tokenize_many
from .layers import token_ids_checked
from .masks import padding_mask, subsequent_mask

__all__ = [
    "beam_alpha",
    "check_beam_size",
    "check_decode_args",
    "gnmt_length_penalty",
    "GreedyResult",
    "greedy_decode",
    "score_sequences",
    "BeamResult",
    "beam_search",
    "decode_sentences",
    "output_limit",
    "source_tokens",
    "to_text",
    "translate",
]

# ---------------------------------------------------------------------------------------------------
# Checks shared by the decoders


def check_decode_args(
    model: nn.Module, src: Tensor, src_mask: Tensor | None, max_len: int, start_symbol: int, end_symbol: int | None
) -> None:
    """Raise a ValueError a learner can act on before any decoding work is done."""
    if src.dim() != 2:
        raise ValueError(
            f"src must be token ids of shape (batch, src_len), got shape {tuple(src.shape)}; "
            "for one sentence use src.unsqueeze(0)"
        )
    if src.size(0) == 0 or src.size(1) == 0:
        raise ValueError(
            f"src holds no tokens to decode (shape {tuple(src.shape)}); pass at least one sentence of at least "
            "one token, or skip decoding when there is nothing to translate"
        )
    if src_mask is not None and src_mask.dtype != torch.bool:
        raise ValueError(
            f"src_mask must be boolean (True = real token), got dtype {src_mask.dtype}; "
            "build it with padding_mask(src, PAD)"
        )
    if not _is_int(max_len) or max_len < 2:
        raise ValueError(f"max_len counts <s> too, so it must be an integer >= 2 to generate a word, got {max_len!r}")
    table = positions_of(model)
    if table is not None and max_len > table:
        raise ValueError(
            f"max_len={max_len} is longer than the model's positional table (max_len={table}); "
            f"use max_len <= {table} or build the model with a larger max_len"
        )
    vocab = getattr(model, "tgt_vocab_size", None) or getattr(model, "tgt_vocab", None)  # or a hand-built model's
    for name, symbol in (("start_symbol", start_symbol), ("end_symbol", end_symbol)):
        if symbol is not None and vocab is not None and not 0 <= symbol < vocab:
            raise ValueError(f"{name}={symbol} is not a target word id (the target vocabulary has {vocab} words)")
    if model.training:
        warnings.warn(
            "decoding a model in training mode: dropout is on and results are random; call model.eval() first",
            stacklevel=4,
        )


def check_beam_size(beam_size: int) -> None:
    """A beam of 1 … :data:`~transformer_course.config.MAX_BEAM_SIZE` hypotheses per sentence; its time and
    memory grow linearly with it (the paper decodes with 4, §6.1)."""
    if not _is_int(beam_size) or beam_size < 1:
        raise ValueError(f"beam_size must be a positive integer (1 = greedy), got {beam_size!r}; the paper uses 4")
    if beam_size > MAX_BEAM_SIZE:
        raise ValueError(
            f"beam_size={beam_size} is above {MAX_BEAM_SIZE}, the widest beam this package decodes with (time and "
            f"memory grow with the beam); use beam_size <= {MAX_BEAM_SIZE} — the paper uses 4"
        )


def positions_of(model: nn.Module) -> int | None:
    """The positions the model's table holds (``model_config.max_len``), None for a model without one."""
    return getattr(getattr(model, "model_config", None), "max_len", None)


def beam_alpha(model: nn.Module, given: float | None = None) -> float:
    """The beam's length penalty α: ``given``, else the run's decoding setting (``Config.length_penalty``), else
    the paper's 0.6 for a bare model."""
    return getattr(getattr(model, "config", None), "length_penalty", 0.6) if given is None else given


def check_length_penalty(alpha) -> None:
    """α of the GNMT length penalty: a finite number from 0 to :data:`~transformer_course.config.MAX_LENGTH_PENALTY`
    (NaN, ±inf, a negative or a huge α would rank empty, ``<s>``-only or ``<pad>``-only hypotheses first)."""
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not math.isfinite(alpha):
        raise ValueError(f"length_penalty must be a finite number, got {alpha!r}; the paper uses 0.6 (0 = none)")
    if not 0 <= alpha <= MAX_LENGTH_PENALTY:
        raise ValueError(
            f"length_penalty must be between 0 (no penalty) and {MAX_LENGTH_PENALTY}, got {alpha!r}; the paper uses 0.6"
        )


def check_sentences(sentences: Sequence) -> list[str]:
    """The sentences as a list, each a ``str`` of valid Unicode; anything else is one ValueError naming the item
    (``None``, a number, a lone surrogate — what an invalid UTF-8 byte on the command line becomes)."""
    sentences = list(sentences)
    for i, sentence in enumerate(sentences):
        if not isinstance(sentence, str):
            raise ValueError(
                f"sentence {i} is {sentence!r} ({type(sentence).__name__}), not a str; pass sentences as text"
            )
        try:
            sentence.encode("utf-8")
        except UnicodeEncodeError as err:
            raise ValueError(
                f"sentence {i} is not valid Unicode: {sentence[err.start : err.end]!r} at character {err.start} "
                "(an invalid UTF-8 byte, or half of a surrogate pair); pass UTF-8 text"
            ) from None
    return sentences


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


# ---------------------------------------------------------------------------------------------------
# 1 and 2. Greedy decoding, without and with the key/value cache


@dataclass
class GreedyResult:
    """What :func:`greedy_decode` returns with ``return_result=True``."""

    tokens: Tensor  # (batch, length): <s> w1 w2 … </s> PAD …
    log_probs: Tensor  # (batch,): log P(Y | X), the sum over the generated tokens (</s> included)
    lengths: Tensor  # (batch,): |Y|, the generated tokens (</s> included, <s> and PAD not)
    logits: Tensor  # (batch, length - 1, vocab): the generator's logits at each step


@torch.no_grad()
def greedy_decode(
    model: nn.Module,
    src: Tensor,
    src_mask: Tensor | None,
    max_len: int,
    start_symbol: int,
    end_symbol: int | None = None,
    use_cache: bool = True,
    return_result: bool = False,
) -> Tensor | GreedyResult:
    """Greedy decoding: at each step append the most likely next word, for a whole batch at once.

    A sentence stops at ``end_symbol`` (its later positions are PAD); the loop stops when every
    sentence has stopped or after ``max_len - 1`` words. With ``end_symbol=None`` every sentence gets
    ``max_len - 1`` words.

    ``use_cache=False`` re-runs the decoder over the whole prefix at every step: step t costs t
    positions, O(T²) in all. ``use_cache=True`` feeds only the newest word and lets every layer read
    the earlier keys/values from a cache (cross-attention projects the memory once): O(T) in all,
    the same numbers up to float rounding. Either way only the last position is projected to the
    vocabulary, since only its distribution is used.

    Returns ``tokens`` (batch, ≤ max_len), or a :class:`GreedyResult` with ``return_result=True``. The loop
    below is the readable one (every sentence stays in the batch to the end, so the result has every
    row's logits at every step); for tokens alone with the cache, :func:`greedy_fast` gives the same words faster.
    """
    check_decode_args(model, src, src_mask, max_len, start_symbol, end_symbol)
    if use_cache and not return_result:
        return greedy_fast(model, src, src_mask, max_len, start_symbol, end_symbol)
    batch = src.size(0)
    memory = model.encode(src, src_mask)  # (B, S, d_model), computed once
    ys = torch.full((batch, 1), start_symbol, dtype=torch.long, device=src.device)  # (B, 1): <s>
    log_probs = torch.zeros(batch, device=src.device)  # (B,)
    lengths = torch.zeros(batch, dtype=torch.long, device=src.device)  # (B,)
    finished = torch.zeros(batch, dtype=torch.bool, device=src.device)  # (B,)
    cache = model.new_cache() if use_cache else None
    step_logits = []
    for _ in range(max_len - 1):
        if use_cache:  # the newest word only; the cache holds the keys/values of the others
            hidden = model.decode(memory, src_mask, ys[:, -1:], None, cache)  # (B, 1, d_model)
        else:  # the whole prefix again, with the causal mask
            hidden = model.decode(memory, src_mask, ys, subsequent_mask(ys.size(1), ys.device))  # (B, t, d_model)
        logits = model.generator(hidden[:, -1])  # (B, vocab): the last position only
        step_log_probs = logits.log_softmax(dim=-1)  # (B, vocab)
        next_word = step_log_probs.argmax(dim=-1)  # (B,)
        next_word = next_word.masked_fill(finished, PAD)  # stopped sentences get padding
        word_log_prob = step_log_probs.gather(1, next_word[:, None]).squeeze(1)  # (B,)
        log_probs += word_log_prob.masked_fill(finished, 0.0)
        lengths += (~finished).long()
        ys = torch.cat([ys, next_word[:, None]], dim=1)  # (B, t + 1)
        if return_result:
            step_logits.append(logits)
        if end_symbol is not None:
            finished |= next_word == end_symbol
            if finished.all():
                break
    if not return_result:
        return ys
    return GreedyResult(ys, log_probs, lengths, torch.stack(step_logits, dim=1))  # logits (B, T, vocab)


@torch.no_grad()
def greedy_fast(
    model: nn.Module, src: Tensor, src_mask: Tensor | None, max_len: int, start_symbol: int, end_symbol: int | None
) -> Tensor:
    """:func:`greedy_decode`'s tokens by the package's fast path (after its checks): the same words, less work.

    - a sentence that has said ``end_symbol`` leaves the batch, with its rows of the memory and the cache;
    - the cache is buffered (each step writes its keys/values in place, ``KVCache``);
    - one host sync per step, to learn which sentences go on (none without an ``end_symbol``).
    """
    batch = src.size(0)
    memory = model.encode(src, src_mask)  # (B, S, d_model), computed once
    cache = new_cache(model)
    tokens = torch.full((batch, max_len), PAD, dtype=torch.long, device=src.device)  # (B, max_len)
    tokens[:, 0] = start_symbol
    rows = torch.arange(batch, device=src.device)  # (b,): each open sentence's row in src
    word = tokens[:, :1]  # (b, 1): each open sentence's newest word
    length = max_len
    for t in range(1, max_len):
        # after the first step the words are the generator's argmax, ids of its vocabulary by construction: the
        # embedding's range check (a read-back from the device) runs on the start symbol only
        with token_ids_checked() if t > 1 else contextlib.nullcontext():
            hidden = model.decode(memory, src_mask, word, None, cache)  # (b, 1, d_model)
        next_word = model.generator(hidden[:, -1]).log_softmax(dim=-1).argmax(dim=-1)  # (b,)
        tokens[rows, t] = next_word
        word = next_word[:, None]  # (b, 1)
        if end_symbol is None:
            continue
        keep = (next_word != end_symbol).nonzero().squeeze(1)  # (b',): the one host sync of a step
        if keep.size(0) == 0:
            length = t + 1
            break
        if keep.size(0) < rows.size(0):  # sentences that ended leave the batch
            rows, word = rows[keep], word[keep]  # (b',), (b', 1)
            memory = memory.index_select(0, keep)  # (b', S, d_model)
            if src_mask is not None and src_mask.size(0) > 1:
                src_mask = src_mask.index_select(0, keep)  # (b', 1, 1, S)
            cache.reorder(keep)
    return tokens[:, :length]  # (B, ≤ max_len)


@torch.no_grad()
def score_sequences(
    model: nn.Module, src: Tensor, src_mask: Tensor | None, tokens: Tensor, end_symbol: int | None
) -> tuple[Tensor, Tensor]:
    """log P(Y | X) and |Y| of given outputs, by one teacher-forced pass (no decoding, no cache).

    ``tokens`` (batch, length) as the decoders return them: <s> first, PAD after ``end_symbol``.
    Returns ``log_probs`` (batch,) and ``lengths`` (batch,). Used to compare decoders under one scoring.
    """
    tgt_in, tgt_out = tokens[:, :-1], tokens[:, 1:]  # (B, T), (B, T)
    memory = model.encode(src, src_mask)  # (B, S, d_model)
    hidden = model.decode(memory, src_mask, tgt_in, subsequent_mask(tgt_in.size(1), tokens.device))  # (B, T, d_model)
    log_p = model.generator(hidden).log_softmax(dim=-1)  # (B, T, vocab)
    word_log_p = log_p.gather(2, tgt_out[..., None]).squeeze(2)  # (B, T)
    # A position counts if no end_symbol came before it and it is not padding.
    ended_before = torch.zeros_like(tgt_out, dtype=torch.bool)  # (B, T)
    if end_symbol is not None:
        is_end = (tgt_out == end_symbol).long()  # (B, T)
        ended_before = (is_end.cumsum(dim=1) - is_end) > 0
    counts = ~ended_before & (tgt_out != PAD)  # (B, T)
    return (word_log_p * counts).sum(dim=1), counts.sum(dim=1)


# ---------------------------------------------------------------------------------------------------
# 3. Beam search (paper §6.1; GNMT length penalty, Wu et al. 2016 §7)


@dataclass
class BeamResult:
    """What :func:`beam_search` returns with ``return_result=True``; the n best of each sentence, best first."""

    tokens: Tensor  # (batch, n_best, length): <s> w1 … </s> PAD …
    scores: Tensor  # (batch, n_best): log P(Y | X) / lp(Y), what the search ranks by
    log_probs: Tensor  # (batch, n_best): log P(Y | X)
    lengths: Tensor  # (batch, n_best): |Y|, </s> included

    @property
    def best(self) -> Tensor:
        return self.tokens[:, 0]  # (batch, length)


@torch.no_grad()
def beam_search(
    model: nn.Module,
    src: Tensor,
    src_mask: Tensor | None,
    max_len: int,
    start_symbol: int,
    end_symbol: int,
    beam_size: int = 4,
    length_penalty: float = 0.6,
    n_best: int = 1,
    return_result: bool = False,
) -> Tensor | BeamResult:
    """Beam search over a batch: sentences × beams decode together, one decoder call per step.

    Each sentence keeps ``beam_size`` *open* hypotheses (prefixes without ``</s>``), ranked by
    log P. At each step every open hypothesis is extended by every word; of those candidates:

    - the ``beam_size`` best (by log P) are the beam's choices; a choice that ends in ``</s>``
      becomes a *finished* hypothesis, scored log P / lp(Y) with lp(Y) = ((5 + |Y|) / 6)^α;
    - the ``beam_size`` best that do not end in ``</s>`` are the next open hypotheses (so the beam
      stays full), and the cache rows are reordered to follow them;
    - at ``max_len`` every extension ends, and all of them are candidates.

    The ``n_best`` best finished hypotheses are kept. A sentence is done when none of its open
    hypotheses can beat them any more: log P only falls as words are added, so an open hypothesis
    can at best reach log P_now / max lp over the lengths still allowed. Done sentences no longer
    change, so a sentence's result does not depend on the others in the batch.

    With ``beam_size=1`` and ``length_penalty=0`` this is greedy decoding. (With α > 0 a beam of one
    can go on after greedy would stop, since a longer sentence may score higher; its best score is then
    at least greedy's.)

    Returns the best ``tokens`` (batch, ≤ max_len), or a :class:`BeamResult` with ``return_result=True``.
    """
    check_decode_args(model, src, src_mask, max_len, start_symbol, end_symbol)
    if end_symbol is None:
        raise ValueError("beam_search needs an end_symbol (the id of </s>) to know when a hypothesis is finished")
    check_beam_size(beam_size)
    check_length_penalty(length_penalty)
    if not _is_int(n_best) or not 1 <= n_best <= beam_size:
        raise ValueError(f"n_best must be an integer between 1 and beam_size={beam_size}, got {n_best!r}")
    memory, src_mask, cache, alive, alive_log_probs = start_beams(model, src, src_mask, start_symbol, beam_size)
    finished = Finished.empty(src.size(0), n_best, max_len, src.device)  # of the sentences still searched
    results = Finished.empty(src.size(0), n_best, max_len, src.device)  # of every sentence, in src's order
    rows = torch.arange(src.size(0), device=src.device)  # (b,): each searched sentence's row in src
    longest = max_len - 1  # the most words a hypothesis may have
    for t in range(1, max_len):  # t = |Y| of the hypotheses made at this step
        # after the first step the words come from topk over the generator's vocabulary: the embedding's range
        # check (a read-back from the device) runs on the start symbol only
        with token_ids_checked() if t > 1 else contextlib.nullcontext():
            candidates = extend(model, memory, src_mask, alive, alive_log_probs, cache)  # (b, k, V)
        searched = torch.zeros(rows.size(0), dtype=torch.bool, device=src.device)  # (b,): none is done yet
        best = best_extensions(candidates) if t < longest else None  # (b, 2k): the k choices, then the runners-up
        finished.add(ended(candidates, t, longest, end_symbol, length_penalty, searched, best), alive, t)
        if t == longest:
            break
        alive, alive_log_probs = go_on(candidates, alive, end_symbol, cache, best)
        done = cannot_improve(finished, alive_log_probs, t, longest, length_penalty)  # (b,)
        keep = (~done).nonzero().squeeze(1)  # (b',): the one host sync of a step, to stop or to shrink the batch
        if keep.size(0) < rows.size(0):  # a done sentence no longer changes: its result is final, its rows go
            results.put(rows, finished)
            if keep.size(0) == 0:
                break
            memory, src_mask = keep_sentences(keep, beam_size, memory, src_mask, cache)  # (b'·k, S, d_model)
            finished, rows = finished.select(keep), rows[keep]
            alive, alive_log_probs = alive[keep], alive_log_probs[keep]  # (b', k, t + 1), (b', k)
    results.put(rows, finished)
    result = BeamResult(*results.best_first())
    return result if return_result else result.best


# ---------------------------------------------------------------------------------------------------
# 4. Text in, text out


def source_tokens(
    caller: str, sentences, beam_size, max_len, length_penalty, batch_size, table: int, src_lang: str, tokenizer
) -> list[list[str]]:
    """The checks :func:`decode_sentences` and the CTranslate2 engine (``engine.engine_ids``) make before they
    decode, then each sentence's source tokens (subword pieces with a ``tokenizer``, else spaCy words)."""
    if isinstance(sentences, str):
        raise TypeError(f"{caller} expects a list of sentences, got one string; pass [text]")
    check_beam_size(beam_size)
    if max_len is not None and (not _is_int(max_len) or max_len < 1):
        raise ValueError(
            f"max_len is the most output tokens per sentence and must be a positive integer, got {max_len!r}"
        )
    if not _is_int(batch_size) or batch_size < 1:
        raise ValueError(f"batch_size is the most sentences decoded at once and must be >= 1, got {batch_size!r}")
    check_length_penalty(length_penalty)  # also with beam_size=1, where it is unused: a bad value is a mistake
    sentences = check_sentences(sentences)
    if not sentences:
        return []
    tokens = tokenizer.encode_many(sentences) if tokenizer is not None else tokenize_many(sentences, src_lang)
    for i, words in enumerate(tokens):
        if len(words) > table:
            raise ValueError(
                f"sentence {i} has {len(words)} tokens but the model's positional table holds {table} "
                f"(config.max_len); split it into shorter sentences, or use a model built with max_len >= {len(words)}"
            )
    return tokens


def output_limit(src_len: int, max_len: int | None, table: int) -> int:
    """Output positions for a source of ``src_len`` tokens, ``<s>`` included: ``max_len`` words, or the paper's
    source length + 50, within the positional table."""
    return min((max_len if max_len is not None else src_len + 50) + 1, table)  # + 1 for <s>


def to_text(decoded: list[tuple[list[str], list[int]]], tgt_vocab, tokenizer=None) -> list[str]:
    """Output ids back to text: a subword tokenizer gives the exact text, spaCy words are detokenized."""
    if tokenizer is not None:
        return [tokenizer.decode(out) for _, out in decoded]
    return [detokenize(tgt_vocab.decode(out, strip_specials=True)) for _, out in decoded]


@torch.inference_mode()  # no autograd bookkeeping at all: the ids leave as Python lists
def decode_sentences(
    model: nn.Module,
    src_vocab,
    sentences: Sequence[str],
    beam_size: int = 1,
    max_len: int | None = None,
    length_penalty: float | None = None,
    src_lang: str = "de",
    batch_size: int = 64,
    tokenizer=None,
) -> list[tuple[list[str], list[int]]]:
    """:func:`translate` before it writes text: per sentence, its source tokens and the decoder's output ids.

    The ids are a row of :func:`greedy_decode` / :func:`beam_search`: ``<s> w1 … </s>``, then ``PAD`` up to
    the batch's longest (``[]`` for an empty sentence). The options are :func:`translate`'s; a subword
    ``tokenizer`` splits the source into pieces instead of spaCy words. ``translate``
    and ``viz.translate_and_capture`` both decode through here, so the attention views show the very
    translation ``translate`` gives.
    """
    length_penalty = beam_alpha(model, length_penalty)
    table = positions_of(model)  # positions the model can encode or decode
    args = (beam_size, max_len, length_penalty, batch_size, table)
    tokens = source_tokens("decode_sentences", sentences, *args, src_lang, tokenizer)
    if not tokens:
        return []
    device = next(model.parameters()).device
    ids = [src_vocab.encode(words) for words in tokens]

    was_training = model.training
    model.eval()
    outputs: list[list[int]] = [[] for _ in sentences]
    by_length: dict[int, list[int]] = {}
    for i, sentence_ids in enumerate(ids):
        if sentence_ids:  # empty sentences stay []
            by_length.setdefault(len(sentence_ids), []).append(i)
    try:
        for src_len, members in sorted(by_length.items()):
            limit = output_limit(src_len, max_len, table)
            for start in range(0, len(members), batch_size):
                chunk = members[start : start + batch_size]
                src = torch.tensor([ids[i] for i in chunk], dtype=torch.long, device=device)  # (b, src_len)
                src_mask = padding_mask(src, PAD)  # (b, 1, 1, src_len): all True, equal lengths
                if beam_size == 1:
                    out = greedy_decode(model, src, src_mask, limit, BOS, EOS)  # (b, ≤ limit)
                else:
                    out = beam_search(model, src, src_mask, limit, BOS, EOS, beam_size, length_penalty)  # (b, ≤ limit)
                for i, row in zip(chunk, out.tolist()):
                    outputs[i] = row
    finally:
        model.train(was_training)
    return list(zip(tokens, outputs))


@torch.no_grad()
def translate(
    model_or_checkpoint,
    sentences: Sequence[str],
    beam_size: int = 1,
    max_len: int | None = None,
    length_penalty: float | None = None,
    *,
    src_vocab=None,
    tgt_vocab=None,
    src_lang: str | None = None,
    batch_size: int = 64,
    tokenizer=None,
) -> list[str]:
    """Translate sentences: tokenize, map to ids, decode (greedy for ``beam_size=1``, else beam search), detokenize.

    ``model_or_checkpoint``: a checkpoint path, a loaded :class:`~transformer_course.train.Checkpoint`
    (its vocabularies are used), or a model together with ``src_vocab`` and ``tgt_vocab``.

    - ``src_lang``: the language of the spaCy tokenizer for the source; None takes the checkpoint's own
      (Multi30k: German → English; a bare model counts as German).
    - ``length_penalty``: α of the beam's GNMT length penalty; None takes ``config.length_penalty`` (0.6, the paper's).
    - ``max_len``: the most output tokens per sentence, ``</s>`` included. The default is the paper's
      rule, source length + 50. It is cut to what the positional table holds (``config.max_len - 1``).
    - Sentences are decoded in batches of equal source length (up to ``batch_size``), so each
      sentence gets its own length limit and its result does not depend on the other sentences.
    - A subword checkpoint carries its tokenizer (pieces in, exact text out); ``tokenizer`` is for a bare model.
    - An empty (or all-space) sentence gives ``""``; unknown words become ``<unk>``.
    - A sentence with more tokens than the positional table holds is a ValueError that names it.
    """
    if isinstance(sentences, str):
        raise TypeError("translate expects a list of sentences, got one string; use translate(model, [text])[0]")
    model, src_vocab, tgt_vocab, own_src_lang, _ = resolved = resolve_model(
        model_or_checkpoint, src_vocab, tgt_vocab, tokenizer
    )
    args = (beam_size, max_len, length_penalty, src_lang or own_src_lang, batch_size, resolved.tokenizer)
    return to_text(decode_sentences(model, src_vocab, sentences, *args), tgt_vocab, resolved.tokenizer)

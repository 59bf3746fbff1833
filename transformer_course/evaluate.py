"""Evaluation: corpus BLEU of a trained model on Multi30k (notebook 11; paper §6.1, Table 2).

Two BLEU figures, because published numbers use both:

- **sacreBLEU** (Post, 2018) on detokenized, cased text — the standard, comparable figure; its
  *signature* (``nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:…``) says exactly how it was computed.
  A word-level model's output is detokenized by spacing rules; a subword model's is its tokenizer's exact
  decoding (the pieces joined, ``▁`` back to spaces), both read from the checkpoint.
- **tokenized lowercase BLEU**: both sides split by spaCy, lowercased, scored with
  ``tokenize='none', lowercase=True`` — how many tutorials (e.g. torchtext-era Multi30k notebooks)
  report BLEU, so our number can be compared with theirs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import sacrebleu
from tqdm.auto import tqdm

from .checkpoint import resolve_model
from .data import detokenize, load_pairs, tokenize_many
from .decode import beam_alpha, check_beam_size, check_length_penalty, translate


def sacre_bleu(hypotheses: list[str], references: list[str]) -> tuple[sacrebleu.metrics.BLEUScore, str]:
    """Corpus BLEU of detokenized, cased sentences with sacreBLEU's defaults (13a tokenizer), and the
    signature that says how it was computed (print it next to the score)."""
    _check_lengths(hypotheses, references)
    metric = sacrebleu.metrics.BLEU()
    score = metric.corpus_score(hypotheses, [references])
    return score, str(metric.get_signature())


def tokenized_bleu(hypotheses: list[str], references: list[str], lang: str = "en") -> sacrebleu.metrics.BLEUScore:
    """Corpus BLEU on spaCy tokens, lowercased (``tokenize='none', lowercase=True``)."""
    _check_lengths(hypotheses, references)
    hyp = [" ".join(t) for t in tokenize_many(hypotheses, lang)]
    ref = [" ".join(t) for t in tokenize_many(references, lang)]
    return sacrebleu.corpus_bleu(hyp, [ref], tokenize="none", lowercase=True, force=True)  # tokenized on purpose


def _check_lengths(hypotheses: list[str], references: list[str]) -> None:
    if isinstance(hypotheses, str) or isinstance(references, str):
        raise TypeError("BLEU needs lists of sentences, got a single string; wrap it as [sentence]")
    if len(hypotheses) != len(references):
        raise ValueError(
            f"{len(hypotheses)} translations but {len(references)} references; BLEU pairs them line by line"
        )
    if not hypotheses:
        raise ValueError("BLEU needs at least one sentence, got none")


@dataclass
class EvalResult:
    """BLEU of one checkpoint on one split, with the sentences it was computed from."""

    split: str
    beam_size: int
    bleu: float  # sacreBLEU, detokenized and cased
    signature: str
    tokenized_bleu: float  # spaCy tokens, lowercased
    sources: list[str] = field(repr=False)
    references: list[str] = field(repr=False)
    hypotheses: list[str] = field(repr=False)
    seconds: float = 0.0
    length_penalty: float = 0.6  # α of the beam's length penalty (unused by greedy decoding)

    def summary(self) -> str:
        decoding = "greedy" if self.beam_size == 1 else f"beam {self.beam_size}, α {self.length_penalty:g}"
        return (
            f"{self.split}, {decoding}, {len(self.hypotheses)} sentences, {self.seconds:.0f} s\n"
            f"  sacreBLEU (detokenized, cased): {self.bleu:.2f}   signature: {self.signature}\n"
            f"  tokenized lowercase BLEU (spaCy tokens, tokenize='none', lowercase=True): {self.tokenized_bleu:.2f}"
        )


def evaluate_checkpoint(
    checkpoint,
    split: str = "test_2016_flickr",
    beam_size: int = 1,
    root: str | Path = "data",
    limit: int | None = None,
    batch_size: int = 64,
    progress: bool = True,
    length_penalty: float | None = None,
) -> EvalResult:
    """Translate ``split`` with ``checkpoint`` (a path or a loaded :class:`~transformer_course.checkpoint.Checkpoint`,
    in the checkpoint's own source language) and score it against the references. ``length_penalty``: the beam's
    α; None takes the one the checkpoint's config holds."""
    check_beam_size(beam_size)
    if length_penalty is not None:
        check_length_penalty(length_penalty)
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ValueError(
            f"limit is a number of sentences and must be >= 1 (None: the whole split), got limit={limit!r}"
        )
    resolved = resolve_model(checkpoint)
    length_penalty = beam_alpha(resolved.model, length_penalty)  # the α translate decodes with
    pairs = load_pairs(split, root, src_lang=resolved.src_lang, tgt_lang=resolved.tgt_lang)
    if limit is not None:
        pairs = pairs[:limit]
    sources, references = [s for s, _ in pairs], [t for _, t in pairs]
    start = time.perf_counter()
    hypotheses: list[str] = []
    chunk = 250  # translate in chunks so that the progress bar moves
    with tqdm(total=len(sources), desc=f"translating {split}", unit="sentence", disable=not progress) as bar:
        for first in range(0, len(sources), chunk):
            hypotheses += translate(
                resolved.model,
                sources[first : first + chunk],
                beam_size=beam_size,
                length_penalty=length_penalty,
                src_vocab=resolved.src_vocab,
                tgt_vocab=resolved.tgt_vocab,
                src_lang=resolved.src_lang,
                batch_size=batch_size,
                tokenizer=resolved.tokenizer,  # a subword checkpoint: pieces in, exactly detokenized text out
            )
            bar.update(len(sources[first : first + chunk]))
    seconds = time.perf_counter() - start
    bleu, signature = sacre_bleu(hypotheses, references)
    return EvalResult(
        split,
        beam_size,
        bleu.score,
        signature,
        tokenized_bleu(hypotheses, references, resolved.tgt_lang).score,
        sources,
        references,
        hypotheses,
        seconds,
        length_penalty,
    )


__all__ = ["EvalResult", "evaluate_checkpoint", "sacre_bleu", "tokenized_bleu", "detokenize"]

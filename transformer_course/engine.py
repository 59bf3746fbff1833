"""Translating with CTranslate2, the engine OpenNMT, fairseq and Marian Transformers are served on (notebook 11,
beside notebook 09's decoders; paper §6.1).

    python -m transformer_course export-ct2 runs/multi30k-cpu/best.pt engine/      # the course tool writes engine/
    python -m transformer_course translate --engine ctranslate2 --checkpoint engine/ "Ein Hund läuft."

An export is a CTranslate2 model folder (``model.bin``, ``config.json``, the vocabularies) with :data:`COURSE_FILE`
beside it: the languages, the tokenizer kind, the positions the model holds and the length penalty α. A BPE model's
tokenizer travels as :data:`TOKENIZER_FILE`. Text goes in and comes out through the runtime's own functions
(spaCy words or the subword tokenizer, ``Vocab.decode`` and ``detokenize``), so only the decoder differs from
:func:`transformer_course.decode.translate`. ``ctranslate2`` is imported only when a model is loaded
(the ``[engine]`` extra).

What differs from the course's decoders, measured in ``tests/test_engine_ct2.py``:

- greedy search is the same algorithm: equal tokens up to float rounding (a near-tie can flip);
- CTranslate2's beam ranks a finished hypothesis by log P / |Y|^α (|Y| counts ``</s>``), not by GNMT's
  log P / ((5 + |Y|) / 6)^α (§6.1), which the course uses. So :func:`engine_ids` asks it for its k finished
  hypotheses with their scores and ranks them as the course does (:func:`gnmt_best`: log P is the score · |Y|^α).
  The searches also stop differently: CTranslate2 once k hypotheses and its best open prefix have ended, the
  course once no open prefix can win. With :data:`PATIENCE` 2, CTranslate2 goes on until 2k have ended; on
  test2016 its beam then gives the course's translations (docs/results.md), at some cost in speed.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .beam import gnmt_length_penalty
from .data import BOS, SubwordTokenizer, Vocab

__all__ = [
    "COURSE_FILE",
    "ENGINES",
    "FORMAT",
    "INSTALL_HINT",
    "PATIENCE",
    "TOKENIZER_FILE",
    "EngineModel",
    "engine_ids",
    "gnmt_best",
    "load_engine",
    "translate_with_engine",
]

ENGINES = ("course", "ctranslate2")  # translate --engine: the course's decoders, or CTranslate2
FORMAT = "transformer_course/ct2-v1"  # the "format" entry of COURSE_FILE
COURSE_FILE = "course.json"  # what the course adds to a CTranslate2 model folder
TOKENIZER_FILE = "tokenizer.json"  # a BPE model's SubwordTokenizer.to_json()
INSTALL_HINT = 'the CTranslate2 engine needs the package ctranslate2: pip install -e ".[engine]"'
# CTranslate2's beam stops once k hypotheses have ended and its best open prefix has ended; GNMT's penalty can still
# prefer a longer one. With patience 2 it goes on until 2k have ended: enough for the course's pick to be among them
# on all of test2016 (docs/results.md), at some cost in speed.
PATIENCE = 2


def import_ctranslate2():
    """The ``ctranslate2`` module, or one ValueError that says how to install it."""
    try:
        import ctranslate2
    except ModuleNotFoundError as err:
        if err.name != "ctranslate2":
            raise
        raise ValueError(INSTALL_HINT) from None
    return ctranslate2


@dataclass
class EngineModel:
    """A loaded export: CTranslate2's ``Translator`` and what the course needs around it."""

    translator: object  # ctranslate2.Translator
    src_vocab: Vocab
    tgt_vocab: Vocab
    src_lang: str
    tgt_lang: str
    max_len: int  # positions the model holds, <s> included (ModelConfig.max_len)
    length_penalty: float  # α of the run's config (the paper's 0.6)
    tokenizer: SubwordTokenizer | None  # None: spaCy words
    path: Path


def _not_an_export(folder: Path, why: str) -> ValueError:
    return ValueError(
        f"{folder} is not a CTranslate2 export of a course checkpoint ({why}); make one with: "
        f"python -m transformer_course export-ct2 CHECKPOINT {folder}"
    )


def _vocabularies(folder: Path) -> tuple[Vocab, Vocab]:
    """The source and target vocabularies CTranslate2 saved: one shared file, or one per side."""

    def read(name: str) -> Vocab:
        try:
            return Vocab(json.loads((folder / f"{name}_vocabulary.json").read_text(encoding="utf-8")))
        except (ValueError, TypeError) as err:
            raise _not_an_export(folder, f"{name}_vocabulary.json: {' '.join(str(err).split())}") from None

    if (folder / "shared_vocabulary.json").is_file():
        shared = read("shared")
        return shared, shared
    if not (folder / "source_vocabulary.json").is_file() or not (folder / "target_vocabulary.json").is_file():
        raise _not_an_export(folder, "no shared_vocabulary.json, nor source_ and target_vocabulary.json")
    return read("source"), read("target")


def load_engine(folder: str | Path, compute_type: str = "default", threads: int = 0) -> EngineModel:
    """Load an export of ``export-ct2``. ``compute_type``: ``"default"`` (as exported), ``"int8"``, ``"float32"`` …
    (CTranslate2 converts on load); ``threads``: CTranslate2's ``intra_threads`` (0: its own choice)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise _not_an_export(folder, "not a folder" if folder.exists() else "it does not exist")
    try:
        course = json.loads((folder / COURSE_FILE).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise _not_an_export(folder, f"no {COURSE_FILE}") from None
    except (ValueError, UnicodeDecodeError):
        raise _not_an_export(folder, f"{COURSE_FILE} is not JSON") from None
    if not isinstance(course, dict) or course.get("format") != FORMAT:
        got = course.get("format") if isinstance(course, dict) else type(course).__name__
        raise _not_an_export(folder, f"{COURSE_FILE} has format {got!r}, expected {FORMAT!r}")
    src_vocab, tgt_vocab = _vocabularies(folder)
    tokenizer = None
    if course.get("tokenizer") == "bpe":
        try:
            text = (folder / TOKENIZER_FILE).read_text(encoding="utf-8")
            tokenizer = SubwordTokenizer.from_json(text, course.get("tokenizer_fingerprint"))
        except (OSError, ValueError, TypeError) as err:
            raise _not_an_export(folder, f"its BPE tokenizer: {' '.join(str(err).split())}") from None
    ctranslate2 = import_ctranslate2()
    try:
        translator = ctranslate2.Translator(str(folder), compute_type=compute_type, intra_threads=threads)
    except (RuntimeError, ValueError) as err:
        raise _not_an_export(folder, f"CTranslate2 cannot load it: {' '.join(str(err).split())}") from None
    return EngineModel(
        translator,
        src_vocab,
        tgt_vocab,
        str(course.get("src_lang", "de")),
        str(course.get("tgt_lang", "en")),
        int(course["max_len"]),
        float(course.get("length_penalty", 0.6)),
        tokenizer,
        folder,
    )


def engine_ids(
    engine: EngineModel,
    sentences: Sequence[str],
    beam_size: int = 1,
    max_len: int | None = None,
    length_penalty: float | None = None,
    batch_size: int = 64,
) -> list[tuple[list[str], list[int]]]:
    """:func:`~transformer_course.decode.decode_sentences` with CTranslate2 as the decoder: per sentence its
    source tokens and the output ids ``<s> w1 … </s>`` (no ``</s>`` when the length limit stopped it; ``[]`` for
    an empty sentence). The same tokenization, the same length limit (source length + 50, within the positional
    table); α goes to CTranslate2's ``length_penalty`` (its normalization: see the module's docstring)."""
    from .decode import output_limit, source_tokens

    length_penalty = engine.length_penalty if length_penalty is None else length_penalty
    args = (beam_size, max_len, length_penalty, batch_size, engine.max_len, engine.src_lang, engine.tokenizer)
    tokens = source_tokens("engine_ids", sentences, *args)
    outputs: list[list[int]] = [[] for _ in tokens]
    by_limit: dict[int, list[int]] = {}  # the course's limit per source length: generated tokens, </s> included
    for i, words in enumerate(tokens):
        if words:  # empty sentences stay []
            limit = output_limit(len(words), max_len, engine.max_len) - 1  # generated tokens: - 1 for <s>
            by_limit.setdefault(limit, []).append(i)
    stoi = engine.tgt_vocab.stoi
    for limit, members in sorted(by_limit.items()):
        results = engine.translator.translate_batch(
            [tokens[i] for i in members],
            max_batch_size=batch_size,
            beam_size=beam_size,
            num_hypotheses=beam_size,  # the k finished ones, ranked by gnmt_best below
            patience=PATIENCE if beam_size > 1 else 1,
            return_scores=beam_size > 1,
            length_penalty=length_penalty if beam_size > 1 else 0.0,
            max_decoding_length=limit,
            min_decoding_length=0,  # the course lets </s> come first (an empty translation)
            max_input_length=0,  # no truncation: the positional table was checked above
            return_end_token=True,
        )
        for i, result in zip(members, results):
            best = gnmt_best(result.hypotheses, result.scores, length_penalty) if beam_size > 1 else 0
            outputs[i] = [BOS, *(stoi[token] for token in result.hypotheses[best])]
    return list(zip(tokens, outputs))


def gnmt_best(hypotheses: Sequence[Sequence[str]], scores: Sequence[float], alpha: float) -> int:
    """Which of CTranslate2's finished hypotheses the course's beam would pick: each one's log P is its score
    (log P / |Y|^α, |Y| with ``</s>``) times |Y|^α, divided by GNMT's ((5 + |Y|) / 6)^α; the first best wins."""
    ranked = [s * len(h) ** alpha / gnmt_length_penalty(len(h), alpha) for h, s in zip(hypotheses, scores)]
    return max(range(len(ranked)), key=ranked.__getitem__)


def translate_with_engine(
    engine: EngineModel | str | Path,
    sentences: Sequence[str],
    beam_size: int = 1,
    max_len: int | None = None,
    length_penalty: float | None = None,
    batch_size: int = 64,
) -> list[str]:
    """:func:`~transformer_course.decode.translate` with CTranslate2: text in, text out, the same tokenizers and
    detokenization. ``engine``: a loaded :class:`EngineModel` or the folder ``export-ct2`` wrote."""
    if not isinstance(engine, EngineModel):
        engine = load_engine(engine)
    from .decode import to_text

    decoded = engine_ids(engine, sentences, beam_size, max_len, length_penalty, batch_size)
    return to_text(decoded, engine.tgt_vocab, engine.tokenizer)

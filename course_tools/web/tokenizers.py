"""The page's tokenizers, as data: what ``static/tokenizers.js`` needs to split text exactly as Python does
(notebook 11 for the tokenizers themselves).

Two kinds of checkpoint, two tokenizers, both ported to a small JavaScript file rather than taken from npm:

- **spaCy words** (``spacy.blank(lang)``, :mod:`transformer_course.data.tokenization`). No npm library splits
  text as spaCy does, so the page runs spaCy's own algorithm (whitespace split, then prefixes, suffixes,
  special cases, URLs and infixes, then the special cases that span affixes) on spaCy's own rules, exported
  here from the installed spaCy: its prefix, suffix, infix and URL regular expressions, turned from Python's
  syntax into JavaScript's by :func:`js_regex`, and its special cases.
- **Byte-pair pieces** (:class:`~transformer_course.data.SubwordTokenizer`, Hugging Face ``tokenizers``).
  ``@huggingface/tokenizers`` on npm is a native Node add-on, not a browser library; transformers.js carries a
  tokenizer but is a 1 MB library for one 40-line algorithm. The port is :mod:`transformer_course.data.bpe`'s
  segmentation (the ``Metaspace`` + ``Punctuation`` pre-tokenizer, then the earliest-learned merge first) on
  the tokenizer's own vocabulary and merges.

tests/test_web_page.py checks that both ports give Python's pieces and ids on every test2016 source sentence.
"""

from __future__ import annotations

import json
import re
import sys

__all__ = ["js_regex", "spacy_spec", "subword_spec", "tokenizer_spec"]

# Python's re syntax → JavaScript's (with the "u" flag): Unicode-aware classes, 8-digit escapes, no inline flags.
_CLASSES = {"d": r"\p{Nd}", "D": r"\P{Nd}", "w": r"\p{L}\p{N}_", "s": r"\s", "S": r"\S"}  # \w: str.isalnum or _
_SYNTAX = set("^$\\.*+?()[]{}|/-")


def js_regex(pattern: str) -> str:
    """A Python regular expression as the source of a JavaScript one for ``new RegExp(source, "u")``.

    Python's ``\\d`` and ``\\w`` match any Unicode digit or word character, JavaScript's only ASCII ones, so
    they become ``\\p{…}`` classes; ``\\UXXXXXXXX`` becomes ``\\u{…}``; escapes of characters that are not
    syntax (``\\'``, ``\\!``), which the "u" flag rejects, become ``\\u{…}``; a leading ``(?u)`` is dropped
    (Unicode is the default in Python 3). Anything else unknown is refused rather than guessed.
    """
    if pattern.startswith("(?u)"):
        pattern = pattern[4:]
    if re.search(r"\(\?[aiLmsux]", pattern):
        raise ValueError(f"inline flags are not supported in a pattern for the page: {pattern[:80]!r}")
    out, i, in_class = [], 0, False
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            nxt = pattern[i + 1]
            if nxt == "u":
                out.append(f"\\u{{{pattern[i + 2 : i + 6]}}}")
                i += 6
                continue
            if nxt == "U":
                out.append(f"\\u{{{int(pattern[i + 2 : i + 10], 16):X}}}")
                i += 10
                continue
            if nxt in _CLASSES:
                cls = _CLASSES[nxt]
                out.append(cls if in_class or nxt != "w" else f"[{cls}]")
                i += 2
                continue
            if nxt in _SYNTAX:
                out.append(ch + nxt)
            elif nxt in "ntrfv":
                out.append(ch + nxt)
            elif nxt.isalnum():
                raise ValueError(
                    f"the escape \\{nxt} has no JavaScript equivalent here: {pattern[max(0, i - 20) : i + 20]!r}"
                )
            else:
                out.append(f"\\u{{{ord(nxt):X}}}")
            i += 2
            continue
        if ch == "[" and not in_class:
            in_class = True
        elif ch == "]" and in_class and out and out[-1] != "[":
            in_class = False
        out.append(ch if ord(ch) < 0x80 or ch.isprintable() else f"\\u{{{ord(ch):X}}}")
        i += 1
    return "".join(out)


def spacy_spec(lang: str) -> dict:
    """spaCy's tokenizer for ``lang`` (``spacy.blank(lang).tokenizer``) as data for the JavaScript port."""
    import spacy
    from spacy.tokenizer import Tokenizer

    from transformer_course.data.tokenization import spacy_tokenizer

    tokenizer = spacy_tokenizer(lang)
    if tokenizer.token_match is not None:
        raise ValueError(f"spaCy's {lang!r} tokenizer has a token_match, which the page's port does not handle yet")
    rules = {key: [piece[65] for piece in pieces] for key, pieces in tokenizer.rules.items()}  # 65 = ORTH
    # Special cases that the affix rules would split ("Hallo:)" → "Hallo", ":", ")") are found again after the
    # split and merged back ("Hallo", ":)"): spaCy's _special_matcher, which holds each one's affix split.
    plain = Tokenizer(
        tokenizer.vocab,
        rules={},
        prefix_search=tokenizer.prefix_search,
        suffix_search=tokenizer.suffix_search,
        infix_finditer=tokenizer.infix_finditer,
        url_match=tokenizer.url_match,
    )
    matched = {}
    for key in rules:
        if tokenizer.find_prefix(key) or tokenizer.find_suffix(key) or tokenizer.find_infix(key) or " " in key:
            split = [t.text for t in plain(key)]
            if " " not in key and len(split) > 1:
                matched[key] = split
    return {
        "kind": "spacy",
        "lang": lang,
        "spacy": spacy.__version__,
        "whitespace": "".join(chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace()),
        "prefix": js_regex(tokenizer.prefix_search.__self__.pattern),
        "suffix": js_regex(tokenizer.suffix_search.__self__.pattern),
        "infix": js_regex(tokenizer.infix_finditer.__self__.pattern),
        "url": js_regex(tokenizer.url_match.__self__.pattern) if tokenizer.url_match is not None else None,
        "rules": rules,
        "matched": matched,
    }


def subword_spec(tokenizer) -> dict:
    """A :class:`~transformer_course.data.SubwordTokenizer` as data: its pieces (ids in order) and merges."""
    spec = json.loads(tokenizer._tokenizer.to_str())
    model = spec["model"]
    for key, expected in (("dropout", None), ("continuing_subword_prefix", None), ("end_of_word_suffix", None)):
        if model.get(key) != expected:
            raise ValueError(f"the page's BPE port expects {key}={expected!r}, the tokenizer has {model.get(key)!r}")
    if model.get("byte_fallback") or model.get("fuse_unk"):
        raise ValueError("the page's BPE port handles neither byte_fallback nor fuse_unk")
    return {
        "kind": "bpe",
        "pre_tokenizer": tokenizer.pre_tokenizer,  # "metaspace+punctuation", or "metaspace" for older tokenizers
        "itos": list(tokenizer.itos),
        "merges": [[a, b] for a, b in tokenizer.merges],
        "unk": model.get("unk_token") or "<unk>",
    }


def tokenizer_spec(checkpoint) -> dict:
    """What the page needs to turn source text into ids and target ids into text, for one checkpoint."""
    if checkpoint.tokenizer is not None:
        return {"source": subword_spec(checkpoint.tokenizer), "target": {"kind": "bpe"}}
    return {
        "source": spacy_spec(checkpoint.src_lang),
        "src_itos": list(checkpoint.src_vocab.itos),
        "target": {"kind": "words", "tgt_itos": list(checkpoint.tgt_vocab.itos)},
    }

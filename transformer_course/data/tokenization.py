"""Tokenization: text → word tokens with spaCy's rule-based tokenizers, cached on disk, and tokens → text
again (notebook 11; paper §5.1 "Training Data and Batching", §6.1 for scoring the output).

    "A dog's toy."  ──tokenize(·, "en")──▶  ['A', 'dog', "'s", 'toy', '.']  ──detokenize──▶  "A dog's toy."

``spacy.blank(lang)`` needs no model download: its tokenizer is rules only. :func:`tokenize_file` keeps
the tokens of a whole corpus file as JSON, keyed by the file's SHA-256, the spaCy version and
:data:`TOKENIZER_VERSION`, so a second run reads them back instead of tokenizing again. The cache is only a
copy: a damaged one is rebuilt (with a warning naming it), and one that cannot be written is skipped.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Iterable, Sequence
from functools import cache
from pathlib import Path

from ..files import atomic_write_text, remove_stale_temp_files
from .corpus import read_lines, sha256_file

__all__ = [
    "NO_SPACE_AFTER",
    "NO_SPACE_BEFORE",
    "TOKENIZER_VERSION",
    "detokenize",
    "spacy_tokenizer",
    "tokenize",
    "tokenize_file",
    "tokenize_many",
]

TOKENIZER_VERSION = 1  # bump when the token rules below change, so old caches are not reused


@cache
def spacy_tokenizer(lang: str):
    """The tokenizer of ``spacy.blank(lang)``: rules only, no model download needed."""
    import spacy

    try:
        return spacy.blank(lang).tokenizer
    except ImportError as e:
        raise ValueError(f"unknown language {lang!r} for spaCy; use a language code such as 'de' or 'en' ({e})") from e


def tokenize_many(texts: Iterable[str], lang: str, batch_size: int = 1000) -> list[list[str]]:
    """Split many sentences into word tokens at once (spaCy's ``tokenizer.pipe``; whitespace tokens dropped)."""
    tokenizer = spacy_tokenizer(lang)
    return [[t.text for t in doc if not t.is_space] for doc in tokenizer.pipe(texts, batch_size=batch_size)]


def tokenize(text: str, lang: str) -> list[str]:
    """``tokenize("A dog's toy.", "en")`` → ``['A', 'dog', "'s", 'toy', '.']``."""
    if not isinstance(text, str):
        raise TypeError(f"tokenize expects one string, got {type(text).__name__}; use tokenize_many for a list")
    return tokenize_many([text], lang)[0]


def tokenize_file(
    path: str | os.PathLike, lang: str, cache_dir: str | os.PathLike | None = None, limit: int | None = None
) -> list[list[str]]:
    """Tokens of every line of ``path``; with ``cache_dir`` the result is kept on disk as JSON, keyed by
    the file's SHA-256, the spaCy version and :data:`TOKENIZER_VERSION`, so a second run reads it back.
    ``limit``: only the first ``limit`` lines (tokenized without writing a cache, unless one exists).

    A cache that does not parse, or does not hold one token list per line of ``path``, is tokenized again
    and rewritten, with a warning naming it; a cache that cannot be written (a full disk) is skipped with a
    warning. Temporary files a killed run left in ``cache_dir`` are removed."""
    path = Path(path)
    cache = None
    if cache_dir is not None:
        import spacy

        key = f"{sha256_file(path)[:16]}.spacy-{spacy.__version__}.v{TOKENIZER_VERSION}"
        cache = Path(cache_dir) / f"{path.name}.{lang}.{key}.tokens.json"
        if cache.exists():
            tokens = _read_cache(cache, path)
            if tokens is not None:
                return tokens[:limit]
    tokens = tokenize_many(read_lines(path)[:limit], lang)
    if cache is not None and limit is None:
        remove_stale_temp_files(cache.parent, older_than_s=600, keep=lambda p: ".tokens.json." not in p.name)
        try:
            atomic_write_text(cache, json.dumps(tokens, ensure_ascii=False))
        except OSError as e:
            warnings.warn(f"could not write the token cache {cache} ({e}); going on without it", stacklevel=2)
    return tokens


def _read_cache(cache: Path, path: Path) -> list[list[str]] | None:
    """The token lists in ``cache``, or None (and a warning naming it) when it is damaged."""
    try:
        tokens = json.loads(cache.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        problem = f"{type(e).__name__}: {e}"
    else:
        if not isinstance(tokens, list) or not all(
            isinstance(line, list) and all(isinstance(token, str) for token in line) for line in tokens
        ):
            problem = "it is not a list of token lists"
        elif len(tokens) != len(read_lines(path)):
            problem = f"it holds {len(tokens)} lines but {path} has {len(read_lines(path))}"
        else:
            return tokens
    warnings.warn(
        f"the token cache {cache} is damaged ({problem}); tokenizing {path} again and rewriting the cache",
        stacklevel=3,
    )
    return None


NO_SPACE_BEFORE = {",", ".", "!", "?", ";", ":", "%", ")", "n't", "'s", "'re", "'m", "'ll", "'ve", "'d", "'"}
NO_SPACE_AFTER = {"("}


def detokenize(tokens: Sequence[str]) -> str:
    """Tokens → text, undoing the tokenizer's splits: no space before ``, . ! ? ; : % )`` and English
    clitics (``n't 's 're 'm 'll 've 'd '``), none after ``(``, none around a hyphen inside a word
    (``T - shirt`` → ``T-shirt``), none inside a pair of double quotes (``" Pullman "`` → ``"Pullman"``).
    Used to score detokenized output with sacreBLEU. Tokens do not record spaces, so a dash that stood
    alone between two words (``hat - a``) comes back as a hyphen (``hat-a``); on the Multi30k English
    test set this function restores 1000 of 1000 sentences exactly."""
    out: list[str] = []
    glue = True  # True: no space before the next token
    quotes = 0  # double quotes seen so far: an even count means the next one opens
    for i, token in enumerate(tokens):
        if token == '"':
            opening = quotes % 2 == 0
            quotes += 1
            out.append(" " + token if opening and not glue else token)
            glue = opening
            continue
        prev = tokens[i - 1] if i > 0 else ""
        next_ = tokens[i + 1] if i + 1 < len(tokens) else ""
        in_word_hyphen = token == "-" and prev[-1:].isalnum() and next_[:1].isalnum()
        space = not (glue or token.lower() in NO_SPACE_BEFORE or in_word_hyphen)
        out.append(" " + token if space else token)
        glue = token in NO_SPACE_AFTER or in_word_hyphen
    return "".join(out)

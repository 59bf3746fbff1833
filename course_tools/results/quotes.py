"""Figures quoted in prose: every quote of a run figure carries a marker, and agrees with the data.

Prose quotes a figure with a marker right after the number, an HTML comment that Jupyter, GitHub and the HTML
edition hide: ``40.18<!--fig:contest-c/best/test/beam4/sacrebleu-->`` (a difference:
``+1.80<!--fig:X - Y-->``). :func:`check_quotes` compares each marked number, at the precision it is written with
(``40.2``, ``9.6M``, ``2,338``), with the data (:mod:`.figures`), and flags a number that equals a run figure but
has no marker — a number precise enough to be a measurement (``40.18``, ``2,338``, ``37.4``), or one whose unit
says what it measures (``45 minutes``, ``9.6M parameters``, ``1,520 步``). tests/test_results.py runs it on the
notebooks (both languages), the README and docs/teaching.md.
"""

from __future__ import annotations

import math
import re

from .figures import figure, run_figures, show

__all__ = ["QUOTE", "UNITS", "check_quotes"]


# The unit words that follow a number in prose, and the fields (a part of the figure's name) they measure: a
# number with a unit is compared only with the figures of that kind ("46 seconds" is no quote of 46 minutes).
UNITS = {
    "minutes": "minutes",
    "minute": "minutes",
    "min": "minutes",
    "分钟": "minutes",
    "steps": "step",
    "step": "step",
    "步": "step",
    "epochs": "epoch",
    "epoch": "epoch",
    "个 epoch": "epoch",
    "轮": "epoch",
    "BLEU": "bleu",
    "parameters": "parameters",
    "params": "parameters",
    "个参数": "parameters",
    "参数": "parameters",
    "seconds": "seconds",
    "s": "seconds",
    "秒": "seconds",
    "tokens/s": "tokens_per_s",
    "词元/秒": "tokens_per_s",
    "MB": "_mb",
}
_UNIT = "|".join(re.escape(u) for u in sorted(UNITS, key=len, reverse=True))
# a number's scale, written right after it: 9.6M, 3.1k, 9.7 billion, 963 万
SCALES = {"k": 1e3, "M": 1e6, "thousand": 1e3, "million": 1e6, "billion": 1e9, "万": 1e4, "亿": 1e8}
_SCALE = r"[kM](?=[\s,.;:)）。，；：<]|$)|\s(?:thousand|million|billion)\b|\s?[万亿]"
# a marked number: its digits, a scale or %, the marker ("9.6M<!--fig:…--> parameters", "9.6 million<!--fig:…-->")
QUOTE = re.compile(
    r"(?P<number>(?<![\w.])[-+−]?\d[\d,]*(?:\.\d+)?)(?P<unit>" + _SCALE + r"|%)?(?:\s|&nbsp;)?"
    r"<!--\s*fig:(?P<path>[^>]*?)\s*-->"
)
# every number of the prose: its digits, a scale, and the unit word right after it (if any); a k or M is a
# scale only where a word would end (not 2k^ℓ of a formula)
NUMBER = re.compile(
    r"(?<![\w.,/#§−-])(?P<number>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)(?![\w.,]*\d)"
    r"(?P<suffix>" + _SCALE + r")?(?!\s*<!--\s*fig:)"
    r"(?:(?:\s|&nbsp;|-)?(?P<unit>" + _UNIT + r")(?![A-Za-z]))?"
)
VERSION_BEFORE = re.compile(r"(?:Python|python|torch|version|[<>=≥≤]=?|v)\s*$")
# the number names a part of the paper (§3.2, Table 2, Section 5.4, 第 3.2 节), not a figure
REFERENCE_BEFORE = re.compile(r"(?:§|Section|section|Sec\.|Table|table|Figure|figure|Eq\.|表|图|第)\s*$")
# a sentence that cites the paper's section or table: its one-decimal figures are the paper's (27.3 (Table 2)).
# The course cites the paper as §5.4, Table 2, Figure 1; "section 11" and "第 11 节" are the notebook's own.
CITATION = re.compile(r"§\s*\d|\b(?:Table|Figure)\s+\d|[表图]\s*\d")
SENTENCE_END = re.compile(r"[.!?](?=\s)|[。！？]|\n\s*\n|\n(?=\s*(?:[-*|#>]|\d+\.\s))")


def _parse(number: str, unit: str) -> tuple[float, int, float]:
    """(value, decimals, scale) of a number as written: '2,338' → (2338, 0, 1); '9.6' 'M' → (9.6, 1, 1e6)."""
    text = number.replace(",", "").replace("−", "-")
    decimals = len(text.split(".")[1]) if "." in text else 0
    scale = SCALES.get(unit.strip(), 1.0)
    return float(text), decimals, scale


def _agrees(quoted: float, decimals: int, scale: float, value: float) -> bool:
    return math.isclose(round(value / scale, decimals), quoted, abs_tol=10 ** (-decimals) / 2 * 1e-6)


def check_quotes(text: str, data: dict, where: str = "") -> list[str]:
    """One line per problem in ``text``: a marked number that disagrees with its figure, a marker whose path
    does not resolve, and a number that equals a run figure but carries no marker."""
    problems = []
    marked_spans = []
    for match in QUOTE.finditer(text):
        marked_spans.append(match.span("number"))
        line = text.count("\n", 0, match.start()) + 1
        quoted, decimals, scale = _parse(match["number"], match["unit"] or "")
        try:
            value = figure(match["path"], data)
        except KeyError as error:
            problems.append(f"{where}:{line}: {error.args[0]}")
            continue
        if not _agrees(quoted, decimals, scale, value):
            problems.append(
                f"{where}:{line}: {match['number']}{match['unit'] or ''} is quoted for {match['path'].strip()}, "
                f"but results.json has {show(value)}: update the number (or the marker)"
            )
    problems += _unmarked(text, data, where, marked_spans)
    return problems


def _sentence(text: str, start: int, end: int) -> str:
    """The sentence (or list item, table row, heading) around text[start:end]."""
    begin = max((m.end() for m in SENTENCE_END.finditer(text, max(0, start - 600), start)), default=0)
    after = SENTENCE_END.search(text, end)
    return text[begin : after.start() if after else len(text)]


def _table_header(text: str, start: int) -> str:
    """The header row of the Markdown table whose row holds text[start] ("" outside a table): a table's
    citation (| model (Table 2) | …) stands in its header and covers each of its rows."""
    line_start = text.rfind("\n", 0, start) + 1
    if not text[line_start:start].lstrip().startswith("|"):
        return ""
    header = line_start
    while header > 0:
        previous = text.rfind("\n", 0, header - 1) + 1
        if not text[previous:header].lstrip().startswith("|"):
            break
        header = previous
    end = text.find("\n", header)
    return text[header:] if end < 0 else text[header:end]


def _candidates(text: str, data: dict):
    """(match, the figures it may quote) for every number of ``text`` that could be a quote of a run figure."""
    values = run_figures(data)
    for match in NUMBER.finditer(text):
        number, suffix, unit = match["number"], match["suffix"] or "", match["unit"]
        quoted, decimals, scale = _parse(number, suffix)
        # Precise enough to be a measurement: two decimals (a BLEU score) or a thousands separator (steps,
        # parameters) — the first rule, compared with every figure, wherever it stands.
        precise = decimals >= 2 or "," in number
        if not (precise or decimals or suffix or unit):
            continue  # a bare integer (3 layers, warmup 300, 8 heads) is a setting, not a figure
        # Up to 1, a number of one or two significant digits is a hyper-parameter or an identity (dropout 0.1,
        # α = 0.6, β₂ = 0.98, weights that sum to 1.0): the runs' figures up to 1 are never quoted that coarsely.
        if quoted * scale <= 1 and len(number.replace(".", "").lstrip("0")) < 3:
            continue
        before = text[max(0, match.start() - 12) : match.start()]
        if VERSION_BEFORE.search(before) or REFERENCE_BEFORE.search(before):
            continue  # Python 3.10, torch 2.13, §3.2, Table 2: a version or a part of the paper
        header = _table_header(text, match.start())
        if CITATION.search(header):
            continue  # a row of a table whose header cites the paper's: its numbers are the paper's (40.46)
        if not precise and CITATION.search(_sentence(text, match.start(), match.end())):
            continue  # the paper's one-decimal figure, cited with its section or table: 27.3 (Table 2)
        kind = UNITS.get(unit) if unit and not precise else None
        hits = []
        for path, value in values.items():
            if not precise:
                if kind and kind not in path.rsplit("/", 1)[-1]:
                    continue
                # An integer as written ("45 minutes") quotes a figure that is that integer, not one it rounds
                # to (9.5 epochs is no "10 epochs", which is a setting); a figure that is a count (an int: steps,
                # seconds, parameters) is quoted as an integer or with a scale (9.6M), so "17.0" is none of it.
                if not decimals and not suffix and value != quoted:
                    continue
                if decimals and not suffix and isinstance(value, int):
                    continue
            if _agrees(quoted, decimals, scale, value):
                hits.append(path)
        if hits:
            yield match, hits  # in the data's order: the course's default run first


NEAR = 0.01  # a number this close to a figure of the run its sentence is about is a quote of it (or a lie)
MARKER_RUN = re.compile(r"<!--\s*fig:\s*([\w.-]+)/")


def _runs_named(sentence: str, data: dict) -> set[str]:
    """The runs a sentence is about: named as a word (``multi30k-cpu``) or in one of its markers."""
    named = {m for m in MARKER_RUN.findall(sentence) if m in data["runs"]}
    return named | {run for run in data["runs"] if re.search(rf"(?<![\w-]){re.escape(run)}(?![\w-])", sentence)}


def _near_misses(text: str, data: dict, marked: list[tuple[int, int]]):
    """(match, path, value) for every unmarked number that is within 1 % of a figure of a run its sentence is
    about, but equals none: ``40.19`` written beside ``contest-c`` whose figure is 40.18."""
    values = run_figures(data)
    for match in NUMBER.finditer(text):
        if any(start <= match.start() < end for start, end in marked):
            continue
        number, suffix, unit = match["number"], match["suffix"] or "", match["unit"]
        quoted, decimals, scale = _parse(number, suffix)
        if not (decimals >= 2 or unit):
            continue  # only numbers written as measurements: 40.19, 2,339 steps (8,000 pieces is a setting)
        before = text[max(0, match.start() - 12) : match.start()]
        if VERSION_BEFORE.search(before) or REFERENCE_BEFORE.search(before):
            continue
        runs = _runs_named(_sentence(text, match.start(), match.end()), data)
        if not runs:
            continue
        kind = UNITS.get(unit) if unit else None
        close = [
            (path, value)
            for path, value in values.items()
            if path.split("/", 1)[0] in runs
            and (kind is None or kind in path.rsplit("/", 1)[-1])
            and value
            and abs(quoted * scale - value) <= NEAR * abs(value)
        ]
        if close and not any(_agrees(quoted, decimals, scale, value) for _, value in close):
            yield match, *close[0]


def _unmarked(text: str, data: dict, where: str, marked: list[tuple[int, int]]) -> list[str]:
    problems = []
    for match, path, value in _near_misses(text, data, marked):
        line = text.count("\n", 0, match.start()) + 1
        written = match["number"] + (match["suffix"] or "")
        problems.append(
            f"{where}:{line}: {written} is within 1 % of {path} ({show(value)}) in a sentence about that run, but "
            f"is not that figure and has no marker: quote it as {show(value)}<!--fig:{path}-->, or say what else "
            "it measures"
        )
    for match, hits in _candidates(text, data):
        if any(start <= match.start() < end for start, end in marked):
            continue
        line = text.count("\n", 0, match.start()) + 1
        written = match["number"] + (match["suffix"] or "")
        problems.append(
            f"{where}:{line}: {written} equals {hits[0]}"
            + (f" (and {len(hits) - 1} more)" if len(hits) > 1 else "")
            + f" but has no marker: write {written}<!--fig:{hits[0]}--> (or the figure it quotes)"
        )
    return problems

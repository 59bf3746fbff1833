"""Measured results as data (issue 23): ``docs/results.json``, the tables of ``docs/results.md``, quoted figures.

A figure is named by a path: the run, then (for a score) checkpoint/split/decoding, then the field —
``multi30k-cpu/best/test/beam4/sacrebleu`` is 40.18, ``multi30k-cpu/steps`` is 2338 (:func:`figure`). Prose quotes
a figure with a marker right after the number, an HTML comment that Jupyter, GitHub and the HTML edition hide:
``40.18<!--fig:multi30k-cpu/best/test/beam4/sacrebleu-->`` (a difference: ``+1.80<!--fig:X - Y-->``).
:func:`check_quotes` compares each marked number, at the precision it is written with (``40.2``, ``9.6M``,
``2,338``), with the data, and flags a number that equals a run figure but has no marker. tests/test_results.py
runs it on the notebooks (both languages), the README and docs/teaching.md, and checks that docs/results.md's
tables are the ones :func:`render_table` writes.

The commands that measure write the data: ``python -m transformer_course.results add-eval RUN KEY EVAL.json``
(the JSON of ``evaluate --json``), ``add-run RUN RUN_FOLDER`` (history.json and best.pt), ``render`` (the tables
of docs/results.md) and ``check FILE…`` (every stale or unmarked quote).
"""

from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path

from .files import atomic_write_text
from .paths import course_root

__all__ = [
    "QUOTE",
    "check_quotes",
    "figure",
    "load_results",
    "record_evaluation",
    "record_run",
    "render_markdown",
    "render_table",
    "results_path",
    "run_figures",
]

SCHEMA = 1
QUOTE = re.compile(
    r"(?P<number>(?<![\w.])[-+−]?\d[\d,]*(?:\.\d+)?)(?P<unit>[kM%]?)(?:\s|&nbsp;)?<!--\s*fig:(?P<path>[^>]*?)\s*-->"
)
TABLE = re.compile(r"<!-- results:table (?P<run>[\w.-]+) -->\n(?P<body>.*?)<!-- /results:table -->", re.DOTALL)
SCORE_FIELDS = ("sacrebleu", "tokenized_bleu", "unk_outputs", "seconds")
DECODINGS = {"greedy": "greedy", "beam4": "beam 4, α = 0.6"}


def results_path() -> Path:
    return course_root(Path(__file__).parent) / "docs" / "results.json"


def load_results(path: str | Path | None = None) -> dict:
    """The data file, checked: a ``runs`` mapping whose evaluations hold numbers."""
    path = Path(path) if path is not None else results_path()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(
            f"{path} does not exist: it is the course's measured results (docs/results.json)"
        ) from None
    except json.JSONDecodeError as error:
        raise ValueError(f"{path} is not valid JSON ({error}); fix it or take it back from git") from None
    if data.get("schema") != SCHEMA or not isinstance(data.get("runs"), dict):
        raise ValueError(f"{path}: expected {{'schema': {SCHEMA}, 'runs': {{...}}}}")
    return data


def figure(path: str, data: dict | None = None) -> float:
    """One figure by its path (``run/field`` or ``run/checkpoint/split/decoding/field``), or a difference
    ``a - b`` of two. A path that does not resolve raises a KeyError that lists what exists there."""
    data = load_results() if data is None else data
    if " - " in path:
        left, right = path.split(" - ", 1)
        return figure(left.strip(), data) - figure(right.strip(), data)
    parts = path.strip().split("/")
    runs = data["runs"]
    if parts[0] not in runs:
        raise KeyError(f"no run {parts[0]!r} in results.json; runs: {', '.join(sorted(runs))}")
    run = runs[parts[0]]
    if len(parts) == 2:
        if parts[1] not in run or isinstance(run[parts[1]], (dict, list, str)):
            numbers = sorted(k for k, v in run.items() if isinstance(v, (int, float)))
            raise KeyError(f"{path}: run {parts[0]!r} has no number {parts[1]!r}; it has {', '.join(numbers)}")
        return run[parts[1]]
    evaluation = "/".join(parts[1:-1])
    scores = run.get("evaluations", {})
    if evaluation not in scores:
        raise KeyError(f"{path}: run {parts[0]!r} has no evaluation {evaluation!r}; it has {', '.join(sorted(scores))}")
    if parts[-1] not in scores[evaluation]:
        raise KeyError(
            f"{path}: evaluation {evaluation!r} has no {parts[-1]!r}; it has {', '.join(scores[evaluation])}"
        )
    return scores[evaluation][parts[-1]]


def run_figures(data: dict) -> dict[str, float]:
    """Every number of every run, by path (the values a prose number may be a quote of)."""
    found = {}
    for name, run in data["runs"].items():
        for key, value in run.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                found[f"{name}/{key}"] = value
        for evaluation, scores in run.get("evaluations", {}).items():
            for key, value in scores.items():
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    found[f"{name}/{evaluation}/{key}"] = value
    return found


# ---- quotes in prose ---------------------------------------------------------------------------------------


def _parse(number: str, unit: str) -> tuple[float, int, float]:
    """(value, decimals, scale) of a number as written: '2,338' → (2338, 0, 1); '9.6' 'M' → (9.6, 1, 1e6)."""
    text = number.replace(",", "").replace("−", "-")
    decimals = len(text.split(".")[1]) if "." in text else 0
    scale = {"k": 1e3, "M": 1e6}.get(unit, 1.0)
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
        quoted, decimals, scale = _parse(match["number"], match["unit"])
        if match["unit"] == "%":
            scale = 1.0
        try:
            value = figure(match["path"], data)
        except KeyError as error:
            problems.append(f"{where}:{line}: {error.args[0]}")
            continue
        if not _agrees(quoted, decimals, scale, value):
            problems.append(
                f"{where}:{line}: {match['number']}{match['unit']} is quoted for {match['path'].strip()}, "
                f"but results.json has {value:g}: update the number (or the marker)"
            )
    problems += _unmarked(text, data, where, marked_spans)
    return problems


# a number precise enough to be a measurement: two decimals (a BLEU score), or a thousands separator (steps,
# parameters) — small round numbers (3 layers, warmup 300) are settings, not figures
CANDIDATE = re.compile(r"(?<![\w.,/#-])(\d{1,3}(?:,\d{3})+|\d+\.\d{2})(?![\w.,]*\d)(?!\s*<!--\s*fig:)")


VERSION_BEFORE = re.compile(r"(?:Python|python|torch|version|[<>=≥≤]=?|v)\s*$")


def _unmarked(text: str, data: dict, where: str, marked: list[tuple[int, int]]) -> list[str]:
    values = run_figures(data)
    problems = []
    for match in CANDIDATE.finditer(text):
        if any(start <= match.start() < end for start, end in marked):
            continue
        if VERSION_BEFORE.search(text[max(0, match.start() - 12) : match.start()]):
            continue  # Python 3.10, torch 2.13: a version, not a figure
        quoted, decimals, _ = _parse(match[1], "")
        hits = sorted(path for path, value in values.items() if _agrees(quoted, decimals, 1.0, value))
        if hits:
            line = text.count("\n", 0, match.start()) + 1
            problems.append(
                f"{where}:{line}: {match[1]} equals {hits[0]}"
                + (f" (and {len(hits) - 1} more)" if len(hits) > 1 else "")
                + f" but has no marker: write {match[1]}<!--fig:{hits[0]}--> (or the figure it quotes)"
            )
    return problems


# ---- the tables of docs/results.md --------------------------------------------------------------------------


def _fmt(value, digits: int = 2) -> str:
    if value is None:
        return "–"
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:.{digits}f}"


def render_table(run_name: str, data: dict) -> str:
    """The BLEU table of one run: one row per (checkpoint, decoding) scored on test, best first."""
    run = data["runs"][run_name]
    rows = [
        "| checkpoint | decoding | sacreBLEU (detokenized, cased) | tokenized lowercase BLEU | outputs with `<unk>` "
        "| time for 1,000 sentences |",
        "|---|---|---:|---:|---:|---:|",
    ]
    labels, seen = run.get("checkpoint_labels", {}), set()
    for key, scores in run["evaluations"].items():
        checkpoint, split, decoding = key.split("/")
        if split != "test":
            continue
        label = labels.get(checkpoint, f"`{checkpoint}`")
        if checkpoint in seen and checkpoint == "best":
            label = "`best.pt`"  # the details (step, epoch) once, on the checkpoint's first row
        seen.add(checkpoint)
        seconds = scores.get("seconds")
        rows.append(
            f"| {label} | {DECODINGS.get(decoding, decoding)} | {_fmt(scores['sacrebleu'])} | "
            f"{_fmt(scores['tokenized_bleu'])} | {_fmt(scores.get('unk_outputs'))} | "
            f"{'–' if seconds is None else f'{seconds:.0f} s'} |"
        )
    return "\n".join(rows) + "\n"


def render_markdown(text: str, data: dict) -> str:
    """``text`` with every ``<!-- results:table RUN -->…<!-- /results:table -->`` block rewritten from the data."""

    def table(match: re.Match) -> str:
        return f"<!-- results:table {match['run']} -->\n{render_table(match['run'], data)}<!-- /results:table -->"

    return TABLE.sub(table, text)


# ---- recording a measurement --------------------------------------------------------------------------------


def _write(data: dict, path: Path) -> None:
    atomic_write_text(path, json.dumps(data, indent=1, ensure_ascii=False) + "\n")


def record_evaluation(run: str, key: str, evaluation_json: str | Path, path: str | Path | None = None) -> dict:
    """Add (or replace) ``run``'s evaluation ``key`` (``best/test/beam4``) from an ``evaluate --json`` file."""
    path = Path(path) if path is not None else results_path()
    if len(key.split("/")) != 3:
        raise ValueError(f"key {key!r}: write checkpoint/split/decoding, e.g. best/test/beam4")
    source = json.loads(Path(evaluation_json).read_text(encoding="utf-8"))
    missing = [k for k in ("bleu", "tokenized_bleu", "hypotheses") if k not in source]
    if missing:
        raise ValueError(f"{evaluation_json} has no {', '.join(missing)}: write it with `evaluate --json`")
    data = load_results(path)
    scores = {
        "sacrebleu": round(source["bleu"], 2),
        "tokenized_bleu": round(source["tokenized_bleu"], 2),
        "unk_outputs": sum("<unk>" in h for h in source["hypotheses"]),
        "sentences": len(source["hypotheses"]),
        "signature": source.get("signature"),
    }
    if source.get("seconds") is not None:
        scores["seconds"] = round(source["seconds"])
    data["runs"].setdefault(run, {}).setdefault("evaluations", {})[key] = scores
    _write(data, path)
    return scores


def record_run(run: str, folder: str | Path, path: str | Path | None = None) -> dict:
    """Add (or update) ``run``'s training figures from its run folder: steps, epochs, minutes of training, median
    tokens/s, validation loss per epoch (history.json) and the parameter count and configuration (best.pt)."""
    import statistics

    import torch

    from .checkpoint import load_checkpoint
    from .model import count_parameters

    path = Path(path) if path is not None else results_path()
    folder = Path(folder)
    history = json.loads((folder / "history.json").read_text(encoding="utf-8"))
    if not history:
        raise ValueError(f"{folder}/history.json is empty: the run logged no step")
    checkpoint = load_checkpoint(folder / "best.pt", map_location=torch.device("cpu"))
    data = load_results(path)
    entry = data["runs"].setdefault(run, {})
    entry.update(
        preset=checkpoint.config.name,
        steps=history[-1]["step"],
        train_minutes=round(history[-1]["elapsed_s"] / 60, 1),
        tokens_per_s_median=round(statistics.median(r["tokens_per_s"] for r in history)),
        parameters=count_parameters(checkpoint.model),
        val_loss_by_epoch=[round(r["val_loss"], 2) for r in history if r.get("val_loss") is not None],
        torch=torch.__version__,
    )
    _write(data, path)
    return entry


def _main(argv: list[str]) -> int:
    """python -m transformer_course.results add-eval RUN KEY EVAL.json | add-run RUN FOLDER | render | check FILE…"""
    if not argv or argv[0] not in ("add-eval", "add-run", "render", "check"):
        print(_main.__doc__)
        return 2
    command, rest = argv[0], argv[1:]
    if command == "add-eval" and len(rest) == 3:
        print(json.dumps(record_evaluation(*rest), indent=1))
    elif command == "add-run" and len(rest) == 2:
        print(json.dumps(record_run(*rest), indent=1, default=str))
    elif command == "render" and not rest:
        markdown = results_path().with_suffix(".md")
        atomic_write_text(markdown, render_markdown(markdown.read_text(encoding="utf-8"), load_results()))
        print(f"rewrote the tables of {markdown}")
    elif command == "check" and rest:
        data = load_results()
        problems = [p for f in rest for p in check_quotes(Path(f).read_text(encoding="utf-8"), data, f)]
        print("\n".join(problems) or "every quoted figure agrees with results.json")
        return 1 if problems else 0
    else:
        print(_main.__doc__)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))

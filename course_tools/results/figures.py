"""The course's measured runs as data: ``docs/results.json``, and one figure of it by its path.

A figure is named by a path: the run, then (for a score) checkpoint/split/decoding, then the field —
``multi30k-cpu/best/test/beam4/sacrebleu`` is 40.18, ``multi30k-cpu/steps`` is 2338 (:func:`figure`), and
``a - b`` is a difference of two. :mod:`.quotes` checks the prose that quotes them; :mod:`.results` renders the
tables of docs/results.md and records new measurements.
"""

from __future__ import annotations

import json
from pathlib import Path

from transformer_course.paths import course_root

__all__ = ["SCHEMA", "figure", "load_results", "results_path", "run_figures"]

SCHEMA = 1


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


# How many sentences an evaluation scored (record_evaluation writes it) is the split's size, a fact of the data
# quoted all over the course ("the 1,000 sentences of test2016"), not something the run measured.
SPLIT_SIZES = frozenset({"sentences"})


def run_figures(data: dict) -> dict[str, float]:
    """Every number of every run, by path (the values a prose number may be a quote of), less the split sizes."""
    found = {}
    for name, run in data["runs"].items():
        for key, value in run.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                found[f"{name}/{key}"] = value
        for evaluation, scores in run.get("evaluations", {}).items():
            for key, value in scores.items():
                if isinstance(value, (int, float)) and not isinstance(value, bool) and key not in SPLIT_SIZES:
                    found[f"{name}/{evaluation}/{key}"] = value
    return found

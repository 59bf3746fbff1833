"""The course's measured runs as data: ``docs/results.json``, and one figure of it by its path.

A figure is named by a path: the run, then (for a score) checkpoint/split/decoding, then the field —
``contest-c/best/test/beam4/sacrebleu`` is 40.18, ``contest-c/steps`` is 2338 (:func:`figure`), and
``a - b`` is a difference of two. :mod:`.quotes` checks the prose that quotes them; :mod:`.results` renders the
tables of docs/results.md and records new measurements.
"""

from __future__ import annotations

import json
from pathlib import Path

from transformer_course.paths import course_root

__all__ = ["SCHEMA", "figure", "load_results", "results_path", "run_figures", "seed_summary", "show"]

SCHEMA = 1


def results_path() -> Path:
    return course_root(Path(__file__).parent) / "docs" / "results.json"


def _no_duplicate_keys(pairs: list[tuple[str, object]]) -> dict:
    keys = [k for k, _ in pairs]
    repeated = sorted({k for k in keys if keys.count(k) > 1})
    if repeated:
        raise ValueError(f"the key {repeated[0]!r} appears twice in one object (json keeps only the last): keep one")
    return dict(pairs)


def load_results(path: str | Path | None = None) -> dict:
    """The data file, checked: a ``runs`` mapping of run objects, no key written twice. Every way the file can
    be wrong is a ValueError (or FileNotFoundError) of one line that names it."""
    path = Path(path) if path is not None else results_path()
    try:
        data = json.loads(path.read_text(encoding="utf-8"), object_pairs_hook=_no_duplicate_keys)
    except FileNotFoundError:
        raise FileNotFoundError(
            f"{path} does not exist: it is the course's measured results (docs/results.json)"
        ) from None
    except UnicodeDecodeError as error:
        raise ValueError(
            f"{path} is not UTF-8 text ({error.reason} at byte {error.start}); take it back from git"
        ) from None
    except json.JSONDecodeError as error:
        raise ValueError(f"{path} is not valid JSON ({error}); fix it or take it back from git") from None
    except ValueError as error:  # a key written twice
        raise ValueError(f"{path}: {error}") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA or not isinstance(data.get("runs"), dict):
        raise ValueError(f"{path}: expected {{'schema': {SCHEMA}, 'runs': {{...}}}}, got {_shape(data)}")
    for name, run in data["runs"].items():
        if not isinstance(run, dict) or not isinstance(run.get("evaluations", {}), dict):
            raise ValueError(
                f"{path}: run {name!r} must be an object (with an 'evaluations' object), got {_shape(run)}"
            )
    return data


def _shape(value) -> str:
    if isinstance(value, dict):
        return "an object with keys " + (", ".join(map(repr, list(value)[:5])) or "none")
    return {list: "a list", str: "a string", type(None): "null"}.get(type(value), type(value).__name__)


def show(value) -> str:
    """A figure as prose writes it: 9,633,600, 40.18, true."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return f"{value:,}"  # the shortest form that reads back as the value
    return json.dumps(value)


def seed_summary(name: str, data: dict) -> dict:
    """A run of kind ``seeds`` (one recipe trained with several seeds, each its own run named in ``seeds``) with
    its figures computed from those runs, never written by hand: for each split/decoding every seed scored with
    the checkpoint it chose by validation, ``mean/…``, ``min/…``, ``max/…`` and ``spread/…`` (max − min) of
    sacreBLEU, tokenized BLEU and the outputs with ``<unk>``, and every number the seeds share (``parameters``,
    ``train_minutes``). Any other run is returned as it is."""
    run = data["runs"][name]
    if run.get("kind") != "seeds":
        return run
    seeds = [data["runs"].get(label) for label in run.get("seeds", [])]
    if not seeds or not all(isinstance(r, dict) and "chosen" in r for r in seeds):
        missing = [
            label for label, r in zip(run.get("seeds", []), seeds) if not isinstance(r, dict) or "chosen" not in r
        ]
        raise KeyError(f"run {name!r} summarises seeds {missing or '[]'}, which are not runs with a chosen checkpoint")
    summary = {k: v for k, v in run.items() if k != "evaluations"}
    chosen = [
        {k.split("/", 1)[1]: v for k, v in r["evaluations"].items() if k.startswith(r["chosen"] + "/")} for r in seeds
    ]
    evaluations = {}
    for key in [k for k in chosen[0] if all(k in c for c in chosen)]:
        for field in [f for f in ("sacrebleu", "tokenized_bleu", "unk_outputs") if all(f in c[key] for c in chosen)]:
            values = [c[key][field] for c in chosen]
            for stat, value in (
                ("mean", sum(values) / len(values)),
                ("min", min(values)),
                ("max", max(values)),
                ("spread", max(values) - min(values)),
            ):
                evaluations.setdefault(f"{stat}/{key}", {})[field] = round(value, 2)
    summary["evaluations"] = evaluations
    for key, value in seeds[0].items():  # what every seed shares: the parameters, the minutes of training
        if isinstance(value, (int, float)) and not isinstance(value, bool) and key not in SETTINGS:
            if all(r.get(key) == value for r in seeds):
                summary.setdefault(key, value)
    return summary


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
    run = seed_summary(parts[0], data)
    if len(parts) == 2:
        if parts[1] not in run or isinstance(run[parts[1]], (dict, list, str)):
            numbers = sorted(k for k, v in run.items() if isinstance(v, (int, float)))
            raise KeyError(f"{path}: run {parts[0]!r} has no number {parts[1]!r}; it has {', '.join(numbers)}")
        return _number(path, run[parts[1]])
    evaluation = "/".join(parts[1:-1])
    scores = run.get("evaluations", {})
    if evaluation not in scores:
        raise KeyError(f"{path}: run {parts[0]!r} has no evaluation {evaluation!r}; it has {', '.join(sorted(scores))}")
    if parts[-1] not in scores[evaluation]:
        raise KeyError(
            f"{path}: evaluation {evaluation!r} has no {parts[-1]!r}; it has {', '.join(scores[evaluation])}"
        )
    return _number(path, scores[evaluation][parts[-1]])


def _number(path: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise KeyError(f"{path} is {show(value)} in results.json, not a number: a quote needs a measured figure")
    return value


# How many sentences an evaluation scored (record_evaluation writes it) is the split's size, a fact of the data
# quoted all over the course ("the 1,000 sentences of test2016"), not something the run measured.
SPLIT_SIZES = frozenset({"sentences"})
# A run's seed (results add-run keeps it) is a setting the run was given, and the load average beside it the state
# of the machine it ran on: conditions of the measurement, not what it measured ("seed 1" or "1.6" in prose is no
# quote of either).
SETTINGS = frozenset({"seed", "load_average", "length_penalty", "chosen"})  # chosen: the α a grid chose


def run_figures(data: dict) -> dict[str, float]:
    """Every number of every run, by path (the values a prose number may be a quote of), less the split sizes."""
    found = {}
    for name in data["runs"]:
        run = seed_summary(name, data)
        for key, value in run.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool) and key not in SETTINGS:
                found[f"{name}/{key}"] = value
        for evaluation, scores in run.get("evaluations", {}).items():
            for key, value in scores.items():
                if (
                    isinstance(value, (int, float))
                    and not isinstance(value, bool)
                    and key not in SPLIT_SIZES | SETTINGS
                ):
                    found[f"{name}/{evaluation}/{key}"] = value
    return found

"""The search for a better ``multi30k-cpu`` recipe: train each candidate setting as the README's command line
does, pick its checkpoint by validation, score that one on test, and print one docs/results.json run per
candidate.

    python benchmarks/bleu_search.py --candidates search.json --runs runs/search --json runs/search/rows.json

``search.json`` is a list of candidates, each a label, ``--set`` fields, a seed and (optionally) minutes and
the averages to make beside best.pt (best-ema.pt comes with ``ema_decay``):

    [{"label": "tiny-s1", "seed": 1, "set": ["N=4", "d_model=128", "d_ff=256", "dropout=0.3"],
      "average": ["--around-best", "5"]},
     {"label": "ema-s1", "seed": 1, "set": ["ema_decay=0.999"], "max_minutes": 45}]

For each candidate, in its own folder RUNS/LABEL:

1. ``python -m transformer_course train --preset PRESET --set ... --set seed=SEED --max-minutes M`` (default 45);
2. ``average --run ... --last N`` / ``--around-best K`` for each ``average`` entry;
3. ``choose --run ...``: best.pt, best-ema.pt or an averaged file, by validation loss (test is never read);
4. ``evaluate`` of the chosen checkpoint on test, greedy and beam 4 (sacreBLEU and tokenized lowercase BLEU);
5. ``results add-run`` and ``add-eval`` into RUNS/results.json (seed and chosen kept): the row printed is that
   run's entry, in the form docs/results.json takes (copy it there with ``results add-run`` / ``add-eval``).

Every step is a separate process, as a user would run it; a step that fails stops that candidate with its
message, and the search goes on with the next. Candidates compared must run under the same conditions (threads,
machine load): the rows record the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from course_tools.results import record_evaluation, record_run

DEFAULT_MINUTES = 45.0
DECODINGS = {"greedy": 1, "beam4": 4}


def load_candidates(path: str | Path) -> list[dict]:
    """The candidates of ``path``, checked: a label (a folder name), ``set`` a list of FIELD=VALUE, a seed."""
    candidates = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(candidates, list) or not candidates:
        raise SystemExit(f"{path} must hold a JSON list of candidates: [{{'label': …, 'set': […], 'seed': 1}}, …]")
    labels = set()
    for i, c in enumerate(candidates):
        label = c.get("label") if isinstance(c, dict) else None
        if not isinstance(label, str) or not label.replace("-", "").replace("_", "").replace(".", "").isalnum():
            raise SystemExit(f"{path}: candidate {i} needs a label of letters, digits, - _ . (a folder name)")
        if label in labels:
            raise SystemExit(f"{path}: the label {label!r} is given twice; each candidate has its own folder")
        labels.add(label)
        if not isinstance(c.get("set", []), list) or not all(isinstance(s, str) and "=" in s for s in c.get("set", [])):
            raise SystemExit(f"{path}: {label}'s 'set' must be a list of FIELD=VALUE strings")
        if isinstance(c.get("seed"), bool) or not isinstance(c.get("seed"), int):
            raise SystemExit(f"{path}: {label} needs a 'seed' (a whole number): the search compares seeds")
        if not isinstance(c.get("average", []), list):
            raise SystemExit(f"{path}: {label}'s 'average' is a list of average options, e.g. ['--around-best', '5']")
    return candidates


def course(*argv, log: Path) -> None:
    """``python -m transformer_course ARGV``, its output appended to ``log``; a failure raises with its last line."""
    command = [sys.executable, "-m", "transformer_course", *map(str, argv)]
    with log.open("a", encoding="utf-8") as out:
        out.write(f"$ {' '.join(command[1:])}\n")
        out.flush()
        done = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, check=False)
    if done.returncode != 0:
        last = log.read_text(encoding="utf-8").strip().splitlines()[-1:]
        raise RuntimeError(f"`{' '.join(map(str, argv[:1]))}` failed ({done.returncode}): {' '.join(last)}")


def average_commands(entries: list[str]) -> list[list[str]]:
    """``["--last", "10", "--around-best", "5"]`` → one ``average`` call per option."""
    if len(entries) % 2:
        raise ValueError(f"'average' takes option-value pairs, e.g. ['--around-best', '5'], got {entries}")
    return [entries[i : i + 2] for i in range(0, len(entries), 2)]


def run_candidate(candidate: dict, args, results: Path) -> dict:
    """Train, average, choose, evaluate and record one candidate; returns its results.json entry."""
    label, seed = candidate["label"], candidate["seed"]
    run = Path(args.runs) / label
    run.mkdir(parents=True, exist_ok=True)
    log = run / "search.log"
    minutes = candidate.get("max_minutes", DEFAULT_MINUTES)
    sets = [x for s in [*candidate.get("set", []), f"seed={seed}"] for x in ("--set", s)]
    data = ["--root", args.root] + (["--limit", args.limit] if args.limit else [])
    train = ["train", "--preset", args.preset, *sets, "--max-minutes", minutes, "--out", run, "--no-progress"]
    train += ["--threads", args.threads] + (["--max-steps", args.max_steps] if args.max_steps else [])
    train += (["--epochs", args.epochs] if args.epochs else []) + data
    trained = run / "search-trained"  # written once the training finished: a search run again skips it
    if not trained.exists():
        course(*train, *(["--resume"] if (run / "last.pt").exists() else []), log=log)  # a killed search goes on
        trained.write_text("done\n", encoding="utf-8")
    for option in average_commands(candidate.get("average", [])):
        course("average", "--run", run, *option, log=log)
    course("choose", "--run", run, *data, log=log)
    chosen = json.loads((run / "chosen.json").read_text(encoding="utf-8"))
    for name, beam in DECODINGS.items():
        report = run / f"eval-{chosen['chosen']}-test-{name}.json"
        evaluate = ["evaluate", "--checkpoint", run / chosen["checkpoint"], "--split", "test", "--beam", beam]
        evaluate += ["--root", args.root, "--json", report, "--samples", 0, "--no-progress"]
        course(*evaluate, *(["--limit", args.eval_limit] if args.eval_limit else []), log=log)
        key = f"{chosen['chosen']}/test/{name}"
        record_evaluation(label, key, report, results, seed=seed, chosen=chosen["chosen"])  # results add-eval
    record_run(label, run, results, seed=seed, chosen=chosen["chosen"])  # results add-run
    entry = json.loads(results.read_text(encoding="utf-8"))["runs"][label]
    entry["set"] = candidate.get("set", [])
    entry["validation"] = {k: chosen[k] for k in ("by", "scores")}
    entry["load_average"] = round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None
    return entry


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--candidates", required=True, help="a JSON list of candidates (see the module's docstring)")
    parser.add_argument("--runs", default="runs/search", help="each candidate trains into RUNS/LABEL")
    parser.add_argument("--preset", default="multi30k-cpu")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--root", default="data")
    parser.add_argument("--limit", type=int, help="only the first N pairs of each split (quick checks)")
    parser.add_argument("--eval-limit", type=int, help="evaluate only the first N test sentences (quick checks)")
    parser.add_argument("--max-steps", type=int, help="stop each run after N steps too (quick checks)")
    parser.add_argument("--epochs", type=int, help="epochs (default: the preset's)")
    parser.add_argument("--json", help="also write every row to this file")
    args = parser.parse_args(argv)
    results = Path(args.runs) / "results.json"
    results.parent.mkdir(parents=True, exist_ok=True)
    if not results.exists():
        results.write_text(json.dumps({"schema": 1, "runs": {}}) + "\n", encoding="utf-8")
    rows, failed = {}, 0
    for candidate in load_candidates(args.candidates):
        try:
            rows[candidate["label"]] = run_candidate(candidate, args, results)
        except (RuntimeError, ValueError, OSError) as err:
            print(f"{candidate['label']}: {err}", file=sys.stderr)
            failed += 1
            continue
        print(json.dumps({candidate["label"]: rows[candidate["label"]]}, ensure_ascii=False), flush=True)
        if args.json:
            Path(args.json).write_text(json.dumps(rows, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

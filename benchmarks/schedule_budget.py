"""The time-budgeted schedule against the tuned step-based one, in the same minutes (docs/results.md).

Two runs of one scaled-down `multi30k-cpu` (2 + 2 layers, d_model 128, ~1,000-token batches) that differ only in
the schedule: the Noam schedule with the tuned 45-minute recipe's warmup of 300 steps, and `schedule=budget`
(warmup 10 % of the steps the first seconds measure, linear decay to 0 at the end of the budget). Both start
together, one torch thread each, so a busy machine slows both alike; each is then scored on the validation
set (loss from its history, greedy sacreBLEU of best.pt on the first --sentences validation sentences).

    python benchmarks/schedule_budget.py --minutes 4 --out /tmp/schedule-budget --root data

Prints one Markdown row per run (steps, epochs, validation loss, greedy BLEU) and the machine's load.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

SCALED = ["N=2", "d_model=128", "d_ff=512", "h=4", "tokens_per_batch=1000"]
RUNS = {"noam (warmup 300)": ["schedule=noam"], "budget (10 % warmup, linear decay)": ["schedule=budget"]}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=4.0, help="training minutes of each run (default 4)")
    parser.add_argument("--out", default="/tmp/schedule-budget", help="folder for the two runs")
    parser.add_argument("--root", default="data", help="Multi30k folder (default: data)")
    parser.add_argument("--sentences", type=int, default=300, help="validation sentences to translate (default 300)")
    args = parser.parse_args(argv)
    out = Path(args.out)
    procs = {}
    for i, (name, sets) in enumerate(RUNS.items()):
        run = out / f"run{i}"
        cmd = [sys.executable, "-m", "transformer_course", "train", "--preset", "multi30k-cpu", "--threads", "1"]
        cmd += [arg for s in SCALED + sets for arg in ("--set", s)]
        cmd += ["--max-minutes", str(args.minutes), "--out", str(run), "--root", args.root, "--no-progress"]
        out.mkdir(parents=True, exist_ok=True)
        procs[name] = (run, subprocess.Popen(cmd, stdout=open(out / f"run{i}.log", "w"), stderr=subprocess.STDOUT))
    load_during = os.getloadavg()
    for name, (run, proc) in procs.items():
        if proc.wait() != 0:
            raise SystemExit(f"{name}: training failed, see {run}.log")
    print(f"load average at the start: {load_during[0]:.2f}; at the end: {os.getloadavg()[0]:.2f} (2 cores)")
    print("| schedule | steps | epochs | best val loss | val greedy sacreBLEU (first N) |")
    print("|---|---|---|---|---|")
    for name, (run, _) in procs.items():
        history = json.loads((run / "history.json").read_text())
        val = [h["val_loss"] for h in history if h["val_loss"] is not None]
        steps, epoch = history[-1]["step"], history[-1]["epoch"]
        score = subprocess.run(
            [
                sys.executable,
                "-m",
                "transformer_course",
                "evaluate",
                "--checkpoint",
                str(run / "best.pt"),
                "--split",
                "val",
                "--limit",
                str(args.sentences),
                "--root",
                args.root,
                "--samples",
                "0",
                "--no-progress",
                "--json",
                str(run / "val.json"),
            ],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "OMP_NUM_THREADS": "1"},
        )
        bleu = json.loads((run / "val.json").read_text())["bleu"]
        print(f"| {name} | {steps} | {epoch} | {min(val):.3f} | {bleu:.2f} ({args.sentences}) |", flush=True)
        del score


if __name__ == "__main__":
    main()

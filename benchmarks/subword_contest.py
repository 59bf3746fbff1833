"""One try of the 45-minute CPU recipe contest: train a preset with some fields changed for a fixed time,
then score it with greedy decoding on the validation split (never on test: the test split is scored once, for
the recipe that wins here).

    python benchmarks/subword_contest.py --preset multi30k-cpu-bpe --minutes 15 --threads 1 \
        --set lr_factor=0.5 --set warmup=300 --out runs/contest/lr05

Prints one JSON line (also appended to ``--table``): the changed fields, optimizer steps, epochs, training
tokens per second, the last validation loss, and validation BLEU (sacreBLEU and tokenized lowercase) of the
last checkpoint and of the average of the last three epoch checkpoints. Tries that are compared must run
under the same conditions (threads, minutes, machine load): the load average is recorded with each row.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import time
from pathlib import Path

import torch

from transformer_course.checkpoint import average_checkpoints, epoch_checkpoints
from transformer_course.config import get_preset
from transformer_course.data import multi30k_data
from transformer_course.evaluate import evaluate_checkpoint
from transformer_course.train import RunOptions, fit


def parse_override(text: str, config) -> tuple[str, object]:
    name, _, raw = text.partition("=")
    names = {f.name: f for f in dataclasses.fields(config)}
    if name not in names or not raw:
        raise SystemExit(f"--set wants FIELD=VALUE with FIELD one of {sorted(names)}, got {text!r}")
    current = getattr(config, name)
    if isinstance(current, bool):
        return name, raw.lower() in ("1", "true", "yes")
    if isinstance(current, int):
        return name, int(raw)
    if isinstance(current, float) or current is None:
        return name, float(raw)
    return name, raw


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="multi30k-cpu-bpe")
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE")
    parser.add_argument("--minutes", type=float, default=15.0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--compile", action="store_true")
    parser.add_argument("--out", required=True)
    parser.add_argument("--root", default="data")
    parser.add_argument("--table", default="runs/contest/tries.jsonl")
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    config = get_preset(args.preset)
    changes = dict(parse_override(item, config) for item in args.set)
    config = config.replace(**changes)
    data = multi30k_data(config, args.root, progress=False)
    load_before = os.getloadavg()[0]
    result = fit(
        config,
        data,
        RunOptions(args.out, max_minutes=args.minutes, compile=args.compile, progress=False, save_every=10**6),
    )
    history = json.loads((Path(args.out) / "history.json").read_text())
    train_rows = [row for row in history if row.get("tokens_per_s")]
    val_rows = [row for row in history if row.get("val_loss") is not None]
    row = {
        "preset": args.preset,
        "changes": changes,
        "compile": args.compile,
        "threads": args.threads,
        "minutes": args.minutes,
        "steps": result.step,
        "epochs": result.epoch,
        "tokens_per_s": round(sorted(r["tokens_per_s"] for r in train_rows)[len(train_rows) // 2])
        if train_rows
        else None,
        "val_loss": val_rows[-1]["val_loss"] if val_rows else None,
        "load": [round(load_before, 1), round(os.getloadavg()[0], 1)],
    }
    scored = {"last": Path(args.out) / "last.pt"}
    epochs = epoch_checkpoints(args.out)
    if len(epochs) >= 3:
        scored["avg3"] = average_checkpoints(epochs[-3:], Path(args.out) / "averaged-last-3.pt")
    for name, path in scored.items():
        start = time.perf_counter()
        scores = evaluate_checkpoint(path, split="val", root=args.root, progress=False)
        row[f"{name}_val_bleu"] = [round(scores.bleu, 2), round(scores.tokenized_bleu, 2)]
        row[f"{name}_unk"] = sum("<unk>" in h for h in scores.hypotheses)
        row[f"{name}_eval_s"] = round(time.perf_counter() - start)
    line = json.dumps(row)
    print(line, flush=True)
    Path(args.table).parent.mkdir(parents=True, exist_ok=True)
    with open(args.table, "a") as table:
        table.write(line + "\n")


if __name__ == "__main__":
    main()

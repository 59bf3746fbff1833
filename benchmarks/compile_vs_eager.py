"""torch.compile against eager on the `multi30k-cpu` train step, with length-bucketed batches.

Length-bucketed batches change shape at almost every step (batch size and both lengths). Four ways to run the
same stream of batches, each in a fresh process (so no compiled graph is shared):

- eager;
- compile: ``torch.compile(model)`` as it was (a new graph per new shape until dynamo marks sizes dynamic);
- compile, buckets of 8: lengths padded up to multiples of 8 (``collate(..., multiple=8)``): few shapes;
- compile, dynamic: ``torch.compile(model, dynamic=True)`` (what ``fit`` uses with ``RunOptions(compile=True)``):
  one graph with symbolic sizes.

For each: seconds to the end of the first step (compiling), steps per second over the rest of the stream, the
graphs dynamo compiled and how often it recompiled. Same batches, same seeds; the stream mimics Multi30k's
subword lengths (about 2,000 positions per batch).

    python benchmarks/compile_vs_eager.py [--steps 40] [--threads 2] [--modes eager,compile,buckets,dynamic]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MODES = {"eager": "eager", "compile": "compile", "buckets": "compile, buckets of 8", "dynamic": "compile, dynamic"}


def stream(steps: int, tokens: int = 2000, seed: int = 0) -> list[list[tuple[list[int], list[int]]]]:
    """Batches of (src ids, tgt ids) pairs, lengths around Multi30k's subword lengths (12–20, up to 40)."""
    rng = random.Random(seed)
    batches = []
    for _ in range(steps):
        width = min(40, max(6, int(rng.gauss(17, 5))))
        pairs = []
        for _ in range(max(1, tokens // (width + 1))):
            s, t = max(2, width - rng.randint(0, 4)), max(2, width - rng.randint(0, 4))
            pairs.append(([rng.randrange(4, 8000) for _ in range(s)], [rng.randrange(4, 8000) for _ in range(t)]))
        batches.append(pairs)
    return batches


def one_mode(mode: str, steps: int, threads: int) -> dict:
    import torch

    from transformer_course.config import get_preset
    from transformer_course.data import collate
    from transformer_course.model import build_model
    from transformer_course.train import LabelSmoothingLoss, make_optimizer

    torch.set_num_threads(threads)
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", f"/tmp/torchinductor-bench-{os.getpid()}")  # a cold cache
    torch.manual_seed(0)
    config = get_preset("multi30k-cpu")
    model = build_model(config, 8000, 8000).train()
    optimizer = make_optimizer(model)
    for group in optimizer.param_groups:
        group["lr"] = 1e-4
    loss_fn = LabelSmoothingLoss(0.1, 0, reduction="sum")
    run = model
    if mode != "eager":
        run = torch.compile(model, dynamic=True if mode == "dynamic" else None)
    multiple = 8 if mode == "buckets" else 1
    batches = [collate(pairs, multiple=multiple) for pairs in stream(steps)]
    times = []
    start = time.perf_counter()
    for batch in batches:
        hidden = run(batch.src, batch.tgt_in, batch.src_mask, batch.tgt_mask)
        (loss_fn(model.generator(hidden), batch.tgt_out) / batch.n_tokens).backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        times.append(time.perf_counter() - start)
    shapes = len({(tuple(b.src.shape), tuple(b.tgt_in.shape)) for b in batches})
    stats = {}
    if mode != "eager":
        from torch._dynamo.utils import counters

        stats = {"graphs": counters["stats"].get("unique_graphs", 0), "recompiles": len(counters["recompiles"])}
    rest = times[-1] - times[0]
    return {
        "mode": MODES[mode],
        "first_step_s": times[0],
        "steps_per_s": (len(times) - 1) / rest,
        "shapes": shapes,
        **stats,
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--one", help=argparse.SUPPRESS)  # a child process: one mode, JSON on stdout
    args = parser.parse_args(argv)
    if args.one:
        sys.path.insert(0, str(REPO))
        print("RESULT " + json.dumps(one_mode(args.one, args.steps, args.threads)), flush=True)
        return
    print(
        f"{args.steps} steps of multi30k-cpu (3 + 3 layers, d_model 256), {args.threads} threads, "
        f"load average at the start {os.getloadavg()[0]:.2f}"
    )
    print("| mode | first step (s) | steps/s after it | batch shapes | graphs | recompiles |")
    print("|---|---|---|---|---|---|")
    for mode in args.modes.split(","):
        cmd = [sys.executable, __file__, "--one", mode, "--steps", str(args.steps), "--threads", str(args.threads)]
        out = subprocess.run(cmd, capture_output=True, text=True)
        line = next((ln for ln in out.stdout.splitlines() if ln.startswith("RESULT ")), None)
        if line is None:
            print(f"| {MODES[mode]} | failed: {(out.stderr.strip().splitlines() or ['?'])[-1][:120]} | | | | |")
            continue
        r = json.loads(line[7:])
        print(
            f"| {r['mode']} | {r['first_step_s']:.1f} | {r['steps_per_s']:.2f} | {r['shapes']} | "
            f"{r.get('graphs', '–')} | {r.get('recompiles', '–')} |",
            flush=True,
        )
    print(f"load average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()

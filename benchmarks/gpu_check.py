"""The prepared GPU check: notebook 11's GPU path and ``train --preset multi30k-base --max-minutes N``
on one GPU, then the rows for docs/results.md (steps/s, tokens/s, peak memory, BLEU greedy and beam 4).

    bash benchmarks/gpu_check.sh                     # one GPU, at most 9 minutes (the shell wrapper's timeout)
    GPU_CHECK_TINY=1 bash benchmarks/gpu_check.sh    # the same steps on a CPU at a tiny size (tests/test_gpu_check.py)

Stages, each printed as it starts: (1) on CUDA, the sync test of the steady-state step
(tests/test_sync.py, torch.cuda.set_sync_debug_mode("error")); (2) notebook 11 executed top to bottom with
nbclient (its GPU path: ``TC_GPU_MINUTES`` of training in two phases, best.pt chosen on validation, BLEU on the
full test set with beam 4), its figures read from a cell appended to the copy that runs; (3) the command line
trains ``multi30k-base`` for ``--cli-minutes`` and its best.pt is scored greedy and with beam 4 on the test set.
A JSON file with every figure is written beside the rows (``--out``/gpu_check.json).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # this checkout's package, wherever the script is run from

TINY_SETS = ["N=1", "d_model=32", "d_ff=64", "h=2", "subword_vocab=300", "tokens_per_batch=600", "validate_every=1"]

METRICS_CELL = """
import json as _json, resource as _resource, statistics as _statistics
_rows = [h["tokens_per_s"] for h in resumed.history if h["tokens_per_s"] is not None]
print("GPU_CHECK " + _json.dumps({
    "run": "notebook 11 (" + config.name + ")",
    "device": torch.cuda.get_device_name() if DEVICE == "cuda" else "cpu",
    "steps": resumed.step,
    "seconds": resumed.train_seconds,
    "tokens_per_s": _statistics.median(_rows) if _rows else None,
    "peak_bytes": torch.cuda.max_memory_allocated() if DEVICE == "cuda"
    else _resource.getrusage(_resource.RUSAGE_SELF).ru_maxrss * 1024,
    "peak_kind": "CUDA allocated" if DEVICE == "cuda" else "process RSS",
    "checkpoint": CHOSEN.name,
    "greedy": greedy.bleu,
    "beam4": beam.bleu,
    "sentences": len(beam.hypotheses),
}))
"""


def stage(title: str) -> float:
    print(f"\n=== {title} ({time.strftime('%H:%M:%S')}) ===", flush=True)
    return time.monotonic()


def sync_test() -> str:
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-x", str(REPO / "tests" / "test_sync.py")],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    print(result.stdout[-2000:], result.stderr[-2000:], flush=True)
    return "passed" if result.returncode == 0 else f"FAILED (exit {result.returncode})"


def notebook_run(minutes: float, tiny: bool) -> dict:
    """Execute notebook 11 (a copy in memory, with the metrics cell appended) and return its figures."""
    import nbformat

    from course_tools.kernels import notebook_client

    path = REPO / "notebooks" / "11_train_multi30k.ipynb"
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(METRICS_CELL))
    os.environ["TC_GPU_MINUTES"] = str(minutes)
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]
    )  # this checkout
    if tiny:
        os.environ["TC_FAST"] = "1"
    try:
        with notebook_client(
            nb, timeout=900, startup_timeout=120, resources={"metadata": {"path": str(path.parent)}}
        ) as client:
            client.execute()
    finally:
        os.environ.pop("TC_FAST", None) if tiny else None
    for output in nb.cells[-1].outputs:
        for line in output.get("text", "").splitlines():
            if line.startswith("GPU_CHECK "):
                return json.loads(line[len("GPU_CHECK ") :])
    raise RuntimeError("the notebook ran but printed no GPU_CHECK line")


def cli_run(minutes: float, out: Path, root: str, tiny: bool) -> dict:
    """``train --preset multi30k-base --max-minutes N`` in this process (so that its peak memory is known), then
    its best.pt scored greedy and with beam 4 on the test set."""
    import torch

    from transformer_course import cli
    from transformer_course.evaluate import evaluate_checkpoint

    run = out / "cli-multi30k-base"
    argv = ["train", "--preset", "multi30k-base", "--max-minutes", str(minutes), "--out", str(run), "--root", root]
    argv += ["--no-progress"]
    if tiny:
        argv += [a for s in TINY_SETS for a in ("--set", s)] + [
            "--limit",
            "300",
            "--max-steps",
            "12",
            "--device",
            "cpu",
        ]
        argv += ["--threads", "1"]
    cuda = torch.cuda.is_available() and not tiny
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    code = cli.main(argv)
    if code != 0:
        raise RuntimeError(f"train exited with {code}")
    peak = torch.cuda.max_memory_allocated() if cuda else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    history = json.loads((run / "history.json").read_text())
    rows = [h["tokens_per_s"] for h in history if h["tokens_per_s"] is not None]
    last = history[-1]
    limit = 20 if tiny else None
    scores = {}
    for beam in (1, 4):
        scores[beam] = evaluate_checkpoint(str(run / "best.pt"), "test", beam, root, limit, progress=False)
        print(scores[beam].summary(), flush=True)
    return {
        "run": f"train --preset multi30k-base --max-minutes {minutes:g}",
        "device": torch.cuda.get_device_name() if cuda else "cpu",
        "steps": last["step"],
        "seconds": last["elapsed_s"],
        "tokens_per_s": statistics.median(rows) if rows else None,
        "peak_bytes": peak,
        "peak_kind": "CUDA allocated" if cuda else "process RSS",
        "checkpoint": "best.pt",
        "greedy": scores[1].bleu,
        "beam4": scores[4].bleu,
        "sentences": len(scores[4].hypotheses),
    }


def row(r: dict) -> str:
    tokens = "–" if r["tokens_per_s"] is None else f"{r['tokens_per_s']:,.0f}"
    return (
        f"| {r['run']} | {r['device']} | {r['steps']:,} in {r['seconds'] / 60:.1f} min | {r['steps'] / r['seconds']:.2f} | "
        f"{tokens} | {r['peak_bytes'] / 2**30:.2f} GiB ({r['peak_kind']}) | {r['greedy']:.2f} | {r['beam4']:.2f} | "
        f"{r['checkpoint']}, {r['sentences']:,} |"
    )


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nb-minutes", type=float, default=4.0, help="notebook 11's training minutes (default 4)")
    parser.add_argument("--cli-minutes", type=float, default=1.5, help="the command line's training minutes (1.5)")
    parser.add_argument("--out", default="/tmp/gpu-check", help="folder for the command line's run and the JSON")
    parser.add_argument("--root", default=str(REPO / "data"), help="Multi30k folder (default: the repo's data/)")
    parser.add_argument("--tiny", action="store_true", help="a tiny rehearsal on the CPU (GPU_CHECK_TINY=1)")
    args = parser.parse_args(argv)
    import torch

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    print(
        f"torch {torch.__version__}, CUDA {'yes: ' + torch.cuda.get_device_name() if torch.cuda.is_available() else 'no'}"
    )
    results: dict = {}
    if torch.cuda.is_available() and not args.tiny:
        stage("1. no host sync in the steady-state step (tests/test_sync.py on CUDA)")
        results["sync_test"] = sync_test()
    t = stage(f"2. notebook 11, {args.nb_minutes:g} minutes of training")
    results["notebook"] = notebook_run(args.nb_minutes, args.tiny)
    print(f"notebook: {time.monotonic() - t:.0f} s\n{row(results['notebook'])}", flush=True)  # kept if time runs out
    t = stage(f"3. train --preset multi30k-base --max-minutes {args.cli_minutes:g}")
    results["cli"] = cli_run(args.cli_minutes, out, args.root, args.tiny)
    print(f"command line: {time.monotonic() - t:.0f} s", flush=True)
    results["wall_seconds"] = time.monotonic() - started
    (out / "gpu_check.json").write_text(json.dumps(results, indent=1))
    stage("rows for docs/results.md")
    if "sync_test" in results:
        print(f"sync-free steady-state step (set_sync_debug_mode('error')): {results['sync_test']}")
    print(
        "| run | device | steps | steps/s | tokens/s (median) | peak memory | greedy sacreBLEU | beam 4 sacreBLEU | scored |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    print(row(results["notebook"]))
    print(row(results["cli"]))
    print(f"\nall stages: {results['wall_seconds'] / 60:.1f} min; figures in {out / 'gpu_check.json'}", flush=True)


if __name__ == "__main__":
    main()

"""Wall time of each course notebook, run top to bottom, against its time target.

Notebooks 00–10 run in their normal mode (``TC_FAST`` unset); 11 trains on the real data and is timed in
fast mode (``TC_FAST=1``). Each runs in a fresh ``python3`` kernel in the ``notebooks/`` folder, one after
the other, and prints one line: name, seconds, target, ratio, ok/SLOW (or the failing cell).

    python benchmarks/notebook_times.py              # every notebook
    python benchmarks/notebook_times.py 00 01 02 03  # notebooks whose names start with these prefixes
    python benchmarks/notebook_times.py --fast 08    # force fast mode for every selected notebook
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import nbclient
import nbformat

from course_tools.kernels import notebook_client

NOTEBOOKS_DIR = Path(__file__).resolve().parent.parent / "notebooks"
# target in seconds and whether the target is for fast mode, by notebook number
TARGETS = {f"{n:02d}": (60, False) for n in range(8)} | {
    "08": (120, False),
    "09": (60, False),
    "10": (90, False),
    "11": (180, True),
    "12": (180, False),
}


def run_notebook(path: Path, fast: bool, cell_timeout: int) -> tuple[float, str | None]:
    """Execute ``path``; return its wall time and None, or the time and a one-line error."""
    if fast:
        os.environ["TC_FAST"] = "1"
    else:
        os.environ.pop("TC_FAST", None)
    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    try:
        with notebook_client(
            nb, timeout=cell_timeout, startup_timeout=180, resources={"metadata": {"path": str(NOTEBOOKS_DIR)}}
        ) as client:
            client.execute()
    except nbclient.exceptions.CellTimeoutError:
        return time.perf_counter() - start, f"a cell ran past {cell_timeout} s"
    except nbclient.exceptions.CellExecutionError as error:
        return time.perf_counter() - start, str(error).strip().splitlines()[-1][:200]
    except RuntimeError as error:  # e.g. the kernel did not start
        return time.perf_counter() - start, f"{type(error).__name__}: {error}"[:200]
    return time.perf_counter() - start, None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("prefixes", nargs="*", help="run only notebooks whose names start with one of these")
    parser.add_argument("--fast", action="store_true", help="run every selected notebook with TC_FAST=1")
    parser.add_argument("--cell-timeout", type=int, default=900, help="seconds one cell may run (default 900)")
    args = parser.parse_args()

    paths = sorted(NOTEBOOKS_DIR.glob("*.ipynb"))
    if args.prefixes:
        paths = [p for p in paths if p.name.startswith(tuple(args.prefixes))]
    if not paths:
        print(f"no notebook in {NOTEBOOKS_DIR} matches {args.prefixes}", file=sys.stderr)
        return 2
    os.environ.setdefault("MPLCONFIGDIR", str(Path(tempfile.gettempdir()) / "tc-mpl"))

    failures = 0
    for path in paths:
        target, target_fast = TARGETS.get(path.name[:2], (60, False))
        fast = args.fast or target_fast
        seconds, error = run_notebook(path, fast, args.cell_timeout)
        mode = "fast" if fast else "normal"
        verdict = f"FAILED: {error}" if error else ("ok" if seconds <= target else "SLOW")
        failures += error is not None or seconds > target
        print(
            f"{path.stem:36s} {mode:6s} {seconds:7.1f} s  target {target:4d} s  "
            f"ratio {seconds / target:4.2f}  {verdict}",
            flush=True,
        )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

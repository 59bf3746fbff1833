"""How much memory each notebook's kernel takes, run as graded: fast mode, the reference solutions filled in.

The classroom's memory limit (``python -m course_tools.classroom --memory GIB``, default 4) caps the
growth of the kernel's data segment beyond its start (``RLIMIT_DATA``; docs/teaching.md §6, "Why these
limits"). This prints, per notebook, the data segment (``VmData`` of ``/proc/PID/status``, Linux) when the
kernel has imported PyTorch and at its peak, sampled every 50 ms while the notebook runs, and the growth
between them: the figures that limit is chosen from.

    python benchmarks/notebook_memory.py            # every notebook, in order, in one solved course copy
    python benchmarks/notebook_memory.py 08 11      # these notebooks (the earlier ones' files are written too)
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

import nbclient
import nbformat

from course_tools.classroom.solve import solve_notebooks
from course_tools.kernels import notebook_client

REPO = Path(__file__).resolve().parent.parent
NOTEBOOKS = REPO / "notebooks"
sys.path.insert(0, str(REPO / "tests"))
from helpers import course_copy, write_earlier_files  # noqa: E402  (the test suite's course copy, one definition)

GIB = 2**30


def data_segment(pid: int) -> int:
    """VmData of process ``pid`` in bytes (0 once the process is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmData:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def measure(path: Path) -> tuple[int, int, str | None]:
    """Run ``path`` in a fresh kernel; return (data segment after the first cell, its peak, error or None)."""
    nb = nbformat.read(path, as_version=4)
    peak, stop = [0], threading.Event()
    with (
        notebook_client(nb, timeout=900, resources={"metadata": {"path": str(path.parent)}}) as client,
        client.setup_kernel(),
    ):
        pid = client.km.provisioner.pid

        def sample() -> None:
            while not stop.is_set():
                peak[0] = max(peak[0], data_segment(pid))
                time.sleep(0.05)

        code = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"]
        client.execute_cell(nb.cells[code[0]], code[0])  # the imports: PyTorch is loaded after this cell
        start = data_segment(pid)
        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        error = None
        try:
            for i in code[1:]:
                client.execute_cell(nb.cells[i], i)
        except nbclient.exceptions.CellExecutionError as failed:
            error = str(failed).strip().splitlines()[-1][:120]
        finally:
            stop.set()
            sampler.join()
    return start, max(peak[0], start), error


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("prefixes", nargs="*", help="notebook name prefixes, e.g. 08 11 (default: all)")
    args = parser.parse_args()
    if not Path("/proc/self/status").exists():
        print("this benchmark reads /proc/PID/status: it runs on Linux only")
        return 2
    os.environ["TC_FAST"] = "1"
    os.environ["PYTHONPATH"] = os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    with tempfile.TemporaryDirectory() as tmp:
        here = course_copy(Path(tmp))  # the package, data and figures linked in
        solve_notebooks(here, NOTEBOOKS, NOTEBOOKS / "solutions")
        worst = 0.0
        for path in sorted(here.glob("[0-9][0-9]_*.ipynb")):
            if args.prefixes and not any(path.name.startswith(p) for p in args.prefixes):
                continue
            write_earlier_files(path, here)  # what the earlier notebooks' build cells write, run or skipped
            start, peak, error = measure(path)
            worst = max(worst, (peak - start) / GIB)
            print(
                f"{path.stem:36s} at start {start / GIB:5.2f} GiB  peak {peak / GIB:5.2f} GiB  "
                f"growth {(peak - start) / GIB:5.2f} GiB" + (f"  FAILED: {error}" if error else "")
            )
        print(f"largest growth {worst:.2f} GiB (fast mode, solved, sampled every 50 ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

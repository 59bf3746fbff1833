"""How often the training loop reads a number back from the device, per step.

Runs ``fit`` on the toy task and counts, between the start of one optimizer step and the next, every host read
of a tensor's value (``Tensor.item``, ``tolist``, ``__bool__``, ``__int__``, ``__float__``, ``__index__``): on a GPU
each is a sync that drains the queue. The host side of a batch (collate, ``prepare_batch``'s checks on the host
tensors) and Adam's host-side step counters are left out: on a GPU they read no device memory. On CUDA it
also runs the same steps under ``torch.cuda.set_sync_debug_mode("warn")`` and counts the warnings.

    python benchmarks/sync_count.py [--steps 30] [--log-every 10] [--device cpu|cuda]

Prints the reads of each step: 0 on steady-state steps, 1 on log steps (one transfer of all pending checks).
"""

from __future__ import annotations

import argparse
import collections
import sys
import warnings
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from transformer_course.config import get_preset  # noqa: E402
from transformer_course.train import RunOptions, fit, loop, toy_data  # noqa: E402
from transformer_course.train import step as step_module  # noqa: E402

READS = ("item", "tolist", "__bool__", "__int__", "__float__", "__index__")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--log-every", type=int, default=10)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    state = {"count": 0, "on": False, "paused": 0, "optimizer": None}
    real_reads = {name: getattr(torch.Tensor, name) for name in READS}

    def counting(real):
        def read(t, *a, **k):
            opt = state["optimizer"]
            host_counter = opt is not None and any(s.get("step") is t for s in opt.state.values())
            if state["on"] and not state["paused"] and not host_counter:
                state["count"] += 1
            return real(t, *a, **k)

        return read

    def uncounted(function):
        def call(*a, **k):
            state["paused"] += 1
            try:
                return function(*a, **k)
            finally:
                state["paused"] -= 1

        return call

    marks = []
    real_step = loop.optimizer_step

    def marking_step(model, optimizer, *a):
        state["optimizer"], state["on"] = optimizer, True
        marks.append(state["count"])
        real_step(model, optimizer, *a)

    data = toy_data(n_train=32 * args.steps, batch_size=32)
    batches = data.train_batches

    def host_batches(epoch, start=0):
        it = batches(epoch, start)
        while (b := uncounted(next)(it, None)) is not None:
            yield b

    data.train_batches = host_batches
    for name in READS:
        setattr(torch.Tensor, name, counting(real_reads[name]))
    loop.optimizer_step, loop.prepare_batch = marking_step, uncounted(step_module.prepare_batch)
    try:
        warned = collections.Counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if args.device.startswith("cuda"):
                torch.cuda.set_sync_debug_mode("warn")
            fit(
                get_preset("toy-copy"),
                data,
                RunOptions(max_steps=args.steps, log_every=args.log_every, device=args.device, progress=False),
            )
            if args.device.startswith("cuda"):
                torch.cuda.set_sync_debug_mode("default")
        for w in caught:
            if "synchroniz" in str(w.message):
                warned[str(w.message)[:80]] += 1
    finally:
        for name in READS:
            setattr(torch.Tensor, name, real_reads[name])
        loop.optimizer_step, loop.prepare_batch = real_step, step_module.prepare_batch
    per_step = [b - a for a, b in zip(marks, marks[1:])]
    log_steps = {k + 1: n for k, n in enumerate(per_step) if (k + 1) % args.log_every == 0}
    other = [n for k, n in enumerate(per_step) if (k + 1) % args.log_every]
    print(f"device {args.device}, {args.steps} steps, log every {args.log_every}")
    print(
        f"host reads of tensor values per steady-state step: max {max(other)}, total {sum(other)} in {len(other)} steps"
    )
    print(f"per log step: {log_steps}")
    if args.device.startswith("cuda"):
        print(
            f"CUDA sync warnings in the whole run (log steps, validation and saving included): {sum(warned.values())}"
        )
        for message, n in warned.most_common(5):
            print(f"  {n} × {message}")


if __name__ == "__main__":
    main()

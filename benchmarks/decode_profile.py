"""Where the course's beam search spends its time: PyTorch's profiler over ``decode_sentences`` on test2016.

    python benchmarks/decode_profile.py CHECKPOINT [--sentences 300] [--beam 4] [--threads 2] [--root data]

Prints the wall time of one unprofiled run (after a warm-up), then the operators that took the most of the
profiled run's CPU time, each with its share and its number of calls: what a faster decoder would have to make
cheaper. The rest of the wall time is Python's.
"""

from __future__ import annotations

import argparse
import time

import torch
from torch.profiler import ProfilerActivity, profile

from transformer_course.checkpoint import load_checkpoint
from transformer_course.data import load_pairs
from transformer_course.decode import decode_sentences


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoint", help="a .pt file written by train")
    parser.add_argument("--sentences", type=int, default=300, help="the first N test2016 sentences (default: 300)")
    parser.add_argument("--beam", type=int, default=4, help="beam size (default: 4)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads (default: 2)")
    parser.add_argument("--root", default="data", help="Multi30k data folder (default: data)")
    parser.add_argument("--top", type=int, default=12, help="operators to list (default: 12)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    checkpoint = load_checkpoint(args.checkpoint)
    model = checkpoint.model.eval()
    sources = [s for s, _ in load_pairs("test", args.root, checkpoint.src_lang, checkpoint.tgt_lang)]
    sources = sources[: args.sentences]
    alpha = checkpoint.config.length_penalty

    def run():
        return decode_sentences(
            model, checkpoint.src_vocab, sources, args.beam, None, alpha, checkpoint.src_lang, 64, checkpoint.tokenizer
        )

    run()  # warm-up
    start = time.perf_counter()
    run()
    wall = time.perf_counter() - start
    with profile(activities=[ProfilerActivity.CPU]) as profiled:
        run()
    events = profiled.key_averages()
    total = sum(e.self_cpu_time_total for e in events)
    print(f"beam {args.beam}, {len(sources)} sentences, {args.threads} threads: {wall:.2f} s wall")
    print(f"profiled: {total / 1e6:.2f} s of CPU time in PyTorch operators\n")
    print(f"{'operator':<52} {'seconds':>8} {'share':>6} {'calls':>7}")
    for e in sorted(events, key=lambda e: -e.self_cpu_time_total)[: args.top]:
        print(f"{e.key:<52} {e.self_cpu_time_total / 1e6:>8.2f} {e.self_cpu_time_total / total:>6.1%} {e.count:>7}")


if __name__ == "__main__":
    main()

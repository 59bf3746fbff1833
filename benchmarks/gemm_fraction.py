"""How close the `multi30k-cpu` train step comes to this CPU's matrix-multiply rate, and how it compares with
nn.Transformer at identical work (docs/results.md).

One run prints both figures: the FLOPs of one train step (forward, loss, backward; counted by
torch.utils.flop_counter.FlopCounterMode, which counts matrix products and attention) divided by its median
time, against the rate of a 2048 × 2048 fp32 matmul on the same threads, measured in the same run. Three models
take the same batches, rounds alternating between them so that all see the same machine state:

- "ours": the package's model as `train --preset multi30k-cpu` builds it (FastDropout's masks, dropout.py);
- "ours, nn.Dropout": the same with PyTorch's nn.Dropout (`fast_dropout=False`), to show what the masks cost;
- "nn.Transformer": nn.Transformer's layers in place of the package's (the same embeddings, generator and loss)
  with the same dropouts at the same places: `--dropouts preset` (default) keeps the preset's P_drop 0.1 on
  sub-layer outputs and embeddings and switches nn.Transformer's attention and FFN-hidden dropouts off, as the
  preset has them; `--dropouts all` puts 0.1 on attention weights and the FFN's hidden layer in every model.

The process reuses freed memory as `train` does (train/allocator.py); `--allocator default` keeps glibc's
defaults. The Adam update is timed apart (it is no matmul). Then one step of "ours" under torch.profiler: the
time in matrix products (mm, addmm, bmm) and what the rest of the step spends, by operator.

    python benchmarks/gemm_fraction.py [--threads 2] [--rounds 5] [--steps 3] [--dropouts preset|all]

Batch: 80 sentences × (26 source + 27 target) tokens, vocabulary 8,000 (the multi30k-cpu step).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import time
from pathlib import Path

import torch
from torch.utils.flop_counter import FlopCounterMode

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from model_vs_nn_transformer import TorchTransformer  # noqa: E402

from transformer_course.config import get_preset  # noqa: E402
from transformer_course.masks import padding_mask, target_mask  # noqa: E402
from transformer_course.model import build_model  # noqa: E402
from transformer_course.train import LabelSmoothingLoss  # noqa: E402
from transformer_course.train.allocator import keep_freed_memory  # noqa: E402

MATMULS = ("aten::mm", "aten::addmm", "aten::bmm")
PAD = 0


def matmul_rate(n: int = 2048, repeats: int = 10) -> float:
    """fp32 GFLOP/s of an n × n matmul: the best of `repeats` (the machine's rate, not its noise)."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    a @ b
    best = min(_timed(lambda: a @ b) for _ in range(repeats))
    return 2 * n**3 / best / 1e9


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def match_dropouts(ref: TorchTransformer, config) -> None:
    """nn.Transformer's attention-weight and FFN-hidden dropouts set to the config's (its residual ones are P_drop)."""
    for layer in [*ref.core.encoder.layers, *ref.core.decoder.layers]:
        layer.dropout.p = config.ffn_dropout  # the FFN's hidden layer
        for attention in (getattr(layer, "self_attn", None), getattr(layer, "multihead_attn", None)):
            if attention is not None:
                attention.dropout = config.attention_dropout  # a float: F.multi_head_attention_forward's dropout_p


def profile_step(step_fn) -> None:
    """One step under torch.profiler: the matrix products' share and the other operators' largest shares."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        step_fn()
    events = [e for e in prof.key_averages() if e.self_cpu_time_total > 0]
    total = sum(e.self_cpu_time_total for e in events)
    matmul = sum(e.self_cpu_time_total for e in events if e.key in MATMULS)
    print(f"profiled step of ours: {total / 1000:.0f} ms of operator time, matrix products {matmul / total:.0%}")
    rest = sorted((e for e in events if e.key not in MATMULS), key=lambda e: -e.self_cpu_time_total)
    print("  the rest: " + ", ".join(f"{e.key} {e.self_cpu_time_total / total:.1%}" for e in rest[:8]))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=3, help="train steps per model per round")
    parser.add_argument("--batch", type=int, default=80)
    parser.add_argument("--dropouts", choices=("preset", "all"), default="preset")
    parser.add_argument("--allocator", choices=("keep", "default"), default="keep")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    kept = keep_freed_memory() if args.allocator == "keep" else False
    torch.manual_seed(0)
    config = get_preset("multi30k-cpu")
    if args.dropouts == "all":  # nn.Transformer's own: P_drop on attention weights and the FFN's hidden layer too
        config = config.replace(attention_dropout=config.dropout, ffn_dropout=config.dropout)
    vocab = config.subword_vocab
    ours = build_model(config, vocab, vocab)
    plain = build_model(config.replace(fast_dropout=False), vocab, vocab)
    ref = TorchTransformer(build_model(config.replace(fast_dropout=False), vocab, vocab))
    match_dropouts(ref, config)
    g = torch.Generator().manual_seed(0)
    src = torch.randint(4, vocab, (args.batch, 26), generator=g)
    tgt = torch.randint(4, vocab, (args.batch, 28), generator=g)
    tgt_in, tgt_out = tgt[:, :-1], tgt[:, 1:]  # 27 + 27
    src_mask, tgt_mask = padding_mask(src, PAD), target_mask(tgt_in, PAD)
    causal = torch.nn.Transformer.generate_square_subsequent_mask(tgt_in.size(1), dtype=torch.bool)
    loss_fn = LabelSmoothingLoss(config.label_smoothing, PAD, reduction="sum", fused=config.fused_loss)
    n_tokens = int((tgt_out != PAD).sum())

    def logits_of(model):
        return lambda: model.generator(model(src, tgt_in, src_mask, tgt_mask))

    def ref_logits():
        return ref.generator(ref(src, tgt_in, src == PAD, causal, tgt_in == PAD))

    runs = {"ours": (ours, logits_of(ours)), "ours, nn.Dropout": (plain, logits_of(plain))}
    runs["nn.Transformer"] = (ref, ref_logits)
    optims = {name: torch.optim.Adam(m.parameters(), lr=1e-4) for name, (m, _) in runs.items()}
    faults = {name: [] for name in runs}

    def step(name: str) -> tuple[float, float]:
        model, logits = runs[name]
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        start = time.perf_counter()
        (loss_fn(logits(), tgt_out) / n_tokens).backward()
        middle = time.perf_counter()
        optims[name].step()
        optims[name].zero_grad(set_to_none=True)
        faults[name].append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
        return middle - start, time.perf_counter() - middle

    flops = {}
    for name, (model, logits) in runs.items():
        model.train()
        with FlopCounterMode(display=False) as counter:
            (loss_fn(logits(), tgt_out) / n_tokens).backward()
        model.zero_grad(set_to_none=True)
        flops[name] = counter.get_total_flops()
        step(name)  # warm-up
    times = {name: [] for name in runs}
    adam = {name: [] for name in runs}
    faults = {name: [] for name in runs}  # the warm-up's faults (first touch of every buffer) are not counted
    rates = []
    names = list(runs)
    for r in range(args.rounds):
        rates.append(matmul_rate())
        for name in names[r % len(names) :] + names[: r % len(names)]:
            for _ in range(args.steps):
                fwd_bwd, update = step(name)
                times[name].append(fwd_bwd)
                adam[name].append(update)
    peak = statistics.median(rates)
    load = os.getloadavg()
    print(
        f"torch {torch.__version__}, {args.threads} threads, load average {load[0]:.2f} / {load[1]:.2f} "
        f"(1 / 5 min), batch {args.batch} x (26 + 27) tokens, vocabulary {vocab}, "
        f"{args.rounds * args.steps} steps per model, dropouts: {args.dropouts} (attention "
        f"{config.attention_dropout}, FFN hidden {config.ffn_dropout}, sub-layers and embeddings {config.dropout}), "
        f"freed memory {'kept for reuse' if kept else 'returned (glibc defaults)'}"
    )
    print(f"2048² fp32 matmul: {peak:.1f} GFLOP/s (median of {len(rates)} rounds, best of 10 each)")
    for name in runs:
        t = statistics.median(times[name])
        print(
            f"{name:>16}: {flops[name] / 1e9:.1f} GFLOP per forward + backward, median {1000 * t:.0f} ms "
            f"→ {flops[name] / t / 1e9:.1f} GFLOP/s = {flops[name] / t / 1e9 / peak:.0%} of the matmul rate; "
            f"Adam update {1000 * statistics.median(adam[name]):.0f} ms; "
            f"{statistics.median(faults[name]):.0f} page faults per step"
        )

    def whole(name):
        return statistics.median([sum(x) for x in zip(times[name], adam[name])])

    ratio = statistics.median(times["nn.Transformer"]) / statistics.median(times["ours"])
    print(
        f"ours vs nn.Transformer at identical work: forward + backward {ratio:.2f}x faster, whole step "
        f"{whole('nn.Transformer') / whole('ours'):.2f}x; nn.Dropout's masks cost "
        f"{whole('ours, nn.Dropout') / whole('ours') - 1:.0%} more (target: 60 % of the matmul rate, 1.5x)"
    )
    profile_step(lambda: (loss_fn(logits_of(ours)(), tgt_out) / n_tokens).backward())


if __name__ == "__main__":
    main()

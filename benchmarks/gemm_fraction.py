"""How close the `multi30k-cpu` train step comes to this CPU's matrix-multiply rate, and how it compares with
nn.Transformer at identical work (issue 28, docs/results.md).

One run prints both figures: the FLOPs of one train step (forward, loss, backward; counted by
torch.utils.flop_counter.FlopCounterMode, which counts matrix products and attention) divided by its median
time, against the rate of a 2048 × 2048 fp32 matmul on the same threads, measured in the same run; then the
same step with nn.Transformer's layers in place of the package's (the same embeddings, generator and loss, the
same dropouts: P_drop 0.1 on sub-layer outputs, attention weights and the FFN's hidden layer). Rounds alternate
between the models, so all see the same machine state. The Adam update is timed apart (it is no matmul).

    python benchmarks/gemm_fraction.py [--threads 2] [--rounds 5] [--steps 3]

Batch: 80 sentences × (26 source + 27 target) tokens, vocabulary 8,000 (the multi30k-cpu step of issue 28).
"""

from __future__ import annotations

import argparse
import os
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


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=3, help="train steps per model per round")
    parser.add_argument("--batch", type=int, default=80)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    config = get_preset("multi30k-cpu").replace(attention_dropout=0.1, ffn_dropout=0.1)  # nn.Transformer's dropouts
    vocab = config.subword_vocab
    ours = build_model(config, vocab, vocab)
    ref = TorchTransformer(build_model(config, vocab, vocab))
    g = torch.Generator().manual_seed(0)
    src = torch.randint(4, vocab, (args.batch, 26), generator=g)
    tgt = torch.randint(4, vocab, (args.batch, 28), generator=g)
    tgt_in, tgt_out = tgt[:, :-1], tgt[:, 1:]  # 27 + 27
    src_mask, tgt_mask = padding_mask(src, PAD), target_mask(tgt_in, PAD)
    causal = torch.nn.Transformer.generate_square_subsequent_mask(tgt_in.size(1), dtype=torch.bool)
    loss_fn = LabelSmoothingLoss(config.label_smoothing, PAD, reduction="sum")
    n_tokens = int((tgt_out != PAD).sum())

    def ours_logits():
        return ours.generator(ours(src, tgt_in, src_mask, tgt_mask))

    def ref_logits():
        return ref.generator(ref(src, tgt_in, src == PAD, causal, tgt_in == PAD))

    runs = {"ours": (ours, ours_logits), "nn.Transformer": (ref, ref_logits)}
    optims = {name: torch.optim.Adam(m.parameters(), lr=1e-4) for name, (m, _) in runs.items()}

    def step(name: str) -> tuple[float, float]:
        model, logits = runs[name]
        start = time.perf_counter()
        (loss_fn(logits(), tgt_out) / n_tokens).backward()
        middle = time.perf_counter()
        optims[name].step()
        optims[name].zero_grad(set_to_none=True)
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
    rates = []
    for r in range(args.rounds):
        rates.append(matmul_rate())
        for name in list(runs)[r % 2 :] + list(runs)[: r % 2]:
            for _ in range(args.steps):
                fwd_bwd, update = step(name)
                times[name].append(fwd_bwd)
                adam[name].append(update)
    peak = statistics.median(rates)
    load = os.getloadavg()
    print(
        f"torch {torch.__version__}, {args.threads} threads, load average {load[0]:.2f} / {load[1]:.2f} "
        f"(1 / 5 min), batch {args.batch} x (26 + 27) tokens, vocabulary {vocab}, "
        f"{args.rounds * args.steps} steps per model"
    )
    print(f"2048² fp32 matmul: {peak:.1f} GFLOP/s (median of {len(rates)} rounds, best of 10 each)")
    for name in runs:
        t = statistics.median(times[name])
        print(
            f"{name:>15}: {flops[name] / 1e9:.1f} GFLOP per forward + backward, median {1000 * t:.0f} ms "
            f"→ {flops[name] / t / 1e9:.1f} GFLOP/s = {flops[name] / t / 1e9 / peak:.0%} of the matmul rate; "
            f"Adam update {1000 * statistics.median(adam[name]):.0f} ms"
        )
    ratio = statistics.median(times["nn.Transformer"]) / statistics.median(times["ours"])
    both = [sum(x) for x in zip(times["nn.Transformer"], adam["nn.Transformer"])]
    ours_both = [sum(x) for x in zip(times["ours"], adam["ours"])]
    print(
        f"ours vs nn.Transformer at identical work: forward + backward {ratio:.2f}x faster, whole step "
        f"{statistics.median(both) / statistics.median(ours_both):.2f}x (target: 60 % of the matmul rate, 1.5x)"
    )


if __name__ == "__main__":
    main()

"""The switches later models flipped, each measured on one budget: held-out perplexity of the decoder-only LM
(notebook 12; docs/results.md "A GPT from the same parts").

One model size (gpt-cpu's: 4 layers, d_model 128, d_ff 512, 4 heads), one corpus (Multi30k's English captions,
2,000 BPE pieces), one budget: a fixed number of steps of a fixed number of rows, so every run sees the same
tokens and a busy machine changes its wall time, never its result. Each switch is one line of config against
the paper's model (post-LN, sinusoidal positions, LayerNorm, the ReLU FFN, multi-head attention); SwiGLU keeps the
ReLU FFN's parameter count (layers.swiglu_hidden). Every switch runs once per seed (the seed draws the weights and
the batches); then the unigram and bigram baselines (add-k, k chosen on validation) on the same ids. The runs go
``--workers`` at a time, each in its own process on one torch thread: on 2 cores two one-thread runs take about
the time of one two-thread run each, and a run's numbers do not depend on the machine's load.

    nice -n 5 python benchmarks/gpt_switches.py --root data          # writes docs/results.json, then:
    python -m transformer_course results render                        # the table in docs/results.md

Each (switch, seed) is written to docs/results.json as the run ``gpt-switches-SWITCH-seedN`` as soon as it ends
(a stopped benchmark keeps what it measured); at the end the run ``gpt-switches`` gets the baselines and each
switch's mean over the seeds (``SWITCH_test_perplexity``, ``SWITCH_spread``). ``--dry-run`` writes nothing.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from course_tools.results import load_results, record_figures  # noqa: E402
from transformer_course.config import get_preset  # noqa: E402
from transformer_course.data.captions import (  # noqa: E402
    best_k,
    bigram_perplexity,
    prepare_captions,
    unigram_perplexity,
)
from transformer_course.model import count_parameters  # noqa: E402
from transformer_course.train.lm import build_lm, lm_perplexity, train_lm  # noqa: E402

RUN = "gpt-switches"
PAPER = dict(norm_first=False, positional="sinusoidal", norm="layer", ffn="relu", n_kv_heads=None)
MODERN = dict(norm_first=True, positional="rope", norm="rms", ffn="swiglu", n_kv_heads=2)
SWITCHES = {  # name: (what the row says, the change to the paper's model)
    "paper": ("post-LN, sinusoidal, LayerNorm, ReLU FFN, multi-head", {}),
    "rope": ("positional=rope", dict(positional="rope")),
    "learned": ("positional=learned", dict(positional="learned")),
    "rms": ("norm=rms", dict(norm="rms")),
    "swiglu": ("ffn=swiglu, same parameters", dict(ffn="swiglu")),
    "gqa": ("n_kv_heads=2 of 4", dict(n_kv_heads=2)),
    "pre-ln": ("norm_first=True", dict(norm_first=True)),
    "all-modern": ("pre-LN + rope + rms + swiglu + gqa", MODERN),
}


DATA = None  # the captions, prepared once by the parent; the workers inherit them (fork)


def one_run(config, args) -> dict:
    """Train one model of ``config`` on the budget of ``args`` in this worker (one torch thread); its row."""
    torch.set_num_threads(1)
    torch.manual_seed(config.seed)
    model = build_lm(config, DATA.vocab_size)
    start = time.perf_counter()
    result = train_lm(
        model, DATA, steps=args.steps, lr=args.lr, warmup=0.1, seed=config.seed, batch_size=args.rows,
        context=args.context, log_every=100,
    )  # fmt: skip
    wall = time.perf_counter() - start
    test = lm_perplexity(model, DATA.eval_rows("test", args.rows, args.context))
    return {
        "parameters": count_parameters(model),
        "valid_perplexity": round(result.valid_perplexity, 2),
        "test_perplexity": round(test, 2),
        "wall_seconds": round(wall, 1),
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default="data", help="Multi30k folder (default: data; TC_DATA_MIRROR is tried)")
    parser.add_argument("--steps", type=int, default=800, help="optimizer steps of every run (default 800)")
    parser.add_argument("--rows", type=int, default=32, help="rows a step (default 32)")
    parser.add_argument("--context", type=int, default=32, help="ids read before each prediction (default 32)")
    parser.add_argument(
        "--lr", type=float, default=1e-3, help="peak learning rate of every run (default 1e-3: 3e-3 stalls post-LN)"
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1], help="seeds (default: 0 1)")
    parser.add_argument("--only", nargs="+", choices=list(SWITCHES), help="run only these switches")
    parser.add_argument("--workers", type=int, default=2, help="runs at a time, one thread each (default 2)")
    parser.add_argument("--dry-run", action="store_true", help="print the rows, write nothing")
    parser.add_argument("--summarise", action="store_true", help="only record the means of the recorded rows")
    args = parser.parse_args(argv)
    if args.summarise:
        return summarise(args.seeds)
    global DATA
    base = get_preset("gpt-cpu").replace(**PAPER, max_len=max(256, args.context + 1), context=args.context)
    os.environ["TOKENIZERS_PARALLELISM"] = "false"  # the workers are forked after the tokenizer ran
    DATA = data = prepare_captions(args.root, base.subword_vocab, "en")
    budget = f"{args.steps} steps of {args.rows} rows of {args.context + 1} ids, peak rate {args.lr:g}"
    print(f"{budget}; train stream {len(data.train):,} ids; load {os.getloadavg()[0]:.2f}", flush=True)

    def record(run: str, figures: dict) -> None:
        if not args.dry_run:
            record_figures(run, figures)

    switches = {name: SWITCHES[name] for name in (args.only or SWITCHES)}
    record(
        RUN,
        {
            "kind": "lm-switches",
            "about": "benchmarks/gpt_switches.py: the decoder-only LM on Multi30k's English captions (2,000 BPE "
            f"pieces), gpt-cpu's size, {budget}, AdamW, linear warmup over 10 % then linear decay; held-out "
            "perplexity on test2016's captions (validation: val). Baselines: add-k counts on the same ids.",
            "budget": budget,
            "seeds": args.seeds,
            "switches": {name: what for name, (what, _) in SWITCHES.items()},
            "torch": torch.__version__,
        },
    )
    runs = [(name, seed) for seed in args.seeds for name in switches]  # seed after seed: whole seeds first
    with ProcessPoolExecutor(args.workers, mp_context=multiprocessing.get_context("fork")) as pool:
        futures = {pool.submit(one_run, base.replace(**switches[n][1], seed=s), args): (n, s) for n, s in runs}
        for future in as_completed(futures):
            name, seed = futures[future]
            row = {"switch": name, **future.result()}  # the seed is in the run's name: no number for prose to match
            print(
                f"{name:>11} seed {seed}: test {row['test_perplexity']:7.2f}  valid {row['valid_perplexity']:7.2f}  "
                f"{row['parameters']:,} parameters  {row['wall_seconds']:5.0f} s  load {os.getloadavg()[0]:.2f}",
                flush=True,
            )
            record(f"{RUN}-{name}-seed{seed}", row)
    baselines = {}
    for name, perplexity in (("unigram", unigram_perplexity), ("bigram", bigram_perplexity)):
        k = best_k(perplexity, data.train, data.valid, data.vocab_size)
        baselines[f"{name}_k"] = f"{k:g}"  # a setting, kept as text: only measurements are figures
        baselines[f"{name}_valid_perplexity"] = round(perplexity(data.train, data.valid, data.vocab_size, k), 2)
        baselines[f"{name}_test_perplexity"] = round(perplexity(data.train, data.test, data.vocab_size, k), 2)
        print(f"{name:>11} (k={k:g}): test {baselines[f'{name}_test_perplexity']:7.2f}", flush=True)
    record(RUN, baselines)
    if not args.dry_run:
        summarise(args.seeds)


def summarise(seeds: list[int]) -> None:
    """Record each switch's mean test and validation perplexity over ``seeds`` and their spread (largest minus
    smallest test perplexity) on the summary run, from the rows in docs/results.json, for prose to quote."""
    runs = load_results()["runs"]
    means = {}
    for name in SWITCHES:
        rows = [runs.get(f"{RUN}-{name}-seed{seed}") for seed in seeds]
        if not all(rows):
            continue
        tests = [r["test_perplexity"] for r in rows]
        means[f"{name}_test_perplexity"] = round(sum(tests) / len(tests), 2)
        means[f"{name}_valid_perplexity"] = round(sum(r["valid_perplexity"] for r in rows) / len(rows), 2)
        means[f"{name}_spread"] = round(max(tests) - min(tests), 2)
        print(f"{name:>11}: mean test {means[f'{name}_test_perplexity']:.2f}, spread {means[f'{name}_spread']:.2f}")
    record_figures(RUN, means)


if __name__ == "__main__":
    main()

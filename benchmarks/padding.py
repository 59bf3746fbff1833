"""How much of each batch is padding on Multi30k train: length-bucketed batches vs the naive ways.

    TC_DATA_MIRROR=/path/to/multi30k python benchmarks/padding.py [--tokens-per-batch 4000] [--root data]

Prints the padded fraction of source, target and both for
- TokenBatchSampler (sorted pools, ~tokens_per_batch tokens per batch; the project's loader),
- random batches of the same average number of sentences, each padded to its own longest sentence,
- pad-to-max: every sentence padded to the longest sentence of the corpus, and to 72 (the "pad to 72" approach).
"""

from __future__ import annotations

import argparse
import random

from transformer_course.data import TokenBatchSampler, collate, padding_fraction, prepare_multi30k


def fractions_of(pair_batches, pad_to: int | None = None) -> dict[str, float]:
    """Padding fractions of batches given as lists of (src, tgt) id lists; ``pad_to`` pads every side to that length."""
    src_pad = src_all = tgt_pad = tgt_all = 0
    for pairs in pair_batches:
        src_w = pad_to or max(len(s) for s, _ in pairs)
        tgt_w = (pad_to + 1) if pad_to else max(len(t) for _, t in pairs) + 1  # tgt_out ends with </s>
        src_all += src_w * len(pairs)
        tgt_all += tgt_w * len(pairs)
        src_pad += sum(src_w - len(s) for s, _ in pairs)
        tgt_pad += sum(tgt_w - len(t) - 1 for _, t in pairs)
    return {"src": src_pad / src_all, "tgt": tgt_pad / tgt_all, "both": (src_pad + tgt_pad) / (src_all + tgt_all)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", default="data")
    parser.add_argument("--tokens-per-batch", type=int, default=4000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--pad-to",
        type=int,
        action="append",
        default=None,
        help="also show padding every sentence to this length (default: 72, a common tutorial setting)",
    )
    args = parser.parse_args()

    train = prepare_multi30k(args.root).train
    sampler = TokenBatchSampler(train, args.tokens_per_batch, shuffle=True, seed=args.seed)
    batches = [collate([train[i] for i in indices]) for indices in sampler]
    bucketed = padding_fraction(batches)
    per_batch = len(train) / len(batches)

    order = list(range(len(train)))
    random.Random(args.seed).shuffle(order)
    size = round(per_batch)
    random_batches = [[train[i] for i in order[k : k + size]] for k in range(0, len(order), size)]
    longest = max(max(len(s), len(t)) for s, t in (train[i] for i in range(len(train))))

    rows = [
        (f"TokenBatchSampler ({args.tokens_per_batch} tokens)", bucketed),
        (f"random batches of {size} sentences", fractions_of(random_batches)),
        (f"pad everything to the longest ({longest})", fractions_of(random_batches, pad_to=longest)),
    ]
    rows += [(f"pad everything to {n}", fractions_of(random_batches, pad_to=n)) for n in args.pad_to or [72]]
    print(f"Multi30k train: {len(train)} pairs, {len(batches)} batches, {per_batch:.1f} sentences per batch on average")
    print(f"{'padding fraction':44s} {'src':>7s} {'tgt':>7s} {'both':>7s}")
    for name, f in rows:
        print(f"{name:44s} {f['src']:7.1%} {f['tgt']:7.1%} {f['both']:7.1%}")


if __name__ == "__main__":
    main()

"""Decoding speed (notebook 09): the key/value cache, and beam 4 over the Multi30k test set.

1. Greedy decoding with the cache vs without (the decoder re-run over the whole prefix each step):
   batch 32, 40 new tokens, d_model 256, 3+3 layers, 8 heads, d_ff 1024. Target: ≥ 5×.
2. Beam search (beam 4, α 0.6) over the 1000 test_2016_flickr sentences with the ``multi30k-cpu-words``
   model size. Target: ≤ 60 s on 2 CPU cores.
   - Without ``--checkpoint``: a random model on the real sentence lengths (source lengths from the German
     file, tokenized with spaCy). A random model seldom says </s>, so </s> is switched off and every
     sentence is decoded to exactly its real English length + 1 (the </s> position); sentences are
     batched by that length. ``--cap`` also times the worst case, every sentence decoded to source
     length + 50 (the paper's maximum).
   - With ``--checkpoint PATH``: ``translate`` on the German sentences, stopping at </s> as in use.

    python benchmarks/decode_speed.py [--checkpoint PATH [--against PATH [--length-penalty A]]] [--cap] [--threads 2]

3. With ``--against BASELINE`` as well: beam 4 over the test set with both checkpoints, taken in turn (A B A B …,
   ``--rounds``), and the ratio of their median times: a new recipe's decoding against the old one's.
   ``--length-penalty A`` decodes ``--checkpoint`` with the beam's α = A instead of its config's: one file
   against itself at two α, or an old checkpoint decoded as a new recipe would.

Wall-clock and CPU seconds are both printed. On a shared, busy machine wall-clock time measures the
neighbours; run with ``--threads 1`` and read the CPU seconds: one idle core needs about that long,
two idle cores no longer.
"""

from __future__ import annotations

import argparse
import os
import time

import torch
from torch import nn

import transformer_course as tc
from transformer_course.data import BOS, EOS, PAD, multi30k_path, read_lines, tokenize_many
from transformer_course.decode import beam_search, greedy_decode, translate

DE_VOCAB, EN_VOCAB = 8012, 6190  # Multi30k train vocabularies with min_freq 2


class NoEndModel(nn.Module):
    """A model whose generator never gives </s>: decoding runs to ``max_len``, a fixed amount of work."""

    def __init__(self, model: tc.Transformer) -> None:
        super().__init__()
        self.model, self.config, self.model_config = model, model.config, model.model_config
        self.tgt_vocab_size = model.tgt_vocab_size

    def encode(self, src, src_mask):
        return self.model.encode(src, src_mask)

    def decode(self, memory, src_mask, tgt, tgt_mask, cache=None):
        return self.model.decode(memory, src_mask, tgt, tgt_mask, cache)

    def generator(self, hidden):
        return self.model.generator(hidden).index_fill(-1, torch.tensor([EOS]), float("-inf"))  # (B, V)

    def new_cache(self):
        return self.model.new_cache()


def timed(fn):
    """fn's result, its wall-clock seconds and the CPU seconds this process used meanwhile."""
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - wall, time.process_time() - cpu


def cache_vs_no_cache() -> None:
    torch.manual_seed(0)
    model = tc.make_model(DE_VOCAB, EN_VOCAB, N=3, d_model=256, d_ff=1024, h=8, dropout=0.1).eval()
    src = torch.randint(4, DE_VOCAB, (32, 14))  # (32, 14): 14 source words, about the test-set mean
    src_mask = tc.padding_mask(src, PAD)
    greedy_decode(model, src[:2], src_mask[:2], 5, BOS)  # warm-up
    cached, t_cache, cpu_cache = timed(lambda: greedy_decode(model, src, src_mask, 41, BOS, None, use_cache=True))
    full, t_full, cpu_full = timed(lambda: greedy_decode(model, src, src_mask, 41, BOS, None, use_cache=False))
    same = torch.equal(cached, full)
    print(
        f"1. greedy, batch 32, 40 new tokens, d_model 256, 3+3 layers: without cache {t_full:.2f} s "
        f"(CPU {cpu_full:.2f} s), with cache {t_cache:.2f} s (CPU {cpu_cache:.2f} s) -> speed-up "
        f"{t_full / t_cache:.1f}x wall, {cpu_full / cpu_cache:.1f}x CPU (target >= 5x); same tokens: {same}",
        flush=True,
    )


def test_sentences() -> tuple[list[str], list[int], list[int]]:
    # data/ as the rest of the project uses it: fetched (mirror TC_DATA_MIRROR first) and verified when missing.
    german = read_lines(multi30k_path("test_2016_flickr", "de"))
    english = read_lines(multi30k_path("test_2016_flickr", "en"))
    src_lengths = [len(t) for t in tokenize_many(german, "de")]
    tgt_lengths = [len(t) for t in tokenize_many(english, "en")]
    return german, src_lengths, tgt_lengths


def beam_on_random_model(src_lengths, tgt_lengths, batch_size: int, cap: bool) -> None:
    torch.manual_seed(0)
    config = tc.get_preset("multi30k-cpu-words")
    model = NoEndModel(tc.build_model(config, DE_VOCAB, EN_VOCAB)).eval()
    g = torch.Generator().manual_seed(0)
    # Batches of sentences with the same decode length: no sentence does more steps than it needs.
    decode_len = [s + 50 if cap else t + 1 for s, t in zip(src_lengths, tgt_lengths)]  # tokens to generate
    order = sorted(range(len(src_lengths)), key=lambda i: (decode_len[i], src_lengths[i]))
    batches, current = [], []
    for i in order:
        if current and (len(current) == batch_size or decode_len[i] != decode_len[current[0]]):
            batches.append(current)
            current = []
        current.append(i)
    batches.append(current)

    def run():
        for batch in batches:
            longest = max(src_lengths[i] for i in batch)
            src = torch.randint(4, DE_VOCAB, (len(batch), longest), generator=g)  # (b, S)
            for row, i in enumerate(batch):
                src[row, src_lengths[i] :] = PAD
            beam_search(
                model,
                src,
                tc.padding_mask(src, PAD),
                decode_len[batch[0]] + 1,
                BOS,
                EOS,
                beam_size=4,
                length_penalty=0.6,
            )

    _, seconds, cpu = timed(run)
    tokens = sum(decode_len)
    rule = "source length + 50 (the paper's cap)" if cap else "its real English length + 1 (</s>)"
    print(
        f"2. beam 4, random multi30k-cpu-words model ({tc.count_parameters(model.model) / 1e6:.2f}M parameters), "
        f"{len(src_lengths)} test_2016_flickr sentences, </s> switched off, each decoded to {rule}: "
        f"{tokens} output tokens in {len(batches)} batches: {seconds:.1f} s wall, {cpu:.1f} s CPU (target <= 60 s)",
        flush=True,
    )


def beam_on_checkpoint(path: str, german: list[str], batch_size: int) -> None:
    from transformer_course.checkpoint import load_checkpoint

    checkpoint = load_checkpoint(path)
    outputs, seconds, cpu = timed(lambda: translate(checkpoint, german, beam_size=4, batch_size=batch_size))
    words = sum(len(o.split()) for o in outputs)
    print(
        f"2. beam 4, checkpoint {path} ({checkpoint.config.name}), {len(german)} test_2016_flickr sentences, "
        f"stopping at </s> (max source length + 50): {words} output words: {seconds:.1f} s wall, {cpu:.1f} s CPU "
        "(target <= 60 s)",
        flush=True,
    )


def beam_side_by_side(
    path: str, against: str, german: list[str], batch_size: int, rounds: int, alpha: float | None = None
) -> None:
    """Beam 4 over the test set with two checkpoints, taken in turn ``rounds`` times (A B A B …) so that both see
    the same machine: the median seconds of each and their ratio. ``alpha``: the length penalty of ``path``'s
    beam (None: its config's); ``against`` decodes with its own. The two may be one file at two α."""
    from transformer_course.checkpoint import load_checkpoint

    def alpha_of(checkpoint, given):
        return checkpoint.config.length_penalty if given is None else given

    baseline, new = load_checkpoint(against), load_checkpoint(path)
    runs = {
        f"{against} (α {alpha_of(baseline, None):g})": (baseline, alpha_of(baseline, None)),
        f"{path} (α {alpha_of(new, alpha):g})": (new, alpha_of(new, alpha)),
    }
    if len(runs) < 2:
        raise SystemExit("--checkpoint and --against are one file at one α: give another file or --length-penalty")
    seconds = {name: [] for name in runs}
    for _ in range(rounds):
        for name, (checkpoint, a) in runs.items():
            _, wall, _ = timed(
                lambda c=checkpoint, a=a: translate(c, german, beam_size=4, batch_size=batch_size, length_penalty=a)
            )
            seconds[name].append(wall)
    median = {name: sorted(times)[len(times) // 2] for name, times in seconds.items()}
    for name, times in seconds.items():
        size = tc.count_parameters(runs[name][0].model) / 1e6
        print(
            f"   {name} ({size:.2f}M parameters): "
            + ", ".join(f"{t:.2f}" for t in times)
            + f" s; median {median[name]:.2f} s"
        )
    old_name, new_name = runs
    print(
        f"3. beam 4 side by side, {len(german)} test_2016_flickr sentences, {rounds} rounds: {new_name} takes "
        f"{median[new_name] / median[old_name]:.2f}x the time of {old_name} (target <= 1.00)",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-cache", action="store_true", help="leave out the cache-vs-no-cache timing (1.)")
    parser.add_argument(
        "--checkpoint", help="a trained checkpoint; default: a random model of the multi30k-cpu-words size"
    )
    parser.add_argument(
        "--against", help="with --checkpoint: a second checkpoint, timed in turn with it (beam 4), and the ratio"
    )
    parser.add_argument("--rounds", type=int, default=3, help="with --against: rounds of both (default 3)")
    parser.add_argument(
        "--length-penalty", type=float, help="with --against: the α --checkpoint decodes with (default: its config's)"
    )
    parser.add_argument("--cap", action="store_true", help="also time decoding every sentence to source length + 50")
    parser.add_argument("--batch-size", type=int, default=64, help="sentences per batch (default 64)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads (default 2, the course's CPU)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    if args.against and not args.checkpoint:
        parser.error("--against compares with --checkpoint: give both")
    with torch.inference_mode():
        if not args.skip_cache:
            cache_vs_no_cache()
        german, src_lengths, tgt_lengths = test_sentences()
        if args.checkpoint and args.against:
            beam_side_by_side(args.checkpoint, args.against, german, args.batch_size, args.rounds, args.length_penalty)
        elif args.checkpoint:
            beam_on_checkpoint(args.checkpoint, german, args.batch_size)
        else:
            beam_on_random_model(src_lengths, tgt_lengths, args.batch_size, cap=False)
            if args.cap:
                beam_on_random_model(src_lengths, tgt_lengths, args.batch_size, cap=True)


if __name__ == "__main__":
    main()

"""The course's decoders beside CTranslate2 (notebook 11): the same sentences, the same threads, the same checkpoint.

Times, on the Multi30k test set (test2016, or its first ``--limit N`` sentences):

- the course's greedy and beam 4 (``decode.decode_sentences``, what ``translate`` runs; torch on ``--threads``),
- CTranslate2 fp32 and int8 (an ``export-ct2`` of the checkpoint, ``--quantization int8``), greedy and beam 4,
  ``intra_threads`` = ``--threads``;
- with ``--baseline-ref REF``, the course's decoders as they were at git commit REF too (``git archive`` of that
  ``transformer_course/`` into a temporary folder, timed in a child process that imports it), beside today's (in
  a child process of its own too):
  the speed-up and whether every output is the same, token for token.

Each is timed (best of ``--repeat`` runs) from text to output ids (tokenization included; detokenizing, the same for all, is not), after one
warm-up sentence. Prints sentences/s, generated tokens/s (``</s>`` included), the speed relative to CTranslate2
fp32 at the same beam, and sacreBLEU of each against the references.

    python benchmarks/decode_vs_engine.py CHECKPOINT [--limit 200] [--threads 2] [--repeat 3] [--root data]
        [--baseline-ref 4811c75] [--no-engine]

On a shared machine wall-clock time measures the neighbours too: read ``uptime`` before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from transformer_course.checkpoint import load_checkpoint
from transformer_course.data import EOS, PAD, detokenize, load_pairs
from transformer_course.decode import decode_sentences
from transformer_course.evaluate import sacre_bleu

REPO = Path(__file__).resolve().parent.parent


def generated(rows: list[list[int]]) -> int:
    """Tokens the decoder produced: every id after <s> up to and including </s>, padding not counted."""
    total = 0
    for row in rows:
        words = row[1:]
        total += words.index(EOS) + 1 if EOS in words else sum(1 for i in words if i != PAD)
    return total


def to_text(checkpoint, rows: list[list[int]]) -> list[str]:
    if checkpoint.tokenizer is not None:
        return [checkpoint.tokenizer.decode(row) for row in rows]
    return [detokenize(checkpoint.tgt_vocab.decode(row, strip_specials=True)) for row in rows]


def timed(decode, sources: list[str], repeat: int) -> tuple[float, list[list[int]]]:
    """The best of ``repeat`` runs (a neighbour's burst on a shared machine only makes a run slower)."""
    decode(sources[:1])  # warm-up: spaCy's first call, CTranslate2's first allocation
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        rows = [out for _, out in decode(sources)]
        best = min(best, time.perf_counter() - start)
    return best, rows


def course_runs(args, checkpoint, sources) -> dict[int, tuple[float, list[list[int]]]]:
    """The course's greedy and beam (``decode_sentences``, what ``translate`` runs): {beam: (seconds, rows)}."""
    model, alpha = checkpoint.model.eval(), checkpoint.config.length_penalty
    runs = {}
    for beam in (1, args.beam):
        course = lambda s, beam=beam: decode_sentences(
            model, checkpoint.src_vocab, s, beam, None, alpha, checkpoint.src_lang, 64, checkpoint.tokenizer
        )
        runs[beam] = timed(course, sources, args.repeat)
    return runs


def child_runs(args, sources, ref: str | None) -> dict[int, tuple[float, list[list[int]]]]:
    """:func:`course_runs` in a child process, with the package at git commit ``ref`` (None: this checkout's).
    Old and new each run alone in a fresh process: an idle parent's thread pool would slow a child down."""
    with tempfile.TemporaryDirectory(prefix="tc-bench-course-") as tmp:
        package = str(REPO)
        if ref is not None:
            package = tmp
            archive = subprocess.run(
                ["git", "-C", str(REPO), "archive", ref, "transformer_course"], capture_output=True, check=True
            )
            subprocess.run(["tar", "-x", "-C", tmp], input=archive.stdout, check=True)
        Path(tmp, "sources.json").write_text(json.dumps(sources))
        worker = [sys.executable, __file__, args.checkpoint, "--worker", package, "--io", tmp]
        worker += ["--threads", str(args.threads), "--beam", str(args.beam), "--repeat", str(args.repeat)]
        subprocess.run(worker, check=True, env={**os.environ, "PYTHONPATH": package}, cwd=tmp)
        runs = json.loads(Path(tmp, "runs.json").read_text())
    return {int(beam): (seconds, rows) for beam, (seconds, rows) in runs.items()}


def worker(args) -> None:
    """The child of :func:`child_runs`: the package imported from the folder ``args.worker``."""
    import transformer_course

    assert Path(transformer_course.__file__).is_relative_to(args.worker), transformer_course.__file__
    torch.set_num_threads(args.threads)
    sources = json.loads(Path(args.io, "sources.json").read_text())
    runs = course_runs(args, load_checkpoint(args.checkpoint), sources)
    Path(args.io, "runs.json").write_text(json.dumps(runs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoint", help="a .pt file written by train")
    parser.add_argument("--limit", type=int, help="only the first N test sentences")
    parser.add_argument("--threads", type=int, default=2, help="torch threads and CTranslate2 intra_threads")
    parser.add_argument("--root", default="data", help="Multi30k data folder (default: data)")
    parser.add_argument("--beam", type=int, default=4, help="the beam size beside greedy (default: 4)")
    parser.add_argument("--repeat", type=int, default=3, help="time each this many times, keep the best (default: 3)")
    parser.add_argument("--baseline-ref", help="also time the course's decoders at this git commit (old against new)")
    parser.add_argument("--no-engine", action="store_true", help="leave CTranslate2 out")
    parser.add_argument("--worker", help=argparse.SUPPRESS)  # child_runs' child: the package's folder
    parser.add_argument("--io", help=argparse.SUPPRESS)  # and the folder of its sources and runs
    args = parser.parse_args()
    if args.worker:
        return worker(args)

    torch.set_num_threads(args.threads)
    checkpoint = load_checkpoint(args.checkpoint)
    model = checkpoint.model.eval()
    pairs = load_pairs("test", args.root, checkpoint.src_lang, checkpoint.tgt_lang)[: args.limit]
    sources, references = [s for s, _ in pairs], [t for _, t in pairs]
    alpha = checkpoint.config.length_penalty
    print(
        f"{args.checkpoint}: {checkpoint.config.name}, N={model.model_config.N} d_model={model.model_config.d_model} "
        f"{checkpoint.config.tokenizer}; {len(sources)} test sentences; {args.threads} threads; α={alpha}; "
        f"torch {torch.__version__}; os.cpu_count()={os.cpu_count()}; load {os.getloadavg()[0]:.2f}"
    )
    runs: dict[tuple[str, int], tuple[float, list[list[int]]]] = {}
    if args.baseline_ref:
        for beam, run in child_runs(args, sources, args.baseline_ref).items():
            runs[f"@{args.baseline_ref}"[:10], beam] = run
        for beam, run in child_runs(args, sources, None).items():  # today's too in a child of its own: like for like
            runs["course", beam] = run
    else:
        for beam, run in course_runs(args, checkpoint, sources).items():  # before CTranslate2's OpenMP threads exist
            runs["course", beam] = run
    if not args.no_engine:
        engine_runs(args, checkpoint, sources, runs)
    reference = "ct2 fp32" if not args.no_engine else "course"
    print(
        f"\n{'decoder':<10} {'beam':>4} {'seconds':>8} {'sent/s':>8} {'tok/s':>8} {'vs ' + reference:>11} {'BLEU':>6}"
    )
    for (name, beam), (seconds, rows) in sorted(runs.items(), key=lambda run: run[0][1]):
        reference_seconds = runs[reference, beam][0]
        bleu, _ = sacre_bleu(to_text(checkpoint, rows), references)
        print(
            f"{name:<10} {beam:>4} {seconds:>8.2f} {len(rows) / seconds:>8.1f} {generated(rows) / seconds:>8.0f} "
            f"{reference_seconds / seconds:>10.2f}× {bleu.score:>6.2f}"
        )
    if args.baseline_ref:
        for beam in (1, args.beam):
            (old_seconds, old_rows), (seconds, rows) = runs[f"@{args.baseline_ref}"[:10], beam], runs["course", beam]
            same = sum(a == b for a, b in zip(old_rows, rows))
            print(
                f"beam {beam}: the course's decoder is {old_seconds / seconds:.2f}× as fast as at {args.baseline_ref}; "
                f"{same} of {len(rows)} outputs the same, token for token"
            )
    print(f"\nload average after: {os.getloadavg()[0]:.2f} (1 min)")


def engine_runs(args, checkpoint, sources, runs) -> None:
    """CTranslate2 fp32 and int8, greedy and beam, added to ``runs``."""
    from course_tools.engine import export_ct2
    from transformer_course.engine import engine_ids, load_engine

    alpha = checkpoint.config.length_penalty
    with tempfile.TemporaryDirectory(prefix="tc-bench-ct2-") as tmp:
        engines = {}
        for quantization in ("float32", "int8"):
            export_ct2(checkpoint, f"{tmp}/{quantization}", quantization=quantization)
            engines[f"ct2 {'fp32' if quantization == 'float32' else 'int8'}"] = load_engine(
                f"{tmp}/{quantization}", threads=args.threads
            )
        for beam in (1, args.beam):
            for name, engine in engines.items():
                runs[name, beam] = timed(
                    lambda s, e=engine, beam=beam: engine_ids(e, s, beam, None, alpha), sources, args.repeat
                )


if __name__ == "__main__":
    main()

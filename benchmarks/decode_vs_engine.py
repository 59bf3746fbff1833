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
        [--baseline-ref 4811c75] [--no-engine] [--record decode-vs-engine]

``--record RUN`` writes the table as the run RUN of docs/results.json (``course_tools.results.record_figures``;
``--results FILE`` names another file): the machine (threads, torch and ctranslate2 versions, the load average
before and after), the checkpoint (preset, parameters), the number of sentences, one row per decoder and how many
of the course's greedy outputs are CTranslate2 fp32's, token for token. Notebook 11 prints that run.

On a shared machine wall-clock time measures the neighbours too: read ``uptime`` before and after (``--record``
keeps both).
"""

from __future__ import annotations

import argparse
import json
import os
import re
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
        checkpoint = str(Path(args.checkpoint).resolve())  # the child runs in tmp
        worker = [sys.executable, __file__, checkpoint, "--worker", package, "--io", tmp]
        worker += ["--threads", str(args.threads), "--beam", str(args.beam), "--repeat", str(args.repeat)]
        subprocess.run(worker, check=True, env={**os.environ, "PYTHONPATH": package}, cwd=tmp)
        runs = json.loads(Path(tmp, "runs.json").read_text())
    return {int(beam): (seconds, rows) for beam, (seconds, rows) in runs.items()}


def worker(args) -> None:
    """The child of :func:`child_runs`: the package imported from the folder ``args.worker``."""
    import transformer_course

    assert Path(transformer_course.__file__).is_relative_to(args.worker), transformer_course.__file__
    if not Path(args.worker).samefile(REPO):
        read_with_older_package()
    torch.set_num_threads(args.threads)
    sources = json.loads(Path(args.io, "sources.json").read_text())
    runs = course_runs(args, load_checkpoint(args.checkpoint), sources)
    Path(args.io, "runs.json").write_text(json.dumps(runs))


# Config fields an older package may not know, with the value at which today's model computes what it computed
# (None: a run option, which the decoders never read). A checkpoint with any other value is refused.
LATER_FIELDS = {
    "norm": "layer",
    "ffn": "relu",
    "n_kv_heads": None,
    "context": None,
    "ema_decay": None,
    "word_dropout": None,
    "word_dropout_on": None,
    "rdrop": None,
    "both_directions": None,
}


def read_with_older_package() -> None:
    """Let the package at ``--baseline-ref`` load today's checkpoint: its ``read_checkpoint`` drops the config
    fields it predates (:data:`LATER_FIELDS`), and only where their value leaves the model what it was then."""
    import dataclasses

    import transformer_course.checkpoint as old

    known = {f.name for f in dataclasses.fields(old.Config)}
    read = old.read_checkpoint

    def read_compatible(path, map_location="cpu"):
        state = read(path, map_location)
        for name in set(state["config"]) - known:
            if name not in LATER_FIELDS:
                raise SystemExit(f"the baseline's package does not know the config field {name!r}: pick a later ref")
            if LATER_FIELDS[name] is not None and state["config"][name] != LATER_FIELDS[name]:
                raise SystemExit(
                    f"{name}={state['config'][name]!r} is a model the baseline's package cannot build "
                    f"(it has only {LATER_FIELDS[name]!r}): compare on a checkpoint without it"
                )
            del state["config"][name]
        return state

    old.read_checkpoint = read_compatible


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoint", help="a .pt file written by train")
    parser.add_argument("--limit", type=int, help="only the first N test sentences")
    parser.add_argument("--threads", type=int, default=2, help="torch threads and CTranslate2 intra_threads")
    parser.add_argument("--root", default="data", help="Multi30k data folder (default: data)")
    parser.add_argument("--beam", type=int, default=4, help="the beam size beside greedy (default: 4)")
    parser.add_argument("--repeat", type=int, default=3, help="time each this many times, keep the best (default: 3)")
    parser.add_argument("--baseline-ref", help="also time the course's decoders at this git commit (old against new)")
    parser.add_argument("--no-engine", action="store_true", help="leave CTranslate2 out")
    parser.add_argument("--record", metavar="RUN", help="write the table as this run of docs/results.json")
    parser.add_argument(
        "--results", metavar="FILE", help="with --record: this results file (default: docs/results.json)"
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)  # child_runs' child: the package's folder
    parser.add_argument("--io", help=argparse.SUPPRESS)  # and the folder of its sources and runs
    args = parser.parse_args(argv)
    if args.worker:
        return worker(args)
    if args.record and args.no_engine:
        parser.error("--record measures against CTranslate2 fp32: leave out --no-engine")
    if args.record and not re.fullmatch(r"[\w.-]+", args.record):
        parser.error(f"--record takes a run's name (letters, digits, '.', '-', '_'), got {args.record!r}")
    if args.record:  # a results file that cannot take the row fails now, not after the timing
        try:
            results_file(args)
        except (OSError, ValueError) as error:
            parser.error(str(error))
    load_before = os.getloadavg()

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
    rows_measured = []
    for (name, beam), (seconds, rows) in sorted(runs.items(), key=lambda run: run[0][1]):
        reference_seconds = runs[reference, beam][0]
        bleu, _ = sacre_bleu(to_text(checkpoint, rows), references)
        print(
            f"{name:<10} {beam:>4} {seconds:>8.2f} {len(rows) / seconds:>8.1f} {generated(rows) / seconds:>8.0f} "
            f"{reference_seconds / seconds:>10.2f}× {bleu.score:>6.2f}"
        )
        rows_measured.append(
            {
                "decoder": name,
                "beam": beam,
                "seconds": round(seconds, 6),
                "tokens": generated(rows),
                "sentences_per_s": round(len(rows) / seconds, 1),
                "tokens_per_s": round(generated(rows) / seconds),
                "x_ct2_fp32": round(reference_seconds / seconds, 2),
                "sacrebleu": round(bleu.score, 2),
            }
        )
    load_after = os.getloadavg()
    print(f"\nload average after: {load_after[0]:.2f} (1 min)")
    versus = versus_baseline(args, runs, len(sources)) if args.baseline_ref else None
    if args.no_engine:
        return
    identical = same_ids(runs["course", 1][1], runs["ct2 fp32", 1][1])
    print(f"greedy: {identical} of {len(sources)} course outputs are CTranslate2 fp32's, token for token")
    beam_identical = same_ids(runs["course", args.beam][1], runs["ct2 fp32", args.beam][1])
    print(f"beam {args.beam}: {beam_identical} of {len(sources)} course outputs are CTranslate2 fp32's")
    if args.record:
        identical = {"greedy": identical, "beam": beam_identical}
        record(args, checkpoint, model, sources, rows_measured, identical, load_before, load_after, versus)


def record(args, checkpoint, model, sources, rows_measured, identical, load_before, load_after, versus=None):
    """The table as the run ``args.record`` of docs/results.json (or ``args.results``), through the course's
    results helpers (imported here: a ``--baseline-ref`` child imports an older package, without them)."""
    from course_tools.results import record_figures
    from transformer_course.model import count_parameters

    alpha = checkpoint.config.length_penalty
    figures = {
        "kind": "decode-vs-engine",
        "about": "benchmarks/decode_vs_engine.py: the course's greedy and beam search (decode_sentences) beside "
        "CTranslate2 fp32 and int8 (an export-ct2 of the same checkpoint) on the first sentences of test2016, "
        "the same threads; best of the repeats, text to output ids; tokens: generated ids, </s> included; "
        "x_ct2_fp32: CTranslate2 fp32's seconds at the same beam over the decoder's.",
        "measured": time.strftime("%Y-%m-%d"),
        "commit": commit(),
        "machine": {
            "threads": args.threads,
            "cpu_count": os.cpu_count(),
            "torch": torch.__version__,
            "ctranslate2": ctranslate2_version(),
            "load_before": [round(x, 2) for x in load_before],
            "load_after": [round(x, 2) for x in load_after],
        },
        "checkpoint": {
            "file": checkpoint_label(args.checkpoint),
            "preset": checkpoint.config.name,
            "tokenizer": checkpoint.config.tokenizer,
            "parameters": count_parameters(model),
            "step": checkpoint.step,
        },
        "test": {"split": "test2016", "sentences": len(sources), "beam": args.beam, "repeat": args.repeat,
                 "length_penalty": alpha},
        "decoders": rows_measured,
        "greedy_identical": {"identical": identical["greedy"], "of": len(sources)},
        "beam_identical": {"identical": identical["beam"], "of": len(sources), "beam": args.beam},
    }  # fmt: skip
    if versus is not None:
        figures["versus_baseline"] = versus
    # Every number sits one level down: a run's top-level numbers are figures that prose must mark when it writes
    # them, and this run's counts (1,000 sentences, beam 4) are the course's settings, written everywhere.
    path = results_file(args)
    record_figures(args.record, figures, path)
    print(f"recorded as the run {args.record!r} of {path}")


def versus_baseline(args, runs, sentences: int) -> dict:
    """Today's decoders against ``--baseline-ref``'s, printed and returned for the record: per beam, the speed-up
    (the baseline's seconds over today's) and how many outputs are the same, token for token."""
    baseline = f"@{args.baseline_ref}"[:10]
    versus = {"ref": args.baseline_ref, "beams": []}
    for beam in (1, args.beam):
        (old_seconds, old_rows), (new_seconds, new_rows) = runs[baseline, beam], runs["course", beam]
        same = same_ids(new_rows, old_rows)
        print(
            f"beam {beam}: {old_seconds / new_seconds:.2f}× as fast as {baseline}; {same} of {sentences} outputs the same"
        )
        versus["beams"].append({"beam": beam, "speedup": round(old_seconds / new_seconds, 2), "same": same})
    return versus


def results_file(args) -> Path:
    """The results file ``--record`` writes (``--results``, else docs/results.json), loaded once to check it."""
    from course_tools.results import load_results, results_path

    path = Path(args.results) if args.results else results_path()
    load_results(path)
    return path


def same_ids(course: list[list[int]], engine: list[list[int]]) -> int:
    """How many outputs are the same ids, the course's padding left out."""
    return sum([i for i in a if i != PAD] == [i for i in b if i != PAD] for a, b in zip(course, engine))


def commit() -> str | None:
    done = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return done.stdout.strip() or None


def ctranslate2_version() -> str:
    import ctranslate2

    return ctranslate2.__version__


def checkpoint_label(path: str) -> str:
    """The checkpoint as the repository names it (runs/…/best.pt), else its file name: no machine's own path."""
    resolved = Path(path).resolve()
    return str(resolved.relative_to(REPO)) if resolved.is_relative_to(REPO) else resolved.name


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

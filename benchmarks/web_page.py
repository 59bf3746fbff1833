"""The exported page at each precision (int8, int10, int12, fp32): its size, load time, time per translation in
headless Chromium, and how many translations differ from Python's fp32 greedy ones, with the BLEU change.

    python benchmarks/web_page.py [--checkpoint PATH] [--sentences 1000] [--precisions int8,fp32] [--json-dir DIR]
                                  [--record RUN]

One row per precision: page MiB, model ready (seconds after navigation), the first translation (ms, run by the page
when it opens), the median of the later ones (ms), translations that differ from ``translate(checkpoint, …,
beam_size=1)`` in Python, and sacreBLEU of the page's translations minus Python's on test2016.

Without ``--checkpoint`` the model is the ``multi30k-cpu`` preset (its joint BPE learned on the train split) with
random weights: its size and load time are the real model's; a random model seldom says </s>, so its sentences all
run to the length limit (source length + 50 steps), the slowest case, and its BLEU means nothing. With a trained
checkpoint the sentences stop at </s>. ``--json-dir`` writes one ``evaluate --json``-like file per precision (and
python-fp32.json) for ``python -m transformer_course results add-eval``; ``--record RUN`` adds the rows to
docs/results.json as the run RUN. Timings on a shared machine measure the neighbours too: the script prints the
load average beside them.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import torch

from course_tools.web import export_web
from course_tools.web.chromium import Chromium
from course_tools.web.export import PRECISIONS, precision_bits
from transformer_course.checkpoint import save_checkpoint
from transformer_course.config import get_preset
from transformer_course.data import load_pairs, subword_tokenizer
from transformer_course.decode import translate
from transformer_course.evaluate import sacre_bleu, tokenized_bleu
from transformer_course.model import build_model, count_parameters

TRANSLATE_ALL = """(async () => {
  const out = [];
  for (const s of %s) { const r = await tcPage.translate(s); out.push({text: r.text, ms: r.ms}); }
  return out;
})()"""


def random_checkpoint(path: Path, root: str) -> Path:
    config = get_preset("multi30k-cpu")
    tokenizer = subword_tokenizer(root, config.subword_vocab)
    vocab = tokenizer.vocab()
    torch.manual_seed(0)
    model = build_model(config, len(vocab), len(vocab)).eval()
    print(f"random {config.name}: {count_parameters(model):,} parameters")
    return save_checkpoint(path, model, config, vocab, vocab, tokenizer=tokenizer)


BACKEND = "(ort.env.webgpu && ort.env.webgpu.device) ? 'webgpu' : 'wasm'"  # the GPUDevice the runtime made


def measure_page(index: Path, sentences: list[str], browser: Chromium | None = None) -> dict:
    """Open the page from file:// in ``browser`` (or a Chromium of its own, which must log nothing), wait for its
    first translation, then translate ``sentences`` in it; the backend the runtime chose comes with the timings."""
    with contextlib.nullcontext(browser) if browser else Chromium() as open_browser:
        open_browser.open(index)
        first = open_browser.evaluate("tcPage.ready.then(r => r.ms)")
        timings = open_browser.evaluate("tcPage.timings")
        backend = open_browser.evaluate(BACKEND)
        start = time.perf_counter()
        results = open_browser.evaluate(TRANSLATE_ALL % json.dumps(sentences, ensure_ascii=False))
        seconds = time.perf_counter() - start
        assert browser or open_browser.console == [], open_browser.console
    return {
        "mib": index.stat().st_size / 2**20,
        "ready_ms": timings["load_ms"],
        "first_ms": first,
        "later_ms": statistics.median(r["ms"] for r in results),
        "backend": backend,
        "texts": [r["text"] for r in results],
        "seconds": seconds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", help="a trained checkpoint (default: the multi30k-cpu preset, random)")
    parser.add_argument("--sentences", type=int, default=1000, help="test2016 sentences to translate (default: all)")
    parser.add_argument("--root", default="data", help="data folder (default: data)")
    parser.add_argument(
        "--precisions",
        default=",".join(PRECISIONS),
        help=f"the pages to build and measure, comma-separated (default: {','.join(PRECISIONS)})",
    )
    parser.add_argument(
        "--json-dir", help="write PRECISION.json for each page and python-fp32.json here (for add-eval)"
    )
    parser.add_argument("--record", metavar="RUN", help="write the figures as this run of docs/results.json")
    args = parser.parse_args()
    precisions = args.precisions.split(",")
    for precision in precisions:
        precision_bits(precision)  # an unknown one is refused before any work
    pairs = load_pairs("test", args.root)[: args.sentences]
    sources, references = [de for de, _ in pairs], [en for _, en in pairs]
    with tempfile.TemporaryDirectory() as tmp:
        checkpoint = Path(args.checkpoint) if args.checkpoint else random_checkpoint(Path(tmp) / "random.pt", args.root)
        start = time.perf_counter()
        python = translate(checkpoint, sources, beam_size=1)
        runs = {"python-fp32": {"texts": python, "seconds": time.perf_counter() - start}}
        for precision in precisions:
            index = export_web(checkpoint, Path(tmp) / precision, precision=precision)
            runs[precision] = measure_page(index, sources)
    base = sacre_bleu(python, references)[0].score
    print(f"{len(sources)} test2016 sentences; Python fp32 greedy: sacreBLEU {base:.2f}")
    print(
        "precision | page MiB | model ready (s after navigation) | first translation (ms) | later (median ms) "
        "| translations changed | sacreBLEU change"
    )
    figures = {}
    for precision in precisions:
        r = runs[precision]
        changed = sum(a != b for a, b in zip(r["texts"], python))
        bleu = sacre_bleu(r["texts"], references)[0].score
        figures |= {
            f"{precision}_mib": round(r["mib"], 1),
            f"{precision}_ready_ms": int(round(r["ready_ms"], -1)),
            f"{precision}_first_ms": round(r["first_ms"]),
            f"{precision}_later_median_ms": round(r["later_ms"]),
            f"{precision}_changed": changed,
            f"{precision}_sacrebleu_change": round(bleu - base, 2),
        }
        print(
            f"{precision} | {r['mib']:.1f} | {r['ready_ms'] / 1000:.2f} | {r['first_ms']:.0f} | {r['later_ms']:.0f} "
            f"| {changed} of {len(sources)} | {bleu - base:+.2f}"
        )
    load = os.getloadavg()
    print("load average:", " ".join(f"{x:.1f}" for x in load))
    if args.record:
        from course_tools.results import record_figures

        record_figures(
            args.record,
            {
                "kind": "web-page",
                "about": "benchmarks/web_page.py: the page at each precision in headless Chromium from file://; "
                "changed: translations that differ from Python's fp32 greedy; ready: ms after navigation",
                "measured": time.strftime("%Y-%m-%d"),
                "machine": {"cpu_count": os.cpu_count(), "load_after": [round(x, 2) for x in load]},
                "checkpoint": "/".join(Path(args.checkpoint).parts[-2:]) if args.checkpoint else "random multi30k-cpu",
                "test": {"split": "test2016", "sentences": len(sources)},  # one level down: not a figure
                **figures,
            },
        )
        print(f"recorded as the run {args.record!r}")
    if args.json_dir:
        Path(args.json_dir).mkdir(parents=True, exist_ok=True)
        for name, r in runs.items():
            score, signature = sacre_bleu(r["texts"], references)
            record = {
                "bleu": score.score,
                "tokenized_bleu": tokenized_bleu(r["texts"], references).score,
                "signature": signature,
                "hypotheses": r["texts"],
                "seconds": r["seconds"],
            }
            (Path(args.json_dir) / f"{name}.json").write_text(json.dumps(record, ensure_ascii=False), encoding="utf-8")


if __name__ == "__main__":
    main()

"""The exported page's size and speed: page bytes, load time and time per sentence in headless Chromium.

    python benchmarks/web_page.py [--checkpoint PATH] [--sentences 20]

Without ``--checkpoint`` the model is the ``multi30k-cpu`` preset (joint BPE 8,000 learned on the train split,
3 + 3 layers, d_model 256, 8 heads: 9.6M parameters) with random weights, saved as a checkpoint and exported: its
size and load time are the real model's; a random model seldom says </s>, so its sentences all run to the length
limit (source length + 50 steps), the slowest case. With a trained checkpoint the sentences stop at </s>.
Timings on a shared machine measure the neighbours too: the script prints the load average beside them.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import torch

from course_tools.web import export_web
from course_tools.web.chromium import Chromium
from transformer_course.checkpoint import save_checkpoint
from transformer_course.config import get_preset
from transformer_course.data import load_pairs, subword_tokenizer
from transformer_course.model import build_model, count_parameters


def random_checkpoint(path: Path, root: str) -> Path:
    config = get_preset("multi30k-cpu")
    tokenizer = subword_tokenizer(root, config.subword_vocab)
    vocab = tokenizer.vocab()
    torch.manual_seed(0)
    model = build_model(config, len(vocab), len(vocab)).eval()
    print(f"random {config.name}: {count_parameters(model):,} parameters")
    return save_checkpoint(path, model, config, vocab, vocab, tokenizer=tokenizer)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", help="a trained checkpoint (default: the multi30k-cpu preset, random)")
    parser.add_argument("--sentences", type=int, default=20, help="test2016 sentences to translate (default: 20)")
    parser.add_argument("--root", default="data", help="data folder (default: data)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        checkpoint = Path(args.checkpoint) if args.checkpoint else random_checkpoint(Path(tmp) / "random.pt", args.root)
        start = time.perf_counter()
        index = export_web(checkpoint, Path(tmp) / "page")
        print(f"export: {time.perf_counter() - start:.0f} s")
        sizes = {p.name: p.stat().st_size for p in index.parent.iterdir() if p.is_file()}
        print("files:", ", ".join(f"{name} {size / 2**20:.1f} MiB" for name, size in sorted(sizes.items())))
        sentences = [de for de, _ in load_pairs("test", args.root)[: args.sentences]]
        with Chromium() as browser:
            start = time.perf_counter()
            browser.open(index)
            browser.evaluate("tcPage.ready")
            timings = browser.evaluate("tcPage.timings")
            print(
                f"load: {time.perf_counter() - start:.1f} s from navigation to the first translation; model ready "
                f"{timings['load_ms'] / 1000:.1f} s after navigation (runtime + graphs {timings['runtime_ms'] / 1000:.1f} s)"
            )
            results = [
                browser.evaluate(f"tcPage.translate({s!r}).then(r => ({{ms: r.ms, steps: r.steps}}))")
                for s in sentences
            ]
        ms = sorted(r["ms"] for r in results)
        steps = sum(r["steps"] for r in results)
        print(
            f"{len(results)} sentences: median {ms[len(ms) // 2]:.0f} ms, max {ms[-1]:.0f} ms per sentence; "
            f"{sum(ms) / steps:.1f} ms per decoder step ({steps / len(results):.1f} steps per sentence)"
        )
        print("load average:", " ".join(f"{x:.1f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()

"""The explorer page on WebGPU against WebAssembly: does onnxruntime-web's WebGPU backend make it faster?

    python benchmarks/web_webgpu.py --ort-dist DIR [--checkpoint PATH] [--sentences 100] [--adapter swiftshader]
        [--record RUN]

``DIR`` is the ``dist`` folder of the onnxruntime-web npm package of the version the page vendors
(``npm pack onnxruntime-web@1.30.0`` and unpack it; the page itself ships only the WebAssembly build, and nothing
here downloads it). The script exports the checkpoint's int8 page as ``export-web`` does, then builds the same
page a second time with the package's JSPI build (``ort.jspi.min.js``: the WebAssembly runtime with the WebGPU
execution provider), asking for ``["webgpu", "wasm"]``. Both pages run in the same headless Chromium, started with
WebGPU switched on (``--enable-unsafe-webgpu``) on the adapter ``--adapter`` names: on a machine without a GPU,
as here, that is SwiftShader, Chromium's software Vulkan. Printed per page: model ready (ms after navigation),
the first translation, the median of the later ones, which backend the runtime used, and how many of the
translations differ from the WebAssembly page's.

Without ``--checkpoint`` the model is the ``multi30k-cpu`` preset with random weights (web_page.py's), whose
sentences all run to the length limit.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import tempfile
import time
from pathlib import Path

from web_page import measure_page, random_checkpoint  # benchmarks/web_page.py, beside this script

from course_tools.web import export_web
from course_tools.web.chromium import Chromium
from course_tools.web.page import ORT_VERSION, build_page
from transformer_course.data import load_pairs


def webgpu_runtime(dist: Path) -> dict:
    """The JSPI build of onnxruntime-web from an unpacked npm package's ``dist`` (its version must be the page's)."""
    package = json.loads((dist.parent / "package.json").read_text(encoding="utf-8"))
    if package.get("version") != ORT_VERSION:
        raise SystemExit(f"--ort-dist holds onnxruntime-web {package.get('version')}; the page vendors {ORT_VERSION}")
    return {
        "ort": (dist / "ort.jspi.min.js").read_text(encoding="utf-8"),
        "glue": (dist / "ort-wasm-simd-threaded.jspi.mjs").read_text(encoding="utf-8"),
        "wasm_gz": gzip.compress((dist / "ort-wasm-simd-threaded.jspi.wasm").read_bytes(), 9, mtime=0),
        "providers": ["webgpu", "wasm"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ort-dist", required=True, help="the dist folder of onnxruntime-web's npm package")
    parser.add_argument("--checkpoint", help="a trained checkpoint (default: the multi30k-cpu preset, random)")
    parser.add_argument("--sentences", type=int, default=100, help="test2016 sentences to translate (default: 100)")
    parser.add_argument("--root", default="data", help="data folder (default: data)")
    parser.add_argument(
        "--adapter", default="swiftshader", help="Chromium's --use-webgpu-adapter (default: swiftshader)"
    )
    parser.add_argument("--record", metavar="RUN", help="write the figures as this run of docs/results.json")
    args = parser.parse_args()
    runtime = webgpu_runtime(Path(args.ort_dist))
    sources = [de for de, _ in load_pairs("test", args.root)[: args.sentences]]
    flags = ("--enable-unsafe-webgpu", f"--use-webgpu-adapter={args.adapter}", "--enable-features=Vulkan")
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        if args.checkpoint:
            checkpoint = Path(args.checkpoint)
        else:
            checkpoint = random_checkpoint(Path(tmp) / "random.pt", args.root)
        index = export_web(checkpoint, Path(tmp) / "wasm")
        folder = index.parent
        manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
        tokenizer = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))
        graphs = (folder / "encoder.onnx").read_bytes(), (folder / "decoder_step.onnx").read_bytes()
        webgpu = Path(tmp) / "webgpu" / "index.html"
        webgpu.parent.mkdir()
        webgpu.write_text(build_page(manifest, tokenizer, *graphs, runtime=runtime), encoding="utf-8")
        runs = {}
        with Chromium(flags=flags, timeout=1800) as browser:
            for name, page in (("wasm", index), ("webgpu", webgpu)):
                runs[name] = measure_page(page, sources, browser)
            adapter = browser.evaluate("navigator.gpu ? navigator.gpu.requestAdapter().then(a => !!a) : false")
            said = sorted({re.sub(r"^\S+ \S+ ", "", re.sub(r"\x1b\[[0-9;]*m", "", line)) for line in browser.console})
    for line in said:  # onnxruntime's warnings (which nodes WebGPU leaves to the CPU), once each
        print("console:", line[:200])
    print(f"{len(sources)} test2016 sentences; WebGPU adapter {args.adapter!r} available: {adapter}")
    print("page | MiB | backend | model ready (ms after navigation) | first (ms) | later (median ms) | differ")
    for name, r in runs.items():
        differ = sum(a != b for a, b in zip(r["texts"], runs["wasm"]["texts"]))
        r["differ"] = differ
        print(
            f"{name} | {r['mib']:.1f} | {r['backend']} | {r['ready_ms']:.0f} | {r['first_ms']:.0f} "
            f"| {r['later_ms']:.0f} | {differ}"
        )
    print("load average:", " ".join(f"{x:.1f}" for x in os.getloadavg()))
    if args.record:
        from course_tools.results import record_figures

        wasm, gpu = runs["wasm"], runs["webgpu"]
        figures = {
            "kind": "web-webgpu",
            "about": "benchmarks/web_webgpu.py: the int8 explorer page with onnxruntime-web's WebAssembly build and "
            "with its JSPI build asking for WebGPU first, both in one headless Chromium with WebGPU on",
            "measured": time.strftime("%Y-%m-%d"),
            "machine": {
                "adapter": args.adapter,
                "load_before": [round(x, 2) for x in load_before],
                "sentences": len(sources),
                "checkpoint": str(args.checkpoint or "random multi30k-cpu"),
                "backends": {"wasm": wasm["backend"], "webgpu": gpu["backend"]},
                "wasm_mib": round(wasm["mib"], 1),
                "webgpu_mib": round(gpu["mib"], 1),
            },
            "wasm_ready_ms": round(wasm["ready_ms"]),
            "wasm_later_median_ms": round(wasm["later_ms"]),
            "webgpu_ready_ms": round(gpu["ready_ms"]),
            "webgpu_later_median_ms": round(gpu["later_ms"]),
            "webgpu_differ": gpu["differ"],
        }
        record_figures(args.record, figures)
        print(f"recorded as the run {args.record!r}")


if __name__ == "__main__":
    main()

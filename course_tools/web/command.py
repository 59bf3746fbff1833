"""``python -m transformer_course export-web CHECKPOINT OUT``: its options and what it does.

The command itself is :func:`~course_tools.web.export_web`. Failures end as every command's do (the course's
one handler, :func:`transformer_course.cli.run_guarded`): ``error: …``, one line.
"""

from __future__ import annotations

import argparse

__all__ = ["build_parser", "cmd_export_web", "main"]


def build_parser(prog: str = "python -m transformer_course export-web") -> argparse.ArgumentParser:
    from .export import DEFAULT_PRECISION, PRECISIONS

    p = argparse.ArgumentParser(
        prog=prog,
        description="Write OUT/encoder.onnx, OUT/decoder_step.onnx, OUT/tokenizer.json, OUT/manifest.json and "
        "OUT/index.html: one self-contained page (onnxruntime-web, no server, no network) to open or share. "
        "Needs the [web] extra (onnx, onnxscript, onnxruntime).",
    )
    p.add_argument(
        "checkpoint", metavar="CHECKPOINT", help="a .pt file written by train, or a run folder: the one `choose` chose"
    )
    p.add_argument(
        "out",
        metavar="OUT",
        help="the folder to write: a new or empty one (created if missing), or one export-web wrote before; "
        "it writes nowhere else and replaces only the files it wrote (.tc-written.json lists them)",
    )
    p.add_argument("--language", default="en", help="the page's labels: en or zh (default: en)")
    p.add_argument(
        "--precision",
        default=DEFAULT_PRECISION,
        choices=list(PRECISIONS),
        help="the graphs' weights, rounded with one scale per output channel: int10 (default), int8 (a smaller "
        "page, more translations change) or int12; or fp32 (exactly PyTorch's greedy translations). "
        "docs/results.md counts the changed translations",
    )
    return p


def cmd_export_web(args) -> None:
    from transformer_course.train.choose import checkpoint_or_chosen

    from .export import export_web

    index = export_web(
        checkpoint_or_chosen(args.checkpoint), args.out, language=args.language, precision=args.precision
    )
    size = index.stat().st_size / 2**20
    print(f"wrote {index} ({size:.1f} MiB, everything inside it): open it in a browser, or put it on any static host")


def main(argv: list[str] | None = None, prog: str = "python -m transformer_course export-web") -> int:
    from transformer_course.cli import run_guarded

    return run_guarded(cmd_export_web, build_parser(prog).parse_args(argv))

"""``python -m transformer_course export-ct2 CHECKPOINT OUT``: its options and what it does.

The command itself is :func:`~course_tools.engine.export_ct2`. Failures end as every command's do (the course's
one handler, :func:`transformer_course.cli.run_guarded`): ``error: …``, one line.
"""

from __future__ import annotations

import argparse

__all__ = ["build_parser", "cmd_export_ct2", "main"]


def build_parser(prog: str = "python -m transformer_course export-ct2") -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=prog,
        description="Write a CTranslate2 model folder (model.bin, config.json, the vocabularies, course.json and, "
        "for BPE, tokenizer.json) that `translate --engine ctranslate2 --checkpoint OUT` translates with. "
        "Needs the [engine] extra (ctranslate2).",
    )
    p.add_argument("checkpoint", metavar="CHECKPOINT", help="a .pt file written by train")
    p.add_argument(
        "out",
        metavar="OUT",
        help="the folder to write: a new or empty one (created if missing), or one export-ct2 wrote before; "
        "it writes nowhere else and replaces only the files it wrote (.tc-written.json lists them)",
    )
    p.add_argument(
        "--quantization",
        default="float32",
        choices=("float32", "int8"),
        help="the weights' type in model.bin (default: float32; int8 is ~4× smaller, its translations may differ)",
    )
    return p


def cmd_export_ct2(args) -> None:
    from .export import export_ct2

    out = export_ct2(args.checkpoint, args.out, quantization=args.quantization)
    size = (out / "model.bin").stat().st_size / 2**20
    print(
        f"wrote {out}/ ({size:.1f} MiB model.bin, {args.quantization}): "
        f"python -m transformer_course translate --engine ctranslate2 --checkpoint {out} SENTENCE"
    )


def main(argv: list[str] | None = None, prog: str = "python -m transformer_course export-ct2") -> int:
    from transformer_course.cli import run_guarded

    return run_guarded(cmd_export_ct2, build_parser(prog).parse_args(argv))

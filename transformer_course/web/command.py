"""``python -m transformer_course export-web CHECKPOINT OUT``: its options and what it does (issue 24).

:func:`add_export_web` adds the command to the command line's parser (transformer_course/cli.py); the command
itself is :func:`~transformer_course.web.export_web`. Failures end as every command's do: ``error: …``, one line.
"""

from __future__ import annotations

__all__ = ["add_export_web", "cmd_export_web"]


def add_export_web(commands) -> None:
    """Add ``export-web`` to the sub-commands of the course's parser; ``args.run`` is the command to call."""
    p = commands.add_parser(
        "export-web",
        help="export a checkpoint to a static page that translates and shows attention in the browser",
        description="Write OUT/encoder.onnx, OUT/decoder_step.onnx, OUT/tokenizer.json, OUT/manifest.json and "
        "OUT/index.html: one self-contained page (onnxruntime-web, no server, no network) to open or share. "
        "Needs the [web] extra (onnx, onnxscript, onnxruntime).",
    )
    p.add_argument("checkpoint", metavar="CHECKPOINT", help="a .pt file written by train")
    p.add_argument("out", metavar="OUT", help="the folder to write (created if missing)")
    p.add_argument("--language", default="en", help="the page's labels: en or zh (default: en)")
    p.set_defaults(run=cmd_export_web)


def cmd_export_web(args) -> None:
    from .export import export_web

    index = export_web(args.checkpoint, args.out, language=args.language)
    size = index.stat().st_size / 2**20
    print(f"wrote {index} ({size:.1f} MiB, everything inside it): open it in a browser, or put it on any static host")

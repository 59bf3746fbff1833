"""How big the runtime is, by topic, against its budgets: at most 12,000 lines of Python under
``transformer_course/``, of which at most 5,000 are the learner's checks (``exercises/``).

    python benchmarks/package_size.py            # one row per topic, then the budgets as ratios
    python benchmarks/package_size.py --modules  # one row per module, largest first

Each row splits the lines into code, docstrings, comments and blank lines (docstrings found with ``ast``), so a
change that only reflows text shows as such. ``course_tools/`` is counted apart: it publishes the course and is
outside the runtime's budget.
"""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUNTIME = ROOT / "transformer_course"
BUDGETS = {"runtime": 12_000, "exercises": 5_000}
KINDS = ("lines", "code", "doc", "comment", "blank")
# topic → modules of the runtime (paths relative to transformer_course/; a folder means all of it)
TOPICS = {
    "the model": ["masks.py", "attention.py", "layers.py", "dropout.py", "model.py", "config.py"],
    "decoding": ["decode.py", "beam.py", "sampling.py", "engine.py", "evaluate.py"],
    "data": ["data"],
    "training": ["train", "checkpoint.py", "integrity.py", "rng.py"],
    "viz": ["viz", "ablation.py"],
    "checks": ["exercises", "i18n.py", "learner.py", "provenance.py"],
    "command line and files": ["cli.py", "cli_checks.py", "overrides.py", "failures.py", "files.py", "paths.py"],
}


def line_kinds(path: Path) -> dict[str, int]:
    """Lines of one file: code, docstring, comment, blank (a docstring line counts once, as a docstring)."""
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    docs: set[int] = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(getattr(first.value, "value", None), str):
                docs.update(range(first.lineno, first.end_lineno + 1))
    blank = sum(1 for n, line in enumerate(lines, 1) if not line.strip() and n not in docs)
    comment = sum(1 for n, line in enumerate(lines, 1) if line.strip().startswith("#") and n not in docs)
    return {"lines": len(lines), "code": len(lines) - blank - comment - len(docs), "doc": len(docs),
            "comment": comment, "blank": blank}  # fmt: skip


def files_of(entries: list[str], base: Path = RUNTIME) -> list[Path]:
    found = []
    for entry in entries:
        path = base / entry
        found += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    return found


def total(paths: list[Path]) -> dict[str, int]:
    sums = dict.fromkeys(KINDS, 0)
    for path in paths:
        for kind, n in line_kinds(path).items():
            sums[kind] += n
    return sums


def row(name: str, sums: dict[str, int]) -> str:
    return f"{name:<40} " + " ".join(f"{sums[kind]:>7,}" for kind in KINDS)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--modules", action="store_true", help="one row per module, largest first")
    args = parser.parse_args()
    every = sorted(RUNTIME.rglob("*.py"))
    print(f"{'':<40} " + " ".join(f"{kind:>7}" for kind in KINDS))
    if args.modules:
        for path in sorted(every, key=lambda p: -line_kinds(p)["lines"]):
            print(row(str(path.relative_to(RUNTIME)), line_kinds(path)))
    else:
        placed = {p for paths in TOPICS.values() for p in files_of(paths)}
        for topic, entries in TOPICS.items():
            print(row(topic, total(files_of(entries))))
        rest = [p for p in every if p not in placed]
        print(row("the rest", total(rest)))
        print("  the rest: " + ", ".join(str(p.relative_to(RUNTIME)) for p in rest))
    runtime, checks = total(every), total(files_of(["exercises"]))
    print(row("runtime (transformer_course/)", runtime))
    print(row("tooling (course_tools/, apart)", total(sorted((ROOT / "course_tools").rglob("*.py")))))
    for name, sums in (("runtime", runtime), ("exercises", checks)):
        budget = BUDGETS[name]
        ratio = sums["lines"] / budget
        print(f"{name}: {sums['lines']:,} lines / budget {budget:,} = {ratio:.2f} ({'ok' if ratio <= 1 else 'OVER'})")


if __name__ == "__main__":
    main()

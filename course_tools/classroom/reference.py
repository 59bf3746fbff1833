"""A notebook's reference solutions (``solutions/nbNN_name.py``), read as source text and never run, and the
few syntax-tree helpers the classroom build shares.

The classroom build (:mod:`course_tools.classroom`) copies code out of these modules into the
teacher's source notebooks: the body of a function or of a class's methods, or the value of a module
constant, with the imports that code needs. Nothing here imports the module, so a solution that needs
a GPU or a download can still be copied.
"""

from __future__ import annotations

import ast
import builtins
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "BUILTINS",
    "ConventionError",
    "ReferenceModule",
    "find_reference_module",
    "loaded_names",
    "parameter_names",
    "stored_names",
    "top_level_names",
]

BUILTINS = frozenset(dir(builtins))


class ConventionError(ValueError):
    """A notebook or a solutions module breaks the exercise convention; the message says where and what to change."""


def loaded_names(nodes: list[ast.AST]) -> set[str]:
    """Names read by ``nodes`` (``math`` in ``math.sqrt(d_k)``)."""
    return {n.id for node in nodes for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def stored_names(nodes: list[ast.AST]) -> set[str]:
    """Names bound anywhere inside ``nodes``: assignments, loop targets, defs, classes, imports, parameters."""
    names = set()
    for node in nodes:
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                names.add(n.id)
            elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(n.name)
            elif isinstance(n, (ast.Import, ast.ImportFrom)):
                names.update((a.asname or a.name).split(".")[0] for a in n.names)
            elif isinstance(n, ast.arg):
                names.add(n.arg)
    return names


def top_level_names(statements: list[ast.stmt]) -> set[str]:
    """Names that ``statements`` bind in their own namespace (a cell's or a module's), not inside functions."""
    names = set()
    for stmt in statements:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(stmt.name)
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in stmt.names)
        else:
            for child in ast.iter_child_nodes(stmt):
                if isinstance(child, ast.stmt):
                    names |= top_level_names([child])
                elif not isinstance(child, ast.Lambda):
                    names |= {n.id for n in ast.walk(child) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    return names


def parameter_names(function: ast.FunctionDef) -> list[str]:
    """``def f(a, b=1, *rest, c, **options)`` → ["a", "b", "*rest", "c", "**options"]."""
    a = function.args
    names = [x.arg for x in [*a.posonlyargs, *a.args]]
    names += [f"*{a.vararg.arg}"] if a.vararg else []
    names += [x.arg for x in a.kwonlyargs]
    names += [f"**{a.kwarg.arg}"] if a.kwarg else []
    return names


def find_reference_module(solutions: Path, number: str) -> Path:
    """The solutions module of notebook ``number`` ("01"): ``solutions/nb01_*.py``, exactly one."""
    found = sorted(Path(solutions).glob(f"nb{number}_*.py"))
    if len(found) != 1:
        what = "no" if not found else f"{len(found)} ({', '.join(p.name for p in found)})"
        raise ConventionError(
            f"notebook {number} has exercises but {solutions} holds {what} module named nb{number}_*.py; "
            "put its reference solutions in exactly one such file (or pass --solutions DIR)"
        )
    return found[0]


@dataclass(frozen=True)
class ReferenceModule:
    """One solutions module: its path, its source text and its syntax tree."""

    path: Path
    source: str
    tree: ast.Module

    @classmethod
    def read(cls, path: str | Path) -> ReferenceModule:
        path = Path(path)
        source = path.read_text(encoding="utf-8")
        try:
            tree = ast.parse(source, filename=str(path))
        except SyntaxError as error:
            raise ConventionError(f"{path}: line {error.lineno}: {error.msg}; fix the reference solution") from None
        return cls(path, source, tree)

    def definition(self, name: str, kind: type[ast.FunctionDef] | type[ast.ClassDef]) -> ast.FunctionDef | ast.ClassDef:
        """The module-level ``def name`` or ``class name`` (``kind``: ast.FunctionDef or ast.ClassDef)."""
        for node in self.tree.body:
            if isinstance(node, kind) and node.name == name:
                return node
        word = "function" if kind is ast.FunctionDef else "class"
        raise ConventionError(
            f"{self.path.name} defines no {word} {name!r}, the notebook's stub "
            f"(it defines: {', '.join(sorted(self.defined())) or 'nothing'}); give stub and reference one name"
        )

    def assigned(self, name: str) -> ast.expr | None:
        """The expression assigned to ``name`` at module level (``name = expr``), else None."""
        for node in self.tree.body:
            targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                    return node.value
        return None

    def value(self, name: str, given: list[tuple[str, str | None]] = ()) -> ast.expr:
        """The reference answer to a notebook's ``name = ...``: the module's ``name`` or ``NAME``; else, for each
        checker ``check_x`` the answer is given to (``given``: ("x", None) positionally, ("x", "key") as
        ``key=name``), the module's ``x`` or ``X``, or the entry ``"key"`` of a dict ``X`` or ``x``."""
        tried = []
        for subject, key in [(name, None), *given]:
            for spelling in (subject, subject.upper()):
                expr = self.assigned(spelling)
                if key is None:
                    tried.append(spelling)
                    if expr is not None:
                        return expr
                else:
                    tried.append(f"{spelling}[{key!r}]")
                    entries = dict(zip(expr.keys, expr.values)) if isinstance(expr, ast.Dict) else {}
                    for k, v in entries.items():
                        if isinstance(k, ast.Constant) and k.value == key:
                            return v
        bound = name in self.defined() or name.upper() in self.defined()
        raise ConventionError(
            f"{self.path.name} has no answer for the notebook's `{name} = ...`"
            + (" (it binds the name in a tuple or loop; give it a line of its own)" if bound else "")
            + f": looked for {', '.join(dict.fromkeys(tried))}; add `{name.upper()} = <the answer>`"
        )

    def defined(self) -> set[str]:
        """Names the module binds at top level other than by an import: functions, classes, constants."""
        return top_level_names([n for n in self.tree.body if not isinstance(n, (ast.Import, ast.ImportFrom))])

    def imports(self) -> dict[str, str]:
        """Each name the module imports at top level → one import statement that binds only that name."""
        statements = {}
        for node in self.tree.body:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    bound = alias.asname or alias.name.split(".")[0]
                    statements[bound] = f"import {alias.name}" + (f" as {alias.asname}" if alias.asname else "")
            elif isinstance(node, ast.ImportFrom) and node.module != "__future__":
                module = "." * node.level + (node.module or "")
                for alias in node.names:
                    bound = alias.asname or alias.name
                    statements[bound] = f"from {module} import {alias.name}" + (
                        f" as {alias.asname}" if alias.asname else ""
                    )
        return statements

    def segment(self, node: ast.AST) -> str:
        """The source text of a node, as written."""
        return ast.get_source_segment(self.source, node)

    def statements_text(self, body: list[ast.stmt], indent: str) -> list[str]:
        """The source lines of the consecutive statements ``body`` (with the comment lines just above the first),
        moved from their own indentation to ``indent``."""
        lines = self.source.splitlines()
        start = body[0].lineno - 1  # 0-based
        while start > 0 and lines[start - 1].strip().startswith("#"):
            start -= 1
        own = " " * body[0].col_offset
        moved = []
        for line in lines[start : body[-1].end_lineno]:
            if not line.strip():
                moved.append("")
            elif line.startswith(own):
                moved.append(indent + line[len(own) :])
            else:  # a continuation line of a string written further left: keep it as it is
                moved.append(line)
        return moved

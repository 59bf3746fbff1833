"""The layout: two layers, one topic per module, arrows that point one way.

The runtime ``transformer_course`` (what notebooks and a user's training, translation and heatmaps import) and the
course tools ``course_tools`` (the HTML edition, slides, classroom, web export, results), which import the runtime
and never the reverse. Every import inside both is read from the source (``ast``), those inside functions
included, so an import cycle hidden in a function body shows here although Python would never complain about it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "transformer_course"
NAME = "transformer_course"
TOOLS = "course_tools"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


MODULES = {module_name(p): p for top in (NAME, TOOLS) for p in sorted((ROOT / top).rglob("*.py"))}
RUNTIME = sorted(m for m in MODULES if m.partition(".")[0] == NAME)


def resolve(node: ast.ImportFrom, here: str, is_package: bool) -> str:
    if node.level == 0:
        return node.module or ""
    base = here.split(".") if is_package else here.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def known(name: str) -> str | None:
    """The package module that ``name`` denotes (a module, or a name inside one)."""
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


def imports_of(name: str) -> set[str]:
    path = MODULES[name]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = resolve(node, name, path.name == "__init__.py")
            targets = [f"{base}.{alias.name}" for alias in node.names] + [base]
        else:
            continue
        for target in targets:
            if target.partition(".")[0] in (NAME, TOOLS) and (module := known(target)) and module != name:
                out.add(module)
    # "from .x import y" inside package p also imports p itself; the parent packages are not edges we follow.
    return {m for m in out if not name.startswith(m + ".")}


GRAPH = {name: imports_of(name) for name in MODULES}


def reaches(start: str, goal_prefix: str) -> list[str] | None:
    """A path of imports from ``start`` to a module under ``goal_prefix``, or None."""
    seen, stack = {start}, [[start]]
    while stack:
        path = stack.pop()
        for nxt in sorted(GRAPH[path[-1]]):
            if nxt == goal_prefix or nxt.startswith(goal_prefix + "."):
                return path + [nxt]
            if nxt not in seen:
                seen.add(nxt)
                stack.append(path + [nxt])
    return None


def find_cycle() -> list[str] | None:
    WHITE, GREY, BLACK = 0, 1, 2
    colour = dict.fromkeys(GRAPH, WHITE)
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        colour[node] = GREY
        stack.append(node)
        for nxt in sorted(GRAPH[node]):
            # A package's __init__ re-exporting its own submodules is not a cycle of topics.
            if node.startswith(nxt + ".") or nxt.startswith(node + "."):
                continue
            if colour[nxt] == GREY:
                return stack[stack.index(nxt) :] + [nxt]
            if colour[nxt] == WHITE and (cycle := visit(nxt)):
                return cycle
        stack.pop()
        colour[node] = BLACK
        return None

    for node in sorted(GRAPH):
        if colour[node] == WHITE and (cycle := visit(node)):
            return cycle
    return None


def test_the_reader_finds_the_modules_where_the_layout_says():
    for name in ["masks", "attention", "layers", "model", "config", "files", "checkpoint", "decode", "evaluate"]:
        assert f"{NAME}.{name}" in MODULES
    for package in ["data", "train", "viz", "exercises"]:
        assert (PACKAGE / package / "__init__.py").is_file(), package
    for package in ["edition", "classroom", "web", "results"]:
        assert (ROOT / TOOLS / package / "__init__.py").is_file(), package


def test_no_import_cycles_between_modules_function_level_imports_included():
    cycle = find_cycle()
    assert cycle is None, "import cycle: " + " → ".join(cycle)


@pytest.mark.parametrize(
    "module", ["checkpoint", "decode", "evaluate", "viz", "data", "model", "attention", "layers", "masks"]
)
def test_decoding_evaluation_views_and_the_model_need_no_training_code(module):
    path = reaches(f"{NAME}.{module}", f"{NAME}.train")
    assert path is None, " → ".join(path)


@pytest.mark.parametrize("module", RUNTIME)
def test_no_runtime_module_imports_the_course_tools(module):
    """The runtime never imports the tools, at its top or inside a function; only the command line names them,
    as strings it loads when a tool's command is given (transformer_course.cli.TOOLS)."""
    imported = sorted(m for m in GRAPH[module] if m.partition(".")[0] == TOOLS)
    assert imported == [], f"{module} imports {imported}: the runtime must not import the course tools"
    if module == f"{NAME}.cli":
        return
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    named = [
        n.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.startswith(TOOLS + ".")
    ]
    assert named == [], f"{module} names tool modules {named} (an importlib call?): only the CLI dispatches to them"


def test_the_import_direction_check_sees_a_function_level_import_of_the_tools(tmp_path):
    tree = ast.parse("def f():\n    from course_tools.web import export\n")
    node = next(n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom))
    assert resolve(node, f"{NAME}.decode", False) == f"{TOOLS}.web"
    assert known(f"{TOOLS}.web.export") == f"{TOOLS}.web.export"


def test_the_model_core_imports_nothing_but_the_core():
    core = {f"{NAME}.{m}" for m in ["masks", "attention", "layers", "dropout", "model", "config", "sampling"]}
    for module in core:
        assert GRAPH[module] <= core, f"{module} imports {sorted(GRAPH[module] - core)}"


@pytest.mark.parametrize("name", sorted(n for n in MODULES if not MODULES[n].name.startswith("__main__")))
def test_each_public_module_declares_all_and_a_docstring(name):
    tree = ast.parse(MODULES[name].read_text(encoding="utf-8"))
    assert ast.get_docstring(tree), f"{name} has no docstring naming its notebook"
    if ".solutions" in name:
        return
    names = {
        t.id for node in tree.body if isinstance(node, ast.Assign) for t in node.targets if isinstance(t, ast.Name)
    }
    assert "__all__" in names, f"{name} has no __all__"


def test_no_test_skips_when_a_module_of_the_project_fails_to_import():
    offenders = []
    for path in sorted(Path(__file__).parent.glob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and getattr(node.func, "attr", "") == "importorskip"
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and str(node.args[0].value).startswith(NAME)
            ):
                offenders.append(f"{path.name}:{node.lineno}")
    assert not offenders, f"importorskip on the project's own modules turns a broken module into a skip: {offenders}"


def test_no_test_module_imports_another_test_module():
    """What test files share lives in tests/helpers.py (fixtures in conftest.py, which pytest loads itself): a test
    file imported by another runs its module-level code twice and ties the two together. Imports inside
    functions count too."""
    tests = Path(__file__).parent
    test_modules = {p.stem for p in tests.glob("test_*.py")} | {"conftest"}
    offenders = []
    for path in sorted(tests.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            else:
                continue
            offenders += [
                f"{path.name}:{node.lineno} imports {n}" for n in names if n.partition(".")[0] in test_modules
            ]
    assert not offenders, f"move what they share into tests/helpers.py: {offenders}"


# Training never draws with the chart stack; the model reads its own config only -----------------------------------


def test_training_never_imports_the_chart_stack():
    for module in [m for m in MODULES if m == f"{NAME}.train" or m.startswith(f"{NAME}.train.")]:
        path = reaches(module, f"{NAME}.viz")
        assert path is None, " → ".join(path)


def test_the_model_core_but_the_builders_imports_no_run_config():
    """masks, attention and layers never import config; model.py only inside make_model, which stores the run
    config it builds from its arguments (checkpoints save it). The model's classes read ModelConfig."""
    for module in ["masks", "attention", "layers", "dropout"]:
        assert f"{NAME}.config" not in GRAPH[f"{NAME}.{module}"], module
    tree = ast.parse(MODULES[f"{NAME}.model"].read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            assert getattr(node, "module", None) != "config", "model.py imports config at its top"
        if isinstance(node, ast.ClassDef):
            names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
            assert "Config" not in names, f"model.{node.name} names the run Config"


class RecordingConfig:
    """A run config that records which of its fields are read."""

    def __init__(self, config):
        object.__setattr__(self, "_config", config)
        object.__setattr__(self, "read", set())

    def __getattr__(self, name):
        self.read.add(name)
        return getattr(self._config, name)


def test_the_model_reads_only_the_architecture_fields_of_a_run_config():
    from dataclasses import fields

    from transformer_course.config import get_preset
    from transformer_course.model import ModelConfig, build_model

    run = RecordingConfig(get_preset("multi30k-cpu").replace(positional="learned", N=1, d_model=32, d_ff=64, h=2))
    import torch

    model = build_model(run, 20, 20)
    model.decode(model.encode(torch.randint(4, 20, (1, 5)), None), None, torch.randint(4, 20, (1, 3)), None)
    # 11 fields and the one run option build_model applies (fast_dropout); none of training, data or decoding
    assert run.read == {f.name for f in fields(ModelConfig)} | {"fast_dropout"}


@pytest.mark.slow
def test_import_transformer_course_loads_no_chart_or_tool_module():
    import subprocess
    import sys

    code = (
        "import sys, transformer_course as tc; "
        "print(sorted(m for m in sys.modules if m.startswith(('transformer_course.viz', 'course_tools', "
        "'matplotlib', 'altair')))); "
        "tc.viz; print('transformer_course.viz' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=PACKAGE.parent)
    assert out.stdout.split("\n")[:2] == ["[]", "True"]  # nothing of them, then tc.viz on first use


def notebook_imports() -> list[str]:
    """Every import statement of every course notebook (both languages), at any depth of its code cells."""
    import json

    found = []
    for path in sorted((ROOT / "notebooks").glob("**/*.ipynb")):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] != "code":
                continue
            source = "".join(cell["source"])
            lines = [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]
            try:
                tree = ast.parse("\n".join(lines))
            except SyntaxError:
                continue
            found += [ast.unparse(n) for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
    return sorted(set(found))


@pytest.mark.slow
def test_every_notebook_import_loads_no_tool_module_in_a_fresh_process(tmp_path):
    import subprocess
    import sys

    statements = notebook_imports()
    assert any("transformer_course" in s for s in statements) and len(statements) > 20
    code = "\n".join(f"try:\n    {s}\nexcept ImportError:\n    pass" for s in statements)
    code += "\nimport sys\nprint(sorted(m for m in sys.modules if m.partition('.')[0] == 'course_tools'))"
    # my_transformer (the learner's files) resolves from the notebooks' folder, as in the kernel
    env = {**__import__("os").environ, "TC_FAST": "1", "MPLBACKEND": "Agg"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT / "notebooks", env=env, timeout=300
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout[-2000:]


def top_level_bindings(name: str) -> dict[str, tuple]:
    """How module ``name`` binds each top-level name: ("defined",), ("from", module, name) or ("import", module);
    the bodies of top-level ``if`` and ``try`` count (a guarded import binds the name too)."""
    path = MODULES[name]
    found: dict[str, tuple] = {}

    def read(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                found[node.name] = ("defined",)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                found.update((n.id, ("defined",)) for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
            elif isinstance(node, ast.ImportFrom):
                base = resolve(node, name, path.name == "__init__.py")
                found.update((a.asname or a.name, ("from", base, a.name)) for a in node.names)
            elif isinstance(node, ast.Import):
                found.update((a.asname or a.name.partition(".")[0], ("import", a.name)) for a in node.names)
            elif isinstance(node, (ast.If, ast.Try)):
                for part in (node.body, node.orelse, getattr(node, "finalbody", [])):
                    read(part)
                for handler in getattr(node, "handlers", []):
                    read(handler.body)

    read(ast.parse(path.read_text(encoding="utf-8")).body)
    return found


def home_of(name: str, module: str) -> str:
    """The module that defines ``name`` as ``module`` binds it, following imports from module to module: a
    package module, a submodule itself (``from . import fonts``), or ``outside:X`` for a library's name."""
    binding = top_level_bindings(module).get(name)
    if binding is None:
        return f"{module}.{name}" if f"{module}.{name}" in MODULES else f"nowhere in {module}"
    if binding[0] == "defined":
        return module
    if binding[0] == "import":
        return binding[1] if binding[1] in MODULES else f"outside:{binding[1]}"
    _, base, original = binding
    if f"{base}.{original}" in MODULES:
        return f"{base}.{original}"
    return home_of(original, base) if base in MODULES else f"outside:{base}"


SUBPACKAGES = sorted(m for m in MODULES if MODULES[m].name == "__init__.py" and m != NAME)


@pytest.mark.parametrize("package", SUBPACKAGES)
def test_each_subpackages_all_lists_what_it_defines_or_its_own_submodules_do(package):
    """Classes, functions and constants alike: each name in __all__ is bound in the subpackage (its __init__ or
    a submodule under it), never a sibling's name (train listing data.PAD) or a library's."""
    import importlib

    listed = importlib.import_module(package).__all__
    foreign = [f"{n} (from {home})" for n in listed if not (home := home_of(n, package)).startswith(package)]
    assert foreign == [], f"{package}.__all__ lists names defined elsewhere: {foreign}; drop them from __all__"


def test_the_home_of_a_name_follows_imports_to_where_it_is_defined():
    assert home_of("PAD", f"{NAME}.train") == f"{NAME}.data.vocab"  # train re-exports data's PAD for old code
    assert home_of("fit", f"{NAME}.train") == f"{NAME}.train.loop"
    assert home_of("fonts", f"{NAME}.viz") == f"{NAME}.viz.fonts"  # a submodule
    assert home_of("nn", f"{NAME}.train.loop") == "outside:torch"
    assert home_of("select_notebooks", f"{TOOLS}.classroom.course") == f"{TOOLS}.edition.build"  # imported, not listed


def test_the_top_level_exports_each_notebook_name_once_from_its_home():
    import transformer_course as tc

    assert len(tc.__all__) == len(set(tc.__all__))
    for name in tc.__all__:
        obj = getattr(tc, name)
        home = getattr(obj, "__module__", None)
        if home is not None and home.startswith(NAME):
            assert name in getattr(__import__(home, fromlist=["_"]), "__all__", []), f"{name}: not in {home}.__all__"


def import_graph_text() -> str:
    """The import graph, one line per module (printed by ``python tests/test_layout.py``)."""
    short = lambda m: m.removeprefix(NAME + ".") or NAME  # noqa: E731
    return "\n".join(
        f"{short(m):28s} → {', '.join(sorted(short(x) for x in GRAPH[m])) or '—'}"
        for m in sorted(GRAPH)
        if ".exercises." not in m and ".solutions." not in m and m.partition(".")[0] == NAME
    )


if __name__ == "__main__":
    print(import_graph_text())

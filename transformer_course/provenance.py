"""The files of the learner's Transformer (notebooks 02–07, ``my_transformer/``): whose code each is, the
references, the fallbacks, and importing them fresh (:mod:`transformer_course.learner` uses them).

Per file, :func:`provenance` says whose code the learner's folder holds: "yours", "reference" (the text of
``notebooks/solutions/my_transformer/<file>``, however it got there), "reference (edited)" (the reference's or the
package's code up to comments, whitespace, names and formatting: :func:`same_structure`), "blank" (a stub still
raises NotImplementedError), "missing", "package" (it imports or loads the package, or calls PyTorch's own
implementation of a lesson: ``F.scaled_dot_product_attention``, ``nn.LayerNorm``, ``nn.Transformer…``) or
"fallback" (written by
:func:`transformer_course.learner.fill_missing_files`, marked with :data:`FALLBACK_MARK`: it imports the package's
own pieces, :func:`package_piece`, from which the learner's files are cut). :func:`use_reference`
brings a reference in on purpose and says so. A folder whose name shadows an installed module (``torch``) is
never imported (:func:`refusal`). Every line goes through ``i18n.t`` (中文: ``exercises/zh/learner.json``).
"""

from __future__ import annotations

import ast
import copy
import importlib
import importlib.machinery
import inspect
import json
import sys
import textwrap
import traceback
from pathlib import Path

from . import attention, layers, model
from .i18n import lazy_t, load_catalogue, register, t
from .paths import course_root

register("zh", load_catalogue("learner"))

__all__ = [
    "FALLBACK_MARK",
    "FILES",
    "NAMES",
    "SOURCES",
    "STATUSES",
    "check_file",
    "describe_provenance",
    "ensure_package",
    "failure_line",
    "fallback_text",
    "file_status",
    "forget_package",
    "import_fresh",
    "learner_frame",
    "not_written",
    "package_piece",
    "provenance",
    "reference_folder",
    "refusal",
    "same_structure",
    "use_reference",
    "writefile_cells",
]

# file → the notebook whose build cell writes it, in the order the course builds them
FILES = {
    "attention.py": "02_attention.ipynb",
    "multi_head.py": "03_multi_head_attention.ipynb",
    "norm_residual.py": "04_layernorm_residual.ipynb",
    "embeddings.py": "05_embeddings_positional_encoding.ipynb",
    "encoder.py": "06_encoder.ipynb",
    "decoder.py": "07_decoder.ipynb",
}
NAMES = {  # file → the names it holds, in the learner's files and in the package
    "attention.py": ("scaled_dot_product_attention",),
    "multi_head.py": ("MultiHeadAttention",),
    "norm_residual.py": ("LayerNorm", "ResidualConnection"),
    "embeddings.py": ("Embeddings", "sinusoidal_table", "PositionalEncoding", "PositionwiseFeedForward"),
    "encoder.py": ("clones", "final_norm", "EncoderLayer", "Encoder"),
    "decoder.py": ("DecoderLayer", "Decoder", "Generator", "EncoderDecoder", "check_options", "make_model"),
}
SOURCES = {  # file → the package's module whose regions ("# learner file: <file>") it is cut from
    "attention.py": "attention",
    "multi_head.py": "attention",
    "norm_residual.py": "layers",
    "embeddings.py": "layers",
    "encoder.py": "model",
    "decoder.py": "model",
}
MAGIC = "%%writefile"
FALLBACK_MARK = "# transformer_course fallback: the package's code, not the learner's"
STATUSES = {  # what each status means, in the language of the moment (lazy_t)
    "yours": lazy_t("your own code"),
    "reference": lazy_t("the reference from notebooks/solutions/ (not yours)"),
    "reference (edited)": lazy_t("the reference with only comments, names or formatting changed (not yours)"),
    "blank": lazy_t("not written yet: a stub still raises NotImplementedError"),
    "missing": lazy_t("not there: its notebook's build cell writes it"),
    "package": lazy_t("calls the package's or PyTorch's own implementation (not yours)"),
    "fallback": lazy_t("the package's code, written as a fallback (not yours)"),
}
STATUS_WIDTH = max(map(len, STATUSES))  # the status column of the printed tables
# what a file must not call to be the learner's own: PyTorch's implementations of the lessons of 02–07
_TORCH_LESSONS = frozenset(
    {
        "scaled_dot_product_attention",
        "multi_head_attention_forward",
        "MultiheadAttention",
        "LayerNorm",
        "layer_norm",
        "RMSNorm",
        "rms_norm",
        "Transformer",
        "TransformerEncoder",
        "TransformerEncoderLayer",
        "TransformerDecoder",
        "TransformerDecoderLayer",
    }
)


def writefile_cells(notebook: str | Path) -> dict[str, str]:
    """The ``%%writefile <folder>/<file>`` cells of one notebook: file name → the text the cell writes. A file
    that is not a notebook (damaged JSON, cells without ``cell_type`` or ``source``) raises ValueError, one line
    naming it."""
    found = {}
    try:
        for cell in json.loads(Path(notebook).read_text(encoding="utf-8"))["cells"]:
            source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            first, _, body = source.partition("\n")
            if cell["cell_type"] == "code" and first.startswith(MAGIC):
                found[Path(first[len(MAGIC) :].strip()).name] = body if body.endswith("\n") else body + "\n"
    except (ValueError, KeyError, TypeError, AttributeError) as error:  # ValueError: JSONDecodeError, not UTF-8
        problem = f"no {error} field" if isinstance(error, KeyError) else str(error)
        raise ValueError(
            t(
                "{path} is not a notebook (a JSON object with a list of cells): {problem}; "
                "restore it (git checkout -- {path}) or save it again from Jupyter",
                path=notebook,
                problem=problem,
            )
        ) from None
    return found


# ---- where the references are -------------------------------------------------------------------------------


def reference_folder(folder: str | Path = "my_transformer") -> Path | None:
    """``notebooks/solutions/my_transformer``, the reference files, for the learner's ``folder``: beside it
    (``notebooks/solutions/``), else in the course's ``notebooks/solutions/`` (from ``notebooks/zh/``); None
    when this copy of the course has none (a student release)."""
    beside = Path(folder).resolve().parent
    places = [beside / "solutions" / "my_transformer"]
    try:
        places.append(course_root(beside) / "notebooks" / "solutions" / "my_transformer")
    except FileNotFoundError:
        pass
    return next((place for place in places if place.is_dir()), None)


def check_file(file: str) -> None:
    """Raise ValueError unless ``file`` is one of the course's files (:data:`FILES`)."""
    if file not in FILES:
        raise ValueError(t("unknown file {file!r}; the course writes {files}", file=file, files=", ".join(FILES)))


def use_reference(file: str, folder: str | Path = "my_transformer") -> Path:
    """Replace ``folder``/``file`` by the reference from ``notebooks/solutions/my_transformer/`` and say so: from
    now on it is the reference, not the learner's (notebook 08 names it so). Returns the path written."""
    check_file(file)
    folder = Path(folder)
    source = reference_folder(folder)
    if source is None or not (source / file).is_file():
        raise FileNotFoundError(
            t(
                "no reference for {file} here (notebooks/solutions/my_transformer/ is not in this copy of the course, "
                "e.g. a student release): write {path} yourself in {notebook}'s build cell",
                file=file,
                path=f"{folder.name}/{file}",
                notebook=FILES[file],
            )
        )
    ensure_package(folder)
    (folder / file).write_text((source / file).read_text(encoding="utf-8"), encoding="utf-8")
    forget_package(folder.resolve().name)
    print(
        t(
            "{path} is now the reference from notebooks/solutions/my_transformer/, not yours (notebook 08 will say "
            "so); run {notebook}'s build cell again to write your own",
            path=f"{folder.name}/{file}",
            notebook=FILES[file],
        )
    )
    return folder / file


# ---- whose code each file is ----------------------------------------------------------------------------------


def _normalized(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip().splitlines())


def _is_stub_raise(node: ast.AST) -> bool:
    exc = node.exc if isinstance(node, ast.Raise) else None
    exc = exc.func if isinstance(exc, ast.Call) else exc
    return isinstance(exc, ast.Name) and exc.id == "NotImplementedError"


def _has_stub(tree: ast.Module) -> bool:
    """A function or method whose last statement is ``raise NotImplementedError``: still to write."""
    functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    return any(_is_stub_raise(f.body[-1]) for f in functions)


# what a model file has no use for unless it loads code from elsewhere (the package's source, the solutions)
_LOADERS = frozenset({"exec", "eval", "compile", "__import__"})
_LOADING_MODULES = frozenset({"inspect", "runpy", "importlib", "transformer_course"})


def _loads_code(tree: ast.Module) -> bool:
    """True when the code runs code from elsewhere: ``exec``/``eval``/``compile``, ``inspect``, ``runpy``,
    ``importlib``, or a path to the package or the solutions (``exec(inspect.getsource(tc.attention…))``)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _LOADERS:
            return True
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if "transformer_course" in node.value or "solutions/my_transformer" in node.value:
                return True
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        names += [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module else []
        if any(name.split(".")[0] in _LOADING_MODULES for name in names):
            return True
    return False


def _calls_an_implementation(tree: ast.Module) -> bool:
    """True when the code imports or loads the package (:func:`_loads_code`) or uses PyTorch's own implementation
    of a lesson of 02–07 (``F.scaled_dot_product_attention``, ``nn.LayerNorm``, ``nn.MultiheadAttention``,
    ``nn.Transformer…``)."""
    if _loads_code(tree):
        return True
    torch_names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "transformer_course":
                    return True
                if alias.name.split(".")[0] == "torch":
                    torch_names.add((alias.asname or alias.name).split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            root = node.module.split(".")[0]
            if root == "transformer_course":
                return True
            if root == "torch":
                if any(alias.name in _TORCH_LESSONS for alias in node.names):
                    return True
                torch_names |= {alias.asname or alias.name for alias in node.names}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in _TORCH_LESSONS:
            root = node.value
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and root.id in torch_names:
                return True
    return False


class _Canonical(ast.NodeTransformer):
    """A definition without what does not change the code: its docstrings and annotations dropped, every name
    (variables, parameters, functions, classes) replaced by ``n0``, ``n1``, … in order of appearance. Constants,
    attributes (``.transpose``, ``self.w_q``) and keyword names are kept: they are the code's meaning and its API."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}

    def rename(self, name: str) -> str:
        return self.names.setdefault(name, f"n{len(self.names)}")

    def visit_Name(self, node: ast.Name) -> ast.Name:
        node.id = self.rename(node.id)
        return node

    def visit_arg(self, node: ast.arg) -> ast.arg:
        node.arg, node.annotation = self.rename(node.arg), None
        return node

    def visit_definition(self, node):
        node.name = self.rename(node.name)
        first = node.body[0]
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
            node.body = node.body[1:] or [ast.Pass()]  # the docstring
        if not isinstance(node, ast.ClassDef):
            node.returns = None
        return self.generic_visit(node)

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = visit_definition


def _structure(definition: ast.AST) -> str:
    """The canonical form of one function or class (:class:`_Canonical`): equal for two texts of the same code."""
    return ast.dump(_Canonical().visit(copy.deepcopy(definition)))


def _definitions(tree: ast.Module) -> list[ast.AST]:
    return [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]


def _reference_structures(file: str, reference: str | Path | None) -> set[str]:
    """The canonical forms of the reference's functions and classes of ``file``: the reference file's (when there
    is one) and the package's own pieces (their source: what ``inspect.getsource`` gives a learner)."""
    texts = [Path(reference).read_text(encoding="utf-8")] if reference is not None and Path(reference).is_file() else []
    for name in NAMES[file]:
        try:
            texts.append(textwrap.dedent(inspect.getsource(package_piece(file, name))))
        except (OSError, TypeError):  # no source for this install (a zip): the reference file still counts
            pass
    return {_structure(d) for text in texts for d in _definitions(ast.parse(text))}


def same_structure(tree: ast.Module, file: str, reference: str | Path | None = None) -> bool:
    """True when every function and class of ``tree`` (a learner's ``file``, at least one) is one of the
    reference's or the package's up to comments, whitespace, docstrings, annotations, names and formatting."""
    mine = _definitions(tree)
    if not mine:
        return False
    references = _reference_structures(file, reference)
    return all(_structure(d) in references for d in mine)


def file_status(path: str | Path, reference: str | Path | None = None) -> str:
    """Whose code one file is: a key of :data:`STATUSES`. ``reference``: the reference file to compare with."""
    path = Path(path)
    if not path.is_file():
        return "missing"
    text = path.read_text(encoding="utf-8", errors="replace")
    if FALLBACK_MARK in text:
        return "fallback"
    if reference is not None and Path(reference).is_file():
        if _normalized(text) == _normalized(Path(reference).read_text(encoding="utf-8")):
            return "reference"
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return "yours"  # the learner's, broken: load() names the line
    if _has_stub(tree):
        return "blank"
    if _calls_an_implementation(tree):
        return "package"
    if Path(path).name in FILES and same_structure(tree, Path(path).name, reference):
        return "reference (edited)"
    return "yours"


def provenance(folder: str | Path = "my_transformer") -> dict[str, str]:
    """Per file of the course (:data:`FILES`), whose code ``folder`` holds: "yours", "reference", "reference
    (edited)", "blank", "missing", "package" or "fallback" (:data:`STATUSES` says what each means)."""
    folder = Path(folder)
    references = reference_folder(folder)
    return {file: file_status(folder / file, references / file if references is not None else None) for file in FILES}


def describe_provenance(folder: str | Path = "my_transformer") -> dict[str, str]:
    """Print one line per file: the file, the notebook that writes it, whose code it is. Returns :func:`provenance`."""
    found = provenance(folder)
    name = Path(folder).resolve().name
    width = max(len(f"{name}/{file}") for file in FILES)
    for file, status in found.items():
        print(f"{name + '/' + file:{width}}  {FILES[file][:2]}  {status:{STATUS_WIDTH}}  {STATUSES[status]}")
    return found


# ---- importing the learner's files ----------------------------------------------------------------------------


def not_written(label: str, status: str) -> str:
    """The line saying the file ``label`` is not written yet, for the status "missing" or "blank"."""
    if status == "missing":
        return t("{file} is not written yet (missing)", file=label)
    return t("{file} is not written yet (a stub still raises NotImplementedError)", file=label)


def ensure_package(folder: Path) -> None:
    """Make ``folder`` a package: the folder and its ``__init__.py``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "__init__.py").touch()


def forget_package(package: str) -> None:
    """Drop the learner's package from sys.modules, so the next import reads the files as they are now."""
    for module in [m for m in sys.modules if m == package or m.startswith(package + ".")]:
        del sys.modules[module]


def refusal(folder: Path) -> str | None:
    """Why ``folder`` cannot be imported as the learner's package (a name that is not an identifier, or one that
    shadows an installed or built-in module, e.g. ``torch``), or None."""
    name = folder.name
    if not name.isidentifier():
        return t("{name} is not a Python package name; call the folder my_transformer", name=name)
    others = [p for p in sys.path if p and Path(p).resolve() != folder.parent]
    if (
        name in sys.builtin_module_names
        or name in sys.stdlib_module_names
        or importlib.machinery.PathFinder.find_spec(name, others) is not None
    ):
        return t(
            "the folder {name}/ has the name of an installed module ({name}), and importing it would replace that "
            "one in this session; call the folder my_transformer",
            name=name,
        )
    return None


def import_fresh(folder: Path, module: str):
    """``folder``.``module`` imported fresh from the files as they are now (raises what the import raises)."""
    package = folder.name
    forget_package(package)
    importlib.invalidate_caches()  # files written a moment ago must be seen
    sys.path.insert(0, str(folder.parent))
    try:
        return importlib.import_module(f"{package}.{module}")
    finally:
        sys.path.remove(str(folder.parent))


def failure_line(error: BaseException, folder: Path, file: str, where: str = "") -> str:
    """One line: the learner's file (and ``where``, the call that ran it) fails, with the error and its line."""
    culprit, line = learner_frame(error, folder, file)
    values = dict(path=f"{folder.name}/{culprit}", error=f"{type(error).__name__}: {_one_line(error)}", line=line)
    if where:
        return t("{path} ({where}) fails to build or run: {error} (line {line})", where=where, **values)
    return t("{path} fails: {error} (line {line})", **values)


def learner_frame(error: BaseException, folder: Path, file: str = "decoder.py") -> tuple[str, int | str]:
    """The learner's file and line where ``error`` happened (the last traceback frame inside ``folder``)."""
    if isinstance(error, SyntaxError) and error.filename:
        return Path(error.filename).name, error.lineno or "?"
    frames = [f for f in traceback.extract_tb(error.__traceback__) if Path(f.filename).resolve().parent == folder]
    if frames:
        return Path(frames[-1].filename).name, frames[-1].lineno or "?"
    return file, "?"


def package_piece(file: str, name: str):
    """The package's ``name`` of the learner's ``file`` (``package_piece("encoder.py", "Encoder")`` is
    ``transformer_course.model.Encoder``): the learner's file is cut from the package, so it has the same API.
    What a fallback of ``file`` imports."""
    check_file(file)
    if name not in NAMES[file]:
        raise ValueError(t("{file} holds {names}, not {name!r}", file=file, names=", ".join(NAMES[file]), name=name))
    return getattr({"attention": attention, "layers": layers, "model": model}[SOURCES[file]], name)


def fallback_text(file: str) -> str:
    """The text of a fallback ``file``: it imports the package's own pieces (the learner's file is cut from them,
    so they have its API), marked as such."""
    check_file(file)
    names, module = ", ".join(NAMES[file]), f"transformer_course.{SOURCES[file]}"
    return (
        f'"""{file}: a fallback written by transformer_course.learner, not the learner\'s code.\n\n'
        f"It imports the package's {names} from {module}, whose API is that of\n"
        f'{FILES[file]}\'s build cell; running that cell writes your own file here instead."""\n\n'
        f"{FALLBACK_MARK}\n"
        f"from {module} import {names}  # noqa: F401\n"
    )


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split())

"""The learner's own Transformer: the files notebooks 02–07 write, whose code each is, loaded and trained (paper §3).

Each of notebooks 02–07 has a build cell ``%%writefile my_transformer/<file>.py``: a scaffold (signatures,
docstrings with shapes, the structure that is not the lesson) whose bodies the learner writes. Running it saves
the file as a small package beside the notebooks (``notebooks/my_transformer/``; a learner of the 中文版 gets their
own ``notebooks/zh/my_transformer/``, as the same cells run in ``notebooks/zh/``):

    my_transformer/attention.py      notebook 02   scaled_dot_product_attention
    my_transformer/multi_head.py     notebook 03   MultiHeadAttention
    my_transformer/norm_residual.py  notebook 04   LayerNorm, ResidualConnection
    my_transformer/embeddings.py     notebook 05   Embeddings, PositionalEncoding, PositionwiseFeedForward
    my_transformer/encoder.py        notebook 06   EncoderLayer, Encoder
    my_transformer/decoder.py        notebook 07   DecoderLayer, Decoder, Generator, EncoderDecoder, make_model

Its parameter names are the package's, so weights copy across with ``load_state_dict(strict=True)``, and
notebook 08 trains this model beside the package's (same weights in, same losses out).

Nothing here writes an answer into the learner's folder behind their back, and nothing calls code "yours" that
the learner did not write:

- :func:`provenance` says per file whose code it is: "yours", "reference" (the text of
  ``notebooks/solutions/my_transformer/<file>``), "blank" (a stub still raises NotImplementedError), "missing",
  "package" (it calls the package's or PyTorch's own implementation) or "fallback" (written by this module);
  :func:`describe_provenance` prints it as a table;
- :func:`use_reference` brings in the reference of one file, on purpose, and says so;
- :func:`load` imports one name from the learner's file, or, when the file is missing, blank or fails to import,
  returns the package's equivalent (:mod:`transformer_course.fallback`) with one printed line saying so;
- :func:`fill_missing_files` writes a missing file as a marked fallback that re-exports the package's code;
- :func:`load_learner_model` / :func:`learner_or_package_model` build the learner's model, or the package's with a
  printed line saying why, and say per file whose code the model runs;
- :func:`copy_weights` copies one model's weights into the other and names the first name that does not fit.
"""

from __future__ import annotations

import ast
import importlib
import importlib.machinery
import json
import sys
import traceback
from pathlib import Path

import torch
from torch import nn

from . import fallback as _fallback
from .model import make_model as package_make_model
from .paths import course_root

__all__ = [
    "FALLBACK_MARK",
    "FILES",
    "STATUSES",
    "copy_weights",
    "describe_provenance",
    "fill_missing_files",
    "learner_or_package_model",
    "load",
    "load_learner_model",
    "provenance",
    "reference_folder",
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
NAMES = _fallback.NAMES  # file → the names it holds
MAGIC = "%%writefile"
FALLBACK_MARK = "# transformer_course fallback: the package's code, not the learner's"
STATUSES = {
    "yours": "your own code",
    "reference": "the reference from notebooks/solutions/ (not yours)",
    "blank": "not written yet: a stub still raises NotImplementedError",
    "missing": "not there: its notebook's build cell writes it",
    "package": "calls the package's or PyTorch's own implementation (not yours)",
    "fallback": "the package's code, written as a fallback (not yours)",
}
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
    """The ``%%writefile <folder>/<file>`` cells of one notebook: file name → the text the cell writes."""
    cells = json.loads(Path(notebook).read_text(encoding="utf-8"))["cells"]
    found = {}
    for cell in cells:
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        first, _, body = source.partition("\n")
        if cell["cell_type"] == "code" and first.startswith(MAGIC):
            found[Path(first[len(MAGIC) :].strip()).name] = body if body.endswith("\n") else body + "\n"
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


def _check_file(file: str) -> None:
    if file not in FILES:
        raise ValueError(f"unknown file {file!r}; the course writes {', '.join(FILES)}")


def use_reference(file: str, folder: str | Path = "my_transformer") -> Path:
    """Replace ``folder``/``file`` by the reference from ``notebooks/solutions/my_transformer/`` and say so: from
    now on it is the reference, not the learner's (notebook 08 names it so). Returns the path written."""
    _check_file(file)
    folder = Path(folder)
    source = reference_folder(folder)
    if source is None or not (source / file).is_file():
        raise FileNotFoundError(
            f"no reference for {file} here (notebooks/solutions/my_transformer/ is not in this copy of the course, "
            f"e.g. a student release): write {folder.name}/{file} yourself in {FILES[file]}'s build cell"
        )
    _ensure_package(folder)
    (folder / file).write_text((source / file).read_text(encoding="utf-8"), encoding="utf-8")
    _forget(folder.resolve().name)
    print(
        f"{folder.name}/{file} is now the reference from notebooks/solutions/my_transformer/, not yours "
        f"(notebook 08 will say so); run {FILES[file]}'s build cell again to write your own"
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


def _calls_an_implementation(tree: ast.Module) -> bool:
    """True when the code imports from the package or uses PyTorch's own implementation of a lesson of 02–07
    (``F.scaled_dot_product_attention``, ``nn.LayerNorm``, ``nn.MultiheadAttention``, ``nn.Transformer…``)."""
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
    return "yours"


def provenance(folder: str | Path = "my_transformer") -> dict[str, str]:
    """Per file of the course (:data:`FILES`), whose code ``folder`` holds: "yours", "reference", "blank",
    "missing", "package" or "fallback" (:data:`STATUSES` says what each means)."""
    folder = Path(folder)
    references = reference_folder(folder)
    return {file: file_status(folder / file, references / file if references is not None else None) for file in FILES}


def describe_provenance(folder: str | Path = "my_transformer") -> dict[str, str]:
    """Print one line per file: the file, the notebook that writes it, whose code it is. Returns :func:`provenance`."""
    found = provenance(folder)
    name = Path(folder).resolve().name
    width = max(len(f"{name}/{file}") for file in FILES)
    for file, status in found.items():
        print(f"{name + '/' + file:{width}}  {FILES[file][:2]}  {status:9}  {STATUSES[status]}")
    return found


# ---- importing the learner's files ----------------------------------------------------------------------------


def _not_written(label: str, status: str) -> str:
    if status == "missing":
        return f"{label} is not written yet (missing)"
    return f"{label} is not written yet (a stub still raises NotImplementedError)"


def _ensure_package(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "__init__.py").touch()


def _forget(package: str) -> None:
    """Drop the learner's package from sys.modules, so the next import reads the files as they are now."""
    for module in [m for m in sys.modules if m == package or m.startswith(package + ".")]:
        del sys.modules[module]


def _refusal(folder: Path) -> str | None:
    """Why ``folder`` cannot be imported as the learner's package (a name that is not an identifier, or one that
    shadows an installed or built-in module, e.g. ``torch``), or None."""
    name = folder.name
    if not name.isidentifier():
        return f"{name} is not a Python package name; call the folder my_transformer"
    others = [p for p in sys.path if p and Path(p).resolve() != folder.parent]
    if (
        name in sys.builtin_module_names
        or name in sys.stdlib_module_names
        or importlib.machinery.PathFinder.find_spec(name, others) is not None
    ):
        return (
            f"the folder {name}/ has the name of an installed module ({name}), and importing it would replace that "
            "one in this session; call the folder my_transformer"
        )
    return None


def _import(folder: Path, module: str):
    """``folder``.``module`` imported fresh from the files as they are now (raises what the import raises)."""
    package = folder.name
    _forget(package)
    importlib.invalidate_caches()  # files written a moment ago must be seen
    sys.path.insert(0, str(folder.parent))
    try:
        return importlib.import_module(f"{package}.{module}")
    finally:
        sys.path.remove(str(folder.parent))


def _failure(error: BaseException, folder: Path, file: str) -> str:
    culprit, line = _learner_frame(error, folder, file)
    return f"{folder.name}/{culprit} fails: {type(error).__name__}: {_one_line(error)} (line {line})"


def _learner_frame(error: BaseException, folder: Path, file: str = "decoder.py") -> tuple[str, int | str]:
    """The learner's file and line where ``error`` happened (the last traceback frame inside ``folder``)."""
    if isinstance(error, SyntaxError) and error.filename:
        return Path(error.filename).name, error.lineno or "?"
    frames = [f for f in traceback.extract_tb(error.__traceback__) if Path(f.filename).resolve().parent == folder]
    if frames:
        return Path(frames[-1].filename).name, frames[-1].lineno or "?"
    return file, "?"


def load(file: str, name: str, folder: str | Path = "my_transformer"):
    """``name`` from the learner's ``folder``/``file``, freshly imported. When the file is missing, still the blank
    scaffold, fails to import or lacks ``name``, the package's equivalent (:mod:`transformer_course.fallback`),
    with one printed line saying so; when the file is not the learner's own (the reference, a fallback, the
    package's code), one printed line saying whose it is."""
    _check_file(file)
    if name not in NAMES[file]:
        raise ValueError(f"{file} holds {', '.join(NAMES[file])}, not {name!r}")
    folder = Path(folder).resolve()
    status = provenance(folder)[file]
    label = f"{folder.name}/{file}"
    instead = f"the cells below use the package's {name} (a fallback, not yours)"
    if status in ("missing", "blank"):
        print(f"{_not_written(label, status)}: {instead}; {FILES[file]} writes it")
        return getattr(_fallback, name)
    refusal = _refusal(folder)
    if refusal is not None:
        print(f"{refusal}: {instead}")
        return getattr(_fallback, name)
    try:
        module = _import(folder, Path(file).stem)
    except (Exception, SystemExit) as error:  # the learner's code: one line naming the file and the line
        print(f"{_failure(error, folder, file)}: {instead}; fix it in {FILES[file]}")
        return getattr(_fallback, name)
    if not hasattr(module, name):
        print(f"{label} has no {name}: {instead}; {FILES[file]} writes it")
        return getattr(_fallback, name)
    if status != "yours":
        print(f"{label} is {STATUSES[status]}: the cells below use its {name}")
    return getattr(module, name)


def fill_missing_files(*files: str, folder: str | Path = "my_transformer") -> list[str]:
    """Make sure ``folder`` holds ``files`` (default: all six), so that a later notebook runs when the learner
    skipped an earlier one. A missing file is written as a *fallback*: a few lines that re-export the package's
    code with the learner's API (:mod:`transformer_course.fallback`), marked so that :func:`provenance` calls
    it "fallback", never "yours"; one printed line per file says so. Files that are there (even blank) are left
    as they are. Returns the names written."""
    for file in files:
        _check_file(file)
    folder = Path(folder)
    _ensure_package(folder)
    written = []
    for file in files or tuple(FILES):
        if (folder / file).exists():
            continue
        (folder / file).write_text(fallback_text(file), encoding="utf-8")
        written.append(file)
        print(
            f"{folder.name}/{file} was missing: wrote a fallback that uses the package's "
            f"{', '.join(NAMES[file])} (not yours); write your own in {FILES[file]}'s build cell"
        )
    if written:
        _forget(folder.resolve().name)
    return written


def fallback_text(file: str) -> str:
    """The text of a fallback ``file``: the package's code with the learner's API, marked as such."""
    _check_file(file)
    names = ", ".join(NAMES[file])
    return (
        f'"""{file}: a fallback written by transformer_course.learner, not the learner\'s code.\n\n'
        f"It re-exports the package's {names} (transformer_course.fallback), with the API of\n"
        f'{FILES[file]}\'s build cell; running that cell writes your own file here instead."""\n\n'
        f"{FALLBACK_MARK}\n"
        f"from transformer_course.fallback import {names}  # noqa: F401\n"
    )


# ---- the learner's model ---------------------------------------------------------------------------------------


def load_learner_model(folder: str | Path = "my_transformer"):
    """The learner's ``make_model`` from ``folder``/decoder.py, freshly imported, or None.

    When a file is missing or still blank, when the folder's name shadows an installed module, or when a file
    fails to import (whatever it raises, SystemExit included), prints one line naming the file and the notebook
    that writes it, and returns None.
    """
    folder = Path(folder).resolve()
    for file, status in provenance(folder).items():
        if status in ("missing", "blank"):
            print(f"{_not_written(f'{folder.name}/{file}', status)}: notebook {FILES[file]} writes it")
            return None
    refusal = _refusal(folder)
    if refusal is not None:
        print(refusal)
        return None
    try:
        decoder = _import(folder, "decoder")
    except (Exception, SystemExit) as error:  # the learner's code: name the file and the line, not a traceback
        culprit = _learner_frame(error, folder)[0]
        print(f"{_failure(error, folder, 'decoder.py')}; fix it in notebook {FILES.get(culprit, '?')}")
        return None
    if not callable(getattr(decoder, "make_model", None)):
        print(f"{folder.name}/decoder.py has no make_model function: notebook {FILES['decoder.py']} writes it")
        return None
    return decoder.make_model


def model_files(model: nn.Module, folder: str | Path = "my_transformer") -> set[str]:
    """The files of ``folder`` whose code ``model`` runs: those whose classes its modules are, and those whose
    functions the modules of those classes call (attention.py through multi_head.py); a file that re-exports the
    package's class counts when the model holds that class."""
    package = Path(folder).resolve().name
    classes = {type(m) for m in model.modules()}
    referenced = set(classes)
    for name in {c.__module__ for c in classes}:
        module = sys.modules.get(name)
        referenced |= {v for v in vars(module).values() if callable(v)} if module is not None else set()
    used = set()
    for file in FILES:
        module = sys.modules.get(f"{package}.{Path(file).stem}")
        if module is None and sys.modules.get(package) is not None:  # a file the model's own files do not import
            sys.path.insert(0, str(Path(folder).resolve().parent))
            try:
                module = importlib.import_module(f"{package}.{Path(file).stem}")
            except (Exception, SystemExit):
                module = None
            finally:
                sys.path.remove(str(Path(folder).resolve().parent))
        if module is not None and any(getattr(module, n, None) in referenced for n in NAMES[file]):
            used.add(file)
    return used


def _smoke_test(model: nn.Module, src_vocab: int, tgt_vocab: int) -> None:
    """Run ``model`` once on two tokens (eval mode, no gradient, the RNG left as it was): a learner's model that
    builds but cannot run falls back here, not in the middle of training."""
    was_training, state = model.training, torch.random.get_rng_state()
    try:
        model.eval()
        with torch.no_grad():
            src, tgt = torch.ones(1, 2, dtype=torch.long) % src_vocab, torch.ones(1, 2, dtype=torch.long) % tgt_vocab
            out = model.generator(model(src, tgt, None, None))
        if tuple(out.shape) != (1, 2, tgt_vocab):
            raise ValueError(f"its output is {tuple(out.shape)} for 2 tokens, not (1, 2, tgt_vocab={tgt_vocab})")
    finally:
        model.train(was_training)
        torch.random.set_rng_state(state)


def learner_or_package_model(src_vocab: int, tgt_vocab: int, folder: str | Path = "my_transformer", **sizes):
    """The learner's ``make_model(src_vocab, tgt_vocab, **sizes)`` when their files load, build and run, else the
    package's ``transformer_course.make_model`` with the same arguments. Prints whose code each file is, which of
    them the model runs, and one line saying whose model it is: "yours" only when every file it runs is yours."""
    folder = Path(folder).resolve()
    make = load_learner_model(folder)
    if make is not None:
        where = f"{folder.name}/decoder.py make_model"
        try:
            model = make(src_vocab, tgt_vocab, **sizes)
            if not isinstance(model, nn.Module) or not all(
                callable(getattr(model, n, None)) for n in ("encode", "decode", "generator")
            ):
                raise TypeError(f"it returned {type(model).__name__}, not a model with encode, decode and generator")
            _smoke_test(model, src_vocab, tgt_vocab)
        except (Exception, SystemExit) as error:
            print(_failure(error, folder, "decoder.py").replace("fails:", f"({where}) fails to build or run:", 1))
        else:
            status, used = provenance(folder), model_files(model, folder)
            for file in FILES:
                runs = "in the model" if file in used else "not in the model"
                print(f"  {folder.name}/{file:16} {status[file]:9} {runs:16} {STATUSES[status[file]]}")
            mine = [f for f in FILES if f in used and status[f] == "yours"]
            others = ", ".join(f"{f} ({status[f]})" for f in FILES if f in used and status[f] != "yours")
            if mine and not others:
                print(f"the model is yours: built by {where} from your files of notebooks 02–07")
            elif mine:
                print(f"the model is partly yours: built by {where}; yours: {', '.join(mine)}; not yours: {others}")
            else:
                print(f"the model is not yours: built by {where} from {others or 'no file of the folder'}")
            return model
    print("the model is the package's: transformer_course.make_model (same sizes), not yours")
    return package_make_model(src_vocab, tgt_vocab, **sizes)


def copy_weights(from_model: nn.Module, to_model: nn.Module) -> nn.Module:
    """Copy every parameter of ``from_model`` into ``to_model`` (``load_state_dict``, strict) and return
    ``to_model``. A name or shape that does not fit, or a different tying of matrices, raises a
    ValueError naming the first mismatching name."""
    source, target = from_model.state_dict(), to_model.state_dict()
    for name in target:
        if name not in source:
            raise ValueError(f"cannot copy weights: {name!r} is in the model copied into, not in the model copied from")
    for name, tensor in source.items():
        if name not in target:
            raise ValueError(f"cannot copy weights: {name!r} is in the model copied from, not in the model copied into")
        if tensor.shape != target[name].shape:
            raise ValueError(
                f"cannot copy weights: {name!r} is {tuple(tensor.shape)} in the model copied from and "
                f"{tuple(target[name].shape)} in the model copied into"
            )
    shared_from, shared_to = _shared_names(source), _shared_names(target)
    for name in source:
        if shared_from[name] != shared_to[name]:
            raise ValueError(
                f"cannot copy weights: {name!r} shares its matrix with {_names(shared_from[name] - {name})} in the "
                f"model copied from but with {_names(shared_to[name] - {name})} in the model copied into: build both "
                "with the same tie_embeddings"
            )
    to_model.load_state_dict(source, strict=True)
    return to_model


def _shared_names(state: dict) -> dict[str, frozenset[str]]:
    """For each name, the set of names whose tensors share its storage (tied weights)."""
    groups: dict[tuple, set[str]] = {}
    for name, tensor in state.items():
        groups.setdefault((tensor.untyped_storage().data_ptr(), tensor.storage_offset()), set()).add(name)
    return {name: frozenset(group) for group in groups.values() for name in group}


def _names(names: frozenset[str]) -> str:
    return ", ".join(repr(n) for n in sorted(names)) or "nothing"


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split())

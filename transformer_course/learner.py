"""The learner's own Transformer: the files notebooks 02–07 write, loaded, checked and trained (issue 10; paper §3).

Each of notebooks 02–07 ends its from-scratch build with a ``%%writefile my_transformer/<file>.py`` cell, so the
code the learner reads and runs is saved as a small package beside the notebooks (``notebooks/my_transformer/``;
a learner of the 中文版 gets their own ``notebooks/zh/my_transformer/``, as the same cells run in ``notebooks/zh/``):

    my_transformer/attention.py      notebook 02   scaled_dot_product_attention
    my_transformer/multi_head.py     notebook 03   MultiHeadAttention
    my_transformer/norm_residual.py  notebook 04   LayerNorm, ResidualConnection
    my_transformer/embeddings.py     notebook 05   Embeddings, PositionalEncoding, PositionwiseFeedForward
    my_transformer/encoder.py        notebook 06   EncoderLayer, Encoder
    my_transformer/decoder.py        notebook 07   DecoderLayer, Decoder, Generator, EncoderDecoder, make_model

Its parameter names are the package's, so weights copy across with ``load_state_dict(strict=True)``, and
notebook 08 trains this model beside the package's (same weights in, same losses out).

- :func:`load_learner_model` imports the learner's ``make_model`` (or prints which file is missing and returns None);
- :func:`learner_or_package_model` builds the learner's model, or the package's with a printed line saying why;
- :func:`copy_weights` copies one model's weights into the other and names the first name that does not fit;
- :func:`fill_missing_files` writes a missing file from its notebook's ``%%writefile`` cell, so that a later
  notebook runs even when the learner skipped an earlier one (it says so). The notebook is the one beside the
  folder (``notebooks/`` or ``notebooks/zh/``: the same cells), else the course's English one.
"""

from __future__ import annotations

import importlib
import json
import sys
import traceback
from pathlib import Path

from torch import nn

from .model import make_model as package_make_model
from .paths import course_root

__all__ = [
    "FILES",
    "copy_weights",
    "fill_missing_files",
    "learner_or_package_model",
    "load_learner_model",
    "writefile_cells",
]

# file → the notebook whose %%writefile cell writes it, in the order the course builds them
FILES = {
    "attention.py": "02_attention.ipynb",
    "multi_head.py": "03_multi_head_attention.ipynb",
    "norm_residual.py": "04_layernorm_residual.ipynb",
    "embeddings.py": "05_embeddings_positional_encoding.ipynb",
    "encoder.py": "06_encoder.ipynb",
    "decoder.py": "07_decoder.ipynb",
}
MAGIC = "%%writefile"


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


def fill_missing_files(
    *files: str, folder: str | Path = "my_transformer", notebooks: str | Path | None = None
) -> list[str]:
    """Make sure ``folder`` holds ``files`` (default: all six). A missing one is written from the
    ``%%writefile`` cell of the notebook that teaches it, with one printed line naming it. The notebook is
    looked for in ``notebooks``; by default in the folder that holds ``folder`` (``notebooks/`` or
    ``notebooks/zh/``), then in the course's ``notebooks/``. Returns the names written."""
    folder = Path(folder)
    places = [Path(notebooks)] if notebooks is not None else _notebook_folders(folder)
    unknown = [f for f in files if f not in FILES]
    if unknown:
        raise ValueError(f"unknown file(s) {unknown}; the course writes {', '.join(FILES)}")
    folder.mkdir(exist_ok=True)
    (folder / "__init__.py").touch()
    written = []
    for name in files or tuple(FILES):
        if (folder / name).exists():
            continue
        notebook = next((place / FILES[name] for place in places if (place / FILES[name]).exists()), None)
        if notebook is None:
            raise FileNotFoundError(
                f"{folder.name}/{name} is missing and so is {places[0] / FILES[name]}, whose %%writefile cell "
                f"writes it; run that notebook, or pass notebooks= the folder that holds the course notebooks"
            )
        cells = writefile_cells(notebook)
        if name not in cells:
            raise ValueError(f"{notebook.name} has no '%%writefile {folder.name}/{name}' cell")
        (folder / name).write_text(cells[name], encoding="utf-8")
        written.append(name)
        print(
            f"{folder.name}/{name} was missing: written from the %%writefile cell of {FILES[name]} so that this "
            f"notebook runs (run {FILES[name]} to write it yourself)"
        )
    return written


def _notebook_folders(folder: Path) -> list[Path]:
    """Where the notebooks that write ``folder``'s files are: beside it, then in the course's notebooks/."""
    beside = folder.resolve().parent
    try:
        english = course_root(beside) / "notebooks"
    except FileNotFoundError:  # a notebook handed out on its own: only its own folder
        return [beside]
    return [beside] if english == beside else [beside, english]


def load_learner_model(folder: str | Path = "my_transformer"):
    """The learner's ``make_model`` from ``folder``/decoder.py, freshly imported, or None.

    When a file is missing or fails to import, prints one line naming the file and the notebook that
    writes it, and returns None.
    """
    folder = Path(folder).resolve()
    for name, notebook in FILES.items():
        if not (folder / name).exists():
            print(f"{folder.name}/{name} is missing: notebook {notebook} writes it (run its %%writefile cell)")
            return None
    package = folder.name
    for module in [m for m in sys.modules if m == package or m.startswith(package + ".")]:
        del sys.modules[module]  # import the files as they are now, not as an earlier import saw them
    importlib.invalidate_caches()  # files written a moment ago must be seen
    sys.path.insert(0, str(folder.parent))
    try:
        decoder = importlib.import_module(f"{package}.decoder")
    except Exception as error:  # the learner's code: name the file and the line, not a whole traceback
        culprit, line = _learner_frame(error, folder)
        print(
            f"{folder.name}/{culprit} failed to import: {type(error).__name__}: {_one_line(error)} (line {line}); "
            f"fix it in notebook {FILES.get(culprit, '?')} and run its %%writefile cell again"
        )
        return None
    finally:
        sys.path.remove(str(folder.parent))
    if not callable(getattr(decoder, "make_model", None)):
        print(f"{folder.name}/decoder.py has no make_model function: notebook {FILES['decoder.py']} writes it")
        return None
    return decoder.make_model


def _learner_frame(error: BaseException, folder: Path) -> tuple[str, int | str]:
    """The learner's file and line where ``error`` happened (the last traceback frame inside ``folder``)."""
    if isinstance(error, SyntaxError) and error.filename:
        return Path(error.filename).name, error.lineno or "?"
    frames = [f for f in traceback.extract_tb(error.__traceback__) if Path(f.filename).parent == folder]
    if frames:
        return Path(frames[-1].filename).name, frames[-1].lineno or "?"
    return "decoder.py", "?"


def learner_or_package_model(src_vocab: int, tgt_vocab: int, folder: str | Path = "my_transformer", **sizes):
    """The learner's ``make_model(src_vocab, tgt_vocab, **sizes)`` when their files load and build, else
    the package's ``transformer_course.make_model`` with the same arguments; one printed line says which."""
    make = load_learner_model(folder)
    if make is not None:
        try:
            model = make(src_vocab, tgt_vocab, **sizes)
        except Exception as error:
            print(f"your make_model(...) failed: {type(error).__name__}: {_one_line(error)}")
        else:
            print(f"the model is yours: {Path(folder).name}/decoder.py make_model, from notebooks 02–07")
            return model
    print("the model is the package's: transformer_course.make_model (same sizes)")
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

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

Each build cell's scaffold and its reference (``notebooks/solutions/my_transformer/``) are cut from the package's
own modules (regions marked ``# learner file:``; ``python -m course_tools.edition.learner_files sync``), so the
learner's classes have the package's constructors, calls and parameter names: weights copy across with
``load_state_dict(strict=True)``, a skipped file's fallback is simply the package's class, and notebook 08 trains
this model beside the package's (same weights in, same losses out).

Nothing here writes an answer into the learner's folder behind their back, and nothing calls code "yours" that
the learner did not write:

- :func:`provenance` says per file whose code it is: "yours", "reference" (the text of
  ``notebooks/solutions/my_transformer/<file>``), "reference (edited)" (the same code with only comments, names or
  formatting changed), "blank" (a stub still raises NotImplementedError), "missing", "package" (it imports or loads
  the package, or calls PyTorch's own implementation) or "fallback" (written by this module);
  :func:`describe_provenance` prints it as a table;
- :func:`use_reference` brings in the reference of one file, on purpose, and says so;
- :func:`load` imports one name from the learner's file, or, when the file is missing, blank or fails to import,
  returns the package's own (:func:`~transformer_course.provenance.package_piece`) with one printed line saying so;
- :func:`fill_missing_files` writes a missing file as a marked fallback that imports the package's own pieces;
- :func:`load_learner_model` / :func:`learner_or_package_model` build the learner's model, or the package's with a
  printed line saying why, and say per file whose code the model runs;
- :func:`copy_weights` copies one model's weights into the other and names the first name that does not fit.

Every printed line goes through :func:`transformer_course.i18n.t`: after ``set_language("zh")`` (the first cell of
every notebook in ``notebooks/zh/``) it is Chinese (``exercises/zh/learner.json``).
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import torch
from torch import nn

from .i18n import t
from .model import make_model as package_make_model
from .provenance import (  # whose code each file is (the names of __all__ re-exported: tc.learner is the
    # notebooks' one entry point) and the helpers load and load_learner_model use
    FALLBACK_MARK,
    FILES,
    NAMES,
    STATUS_WIDTH,
    STATUSES,
    check_file,
    describe_provenance,
    ensure_package,
    failure_line,
    fallback_text,
    file_status,
    forget_package,
    import_fresh,
    learner_frame,
    not_written,
    package_piece,
    provenance,
    reference_folder,
    refusal,
    use_reference,
    writefile_cells,
)

__all__ = [
    "FALLBACK_MARK",
    "FILES",
    "NAMES",
    "STATUSES",
    "copy_weights",
    "describe_provenance",
    "fallback_text",
    "file_status",
    "fill_missing_files",
    "learner_or_package_model",
    "load",
    "load_learner_model",
    "model_files",
    "package_piece",
    "provenance",
    "reference_folder",
    "use_reference",
    "writefile_cells",
]


def load(file: str, name: str, folder: str | Path = "my_transformer"):
    """``name`` from the learner's ``folder``/``file``, freshly imported. When the file is missing, still the blank
    scaffold, fails to import or lacks ``name``, the package's own (:func:`package_piece`: the learner's file is cut
    from it, so it has the same API),
    with one printed line saying so; when the file is not the learner's own (the reference, a fallback, the
    package's code), one printed line saying whose it is."""
    check_file(file)
    if name not in NAMES[file]:
        raise ValueError(t("{file} holds {names}, not {name!r}", file=file, names=", ".join(NAMES[file]), name=name))
    folder = Path(folder).resolve()
    status = provenance(folder)[file]
    label = f"{folder.name}/{file}"
    instead, nb = t("the cells below use the package's {name} (a fallback, not yours)", name=name), FILES[file]
    if status in ("missing", "blank"):
        _say("{why}: {instead}; {notebook} writes it", why=not_written(label, status), instead=instead, notebook=nb)
        return package_piece(file, name)
    refused = refusal(folder)
    if refused is not None:
        _say("{why}: {instead}", why=refused, instead=instead)
        return package_piece(file, name)
    try:
        module = import_fresh(folder, Path(file).stem)
    except (Exception, SystemExit) as error:  # the learner's code: one line naming the file and the line
        _say(
            "{why}: {instead}; fix it in {notebook}",
            why=failure_line(error, folder, file),
            instead=instead,
            notebook=nb,
        )
        return package_piece(file, name)
    if not hasattr(module, name):
        why = t("{file} has no {name}", file=label, name=name)
        _say("{why}: {instead}; {notebook} writes it", why=why, instead=instead, notebook=nb)
        return package_piece(file, name)
    if status != "yours":
        _say("{file} is {status}: the cells below use its {name}", file=label, status=STATUSES[status], name=name)
    return getattr(module, name)


def fill_missing_files(*files: str, folder: str | Path = "my_transformer") -> list[str]:
    """Make sure ``folder`` holds ``files`` (default: all six), so that a later notebook runs when the learner
    skipped an earlier one. A missing file is written as a *fallback*: a few lines that import the package's own
    pieces (the learner's files are cut from them, so they have the same API), marked so that :func:`provenance` calls
    it "fallback", never "yours"; one printed line per file says so. Files that are there (even blank) are left
    as they are. Returns the names written."""
    for file in files:
        check_file(file)
    folder = Path(folder)
    ensure_package(folder)
    written = []
    for file in files or tuple(FILES):
        if (folder / file).exists():
            continue
        (folder / file).write_text(fallback_text(file), encoding="utf-8")
        written.append(file)
        values = dict(file=f"{folder.name}/{file}", names=", ".join(NAMES[file]), notebook=FILES[file])
        _say(
            "{file} was missing: wrote a fallback that uses the package's {names} (not yours); write your own in "
            "{notebook}'s build cell",
            **values,
        )
    if written:
        forget_package(folder.resolve().name)
    return written


def _say(template: str, /, **values) -> None:
    """Print one line in the course's language: ``template`` (English) or its 中文 (:func:`transformer_course.i18n.t`)."""
    print(t(template, **values))


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
            why = not_written(f"{folder.name}/{file}", status)
            _say("{why}: notebook {notebook} writes it", why=why, notebook=FILES[file])
            return None
    refused = refusal(folder)
    if refused is not None:
        print(refused)
        return None
    try:
        decoder = import_fresh(folder, "decoder")
    except (Exception, SystemExit) as error:  # the learner's code: name the file and the line, not a traceback
        culprit = learner_frame(error, folder)[0]
        why = failure_line(error, folder, "decoder.py")
        _say("{why}; fix it in notebook {notebook}", why=why, notebook=FILES.get(culprit, "?"))
        return None
    if not callable(getattr(decoder, "make_model", None)):
        path, nb = f"{folder.name}/decoder.py", FILES["decoder.py"]
        _say("{file} has no make_model function: notebook {notebook} writes it", file=path, notebook=nb)
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
            raise ValueError(
                t(
                    "its output is {shape} for 2 tokens, not (1, 2, tgt_vocab={vocab})",
                    shape=tuple(out.shape),
                    vocab=tgt_vocab,
                )
            )
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
                raise TypeError(
                    t("it returned {kind}, not a model with encode, decode and generator", kind=type(model).__name__)
                )
            _smoke_test(model, src_vocab, tgt_vocab)
        except (Exception, SystemExit) as error:
            print(failure_line(error, folder, "decoder.py", where=where))
        else:
            status, used = provenance(folder), model_files(model, folder)
            for file in FILES:
                runs = t("in the model") if file in used else t("not in the model")
                print(f"  {folder.name}/{file:16} {status[file]:{STATUS_WIDTH}} {runs:16} {STATUSES[status[file]]}")
            mine = [f for f in FILES if f in used and status[f] == "yours"]
            others = ", ".join(f"{f} ({status[f]})" for f in FILES if f in used and status[f] != "yours")
            if mine and not others:
                _say("the model is yours: built by {where} from your files of notebooks 02–07", where=where)
            elif mine:
                mine = ", ".join(mine)
                _say(
                    "the model is partly yours: built by {where}; yours: {mine}; not yours: {others}",
                    where=where,
                    mine=mine,
                    others=others,
                )
            else:
                others = others or t("no file of the folder")
                _say("the model is not yours: built by {where} from {others}", where=where, others=others)
            return model
    _say("the model is the package's: transformer_course.make_model (same sizes), not yours")
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

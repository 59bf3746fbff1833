"""The grade of a submission, computed in the grader's process from data the student's process recorded.

Nothing can be defended inside a process the student's code runs in, so the verdict is not computed there. A
graded cell's hidden test, run in the sandbox (:mod:`.sandbox`), only **records** what the checks observed, one
file per check, written as the check finishes (a crash later keeps it):

- the values given to the checker (answers: numbers, letters, lists, tensors), as plain data;
- for each function, class or object given to the checker, everything the checker did with it and with what it
  handed out (instances, sub-modules, methods, parameters): the operations in order, their inputs and outputs,
  the random generator's state after each, the dropout calls they made, the gradients the checker sent back through
  them and those that reached the inputs and parameters (:mod:`.objects`).

The grader (:class:`SandboxedExecute`, in nbgrader's own process, which never runs student code) loads the records
with ``torch.load(weights_only=True)`` (tensors, numbers, strings, lists and dicts: no pickle of the student's
objects) and **replays** each check: it calls the same checker, from the grader's own installed package, with a
stand-in for each function or class that answers the checker's operations from the record once it has seen that
they are the recorded ones, with the recorded inputs (the checkers draw their inputs from fixed seeds; a difference
scores the check 0). The checker's verdict in the grader is the score. Forging a record means writing down the
right outputs for the checker's inputs: computing them, which is the work. A tensor subclass whose ``==`` is always
true arrives as a plain tensor of its values; an object that is not plain data arrives as an opaque stand-in that
fails the check. Every check is replayed: the functions, the answers, the quizzes and the classes alike.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import functools
import inspect
import io
import math
import numbers
import os
import re
import time
from pathlib import Path

__all__ = [
    "Recorder",
    "config_lines",
    "cell_key",
    "decode",
    "encode",
    "grade_cell",
    "hidden_cell",
    "read_records",
    "same",
]

KIND = "__kind__"
MAX_RECORD_BYTES = 64 * 2**20  # one check's record
MAX_RECORDS, MAX_RECORDS_BYTES = 2000, 512 * 2**20  # a submission's
MAX_NOTEBOOK_BYTES = 64 * 2**20
MAX_DEPTH = 12
NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,60}$")


def cell_key(cell: dict) -> str:
    """A graded cell's key in the records: the hash of its statements and its checks."""
    import hashlib

    return hashlib.sha256(repr((cell["text"], cell["calls"])).encode("utf-8")).hexdigest()[:16]


# ---- plain data ------------------------------------------------------------------------------------------------


def encode(x, depth: int = 0):
    """``x`` as plain data: None, bools, ints, floats, strings, lists, dicts of kinds, and plain tensors."""
    import torch

    if depth > MAX_DEPTH:
        return {KIND: "opaque", "type": "too deep"}
    if x is None or type(x) in (bool, int, float, str):
        return x
    if x is Ellipsis:
        return {KIND: "ellipsis"}
    if isinstance(x, torch.Tensor):
        plain = x.detach().as_subclass(torch.Tensor).clone()
        return {KIND: "tensor", "t": plain, "grad": bool(x.requires_grad)}
    if isinstance(x, bool) or type(x).__name__ == "bool_":
        return bool(x)
    if isinstance(x, str):
        return {KIND: "opaque", "type": "str subclass"} if type(x) is not str else x
    if isinstance(x, numbers.Integral):
        return int(x)
    if isinstance(x, numbers.Real):
        return float(x)
    if isinstance(x, torch.Size):
        return {KIND: "size", "items": [int(n) for n in x]}
    if type(x) is tuple:
        return {KIND: "tuple", "items": [encode(v, depth + 1) for v in x]}
    if type(x) is list:
        return [encode(v, depth + 1) for v in x]
    if type(x) in (set, frozenset):
        return {KIND: "set", "items": [encode(v, depth + 1) for v in sorted(x, key=repr)]}
    if type(x) is dict:
        return {KIND: "dict", "items": [[encode(k, depth + 1), encode(v, depth + 1)] for k, v in x.items()]}
    if isinstance(x, torch.dtype):
        return {KIND: "dtype", "name": str(x)}
    if type(x).__name__ == "ndarray" and type(x).__module__ == "numpy":
        try:
            return {KIND: "ndarray", "t": torch.from_numpy(x.copy())}
        except TypeError:
            return {KIND: "opaque", "type": "ndarray"}
    kind = f"{type(x).__module__}.{type(x).__qualname__}"
    if isinstance(x, torch.nn.Module):
        return {KIND: "object", "type": kind, "repr": repr(x)[:500], "training": bool(x.training)}
    return {KIND: "object", "type": kind}


class Opaque:
    """What the grader gets for a value that was not plain data: nothing a checker accepts."""

    def __init__(self, kind: str):
        self.kind = kind

    def __repr__(self) -> str:
        return f"<{self.kind}: not plain data>"


def decode(x, depth: int = 0):
    """The value ``encode`` wrote (read back with ``torch.load(weights_only=True)``); anything else: Opaque."""
    import torch

    if depth > MAX_DEPTH:
        return Opaque("too deep")
    if x is None or type(x) in (bool, int, float, str):
        return x
    if type(x) is list:
        return [decode(v, depth + 1) for v in x]
    if type(x) is not dict or not isinstance(x.get(KIND), str):
        return Opaque("unknown")
    kind = x[KIND]
    if kind == "ellipsis":
        return ...
    if kind in ("tensor", "ndarray") and type(x.get("t")) is torch.Tensor:
        tensor = x["t"]
        return tensor.numpy() if kind == "ndarray" else tensor
    if kind == "size" and all(type(n) is int for n in x.get("items", ())):
        return torch.Size(x["items"])
    if kind == "tuple" and type(x.get("items")) is list:
        return tuple(decode(v, depth + 1) for v in x["items"])
    if kind == "set" and type(x.get("items")) is list:
        try:
            return {decode(v, depth + 1) for v in x["items"]}
        except TypeError:
            return Opaque("set")
    if kind == "dict" and type(x.get("items")) is list:
        try:
            return {decode(k, depth + 1): decode(v, depth + 1) for k, v in x["items"]}
        except (TypeError, ValueError):
            return Opaque("dict")
    if kind == "dtype" and isinstance(getattr(torch, str(x.get("name", "")).removeprefix("torch."), None), torch.dtype):
        return getattr(torch, x["name"].removeprefix("torch."))
    return Opaque(str(x.get("type", kind))[:100])


def same(a, b) -> bool:
    """Two encoded values are the same data (tensors: dtype, shape, gradient flag and every value, NaN = NaN)."""
    import torch

    if type(a) is not type(b):
        return False
    if type(a) is list:
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if type(a) is dict:
        if set(a) != set(b):
            return False
        return all(same(a[k], b[k]) for k in a)
    if isinstance(a, torch.Tensor):
        if a.dtype != b.dtype or a.shape != b.shape:
            return False
        if a.is_floating_point() or a.is_complex():
            return bool(torch.equal(a.isnan(), b.isnan()) and torch.equal(a.nan_to_num(0.0), b.nan_to_num(0.0)))
        return bool(torch.equal(a, b))
    if type(a) is float and math.isnan(a):
        return math.isnan(b)
    return a == b


# ---- the child: recording ---------------------------------------------------------------------------------------


def _is_function(x) -> bool:
    import inspect

    return inspect.isfunction(x) or inspect.ismethod(x) or isinstance(x, functools.partial)


_OBJECTS = []


def _objects():
    """objects.py, beside this file, loaded by path (as this file is in the sandbox)."""
    import importlib.util

    if not _OBJECTS:
        spec = importlib.util.spec_from_file_location(
            "_tc_objects", os.path.join(os.path.dirname(__file__), "objects.py")
        )
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _OBJECTS.append(module)
    return _OBJECTS[0]


def _codec():
    import types

    return types.SimpleNamespace(encode=encode, decode=decode, same=same, raised=_raised, MAX_DEPTH=MAX_DEPTH)


class Recorder:
    """Records one graded cell's checks into the folder ``TC_RECORDS`` names (the sandbox sets it)."""

    def __init__(self, folder: str, cell: dict, language: str = "en"):
        self.folder, self.key, self.index, self.language = folder, cell_key(cell), 0, language

    def run(self, name: str, target, args: tuple, kwargs: dict, score):
        """Call ``target`` (the fresh checker) with each function or class it is given behind a recording proxy
        (:mod:`.objects`); write the record; return what ``score(result)`` returned (the child's own verdict, kept
        recorded, never counted)."""
        import torch

        objects = _objects().Recording(_codec())

        def given(value):  # what the checker calls or builds from: behind a proxy; answers stay plain data
            return _is_function(value) or inspect.isclass(value) or isinstance(value, torch.nn.Module)

        record = {
            "cell": self.key,
            "index": self.index,
            "checker": name,
            "language": self.language,
            "rng_start": torch.get_rng_state(),
        }
        wrapped_args = [objects.given(a) if given(a) else a for a in args]
        wrapped_kwargs = {k: objects.given(v) if given(v) else v for k, v in kwargs.items()}
        record["args"] = [self._encoded(a) for a in wrapped_args]
        record["kwargs"] = {k: self._encoded(v) for k, v in wrapped_kwargs.items()}
        self.index += 1
        passed = None
        try:
            passed = score(target, wrapped_args, wrapped_kwargs)
            return passed
        finally:
            record["passed"] = passed
            record["objects"] = objects.events
            self._write(record)

    @staticmethod
    def _encoded(value):
        """A checker's argument as the record holds it: a proxy by its handle, anything else as plain data."""
        if type(value) is _objects().Proxy:
            return {KIND: "proxy", "h": object.__getattribute__(value, "_tc_h")}
        return encode(value)

    def _write(self, record: dict) -> None:
        import torch

        os.makedirs(self.folder, exist_ok=True)
        path = os.path.join(self.folder, f"{self.key}-{record['index']:03d}-{time.time_ns()}.pt")
        try:
            torch.save(record, path + ".part")
            os.replace(path + ".part", path)
        except Exception as error:  # an answer that is not plain data: record that much
            record = {k: record[k] for k in ("cell", "index", "checker", "language", "passed")}
            record["args"], record["kwargs"], record["objects"] = [], {}, []
            record["unrecorded"] = str(error)[:200]
            torch.save(record, path + ".part")
            os.replace(path + ".part", path)


# ---- the grader: replay -----------------------------------------------------------------------------------------


class Mismatch(Exception):
    """The replayed checker asked something the record does not hold (other inputs, more calls)."""


def _rng(value):
    import torch

    if type(value) is torch.Tensor and value.dtype == torch.uint8 and value.shape == torch.get_rng_state().shape:
        torch.set_rng_state(value)


def _raised(entry: dict) -> BaseException:
    if entry.get("raised") in ("KeyboardInterrupt", "SystemExit"):  # the cell's time limit, or an exit
        return TimeoutError("it was stopped in the sandbox before it returned")
    kind = getattr(builtins, str(entry.get("raised", "")), None)
    message = str(entry.get("message", ""))
    if isinstance(kind, type) and issubclass(kind, Exception) and kind.__module__ == "builtins":
        try:
            return kind(message)
        except Exception:
            pass
    return RuntimeError(f"{entry.get('raised', 'an error')}: {message}")


def read_records(folder: Path) -> dict[str, list[dict]]:
    """The records in ``folder``, by cell key (files too large or not plain data are left out)."""
    import torch

    found: dict[str, list[dict]] = {}
    if not folder.is_dir() or folder.is_symlink():
        return found
    budget = MAX_RECORDS_BYTES
    for path in sorted(folder.glob("*.pt"))[:MAX_RECORDS]:
        if path.is_symlink() or not path.is_file() or path.stat().st_size > min(MAX_RECORD_BYTES, budget):
            continue
        budget -= path.stat().st_size
        try:
            record = torch.load(path, weights_only=True, map_location="cpu")
        except Exception:
            continue
        if type(record) is dict and type(record.get("cell")) is str and type(record.get("index")) is int:
            found.setdefault(record["cell"], []).append(record)
    return found


def hidden_cell(source: str) -> dict | None:
    """The cell dict of a graded cell's hidden test (``_tc_score = _tc_grade({...})``), read from the grader's copy."""
    match = re.search(r"^_tc_score = _tc_grade\(\n(.*?)\n\)\n### END HIDDEN TESTS", source, re.M | re.S)
    if match is None:
        return None
    try:
        cell = ast.literal_eval(match.group(1).strip())
    except (ValueError, SyntaxError):
        return None
    return cell if isinstance(cell, dict) and "calls" in cell and "aliases" in cell else None


@contextlib.contextmanager
def _captured():
    import sys

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer):
        saved = sys.displayhook
        sys.displayhook = lambda value: None
        try:
            yield buffer
        finally:
            sys.displayhook = saved


def _checkers(modules) -> dict:
    import importlib

    return {m: importlib.import_module(f"transformer_course.exercises.{m}") for m in modules}


def _replay_one(module, record: dict, quiz: bool) -> tuple[float, int | None, list[str]]:
    """Replay one record with the grader's checker; (points fraction or count, None, problems)."""
    import torch

    problems: list[str] = []
    checker = getattr(module, str(record.get("checker")), None)
    if not callable(checker) or not str(record.get("checker")).startswith("check_"):
        return 0, None, ["no such checker"]
    objects = _objects().Replaying(_codec(), record.get("objects"), problems, Mismatch)

    def value(encoded):
        if type(encoded) is dict and encoded.get(KIND) == "proxy" and type(encoded.get("h")) is int:
            return objects.given(encoded["h"])
        return decode(encoded)

    args = [value(a) for a in record.get("args", [])] if type(record.get("args")) is list else []
    kwargs = record.get("kwargs") if type(record.get("kwargs")) is dict else {}
    kwargs = {k: value(v) for k, v in kwargs.items() if type(k) is str and NAME.match(k)}
    with torch.random.fork_rng(devices=[]):
        _rng(record.get("rng_start"))
        if quiz and kwargs and not args:
            passed = 0
            for key, answer in kwargs.items():
                passed += bool(checker(**{key: answer}))
            return passed, None, problems
        result = checker(*args, **kwargs)
    return (1 if bool(result) and not problems else 0), None, problems


def grade_cell(cell: dict, records: list[dict]) -> tuple[float, int, str]:
    """The score of one graded cell from its records, replayed with the grader's checkers: (score, points, text),
    the text being what the checkers printed, a line for each check that could not be replayed, and the points."""
    from transformer_course import i18n
    from transformer_course.exercises import unsealed

    from .zh_verdict import ZH

    i18n.register("zh", ZH)

    total = sum(points for _, points in cell["calls"])
    by_index: dict[int, list[dict]] = {}
    for record in records:
        by_index.setdefault(record["index"], []).append(record)
    language = next((r.get("language") for r in records if r.get("language") in ("en", "zh")), "en")
    lines, score = [], 0.0
    pending = list(enumerate(cell["calls"]))
    with _captured() as output:
        previous = i18n.get_language()
        i18n.set_language(language)
        try:
            modules = _checkers(set(cell["aliases"].values()))
            for index in sorted(by_index):
                found = by_index[index]
                name = found[0].get("checker")
                slot = next((i for i, (_, (checker, _)) in enumerate(pending) if checker == name), None)
                if slot is None:
                    continue
                _, (checker, points) = pending.pop(slot)
                quiz = checker == "check_quiz" and points > 0
                if len(found) > 1:
                    lines.append(f"{checker}: recorded {len(found)} times in one run; it scores 0")
                    continue
                record = found[0]
                module = next((m for m in modules.values() if hasattr(m, checker)), None)
                try:
                    with unsealed():
                        got, _, problems = _replay_one(module, record, quiz)
                except Exception as error:  # a record the checker could not replay: the check scores 0
                    got, problems = 0, [f"{type(error).__name__}: {str(error)[:200]}"]
                if problems:
                    lines.append(f"{checker}: the recorded run does not replay ({problems[0]}); it scores 0")
                    got = 0
                score += min(got, points) if quiz else points * got
            score = min(score, total)
            shown = int(score) if float(score).is_integer() else round(score, 6)
            lines.append(i18n.t("graded: {score} of {points} points", score=shown, points=total))
        finally:
            i18n.set_language(previous)
    text = "\n".join(line for line in [output.getvalue().rstrip(), *lines] if line)
    return score, total, text


def config_lines() -> list[str]:
    """The lines of ``nbgrader_config.py`` that put the sandboxed step in nbgrader's place."""
    return [
        "# Each submission runs in a sandbox (course_tools/classroom/sandbox.py: its own mount, pid and network",
        "# namespaces, this folder hidden); the points come from this process, which replays each check from what",
        "# the sandbox recorded (course_tools/classroom/judge.py). nbgrader's other steps are its own.",
        "from nbgrader.preprocessors import (  # noqa: E402",
        "    AssignLatePenalties, CheckCellMetadata, IgnorePattern, LimitOutput, SaveAutoGrades,",
        ")",
        "from nbconvert.preprocessors import ClearMetadataPreprocessor  # noqa: E402",
        "from course_tools.classroom.autograde import SandboxedExecute  # noqa: E402",
        "c.Autograde.autograde_preprocessors = [",
        "    SandboxedExecute, IgnorePattern, ClearMetadataPreprocessor, LimitOutput, SaveAutoGrades,",
        "    AssignLatePenalties, CheckCellMetadata,",
        "]",
    ]

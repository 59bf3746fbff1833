"""What a checker needs so that it grades the learner's own work: shortcuts caught, names kept read-only.

**Shortcuts.** A build cell asks the learner to *write* attention, LayerNorm, an encoder layer … A function that
hands the work to the package (``transformer_course.attention.scaled_dot_product_attention``), to a checker's
own helper, or to PyTorch's implementation (``F.scaled_dot_product_attention``, ``nn.LayerNorm``) computes the
right numbers but is not the learner's. :func:`no_shortcuts` runs the learner's code and watches two things:

- every Python function entered whose code lives in the ``transformer_course`` package (a profile hook), except
  the modules the exercise allows (``transformer_course.masks`` for a decoder, say);
- every call of the PyTorch functions the exercise names (a ``TorchFunctionMode``), e.g. :data:`TORCH_ATTENTION`.

- every function entered whose code was compiled from a string (``exec``, ``compile``) and is the package's own
  code (the same bytecode up to the names of local variables): ``exec(inspect.getsource(…))`` is a copy of the
  package, not the learner's code. Code from a file or a notebook cell is the learner's to write as they like;
  whose text it is, is :mod:`transformer_course.provenance`'s question.

On leaving the block it raises a :class:`~transformer_course.exercises.Hint` naming the first such call, so
``run_check`` prints "❌ … calls transformer_course.attention.scaled_dot_product_attention: that is the package's
own …, not yours". Helpers the learner may use (masks from notebook 01, ``nn.Linear``, ``softmax``) are not
watched unless an exercise says so.

**What this proves, and what not.** The checks run in the learner's own Python process, so nothing in it holds
against a learner who sets out to fool them: the guard names plain delegation, so that an honest learner learns
what counts as their own work. The checks use what they bound at import: the guard, and the package's pieces they
compare against (replacing ``tc.attention.scaled_dot_product_attention`` later changes no verdict), and
:func:`read_only` refuses to rebind a checker module's names (``ex.no_shortcuts = …``). A grade that holds is
computed outside that process: the classroom's graded path.

**Answers.** The answers of the exercises that ask for one (a letter, bug lines, a number) are not here: each
is a question locked with its answer (:mod:`.answer_key`), the quizzes' and the others' alike.
"""

from __future__ import annotations

import dis
import functools
import importlib
import sys
import threading
import types
from collections.abc import Iterable
from contextlib import contextmanager
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

from ..i18n import load_catalogue, register, t
from . import Hint

register("zh", load_catalogue("guard"))

__all__ = [
    "TORCH_ATTENTION",
    "TORCH_NORM",
    "TORCH_TRANSFORMER",
    "Shortcuts",
    "earlier_fallbacks",
    "no_shortcuts",
    "package_copy",
    "read_only",
]

PACKAGE = Path(__file__).resolve().parents[1]  # transformer_course/
ALWAYS_ALLOWED = ("transformer_course.i18n",)  # messages, not work

# the ATen operators behind PyTorch's attention (torch.ops.aten.<name>, each with its overloads), where this torch has them
ATEN_ATTENTION = (
    "_scaled_dot_product_attention_math",
    "_scaled_dot_product_attention_math_for_mps",
    "_scaled_dot_product_flash_attention",
    "_scaled_dot_product_flash_attention_for_cpu",
    "_scaled_dot_product_efficient_attention",
    "_scaled_dot_product_cudnn_attention",
    "_scaled_dot_product_fused_attention_overrideable",
    "_efficient_attention_forward",
    "_flash_attention_forward",
    "_native_multi_head_attention",
    "scaled_dot_product_attention",
)


def _aten_ops(names: Iterable[str]) -> tuple:
    """``torch.ops.aten.<name>`` and each of its overloads (``.default`` …), for the names this torch has."""
    found = []
    for name in names:
        packet = getattr(torch.ops.aten, name, None)
        if packet is not None:
            found += [packet, *(getattr(packet, overload) for overload in packet.overloads())]
    return tuple(found)


# PyTorch's own versions of what the course asks the learner to write
TORCH_ATTENTION = (
    F.scaled_dot_product_attention,
    F.multi_head_attention_forward,
    torch._native_multi_head_attention,
    *_aten_ops(ATEN_ATTENTION),
)
TORCH_NORM = (F.layer_norm, torch.layer_norm, F.rms_norm, torch.rms_norm, F.group_norm, F.batch_norm, F.instance_norm)
TORCH_TRANSFORMER = (
    *TORCH_ATTENTION,
    torch._transformer_encoder_layer_fwd,
)


@functools.lru_cache(maxsize=4096)  # called on every Python call inside the guard: resolve each file once
def _module_of(filename: str) -> str | None:
    """``transformer_course.attention`` for a file of the package, None for any other file."""
    try:
        relative = Path(filename).resolve().relative_to(PACKAGE)
    except (ValueError, OSError):
        return None
    parts = relative.with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(("transformer_course", *parts))


class Shortcuts:
    """What a learner's code called that it should have written itself, in the order first seen."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def add(self, name: str) -> None:
        if name not in self.calls:
            self.calls.append(name)

    def __bool__(self) -> bool:
        return bool(self.calls)


class _TorchWatch(TorchFunctionMode):
    def __init__(self, functions: Iterable, found: Shortcuts):
        super().__init__()
        self.functions = {id(f): f for f in functions}
        self.found = found

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if id(func) in self.functions:
            self.found.add(f"{getattr(func, '__module__', None) or 'torch'}.{getattr(func, '__name__', func)}")
        return func(*args, **(kwargs or {}))


def _qualified(frame, module: str) -> str:
    code = frame.f_code
    return f"{module}.{getattr(code, 'co_qualname', code.co_name)}"


@contextmanager
def watch_shortcuts(torch_functions: Iterable = (), allow: Iterable[str] = ()):
    """Yield a :class:`Shortcuts` that fills while the block runs: package functions entered (outside
    ``allow`` and :data:`ALWAYS_ALLOWED`) and the ``torch_functions`` called. An ``allow`` entry names a module
    (``transformer_course.masks``) or one function or class of it (``transformer_course.attention.MultiHeadAttention``);
    whatever an allowed function calls is allowed too (the fallback of an earlier notebook's file is the package's
    code: that is not this exercise's shortcut). Restores the previous profile hook. Only the calling thread is
    watched (the learner's code runs in it)."""
    allowed = (*ALWAYS_ALLOWED, *allow)
    found = Shortcuts()
    thread = threading.get_ident()
    inside: list = []  # the allowed frames being run: calls under them are theirs, not the learner's

    def profile(frame, event, arg):
        if threading.get_ident() != thread:
            return
        if event == "return" and inside and frame is inside[-1]:
            inside.pop()
            return
        if event != "call" or inside:
            return
        module = _module_of(frame.f_code.co_filename)
        if module is None:
            copied = package_copy(frame.f_code)  # None unless compiled from a string: exec of the package's source
            if copied is not None and not _allowed(copied, None, allowed):
                found.add(t("{name} (a copy of its code, run with exec)", name=copied))
            return
        if module == __name__:
            return
        if _allowed(_qualified(frame, module), _owner(frame), allowed):
            inside.append(frame)
            return
        found.add(_qualified(frame, module))

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        with _TorchWatch(torch_functions, found):
            yield found
    finally:
        sys.setprofile(previous)


def _owner(frame) -> str | None:
    """``module.Class`` of the object a method frame runs on (``self``): a subclass runs its parent's code, but is
    the subclass."""
    owner = frame.f_locals.get("self") if frame.f_code.co_argcount else None
    kind = type(owner) if owner is not None else None
    return f"{kind.__module__}.{kind.__qualname__}" if kind is not None else None


def _allowed(qualified: str, owner: str | None, allowed: Iterable[str]) -> bool:
    return any(
        name == a or name.startswith(a + ".") for a in allowed for name in (qualified, owner) if name is not None
    )


# ---- copies of the package's code ------------------------------------------------------------------------------

MODEL_MODULES = ("masks", "attention", "layers", "model", "decode", "beam", "dropout")  # what the notebooks teach


_SKIPPED = frozenset({"CACHE", "EXTENDED_ARG", "NOP", "PRECALL", "PUSH_NULL", "RESUME"})  # bookkeeping, not work
_JUMPS = frozenset(dis.hasjrel) | frozenset(dis.hasjabs)


def _shape(code: types.CodeType) -> tuple:
    """What a function does, without its names: its instructions, with local variables numbered in order of
    appearance, jump targets and bookkeeping left out, nested code (a comprehension) by its own shape. A docstring,
    comments, line numbers and the names of local variables are not in it, so a copy with renamed variables or other
    comments has the same shape; ``math.sqrt`` compiled in its module or in ``exec`` is one attribute load."""
    local_names: dict[str, int] = {}
    steps = []
    for step in dis.get_instructions(code):
        if step.opname in _SKIPPED:
            continue
        value = step.argval
        if step.opcode in _JUMPS:
            value = None
        elif step.opcode in dis.haslocal or step.opcode in dis.hasfree:
            value = local_names.setdefault(value, len(local_names))
        elif isinstance(value, types.CodeType):
            value = _shape(value)
        steps.append(("LOAD_ATTR" if step.opname == "LOAD_METHOD" else step.opname, value))
    return code.co_argcount, code.co_kwonlyargcount, tuple(steps)


@functools.cache  # once per process: the package's functions and methods do not change
def _package_shapes() -> dict[tuple, str]:
    """The shape of every function and method of the package's model modules → its qualified name."""
    shapes = {}
    for name in MODEL_MODULES:
        module = importlib.import_module(f"transformer_course.{name}")
        objects = [v for v in vars(module).values() if getattr(v, "__module__", None) == module.__name__]
        for value in objects:
            members = vars(value).values() if isinstance(value, type) else (value,)
            for member in members:
                member = getattr(
                    member, "__func__", getattr(member, "fget", member)
                )  # static/class methods, properties
                code = getattr(member, "__code__", None)
                if isinstance(code, types.CodeType):
                    shapes.setdefault(_shape(code), f"{module.__name__}.{member.__qualname__}")
    return shapes


def package_copy(code: types.CodeType) -> str | None:
    """The package's function whose code ``code`` is a copy of (``transformer_course.attention.
    scaled_dot_product_attention``), when ``code`` was compiled from a string (``exec``, ``compile``:
    its file name is ``<string>`` or like it); None for any other code."""
    if not code.co_filename.startswith("<"):  # most calls: decided by the file name alone
        return None
    return _copy_of(code)


@functools.lru_cache(maxsize=4096)  # a code object is looked at once, however often it runs
def _copy_of(code: types.CodeType) -> str | None:
    return _package_shapes().get(_shape(code))


def earlier_fallbacks(notebook: str) -> tuple[str, ...]:
    """The package's pieces of the files written by the notebooks before ``notebook`` (``"06"``), e.g.
    ``transformer_course.attention.MultiHeadAttention``: what a fallback of such a file imports
    (:func:`transformer_course.provenance.package_piece`), so what an exercise may call in place of the learner's
    earlier files. Never this notebook's own pieces: calling those is the shortcut the exercise names."""
    from ..provenance import FILES, NAMES, SOURCES

    return tuple(
        f"transformer_course.{SOURCES[file]}.{name}"
        for file, writer in FILES.items()
        if writer[:2] < notebook
        for name in NAMES[file]
    )


@contextmanager
def no_shortcuts(what: str, torch_functions: Iterable = (), allow: Iterable[str] = ()):
    """Run the block (the learner's code); then raise a Hint if it called the package or one of
    ``torch_functions`` instead of doing ``what`` itself (``what`` already put through ``t()``).

        with no_shortcuts(t("attention"), TORCH_ATTENTION):
            out, weights = attention(q, k, v)
    """
    with watch_shortcuts(torch_functions, allow) as found:
        yield found
    if found:
        raise Hint(
            t(
                "your code calls {call}, the package's or PyTorch's own version of {what}, so this is not "
                "counted as yours: write {what} yourself with tensor operations",
                call=found.calls[0],
                what=what,
            )
        )


# ---- what the checks bound at import stays bound --------------------------------------------------------------


class _ReadOnlyModule(types.ModuleType):
    """A module whose names bound at import cannot be rebound or deleted from outside (its ``check_*`` functions
    excepted: replacing a check replaces only that name)."""

    def _refuse(self, name: str) -> None:
        bound = vars(self)["_BOUND_AT_IMPORT"]
        if name == "__class__" or (name in bound and not name.startswith("check_")):
            raise AttributeError(
                t(
                    "{module}.{name} is part of the checker: the checks use what it was when the module was imported, "
                    "so it cannot be replaced (restart the kernel to start afresh)",
                    module=self.__name__,
                    name=name,
                )
            )

    def __setattr__(self, name: str, value) -> None:
        self._refuse(name)
        super().__setattr__(name, value)

    def __delattr__(self, name: str) -> None:
        self._refuse(name)
        super().__delattr__(name)


def read_only(name: str) -> None:
    """Make the names the module ``name`` has bound so far read-only from outside (the last line of a checker
    module): ``ex.no_shortcuts = lambda …`` raises AttributeError and the checks keep their guard and references."""
    module = sys.modules[name]
    module._BOUND_AT_IMPORT = frozenset({*vars(module), "_BOUND_AT_IMPORT"})
    module.__class__ = _ReadOnlyModule


read_only(__name__)  # the guard's own names: guard.no_shortcuts = … cannot switch it off

"""What a checker needs so that it grades the learner's own work: shortcuts caught, answers hashed.

**Shortcuts.** A build cell asks the learner to *write* attention, LayerNorm, an encoder layer … A function that
hands the work to the package (``transformer_course.attention.scaled_dot_product_attention``), to a checker's
own helper, or to PyTorch's implementation (``F.scaled_dot_product_attention``, ``nn.LayerNorm``) computes the
right numbers but is not the learner's. :func:`no_shortcuts` runs the learner's code and watches two things:

- every Python function entered whose code lives in the ``transformer_course`` package (a profile hook), except
  the modules the exercise allows (``transformer_course.masks`` for a decoder, say);
- every call of the PyTorch functions the exercise names (a ``TorchFunctionMode``), e.g. :data:`TORCH_ATTENTION`.

On leaving the block it raises a :class:`~transformer_course.exercises.Hint` naming the first such call, so
``run_check`` prints "❌ … calls transformer_course.attention.scaled_dot_product_attention: that is the package's
own …, not yours". Helpers the learner may use (masks from notebook 01, ``nn.Linear``, ``softmax``) are not
watched unless an exercise says so.

**Answers by digest.** A quiz letter, a set of bug lines or a number that is the answer of an exercise is stored
in a checker module only as :func:`answer_digest` of it, never as the value, so no attribute of the module a
notebook imports passes a checker. Authors compute a digest with
``python -m transformer_course.exercises.guard KEY ANSWER`` (``KEY`` names the question, e.g. ``nb02-q1``).
Numbers are compared by :func:`number_digests`: the answer's bucket on a logarithmic grid of relative width
``rel_tol`` and its two neighbours, so anything within ``rel_tol`` of the value passes and nothing else does
beyond ``2 · rel_tol``; ``rel_tol=0`` means exactly this number.
"""

from __future__ import annotations

import functools
import hashlib
import math
import sys
import threading
from collections.abc import Iterable
from contextlib import contextmanager
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

from ..i18n import load_catalogue, register, t

register("zh", load_catalogue("guard"))

__all__ = [
    "TORCH_ATTENTION",
    "TORCH_NORM",
    "TORCH_TRANSFORMER",
    "Shortcuts",
    "answer_digest",
    "earlier_fallbacks",
    "matches_digest",
    "no_shortcuts",
    "normalize_answer",
    "number_digests",
    "number_matches",
]

PACKAGE = Path(__file__).resolve().parents[1]  # transformer_course/
ALWAYS_ALLOWED = ("transformer_course.i18n",)  # messages, not work

# PyTorch's own versions of what the course asks the learner to write
TORCH_ATTENTION = (F.scaled_dot_product_attention, F.multi_head_attention_forward, torch._native_multi_head_attention)
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
        if module is None or module == __name__:
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
    from . import Hint

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


# ---- answers by digest -------------------------------------------------------------------------------------


def normalize_answer(answer) -> str:
    """One text per answer, whatever its form: a letter ``'B'``/``'(b)'`` → ``'b'``; a collection of whole
    numbers (bug lines) → the sorted numbers; a number → ``repr(float)``; anything else → ``repr``."""
    if isinstance(answer, str):
        return answer.strip().strip("()").strip().lower()
    if isinstance(answer, (set, frozenset, list, tuple)):
        return ",".join(str(int(n)) for n in sorted(set(answer)))
    if isinstance(answer, (int, float)) and not isinstance(answer, bool):
        return repr(float(answer))
    return repr(answer)


def answer_digest(key: str, answer) -> str:
    """The SHA-256 of ``key`` and the normalized ``answer`` (hex, first 24 characters): what a checker module
    stores instead of the answer."""
    text = f"{key}\x1f{normalize_answer(answer)}"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:24]


def _placeholders(digests: Iterable[str]) -> None:
    """Raise :class:`~.seal.Sealed` for a digest the hub wheel left out (``"sealed:N"``): no verdict there."""
    from .seal import PLACEHOLDER, Sealed

    if any(str(d).startswith(PLACEHOLDER) for d in digests):
        raise Sealed()  # run_check says "🔒 noted" (seal.SEALED_MESSAGE)


def matches_digest(key: str, answer, digest: str) -> bool:
    _placeholders([digest])
    return answer_digest(key, answer) == digest


def _bucket(value: float, rel_tol: float) -> int:
    return math.floor(math.log(abs(value)) / math.log1p(rel_tol))


def number_digests(key: str, value: float, rel_tol: float = 1e-3) -> tuple[str, ...]:
    """The digests that accept ``value`` within ``rel_tol``: its bucket on a log grid and both neighbours
    (sign kept; 0 is its own bucket)."""
    if rel_tol == 0:  # a whole number, exactly
        return (answer_digest(key, float(value)),)
    if value == 0:
        return (answer_digest(key, "0"),)
    sign = "+" if value > 0 else "-"
    b = _bucket(value, rel_tol)
    return tuple(answer_digest(key, f"{sign}{b + d}@{rel_tol!r}") for d in (-1, 0, 1))


def number_matches(key: str, got: float, digests: Iterable[str], rel_tol: float = 1e-3) -> bool:
    """True when ``got`` falls in one of the buckets ``digests`` accepts (:func:`number_digests`)."""
    digests = tuple(digests)
    _placeholders(digests)
    if not math.isfinite(got):
        return False
    if rel_tol == 0:
        return answer_digest(key, float(got)) in set(digests)
    if got == 0:
        return answer_digest(key, "0") in set(digests)
    sign = "+" if got > 0 else "-"
    return answer_digest(key, f"{sign}{_bucket(got, rel_tol)}@{rel_tol!r}") in set(digests)


def _main(argv: list[str]) -> int:
    """``python -m transformer_course.exercises.guard KEY ANSWER [--number [REL_TOL]]``: print the digest(s)."""
    if len(argv) < 2:
        raise SystemExit(_main.__doc__)
    key, answer, *rest = argv
    if rest and rest[0] == "--number":
        rel_tol = float(rest[1]) if len(rest) > 1 else 1e-3
        print(repr(number_digests(key, float(answer), rel_tol)))
    else:
        parsed = [int(n) for n in answer.split(",")] if answer.replace(",", "").isdigit() and "," in answer else answer
        print(repr(answer_digest(key, parsed)))
    return 0


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))

"""What the build-cell checkers of notebooks 06 and 07 share: the package's layers built with random weights and
loaded into the learner's, the learner's code run guarded (only the pieces a checker allows may be the package's),
outputs compared with named mistakes, dropout and gradients checked, a closed-form count refused a tensor."""

from __future__ import annotations

import contextvars
import functools
import types
from collections.abc import Callable

import torch
from torch import Tensor, nn
from torch.overrides import TorchFunctionMode

from .. import model
from ..i18n import messages
from . import Hint, expect_tensor, same
from .compare import missing_biases
from .guard import TORCH_TRANSFORMER, no_shortcuts, read_only

t, lazy_t = messages("layer_checks")

__all__ = [
    "ALLOWED",
    "allowing",
    "blame_an_earlier_file",
    "check_dropout",
    "check_gradients",
    "closed_form",
    "guarded",
    "load_weights",
    "meta_count",
    "name_mistake",
    "package_model",
    "randomize",
    "shared_tensors",
    "shares_weights",
]

# what the learner's code may call besides its own (the earlier files' fallbacks, the package's attention and
# layers): each notebook's checkers set their own list with allowing()
ALLOWED: contextvars.ContextVar[tuple[str, ...]] = contextvars.ContextVar("allowed_pieces", default=())


def allowing(pieces: tuple[str, ...]):
    """Decorate a checker: while it runs, :func:`guarded` lets the learner's code call ``pieces``."""

    def decorate(checker):
        @functools.wraps(checker)
        def wrapper(*args, **kwargs):
            token = ALLOWED.set(pieces)
            try:
                return checker(*args, **kwargs)
            finally:
                ALLOWED.reset(token)

        return wrapper

    return decorate


_PACKAGE_MODEL = types.SimpleNamespace(**vars(model))  # the references, bound at import


def package_model() -> types.SimpleNamespace:
    """The names of the package's model module as they were when this module was imported: replacing
    ``tc.model.EncoderLayer`` later changes no check (no attribute of this module is a layer itself)."""
    return _PACKAGE_MODEL


def randomize(module: nn.Module) -> nn.Module:
    """Random weights everywhere, γ around 1 and β around 0 but not exactly: a swapped or skipped LayerNorm,
    a missing bias or a mask on the wrong sub-layer all change the output."""
    with torch.no_grad():
        for name, p in module.named_parameters():
            if name.endswith("norm.weight"):
                p.uniform_(0.5, 1.5)
            else:
                p.normal_(0.0, 0.3)
    return module


def load_weights(mine: nn.Module, reference: nn.Module, what: str) -> None:
    """The package's weights into the learner's module (strict): the names must be the package's."""
    if not isinstance(mine, nn.Module):
        raise Hint(t("not_a_module", what=what, type=type(mine).__name__))
    ours, theirs = set(mine.state_dict()), set(reference.state_dict())
    if ours != theirs:
        extra, missing = sorted(ours - theirs), sorted(theirs - ours)
        if not extra:
            missing_biases(what, missing)
        raise Hint(
            t(
                "parameter_names_differ",
                what=what,
                extra=", ".join(extra[:3]) or "none",
                missing=", ".join(missing[:3]) or "none",
            )
        )
    shared = shared_tensors(mine) - shared_tensors(reference)
    if shared:
        names = sorted(min(shared, key=sorted))
        raise Hint(t("one_tensor_shared", what=what, names=", ".join(names[:3])))
    try:
        mine.load_state_dict(reference.state_dict(), strict=True)
    except RuntimeError as error:
        raise Hint(t("weights_do_not_load", what=what, error=str(error)[:200])) from None


def shared_tensors(module: nn.Module) -> set[frozenset[str]]:
    """The groups of state_dict names that hold one tensor (a tied matrix, or a module listed twice)."""
    groups: dict[int, set[str]] = {}
    for name, tensor in module.state_dict(keep_vars=True).items():
        groups.setdefault(id(tensor), set()).add(name)
    return {frozenset(names) for names in groups.values() if len(names) > 1}


def guarded(what: str, learners: Callable, *args, **kwargs):
    """``learners(*args, **kwargs)``, named as the learner's only if it calls neither the package's layers nor
    PyTorch's (what it may call: :data:`ALLOWED`). (The learner's callable itself, not a lambda of this module:
    that would count as the package.)"""
    try:
        with no_shortcuts(what, TORCH_TRANSFORMER, allow=ALLOWED.get()):
            return learners(*args, **kwargs)
    except NotImplementedError as error:
        blame_an_earlier_file(error, learners, what)
        raise


LEARNER_FILES = ("attention.py", "multi_head.py", "norm_residual.py", "embeddings.py", "encoder.py", "decoder.py")


def blame_an_earlier_file(error: NotImplementedError, learners, what: str) -> None:
    """A stub that raises in another of the learner's files (multi_head.py still blank, say) is not this cell's
    "not done yet": name that file."""
    import inspect
    import traceback
    from pathlib import Path

    raised_in = Path(traceback.extract_tb(error.__traceback__)[-1].filename)
    try:
        code = learners if isinstance(learners, type) or inspect.isroutine(learners) else type(learners)
        own = Path(inspect.getfile(code)).name
    except TypeError:
        return
    if raised_in.name in LEARNER_FILES and raised_in.name != own:
        raise Hint(t("not_written_yet", file=raised_in.name, what=what)) from None


def name_mistake(got: Tensor, want: Tensor, mistakes: dict, what: str) -> None:
    """Compare; when wrong, name the first plausible mistake ``got`` equals (hint → a function computing it)."""
    if same(got, want, atol=1e-5):
        return
    if isinstance(got, Tensor) and got.shape == want.shape:
        for hint, wrong in mistakes.items():
            try:
                value = wrong()
            except RuntimeError:  # a mistake that cannot even run on these shapes
                continue
            if same(got, value, atol=1e-5):
                raise Hint(t("what_hint", what=what, hint=hint))
    expect_tensor(got, want, what)


def shares_weights(layers) -> bool:
    """True when two entries of a stack are one module, or hold one tensor."""
    seen = set()
    for layer in layers:
        for p in layer.parameters():
            if p.data_ptr() in seen:
                return True
        seen.update(p.data_ptr() for p in layer.parameters())
    return False


def check_dropout(mine: nn.Module, reference: nn.Module, args: tuple, what: str):
    """Train mode, the same seed: the learner's module must drop what the package's drops (same places, same
    order), and drop something."""
    mine.train(), reference.train()
    torch.manual_seed(21)
    got = guarded(what, mine, *args)
    torch.manual_seed(21)
    want = reference(*args)
    mine.eval(), reference.eval()
    if same(got, want, atol=1e-5):
        return
    with torch.no_grad():
        plain = guarded(what, mine, *args)
    if same(got, plain, atol=1e-5):
        raise Hint(t("drops_nothing_in_training", what=what))
    raise Hint(t("dropout_misplaced", what=what))


def check_gradients(mine: nn.Module, reference: nn.Module, args: tuple, what: str, head: str | None = None):
    """The same loss, the same gradient on every parameter (catches a .detach() or a no_grad in the path, and a
    tied matrix that is two). ``head``: a sub-module applied to the output first (a model's generator)."""
    mine.zero_grad(), reference.zero_grad()
    out = guarded(what, mine, *args)
    if not isinstance(out, Tensor) or not out.requires_grad:
        raise Hint(t("output_has_no_gradient", what=what))
    expected = reference(*args)
    if head is not None:
        out, expected = guarded(what, getattr(mine, head), out), getattr(reference, head)(expected)
    (out**2).mean().backward()
    (expected**2).mean().backward()
    theirs = dict(reference.named_parameters())
    for name, p in mine.named_parameters():
        if p.grad is None and theirs[name].grad is None:
            continue
        if p.grad is None or theirs[name].grad is None or not same(p.grad, theirs[name].grad, atol=1e-5):
            raise Hint(t("gradient_differs", what=what, name=name))


class NoTorch(TorchFunctionMode):
    """Records the first torch function called inside the block (a closed form needs none)."""

    def __init__(self) -> None:
        super().__init__()
        self.first: str | None = None

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if self.first is None:
            self.first = getattr(func, "__name__", str(func))
        return func(*args, **(kwargs or {}))


def closed_form(function: Callable, args: tuple, what: str):
    """Call the learner's count: it may neither call the package nor build a tensor or a layer."""
    watch = NoTorch()
    with watch:  # the package's layers make tensors too, so this also catches counting the package's model
        got = function(*args)
    if watch.first is not None:
        raise Hint(t("closed_form_calls_torch", what=what, call=watch.first))
    return got


def meta_count(build: Callable[[], nn.Module]) -> int:
    """Parameters of a module built on the meta device (shapes only, no memory), each tied matrix once."""
    with torch.device("meta"):
        module = build()
    return sum(p.numel() for p in module.parameters())


read_only(__name__)  # what the checks use stays what it was at import (ex.no_shortcuts = … is refused)

"""Checkers for notebook 06 (the encoder; paper §3.1, §3.2.3, §3.5, §5.4): the build cell and the exercises.

from transformer_course.exercises import nb06_encoder as ex
ex.check_encoder_layer(EncoderLayer)                # your my_transformer/encoder.py against the package
ex.check_encoder(Encoder, EncoderLayer)             # the stack: N copies, the final LayerNorm of pre-LN
ex.check_mask_effect(changes)                       # predict which outputs change without the padding mask
ex.check_left_padded_positions(left_padded_positions)   # a variant: seat numbers that ignore left padding
ex.check_encoder_parameter_count(encoder_parameter_count)   # estimate the cost, in closed form
ex.check_quiz(q1=q1, q2=q2, q3=q3)                  # three short questions

The build-cell checkers run your classes inside :func:`~transformer_course.exercises.guard.no_shortcuts`: an
encoder layer that hands its work to the package's or to ``nn.TransformerEncoderLayer`` is named, not counted.
Every expected value is computed when a checker runs, with the package, outside that guard; nothing in this
module holds an answer. Numbers may be given as a Python int or float or a numpy scalar; tables of yes/no
answers as nested lists or tuples, a numpy array or a tensor, of booleans or of 0/1.
"""

from __future__ import annotations

import contextvars
import functools
from collections.abc import Callable

import torch
from torch import Tensor, nn
from torch.overrides import TorchFunctionMode

from ..i18n import lazy_t, load_catalogue, register, t
from ..masks import padding_mask
from . import Hint, Numeric, Result, as_int, as_mask, run_check, same
from . import check_quiz as _check_quiz
from .guard import TORCH_TRANSFORMER, earlier_fallbacks, no_shortcuts
from .nb02_attention import _expect_values, _missing_biases
from .seal import answer_check

register("zh", load_catalogue("nb06_encoder"))

__all__ = [
    "QUESTIONS",
    "check_encoder",
    "check_encoder_layer",
    "check_encoder_parameter_count",
    "check_left_padded_positions",
    "check_mask_effect",
    "check_quiz",
]

PAD = 0
D_MODEL, HEADS, D_FF = 16, 4, 32


# ---------------------------------------------------------------------------------------------------
# Shared by the build-cell checkers of notebooks 06 and 07: build, copy weights, run guarded, compare


def _package():
    """The package's model module, imported when a check runs (so no attribute of this module is a layer)."""
    from .. import model

    return model


def _randomize(module: nn.Module) -> nn.Module:
    """Random weights everywhere, γ around 1 and β around 0 but not exactly: a swapped or skipped LayerNorm,
    a missing bias or a mask on the wrong sub-layer all change the output."""
    with torch.no_grad():
        for name, p in module.named_parameters():
            if name.endswith("norm.weight"):
                p.uniform_(0.5, 1.5)
            else:
                p.normal_(0.0, 0.3)
    return module


def _load(mine: nn.Module, reference: nn.Module, what: str) -> None:
    """The package's weights into the learner's module (strict): the names must be the package's."""
    if not isinstance(mine, nn.Module):
        raise Hint(t("{what} should be an nn.Module, got {type}", what=what, type=type(mine).__name__))
    ours, theirs = set(mine.state_dict()), set(reference.state_dict())
    if ours != theirs:
        extra, missing = sorted(ours - theirs), sorted(theirs - ours)
        if not extra:
            _missing_biases(what, missing)
        raise Hint(
            t(
                "{what} has other parameter names than the package's (extra: {extra}; missing: {missing}); keep the "
                "given __init__ and its attribute names",
                what=what,
                extra=", ".join(extra[:3]) or "none",
                missing=", ".join(missing[:3]) or "none",
            )
        )
    shared = _shared_tensors(mine) - _shared_tensors(reference)
    if shared:
        names = sorted(min(shared, key=sorted))
        raise Hint(
            t(
                "{what}: {names} are one tensor, so one module serves several places and they share their weights "
                "(a list that holds one module several times, [module] * 3, or one module assigned twice); build a "
                "separate one for each place, with a loop or clones",
                what=what,
                names=", ".join(names[:3]),
            )
        )
    try:
        mine.load_state_dict(reference.state_dict(), strict=True)
    except RuntimeError as error:
        raise Hint(t("{what}: the package's weights do not load: {error}", what=what, error=str(error)[:200])) from None


def _shared_tensors(module: nn.Module) -> set[frozenset[str]]:
    """The groups of state_dict names that hold one tensor (a tied matrix, or a module listed twice)."""
    groups: dict[int, set[str]] = {}
    for name, tensor in module.state_dict(keep_vars=True).items():
        groups.setdefault(id(tensor), set()).add(name)
    return {frozenset(names) for names in groups.values() if len(names) > 1}


# The pieces of earlier notebooks the learner's file builds on may be the package's (a marked fallback for a file
# the learner skipped: transformer_course.learner.fill_missing_files); the lesson here is the layer and the stack,
# so only the package's own layers (transformer_course.model), this notebook's fallbacks and PyTorch's transformer
# functions count as shortcuts.
EARLIER_PIECES = (*earlier_fallbacks("06"), "transformer_course.attention", "transformer_course.layers")
ALLOWED = contextvars.ContextVar("nb06_allowed", default=EARLIER_PIECES)  # notebook 07's checks set their own


def _guarded(what: str, learners: Callable, *args, **kwargs):
    """``learners(*args, **kwargs)``, named as the learner's only if it calls neither the package's layers nor
    PyTorch's (what it may call: :data:`ALLOWED`). (The learner's callable itself, not a lambda of this module:
    that would count as the package.)"""
    try:
        with no_shortcuts(what, TORCH_TRANSFORMER, allow=ALLOWED.get()):
            return learners(*args, **kwargs)
    except NotImplementedError as error:
        _blame_an_earlier_file(error, learners, what)
        raise


LEARNER_FILES = ("attention.py", "multi_head.py", "norm_residual.py", "embeddings.py", "encoder.py", "decoder.py")


def _blame_an_earlier_file(error: NotImplementedError, learners, what: str) -> None:
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
        raise Hint(
            t(
                "{file} is not written yet (a stub there still raises NotImplementedError), and {what} builds on it: "
                "write it in its notebook, or bring in its reference on purpose with tc.learner.use_reference('{file}')",
                file=raised_in.name,
                what=what,
            )
        ) from None


def _name_mistake(got: Tensor, want: Tensor, mistakes: dict, what: str) -> None:
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
                raise Hint(t("{what}: {hint}", what=what, hint=hint))
    _expect_values(got, want, what)


def _shares_weights(layers) -> bool:
    """True when two entries of a stack are one module, or hold one tensor."""
    seen = set()
    for layer in layers:
        for p in layer.parameters():
            if p.data_ptr() in seen:
                return True
        seen.update(p.data_ptr() for p in layer.parameters())
    return False


def _check_dropout(mine: nn.Module, reference: nn.Module, args: tuple, what: str):
    """Train mode, the same seed: the learner's module must drop what the package's drops (same places, same
    order), and drop something."""
    mine.train(), reference.train()
    torch.manual_seed(21)
    got = _guarded(what, mine, *args)
    torch.manual_seed(21)
    want = reference(*args)
    mine.eval(), reference.eval()
    if same(got, want, atol=1e-5):
        return
    with torch.no_grad():
        plain = _guarded(what, mine, *args)
    if same(got, plain, atol=1e-5):
        raise Hint(
            t(
                "{what} drops nothing in training mode: give each sub-layer to its self.sublayer[i] "
                "(ResidualConnection), which holds the dropout of §5.4",
                what=what,
            )
        )
    raise Hint(
        t(
            "{what}: in training mode the dropout is not where the package puts it — once on each sub-layer's output "
            "(inside ResidualConnection) and on the embeddings + positions, nowhere else",
            what=what,
        )
    )


def _check_gradients(mine: nn.Module, reference: nn.Module, args: tuple, what: str, head: str | None = None):
    """The same loss, the same gradient on every parameter (catches a .detach() or a no_grad in the path, and a
    tied matrix that is two). ``head``: a sub-module applied to the output first (a model's generator)."""
    mine.zero_grad(), reference.zero_grad()
    out = _guarded(what, mine, *args)
    if not isinstance(out, Tensor) or not out.requires_grad:
        raise Hint(t("{what}: the output carries no gradient; remove .detach() / torch.no_grad()", what=what))
    expected = reference(*args)
    if head is not None:
        out, expected = _guarded(what, getattr(mine, head), out), getattr(reference, head)(expected)
    (out**2).mean().backward()
    (expected**2).mean().backward()
    theirs = dict(reference.named_parameters())
    for name, p in mine.named_parameters():
        if p.grad is None and theirs[name].grad is None:
            continue
        if p.grad is None or theirs[name].grad is None or not same(p.grad, theirs[name].grad, atol=1e-5):
            raise Hint(
                t(
                    "{what}: the gradient of {name} differs from the package's; does every parameter take part, once?",
                    what=what,
                    name=name,
                )
            )


def _src_batch(S: int = 5) -> tuple[Tensor, Tensor]:
    """Token ids (2, S), the second sentence padded after 3 real tokens, and its padding mask (2, 1, 1, S)."""
    src = torch.randint(4, 20, (2, S))
    src[1, 3:] = PAD
    return src, padding_mask(src, PAD)


# ---------------------------------------------------------------------------------------------------
# The build cell: EncoderLayer


def _check_encoder_layer_once(EncoderLayer, norm_first: bool, model, what: str) -> None:
    name = f"EncoderLayer(16, 4, 32, dropout=0.5, norm_first={norm_first})"
    mine = _guarded(what, EncoderLayer, D_MODEL, HEADS, D_FF, 0.5, norm_first=norm_first)
    ref = _randomize(model.EncoderLayer(D_MODEL, HEADS, D_FF, 0.5, norm_first=norm_first))
    _load(mine, ref, name)
    mine.eval(), ref.eval()
    _, mask = _src_batch()
    x = torch.randn(2, 5, D_MODEL)  # (B, S, d_model)
    with torch.no_grad():
        got = _guarded(what, mine, x, mask)
        post = model.EncoderLayer(D_MODEL, HEADS, D_FF, 0.0, norm_first=not norm_first)
        post.load_state_dict(ref.state_dict())
        attn, ffn, s0, s1 = ref.self_attn, ref.feed_forward, ref.sublayer[0], ref.sublayer[1]
        mistakes = {
            t("the padding mask does not reach self-attention: pass src_mask to self.self_attn"): lambda: ref(x, None),
            t(
                "norm_first is ignored: each sub-layer must go through its self.sublayer[i] "
                "(ResidualConnection), which knows post-LN from pre-LN"
            ): lambda: post(x, mask),
            t("the sub-layers run in the wrong order: self-attention first, then the FFN (§3.1)"): lambda: s1(
                s0(x, ffn), lambda y: attn(y, mask=mask)
            ),
            t("the residual is missing: Add & Norm adds the sub-layer's input back (x + Sublayer(x))"): lambda: s1.norm(
                ffn(s0.norm(attn(x, mask=mask)))
            ),
            t(
                "the FFN reads the layer's input x, not the output of the self-attention sub-layer: "
                "feed the first sub-layer's result to the second"
            ): lambda: s1(x, ffn),
            t(
                "both sub-layers go through self.sublayer[0]: each sub-layer has its own Add & Norm, with its own "
                "LayerNorm, so the FFN goes through self.sublayer[1]"
            ): lambda: s0(s0(x, lambda y: attn(y, mask=mask)), ffn),
            t(
                "both sub-layers go through self.sublayer[1]: each sub-layer has its own Add & Norm, with its own "
                "LayerNorm, so self-attention goes through self.sublayer[0]"
            ): lambda: s1(s1(x, lambda y: attn(y, mask=mask)), ffn),
        }
        _name_mistake(got, ref(x, mask), mistakes, name)
    _check_dropout(mine, ref, (x, mask), name)
    _check_gradients(mine, ref, (x, mask), name)


def check_encoder_layer(EncoderLayer) -> Result:
    """``EncoderLayer(d_model, heads, d_ff, dropout, norm_first=False)`` of my_transformer/encoder.py: the package's
    values (post-LN and pre-LN), its dropout placement and its gradients, with the package's weights loaded."""

    def check():
        model = _package()
        what = t("your encoder layer")
        for norm_first in (False, True):
            _check_encoder_layer_once(EncoderLayer, norm_first, model, what)

    return run_check(
        t("encoder layer"),
        check,
        t(
            "EncoderLayer equals the package's, post-LN and pre-LN: the same outputs, dropout in the same places, "
            "the same gradients"
        ),
    )


# ---------------------------------------------------------------------------------------------------
# The build cell: the stack


def _check_encoder_once(Encoder, EncoderLayer, norm_first: bool, model, what: str) -> None:
    name = f"Encoder(EncoderLayer(16, 4, 32, 0.0, norm_first={norm_first}), N=3)"
    layer = _guarded(what, EncoderLayer, D_MODEL, HEADS, D_FF, 0.0, norm_first=norm_first)
    mine = _guarded(what, Encoder, layer, 3)
    layers = getattr(mine, "layers", None)
    if not isinstance(layers, nn.ModuleList) or len(layers) != 3:
        raise Hint(
            t(
                "{name} should keep its 3 layers in self.layers, an nn.ModuleList of 3 (clones), got {got}",
                name=name,
                got=type(layers).__name__ if not isinstance(layers, nn.ModuleList) else len(layers),
            )
        )
    if _shares_weights(layers):
        raise Hint(
            t(
                "{name}: the 3 layers share their weights — one layer listed 3 times; clones must make "
                "copy.deepcopy copies, each with its own weights",
                name=name,
            )
        )
    has_norm = any(k.startswith("norm.") for k in mine.state_dict())
    if has_norm and not norm_first:
        raise Hint(
            t(
                "{name}: a post-LN stack ends without an extra LayerNorm (its last layer already ends with "
                "one); final_norm gives nn.Identity() when norm_first is False",
                name=name,
            )
        )
    if norm_first and not has_norm:
        raise Hint(
            t(
                "{name}: a pre-LN stack needs one more LayerNorm at the end — its last layer's output is a sum "
                "that nothing has normalised; final_norm gives LayerNorm(d_model) when norm_first is True",
                name=name,
            )
        )
    ref = model.Encoder(
        [model.EncoderLayer(D_MODEL, HEADS, D_FF, 0.0, norm_first) for _ in range(3)], D_MODEL, norm_first
    )
    _randomize(ref)
    _load(mine, ref, name)
    mine.eval(), ref.eval()
    src, mask = _src_batch()
    x = torch.randn(2, 5, D_MODEL)
    with torch.no_grad():
        got = _guarded(what, mine, x, mask)

        def layers_only(n: int, chain: bool = True) -> Tensor:
            y = x
            for layer in ref.layers[:n]:
                y = layer(y if chain else x, mask)
            return y

        mistakes = {
            t("the final LayerNorm is built but not applied: return self.norm(x) after the last layer"): (
                lambda: layers_only(3)
            ),
            t("only one layer runs: loop over all of self.layers"): lambda: ref.norm(layers_only(1)),
            t("each layer reads the stack's input: feed each layer's output to the next"): lambda: ref.norm(
                layers_only(3, chain=False)
            ),
            t("the mask does not reach the layers: pass src_mask to every layer"): lambda: ref(x, None),
        }
        _name_mistake(got, ref(x, mask), mistakes, name)
        # padding changes nothing: sentence 0 alone, then with 4 <pad> appended (and its mask)
        alone = _guarded(what, mine, x[:1], mask[:1])
        padded_x = torch.cat([x[:1], torch.randn(1, 4, D_MODEL)], dim=1)  # (1, 9, d_model)
        padded_mask = torch.cat([mask[:1], torch.zeros(1, 1, 1, 4, dtype=torch.bool)], dim=-1)
        with_pads = _guarded(what, mine, padded_x, padded_mask)[:, :5]
        if not same(with_pads, alone, atol=1e-5):
            raise Hint(t("{name}: appending <pad> changes the real positions' outputs", name=name))


def check_encoder(Encoder, EncoderLayer) -> Result:
    """``Encoder(layer, N)``: N deep copies of ``layer`` (each its own weights) and, only when the layer is
    pre-LN, one more LayerNorm at the end; equal to the package's ``Encoder`` with the same weights; padding
    changes no real position's output."""

    def check():
        model = _package()
        what = t("your encoder")
        for norm_first in (False, True):
            _check_encoder_once(Encoder, EncoderLayer, norm_first, model, what)

    return run_check(
        t("encoder"),
        check,
        t(
            "Encoder holds N independent copies, ends with a LayerNorm only when pre-LN, equals the package's, "
            "and appended <pad> change no real position"
        ),
    )


# ---------------------------------------------------------------------------------------------------
# Exercise 1: predict which outputs change when the padding mask is left out

# the notebook's batch: sentence 0 has five real tokens, sentence 1 three real tokens and two <pad>
SRC = torch.tensor([[5, 6, 7, 8, 9], [5, 6, 7, PAD, PAD]])


def _as_table(got, shape: tuple[int, ...], what: str) -> Tensor:
    """A yes/no table (nested lists or tuples, numpy array or tensor; booleans or 0/1) as a bool tensor."""
    if not isinstance(got, Tensor):
        try:
            got = torch.as_tensor(got.tolist() if hasattr(got, "tolist") else got)
        except (TypeError, ValueError, RuntimeError):
            raise Hint(
                t(
                    "{what} should be a {rows} × {columns} table (a list of lists) of True/False",
                    what=what,
                    rows=shape[0],
                    columns=shape[1],
                )
            ) from None
    return as_mask(got, shape, what)


def _change_mistakes(want: Tensor) -> dict[str, Tensor]:
    pads = SRC == PAD  # (B, S)
    has_pads = pads.any(dim=1, keepdim=True)  # (B, 1): the sentences that have <pad>
    return {
        t(
            "the real tokens of sentence 1 change too: without the mask their queries also read the two <pad> keys"
        ): pads,
        t(
            "the <pad> positions of sentence 1 are queries as well: with the mask they read the 3 real keys only, "
            "without it all 5 keys, so their outputs change too"
        ): ~pads & has_pads,
        t(
            "sentence 0 has no <pad>: its mask allows every key, so leaving it out changes nothing there"
        ): torch.ones_like(want),
        t(
            "leaving the mask out lets every query of sentence 1 read its two <pad> keys: its outputs change"
        ): torch.zeros_like(want),
    }


@answer_check
def check_mask_effect(changes) -> Result:
    """``changes``: a (2, 5) table, True where the encoder's output at (sentence, position) changes when
    the padding mask is left out (``model.encode(src, None)`` instead of ``model.encode(src, src_mask)``)."""

    def check():
        if changes is ... or changes is None:
            raise NotImplementedError
        got = _as_table(changes, tuple(SRC.shape), "changes")
        # measured now, on a fresh model of the notebook's sizes (never stored)
        torch.manual_seed(6)
        model = _package().make_model(20, 20, N=2, d_model=16, d_ff=32, h=4, dropout=0.0).eval()
        with torch.no_grad():
            moved = model.encode(SRC, padding_mask(SRC, PAD)) - model.encode(SRC, None)  # (B, S, d_model)
        want = moved.abs().amax(dim=-1) > 1e-4  # (B, S)
        if torch.equal(got, want):
            return
        for hint, value in _change_mistakes(want).items():
            if torch.equal(got, value):
                raise Hint(hint)
        wrong = (got != want).nonzero()[0].tolist()
        raise Hint(
            t(
                "sentence {sentence}, position {position}: you said {said}; run both and compare",
                sentence=wrong[0],
                position=wrong[1],
                said=bool(got[tuple(wrong)]),
            )
        )

    return run_check(
        t("mask effect"), check, t("only the sentence that has <pad> changes, at every one of its positions")
    )


# ---------------------------------------------------------------------------------------------------
# Exercise 2: seat numbers that left padding does not move (a variant of §3.5's positions)

LEFT_CASES = (  # (batch, S) token ids: right-padded, left-padded, mixed, no padding
    torch.tensor([[5, 6, 7, 8, 9], [5, 6, 7, PAD, PAD]]),
    torch.tensor([[PAD, PAD, 5, 6, 7], [PAD, 8, 9, 10, 11], [12, 13, 14, 15, 16]]),
    torch.tensor([[PAD, PAD, PAD, 4, 5, 6], [7, 8, 9, PAD, PAD, PAD], [PAD, 10, 11, 12, 13, PAD]]),
    torch.tensor([[9, 8, 7, 6]]),
)


def check_left_padded_positions(left_padded_positions: Callable[[Tensor, int], Tensor]) -> Result:
    """``left_padded_positions(src, pad)`` → (batch, S) integer seat numbers: the real tokens of each sentence
    numbered 0, 1, 2, … from its first real token, wherever its <pad> are; at a <pad> any seat in [0, S)."""

    def check():
        for src in LEFT_CASES:
            what = f"left_padded_positions(src={src.tolist()}, pad={PAD})"
            got = left_padded_positions(src.clone(), PAD)
            if not isinstance(got, Tensor):
                raise Hint(t("{what} should be a torch.Tensor, got {type}", what=what, type=type(got).__name__))
            if tuple(got.shape) != tuple(src.shape):
                raise Hint(
                    t(
                        "{what} has shape {got}, expected {expected}: one seat number per token",
                        what=what,
                        got=tuple(got.shape),
                        expected=tuple(src.shape),
                    )
                )
            if got.is_floating_point() or got.dtype == torch.bool:
                raise Hint(
                    t(
                        "{what} has dtype {dtype}: seat numbers index the positional table, so return an integer "
                        "tensor (torch.long)",
                        what=what,
                        dtype=got.dtype,
                    )
                )
            real = src != PAD  # (B, S)
            S = src.size(1)
            for b in range(src.size(0)):
                seats = got[b][real[b]].tolist()
                want = list(range(int(real[b].sum())))
                if seats == want:
                    continue
                plain = torch.arange(S)[real[b]].tolist()
                if seats == plain:
                    raise Hint(
                        t(
                            "{what}, sentence {b}: those are the plain seats 0 … S−1; left padding moves every real "
                            "token one seat per <pad> in front of it, so count real tokens only",
                            what=what,
                            b=b,
                        )
                    )
                if seats == [s + 1 for s in want]:
                    raise Hint(
                        t("{what}, sentence {b}: off by one — the first real token sits at seat 0", what=what, b=b)
                    )
                if seats == want[::-1]:
                    raise Hint(
                        t(
                            "{what}, sentence {b}: counted from the end; the first real token sits at seat 0",
                            what=what,
                            b=b,
                        )
                    )
                raise Hint(
                    t(
                        "{what}, sentence {b}: the real tokens sit at seats {seats}, expected {want}",
                        what=what,
                        b=b,
                        seats=seats,
                        want=want,
                    )
                )
            if bool(((got < 0) | (got >= S)).any()):
                raise Hint(
                    t(
                        "{what}: a seat outside [0, {S}) — at a <pad> too the number indexes the positional table "
                        "(clamp it, e.g. to 0)",
                        what=what,
                        S=S,
                    )
                )

    return run_check(
        t("left-padded positions"),
        check,
        t("real tokens are numbered from their sentence's first word, so left or right padding moves no seat"),
    )


# ---------------------------------------------------------------------------------------------------
# Exercise 3: how many parameters has the encoder? In closed form: no model built, no tensor made


class _NoTorch(TorchFunctionMode):
    """Records the first torch function called inside the block (a closed form needs none)."""

    def __init__(self) -> None:
        super().__init__()
        self.first: str | None = None

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if self.first is None:
            self.first = getattr(func, "__name__", str(func))
        return func(*args, **(kwargs or {}))


def _closed_form(function: Callable, args: tuple, what: str):
    """Call the learner's count: it may neither call the package nor build a tensor or a layer."""
    watch = _NoTorch()
    with watch:  # the package's layers make tensors too, so this also catches counting the package's model
        got = function(*args)
    if watch.first is not None:
        raise Hint(
            t(
                "{what} calls torch ({call}): a closed form counts with arithmetic on the sizes, without building "
                "layers or tensors — it must work for sizes no computer could build",
                what=what,
                call=watch.first,
            )
        )
    return got


def _meta_count(build: Callable[[], nn.Module]) -> int:
    """Parameters of a module built on the meta device (shapes only, no memory), each tied matrix once."""
    with torch.device("meta"):
        module = build()
    return sum(p.numel() for p in module.parameters())


def check_encoder_parameter_count(encoder_parameter_count: Callable[[int, int, int], int]) -> Result:
    """``encoder_parameter_count(N, d_model, d_ff)`` = the parameters of N post-LN encoder layers, for sizes up to
    N = 48, d_model = 4096, d_ff = 16384 (about 9.7 billion: 39 GB in float32), with no tensor made."""

    def check():
        model = _package()
        for N, d_model, d_ff in ((1, 8, 16), (2, 16, 48), (6, 512, 2048), (48, 4096, 16384), (13, 1000, 3000)):
            what = f"encoder_parameter_count(N={N}, d_model={d_model}, d_ff={d_ff})"
            got = as_int(_closed_form(encoder_parameter_count, (N, d_model, d_ff), what), what)
            expected = N * _meta_count(functools.partial(model.EncoderLayer, d_model, 8, d_ff, 0.0))
            if got == expected:
                continue
            d = d_model
            misses = {
                expected // N: t("that is one layer; the encoder has N of them"),
                expected - N * (4 * d + d_ff + d): t("the biases are missing (4 in attention, b_1 and b_2 in the FFN)"),
                expected - N * 4 * d: t("the two LayerNorms of each layer are missing (γ and β, d_model each)"),
                expected - N * 2 * d: t(
                    "each layer has two LayerNorms, each with γ and β (2 · d_model); you counted half"
                ),
                expected - N * (d * d + d): t(
                    "multi-head attention has four d_model × d_model projections: W^Q, W^K, W^V and the output W^O"
                ),
                expected - N * (d * d_ff + d_ff): t(
                    "the FFN has two matrices, W_1 (d_model × d_ff) and W_2 (d_ff × d_model)"
                ),
            }
            hint = misses.get(got) or t(
                "count, per layer: attention 4·d_model² + 4·d_model, FFN 2·d_model·d_ff + d_ff + d_model, "
                "two LayerNorms 2·2·d_model; then multiply by N"
            )
            raise Hint(
                t(
                    "{what} returned {got:,}, expected {expected:,}: {hint}",
                    what=what,
                    got=got,
                    expected=expected,
                    hint=hint,
                )
            )

    return run_check(
        "encoder_parameter_count",
        check,
        t("a closed form: right for five sizes, the paper's base encoder and one of 9.7 billion parameters included"),
    )


# ---------------------------------------------------------------------------------------------------
# Questions

QUESTIONS = {
    "q1": Numeric(
        key="nb06-q1b",
        digests=("85b7573b6adf85739d01431d",),
        why=lazy_t(
            "the 6 entries are one module, and parameters() lists a shared tensor once: one layer's 3,152,384 "
            "parameters, and only one layer's worth of weights to train"
        ),
        mistakes={
            lazy_t(
                "parameters() lists each tensor once, however many entries of the ModuleList hold it: the 6 entries "
                "are one layer"
            ): 18914304,
            lazy_t(
                "one layer has attention 4·512² + 4·512, the FFN 2·512·2048 + 2048 + 512, and two LayerNorms of "
                "2·512 each; add the LayerNorms"
            ): 3150336,
        },
        rel_tol=0,
        otherwise=lazy_t("count one encoder layer of the base model (attention, FFN, two LayerNorms)"),
    ),
    "q2": Numeric(
        key="nb06-q2",
        digests=("0c10046a54f7d9ac8b9f3c69", "e34bebb4c9edb8a3d78cd52c", "2e17b13172e6a2a3592a3beb"),
        why=lazy_t("each layer reaches w = 5 positions further: 5, 10, 15 ≥ 12 after 3 layers, the O(n/r) path of §4"),
        mistakes={
            lazy_t("12 / 5 = 2.4: round UP — after 2 layers the influence has reached 10 positions, not 12"): 2,
            lazy_t("each layer lets information travel w = 5 positions, not 1"): 12,
            lazy_t("one layer reaches only w = 5 positions away"): 1,
        },
        rel_tol=1e-9,
        otherwise=lazy_t("after L layers the output at position 12 can depend on inputs down to 12 − 5·L"),
    ),
    "q3": Numeric(
        key="nb06-q3b",
        digests=("6321375fa105e0cd58cbd499",),
        why=lazy_t(
            "two per layer (after the norm moves in front of each sub-layer), six layers, and one more at the end "
            "of a pre-LN stack"
        ),
        mistakes={
            lazy_t(
                "a pre-LN layer's output is x + Sublayer(LayerNorm(x)), a sum nothing normalises: the stack adds one "
                "more LayerNorm at the end"
            ): 12,
            lazy_t("each layer has two: one in front of self-attention, one in front of the FFN"): 7,
            lazy_t("the final LayerNorm closes the stack, not each layer"): 18,
        },
        rel_tol=0,
        otherwise=lazy_t(
            "count the LayerNorms of one pre-LN encoder layer, then the layers, then the end of the stack"
        ),
    ),
}


@answer_check
def check_quiz(**answers) -> Result:
    """``check_quiz(q1=..., q2=..., q3=...)``: one line per question."""
    return _check_quiz(QUESTIONS, answers)

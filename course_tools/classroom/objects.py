"""What a checker does with what the learner wrote (a function, a class, a module), recorded in the sandbox and
replayed by the grader (:mod:`.judge` holds the records and scores them).

A checker given a class (``LayerNorm``) builds objects from it, reads their parameters, changes them in place,
calls them, takes gradients through them; one given a function calls it. In the sandbox the checker gets a
:class:`Proxy` instead: every operation on it, or on an object it hands out (an instance, a sub-module, a bound
method, an iterator of parameters), is carried out on the real object and written down as an **event**: what was
asked (the operation, the attribute, the inputs as plain data), what came back (plain data; a tensor as its
values, once, then by its handle; another object as a new handle), what it wrote into its inputs, the random
generator's state after it, the dropout calls it made, and, for each backward pass the checker later took through
its outputs, the gradients that came in and those that reached the call's inputs and each parameter handed out (a
call's inputs start from fresh leaves, so one call's gradients never hold another's). Each event also holds the
tensors the checker had been given that changed since the last event (``before``: the checker's own writes) and
those the operation changed (``after``).

The grader runs the same checker on a proxy whose operations are answered from the events, in order: an operation
other than the recorded one, other inputs, or given tensors that differ from what the checker left in them score
the check 0. What the checker then computes and compares is the grader's own work; a forged event must hold the
right outputs for the checker's inputs, which is the exercise. The checker must do the same in both processes, so
a proxy shows both the same face: its class is the nearest ``torch.nn`` class of the object's (``nn.Linear``,
``nn.Module``, else ``object``), and nothing the learner's code returns reaches the checker except through an
event. Loaded by path in the sandbox, like :mod:`.judge`, whose plain-data codec it takes as ``codec``.
"""

from __future__ import annotations

import collections
import collections.abc
import types

__all__ = ["Proxy", "Recording", "Replaying", "class_named", "torch_class"]

KIND = "__kind__"
DEPTH = 12  # how deep containers are walked (the codec's MAX_DEPTH)


def _torch():
    import torch

    return torch


class Proxy:
    """An object of the learner's as the checker sees it: every operation goes to ``side`` (recording or replaying)."""

    __slots__ = ("_tc_side", "_tc_h")

    def __init__(self, side, handle: int):
        object.__setattr__(self, "_tc_side", side)
        object.__setattr__(self, "_tc_h", handle)

    @property
    def __class__(self):  # isinstance(proxy, nn.Module) is the object's answer
        return self._tc_side.kind_of(self._tc_h)

    def _tc(self, op: str, name=None, args=(), kwargs=None):
        return self._tc_side.op(self._tc_h, op, name, tuple(args), dict(kwargs or {}))

    def __getattr__(self, name: str):
        if name.startswith("_tc_"):
            raise AttributeError(name)
        return self._tc("get", name)

    def __setattr__(self, name: str, value) -> None:
        self._tc("set", name, (value,))

    def __delattr__(self, name: str) -> None:
        self._tc("del", name)

    def __call__(self, *args, **kwargs):
        return self._tc("call", None, args, kwargs)

    def __iter__(self):
        return iter(self._tc("iter"))

    def __len__(self) -> int:
        return self._tc("len")

    def __getitem__(self, key):
        return self._tc("item", None, (key,))

    def __contains__(self, item) -> bool:
        return self._tc("contains", None, (item,))

    def __bool__(self) -> bool:
        return self._tc("bool")

    def __repr__(self) -> str:
        return self._tc("repr")

    def __str__(self) -> str:
        return self._tc("str")


def _perform(real, op: str, name, args: tuple, kwargs: dict):
    if op == "get":
        return getattr(real, name)
    if op == "set":
        return setattr(real, name, args[0])
    if op == "del":
        return delattr(real, name)
    if op == "call":
        return real(*args, **kwargs)
    if op == "iter":
        return list(iter(real))
    if op == "len":
        return len(real)
    if op == "item":
        return real[args[0]]
    if op == "contains":
        return args[0] in real
    if op == "bool":
        return bool(real)
    return repr(real) if op == "repr" else str(real)


def torch_class(kind: type) -> type:
    """The nearest ``torch.nn`` module class in ``kind``'s ancestry (what a proxy of such an object says it is)."""
    torch = _torch()
    for base in kind.__mro__:
        if base.__module__.startswith("torch.nn.") and issubclass(base, torch.nn.Module):
            return base
    return object


def class_named(name) -> type:
    """``torch_class`` back from its name, looked up attribute by attribute from ``torch`` (nothing is imported);
    ``object`` for anything else."""
    torch = _torch()
    parts = name.split(".") if type(name) is str else []
    if len(parts) < 3 or parts[:2] != ["torch", "nn"]:
        return object
    found = torch
    for part in parts[1:]:
        found = getattr(found, part, None)
    return found if isinstance(found, type) and issubclass(found, torch.nn.Module) else object


def _name(kind: type) -> str:
    return "object" if kind is object else f"{kind.__module__}.{kind.__qualname__}"


def _is_plain(x) -> bool:
    torch = _torch()
    return (
        x is None
        or x is Ellipsis
        or type(x) in (bool, int, float, str, torch.Size)
        or isinstance(x, torch.dtype)
        or (type(x).__name__ == "ndarray" and type(x).__module__ == "numpy")
    )


def _tensors(x, found: list) -> list:
    torch = _torch()
    if isinstance(x, torch.Tensor):
        found.append(x)
    elif isinstance(x, (list, tuple)):
        for v in x:
            _tensors(v, found)
    elif isinstance(x, dict):
        for v in x.values():
            _tensors(v, found)
    return found


def _holds(tensor, encoded) -> bool:
    """``tensor`` holds what ``encoded`` (a tensor as the codec wrote it) says: dtype, shape, gradient flag and every
    value (NaN = NaN), without a copy."""
    torch = _torch()
    want = encoded.get("t") if type(encoded) is dict and encoded.get(KIND) == "tensor" else None
    if type(want) is not torch.Tensor or encoded.get("grad") is not bool(tensor.requires_grad):
        return False
    if want.dtype != tensor.dtype or want.shape != tensor.shape or want.device != tensor.device:
        return False
    got = tensor.detach()
    if got.is_floating_point() or got.is_complex():
        return bool(torch.equal(got.isnan(), want.isnan()) and torch.equal(got.nan_to_num(0.0), want.nan_to_num(0.0)))
    return bool(torch.equal(got, want))


def _stamp(tensor) -> tuple:
    """What changes when a tensor or its gradient is written: their version counters, the gradient's identity."""
    grad = tensor.grad if tensor.is_leaf else None
    return tensor._version, id(grad), None if grad is None else grad._version


def _cut(x) -> tuple:
    """(the leaf a call's gradients are taken at, the tensor the learner's code gets) for an input ``x``."""
    leaf = x.detach().requires_grad_()
    return (leaf, leaf) if x.is_leaf else (leaf, leaf.clone())


def _write_back(given: list, cuts: dict) -> None:
    """Copies the learner's code wrote into go back into the inputs they stand for, as writes into them would."""
    torch = _torch()
    for x in given:
        leaf, passed = cuts.get(id(x), (None, None))
        if passed is not None and passed is not leaf and passed._version:
            with torch.no_grad(), torch._C.DisableTorchFunction():
                x.copy_(passed)


def _needing_grad(tensors: list) -> list:
    """The tensors that need a gradient, each once (self-attention is given one tensor three times)."""
    return list({id(t): t for t in tensors if t.requires_grad}.values())


def _is_leaf(t) -> bool:
    """A tensor the checker was given that gathers gradients (a parameter)."""
    torch = _torch()
    return isinstance(t, torch.Tensor) and t.is_leaf and t.requires_grad


def _dropout_modes() -> list:
    """The active modes that record dropout calls (the checkers' DropoutCalls), innermost last."""
    from torch.overrides import _get_current_function_mode_stack

    return [m for m in _get_current_function_mode_stack() if type(m).__name__ == "DropoutCalls"]


class _Side:
    """What both sides share: the handles, the proxies, and plain data for what the checker sends in."""

    def __init__(self, codec):
        self.codec = codec
        self.objects: dict[int, object] = {}  # handle → the real object (recording) or the stand-in tensor
        self.kinds: dict[int, type] = {}
        self.proxies: dict[int, Proxy] = {}

    def kind_of(self, handle: int) -> type:
        return self.kinds.get(handle, object)

    def proxy(self, handle: int) -> Proxy:
        if handle not in self.proxies:
            self.proxies[handle] = Proxy(self, handle)
        return self.proxies[handle]

    def send(self, x, depth: int = 0):
        """What the checker passes in, as plain data: a proxy by its handle, containers item by item."""
        if depth > self.codec.MAX_DEPTH:
            return {KIND: "opaque", "type": "too deep"}
        if type(x) is Proxy:
            return {KIND: "ref", "h": object.__getattribute__(x, "_tc_h")}
        if type(x) in (list, tuple):
            return {KIND: type(x).__name__, "items": [self.send(v, depth + 1) for v in x]}
        if type(x) in (dict, collections.OrderedDict):
            return {KIND: "dict", "items": [[self.send(k, depth + 1), self.send(v, depth + 1)] for k, v in x.items()]}
        return self.codec.encode(x)


# ---- the sandbox: recording -------------------------------------------------------------------------------------


class Recording(_Side):
    """The sandbox's side: each operation is carried out on the real object and written down in ``events``."""

    def __init__(self, codec):
        super().__init__(codec)
        self.handles: dict[int, int] = {}  # id(object) → handle
        self.known: dict[int, tuple] = {}  # handle of a given tensor → (values, gradient) at the last event
        self.stamps: dict[int, tuple] = {}  # handle → its _stamp when last compared: unchanged, not compared again
        self.events: list[dict] = []
        self.depth = 0

    def given(self, obj) -> Proxy:
        """The proxy the checker gets for ``obj`` (the learner's class)."""
        return self.proxy(self._handle(obj)[0])

    def _handle(self, obj) -> tuple[int, bool]:
        if id(obj) in self.handles:
            return self.handles[id(obj)], False
        handle = len(self.objects)
        self.handles[id(obj)], self.objects[handle] = handle, obj
        torch = _torch()
        if not isinstance(obj, torch.Tensor):
            self.kinds[handle] = torch_class(type(obj))
        return handle, True

    def op(self, handle: int, op: str, name, args: tuple, kwargs: dict):
        torch = _torch()
        real = self.objects[handle]
        if self.depth:  # an operation inside another (a callable of the checker's the learner's code called)
            return self._wrap(_perform(real, op, name, _unwrap(args), _unwrap(kwargs)))
        with torch._C.DisableTorchFunction():
            event = {"op": op, "on": handle, "name": name, "args": self.send(args), "kwargs": self.send(kwargs)}
            event["before"] = self._changes()
            marks = [len(m.calls) for m in _dropout_modes()]
        self.events.append(event)
        given = _tensors((args, kwargs), [])
        # a call's inputs with a gradient start from fresh leaves, so that its backward pass stops there: a leaf
        # input is passed as a leaf of the same memory, any other as a copy, written back if the call writes into it
        cuts = {id(x): _cut(x) for x in given if x.requires_grad} if op == "call" else {}
        inner_args, inner_kwargs = (
            _unwrap(_rebuild(x, lambda t: cuts[id(t)][1] if id(t) in cuts else t)) for x in (args, kwargs)
        )
        versions = [x._version for x in given]  # an input the learner's code writes into: its new values recorded
        self.depth += 1
        try:
            out = _perform(real, op, name, inner_args, inner_kwargs)
            if isinstance(out, (types.GeneratorType, collections.abc.Iterator)):
                out = _Items(out)  # what it yields, kept: recorded and handed on
        except BaseException as error:
            with torch._C.DisableTorchFunction():
                event["raised"], event["message"] = type(error).__name__, str(error)[:500]
                self._finish(event, marks, given, versions)
            raise
        finally:
            self.depth -= 1
            _write_back(given, cuts)
        with torch._C.DisableTorchFunction():
            out = _rebuild(out, lambda t: next((x for x in given if id(x) in cuts and cuts[id(x)][1] is t), t))
            inputs = _needing_grad(given) if op == "call" else []  # only a call's gradients reach its inputs
            out = self._tap(out, inputs, [cuts[id(x)][0] for x in inputs], event)
            event["out"] = self._export(out, given)
            self._finish(event, marks, given, versions)
            return self._wrap(out)

    def _finish(self, event: dict, marks: list[int], given: list, versions: list[int]) -> None:
        torch = _torch()
        event["written"] = [
            [i, self.codec.encode(x)] for i, (x, v) in enumerate(zip(given, versions)) if x._version != v
        ]
        event["after"] = self._changes()
        event["rng"] = torch.get_rng_state()
        event["dropouts"] = [
            [i, [self.codec.encode((c.input, c.output, c.p, c.training)) for c in mode.calls[mark:]]]
            for i, (mode, mark) in enumerate(zip(_dropout_modes(), marks))
            if len(mode.calls) > mark
        ]

    def _changes(self) -> list:
        """The given tensors whose values or gradients changed since the last look, as [handle, values, gradient]."""
        changed = []
        for handle, (values, grad) in self.known.items():
            tensor = self.objects[handle]
            if self.stamps.get(handle) == _stamp(tensor):
                continue
            self.stamps[handle] = _stamp(tensor)
            now_grad = tensor.grad if tensor.is_leaf else None
            if (
                not _holds(tensor, values)
                or (now_grad is None) != (grad is None)
                or not (now_grad is None or _holds(now_grad, grad))
            ):
                self.known[handle] = now = self._state(tensor)
                changed.append([handle, *now])
        return changed

    def _state(self, tensor) -> tuple:
        grad = tensor.grad if tensor.is_leaf else None
        return self.codec.encode(tensor), None if grad is None else self.codec.encode(grad)

    def _tap(self, out, inputs: list, cuts: list, event: dict):
        """Outputs with a gradient go through a node that records, for each backward pass, the gradient each got,
        the gradients into the call's inputs (``inputs``, whose fresh leaves ``cuts`` the call computed from) and
        those into the tensors handed out (the parameters), which it adds to their ``grad`` as the grader will."""
        torch = _torch()
        outs = list({id(t): t for t in _tensors(out, []) if t.requires_grad and t.grad_fn is not None}.values())
        outs = [t for t in outs if id(t) not in self.handles and all(t is not x for x in inputs)]
        if not outs:
            return out
        event["grads"] = []
        codec, kept, objects = self.codec, list(outs), self.objects

        class Tap(torch.autograd.Function):
            @staticmethod
            def forward(ctx, *xs):
                return tuple(x.detach().clone() for x in xs[len(inputs) :])

            @staticmethod
            def backward(ctx, *grads):
                # the tensors handed out by now (a parameter read after the forward pass too), and the parameters
                # of the objects handed out, which the grader will see only later, with what they gathered
                leaves = [h for h, t in objects.items() if _is_leaf(t)]
                hidden = {id(p): p for o in objects.values() if isinstance(o, torch.nn.Module) for p in o.parameters()}
                hidden = [p for p in hidden.values() if p.requires_grad and all(p is not objects[h] for h in leaves)]
                targets = cuts + [objects[h] for h in leaves] + hidden
                full = [torch.zeros_like(o) if g is None else g for o, g in zip(kept, grads)]
                with torch.enable_grad():
                    into = (
                        torch.autograd.grad(kept, targets, full, retain_graph=True, allow_unused=True)
                        if targets
                        else ()
                    )
                with torch._C.DisableTorchFunction():
                    reached = into[len(cuts) : len(cuts) + len(leaves)]
                    event["grads"].append(
                        {
                            "out": [None if g is None else codec.encode(g) for g in grads],
                            "in": [None if g is None else codec.encode(g) for g in into[: len(cuts)]],
                            "leaves": leaves,
                            "into": [None if g is None else codec.encode(g) for g in reached],
                        }
                    )
                    with torch.no_grad():
                        for leaf, g in zip(targets[len(cuts) :], into[len(cuts) :]):
                            if g is not None:
                                leaf.grad = g.clone() if leaf.grad is None else leaf.grad + g
                return (*into[: len(cuts)], *(None for _ in kept))

        tapped = list(Tap.apply(*inputs, *outs))
        swap = {id(o): t for o, t in zip(outs, tapped)}
        return _rebuild(out, lambda t: swap.get(id(t), t))

    def _export(self, x, inputs: list, depth: int = 0):
        """What the learner's code returned, as plain data: tensors and objects by handle (values the first time)."""
        torch = _torch()
        if depth > self.codec.MAX_DEPTH:
            return {KIND: "opaque", "type": "too deep"}
        if isinstance(x, torch.Tensor):
            for i, given in enumerate(inputs):
                if x is given:
                    return {KIND: "input", "i": i}
            handle, new = self._handle(x)
            if not new:
                return {KIND: "ref", "h": handle}
            values, grad = self._state(x)
            self.known[handle] = (values, grad)
            return {
                KIND: "given",
                "h": handle,
                "t": values,
                "g": grad,
                "requires_grad": bool(x.requires_grad),
                "leaf": bool(x.is_leaf),
                "parameter": isinstance(x, torch.nn.Parameter),
                "alias": self._alias(x, handle),
            }
        if _is_plain(x):
            return self.codec.encode(x)
        if type(x) in (list, tuple):
            return {KIND: type(x).__name__, "items": [self._export(v, inputs, depth + 1) for v in x]}
        if type(x) in (dict, collections.OrderedDict):
            items = [[self._export(k, inputs, depth + 1), self._export(v, inputs, depth + 1)] for k, v in x.items()]
            return {KIND: "dict", "ordered": type(x) is collections.OrderedDict, "items": items}
        if type(x) is _Items:
            return {KIND: "iterator", "items": [self._export(v, inputs, depth + 1) for v in x]}
        handle, new = self._handle(x)
        return {KIND: "object", "h": handle, "class": _name(self.kinds[handle])} if new else {KIND: "ref", "h": handle}

    def _alias(self, x, handle: int):
        """[base handle, offset, size, stride] when ``x`` shares memory with a tensor handed out before (a
        ``state_dict`` entry and its parameter, a view): the grader's stand-ins then share it too."""
        torch = _torch()
        if x.device.type == "meta" or x.numel() == 0:
            return None
        for base_handle, base in self.objects.items():
            if base_handle == handle or not isinstance(base, torch.Tensor) or base.device.type == "meta":
                continue
            if base.numel() and base.untyped_storage().data_ptr() == x.untyped_storage().data_ptr():
                if base.dtype == x.dtype:
                    return [base_handle, x.storage_offset() - base.storage_offset(), list(x.shape), list(x.stride())]
        return None

    def _wrap(self, x):
        """What the checker gets back: proxies for objects, the tensors themselves, containers rebuilt."""
        torch = _torch()
        if isinstance(x, torch.Tensor) or _is_plain(x):
            return x
        if type(x) in (list, tuple):
            return type(x)(self._wrap(v) for v in x)
        if type(x) in (dict, collections.OrderedDict):
            return type(x)((self._wrap(k), self._wrap(v)) for k, v in x.items())
        if type(x) is _Items:
            return iter([self._wrap(v) for v in x])
        return self.proxy(self._handle(x)[0])


class _Items(list):
    """What an iterator the learner's code returned yielded (``parameters()``): the checker gets an iterator."""


def _unwrap(x):
    """The checker's inputs as the learner's code gets them: each proxy replaced by its real object."""

    def real(v):
        if type(v) is not Proxy:
            return v
        return object.__getattribute__(v, "_tc_side").objects[object.__getattribute__(v, "_tc_h")]

    return _rebuild(x, real)


def _rebuild(x, change, depth: int = 0):
    """``x`` with each item that is not a list, tuple or dict (a tensor, a proxy) replaced by ``change(item)``."""
    if depth > DEPTH:
        return x
    if type(x) in (list, tuple):
        return type(x)(_rebuild(v, change, depth + 1) for v in x)
    if type(x) in (dict, collections.OrderedDict):
        return type(x)((k, _rebuild(v, change, depth + 1)) for k, v in x.items())
    return change(x)


# ---- the grader: replay -----------------------------------------------------------------------------------------


class Replaying(_Side):
    """The grader's side: each operation is answered from the recorded events, which must match it."""

    def __init__(self, codec, events, problems: list, mismatch: type[Exception]):
        super().__init__(codec)
        self.queue = list(events) if type(events) is list else []
        self.problems, self.Mismatch = problems, mismatch
        self.known: dict[int, tuple] = {}  # handle → (values, gradient) as the record has them at the last event
        self.stamps: dict[int, tuple] = {}  # handle → its _stamp when last found right

    def given(self, handle: int) -> Proxy:
        self.kinds.setdefault(handle, object)
        return self.proxy(handle)

    def _fail(self, why: str):
        self.problems.append(why)
        raise self.Mismatch(why)

    def op(self, handle: int, op: str, name, args: tuple, kwargs: dict):
        torch = _torch()
        with torch._C.DisableTorchFunction():
            return self._answer(handle, op, name, args, kwargs)

    def _answer(self, handle, op, name, args, kwargs):
        same = self.codec.same
        if not self.queue:
            self._fail("an operation the graded run did not make")
        event = self.queue.pop(0)
        if type(event) is not dict or (event.get("op"), event.get("on"), event.get("name")) != (op, handle, name):
            self._fail("operations other than the graded run's")
        if not (same(self.send(args), event.get("args")) and same(self.send(kwargs), event.get("kwargs"))):
            self._fail("inputs other than the graded run's")
        self._match(event.get("before"))
        inputs = _tensors((args, kwargs), [])
        if "raised" in event:
            self._settle(event, inputs)
            raise self.codec.raised(event)
        made: list = []
        out = self._import(event.get("out"), inputs, made)
        out = self._route(out, event, inputs, made)
        self._settle(event, inputs)
        return out

    def _settle(self, event: dict, inputs: list) -> None:
        """After the operation: the inputs and given tensors it wrote into, the random state, its dropout calls."""
        torch = _torch()
        for entry in event.get("written") if type(event.get("written")) is list else []:
            ok = type(entry) is list and len(entry) == 2 and type(entry[0]) is int and 0 <= entry[0] < len(inputs)
            values = self.codec.decode(entry[1]) if ok else None
            target = inputs[entry[0]] if ok else None
            if type(values) is not torch.Tensor or target.shape != values.shape or target.dtype != values.dtype:
                self._fail("inputs the graded run did not write into")
            with torch.no_grad():
                target.copy_(values)
        self._apply(event.get("after"))
        rng = event.get("rng")
        if type(rng) is torch.Tensor and rng.dtype == torch.uint8 and rng.shape == torch.get_rng_state().shape:
            torch.set_rng_state(rng)
        modes = _dropout_modes()
        for entry in event.get("dropouts") or []:
            if not (type(entry) is list and len(entry) == 2 and type(entry[0]) is int and 0 <= entry[0] < len(modes)):
                self._fail("dropout calls the graded run did not make")
            mode = modes[entry[0]]
            made = __import__("sys").modules[type(mode).__module__].Dropout
            for call in entry[1] if type(entry[1]) is list else []:
                values = self.codec.decode(call)
                if not (type(values) is tuple and len(values) == 4):
                    self._fail("dropout calls the graded run did not make")
                mode.calls.append(made(*values))

    def _match(self, changes) -> None:
        """The given tensors hold what the checker left in them in the graded run (gradients to rounding)."""
        torch = _torch()
        expected = dict(self.known)
        for entry in changes if type(changes) is list else []:
            if type(entry) is not list or len(entry) != 3 or entry[0] not in self.objects:
                self._fail("tensors the checker was not given")
            expected[entry[0]] = (entry[1], entry[2])
        for handle, (values, grad) in expected.items():
            tensor = self.objects[handle]
            if self.stamps.get(handle) == _stamp(tensor) and expected[handle] is self.known.get(handle):
                continue  # neither written since it was last found right, nor said to have changed
            if not _holds(tensor, values):
                self._fail("the checker's tensors differ from the graded run's")
            got_grad = tensor.grad if tensor.is_leaf else None
            want_grad = None if grad is None else self.codec.decode(grad)
            if (got_grad is None) != (want_grad is None) or (
                got_grad is not None
                and (
                    type(want_grad) is not torch.Tensor
                    or got_grad.shape != want_grad.shape
                    or not torch.allclose(got_grad, want_grad.to(got_grad.dtype), atol=1e-6, rtol=1e-5)
                )
            ):
                self._fail("gradients other than the graded run's")
        self._apply(changes)
        for handle in expected:
            self.stamps[handle] = _stamp(self.objects[handle])

    def _apply(self, changes) -> None:
        """Set the given tensors to the recorded values (what the learner's code wrote, or the rounding kept)."""
        torch = _torch()
        for entry in changes if type(changes) is list else []:
            if type(entry) is not list or len(entry) != 3 or entry[0] not in self.objects:
                self._fail("tensors the checker was not given")
            handle, values, grad = entry
            tensor, want = self.objects[handle], self.codec.decode(values)
            if type(want) is not torch.Tensor:
                self._fail("tensors the checker was not given")
            with torch.no_grad():
                if tensor.shape == want.shape and tensor.dtype == want.dtype:
                    tensor.copy_(want)
                else:
                    tensor.data = want.clone()
            if tensor.is_leaf:
                got = None if grad is None else self.codec.decode(grad)
                tensor.grad = (
                    got.to(tensor.dtype) if isinstance(got, torch.Tensor) and got.shape == tensor.shape else None
                )
            self.known[handle] = (values, grad)

    def _import(self, x, inputs: list, made: list, depth: int = 0):
        """An exported value back as the checker gets it: stand-in tensors, proxies, containers."""
        torch = _torch()
        if depth > self.codec.MAX_DEPTH:
            return self.codec.decode(x)
        kind = x.get(KIND) if type(x) is dict else None
        if kind == "input" and type(x.get("i")) is int and 0 <= x["i"] < len(inputs):
            return inputs[x["i"]]
        if kind == "ref" and x.get("h") in self.objects:
            return self.objects[x["h"]]
        if kind == "ref" and x.get("h") in self.kinds:
            return self.proxy(x["h"])
        if kind == "given" and type(x.get("h")) is int and x["h"] not in self.objects and x["h"] not in self.kinds:
            values = self.codec.decode(x.get("t"))
            if type(values) is not torch.Tensor:
                self._fail("a tensor that is not plain data")
            tensor = self._stand_in(values, x)
            if tensor.requires_grad and not tensor.is_leaf:
                made.append(tensor)
            self.objects[x["h"]] = tensor
            self.known[x["h"]] = (x.get("t"), x.get("g"))
            grad = None if x.get("g") is None else self.codec.decode(x["g"])
            if tensor.is_leaf and isinstance(grad, torch.Tensor) and grad.shape == tensor.shape:
                tensor.grad = grad.to(tensor.dtype)
            return tensor
        if kind == "object" and type(x.get("h")) is int and x["h"] not in self.objects and x["h"] not in self.kinds:
            self.kinds[x["h"]] = class_named(x.get("class"))
            return self.proxy(x["h"])
        if kind in ("list", "tuple", "iterator") and type(x.get("items")) is list:
            items = [self._import(v, inputs, made, depth + 1) for v in x["items"]]
            return tuple(items) if kind == "tuple" else iter(items) if kind == "iterator" else items
        if kind == "dict" and type(x.get("items")) is list:
            pairs = [
                (self._import(k, inputs, made, depth + 1), self._import(v, inputs, made, depth + 1))
                for k, v in (p for p in x["items"] if type(p) is list and len(p) == 2)
            ]
            return collections.OrderedDict(pairs) if x.get("ordered") else dict(pairs)
        if kind in ("given", "object", "ref", "input"):
            self._fail("handles the graded run did not hand out")
        return self.codec.decode(x)

    def _stand_in(self, values, x: dict):
        torch = _torch()
        alias = x.get("alias")
        if type(alias) is list and len(alias) == 4 and isinstance(self.objects.get(alias[0]), torch.Tensor):
            base, (offset, size, stride) = self.objects[alias[0]], alias[1:]
            try:
                view = base.detach().as_strided(size, stride, base.storage_offset() + offset)
            except (RuntimeError, TypeError):
                view = None
            if view is not None and view.dtype == values.dtype and torch.equal(view, values):
                if x.get("parameter"):
                    return torch.nn.Parameter(view, requires_grad=bool(x.get("requires_grad")))
                if not x.get("requires_grad"):
                    return view
                if not x.get("leaf") and base.requires_grad:
                    return base.as_strided(size, stride, base.storage_offset() + offset)
                view.requires_grad_()
                return view if x.get("leaf") else view.view_as(view)
        if x.get("parameter"):
            return torch.nn.Parameter(values.clone(), requires_grad=bool(x.get("requires_grad")))
        if not x.get("requires_grad") or not values.is_floating_point():
            return values.clone()
        leaf = values.clone().requires_grad_()
        return leaf if x.get("leaf") else leaf.clone()  # a tensor computed with a gradient: not a leaf

    def _route(self, out, event: dict, inputs: list, outs: list):
        """Outputs the graded run tapped come from a node that answers each backward pass with the recorded
        gradients, after checking the gradients the checker sent are the recorded ones."""
        torch = _torch()
        if type(event.get("grads")) is not list or not outs:
            return out
        anchor = torch.zeros((), requires_grad=True)  # so that the outputs need a gradient with no other input
        targets = _needing_grad(inputs) if event.get("op") == "call" else []
        passes, codec, problems, objects = list(event["grads"]), self.codec, self.problems, self.objects

        def grad_of(x, g):
            g = None if g is None else codec.decode(g)
            return g.to(x.dtype) if isinstance(g, torch.Tensor) and g.shape == x.shape else None

        class Replay(torch.autograd.Function):
            @staticmethod
            def forward(ctx, *xs):
                return tuple(o.detach().clone() for o in outs)

            @staticmethod
            def backward(ctx, *grads):
                nothing = (None, *(None for _ in targets))
                if not passes:
                    problems.append("a backward pass the graded run did not take")
                    return nothing
                taken = passes.pop(0)
                taken = taken if type(taken) is dict else {}
                recorded, into = taken.get("out"), taken.get("in")
                leaves, reached = taken.get("leaves"), taken.get("into")
                if (
                    type(recorded) is not list
                    or type(into) is not list
                    or len(into) != len(targets)
                    or type(leaves) is not list
                    or type(reached) is not list
                    or len(leaves) != len(reached)
                    or not all(type(h) is int and _is_leaf(objects.get(h)) for h in leaves)
                ):
                    problems.append("gradients other than the graded run's")
                    return nothing
                for got, want in zip(grads, recorded):
                    want = None if want is None else codec.decode(want)
                    if want is None:
                        if got is not None and bool(got.abs().sum() != 0):
                            problems.append("a gradient the graded run did not take")
                    elif (
                        got is None
                        or type(want) is not torch.Tensor
                        or got.shape != want.shape
                        or not torch.allclose(got, want.to(got.dtype), atol=1e-6)
                    ):
                        problems.append("gradients other than the graded run's")
                for handle, g in zip(leaves, reached):  # what reached the parameters through this output
                    leaf, g = objects[handle], grad_of(objects[handle], g)
                    if g is not None:
                        leaf.grad = g.clone() if leaf.grad is None else leaf.grad + g
                return (None, *(grad_of(x, g) for x, g in zip(targets, into)))

        made = list(Replay.apply(anchor, *targets))
        swap = {id(o): m for o, m in zip(outs, made)}
        for handle, tensor in list(self.objects.items()):
            if id(tensor) in swap:
                self.objects[handle] = swap[id(tensor)]
        return _rebuild(out, lambda t: swap.get(id(t), t))

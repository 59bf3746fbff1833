"""``export_web``: a checkpoint → ONNX graphs, tokenizer, manifest and a static page.

    python -m transformer_course export-web runs/multi30k-cpu/best.pt explore/     # then open explore/index.html

writes into ``OUT``:

- ``encoder.onnx`` and ``decoder_step.onnx`` (weights rounded to 10 bits unless ``precision`` says otherwise): :class:`~course_tools.web.graphs.EncoderForWeb` and
  :class:`~course_tools.web.graphs.DecoderStepForWeb`, exported with ``torch.onnx.export(dynamo=True)``
  (the exporter torch recommends since 2.9; the graphs are plain tensors in and out, so nothing needs the older
  TorchScript exporter), weights inside the file (no ``.onnx.data`` beside it), the source length and the cache
  length dynamic, each graph holding only the weights it reads (:func:`keep_what_is_read`);
- ``tokenizer.json``: the source tokenizer's rules or merges and both vocabularies
  (:func:`~course_tools.web.tokenizers.tokenizer_spec`);
- ``manifest.json``: the model's sizes, languages, special ids, each graph's inputs and outputs with their shapes,
  the versions that made it, and the SHA-256 of every file;
- ``index.html``: the page (:func:`~course_tools.web.page.build_page`), all of the above inside it.

Before writing the page the export checks itself: onnxruntime (Python) runs both graphs on one sentence and must
give PyTorch's numbers (tests/test_web_export.py checks 100 test sentences). Then, by default
(``precision="int10"``, ``--precision int10``), :func:`quantize_graphs` rounds every weight matrix to 10 bits with a
scale per output channel, stored as two byte planes (weights only: the activations stay fp32): a page under half
the size of the fp32 one that changes a few translations (docs/results.md counts them); ``int8`` and ``int12``
round to 8 and 12 bits, and ``--precision fp32`` keeps the checked graphs as they are.

``OUT`` is claimed as every folder-writing command claims its folder (:func:`course_tools.folders.claim_folder`,
before the checkpoint is read): a new or empty folder, or one ``export-web`` wrote before (its ``.tc-written.json``
lists the files it wrote); the current folder, a git repository, someone else's folder, a file and a read-only
folder are refused in one line, and a file it did not write, or a symbolic link, where it would write is refused
too (:func:`~course_tools.folders.plan_writes`). The graphs are made in a temporary folder outside ``OUT``, so
a SIGKILL can leave nothing there but the temporary file of a half-done write, which the next export removes.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import logging
import tempfile
import warnings
from pathlib import Path

import torch

from transformer_course.checkpoint import Checkpoint, load_checkpoint
from transformer_course.data import BOS, EOS, PAD, UNK
from transformer_course.files import crash_point
from transformer_course.model import count_parameters

from ..folders import claim_folder, plan_writes, replace_owned_files
from .graphs import ENCODER_OUTPUTS, STEP_INPUTS, STEP_OUTPUTS, DecoderStepForWeb, EncoderForWeb
from .page import ORT_VERSION, build_page
from .tokenizers import tokenizer_spec

__all__ = [
    "COMMAND",
    "COURSE_CHECKPOINT",
    "DEFAULT_PRECISION",
    "FILES",
    "FORMAT",
    "PRECISIONS",
    "precision_bits",
    "check_graphs",
    "course_page",
    "export_graphs",
    "export_web",
    "graph_difference",
    "inference_session",
    "keep_what_is_read",
    "with_head_mask",
    "quantize_graphs",
    "quantize_weights",
]

FORMAT = "course_tools/web-v1"
COMMAND = "export-web"  # the name its manifest records
FILES = ("encoder.onnx", "decoder_step.onnx", "tokenizer.json", "manifest.json", "index.html")  # what it writes in OUT
CHECK_TOLERANCE = 1e-4  # onnxruntime against PyTorch, fp32 (measured differences are ~1e-6)
# The graphs' weights in the page: N-bit integers with one scale per output channel (intN), or fp32 as trained.
PRECISIONS = ("int8", "int10", "int12", "fp32")
# export-web's and the edition's page: 10 bits change about a third as many greedy translations as int8 for a page
# a fifth larger (docs/results.md, "The explorer page")
DEFAULT_PRECISION = "int10"


def precision_bits(precision: str) -> int | None:
    """The bits of a weight in ``precision`` (``"int10"`` → 10), None for fp32; anything else is refused."""
    if precision not in PRECISIONS:
        raise ValueError(f"--precision must be one of {list(PRECISIONS)}, got {precision!r}")
    return None if precision == "fp32" else int(precision.removeprefix("int"))


def _example_inputs(model, src_len: int = 5, cache_len: int = 8):
    c = model.config
    d_k = c.d_model // c.h
    src = torch.arange(src_len).remainder(model.src_vocab_size - 4).add(4)[None]  # (1, S): ordinary word ids
    with torch.no_grad():
        _, _, cross_keys, cross_values = EncoderForWeb(model)(src)
    cache = torch.zeros(c.N, 1, c.h, cache_len, d_k)  # (N, 1, h, L, d_k)
    step = (torch.tensor([[BOS]]), torch.tensor([0]), cache, cache.clone(), cross_keys, cross_values)
    return src, step


@contextlib.contextmanager
def _quiet_exporter():
    """The exporter's notes that say nothing about this model (no torchvision, an axis name merged, a deprecation
    inside torch) are left out; its errors and other warnings still show."""
    logger = logging.getLogger("torch.onnx._internal.exporter._registration")  # "torchvision is not installed"
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=r"# The axis name: .* will not be used")
            warnings.filterwarnings("ignore", message=r"`isinstance\(treespec, LeafSpec\)` is deprecated")
            yield
    finally:
        logger.setLevel(level)


HEAD_MASK = "head_mask"  # the graphs' last input: (3, N, h), 1 keeps a head, 0 switches it off (ablation.KINDS)


class WithHeadMask(torch.nn.Module):
    """A web graph (:class:`EncoderForWeb` or :class:`DecoderStepForWeb`) with one more input, last: ``head_mask``
    (3, N, h), one row per kind of attention in :data:`transformer_course.ablation.KINDS` order (encoder,
    decoder, cross). Each head's output is multiplied by its entry before W^O, as
    :func:`transformer_course.ablation.zero_head` does with 0: by a forward pre-hook on ``out_proj``, so the
    attention code is not touched. A mask of ones changes no number (x · 1 = x)."""

    def __init__(self, graph: torch.nn.Module) -> None:
        super().__init__()
        self.inner = graph
        self.eval()  # no dropout: the graphs are for inference

    def run(self, args: tuple, head_mask: torch.Tensor):
        from transformer_course.ablation import KINDS, attention_module

        model, handles = self.inner.model, []
        for k, kind in enumerate(KINDS):
            for layer in range(model.config.N):
                out_proj = attention_module(model, kind, layer).out_proj
                handles.append(out_proj.register_forward_pre_hook(_scale_heads(head_mask[k, layer])))
        try:
            return self.inner(*args)
        finally:
            for handle in handles:
                handle.remove()


class EncoderWithHeadMask(WithHeadMask):
    def forward(self, src, head_mask):
        return self.run((src,), head_mask)


class StepWithHeadMask(WithHeadMask):
    def forward(self, token, position, self_keys, self_values, cross_keys, cross_values, head_mask):
        return self.run((token, position, self_keys, self_values, cross_keys, cross_values), head_mask)


def _scale_heads(keep: torch.Tensor):
    def hook(_module, args):
        merged = args[0]  # (B, L, d_model): the heads side by side
        batch, length, d_model = merged.shape
        heads = merged.view(batch, length, keep.numel(), -1) * keep[:, None]  # (B, L, h, d_k) · (h, 1)
        return (heads.view(batch, length, d_model), *args[1:])

    return hook


def with_head_mask(session, feed: dict) -> dict:
    """``feed`` for an onnxruntime ``session``, with a ``head_mask`` of ones (every head on) when the graph takes
    one: the graphs export-web writes do, those of :func:`export_graphs` without ``head_mask`` do not."""
    inputs = {i.name: i.shape for i in session.get_inputs()}
    if HEAD_MASK not in inputs or HEAD_MASK in feed:
        return feed
    import numpy as np

    return {**feed, HEAD_MASK: np.ones(inputs[HEAD_MASK], np.float32)}


def export_graphs(model, out: str | Path, head_mask: bool = False) -> tuple[Path, Path]:
    """Export the encoder and the decoder step of ``model`` to ``out/encoder.onnx`` and ``out/decoder_step.onnx``;
    with ``head_mask``, each graph takes one more input, ``head_mask`` (3, N, h): ones run the model as it is
    (:class:`WithHeadMask`; onnxruntime-web takes no default for an input, so it is always fed)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    model = model.eval()
    table = model.config.max_len
    src_len = torch.export.Dim("src_len", min=1, max=table)
    cache_len = torch.export.Dim("cache_len", min=1, max=table)
    src, step_args = _example_inputs(model)
    encoder, step = EncoderForWeb(model), DecoderStepForWeb(model)
    src_args, inputs, encoder_shapes = (src,), (["src"], STEP_INPUTS), {"src": {1: src_len}}
    if head_mask:
        mask = torch.ones(3, model.config.N, model.config.h)
        encoder, step = EncoderWithHeadMask(encoder), StepWithHeadMask(step)
        src_args, step_args = (src, mask), (*step_args, mask)
        inputs = (["src", HEAD_MASK], [*STEP_INPUTS, HEAD_MASK])
        encoder_shapes[HEAD_MASK] = None
    quiet = {"verbose": False, "report": False, "optimize": True, "external_data": False}
    paths = out / "encoder.onnx", out / "decoder_step.onnx"
    with _quiet_exporter():
        torch.onnx.export(
            encoder,
            src_args,
            paths[0],
            dynamo=True,
            input_names=inputs[0],
            output_names=ENCODER_OUTPUTS,
            dynamic_shapes=encoder_shapes,
            **quiet,
        )
        cached = {3: src_len}
        shapes = {
            "token": None,
            "position": None,
            "self_keys": {3: cache_len},
            "self_values": {3: cache_len},
            "cross_keys": cached,
            "cross_values": cached,
        }
        if head_mask:
            shapes[HEAD_MASK] = None
        torch.onnx.export(
            step,
            step_args,
            paths[1],
            dynamo=True,
            input_names=inputs[1],
            output_names=STEP_OUTPUTS,
            dynamic_shapes=shapes,
            **quiet,
        )
    import onnx

    for path in paths:
        onnx.save(keep_what_is_read(onnx.load(path)), path)
    return paths


def keep_what_is_read(model):
    """Each constant Slice or Transpose of a weight becomes a weight of its own (changed in place and returned),
    and a weight no node reads any more is dropped: a graph carries only the rows it reads. The cross-attention's
    packed projection (3·d_model, d_model) is read as W^Q in the decoder step and as W^K, W^V in the encoder (the
    memory's keys and values): each graph kept all three before. The numbers are the same (onnxruntime folds these
    nodes at load anyway); only the bytes go. A weight that some other node also reads is left as it is, so no
    weight is ever stored twice (the tied embedding read by a Gather and, transposed, as the output layer)."""
    import numpy as np
    from onnx import numpy_helper

    graph = model.graph
    constants = {i.name: i for i in graph.initializer}
    outputs = {o.name for o in graph.output}
    in_subgraphs = {name for node in graph.node for sub in _subgraphs(node) for name in _names_read(sub)}
    readers: dict[str, list] = {}  # name → the nodes that read it
    for node in graph.node:
        for name in set(node.input):
            readers.setdefault(name, []).append(node)

    def foldable(node) -> bool:
        return (
            node.op_type in ("Slice", "Transpose")
            and bool(node.input)
            and node.output[0] not in outputs
            and all(name in constants for name in node.input if name)
        )

    for node in list(graph.node):
        if not foldable(node) or node.input[0] in outputs | in_subgraphs:
            continue
        if not all(foldable(reader) for reader in readers[node.input[0]]):
            continue  # the weight stays for another reader: a folded copy would store it twice
        data = numpy_helper.to_array(constants[node.input[0]])
        if node.op_type == "Transpose":
            perm = next((list(a.ints) for a in node.attribute if a.name == "perm"), None)
            folded = np.transpose(data, perm)
        else:
            starts, ends, axes, steps = (
                [int(v) for v in numpy_helper.to_array(constants[name]).reshape(-1)] if name else None
                for name in [*node.input[1:], "", ""][:4]
            )
            axes = axes if axes is not None else list(range(len(starts)))
            steps = steps if steps is not None else [1] * len(starts)
            if any(step < 1 for step in steps):
                continue  # a reversed slice: left as it is (ONNX clamps its ends otherwise than Python)
            cut = [slice(None)] * data.ndim
            for start, end, axis, step in zip(starts, ends, axes, steps):
                cut[axis] = slice(start, end, step)
            folded = data[tuple(cut)]
        graph.node.remove(node)
        for name in set(node.input):
            readers[name] = [reader for reader in readers[name] if reader.output != node.output]
        weight = numpy_helper.from_array(np.ascontiguousarray(folded), node.output[0])
        graph.initializer.append(weight)
        constants[weight.name] = weight
    read = _names_read(graph) | outputs
    for init in list(graph.initializer):
        if init.name not in read:
            graph.initializer.remove(init)
    return model


def _names_read(graph) -> set[str]:
    """Every name a node of ``graph`` reads, in its subgraphs (an If's branches) too."""
    read = set()
    for node in graph.node:
        read.update(node.input)
        for sub in _subgraphs(node):
            read |= _names_read(sub)
    return read


def _subgraphs(node) -> list:
    """The graphs a node holds as attributes (an If's branches, a Loop's body)."""
    from onnx import AttributeProto

    found = []
    for attribute in node.attribute:
        if attribute.type == AttributeProto.GRAPH:
            found.append(attribute.g)
        elif attribute.type == AttributeProto.GRAPHS:
            found.extend(attribute.graphs)
    return found


def check_graphs(model, encoder_path: str | Path, step_path: str | Path, src_ids: list[int]) -> float:
    """Run both graphs with onnxruntime on one sentence (three decoder steps) and return the largest difference
    from PyTorch over every output; a ValueError if it is above :data:`CHECK_TOLERANCE`."""

    encoder, step = inference_session(encoder_path), inference_session(step_path)
    src = torch.tensor([src_ids])
    with torch.no_grad():
        expected = EncoderForWeb(model)(src)
        got = encoder.run(ENCODER_OUTPUTS, with_head_mask(encoder, {"src": src.numpy()}))
        worst = max(float((torch.from_numpy(g) - e).abs().max()) for g, e in zip(got, expected))
        c = model.config
        keys = torch.zeros(c.N, 1, c.h, 4, c.d_model // c.h)
        values, cross = keys.clone(), expected[2:]
        for position, token in enumerate([BOS, 4, 5]):
            args = (torch.tensor([[token]]), torch.tensor([position]), keys, values, *cross)
            want = DecoderStepForWeb(model)(*args)
            have = step.run(STEP_OUTPUTS, with_head_mask(step, {n: a.numpy() for n, a in zip(STEP_INPUTS, args)}))
            worst = max(worst, *(float((torch.from_numpy(h) - w).abs().max()) for h, w in zip(have, want)))
            keys, values = want[2], want[3]
    if worst > CHECK_TOLERANCE:
        raise ValueError(
            f"the exported graphs differ from PyTorch by {worst:.2e} (more than {CHECK_TOLERANCE:g}); "
            "the export is wrong, please report it with the checkpoint's config"
        )
    return worst


# The ops whose weight :func:`quantize_graphs` stores as int8, and the axis of that weight that holds one output
# channel each (its own scale): MatMul's B is (in, out); Gemm's B, with transB, and a Gather's table are (out, in);
# a Slice cuts the packed query/key/value projection (3·d_model, d_model) by rows.
QUANTIZED_OPS = {"MatMul": 1, "Gemm": 0, "Gather": 0, "Slice": 0}
# onnxruntime folds each constant weight's DequantizeLinear at load; left to itself it may fuse one with its MatMul
# into an int8 product (MatMulNBits) that rounds the activations too. The page's sessions are made with it.
SESSION_CONFIG = {"session.disable_quant_qdq": "1"}


def quantize_graphs(
    paths: tuple[Path, Path], out: str | Path, keep=(), group: int | None = None, bits: int = 8
) -> tuple[Path, Path]:
    """The two fp32 graphs with their weights rounded to ``bits`` bits, in ``out`` under the same names.

    Weight-only quantization: every matrix a MatMul, Gemm, Gather or Slice reads is stored as int8 with one fp32
    scale per output channel (symmetric: ``w ≈ q · scale``, ``scale = max |w| / 127`` over the channel), and a
    ``DequantizeLinear`` node at the graph's start gives the matrix back under its own name (past 8 bits, two byte
    planes and Cast, Mul and Add nodes: :func:`quantize_weights`), so every op that read
    it reads it as before. A tied matrix (the target embedding and the output layer) is one initializer and stays
    one. Activations stay fp32, so the only change from the fp32 graphs is each weight's rounding, and a session
    made with :data:`SESSION_CONFIG` folds the dequantization once at load: fp32 speed from a quarter of the bytes.
    The arrays in ``keep`` (the model's positional tables) stay fp32, and the exporter's notes on each node (its
    source lines) are dropped. ``group``: one scale per run of that many inputs of a channel
    (:func:`quantize_weights`). The translations it changes are counted in docs/results.md."""
    import onnx

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    quantized = out / paths[0].name, out / paths[1].name
    for fp32, int8 in zip(paths, quantized):
        onnx.save(quantize_weights(onnx.load(fp32), keep, group, bits), int8)
    return quantized


def inference_session(path: str | Path):
    """An onnxruntime session on the CPU as the page makes it (:data:`SESSION_CONFIG`)."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    for key, value in SESSION_CONFIG.items():
        options.add_session_config_entry(key, value)
    return onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def quantize_weights(model, keep=(), group: int | None = None, bits: int = 8):
    """:func:`quantize_graphs`' pass on one ONNX model (changed in place and returned). ``keep``: arrays (the
    positional tables) that stay fp32 wherever the graph holds them (whole, by rows or transposed: :func:`holds`),
    whatever the exporter named them. ``group``: one scale per run of ``group`` numbers of an output channel
    (its inputs) instead of one per channel, given back by Cast, Mul and Reshape (any opset), where it divides
    the channel; a matrix it does not divide keeps one scale per channel. ``bits``: the grid, ±(2^(bits−1) − 1)
    steps of the scale; past 8 (up to 16) each number is stored as two byte planes, its top 8 bits and the rest,
    given back by Cast, Mul and Add."""
    if not 8 <= bits <= 16:
        raise ValueError(f"bits must be 8 to 16 (each number stored in one or two bytes), got {bits}")
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    graph = model.graph
    for node in graph.node:  # the exporter's notes on each node (source lines): bytes the page need not carry
        del node.metadata_props[:]
    constants = {i.name: numpy_helper.to_array(i) for i in graph.initializer if len(i.dims) <= 1}
    axes: dict[str, set[int]] = {}  # a matrix read along two axes, or by another op, is left in fp32
    for node in graph.node:
        attributes = {a.name: a.i for a in node.attribute}
        layout = {
            "MatMul": True,
            "Gemm": attributes.get("transB", 0) == 1,  # B as (out, in)
            "Gather": attributes.get("axis", 0) == 0,  # rows of a table
            "Slice": len(node.input) > 3 and constants.get(node.input[3], np.array([])).tolist() == [0],  # by rows
        }.get(node.op_type, False)
        for position, name in enumerate(node.input):
            read_as_weight = position == (1 if node.op_type in ("MatMul", "Gemm") else 0)
            axes.setdefault(name, set()).add(QUANTIZED_OPS[node.op_type] if layout and read_as_weight else -1)
    dequantize = []
    for init in list(graph.initializer):
        if init.data_type != TensorProto.FLOAT or len(init.dims) != 2 or len(axes.get(init.name, ())) != 1:
            continue  # only fp32 matrices, each read along one channel axis
        (axis,) = axes[init.name]
        weight = numpy_helper.to_array(init)
        if axis < 0 or holds(keep, weight):
            continue  # read otherwise than as a weight, or a positional table (read as it is)
        graph.initializer.remove(init)
        top = 2 ** (bits - 1) - 1  # symmetric: -top … top steps of the scale
        grouped = group is not None and weight.shape[1 - axis] % group == 0
        if grouped:
            # the channel's inputs in runs of `group`: (out, in/g, g) for (out, in), (in/g, g, out) for (in, out)
            runs = (
                weight.reshape(weight.shape[0], -1, group) if axis == 0 else weight.reshape(-1, group, weight.shape[1])
            )
            scale = np.abs(runs).max(axis=2 if axis == 0 else 1, keepdims=True) / float(top)
        else:  # one scale per output channel
            runs = weight
            scale = np.abs(weight).max(axis=1 - axis, keepdims=True) / float(top)
        scale = np.where(scale > 0, scale, 1.0).astype(np.float32)  # an all-zero channel: any scale gives 0
        q = np.clip(np.rint(runs / scale), -top, top).astype(np.int32)
        name = init.name
        if bits == 8 and not grouped:  # the plain case: onnxruntime's own DequantizeLinear, one scale per channel
            scale = scale.reshape(-1)
            stored = [
                numpy_helper.from_array(q.astype(np.int8), f"{name}_quantized"),
                numpy_helper.from_array(scale, f"{name}_scale"),
            ]
            graph.initializer.extend(stored)
            dequantize.append(
                helper.make_node("DequantizeLinear", [s.name for s in stored], [name], axis=axis, name=f"{name}_dq")
            )
            continue
        # Otherwise Cast, Mul (and Reshape for groups) give the matrix back; past 8 bits each number is stored as
        # two planes, its top 8 bits (int8) and the low ones (uint8, 0 … 2^low − 1): q = high · 2^low + low, every
        # plane a byte a number, which gzip packs to the bits it really holds.
        low = bits - 8
        value = f"{name}_float"
        planes = [numpy_helper.from_array((q >> low).astype(np.int8), f"{name}_quantized")]
        nodes = [helper.make_node("Cast", [planes[0].name], [value], to=TensorProto.FLOAT, name=f"{name}_cast")]
        if low:
            planes += [
                numpy_helper.from_array((q & (2**low - 1)).astype(np.uint8), f"{name}_low"),
                numpy_helper.from_array(np.array(2.0**low, np.float32), f"{name}_step"),
            ]
            nodes += [
                helper.make_node("Mul", [value, planes[2].name], [f"{name}_high"], name=f"{name}_shift"),
                helper.make_node(
                    "Cast", [planes[1].name], [f"{name}_low_float"], to=TensorProto.FLOAT, name=f"{name}_low_cast"
                ),
                helper.make_node("Add", [f"{name}_high", f"{name}_low_float"], [f"{name}_steps"], name=f"{name}_add"),
            ]
            value = f"{name}_steps"
        planes.append(numpy_helper.from_array(scale, f"{name}_scale"))
        if grouped:
            shape = numpy_helper.from_array(np.array(weight.shape, dtype=np.int64), f"{name}_shape")
            planes.append(shape)
            nodes += [
                helper.make_node("Mul", [value, f"{name}_scale"], [f"{name}_runs"], name=f"{name}_mul"),
                helper.make_node("Reshape", [f"{name}_runs", shape.name], [name], name=f"{name}_reshape"),
            ]
        else:
            nodes.append(helper.make_node("Mul", [value, f"{name}_scale"], [name], name=f"{name}_mul"))
        graph.initializer.extend(planes)
        dequantize += nodes
    for node in reversed(dequantize):  # at the start, in order: each node after the ones it reads
        graph.node.insert(0, node)
    return model


def holds(arrays, weight) -> bool:
    """Is ``weight`` one of ``arrays``, some of its rows (a row slice), or the transpose of either? (How an
    exported graph may hold a model's matrix: whole, as the (in, out) weight of a MatMul, or as the rows one
    graph reads, :func:`keep_what_is_read`.)"""
    import numpy as np

    for array in arrays:
        for candidate in (weight, weight.T):
            rows = candidate.shape[0]
            if candidate.shape[1:] != array.shape[1:] or not 0 < rows <= array.shape[0]:
                continue
            for start in np.flatnonzero((array == candidate[0]).all(axis=1)):
                if np.array_equal(array[start : start + rows], candidate):
                    return True
    return False


def graph_difference(model, encoder_path: str | Path, step_path: str | Path, src_ids: list[int]) -> float:
    """The largest difference of the graphs' log-probabilities from PyTorch's over the first three steps of
    ``src_ids`` (what a rounded graph's manifest records: quantization moves every output a little)."""

    encoder, step = inference_session(encoder_path), inference_session(step_path)
    src = torch.tensor([src_ids])
    c = model.config
    with torch.no_grad():
        cross = EncoderForWeb(model)(src)[2:]
        got = encoder.run(ENCODER_OUTPUTS, with_head_mask(encoder, {"src": src.numpy()}))[2:]
        keys = torch.zeros(c.N, 1, c.h, 4, c.d_model // c.h)
        values, got_keys, got_values = keys.clone(), keys.numpy(), keys.numpy()
        worst = 0.0
        for position, token in enumerate([BOS, 4, 5]):
            common = (torch.tensor([[token]]), torch.tensor([position]))
            want = DecoderStepForWeb(model)(*common, keys, values, *cross)
            feed = [a.numpy() for a in common] + [got_keys, got_values, *got]
            have = step.run(STEP_OUTPUTS, with_head_mask(step, dict(zip(STEP_INPUTS, feed))))
            worst = max(worst, float((torch.from_numpy(have[1]) - want[1]).abs().max()))
            keys, values, got_keys, got_values = want[2], want[3], have[2], have[3]
    return worst


def manifest_for(checkpoint: Checkpoint, files: dict[str, bytes], check: float, precision: str = "fp32") -> dict:
    import onnxscript

    model, c = checkpoint.model, checkpoint.config
    shapes = {
        "encoder": {
            "inputs": {"src": "(1, S) int64", "head_mask": "(3, N, h) float, as decoder_step's"},
            "outputs": {
                "memory": "(1, S, d_model)",
                "encoder_attention": "(N, h, S, S)",
                "cross_keys": "(N, 1, h, S, d_k)",
                "cross_values": "(N, 1, h, S, d_k)",
            },
        },
        "decoder_step": {
            "inputs": {
                "token": "(1, 1) int64",
                "position": "(1,) int64",
                "self_keys": "(N, 1, h, L, d_k), L >= position + 1",
                "self_values": "(N, 1, h, L, d_k)",
                "cross_keys": "(N, 1, h, S, d_k)",
                "cross_values": "(N, 1, h, S, d_k)",
                "head_mask": "(3, N, h) float: 1 runs a head, 0 switches it off (rows: encoder, decoder, cross)",
            },
            "outputs": {
                "logits": "(1, tgt_vocab)",
                "log_probs": "(1, tgt_vocab)",
                "new_self_keys": "(N, 1, h, L, d_k)",
                "new_self_values": "(N, 1, h, L, d_k)",
                "decoder_attention": "(N, h, 1, L), 0 beyond position",
                "cross_attention": "(N, h, 1, S)",
            },
        },
    }
    return {
        "format": FORMAT,
        "model": {
            "name": c.name,
            "checkpoint": checkpoint.path.name,
            "step": checkpoint.step,
            "epoch": checkpoint.epoch,
            "parameters": count_parameters(model),
            "config": c.to_dict(),
        },
        "src_lang": checkpoint.src_lang,
        "tgt_lang": checkpoint.tgt_lang,
        "tokenizer": "bpe" if checkpoint.tokenizer is not None else "words",
        "vocab": {"src": len(checkpoint.src_vocab), "tgt": len(checkpoint.tgt_vocab)},
        "layers": c.N,
        "heads": c.h,
        "d_model": c.d_model,
        "d_k": c.d_model // c.h,
        "max_len": c.max_len,
        "specials": {"pad": PAD, "unk": UNK, "bos": BOS, "eos": EOS},
        "precision": precision,
        **(
            {
                "quantization": {
                    "bits": precision_bits(precision),
                    "weights": "symmetric, one scale per output channel; past 8 bits two byte planes "
                    "(the top 8 bits and the rest); activations fp32",
                    "session_config": SESSION_CONFIG,
                }
            }
            if precision != "fp32"
            else {}
        ),
        "decoding": "greedy or beam search; at most source length + 50 tokens after <s>, and at most max_len "
        "positions in all",
        "beam": {"size": c.beam_size, "length_penalty": c.length_penalty},
        "graphs": {"encoder": "encoder.onnx", "decoder_step": "decoder_step.onnx", **shapes},
        "made_with": {
            "exporter": "torch.onnx.export(dynamo=True)",
            "torch": torch.__version__,
            "onnxscript": onnxscript.__version__,
            "onnxruntime_web": ORT_VERSION,
            "largest_difference_from_pytorch": check,  # fp32: every output; rounded: the log-probabilities
        },
        "files": {name: {"bytes": len(b), "sha256": hashlib.sha256(b).hexdigest()} for name, b in files.items()},
    }


def export_web(
    checkpoint: str | Path | Checkpoint, out: str | Path, language: str = "en", precision: str = DEFAULT_PRECISION
) -> Path:
    """Export ``checkpoint`` (a path or a loaded :class:`~transformer_course.checkpoint.Checkpoint`) for the
    browser into the folder ``out``; returns the path of ``out/index.html``. ``language``: the page's labels,
    ``"en"`` or ``"zh"``. ``precision``: one of :data:`PRECISIONS`, ``"int10"`` by default (weights rounded by
    :func:`quantize_graphs` to that many bits: a smaller page that changes a few translations) or ``"fp32"`` (the
    graphs give PyTorch's numbers). ``out`` must be a new or empty folder, or one this command exported into
    before (see the module's docstring); anything else is refused before any work."""
    from transformer_course.i18n import LANGUAGES

    missing = [name for name in ("onnx", "onnxscript", "onnxruntime") if importlib.util.find_spec(name) is None]
    if missing:
        raise ValueError(f"exporting for the browser needs {', '.join(missing)}: pip install 'transformer_course[web]'")
    if language not in LANGUAGES:
        raise ValueError(f"--language must be one of {list(LANGUAGES)} (English or 中文), got {language!r}")
    bits = precision_bits(precision)  # before any work: an unknown precision is refused in one line
    source = checkpoint.path if isinstance(checkpoint, Checkpoint) else Path(checkpoint)
    written = claim_folder(out, COMMAND, protected=[source])  # before any work: '', '.', a repository, a stranger's
    out = Path(out)
    plan_writes(out, FILES, written)  # nothing it did not write is replaced, nothing is written through a link
    if not isinstance(checkpoint, Checkpoint):
        checkpoint = load_checkpoint(checkpoint)
    model = checkpoint.model.cpu().eval()
    with tempfile.TemporaryDirectory(prefix="tc-export-") as tmp:  # outside OUT: a kill cannot leave it there
        encoder_path, step_path = export_graphs(model, tmp, head_mask=True)  # the page can switch heads off
        if checkpoint.tokenizer is not None:
            src_ids = checkpoint.tokenizer.encode_ids("Ein Hund läuft durch den Schnee.")
        else:
            src_ids = checkpoint.src_vocab.encode(["Ein", "Hund", "läuft", "durch", "den", "Schnee", "."])
        check = check_graphs(model, encoder_path, step_path, src_ids)  # fp32: PyTorch's numbers, or an error
        if bits is not None:
            tables = [getattr(m, "table", None) for m in (model.src_pos, model.tgt_pos)]
            keep = [t.detach().numpy() for t in tables if isinstance(t, torch.Tensor)]
            encoder_path, step_path = quantize_graphs((encoder_path, step_path), Path(tmp) / precision, keep, bits=bits)
            check = graph_difference(model, encoder_path, step_path, src_ids)
        encoder, decoder_step = encoder_path.read_bytes(), step_path.read_bytes()
        crash_point(COMMAND)  # a test hook (files.crash_point): the graphs made and checked, nothing yet in OUT
    tokenizer = tokenizer_spec(checkpoint)
    contents = {
        "encoder.onnx": encoder,
        "decoder_step.onnx": decoder_step,
        "tokenizer.json": json.dumps(tokenizer, ensure_ascii=False).encode("utf-8"),
    }
    manifest = manifest_for(checkpoint, contents, check, precision)
    contents["manifest.json"] = json.dumps(manifest, ensure_ascii=False, indent=1).encode("utf-8")
    contents["index.html"] = build_page(manifest, tokenizer, encoder, decoder_step, language).encode("utf-8")
    replace_owned_files(out, COMMAND, written, contents)
    return out / "index.html"


COURSE_CHECKPOINT = "runs/multi30k-cpu/best.pt"  # the course's own trained model, relative to the course folder


def course_page(
    out_dir: str | Path, language: str = "en", checkpoint: str | Path | None = None, notebooks: str | Path = "."
) -> Path | None:
    """The HTML edition's explorer: the course's trained checkpoint (``runs/multi30k-cpu/best.pt``, what notebook
    10 looks inside; in the course folder that holds ``notebooks``) exported to ``out_dir/explore/``, labels in
    ``language``. None when there is no such checkpoint, or (with one line on stderr) when the ``[web]`` extra is
    missing: the edition is built without it."""
    import sys

    from transformer_course.paths import course_root

    if checkpoint is None:
        try:
            checkpoint = course_root(notebooks) / COURSE_CHECKPOINT
        except FileNotFoundError:
            return None
    checkpoint = Path(checkpoint)
    if not checkpoint.is_file():  # no trained model yet: the edition has no explorer page
        return None
    missing = [name for name in ("onnx", "onnxscript", "onnxruntime") if importlib.util.find_spec(name) is None]
    if missing:
        print(
            f"explorer page: needs {', '.join(missing)} (pip install 'transformer_course[web]'); left out",
            file=sys.stderr,
        )
        return None
    return export_web(checkpoint, Path(out_dir) / "explore", language)

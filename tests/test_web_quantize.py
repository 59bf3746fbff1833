"""The page's int8 weights (course_tools.web.export.quantize_weights): each matrix an op reads as a weight is stored
as int8 with one scale per output channel, PyTorch's per-channel symmetric quantization to the bit, and the graph
computes what the fp32 graph computes with those rounded weights."""

from __future__ import annotations

import numpy as np
import pytest
import torch

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from course_tools.web.export import SESSION_CONFIG, holds, keep_what_is_read, quantize_weights  # noqa: E402

VOCAB, D, HIDDEN = 11, 8, 6


def weights() -> dict[str, np.ndarray]:
    g = np.random.default_rng(0)
    w = {
        "tied": g.normal(size=(VOCAB, D)),  # an embedding (Gather) that is also the output layer (Gemm, transB)
        "up": g.normal(size=(D, HIDDEN)),  # MatMul's B: (in, out)
        "down": g.normal(size=(HIDDEN, D)) * np.array([1e-3, 1, 1, 1, 1, 10, 1, 1]),  # channels of unequal range
        "packed": g.normal(size=(3 * D, D)),  # sliced by rows, as the packed query/key/value projection
        "pos": g.normal(size=(16, D)),  # read by GatherND: stays fp32
    }
    w["down"][:, 2] = 0.0  # an all-zero channel
    return {k: v.astype(np.float32) for k, v in w.items()}


def graph(w: dict[str, np.ndarray]):
    """ids → Gather(tied) + GatherND(pos) → MatMul(up) → Relu → MatMul(down) → MatMul(rows 8–15 of packed, as
    (out, in), transposed) → Gemm(tied, transB=1) → logits."""
    constants = {
        "starts": np.array([D], np.int64),
        "ends": np.array([2 * D], np.int64),
        "axes": np.array([0], np.int64),
        "positions": np.array([[0], [1], [2]], np.int64),
    }
    nodes = [
        helper.make_node("Gather", ["tied", "ids"], ["embedded"]),
        helper.make_node("GatherND", ["pos", "positions"], ["positional"]),
        helper.make_node("Add", ["embedded", "positional"], ["x"]),
        helper.make_node("MatMul", ["x", "up"], ["hidden"]),
        helper.make_node("Relu", ["hidden"], ["active"]),
        helper.make_node("MatMul", ["active", "down"], ["y"]),
        helper.make_node("Slice", ["packed", "starts", "ends", "axes"], ["key_weight"]),
        helper.make_node("Transpose", ["key_weight"], ["key_weight_t"], perm=[1, 0]),
        helper.make_node("MatMul", ["y", "key_weight_t"], ["k"]),
        helper.make_node("Gemm", ["k", "tied"], ["logits"], transB=1),
    ]
    inits = [numpy_helper.from_array(a, n) for n, a in {**w, **constants}.items()]
    g = helper.make_graph(
        nodes,
        "tiny",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, [3])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [3, VOCAB])],
        inits,
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 20)])


def run(model, ids: np.ndarray, config: dict | None = None) -> np.ndarray:
    options = ort.SessionOptions()
    for key, value in (config or {}).items():
        options.add_session_config_entry(key, value)
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return session.run(None, {"ids": ids})[0]


def optimized_ops(model, folder) -> list[str]:
    """The ops of ``model`` as the page's session (SESSION_CONFIG) leaves them after its optimizations at load."""
    options = ort.SessionOptions()
    for key, value in SESSION_CONFIG.items():
        options.add_session_config_entry(key, value)
    options.optimized_model_filepath = str(folder / "optimized.onnx")
    ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return [n.op_type for n in onnx.load(folder / "optimized.onnx").graph.node]


def torch_per_channel(weight: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray]:
    """PyTorch's symmetric per-channel int8 (the range -127..127): the int8 values and the scales."""
    observer = torch.ao.quantization.PerChannelMinMaxObserver(
        ch_axis=axis, dtype=torch.qint8, qscheme=torch.per_channel_symmetric, quant_min=-127, quant_max=127
    )
    w = torch.from_numpy(weight)
    observer(w)
    scale, zero_point = observer.calculate_qparams()
    rounded = torch.fake_quantize_per_channel_affine(w, scale.float(), zero_point.int(), axis, -127, 127)
    shape = [-1 if d == axis else 1 for d in range(w.ndim)]
    return (rounded / scale.float().view(shape)).round().to(torch.int8).numpy(), rounded.numpy()


def test_each_weight_is_pytorchs_per_channel_int8_and_the_tied_matrix_is_stored_once():
    w = weights()
    model = quantize_weights(graph(w))
    stored = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    for name, axis in {"tied": 0, "up": 1, "down": 1, "packed": 0}.items():
        assert name not in stored, f"{name} still stored in fp32"
        assert stored[f"{name}_quantized"].dtype == np.int8
        expected, _ = torch_per_channel(w[name], axis)
        if name == "down":  # the zero channel: PyTorch's scale is its epsilon, ours 1; both store 0
            assert (stored["down_quantized"][:, 2] == 0).all() and (expected[:, 2] == 0).all()
        np.testing.assert_array_equal(stored[f"{name}_quantized"], expected, err_msg=name)
        assert stored[f"{name}_scale"].shape == (w[name].shape[axis],)
    assert stored["pos"].dtype == np.float32  # GatherND's table is not a layout the pass knows
    assert sorted(n for n in stored if n.startswith("tied")) == ["tied_quantized", "tied_scale"]  # once


def test_the_graph_computes_the_fp32_graph_with_rounded_weights_and_the_session_folds_the_dequantization(tmp_path):
    w = weights()
    rounded = dict(w)
    for name, axis in {"tied": 0, "up": 1, "down": 1, "packed": 0}.items():
        rounded[name] = torch_per_channel(w[name], axis)[1]
    rounded["down"][:, 2] = 0.0
    ids = np.array([3, 0, 10], np.int64)
    int8 = quantize_weights(graph(w))
    expected = run(graph(rounded), ids)
    # the page's session folds the dequantization (without SESSION_CONFIG onnxruntime may fuse a DequantizeLinear
    # and its MatMul into an int8 product, MatMulNBits, that rounds the activations too)
    np.testing.assert_allclose(run(int8, ids, SESSION_CONFIG), expected, rtol=1e-5, atol=1e-5)
    assert np.abs(run(graph(w), ids) - expected).max() > 1e-4  # the rounding is there to see

    ops = optimized_ops(int8, tmp_path)
    assert "DequantizeLinear" not in ops, ops  # folded at load: each run multiplies fp32 matrices


def test_a_matrix_read_two_ways_or_by_another_op_stays_fp32():
    w = weights()
    model = graph(w)
    model.graph.node.append(helper.make_node("Identity", ["up"], ["up_copy"]))  # `up` also read as a value
    model.graph.node.append(helper.make_node("MatMul", ["packed", "up"], ["twice"]))  # `packed`: as A, not as B
    stored = {i.name for i in quantize_weights(model).graph.initializer}
    assert "up" in stored and "up_quantized" not in stored
    assert "packed" in stored and "packed_quantized" not in stored
    assert "down_quantized" in stored


def test_a_graph_keeps_only_the_rows_it_reads_and_computes_the_same_numbers():
    w = weights()
    ids = np.array([3, 0, 10], np.int64)
    before = run(graph(w), ids)
    model = keep_what_is_read(graph(w))
    stored = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    assert "packed" not in stored  # rows 8-15 of it were read: they alone are kept, as the (in, out) MatMul weight
    np.testing.assert_array_equal(stored["key_weight_t"], w["packed"][D : 2 * D].T)
    assert not {"starts", "ends", "axes"} & set(stored)  # constants nothing reads any more go too
    assert [n.op_type for n in model.graph.node if n.op_type in ("Slice", "Transpose")] == []
    np.testing.assert_array_equal(run(model, ids), before)  # bit-equal
    int8 = quantize_weights(keep_what_is_read(graph(w)))  # the same int8 rows as the packed matrix gets
    quantized = {i.name: numpy_helper.to_array(i) for i in int8.graph.initializer}
    np.testing.assert_array_equal(
        quantized["key_weight_t_quantized"], torch_per_channel(w["packed"], 0)[0][D : 2 * D].T
    )
    np.testing.assert_allclose(run(int8, ids, SESSION_CONFIG), run(quantize_weights(graph(w)), ids, SESSION_CONFIG))


def test_a_weight_another_node_also_reads_is_not_copied():
    w = weights()
    model = graph(w)  # `tied`: a Gather's table and the Gemm's B; now also read through a Transpose
    model.graph.node.append(helper.make_node("Transpose", ["tied"], ["tied_t"], perm=[1, 0]))
    model.graph.node.append(helper.make_node("MatMul", ["y", "tied_t"], ["logits_again"]))
    model.graph.output.append(helper.make_tensor_value_info("logits_again", TensorProto.FLOAT, None))
    kept = keep_what_is_read(model)
    stored = {i.name for i in kept.graph.initializer}
    assert "tied" in stored and "tied_t" not in stored  # stored once; the Transpose stays a node
    assert "key_weight_t" in stored and "packed" not in stored  # read only through its Slice: folded


def test_a_weight_a_subgraph_reads_stays():
    w = weights()
    model = graph(w)
    branch = helper.make_graph(
        [helper.make_node("Identity", ["packed"], ["packed_copy"])],
        "then",
        [],
        [helper.make_tensor_value_info("packed_copy", TensorProto.FLOAT, None)],
    )
    model.graph.initializer.append(numpy_helper.from_array(np.array(True), "flag"))
    model.graph.node.append(helper.make_node("If", ["flag"], ["chosen"], then_branch=branch, else_branch=branch))
    model.graph.output.append(helper.make_tensor_value_info("chosen", TensorProto.FLOAT, None))
    stored = {i.name for i in keep_what_is_read(model).graph.initializer}
    assert "packed" in stored  # an If's branch reads it: neither folded into its Slice's rows nor dropped


def test_slices_it_cannot_fold_stay():
    w = weights()
    model = graph(w)
    extra = {
        "rs": np.array([-1], np.int64),
        "re": np.array([-100], np.int64),
        "rst": np.array([-1], np.int64),
        "zero": np.array([0], np.int64),
    }
    model.graph.initializer.extend(numpy_helper.from_array(a, n) for n, a in extra.items())
    model.graph.node.extend(
        [
            helper.make_node("Slice", ["up", "rs", "re", "axes", "rst"], ["up_reversed"]),  # a negative step
            helper.make_node("Identity", ["up_reversed"], ["reversed"]),
            helper.make_node("Shape", ["ids"], ["n"]),
            helper.make_node("Slice", ["down", "zero", "n", "axes"], ["down_rows"]),  # an end known only at run time
            helper.make_node("Identity", ["down_rows"], ["rows"]),
        ]
    )
    model.graph.output.extend([helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("reversed", "rows")])
    kept = keep_what_is_read(model)
    assert [n.input[0] for n in kept.graph.node if n.op_type == "Slice"] == ["up", "down"]
    ids = np.array([3, 0, 10], np.int64)
    session = ort.InferenceSession(kept.SerializeToString(), providers=["CPUExecutionProvider"])
    reversed_, rows = session.run(["reversed", "rows"], {"ids": ids})
    np.testing.assert_array_equal(reversed_, w["up"][::-1])
    np.testing.assert_array_equal(rows, w["down"][:3])


def with_table(w):
    """The tiny graph with the positional table also read by rows (a Gather), under a name the exporter might give."""
    model = graph(w)
    model.graph.node.append(helper.make_node("Gather", ["val_7", "ids"], ["rows"]))
    model.graph.initializer.append(numpy_helper.from_array(w["pos"].copy(), "val_7"))
    model.graph.output.append(helper.make_tensor_value_info("rows", TensorProto.FLOAT, None))
    return model


def test_a_positional_table_given_as_kept_stays_fp32_whatever_its_name():
    w = weights()
    stored = {i.name: numpy_helper.to_array(i) for i in quantize_weights(with_table(w), [w["pos"]]).graph.initializer}
    np.testing.assert_array_equal(stored["val_7"], w["pos"])
    assert "val_7_quantized" not in stored and "tied_quantized" in stored
    stored = {i.name for i in quantize_weights(with_table(w)).graph.initializer}
    assert "val_7_quantized" in stored  # not given: a matrix read by rows like any other


def test_holds_finds_a_matrix_its_rows_or_their_transpose_and_nothing_else():
    a = np.arange(24, dtype=np.float32).reshape(6, 4)
    assert holds([a], a) and holds([a], a.T.copy()) and holds([a], a[2:5]) and holds([a], a[2:5].T.copy())
    assert not holds([a], a[:, :3]) and not holds([a], a[[0, 2]]) and not holds([a], a + 1) and not holds([], a)
    assert not holds([a[:3]], a)  # more rows than the array has


def grouped(weight: np.ndarray, axis: int, group: int) -> np.ndarray:
    """PyTorch's per-channel int8 applied to each run of ``group`` inputs of an output channel (``axis``)."""
    channels = weight if axis == 0 else weight.T  # (out, in)
    runs = np.ascontiguousarray(channels).reshape(-1, group)  # each run of one channel's inputs, as a row
    rounded = torch_per_channel(runs, 0)[1].reshape(channels.shape)
    return rounded if axis == 0 else np.ascontiguousarray(rounded.T)


def test_with_groups_each_run_of_a_channels_inputs_gets_its_scale_and_the_session_folds_it_too(tmp_path):
    w, ids = weights(), np.array([3, 0, 10], np.int64)
    layouts = {"tied": 0, "up": 1, "down": 1, "packed": 0}
    rounded = dict(w)
    for name, axis in layouts.items():
        rounded[name] = grouped(w[name], axis, 2)
    rounded["down"][:, 2] = 0.0
    int8 = quantize_weights(graph(w), group=2)
    stored = {i.name: numpy_helper.to_array(i) for i in int8.graph.initializer}
    assert stored["up_scale"].shape == (D // 2, 1, HIDDEN) and stored["tied_scale"].shape == (VOCAB, D // 2, 1)
    np.testing.assert_allclose(run(int8, ids, SESSION_CONFIG), run(graph(rounded), ids), rtol=1e-5, atol=1e-5)
    per_channel = quantize_weights(graph(w))
    exact = run(graph(w), ids)
    assert (
        np.abs(run(int8, ids, SESSION_CONFIG) - exact).max()
        < np.abs(run(per_channel, ids, SESSION_CONFIG) - exact).max()
    )

    four = {i.name: numpy_helper.to_array(i) for i in quantize_weights(graph(w), group=4).graph.initializer}
    assert four["down_scale"].shape == (D,)  # 4 does not divide its 6 inputs: one scale per channel
    assert four["up_scale"].shape == (D // 4, 1, HIDDEN)

    ops = optimized_ops(int8, tmp_path)
    assert not {"Cast", "Mul", "Reshape", "DequantizeLinear"} & set(ops), ops  # folded at load


def nearest_steps(weight: np.ndarray, axis: int, bits: int) -> tuple[np.ndarray, np.ndarray]:
    """Brute force: for each number of ``weight``, the nearest of the 2^bits − 1 points k · scale, k = −top … top,
    with scale = max |w| / top over its output channel (``axis``); the k's and the rounded matrix."""
    top = 2 ** (bits - 1) - 1
    channels = weight if axis == 0 else weight.T  # (out, in)
    scale = np.abs(channels).max(axis=1, keepdims=True) / np.float32(top)
    scale = np.where(scale > 0, scale, 1).astype(np.float32)
    grid = np.arange(-top, top + 1)
    k = grid[np.abs((channels / scale)[..., None] - grid).argmin(-1)]  # every point tried
    rounded = (k * scale).astype(np.float32)
    return (k, rounded) if axis == 0 else (k.T, np.ascontiguousarray(rounded.T))


@pytest.mark.parametrize("bits", [10, 12])
def test_past_8_bits_each_weight_is_the_nearest_point_of_the_finer_grid_in_two_byte_planes(bits, tmp_path):
    w, ids = weights(), np.array([3, 0, 10], np.int64)
    model = quantize_weights(graph(w), bits=bits)
    stored = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    rounded = dict(w)
    for name, axis in {"tied": 0, "up": 1, "down": 1, "packed": 0}.items():
        assert name not in stored, f"{name} still stored in fp32"
        high, low = stored[f"{name}_quantized"], stored[f"{name}_low"]
        assert high.dtype == np.int8 and low.dtype == np.uint8 and int(low.max()) < 2 ** (bits - 8), name
        k, rounded[name] = nearest_steps(w[name], axis, bits)
        np.testing.assert_array_equal(high.astype(np.int64) * 2 ** (bits - 8) + low, k, err_msg=name)
    np.testing.assert_allclose(run(model, ids, SESSION_CONFIG), run(graph(rounded), ids), rtol=1e-5, atol=1e-5)
    exact, int8 = run(graph(w), ids), run(quantize_weights(graph(w)), ids, SESSION_CONFIG)
    assert np.abs(run(model, ids, SESSION_CONFIG) - exact).max() < np.abs(int8 - exact).max() / 2
    assert optimized_ops(model, tmp_path) == optimized_ops(graph(w), tmp_path)  # every plane folded at load


def test_a_grid_of_fewer_than_8_or_more_than_16_bits_and_an_unknown_precision_are_refused_in_one_line():
    from course_tools.web.export import precision_bits

    for bits in (7, 17):
        with pytest.raises(ValueError, match="bits must be 8 to 16"):
            quantize_weights(graph(weights()), bits=bits)
    assert [precision_bits(p) for p in ("int8", "int10", "int12", "fp32")] == [8, 10, 12, None]
    for wrong in ("int9", "INT8", "fp16", ""):
        with pytest.raises(ValueError, match=r"--precision must be one of \['int8', 'int10', 'int12', 'fp32'\]"):
            precision_bits(wrong)

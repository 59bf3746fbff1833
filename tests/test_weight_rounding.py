"""benchmarks/weight_rounding.py: its grids against PyTorch's fake quantization, and GPTQ against its defining
properties (round-to-nearest when the inputs are uncorrelated; a smaller output error when they are not)."""

from pathlib import Path

import torch

from helpers import load_module

ROOT = Path(__file__).resolve().parent.parent


def benchmark():
    return load_module(ROOT / "benchmarks" / "weight_rounding.py", "weight_rounding")


def test_the_grids_are_pytorchs_symmetric_fake_quantization():
    wr = benchmark()
    weight = torch.randn(12, 20) * torch.logspace(-2, 1, 12)[:, None]  # rows of very different ranges
    for bits in (8, 9):
        top = 2 ** (bits - 1) - 1
        scale = wr.scales(weight, bits, per_channel=True)
        expected = torch.fake_quantize_per_channel_affine(
            weight, scale[:, 0], torch.zeros(12, dtype=torch.int32), 0, -top, top
        )
        torch.testing.assert_close(wr.round_to_grid(weight, scale, bits), expected, rtol=0, atol=0)
        one = wr.scales(weight, bits, per_channel=False)
        assert (one == weight.abs().max() / top).all()
        expected = torch.fake_quantize_per_tensor_affine(weight, float(one[0, 0]), 0, -top, top)
        torch.testing.assert_close(wr.round_to_grid(weight, one, bits), expected, rtol=0, atol=0)


def test_a_group_grid_is_per_channel_fake_quantization_of_each_run_of_columns():
    wr = benchmark()
    weight = torch.randn(12, 20) * torch.logspace(-2, 1, 20)[None, :]  # columns of very different ranges
    runs = weight.reshape(12 * 5, 4)  # each row's 5 runs of 4 columns, as rows of their own
    top = 127
    scale = wr.scales(weight, 8, per_channel=True, group=4)
    expected = torch.fake_quantize_per_channel_affine(
        runs, runs.abs().amax(dim=1) / top, torch.zeros(60, dtype=torch.int32), 0, -top, top
    ).reshape(12, 20)
    torch.testing.assert_close(wr.round_to_grid(weight, scale, 8), expected, rtol=0, atol=0)
    per_row = wr.round_to_grid(weight, wr.scales(weight, 8, per_channel=True), 8)
    assert (wr.round_to_grid(weight, scale, 8) - weight).abs().sum() < (per_row - weight).abs().sum()
    try:
        wr.scales(weight, 8, per_channel=True, group=3)
    except ValueError as error:
        assert "does not divide a row of 20" in str(error)
    else:
        raise AssertionError("a group that does not divide the row was taken")


def test_gptq_is_round_to_nearest_for_uncorrelated_inputs_and_beats_it_for_correlated_ones():
    wr = benchmark()
    g = torch.Generator().manual_seed(0)
    weight = torch.randn(16, 32, generator=g)
    scale = wr.scales(weight, 4, per_channel=True)  # a coarse grid: the difference is large
    rtn = wr.round_to_grid(weight, scale, 4)
    torch.testing.assert_close(wr.gptq(weight, torch.eye(32), scale, 4), rtn)

    mixing = torch.randn(32, 32, generator=g)
    inputs = torch.randn(2000, 32, generator=g) @ mixing + torch.randn(2000, 32, generator=g)  # correlated
    hessian = inputs.T.double() @ inputs.double() / len(inputs)
    q = wr.gptq(weight, hessian, scale, 4)
    on_grid = q / scale
    assert torch.allclose(on_grid, on_grid.round(), atol=1e-4) and on_grid.round().abs().max() <= 7  # on the 4-bit grid
    error = lambda w: float(((inputs @ (weight - w).T) ** 2).mean())  # noqa: E731
    assert error(q) < 0.7 * error(rtn), (error(q), error(rtn))

    groups = wr.scales(weight, 4, per_channel=True, group=8)  # the same on a grid of one scale per 8 columns
    torch.testing.assert_close(wr.gptq(weight, torch.eye(32), groups, 4), wr.round_to_grid(weight, groups, 4))
    q = wr.gptq(weight, hessian, groups, 4)
    assert torch.allclose(q / groups, (q / groups).round(), atol=1e-4)
    assert error(q) < 0.8 * error(wr.round_to_grid(weight, groups, 4))  # 0.72 here: groups leave less to gain


def test_sensitivity_rounds_each_matrix_alone_and_keeps_the_chosen_ones_in_float16():
    from types import SimpleNamespace

    from transformer_course.config import get_preset
    from transformer_course.model import build_model

    wr = benchmark()
    torch.manual_seed(0)
    model = build_model(get_preset("toy-copy"), 12, 12).eval()
    checkpoint = SimpleNamespace(model=model)
    names = list(wr.matrices(model))
    output = next(n for n, p in model.named_parameters() if p is model.generator.proj.weight)  # tied: one name
    seen = []

    def changed(rounded):  # a stand-in count: which matrices this model changed, and how
        diff = {n: bool((p != wr.matrices(model)[n]).any()) for n, p in wr.matrices(rounded).items()}
        half = {n for n, p in wr.matrices(rounded).items() if torch.equal(p, wr.matrices(model)[n].half().float())}
        seen.append(({n for n, d in diff.items() if d}, half & {n for n, d in diff.items() if d}))
        return sum(diff.values())

    found = wr.sensitivity(checkpoint, changed, budget=10**9)
    alone = seen[: len(names)]
    assert [touched for touched, _ in alone] == [{n} for n in names]  # each matrix alone, the rest untouched
    assert found["changed_alone_max"] == 1 and found["changed_alone_sum"] == len(names)
    assert found["alone"]["changed"] == dict.fromkeys(names, 1)
    touched, half = seen[len(names)]  # the output layer in float16, every other matrix rounded
    assert touched == set(names) and half == {output}
    assert found["fp16_output_layer_parameters"] == model.generator.proj.weight.numel()
    touched, half = seen[-1]  # a budget that holds everything: every matrix in float16
    assert half == set(names) and found["fp16_sensitive_parameters"] == sum(
        p.numel() for p in wr.matrices(model).values()
    )

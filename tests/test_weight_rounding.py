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

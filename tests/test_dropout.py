"""FastDropout (transformer_course/dropout.py): the statistics of nn.Dropout, a cheaper mask on a CPU."""

import math

import pytest
import torch
from torch import nn

from transformer_course.config import Config, get_preset
from transformer_course.dropout import FastDropout, fast_dropout, use_fast_dropout
from transformer_course.model import build_model, make_model

N = 1 << 20


def dropped_probability(p: float) -> float:
    return round(p * 65536) / 65536  # p rounded to a multiple of 2⁻¹⁶, as the module documents


def within(count: int, n: int, q: float, sigmas: float = 6.0) -> bool:
    """count successes of n Bernoulli(q) trials lies within `sigmas` standard deviations of n·q."""
    return abs(count - n * q) <= sigmas * math.sqrt(n * q * (1 - q))


@pytest.mark.parametrize("p", [0.1, 0.3, 0.5, 0.9])
def test_drop_rate_and_scale_match_p(p):
    torch.manual_seed(0)
    y = fast_dropout(torch.ones(N), p)
    q = dropped_probability(p)
    assert within(int((y == 0).sum()), N, q)
    torch.testing.assert_close(y[y != 0], torch.full_like(y[y != 0], 1 / (1 - q)))  # kept ones scaled exactly


@pytest.mark.parametrize("lane", range(4))
def test_each_16_bit_quarter_of_a_word_drops_at_the_same_rate(lane):
    """Each 64-bit word feeds four neighbouring elements: a lane with a biased bit (a sign bit that is always
    0, as `random_()` without a range gives) would drop at a different rate."""
    torch.manual_seed(1)
    y = fast_dropout(torch.ones(N), 0.5)[lane::4]
    assert within(int((y == 0).sum()), y.numel(), dropped_probability(0.5))


@pytest.mark.parametrize("lag", [1, 2, 3, 4, 5, 256])
def test_masks_of_neighbouring_elements_are_uncorrelated(lag):
    torch.manual_seed(2)
    kept = (fast_dropout(torch.ones(N), 0.3) != 0).double()
    a, b = kept[:-lag] - kept.mean(), kept[lag:] - kept.mean()
    r = float((a * b).mean() / (a.std() * b.std()))
    assert abs(r) < 6 / math.sqrt(N), f"lag {lag}: correlation {r:.5f}"


def test_expected_output_is_the_input():
    torch.manual_seed(3)
    x = torch.rand(N) + 0.5
    y = fast_dropout(x, 0.1)
    # E[y] = E[x]; the per-element spread of y around x is x·sqrt(q / (1 - q))
    q = dropped_probability(0.1)
    spread = float((x**2).mean().sqrt()) * math.sqrt(q / (1 - q)) / math.sqrt(N)
    assert abs(float(y.mean() - x.mean())) < 6 * spread


def test_the_gradient_is_the_same_mask():
    torch.manual_seed(4)
    x = (torch.rand(64, 33) + 0.5).requires_grad_(True)
    y = fast_dropout(x, 0.25)
    y.backward(torch.ones_like(y))
    torch.testing.assert_close(x.grad, y.detach() / x.detach())  # 0 where dropped, the scale where kept


def test_masks_repeat_under_manual_seed_differ_between_calls_and_ignore_threads():
    threads = torch.get_num_threads()
    try:
        torch.manual_seed(5)
        first, second = fast_dropout(torch.ones(10_000), 0.5), fast_dropout(torch.ones(10_000), 0.5)
        torch.set_num_threads(1)
        torch.manual_seed(5)
        again = fast_dropout(torch.ones(10_000), 0.5)
    finally:
        torch.set_num_threads(threads)
    assert torch.equal(first, again)
    assert not torch.equal(first, second)


def test_odd_sizes_and_shapes_keep_their_shape():
    for shape in [(1,), (3,), (5, 7), (2, 3, 5)]:
        y = fast_dropout(torch.ones(shape), 0.5)
        assert y.shape == shape and set(y.unique().tolist()) <= {0.0, 2.0}


def test_is_an_nn_dropout_and_exactly_one_in_eval_mode_and_at_p_0():
    layer = FastDropout(0.3)
    assert isinstance(layer, nn.Dropout) and repr(layer) == "FastDropout(p=0.3, inplace=False)"
    x = torch.randn(4, 5)
    assert torch.equal(layer.eval()(x), x)
    assert torch.equal(FastDropout(0.0).train()(x), x)
    y = layer.train()(x)
    assert y is not x and ((y == 0) | torch.isclose(y, x / (1 - dropped_probability(0.3)))).all()


def test_inside_torch_compile_and_off_the_cpu_it_is_f_dropout(monkeypatch):
    calls = []
    monkeypatch.setattr(torch.nn.functional, "dropout", lambda x, p, training: calls.append(p) or x)
    monkeypatch.setattr(torch.compiler, "is_compiling", lambda: True)
    FastDropout(0.2).train()(torch.ones(3))
    assert calls == [0.2]


def test_bad_arguments_get_one_clear_line():
    with pytest.raises(ValueError, match=r"p=1.0 is outside \[0, 1\)"):
        fast_dropout(torch.ones(3), 1.0)
    with pytest.raises(ValueError, match="floating-point tensor"):
        fast_dropout(torch.ones(3, dtype=torch.long), 0.1)
    with pytest.raises(ValueError, match="no in-place form"):
        FastDropout(0.1, inplace=True)


def test_use_fast_dropout_swaps_every_plain_dropout_and_keeps_the_train_mode():
    model = nn.Sequential(nn.Dropout(0.1), nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.2)), nn.Dropout(0.3, True))
    model.eval()
    assert use_fast_dropout(model) == 2  # the in-place one stays
    assert [type(m).__name__ for m in model.modules() if isinstance(m, nn.Dropout)] == [
        "FastDropout",
        "FastDropout",
        "Dropout",
    ]
    assert model[1][1].p == 0.2 and not model[1][1].training


def test_a_model_with_fast_dropout_is_the_same_model_in_eval_mode():
    torch.manual_seed(6)
    fast = make_model(50, 50, N=1, d_model=16, d_ff=32, h=2, dropout=0.2, ffn_dropout=0.1, fast_dropout=True)
    torch.manual_seed(6)
    plain = make_model(50, 50, N=1, d_model=16, d_ff=32, h=2, dropout=0.2, ffn_dropout=0.1)
    assert not any(type(m) is nn.Dropout for m in fast.modules())
    assert sum(isinstance(m, FastDropout) for m in fast.modules()) == sum(
        type(m) is nn.Dropout for m in plain.modules()
    )
    src, tgt = torch.randint(4, 50, (2, 7)), torch.randint(4, 50, (2, 6))
    fast.eval(), plain.eval()
    torch.testing.assert_close(fast(src, tgt, None, None), plain(src, tgt, None, None))


def test_the_multi30k_presets_use_it_and_the_notebook_defaults_do_not():
    assert get_preset("multi30k-cpu").fast_dropout and get_preset("multi30k-base").fast_dropout
    assert not get_preset("toy-copy").fast_dropout and not Config().fast_dropout
    vocab = 60
    model = build_model(get_preset("multi30k-cpu").replace(N=1, d_model=16, d_ff=32, h=2), vocab, vocab)
    assert any(isinstance(m, FastDropout) for m in model.modules())
    with pytest.raises(ValueError, match="fast_dropout must be True or False"):
        Config(fast_dropout="yes")

"""Checkers for the exercises of notebook 11 (training on Multi30k; paper §5.1, §6.1).

from transformer_course.exercises import nb11_train_multi30k as ex
ex.check_padding_fraction(padding_fraction)
ex.check_average_state_dicts(average_state_dicts)
ex.check_brevity_penalty(brevity_penalty)
"""

from __future__ import annotations

import copy
import math

import torch

from . import Hint, Result, expect_tensor, run_check

# Two batches of sentence lengths: one well bucketed, one mixing short and long sentences.
BATCHES = [[5, 5, 6, 6], [2, 9, 3]]


def _padding_by_hand(batches: list[list[int]]) -> float:
    padded = sum(len(b) * max(b) for b in batches)  # positions after padding each batch to its longest
    real = sum(sum(b) for b in batches)
    return (padded - real) / padded


def check_padding_fraction(padding_fraction) -> Result:
    """``padding_fraction(batches)``: lists of sentence lengths, one list per batch → the fraction of all
    positions that are padding when each batch is padded to its own longest sentence."""

    def check():
        got = padding_fraction([[4, 4, 4]])
        if not isinstance(got, (float, int)) and not (isinstance(got, torch.Tensor) and got.numel() == 1):
            raise Hint(f"padding_fraction should return one number, got {type(got).__name__}")
        if abs(float(got)) > 1e-9:
            raise Hint(
                f"a batch of equal lengths [4, 4, 4] needs no padding, so the answer is 0.0; got {float(got):.4f}"
            )
        got = float(padding_fraction(BATCHES))
        expected = _padding_by_hand(BATCHES)  # 2 + 15 = 17 pads in 24 + 27 = 51 positions
        mean_of_ratios = sum((len(b) * max(b) - sum(b)) / (len(b) * max(b)) for b in BATCHES) / len(BATCHES)
        global_max = sum(max(map(max, BATCHES)) - n for b in BATCHES for n in b) / (
            max(map(max, BATCHES)) * sum(map(len, BATCHES))
        )
        pads = sum(len(b) * max(b) - sum(b) for b in BATCHES)
        if math.isclose(got, mean_of_ratios, abs_tol=1e-6):
            raise Hint(
                "you averaged the batches' fractions; count pads and positions over all batches, then divide "
                "once (a big batch weighs more than a small one)"
            )
        if math.isclose(got, global_max, abs_tol=1e-6):
            raise Hint(
                "you padded every batch to the longest sentence of the whole dataset; each batch is padded "
                "only to its own longest sentence (max(b))"
            )
        if math.isclose(got, pads / sum(map(sum, BATCHES)), abs_tol=1e-6):
            raise Hint("you divided the pads by the real tokens; divide by all positions, real + padding")
        if not math.isclose(got, expected, abs_tol=1e-6):
            raise Hint(
                f"padding_fraction({BATCHES}) = {got:.4f}, expected {expected:.4f} "
                f"({pads} pads in {sum(len(b) * max(b) for b in BATCHES)} positions)"
            )

    return run_check("padding fraction", check, "passed: pads / all positions, each batch padded to its own longest")


def _state_dicts() -> list[dict]:
    g = torch.Generator().manual_seed(0)
    return [{"weight": torch.randn(3, 2, generator=g), "bias": torch.randn(3, generator=g)} for _ in range(3)]


def check_average_state_dicts(average_state_dicts) -> Result:
    """``average_state_dicts(state_dicts)``: a list of state dicts with the same keys → one state dict whose
    every tensor is the element-wise mean of the inputs' tensors (the inputs stay unchanged)."""

    def check():
        dicts = _state_dicts()
        before = copy.deepcopy(dicts)
        got = average_state_dicts(dicts)
        if not isinstance(got, dict):
            raise Hint(f"average_state_dicts should return a dict (name → tensor), got {type(got).__name__}")
        if set(got) != set(dicts[0]):
            raise Hint(f"the average has the keys {sorted(got)}, expected {sorted(dicts[0])}: one entry per parameter")
        for name in dicts[0]:
            if not all(torch.equal(d[name], b[name]) for d, b in zip(dicts, before)):
                raise Hint(
                    f"your code changed the input state dicts ({name!r}); build new tensors (e.g. torch.stack(...).mean(0))"
                )
            expected = sum(b[name] for b in before) / len(before)
            value = got[name]
            if isinstance(value, torch.Tensor) and value.shape == expected.shape:
                if torch.allclose(value, sum(b[name] for b in before)):
                    raise Hint(f"{name!r} is the sum of the checkpoints; divide by how many there are")
                if torch.allclose(value, before[-1][name]):
                    raise Hint(f"{name!r} equals the last checkpoint; average over all of them")
                if torch.allclose(value, (before[0][name] + before[-1][name]) / 2):
                    raise Hint(
                        f"{name!r} averages only the first and the last; average over every checkpoint in the list"
                    )
            expect_tensor(value, expected, f"average[{name!r}]")

    return run_check("average state dicts", check, "passed: every parameter is the mean over the checkpoints")


def _bp(hyp_len: int, ref_len: int) -> float:
    """BLEU's brevity penalty as sacreBLEU computes it (Papineni et al., 2002)."""
    from sacrebleu.metrics import BLEU

    return BLEU.compute_bleu([1, 1, 1, 1], [1, 1, 1, 1], sys_len=hyp_len, ref_len=ref_len).bp


def check_brevity_penalty(brevity_penalty) -> Result:
    """``brevity_penalty(hyp_len, ref_len)``: 1 when the translations are longer than the references,
    else exp(1 − ref_len / hyp_len); compared with sacreBLEU's own value."""

    def check():
        for hyp_len, ref_len in ((8, 10), (12, 10), (10, 10), (3, 10), (950, 1000)):
            got = brevity_penalty(hyp_len, ref_len)
            expected = _bp(hyp_len, ref_len)
            if not isinstance(got, (float, int)) and not (isinstance(got, torch.Tensor) and got.numel() == 1):
                raise Hint(f"brevity_penalty should return one number, got {type(got).__name__}")
            got = float(got)
            if math.isclose(got, expected, rel_tol=1e-6, abs_tol=1e-9):
                continue
            if hyp_len > ref_len and got > 1:
                raise Hint(
                    f"brevity_penalty({hyp_len}, {ref_len}) = {got:.4f} > 1: longer output is not rewarded, "
                    "the penalty is capped at 1 (min(1, …))"
                )
            if math.isclose(got, math.exp(1 - hyp_len / ref_len), rel_tol=1e-6):
                raise Hint(
                    "the ratio is upside down: it is exp(1 − ref_len / hyp_len), which is small when the "
                    "translation (hyp) is short"
                )
            raise Hint(f"brevity_penalty({hyp_len}, {ref_len}) = {got:.4f}, sacreBLEU says {expected:.4f}")

    return run_check("brevity penalty", check, "passed: equal to sacreBLEU's brevity penalty")

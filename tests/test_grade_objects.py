"""Checks given a class (or a function that builds a model) are replayed by the grader like the others: the sandbox
records what the checker did with the learner's objects (classroom/objects.py), the grader answers the same
checker from that record. The references replay to full points; a wrong class, a forged record and a class that
fools the sandbox's own checkers score 0."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch
from torch import nn

from course_tools.classroom import judge, verdict

from helpers import reference

HOME = str(Path(judge.__file__).resolve().parents[2] / "transformer_course")

# checker, its module, the names it is given and the reference file that defines them
CLASS_CHECKS = [
    ("check_multi_head_attention", "nb03_multi_head_attention", ["MultiHeadAttention"], "multi_head"),
    ("check_layer_norm_module", "nb04_layernorm_residual", ["LayerNorm"], "norm_residual"),
    ("check_residual_connection", "nb04_layernorm_residual", ["ResidualConnection"], "norm_residual"),
    ("check_embeddings", "nb05_embeddings_positional_encoding", ["Embeddings"], "embeddings"),
    ("check_positional_encoding", "nb05_embeddings_positional_encoding", ["PositionalEncoding"], "embeddings"),
    ("check_feed_forward", "nb05_embeddings_positional_encoding", ["PositionwiseFeedForward"], "embeddings"),
    ("check_encoder_layer", "nb06_encoder", ["EncoderLayer"], "encoder"),
    ("check_encoder", "nb06_encoder", ["Encoder", "EncoderLayer"], "encoder"),
    ("check_decoder_layer", "nb07_decoder", ["DecoderLayer"], "decoder"),
    ("check_decoder", "nb07_decoder", ["Decoder", "DecoderLayer"], "decoder"),
    ("check_make_model", "nb07_decoder", ["make_model"], "decoder"),
]


def cell_for(checker: str, module: str, names: list[str]) -> dict:
    return {"text": f"ex.{checker}({', '.join(names)})", "aliases": {"ex": module}, "calls": [[checker, 2]]}


def recorded(tmp_path, cell: dict, namespace: dict) -> list[dict]:
    """Run the cell's hidden test as the sandbox does (TC_RECORDS set) and read back its records."""
    os.environ["TC_RECORDS"] = str(tmp_path / "records")
    try:
        verdict.grade(HOME, namespace, cell)
    finally:
        del os.environ["TC_RECORDS"]
    return judge.read_records(tmp_path / "records").get(judge.cell_key(cell), [])


@pytest.mark.parametrize("checker, module, names, file", CLASS_CHECKS, ids=[c[0] for c in CLASS_CHECKS])
def test_each_class_checks_reference_replays_to_full_points(tmp_path, checker, module, names, file):
    solved = reference(file)
    cell = cell_for(checker, module, names)
    records = recorded(tmp_path, cell, {name: getattr(solved, name) for name in names})
    assert len(records) == 1 and records[0]["passed"] and records[0]["objects"]
    score, total, text = judge.grade_cell(cell, records)
    assert (score, total) == (2, 2), text
    assert "checked in the sandbox" not in text


class UnbiasedLayerNorm(nn.Module):  # a plausible mistake: torch.var's default, the unbiased variance
    def __init__(self, features, eps=1e-5):
        super().__init__()
        self.weight, self.bias, self.eps = nn.Parameter(torch.ones(features)), nn.Parameter(torch.zeros(features)), eps

    def forward(self, x):
        mean, var = x.mean(-1, keepdim=True), x.var(-1, keepdim=True)
        return self.weight * (x - mean) / torch.sqrt(var + self.eps) + self.bias


LN_CELL = cell_for("check_layer_norm_module", "nb04_layernorm_residual", ["LayerNorm"])


def test_a_wrong_class_scores_zero_with_the_hint_the_learner_saw(tmp_path):
    from transformer_course.exercises import nb04_layernorm_residual

    records = recorded(tmp_path, LN_CELL, {"LayerNorm": UnbiasedLayerNorm})
    score, total, text = judge.grade_cell(LN_CELL, records)
    assert (score, total) == (0, 2)
    assert nb04_layernorm_residual.check_layer_norm_module(UnbiasedLayerNorm).message in text


class FoolingLayerNorm(UnbiasedLayerNorm):
    """Wrong numbers, and on construction it makes every comparison in its process come out equal."""

    def __init__(self, features, eps=1e-5):
        super().__init__(features, eps)
        torch.allclose = lambda *args, **kwargs: True


def test_a_class_that_fools_the_sandboxs_checker_scores_zero_in_the_grader(tmp_path):
    honest = torch.allclose
    try:
        records = recorded(tmp_path, LN_CELL, {"LayerNorm": FoolingLayerNorm})
    finally:
        torch.allclose = honest  # the sandbox's process ends; the grader's is another
    assert records[0]["passed"]  # the checker inside the sandbox was fooled
    score, _, text = judge.grade_cell(LN_CELL, records)
    assert score == 0 and "graded: 0 of 2 points" in text


def test_a_forged_output_or_gradient_in_a_class_record_scores_zero(tmp_path):
    [good] = recorded(tmp_path, LN_CELL, {"LayerNorm": reference("norm_residual").LayerNorm})
    assert judge.grade_cell(LN_CELL, [good])[0] == 2

    def forged(change) -> dict:
        events = [dict(e) for e in good["objects"]]
        change(next(e for e in events if e["op"] == "call" and e.get("grads")))
        return dict(good, objects=events)

    def other_output(event):  # the right output for another input: one value moved
        out = event["out"]
        tensor = out["t"]["t"].clone()
        tensor.view(-1)[0] += 0.5
        event["out"] = dict(out, t=dict(out["t"], t=tensor))

    def no_gradient(event):  # the gradients that reached the parameters, left out
        event["grads"] = [dict(p, into=[None for _ in p["into"]]) for p in event["grads"]]

    for change in (other_output, no_gradient):
        score, _, text = judge.grade_cell(LN_CELL, [forged(change)])
        assert score == 0, (change.__name__, text)


def test_a_proxy_shows_the_checker_what_the_object_shows(tmp_path):
    """The same face in both processes: the nearest torch class, one tensor per parameter however it is reached,
    state_dict entries that share the parameters' memory, and the recorded events replay those answers."""
    objects = judge._objects()
    side = objects.Recording(judge._codec())
    linear = side.given(nn.Linear)(3, 2)
    assert isinstance(linear, nn.Linear) and isinstance(linear, nn.Module)
    assert linear.weight is linear.weight and any(p is linear.weight for p in linear.parameters())
    entry = linear.state_dict()["weight"]
    with torch.no_grad():
        linear.weight.add_(1.0)
    assert torch.equal(entry, linear.weight.detach())  # memory shared, as PyTorch's own state_dict does

    problems: list[str] = []
    replay = objects.Replaying(judge._codec(), side.events, problems, judge.Mismatch)
    again = replay.given(0)(3, 2)
    assert isinstance(again, nn.Linear) and again.weight is again.weight
    assert any(p is again.weight for p in again.parameters())
    entry_again = again.state_dict()["weight"]
    with torch.no_grad():
        again.weight.add_(1.0)
    assert torch.equal(entry_again, again.weight.detach()) and not problems
    with pytest.raises(judge.Mismatch):
        again.bias  # noqa: B018 (an operation the recorded run did not make)


class Mix(nn.Module):
    """a · b + c: given one tensor three times (as self-attention is), its gradient is 2a + 1, once."""

    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.tensor(3.0))

    def forward(self, a, b, c):
        return self.scale * (a * b + c)


def test_gradients_reach_an_input_given_three_times_once_and_the_parameters_read_after_the_backward_pass():
    def run(mix):
        x = torch.arange(4.0, requires_grad=True)
        mix(x, x, x).sum().backward()
        return x.grad, mix.scale.grad  # the parameter first read after the backward pass

    objects = judge._objects()
    side = objects.Recording(judge._codec())
    x_grad, scale_grad = run(side.given(Mix)())
    x = torch.arange(4.0)
    assert torch.equal(x_grad, 3.0 * (2 * x + 1)) and torch.equal(scale_grad, (x * x + x).sum())

    problems: list[str] = []
    replay = objects.Replaying(judge._codec(), side.events, problems, judge.Mismatch)
    again = run(replay.given(0)())
    assert torch.equal(again[0], x_grad) and torch.equal(again[1], scale_grad) and not problems


ATTENTION_CELL = cell_for("check_attention", "nb02_attention", ["attention"])


def zeroing_its_query(query, key, value, mask=None, dropout=None):
    """Right numbers, but it leaves the caller's query zeroed."""
    out = reference("attention").scaled_dot_product_attention(query, key, value, mask, dropout)
    query.detach().zero_()
    return out


def test_a_function_that_writes_into_its_inputs_gets_the_same_hint_in_the_grader(tmp_path):
    from transformer_course.exercises import nb02_attention

    seen = nb02_attention.check_attention(zeroing_its_query)  # what the learner's own notebook says
    assert not seen.passed
    records = recorded(tmp_path, ATTENTION_CELL, {"attention": zeroing_its_query})
    score, _, text = judge.grade_cell(ATTENTION_CELL, records)
    assert score == 0 and seen.message in text, text

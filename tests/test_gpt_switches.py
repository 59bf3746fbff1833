"""The switch table of the language model (benchmarks/gpt_switches.py → docs/results.json → docs/results.md): each
switch is one line of config against the paper's model, and the rows it records render as the table."""

import importlib.util
import json
from pathlib import Path

import pytest

from course_tools import results
from transformer_course.config import get_preset
from transformer_course.layers import swiglu_hidden
from transformer_course.model import ModelConfig

ROOT = Path(__file__).resolve().parent.parent


def benchmark():
    spec = importlib.util.spec_from_file_location("gpt_switches", ROOT / "benchmarks" / "gpt_switches.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_each_switch_changes_one_field_of_the_paper_s_model_and_all_modern_all_five():
    bench = benchmark()
    paper = ModelConfig.of(get_preset("gpt-cpu").replace(**bench.PAPER))
    assert (paper.norm_first, paper.positional, paper.norm, paper.ffn, paper.n_kv_heads) == (
        False,
        "sinusoidal",
        "layer",
        "relu",
        None,
    )
    singles = {name: change for name, (_, change) in bench.SWITCHES.items() if name not in ("paper", "all-modern")}
    assert all(len(change) == 1 for change in singles.values())
    assert {k for change in singles.values() for k in change} == set(bench.MODERN) | {"positional"}
    assert bench.SWITCHES["all-modern"][1] == bench.MODERN
    assert swiglu_hidden(paper.d_model, paper.d_ff) == 341  # 2/3 of 512: the ReLU FFN's parameter count


def test_the_table_renders_each_switch_s_seeds_mean_and_spread_then_the_baselines(tmp_path):
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"schema": 1, "runs": {}}))
    summary = {"kind": "lm-switches", "seeds": [0, 1], "switches": {"paper": "post-LN", "rope": "positional=rope"}}
    results.record_figures("lm", summary, path)
    for seed, (paper, rope) in enumerate([(30.0, 28.0), (31.0, 27.5)]):
        for switch, ppl in (("paper", paper), ("rope", rope)):
            row = dict(test_perplexity=ppl, valid_perplexity=ppl + 1, parameters=1000, wall_seconds=10.0 + seed)
            results.record_figures(f"lm-{switch}-seed{seed}", row, path)
    results.record_figures(
        "lm", dict(bigram_k="0.01", bigram_test_perplexity=38.76, bigram_valid_perplexity=39.0), path
    )
    table = results.render_table("lm", results.load_results(path)).splitlines()
    assert table[2] == "| paper (post-LN) | 30.00 | 31.00 | 30.50 | 1.00 | 31.50 | 1,000 | 10 s |"
    assert table[3].startswith("| rope (positional=rope) | 28.00 | 27.50 | 27.75 | 0.50 | 28.75 |")
    assert table[4].startswith("| bigram counts, add-k smoothing (k = 0.01, chosen on validation) |  |  | 38.76 |")
    assert results.figure("lm-rope-seed1/test_perplexity", results.load_results(path)) == 27.5


def test_a_switch_not_measured_for_every_seed_has_no_row_yet(tmp_path):
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"schema": 1, "runs": {}}))
    results.record_figures("lm", {"kind": "lm-switches", "seeds": [0, 1], "switches": {"paper": "post-LN"}}, path)
    row = dict(test_perplexity=30.0, valid_perplexity=31.0, parameters=1000, wall_seconds=10.0)
    results.record_figures("lm-paper-seed0", row, path)
    assert len(results.render_table("lm", results.load_results(path)).splitlines()) == 2  # the header only


def test_record_figures_refuses_a_bad_name_or_nan(tmp_path):
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"schema": 1, "runs": {}}))
    with pytest.raises(ValueError, match="a run's name"):
        results.record_figures("a/b", {"x": 1}, path)
    with pytest.raises(ValueError, match="is NaN"):
        results.record_figures("a", {"x": float("nan")}, path)

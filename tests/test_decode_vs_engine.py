"""benchmarks/decode_vs_engine.py --record: the table it prints becomes one run of results.json (notebook 11 prints
it), on a tiny model trained a few steps on the first pairs of Multi30k. The reference is the row's own
definitions: sentences/s × seconds = sentences, tokens/s × seconds = tokens, CTranslate2 fp32 at the same beam over
each decoder's seconds, and the course's greedy ids beside CTranslate2's counted again here."""

import importlib.util
import json
from pathlib import Path

import pytest
import torch

from course_tools.results import load_results
from transformer_course.checkpoint import load_checkpoint
from transformer_course.data import MIRROR_ENV, PAD, load_pairs

from helpers import MULTI30K, needs_multi30k

ctranslate2 = pytest.importorskip("ctranslate2")

ROOT = Path(__file__).resolve().parent.parent
DECODERS = [("course", 1), ("ct2 fp32", 1), ("ct2 int8", 1), ("course", 4), ("ct2 fp32", 4), ("ct2 int8", 4)]


def benchmark():
    spec = importlib.util.spec_from_file_location("decode_vs_engine", ROOT / "benchmarks" / "decode_vs_engine.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A BPE model of one layer, d_model 32, trained 20 steps on the first 300 pairs (a few seconds)."""
    from transformer_course.config import get_preset
    from transformer_course.data import multi30k_data
    from transformer_course.train import RunOptions, fit

    if MULTI30K is None:
        pytest.skip("no Multi30k files")
    root, out = tmp_path_factory.mktemp("data"), tmp_path_factory.mktemp("run")
    config = get_preset("multi30k-cpu").replace(
        name="tiny-bpe", N=1, d_model=32, d_ff=64, h=2, subword_vocab=300, tokens_per_batch=400, warmup=10
    )
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv(MIRROR_ENV, str(MULTI30K))
            fit(
                config,
                multi30k_data(config, root, limit=300, progress=False),
                RunOptions(out, max_steps=20, progress=False),
            )
    finally:
        torch.set_num_threads(threads)
    return out / "last.pt", root


@needs_multi30k
def test_record_writes_the_printed_table_as_one_consistent_run(tiny, tmp_path, monkeypatch, capsys):
    checkpoint, root = tiny
    monkeypatch.setenv(MIRROR_ENV, str(MULTI30K))
    results = tmp_path / "results.json"
    results.write_text(json.dumps({"schema": 1, "runs": {"other": {"steps": 3}}}))
    argv = [str(checkpoint), "--root", str(root), "--limit", "5", "--repeat", "1", "--threads", "1"]
    benchmark().main([*argv, "--record", "decode-vs-engine", "--results", str(results)])
    printed = capsys.readouterr().out

    data = load_results(results)  # the results helpers read it back: schema, no key twice
    assert data["runs"]["other"] == {"steps": 3}  # the rest of the file kept
    run = data["runs"]["decode-vs-engine"]
    assert run["kind"] == "decode-vs-engine" and run["test"]["sentences"] == 5 and run["test"]["beam"] == 4
    assert not [k for k, v in run.items() if isinstance(v, (int, float))]  # no top-level figure for prose to mark
    machine = run["machine"]
    assert machine["threads"] == 1 and machine["torch"] == torch.__version__
    assert machine["ctranslate2"] == ctranslate2.__version__
    assert len(machine["load_before"]) == 3 and len(machine["load_after"]) == 3
    assert run["checkpoint"]["preset"] == "tiny-bpe" and run["checkpoint"]["file"] == "last.pt"
    model = load_checkpoint(checkpoint).model  # .parameters(): a tied matrix once
    assert run["checkpoint"]["parameters"] == sum(p.numel() for p in model.parameters())

    rows = {(row["decoder"], row["beam"]): row for row in run["decoders"]}
    assert list(rows) == DECODERS
    for (name, beam), row in rows.items():
        assert row["sentences_per_s"] * row["seconds"] == pytest.approx(5, rel=0.01)
        assert row["tokens_per_s"] * row["seconds"] == pytest.approx(row["tokens"], rel=0.01, abs=0.5 * row["seconds"])
        assert 5 <= row["tokens"]  # at least </s> per sentence
        assert row["x_ct2_fp32"] == pytest.approx(rows["ct2 fp32", beam]["seconds"] / row["seconds"], abs=0.006)
        assert 0 <= row["sacrebleu"] <= 100
        line = f"{name:<10} {beam:>4} {row['seconds']:>8.2f} {row['sentences_per_s']:>8.1f}"
        assert line in printed  # the row is the table it printed
    assert rows["ct2 fp32", 1]["x_ct2_fp32"] == rows["ct2 fp32", 4]["x_ct2_fp32"] == 1.0

    # The identical count, again: the course's greedy ids beside CTranslate2's on the same five sentences
    from course_tools.engine import export_ct2
    from transformer_course.decode import decode_sentences
    from transformer_course.engine import engine_ids, load_engine

    loaded = load_checkpoint(checkpoint)
    sources = [s for s, _ in load_pairs("test", root)][:5]
    course = decode_sentences(loaded.model.eval(), loaded.src_vocab, sources, tokenizer=loaded.tokenizer)
    engine = engine_ids(load_engine(export_ct2(loaded, tmp_path / "ct2"), threads=1), sources)
    same = sum([t for t in a if t != PAD] == b for (_, a), (_, b) in zip(course, engine))
    assert run["greedy_identical"] == {"identical": same, "of": 5}
    assert f"greedy: {same} of 5 course outputs" in printed


def test_record_refuses_a_results_file_it_cannot_write_before_any_timing(tmp_path, capsys):
    bad = tmp_path / "results.json"
    bad.write_text("{not json")
    with pytest.raises(SystemExit) as stop:
        benchmark().main(["missing.pt", "--record", "decode-vs-engine", "--results", str(bad)])
    assert stop.value.code == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert "is not valid JSON" in error and str(bad) in error
    with pytest.raises(SystemExit):
        benchmark().main(["missing.pt", "--record", "decode-vs-engine", "--no-engine"])
    assert "leave out --no-engine" in capsys.readouterr().err


def test_an_older_package_reads_todays_checkpoint_without_the_fields_it_predates(tmp_path, monkeypatch):
    """--baseline-ref's child: the old package's read_checkpoint drops the config fields it does not know where
    their value is the model it could build, and refuses one it could not build, naming the field."""
    import dataclasses

    import transformer_course.checkpoint as package

    @dataclasses.dataclass
    class OlderConfig:  # a package from before the norm, ffn and ema_decay fields
        N: int = 6
        d_model: int = 512

    state = {"config": {"N": 3, "d_model": 256, "norm": "layer", "ffn": "relu", "ema_decay": 0.999}}
    monkeypatch.setattr(package, "Config", OlderConfig)
    monkeypatch.setattr(package, "read_checkpoint", lambda path, map_location="cpu": json.loads(json.dumps(state)))
    benchmark().read_with_older_package()
    assert package.read_checkpoint("any.pt")["config"] == {"N": 3, "d_model": 256}

    state["config"]["norm"] = "rms"
    with pytest.raises(SystemExit, match="norm='rms' is a model the baseline's package cannot build"):
        package.read_checkpoint("any.pt")
    state["config"] = {"N": 3, "d_model": 256, "experts": 8}
    with pytest.raises(SystemExit, match="does not know the config field 'experts'"):
        package.read_checkpoint("any.pt")

"""docs/results.json is the one source of the course's measured figures.

- the tables of docs/results.md are the ones the data renders;
- every figure about a run quoted in the notebooks (English and 中文版), the README and docs/teaching.md carries a
  marker naming its source, and agrees with the data at the precision it is written with;
- a figure changed in the data makes the check fail at every quote of it, in both languages;
- the commands docs/results.md tells a reader to run parse as written (no code edits to reproduce a run).
"""

from __future__ import annotations

import copy
import json
import re
import shlex
from pathlib import Path

import pytest

from course_tools import results
from transformer_course.cli import build_parser

ROOT = Path(__file__).resolve().parent.parent
DATA = results.load_results(ROOT / "docs" / "results.json")
PROSE = [ROOT / "README.md", ROOT / "docs" / "teaching.md"]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb")) + sorted((ROOT / "notebooks" / "zh").glob("*.ipynb"))


def markdown_of(path: Path) -> str:
    """A notebook's markdown cells (one text, cells apart), or a markdown file's text."""
    if path.suffix != ".ipynb":
        return path.read_text(encoding="utf-8")
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return "\n\n".join(
        "".join(c["source"]) if isinstance(c["source"], list) else c["source"]
        for c in cells
        if c["cell_type"] == "markdown"
    )


def where(path: Path) -> str:
    return str(path.relative_to(ROOT))


def test_every_evaluation_holds_its_bleu_figures():
    for name, run in DATA["runs"].items():
        for key, scores in run.get("evaluations", {}).items():
            assert len(key.split("/")) == 3, f"{name}: evaluation key {key!r} is not checkpoint/split/decoding"
            assert any(k in scores for k in ("sacrebleu", "tokenized_bleu")), f"{name}/{key} has no BLEU"


def test_the_tables_of_results_md_are_rendered_from_the_data():
    markdown = (ROOT / "docs" / "results.md").read_text(encoding="utf-8")
    assert len(results.TABLE.findall(markdown)) >= 3, "docs/results.md should hold the generated tables"
    assert results.render_markdown(markdown, DATA) == markdown, (
        "docs/results.md's tables differ from docs/results.json: run `python -m course_tools.results render`"
    )


@pytest.mark.parametrize("path", PROSE + NOTEBOOKS + [ROOT / "docs" / "results.md"], ids=where)
def test_every_marked_figure_agrees_with_the_data(path):
    problems = [p for p in results.check_quotes(markdown_of(path), DATA, where(path)) if "no marker" not in p]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("path", PROSE + NOTEBOOKS, ids=where)
def test_no_run_figure_is_quoted_without_its_marker(path):
    problems = [p for p in results.check_quotes(markdown_of(path), DATA, where(path)) if "no marker" in p]
    assert not problems, "\n".join(problems)


def test_a_changed_figure_fails_at_every_quote_in_both_languages():
    target = "contest-c/best/test/beam4/sacrebleu"
    planted = copy.deepcopy(DATA)
    planted["runs"]["contest-c"]["evaluations"]["best/test/beam4"]["sacrebleu"] = 41.07
    marker = re.compile(r"<!--\s*fig:[^>]*" + re.escape(target) + r"[^>]*-->")  # alone or in a difference
    quoted = {where(p): len(marker.findall(markdown_of(p))) for p in PROSE + NOTEBOOKS}
    assert sum(quoted.values()) >= 4, f"the default's beam-4 figure should be quoted (and marked) in prose: {quoted}"
    assert any(n for p, n in quoted.items() if "/zh/" in p), "the 中文版 quotes it too"
    for path in PROSE + NOTEBOOKS:
        stale = [p for p in results.check_quotes(markdown_of(path), planted, where(path)) if target in p]
        assert len(stale) == quoted[where(path)], f"{where(path)}: {stale}"


def test_check_quotes_reads_the_precision_a_number_is_written_with():
    assert not results.check_quotes("40.2<!--fig:contest-c/best/test/beam4/sacrebleu-->", DATA)
    assert not results.check_quotes("9.6M<!--fig:contest-c/parameters--> parameters", DATA)
    assert not results.check_quotes("2,338<!--fig:contest-c/steps--> steps", DATA)
    assert not results.check_quotes(
        "+1.80<!--fig:contest-c/best/test/beam4/sacrebleu - contest-c/best/test/greedy/sacrebleu-->", DATA
    )
    assert results.check_quotes("40.3<!--fig:contest-c/best/test/beam4/sacrebleu-->", DATA)
    assert results.check_quotes("2,339<!--fig:contest-c/steps-->", DATA)


def test_a_marker_that_names_nothing_says_what_exists():
    (problem,) = results.check_quotes("40.18<!--fig:contest-c/best/test/beam5/sacrebleu-->", DATA, "x")
    assert "no evaluation 'best/test/beam5'" in problem and "best/test/beam4" in problem
    (problem,) = results.check_quotes("1.0<!--fig:no-such-run/steps-->", DATA, "x")
    assert "no run 'no-such-run'" in problem


def test_an_unmarked_run_figure_is_named_with_the_marker_to_write():
    (problem,) = results.check_quotes("the CPU model scores 37.40 with beam 4", DATA, "x")
    assert "37.40<!--fig:multi30k-cpu-words/best/test/beam4/sacrebleu-->" in problem


@pytest.mark.parametrize(
    "quote, path",
    [
        ("the word-level run reaches 37.4 BLEU with beam 4", "multi30k-cpu-words/best/test/beam4/sacrebleu"),
        ("it trains for 45 minutes on two CPU cores", "contest-c/train_minutes"),
        ("the 45-minute run", "contest-c/train_minutes"),
        ("a model of 9.6M parameters", "contest-c/parameters"),
        ("about 9.6 million parameters", "contest-c/parameters"),
        ("it stops after 9.5 epochs", "contest-c/epochs"),
        ("训练 2,338 步", "contest-c/steps"),
        ("检查点有 39.1 MB", "contest-c/checkpoint_mb"),
    ],
)
def test_a_one_decimal_or_unit_quote_of_a_run_figure_needs_its_marker(quote, path):
    problems = results.check_quotes(quote, DATA, "x")
    assert problems and all("no marker" in p for p in problems), problems
    assert any(path in p for p in problems), problems
    number = re.search(r"\d[\d,]*(?:\.\d+)?(?:M| million)?", quote)
    marked = quote[: number.end()] + f"<!--fig:{path}-->" + quote[number.end() :]
    assert not results.check_quotes(marked, DATA, "x"), marked


@pytest.mark.parametrize(
    "text",
    [
        "the paper's big model scores 27.3 BLEU (Table 2)",
        "the big model's 26.4 BLEU on newstest2013 (Table 3)",  # = 26.42 of contest-b2, rounded: the paper's
        "§6.1 reports 26.4 BLEU for the big model on the development set",
        "dropout 0.1, label smoothing ε = 0.1, β₂ = 0.98, α = 0.6",  # hyper-parameters below 1
        "the weights of each query sum to 1.0",  # an identity, whatever figure rounds to 1.0
        "the beam's length penalty α = 1.2",  # a setting: the α a run decoded with, or the one a grid chose
        "train for 10 epochs",  # an integer does not quote 9.5 epochs, which it rounds to
        "grading took 17.0 seconds",  # 17 s is a count: a run quotes it as 17, never 17.0
        "about 9.7 billion parameters",  # a scale word: 9.7e9, not 9.7 epochs
        "layer $\\ell$ reads $i - 2k^\\ell$",  # a formula's k is no thousands suffix
        "see §3.1 and Table 2",  # the number of a section
        "Python 3.10 or newer",
    ],
)
def test_a_paper_figure_a_setting_or_a_formula_is_no_quote(text):
    assert not results.check_quotes(text, DATA, "x")


def test_the_paper_citation_frees_only_its_own_sentence():
    assert results.check_quotes("The paper's 26.4 BLEU (Table 3). Ours: 26.4 BLEU.", DATA, "x")
    assert results.check_quotes("26.4 BLEU", DATA, "x")


def test_a_tables_citation_in_its_header_covers_its_rows_and_only_them():
    table = "| model (Table 3) | BLEU |\n|---|---|\n| big | 26.4 |\n| base | 25.8 |\n| conv | 40.18 |\n"
    assert not results.check_quotes(table, DATA, "x")  # 40.18 is contest-c's too, but this table is the paper's
    assert results.check_quotes("| model | BLEU |\n|---|---|\n| ours | 26.4 |\n", DATA, "x")  # no citation
    assert results.check_quotes(table + "\n| ours | BLEU |\n|---|---|\n| run | 26.4 |\n", DATA, "x")  # another table


def test_figure_reads_runs_and_differences():
    assert results.figure("contest-c/best/test/beam4/sacrebleu", DATA) == 40.18
    assert results.figure("contest-c/steps", DATA) == 2338
    diff = results.figure("contest-c/best/test/beam4/sacrebleu - contest-c/best/test/greedy/sacrebleu", DATA)
    assert diff == pytest.approx(1.80)
    with pytest.raises(KeyError, match="has no number 'nope'"):
        results.figure("contest-c/nope", DATA)


def test_record_evaluation_takes_what_evaluate_json_writes(tmp_path):
    data_file = tmp_path / "results.json"
    data_file.write_text(json.dumps({"schema": 1, "runs": {}}), encoding="utf-8")
    evaluation = tmp_path / "beam4.json"
    evaluation.write_text(
        json.dumps(
            {
                "checkpoint": "runs/x/best.pt",
                "split": "test",
                "beam_size": 4,
                "bleu": 40.1849,
                "signature": "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0",
                "tokenized_bleu": 40.7271,
                "seconds": 45.6,
                "sources": ["a", "b", "c"],
                "references": ["a", "b", "c"],
                "hypotheses": ["A <unk> dog .", "fine", "<unk>"],
            }
        ),
        encoding="utf-8",
    )
    scores = results.record_evaluation("x", "best/test/beam4", evaluation, data_file)
    assert scores["sacrebleu"] == 40.18 and scores["tokenized_bleu"] == 40.73 and scores["unk_outputs"] == 2
    assert results.figure("x/best/test/beam4/seconds", results.load_results(data_file)) == 46
    assert "length_penalty" not in scores  # a report from before evaluate wrote its α: the paper's 0.6
    written = json.loads(evaluation.read_text(encoding="utf-8"))
    evaluation.write_text(json.dumps({**written, "length_penalty": 1.2}), encoding="utf-8")
    assert results.record_evaluation("x", "best-ema/test/beam4", evaluation, data_file)["length_penalty"] == 1.2
    table = results.render_table("x", results.load_results(data_file))
    assert "| `best` | beam 4, α = 0.6 | 40.18 |" in table and "| `best-ema` | beam 4, α = 1.2 | 40.18 |" in table
    evaluation.write_text(json.dumps({**written, "beam_size": 1, "length_penalty": 1.2}), encoding="utf-8")
    assert "length_penalty" not in results.record_evaluation("x", "best/test/greedy", evaluation, data_file)
    with pytest.raises(ValueError, match="checkpoint/split/decoding"):
        results.record_evaluation("x", "beam4", evaluation, data_file)
    bad = tmp_path / "bad.json"
    bad.write_text("{}", encoding="utf-8")
    with pytest.raises(ValueError, match="evaluate --json"):
        results.record_evaluation("x", "best/test/beam4", bad, data_file)


def test_a_split_size_an_evaluation_records_is_no_run_figure():
    # record_evaluation writes how many sentences it scored; "the 1,000 test sentences" quotes the data, not a run
    data = {"runs": {"r": {"evaluations": {"best/test/beam4": {"sacrebleu": 40.02, "sentences": 1000}}}}}
    assert results.check_quotes("scored on all 1,000 sentences of test2016", data, "x") == []
    assert results.check_quotes("it reaches 40.02 on them", data, "x")  # the BLEU beside it still needs a marker
    assert results.figure("r/best/test/beam4/sentences", data) == 1000  # and a marker may still name the size


def test_a_runs_seed_is_a_setting_not_a_run_figure():
    data = {"runs": {"r": {"seed": 1, "steps": 1235, "evaluations": {}}}}
    assert results.check_quotes("a ratio of 1.00 for seed 1", data, "x") == []
    assert results.check_quotes("it ran 1,235 steps", data, "x")  # what the run measured still needs a marker


def test_record_run_takes_what_train_writes_validation_rows_included(tmp_path):
    import torch

    from transformer_course.config import get_preset
    from transformer_course.model import build_model, count_parameters
    from transformer_course.train import save_checkpoint, toy_vocab

    config, vocab = get_preset("toy-copy"), toy_vocab(14)
    model = build_model(config, len(vocab), len(vocab))
    run = tmp_path / "run"
    run.mkdir()
    save_checkpoint(run / "best.pt", model, config, vocab, vocab, step=3)
    rows = [  # as fit logs them: training windows, then at each epoch's end a validation row with no rate
        {"step": 1, "epoch": 1, "loss": 3.0, "lr": 1e-4, "tokens_per_s": 900.0, "val_loss": None, "elapsed_s": 5.0},
        {"step": 2, "epoch": 1, "loss": 2.9, "lr": 2e-4, "tokens_per_s": 1100.0, "val_loss": None, "elapsed_s": 10.0},
        {"step": 2, "epoch": 1, "loss": None, "lr": 2e-4, "tokens_per_s": None, "val_loss": 2.954, "elapsed_s": 11.0},
        {"step": 3, "epoch": 2, "loss": 2.5, "lr": 3e-4, "tokens_per_s": 2000.0, "val_loss": None, "elapsed_s": 126.0},
    ]
    (run / "history.json").write_text(json.dumps(rows), encoding="utf-8")
    data_file = tmp_path / "results.json"
    data_file.write_text(json.dumps({"schema": 1, "runs": {}}), encoding="utf-8")
    entry = results.record_run("x", run, data_file)
    assert entry["tokens_per_s_median"] == 1100 and entry["steps"] == 3 and entry["train_minutes"] == 2.1
    assert entry["val_loss_by_epoch"] == [2.95] and entry["preset"] == "toy-copy"
    assert entry["parameters"] == count_parameters(model) and entry["torch"] == torch.__version__
    assert entry["best_epoch"] == 1
    (run / "history.json").write_text(json.dumps(rows[2:3]), encoding="utf-8")
    with pytest.raises(ValueError, match="no training row"):
        results.record_run("x", run, data_file)


def commands(markdown: str) -> list[list[str]]:
    """Every `python -m transformer_course …` line of the bash blocks (continuations joined), as arguments."""
    found = []
    for block in re.findall(r"```bash\n(.*?)```", markdown, re.DOTALL):
        text = block.replace("\\\n", " ")
        for line in text.splitlines():
            line = line.split(" #")[0].strip()
            match = re.search(r"python -m transformer_course (?!\.)(.*?)(?:\s*[>|&].*)?$", line)
            if match:
                found.append(shlex.split(match[1]))
    return found


def test_every_command_in_results_md_parses_as_written():
    found = commands((ROOT / "docs" / "results.md").read_text(encoding="utf-8"))
    assert len(found) >= 10
    parser = build_parser()
    for args in found:
        try:
            parser.parse_args(args)
        except SystemExit:
            pytest.fail(
                f"docs/results.md tells a reader to run `python -m transformer_course {shlex.join(args)}`, "
                "which the command line refuses"
            )


def test_results_md_holds_no_machine_specific_path():
    markdown = (ROOT / "docs" / "results.md").read_text(encoding="utf-8")
    assert "/" + "work/" not in markdown and "config.PRESETS[" not in markdown, (
        "docs/results.md's commands must run from a fresh clone: no machine paths, no monkeypatched presets"
    )


def test_add_run_and_add_eval_keep_the_seed_and_the_checkpoint_chosen_by_validation(tmp_path, monkeypatch):
    from transformer_course import cli
    from transformer_course.config import get_preset
    from transformer_course.model import build_model
    from transformer_course.train import save_checkpoint, toy_vocab

    config, vocab = get_preset("toy-copy").replace(seed=7), toy_vocab(14)
    run = tmp_path / "run"
    run.mkdir()
    save_checkpoint(run / "best.pt", build_model(config, 14, 14), config, vocab, vocab, step=3)
    row = {"step": 3, "epoch": 1, "loss": 3.0, "lr": 1e-4, "tokens_per_s": 900.0, "val_loss": None, "elapsed_s": 5.0}
    (run / "history.json").write_text(json.dumps([row]), encoding="utf-8")
    (run / "chosen.json").write_text(json.dumps({"chosen": "best-ema", "by": "val_loss", "scores": {}}))
    data_file = tmp_path / "results.json"
    data_file.write_text(json.dumps({"schema": 1, "runs": {}}), encoding="utf-8")
    entry = results.record_run("x", run, data_file)  # the seed from best.pt's config, the choice from chosen.json
    assert (entry["seed"], entry["chosen"]) == (7, "best-ema")
    evaluation = tmp_path / "eval.json"
    evaluation.write_text(json.dumps({"bleu": 40.0, "tokenized_bleu": 41.0, "hypotheses": ["a man ."]}))
    monkeypatch.setattr("course_tools.results.results_path", lambda: data_file)
    argv = ["results", "add-eval", "y", "best-ema/test/beam4", str(evaluation), "--seed", "3", "--chosen", "best-ema"]
    assert cli.main(argv) == 0
    kept = json.loads(data_file.read_text())["runs"]
    assert kept["y"]["seed"] == 3 and kept["y"]["chosen"] == "best-ema"
    assert kept["y"]["evaluations"]["best-ema/test/beam4"]["sacrebleu"] == 40.0
    assert kept["x"]["seed"] == 7  # the other run as it was
    with pytest.raises(ValueError, match="--seed is the run's Config.seed"):
        results.record_evaluation("y", "best/test/beam4", evaluation, data_file, seed=-1)
    with pytest.raises(ValueError, match="--chosen is a checkpoint's label"):
        results.record_evaluation("y", "best/test/beam4", evaluation, data_file, chosen="a b")


def test_the_search_table_has_one_row_per_candidate_run_with_its_chosen_checkpoints_scores():
    def scores(sacre, tok):
        return {"sacrebleu": sacre, "tokenized_bleu": tok, "unk_outputs": 0, "sentences": 1000}

    data = {
        "schema": 1,
        "runs": {
            "search": {"kind": "bleu-search", "candidates": {"a-s1": "dropout 0.3", "b-s1": "not run yet"}},
            "a-s1": {
                "set": ["dropout=0.3", "ema_decay=0.999"],
                "seed": 1,
                "steps": 4321,
                "best_epoch": 17,
                "chosen": "best-ema",
                "evaluations": {
                    "best-ema/test/greedy": scores(41.2, 41.71),
                    "best-ema/test/beam4": scores(42.05, 42.6),
                    "best-ema/val/beam4": scores(43.1, 43.52),  # the column the search ranks by
                    "best/test/beam4": scores(1.0, 1.0),  # not the chosen checkpoint: not in the table
                },
            },
        },
    }
    data["runs"]["a-s1"]["val_loss_by_epoch"] = [5.0, 4.26, 3.7]
    table = results.render_table("search", data).splitlines()
    assert len(table) == 7  # the header, its rule and the one candidate that ran; then its validation losses
    data["runs"]["b-s1"] = {"set": ["dropout=0.5"], "steps": 988, "val_loss_by_epoch": [5.3]}  # stopped early
    assert results.render_table("search", data).splitlines()[3] == (
        "| b-s1 | not run yet | `dropout=0.5` | – | 988 | – | – | – | – | – |"
    )
    del data["runs"]["b-s1"]
    assert table[4:] == [
        "| validation loss after epoch | 1 | 2 | 3 |",
        "|---|---:|---:|---:|",
        "| a-s1 | 5.00 | 4.26 | 3.70 |",
    ]
    assert table[2] == (
        "| a-s1 | dropout 0.3 | `dropout=0.3`, `ema_decay=0.999` | 1 | 4,321 | 17 | `best-ema` | 43.10 / 43.52 "
        "| 41.20 / 41.71 | 42.05 / 42.60 |"
    )


def _seed_run(seed, steps, val, greedy, beam4, chosen="best-ema"):
    def scores(sacre):
        return {"sacrebleu": sacre, "tokenized_bleu": round(sacre + 0.5, 2), "unk_outputs": 0, "sentences": 1000}

    return {
        "seed": seed,
        "steps": steps,
        "best_epoch": 14,
        "parameters": 7581600,
        "chosen": chosen,
        "evaluations": {
            f"{chosen}/val/beam4": scores(val),
            f"{chosen}/test/greedy": scores(greedy),
            f"{chosen}/test/beam4": scores(beam4),
            "averaged-last-5/test/beam4": scores(99.0),  # not chosen: never in the summary
        },
    }


def test_a_seeds_run_computes_its_mean_lowest_and_spread_from_the_chosen_checkpoints():
    data = {
        "schema": 1,
        "runs": {
            "r": {"kind": "seeds", "preset": "multi30k-cpu", "seeds": ["r-s1", "r-s2", "r-s3"]},
            "r-s1": _seed_run(1, 4000, 41.0, 40.0, 41.5),
            "r-s2": _seed_run(2, 4100, 42.0, 40.5, 42.25, chosen="best"),
            "r-s3": _seed_run(3, 3900, 41.5, 39.5, 41.0),
        },
    }
    assert results.figure("r/mean/test/beam4/sacrebleu", data) == pytest.approx(41.58)
    assert results.figure("r/min/test/beam4/sacrebleu", data) == 41.0
    assert results.figure("r/spread/test/beam4/sacrebleu", data) == pytest.approx(1.25)
    assert results.figure("r/mean/test/greedy/tokenized_bleu", data) == pytest.approx(40.5)
    assert results.figure("r/parameters", data) == 7581600
    assert "r/mean/val/beam4/sacrebleu" in results.run_figures(data)
    assert "evaluations" not in data["runs"]["r"]  # computed when read, never stored
    table = results.render_table("r", data).splitlines()
    assert table[3] == "| 2 | 4,100 | 14 | `best` | 42.00 / 42.50 | 40.50 / 41.00 | 42.25 / 42.75 |"
    assert table[5:] == [
        "| mean | | | | 41.50 / 42.00 | 40.00 / 40.50 | 41.58 / 42.08 |",
        "| lowest | | | | 41.00 / 41.50 | 39.50 / 40.00 | 41.00 / 41.50 |",
        "| spread (max − min) | | | | 1.00 / 1.00 | 1.00 / 1.00 | 1.25 / 1.25 |",
    ]
    del data["runs"]["r-s3"]
    with pytest.raises(KeyError, match="r-s3"):
        results.figure("r/mean/test/beam4/sacrebleu", data)


def test_the_length_penalty_table_has_one_row_per_alpha_with_each_seeds_score_and_the_chosen_one_in_bold():
    def grid(s1, s2, mean, tok, ratio=0.9586):
        return {"sacrebleu_r-s1": s1, "sacrebleu_r-s2": s2, "sacrebleu": mean, "tokenized_bleu": tok,
                "ratio": ratio, "seconds": 15}  # fmt: skip

    data = {
        "schema": 1,
        "runs": {
            "r-s1": {"seed": 1},
            "r-s2": {"seed": 2},
            "lp": {
                "kind": "length-penalty",
                "seeds": ["r-s1", "r-s2"],
                "chosen": 1.2,
                "evaluations": {
                    "a0.6/val/beam4": grid(41.0, 40.0, 40.5, 41.0),
                    "a1.2/val/beam4": grid(42, 41, 41.5, 42, ratio=1.0083),
                },
            },
        },
    }
    assert results.render_table("lp", data).splitlines() == [
        "| α | seed 1 | seed 2 | mean (sacre / tok-lc) | output / reference length | brevity penalty | seconds |",
        "|---:|---:|---:|---:|---:|---:|---:|",
        "| 0.6 | 41.00 | 40.00 | 40.50 / 41.00 | 0.959 | 0.958 | 15 |",
        "| **1.2** | 42 | 41 | **41.50 / 42** | 1.008 | 1.000 | 15 |",  # longer than the references: no penalty
    ]
    assert results.figure("lp/a1.2/val/beam4/sacrebleu - lp/a0.6/val/beam4/sacrebleu", data) == 1.0


def test_the_engine_table_has_one_row_per_decoder_with_its_speed_over_ctranslate2s():
    rows = [
        {
            "decoder": "course",
            "beam": 4,
            "seconds": 19.2438,
            "sentences_per_s": 52.0,
            "tokens_per_s": 738,
            "x_ct2_fp32": 0.65,
            "sacrebleu": 40.67,
        },
        {
            "decoder": "ct2 fp32",
            "beam": 4,
            "seconds": 12.48,
            "sentences_per_s": 80.1,
            "tokens_per_s": 1139,
            "x_ct2_fp32": 1.0,
            "sacrebleu": 40.37,
        },
    ]
    data = {"schema": 1, "runs": {"engine": {"kind": "decode-vs-engine", "decoders": rows}}}
    table = results.render_table("engine", data).splitlines()
    assert table[2] == "| course | 4 | 19.24 | 52.0 | 738 | 0.65 | 40.67 |"
    assert table[3] == "| ct2 fp32 | 4 | 12.48 | 80.1 | 1,139 | 1.00 | 40.37 |" and len(table) == 4

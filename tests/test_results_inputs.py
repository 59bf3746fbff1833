"""The results tool on bad input: every way its files can be wrong is one line that names the file, and the quote
check catches a number that is near a run's figure but is not it.

``python -m transformer_course results add-eval | add-run | render | check`` (and ``python -m course_tools.results``)
share the course's one error handler: exit code 1 and ``error: …``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from course_tools import results
from course_tools.results import check_quotes, figure, load_results
from course_tools.results.figures import run_figures, show
from transformer_course import cli

GOOD = {"schema": 1, "runs": {"r": {"steps": 2338, "flag": True, "missing": None, "evaluations": {}}}}


def one_line(capsys) -> str:
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize(
    "content, words",
    [
        (b"", "not valid JSON"),
        (b"\xff\xfe not text", "not UTF-8"),
        (b"[1, 2]", "got a list"),
        (b'{"schema": 1, "runs": {"r": [1]}}', "run 'r' must be an object"),
        (b'{"schema": 1, "runs": {"r": {"evaluations": []}}}', "run 'r' must be an object"),
        (b'{"schema": 1, "runs": {"r": {}, "r": {}}}', "the key 'r' appears twice"),
        (b'{"schema": 2, "runs": {}}', "expected {'schema': 1"),
    ],
)
def test_a_damaged_results_file_is_one_line_naming_it(tmp_path, content, words):
    path = tmp_path / "results.json"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=words) as caught:
        load_results(path)
    assert str(path) in str(caught.value) and "\n" not in str(caught.value)


def test_a_figure_that_is_not_a_number_is_named_as_it_is_written():
    with pytest.raises(KeyError, match="r/flag is true in results.json, not a number"):
        figure("r/flag", GOOD)
    with pytest.raises(KeyError, match="r/missing is null"):
        figure("r/missing", GOOD)


def test_figures_are_shown_as_prose_writes_them():
    assert [show(v) for v in (9633600, 40.18, True, None)] == ["9,633,600", "40.18", "true", "null"]
    data = {"schema": 1, "runs": {"r": {"parameters": 9633600, "evaluations": {}}}}
    (problem,) = check_quotes("9.7M<!--fig:r/parameters--> parameters", data, "x")
    assert "results.json has 9,633,600" in problem


def _equal_figures(number: float, data: dict) -> list[str]:
    return [path for path, value in run_figures(data).items() if round(value, 2) == number]


@pytest.mark.parametrize(
    "text",
    [
        "The contest's `contest-c` reaches 40.21 sacreBLEU with beam 4.",
        "`contest-c` trained for 2,339 steps.",
        "After 2,338<!--fig:contest-c/steps--> steps it reaches 40.21 BLEU.",
    ],
)
def test_a_number_near_a_figure_of_the_run_its_sentence_names_is_flagged(text):
    data = load_results()
    assert not _equal_figures(40.21, data), "40.21 must be near contest-c's 40.18 and equal to no figure"
    problems = check_quotes(text, data, "x")
    assert len(problems) == 1 and "within 1 %" in problems[0] and "contest-c/" in problems[0], problems


def test_a_near_number_about_no_run_or_written_as_a_setting_is_no_quote():
    data = load_results()
    assert not _equal_figures(40.21, data), "40.21 must equal no figure"
    assert check_quotes("Another course reports 40.21 BLEU on this test set.", data, "x") == []
    assert check_quotes("`multi30k-cpu` uses a joint vocabulary of 8,000 pieces.", data, "x") == []


def run_results(argv, monkeypatch, tmp_path, data=GOOD) -> int:
    path = tmp_path / "results.json"
    if data is not None:
        path.write_text(json.dumps(data))
    monkeypatch.setattr("course_tools.results.results_path", lambda: path)
    return cli.main(["results", *map(str, argv)])


def test_check_of_a_missing_or_non_utf8_file_is_one_line(tmp_path, monkeypatch, capsys):
    assert run_results(["check", tmp_path / "nope.md"], monkeypatch, tmp_path) == 1
    assert "nope.md does not exist" in one_line(capsys)
    (tmp_path / "bad.md").write_bytes(b"\xff\xfe")
    assert run_results(["check", tmp_path / "bad.md"], monkeypatch, tmp_path) == 1
    assert "is not UTF-8 text" in one_line(capsys)


def test_add_eval_on_bad_input_is_one_line(tmp_path, monkeypatch, capsys):
    cases = {
        "missing.json": None,
        "list.json": [1],
        "text.json": "{bleu",
        "null.json": {"bleu": None, "tokenized_bleu": 1.0, "hypotheses": []},
        "hyps.json": {"bleu": 1.0, "tokenized_bleu": 1.0, "hypotheses": [1, 2]},
    }
    for name, content in cases.items():
        if content is not None:
            (tmp_path / name).write_text(content if isinstance(content, str) else json.dumps(content))
        assert run_results(["add-eval", "r", "best/test/beam4", tmp_path / name], monkeypatch, tmp_path) == 1, name
        assert name in one_line(capsys)


def test_add_run_on_a_folder_without_a_run_is_one_line(tmp_path, monkeypatch, capsys):
    (tmp_path / "run").mkdir()
    assert run_results(["add-run", "r", tmp_path / "run"], monkeypatch, tmp_path) == 1
    assert "history.json does not exist" in one_line(capsys)
    (tmp_path / "run" / "history.json").write_text('{"not": "a list"}')
    assert run_results(["add-run", "r", tmp_path / "run"], monkeypatch, tmp_path) == 1
    assert "not a JSON list" in one_line(capsys)
    (tmp_path / "run" / "history.json").write_text('[{"tokens_per_s": 5, "step": null, "elapsed_s": 3}]')
    assert run_results(["add-run", "r", tmp_path / "run"], monkeypatch, tmp_path) == 1
    assert "'step' is null" in one_line(capsys)


def test_render_naming_an_unknown_run_is_one_line(tmp_path, monkeypatch, capsys):
    (tmp_path / "results.md").write_text("<!-- results:table nobody -->\n<!-- /results:table -->\n")
    assert run_results(["render"], monkeypatch, tmp_path) == 1
    assert "names the run 'nobody'" in one_line(capsys)


def test_a_figure_path_that_names_nothing_is_one_line_not_a_traceback(tmp_path, monkeypatch, capsys):
    (tmp_path / "a.md").write_text("It took 12.5<!--fig:nobody/train_minutes--> min.\n")
    assert run_results(["check", tmp_path / "a.md"], monkeypatch, tmp_path) == 1
    assert "no run 'nobody'" in capsys.readouterr().out


def test_the_results_module_runs_with_the_same_handler(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr("course_tools.results.results_path", lambda: tmp_path / "absent.json")
    assert results.main(["render"]) == 1
    assert "does not exist" in one_line(capsys)
    assert Path(results.__file__).parent.name == "results"

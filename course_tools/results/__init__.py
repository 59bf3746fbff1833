"""Measured results: the tables of ``docs/results.md``, and the commands that record a measurement.

The data is ``docs/results.json`` (:mod:`.figures`: a figure by its path, ``contest-c/steps`` is 2338); prose
quotes a figure with a marker that :mod:`.quotes` checks (``40.18<!--fig:contest-c/best/test/beam4/sacrebleu-->``).
This package renders docs/results.md's tables from the data (:func:`render_table`; tests/test_results.py checks
that the file holds the ones it writes) and writes the data: ``python -m course_tools.results add-eval RUN
KEY EVAL.json`` (the JSON of ``evaluate --json``), ``add-run RUN RUN_FOLDER`` (history.json and best.pt; both
take ``--seed N`` and ``--chosen LABEL``, the seed of the run and the checkpoint ``choose`` picked by validation),
``render`` (the tables of docs/results.md) and ``check FILE…`` (every stale or unmarked quote).
"""

from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path

from transformer_course.files import atomic_write_text

from .figures import SCHEMA, figure, load_results, results_path, run_figures, seed_summary
from .quotes import QUOTE, check_quotes

__all__ = [
    "QUOTE",
    "SCHEMA",
    "check_quotes",
    "figure",
    "load_results",
    "main",
    "record_evaluation",
    "record_figures",
    "record_run",
    "render_markdown",
    "render_table",
    "results_path",
    "run_figures",
]

TABLE = re.compile(r"<!-- results:table (?P<run>[\w.-]+) -->\n(?P<body>.*?)<!-- /results:table -->", re.DOTALL)
SCORE_FIELDS = ("sacrebleu", "tokenized_bleu", "unk_outputs", "seconds")
DECODINGS = {"greedy": "greedy", "beam4": "beam 4"}


# ---- the tables of docs/results.md --------------------------------------------------------------------------


def _fmt(value, digits: int = 2) -> str:
    if value is None:
        return "–"
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:.{digits}f}"


def render_table(run_name: str, data: dict) -> str:
    """The BLEU table of one run: one row per (checkpoint, decoding) scored on test, best first; for a run of kind
    ``lm-switches``, the language model's perplexity per switch (:func:`render_lm_switches`)."""
    run = data["runs"][run_name]
    if run.get("kind") == "lm-switches":
        return render_lm_switches(run_name, data)
    if run.get("kind") == "bleu-search":
        return render_bleu_search(run_name, data)
    if run.get("kind") == "decode-vs-engine":
        return render_decode_vs_engine(run_name, data)
    if run.get("kind") == "seeds":
        return render_seeds(run_name, data)
    if run.get("kind") == "length-penalty":
        return render_length_penalty(run_name, data)
    rows = [
        "| checkpoint | decoding | sacreBLEU (detokenized, cased) | tokenized lowercase BLEU | outputs with `<unk>` "
        "| time for 1,000 sentences |",
        "|---|---|---:|---:|---:|---:|",
    ]
    labels, seen = run.get("checkpoint_labels", {}), set()
    for key, scores in run["evaluations"].items():
        checkpoint, split, decoding = key.split("/")
        if split != "test":
            continue
        label = labels.get(checkpoint, f"`{checkpoint}`")
        if checkpoint in seen and checkpoint == "best":
            label = "`best.pt`"  # the details (step, epoch) once, on the checkpoint's first row
        seen.add(checkpoint)
        seconds = scores.get("seconds")
        rows.append(
            f"| {label} | {_decoding(decoding, scores)} | {_fmt(scores['sacrebleu'])} | "
            f"{_fmt(scores['tokenized_bleu'])} | {_fmt(scores.get('unk_outputs'))} | "
            f"{'–' if seconds is None else f'{seconds:.0f} s'} |"
        )
    return "\n".join(rows) + "\n"


def _decoding(decoding: str, scores: dict) -> str:
    """How an evaluation decoded: "greedy", or "beam 4, α = 0.6" with the length penalty it used (recorded since
    `evaluate` writes it; the paper's 0.6, every run's α before)."""
    if decoding.startswith("beam"):
        return f"{DECODINGS.get(decoding, decoding)}, α = {scores.get('length_penalty', 0.6):g}"
    return DECODINGS.get(decoding, decoding)


def render_length_penalty(run_name: str, data: dict) -> str:
    """The beam's length penalty α chosen on validation (a run of kind ``length-penalty``): for each α of the grid
    (its evaluations, ``aALPHA/val/beam4``), each seed's sacreBLEU (the checkpoint the seed chose), their mean
    (sacre / tok-lc), the output's length over the references' (mean), BLEU's brevity penalty at that ratio,
    exp(1 − 1 / ratio) below 1, and the seconds per decoding (mean); the chosen α in bold."""
    run = data["runs"][run_name]
    seeds = run["seeds"]
    rows = [
        "| α | "
        + " | ".join(f"seed {data['runs'][label]['seed']}" for label in seeds)
        + " | mean (sacre / tok-lc) | output / reference length | brevity penalty | seconds |",
        "|---:|" + "---:|" * (len(seeds) + 4),
    ]
    for key, scores in run["evaluations"].items():
        alpha, ratio = float(key.split("/")[0][1:]), scores["ratio"]
        bold = "**" if alpha == run["chosen"] else ""
        rows.append(
            f"| {bold}{alpha:g}{bold} | "
            + " | ".join(_fmt(scores[f"sacrebleu_{label}"]) for label in seeds)
            + f" | {bold}{_fmt(scores['sacrebleu'])} / {_fmt(scores['tokenized_bleu'])}{bold} | "
            f"{_fmt(ratio, 3)} | {_fmt(min(1.0, math.exp(1 - 1 / ratio)), 3)} | {scores['seconds']} |"
        )
    return "\n".join(rows) + "\n"


def render_lm_switches(run_name: str, data: dict) -> str:
    """The switch table of a language model (benchmarks/gpt_switches.py): one row per switch with its held-out
    (test) perplexity for each seed, their mean and spread, the validation mean, the parameters and the wall time
    of one run; then the unigram and bigram baselines. The rows are the runs ``RUN-SWITCH-seedN``."""
    summary = data["runs"][run_name]
    seeds = summary.get("seeds", [])
    rows = [
        "| model | " + " | ".join(f"test perplexity, seed {s}" for s in seeds) + " | mean | spread "
        "| validation (mean) | parameters | wall time of a run |",
        "|---|" + "---:|" * (len(seeds) + 5),
    ]
    for switch, what in summary.get("switches", {}).items():
        runs = [data["runs"].get(f"{run_name}-{switch}-seed{s}") for s in seeds]
        if not all(runs):
            continue  # a switch not (yet) measured for every seed
        tests = [r["test_perplexity"] for r in runs]
        valids = [r["valid_perplexity"] for r in runs]
        wall = sum(r["wall_seconds"] for r in runs) / len(runs)
        rows.append(
            f"| {switch} ({what}) | "
            + " | ".join(_fmt(t) for t in tests)
            + f" | {_fmt(round(sum(tests) / len(tests), 2))} | "
            f"{_fmt(round(max(tests) - min(tests), 2))} | {_fmt(round(sum(valids) / len(valids), 2))} | "
            f"{_fmt(runs[0]['parameters'])} | "
            f"{wall:.0f} s |"
        )
    for name in ("unigram", "bigram"):
        if f"{name}_test_perplexity" in summary:
            k = summary[f"{name}_k"]
            rows.append(
                f"| {name} counts, add-k smoothing (k = {k}, chosen on validation) | "
                + " | ".join("" for _ in seeds)
                + f" | {_fmt(summary[f'{name}_test_perplexity'])} | | {_fmt(summary[f'{name}_valid_perplexity'])} | | |"
            )
    return "\n".join(rows) + "\n"


def _scores(run: dict, decoding: str, split: str = "test") -> str:
    """``sacre / tok`` of the run's chosen checkpoint on ``split`` with ``decoding``, or – where it was not scored."""
    scores = run.get("evaluations", {}).get(f"{run.get('chosen', 'best')}/{split}/{decoding}")
    return "–" if scores is None else f"{_fmt(scores['sacrebleu'])} / {_fmt(scores['tokenized_bleu'])}"


def render_seeds(run_name: str, data: dict) -> str:
    """One recipe trained with several seeds (a run of kind ``seeds``, :func:`.figures.seed_summary`): one row per
    seed (steps, best epoch, the checkpoint chosen by validation and its BLEU on validation and test), then their
    mean, lowest and spread."""
    summary = seed_summary(run_name, data)
    rows = [
        "| seed | steps | best epoch | chosen by validation | validation beam 4 (sacre / tok-lc) "
        "| test greedy (sacre / tok-lc) | test beam 4 (sacre / tok-lc) |",
        "|---:|---:|---:|---|---:|---:|---:|",
    ]
    for label in summary["seeds"]:
        run = data["runs"][label]
        rows.append(
            f"| {_fmt(run.get('seed'))} | {_fmt(run.get('steps'))} | {_fmt(run.get('best_epoch'))} | "
            f"`{run['chosen']}` | {_scores(run, 'beam4', 'val')} | {_scores(run, 'greedy')} | {_scores(run, 'beam4')} |"
        )
    for stat in ("mean", "min", "spread"):
        name = {"min": "lowest", "spread": "spread (max − min)"}.get(stat, stat)
        cells = [
            _scores({"chosen": stat, **summary}, d, split)
            for split, d in (("val", "beam4"), ("test", "greedy"), ("test", "beam4"))
        ]
        rows.append(f"| {name} | | | | " + " | ".join(cells) + " |")
    return "\n".join(rows) + "\n"


def render_bleu_search(run_name: str, data: dict) -> str:
    """The search for a better recipe (benchmarks/bleu_search.py): one row per candidate run named in the summary's
    ``candidates`` (label → the idea it tries), its settings against the preset, seed, steps, best epoch, the
    checkpoint chosen by validation and that checkpoint's test BLEU, greedy and beam 4 (sacreBLEU / tokenized
    lowercase). A candidate not yet run is left out."""
    summary = data["runs"][run_name]
    rows = [
        "| candidate | idea | settings (`--set`) | seed | steps | best epoch | chosen by validation "
        "| validation beam 4 (sacre / tok-lc) | test greedy (sacre / tok-lc) | test beam 4 (sacre / tok-lc) |",
        "|---|---|---|---:|---:|---:|---|---:|---:|---:|",
    ]
    for label, idea in summary.get("candidates", {}).items():
        run = data["runs"].get(label)
        if run is None:
            continue
        settings = ", ".join(f"`{s}`" for s in run.get("set", [])) or "the preset as it was when measured"
        chosen = run.get("chosen", "best" if run.get("evaluations") else None)  # a run stopped early chose nothing
        chosen = "–" if chosen is None else f"`{chosen}`"
        rows.append(
            f"| {label} | {idea} | {settings} | {_fmt(run.get('seed'))} | {_fmt(run.get('steps'))} | "
            f"{_fmt(run.get('best_epoch'))} | {chosen} | {_scores(run, 'beam4', 'val')} | {_scores(run, 'greedy')} | "
            f"{_scores(run, 'beam4')} |"
        )
    curves = {
        label: data["runs"].get(label, {}).get("val_loss_by_epoch", []) for label in summary.get("candidates", {})
    }
    curves = {label: losses for label, losses in curves.items() if losses}
    if curves:  # the validation loss after each epoch: where each candidate stands at the same step
        epochs = max(map(len, curves.values()))
        rows += ["", "| validation loss after epoch | " + " | ".join(map(str, range(1, epochs + 1))) + " |"]
        rows.append("|---|" + "---:|" * epochs)
        for label, losses in curves.items():
            cells = [_fmt(float(x)) for x in losses] + [""] * (epochs - len(losses))
            rows.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(rows) + "\n"


def render_decode_vs_engine(run_name: str, data: dict) -> str:
    """The course's decoders beside CTranslate2 (benchmarks/decode_vs_engine.py ``--record``): one row per decoder
    and beam, with its speed, its speed over CTranslate2 fp32's at the same beam, and its sacreBLEU."""
    rows = [
        "| decoder | beam | seconds | sentences/s | tokens/s | × CTranslate2 fp32 | sacreBLEU |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for row in data["runs"][run_name]["decoders"]:
        rows.append(
            f"| {row['decoder']} | {row['beam']} | {_fmt(row['seconds'])} | {_fmt(float(row['sentences_per_s']), 1)} | "
            f"{_fmt(row['tokens_per_s'])} | {_fmt(float(row['x_ct2_fp32']))} | {_fmt(float(row['sacrebleu']))} |"
        )
    return "\n".join(rows) + "\n"


def render_markdown(text: str, data: dict) -> str:
    """``text`` with every ``<!-- results:table RUN -->…<!-- /results:table -->`` block rewritten from the data."""

    def table(match: re.Match) -> str:
        if match["run"] not in data["runs"]:
            raise ValueError(
                f"a table names the run {match['run']!r}, which results.json does not hold; it holds "
                f"{', '.join(sorted(data['runs']))}"
            )
        return f"<!-- results:table {match['run']} -->\n{render_table(match['run'], data)}<!-- /results:table -->"

    return TABLE.sub(table, text)


# ---- recording a measurement --------------------------------------------------------------------------------


def _read_text(path: str | Path, what: str) -> str:
    """The UTF-8 text of ``path``; a missing, unreadable or non-UTF-8 file is one line naming it and ``what`` it is."""
    path = Path(path)
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FileNotFoundError(f"{path} does not exist: give {what}") from None
    except IsADirectoryError:
        raise ValueError(f"{path} is a folder: give {what}") from None
    except UnicodeDecodeError as error:
        raise ValueError(f"{path} is not UTF-8 text ({error.reason} at byte {error.start}): give {what}") from None


def _read_json(path: str | Path, what: str, shape: type = dict):
    try:
        value = json.loads(_read_text(path, what))
    except json.JSONDecodeError as error:
        raise ValueError(f"{path} is not valid JSON ({error}): give {what}") from None
    if not isinstance(value, shape):
        raise ValueError(f"{path} holds {type(value).__name__}, not a JSON {shape.__name__}: give {what}")
    return value


def _field(source: dict, key: str, where, kinds=(int, float)):
    value = source.get(key)
    if isinstance(value, bool) or not isinstance(value, kinds):
        raise ValueError(f"{where}: {key!r} is {json.dumps(value)}, expected {' or '.join(k.__name__ for k in kinds)}")
    return value


def _write(data: dict, path: Path) -> None:
    atomic_write_text(path, json.dumps(data, indent=1, ensure_ascii=False) + "\n")


def _seed_and_choice(entry: dict, seed, chosen) -> None:
    """Keep the run's seed and the label of the checkpoint chosen by validation (``choose``) on its entry."""
    if seed is not None:
        if isinstance(seed, str) and seed.isdigit():
            seed = int(seed)
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ValueError(f"--seed is the run's Config.seed, a whole number >= 0, got {seed!r}")
        entry["seed"] = seed
    if chosen is not None:
        if not isinstance(chosen, str) or not re.fullmatch(r"[\w.-]+", chosen):
            raise ValueError(
                f"--chosen is a checkpoint's label such as best, best-ema or averaged-last-5, got {chosen!r}"
            )
        entry["chosen"] = chosen


def record_evaluation(
    run: str,
    key: str,
    evaluation_json: str | Path,
    path: str | Path | None = None,
    seed: int | None = None,
    chosen: str | None = None,
) -> dict:
    """Add (or replace) ``run``'s evaluation ``key`` (``best/test/beam4``) from an ``evaluate --json`` file;
    ``seed`` and ``chosen`` (the label ``choose`` recorded), when given, are kept on the run."""
    path = Path(path) if path is not None else results_path()
    if len(key.split("/")) != 3:
        raise ValueError(f"key {key!r}: write checkpoint/split/decoding, e.g. best/test/beam4")
    source = _read_json(evaluation_json, "the JSON file `evaluate --json` wrote")
    missing = [k for k in ("bleu", "tokenized_bleu", "hypotheses") if k not in source]
    if missing:
        raise ValueError(f"{evaluation_json} has no {', '.join(missing)}: write it with `evaluate --json`")
    hypotheses = _field(source, "hypotheses", evaluation_json, (list,))
    if not all(isinstance(h, str) for h in hypotheses):
        raise ValueError(f"{evaluation_json}: 'hypotheses' must be a list of translations (strings)")
    data = load_results(path)
    scores = {
        "sacrebleu": round(_field(source, "bleu", evaluation_json), 2),
        "tokenized_bleu": round(_field(source, "tokenized_bleu", evaluation_json), 2),
        "unk_outputs": sum("<unk>" in h for h in hypotheses),
        "sentences": len(hypotheses),
        "signature": source.get("signature"),
    }
    if source.get("seconds") is not None:
        scores["seconds"] = round(_field(source, "seconds", evaluation_json))
    beam = source.get("beam_size")
    if isinstance(beam, int) and beam > 1 and source.get("length_penalty") is not None:  # the α the beam used
        scores["length_penalty"] = _field(source, "length_penalty", evaluation_json)
    entry = data["runs"].setdefault(run, {})
    _seed_and_choice(entry, seed, chosen)
    entry.setdefault("evaluations", {})[key] = scores
    _write(data, path)
    return scores


def record_figures(run: str, figures: dict, path: str | Path | None = None) -> dict:
    """Add (or update) ``run``'s fields from ``figures`` (a benchmark's measurements: numbers, strings, lists of
    them, a mapping of names); returns the run's entry."""
    path = Path(path) if path is not None else results_path()
    if not isinstance(run, str) or not re.fullmatch(r"[\w.-]+", run):
        raise ValueError(f"a run's name is letters, digits, '.', '-' and '_', got {run!r}")
    for key, value in figures.items():
        if isinstance(value, float) and value != value:
            raise ValueError(f"{run}/{key} is NaN: record a measured figure")
    data = load_results(path)
    data["runs"].setdefault(run, {}).update(figures)
    _write(data, path)
    return data["runs"][run]


def record_run(
    run: str, folder: str | Path, path: str | Path | None = None, seed: int | None = None, chosen: str | None = None
) -> dict:
    """Add (or update) ``run``'s training figures from its run folder: steps, epochs, minutes of training, median
    tokens/s, validation loss per epoch (history.json), the parameter count and configuration (best.pt), the seed
    (``seed``, else best.pt's config's) and the checkpoint chosen by validation (``chosen``, else the folder's
    chosen.json when ``choose`` wrote one)."""
    import statistics

    import torch

    from transformer_course.checkpoint import load_checkpoint
    from transformer_course.model import count_parameters
    from transformer_course.train.choose import chosen_label

    path = Path(path) if path is not None else results_path()
    folder = Path(folder)
    history = _read_json(folder / "history.json", "a run folder written by train (its history.json)", list)
    if not all(isinstance(r, dict) for r in history):
        raise ValueError(f"{folder}/history.json must be a list of row objects, as train writes it")
    rates = [r["tokens_per_s"] for r in history if r.get("tokens_per_s") is not None]  # validation rows: None
    if not rates:
        raise ValueError(f"{folder}/history.json holds no training row: the run logged no step")
    for key in ("step", "elapsed_s"):
        _field(history[-1], key, f"{folder}/history.json's last row")
    checkpoint = load_checkpoint(folder / "best.pt", map_location=torch.device("cpu"))
    data = load_results(path)
    entry = data["runs"].setdefault(run, {})
    entry.update(
        preset=checkpoint.config.name,
        steps=history[-1]["step"],
        train_minutes=round(history[-1]["elapsed_s"] / 60, 1),
        tokens_per_s_median=round(statistics.median(rates)),
        parameters=count_parameters(checkpoint.model),
        val_loss_by_epoch=[round(r["val_loss"], 2) for r in history if r.get("val_loss") is not None],
        torch=torch.__version__,
    )
    validations = [r for r in history if r.get("val_loss") is not None and r.get("epoch") is not None]
    if validations:  # best.pt's epoch: the first validation with the lowest loss, as train keeps it
        entry["best_epoch"] = min(validations, key=lambda r: r["val_loss"])["epoch"]
    chosen = chosen if chosen is not None else chosen_label(folder)
    _seed_and_choice(entry, checkpoint.config.seed if seed is None else seed, chosen)
    _write(data, path)
    return entry


def main(argv: list[str] | None = None, prog: str = "python -m course_tools.results") -> int:
    """PROG add-eval RUN KEY EVAL.json [--seed N] [--chosen LABEL] | add-run RUN FOLDER [--seed N] [--chosen LABEL]
    | render | check FILE…"""
    from transformer_course.cli import run_guarded

    argv = sys.argv[1:] if argv is None else list(argv)
    usage = main.__doc__.replace("PROG", prog)
    if not argv or argv[0] not in ("add-eval", "add-run", "render", "check"):
        print(usage)
        return 2
    command, rest = argv[0], argv[1:]
    kept = {}  # add-eval / add-run: --seed N, --chosen LABEL
    while command in ("add-eval", "add-run") and len(rest) >= 2 and rest[-2] in ("--seed", "--chosen"):
        kept[rest[-2][2:]] = rest[-1]
        rest = rest[:-2]
    if (command, len(rest)) not in (("add-eval", 3), ("add-run", 2), ("render", 0)) and not (
        command == "check" and rest
    ):
        print(usage)
        return 2
    status = []

    def run() -> None:
        if command == "add-eval":
            print(json.dumps(record_evaluation(*rest, **kept), indent=1))
        elif command == "add-run":
            print(json.dumps(record_run(*rest, **kept), indent=1, default=str))
        elif command == "render":
            markdown = results_path().with_suffix(".md")
            text = _read_text(markdown, "docs/results.md, the page of the tables")
            atomic_write_text(markdown, render_markdown(text, load_results()))
            print(f"rewrote the tables of {markdown}")
        else:
            data = load_results()
            problems = [p for f in rest for p in check_quotes(_read_text(f, "a text file to check"), data, f)]
            print("\n".join(problems) or "every quoted figure agrees with results.json")
            status.append(1 if problems else 0)

    def guarded() -> None:
        try:
            run()
        except KeyError as error:  # a figure or run the data lacks: the message says what exists
            raise ValueError(error.args[0] if error.args else str(error)) from None

    return run_guarded(guarded) or (status[0] if status else 0)

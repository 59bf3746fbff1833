"""benchmarks/bleu_search.py end to end with a tiny model on the first pairs of Multi30k: train as the command
line does, average, choose by validation, evaluate the chosen checkpoint, one results.json row per candidate."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from transformer_course.data import MIRROR_ENV

from helpers import MULTI30K, needs_multi30k

REPO = Path(__file__).resolve().parent.parent
TINY = ["N=1", "d_model=32", "d_ff=64", "h=2", "subword_vocab=300", "tokens_per_batch=400", "warmup=10"]


@pytest.mark.slow
@needs_multi30k
def test_the_search_trains_chooses_by_validation_and_prints_a_results_row_per_candidate(tmp_path, monkeypatch):
    candidates = [
        {"label": "plain-s1", "seed": 1, "set": TINY, "max_minutes": 5},
        {"label": "ema-s2", "seed": 2, "set": [*TINY, "ema_decay=0.9"], "average": ["--around-best", "3"]},
    ]
    (tmp_path / "search.json").write_text(json.dumps(candidates))
    argv = ["--candidates", tmp_path / "search.json", "--runs", tmp_path / "runs", "--root", tmp_path / "data"]
    argv += ["--limit", 300, "--eval-limit", 20, "--epochs", 3, "--threads", 1, "--json", tmp_path / "rows.json"]
    env_python = [sys.executable, str(REPO / "benchmarks" / "bleu_search.py"), *map(str, argv)]
    monkeypatch.setenv(MIRROR_ENV, str(MULTI30K))
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    done = subprocess.run(env_python, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    printed = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert [list(row) for row in printed] == [["plain-s1"], ["ema-s2"]]
    rows = json.loads((tmp_path / "rows.json").read_text())
    for label, seed in (("plain-s1", 1), ("ema-s2", 2)):
        row, run = rows[label], tmp_path / "runs" / label
        chosen = json.loads((run / "chosen.json").read_text())
        assert row["seed"] == seed and row["chosen"] == chosen["chosen"]
        assert load_seed(run / chosen["checkpoint"]) == seed  # trained with --set seed=SEED
        assert set(row["evaluations"]) == {f"{chosen['chosen']}/test/greedy", f"{chosen['chosen']}/test/beam4"}
        for scores in row["evaluations"].values():
            assert scores["sentences"] == 20 and 0 <= scores["sacrebleu"] <= 100 and "tokenized_bleu" in scores
        assert row["preset"] == "multi30k-cpu" and row["steps"] > 0 and row["val_loss_by_epoch"]
    assert set(json.loads((tmp_path / "runs" / "ema-s2" / "chosen.json").read_text())["scores"]) == {
        "best",
        "best-ema",
        "averaged-around-best-3",
    }
    log = (tmp_path / "runs" / "ema-s2" / "search.log").read_text()
    assert "train --preset multi30k-cpu --set N=1" in log and "--set seed=2 --max-minutes 45.0" in log


def load_seed(path: Path) -> int:
    from transformer_course.checkpoint import read_checkpoint

    return read_checkpoint(path)["config"]["seed"]

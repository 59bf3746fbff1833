"""The GPU path, prepared without a GPU: the multi30k-base recipe, and benchmarks/gpu_check.sh rehearsed end to end
on the CPU at a tiny size (notebook 11 in fast mode, the command line on a tiny multi30k-base, the rows printed)."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from transformer_course.config import get_preset
from transformer_course.model import build_model, count_parameters
from transformer_course.train.schedule import noam_peak

REPO = Path(__file__).resolve().parent.parent


def test_the_gpu_recipe_is_the_papers_base_model_with_what_the_cpu_contest_and_small_corpora_found():
    base, cpu = get_preset("multi30k-base"), get_preset("multi30k-cpu")
    assert (base.N, base.d_model, base.d_ff, base.h) == (6, 512, 2048, 8)  # Table 3, base
    assert (base.tokenizer, base.shared_vocab, base.subword_vocab) == (cpu.tokenizer, True, cpu.subword_vocab)
    assert base.tie_embeddings == cpu.tie_embeddings == "decoder"  # three-way tying stalled (docs/results.md)
    assert base.ema_decay == cpu.ema_decay > 0  # the CPU search's EMA of the weights (docs/results.md)
    assert base.word_dropout == cpu.word_dropout == 0.1  # and its word dropout, kept after three seeds
    assert base.dropout == 0.3 and base.label_smoothing == 0.1  # fairseq transformer_iwslt_de_en
    assert noam_peak(base.d_model, base.warmup, base.lr_factor) == pytest.approx(5e-4)  # fairseq's peak rate
    assert base.schedule == "budget" and base.tokens_per_batch == 8000 and base.validate_every == 5


def test_the_gpu_recipe_has_about_48_million_parameters_on_the_shared_subword_vocabulary():
    base = get_preset("multi30k-base")
    with torch.device("meta"):  # shapes only
        model = build_model(base, base.subword_vocab, base.subword_vocab)
    # 6 + 6 layers of d_model 512 (44,138,496 with the final norms), the source embedding and the tied target
    # embedding = output layer (4,000 × 512 each), and the output layer's bias
    assert count_parameters(model) == 48_238_496 == 44_138_496 + 2 * 4000 * 512 + 4000


ROW = re.compile(
    r"^\| (notebook 11 \(multi30k-fast\)|train --preset multi30k-base --max-minutes [\d.]+) \| cpu \| (.+)\|$"
)


@pytest.mark.slow
@pytest.mark.notebooks
def test_gpu_check_rehearses_end_to_end_on_the_cpu_and_prints_the_results_rows(tmp_path):
    env = {**os.environ, "GPU_CHECK_TINY": "1", "GPU_CHECK_LIMIT_S": "1500", "PYTHON": sys.executable}
    env["MPLCONFIGDIR"] = str(tmp_path / "mpl")
    root = os.environ.get("TC_DATA_MIRROR") and tmp_path / "data"
    args = ["--out", str(tmp_path / "out")] + (["--root", str(root)] if root else [])
    mirror = Path(os.environ.get("TC_DATA_MIRROR") or "/nonexistent")
    if mirror.is_dir():  # as on an offline GPU machine: Multi30k from the carried folder, not from the mirror
        (tmp_path / "carried" / "wheels").mkdir(parents=True)  # this venv has every package: no wheel to carry
        shutil.copytree(mirror, tmp_path / "carried" / "multi30k")
        env["TC_DATA_MIRROR"] = str(tmp_path / "no-such-mirror")
        args += ["--carried", str(tmp_path / "carried")]
    result = subprocess.run(
        ["bash", str(REPO / "benchmarks" / "gpu_check.sh"), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=1600,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    if mirror.is_dir():
        assert f"Multi30k from {tmp_path / 'carried' / 'multi30k'}" in result.stdout
    rows = [m for line in result.stdout.splitlines() if (m := ROW.match(line))]
    assert [m.group(1).split(" (")[0].split(" --max")[0] for m in rows][-2:] == [
        "notebook 11",
        "train --preset multi30k-base",
    ]
    for m in rows[-2:]:  # steps, steps/s, tokens/s, peak memory, greedy, beam 4, scored
        cells = [c.strip() for c in m.group(2).split("|")]
        assert re.fullmatch(r"[\d,]+ in [\d.]+ min", cells[0]) and float(cells[1]) > 0
        assert re.fullmatch(r"[\d.]+ GiB \(process RSS\)", cells[3])
        assert 0 <= float(cells[4]) <= 100 and 0 <= float(cells[5]) <= 100
    figures = json.loads((tmp_path / "out" / "gpu_check.json").read_text())
    assert figures["notebook"]["steps"] == 30 and figures["cli"]["steps"] == 12  # fast mode; --max-steps 12
    assert figures["notebook"]["checkpoint"] == "last.pt" and figures["cli"]["checkpoint"] == "best.pt"


@pytest.mark.parametrize(
    "script, args, message",
    [
        ("gpu_check.sh", ["--carried", "/nonexistent"], "--carried needs the folder benchmarks/gpu_carry.sh packs"),
        ("gpu_check.sh", ["--carried"], "--carried needs the folder benchmarks/gpu_carry.sh packs"),
        ("gpu_carry.sh", ["/nonexistent"], "/nonexistent/train.de.gz is missing: pass the folder that holds"),
    ],
)
def test_the_gpu_scripts_refuse_a_wrong_folder_in_one_line(tmp_path, script, args, message):
    result = subprocess.run(
        ["bash", str(REPO / "benchmarks" / script), *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
        env={**os.environ, "PYTHON": sys.executable},
    )
    said = (result.stdout + result.stderr).strip()
    assert result.returncode == 2 and "\n" not in said and message in said, said


def test_gpu_carry_packs_a_corrupt_multi30k_copy_never(tmp_path):
    mirror = Path(os.environ.get("TC_DATA_MIRROR") or "/nonexistent")
    if not mirror.is_dir():
        pytest.skip("needs TC_DATA_MIRROR: a local folder with Multi30k's six files")
    shutil.copytree(mirror, tmp_path / "m")
    (tmp_path / "m" / "val.en.gz").write_bytes(b"not the file")
    result = subprocess.run(
        ["bash", str(REPO / "benchmarks" / "gpu_carry.sh"), str(tmp_path / "m")],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHON": sys.executable},
    )
    said = (result.stdout + result.stderr).strip()
    assert result.returncode == 2 and "\n" not in said, said
    assert said.startswith("gpu_carry: val.en.gz in ") and said.endswith("checksums: use an intact copy"), said
    assert not (REPO / ".gpu").exists() or (REPO / ".gpu" / "multi30k" / "val.en.gz").read_bytes() != b"not the file"

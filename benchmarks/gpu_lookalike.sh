#!/usr/bin/env bash
# The GPU machine's Python, copied onto this CPU, to rehearse the carried check before GPU time is spent:
# a CPython 3.12 venv with the image's torch and the image's packages the course touches (benchmarks/gpu_image.txt)
# and nothing of the course's own requirements; then what the GPU machine runs, with --carried .gpu, at the tiny
# size, and the collection of tests/test_sync.py (stage 1 on the GPU). A package the carry lacks fails here.
#   bash benchmarks/gpu_lookalike.sh [VENV]   # default /tmp/gpu-lookalike; PyPI: torch's CUDA build, about 5 GB
# Run benchmarks/gpu_carry.sh first (it packs .gpu/).
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${1:-/tmp/gpu-lookalike}"
py312="${PYTHON312:-$(command -v python3.12 || ls -d "$HOME"/.pyenv/versions/3.12*/bin/python3.12 2>/dev/null | tail -1)}"
[ -n "$py312" ] || { echo "gpu_lookalike: no python3.12 found: set PYTHON312 to a CPython 3.12"; exit 2; }
[ -d .gpu/wheels ] || { echo "gpu_lookalike: no .gpu/ to rehearse with: run bash benchmarks/gpu_carry.sh first"; exit 2; }
[ -x "$venv/bin/python" ] || "$py312" -m venv "$venv"
"$venv/bin/python" -m pip install -q --disable-pip-version-check -r benchmarks/gpu_image.txt
# What those pins pull in that the image lacks (its package list): out again, so that the carry must bring it.
"$venv/bin/python" -m pip uninstall -q -y pydantic pydantic_core annotated-types typing-inspection tzdata 2>/dev/null || true
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export TMPDIR="$work" MPLCONFIGDIR="$work/mpl"
# Stage 1's imports and collection, with the carried wheels first on the path, as gpu_check.sh sets it there.
"$venv/bin/python" -m pip install -q --disable-pip-version-check --no-index --no-deps --no-compile --no-cache-dir \
  --target "$work/site" .gpu/wheels/*.whl
PYTHONPATH="$work/site:$PWD" "$venv/bin/python" -m pytest -q --collect-only -p no:cacheprovider tests/test_sync.py | tail -1
GPU_CHECK_TINY=1 GPU_CHECK_LIMIT_S=1500 PYTHON="$venv/bin/python" \
  bash benchmarks/gpu_check.sh --carried .gpu --out "$work/out" --root "$work/data"

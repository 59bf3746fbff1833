#!/usr/bin/env bash
# The prepared GPU check of issue 28 (benchmarks/gpu_check.py says what it runs): at most 9 minutes on one GPU.
#   bash benchmarks/gpu_check.sh [--nb-minutes 4] [--cli-minutes 1.5] [--out DIR] [--root DATA]
#   GPU_CHECK_TINY=1 bash benchmarks/gpu_check.sh --out DIR --root DATA    # the tiny CPU rehearsal
# Multi30k must be in --root or reachable through TC_DATA_MIRROR (a folder or base URL).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python}"
LIMIT_S="${GPU_CHECK_LIMIT_S:-540}"  # 9 minutes
if [ "${GPU_CHECK_TINY:-0}" != "0" ]; then
  exec timeout "$LIMIT_S" "$PYTHON" benchmarks/gpu_check.py --tiny "$@"
fi
exec timeout "$LIMIT_S" "$PYTHON" benchmarks/gpu_check.py "$@"

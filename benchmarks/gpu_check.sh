#!/usr/bin/env bash
# The prepared GPU check (benchmarks/gpu_check.py says what it runs): at most 9 minutes on one GPU.
#   bash benchmarks/gpu_check.sh [--nb-minutes 4] [--cli-minutes 1.5] [--out DIR] [--root DATA] [--carried DIR]
#   GPU_CHECK_TINY=1 bash benchmarks/gpu_check.sh --out DIR --root DATA    # the tiny CPU rehearsal
# Multi30k must be in --root or reachable through TC_DATA_MIRROR (a folder or base URL). On a GPU machine
# that reaches no network: --carried .gpu, the folder benchmarks/gpu_carry.sh packs (its wheels are installed
# into a folder of their own, first on PYTHONPATH, and its Multi30k copy is the mirror); gpu_carry prints the call.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-$(command -v python3 || command -v python)}"
LIMIT_S="${GPU_CHECK_LIMIT_S:-540}"  # 9 minutes, the install of carried wheels included
args=()
carried=""
while [ $# -gt 0 ]; do
  case "$1" in
    --carried)
      [ $# -ge 2 ] && [ -d "$2/wheels" ] && [ -d "$2/multi30k" ] \
        || { echo "gpu_check: --carried needs the folder benchmarks/gpu_carry.sh packs (wheels/ and multi30k/)"; exit 2; }
      carried="$2"
      shift 2
      ;;
    *)
      args+=("$1")
      shift
      ;;
  esac
done
if [ -n "$carried" ]; then
  site="${TMPDIR:-/tmp}/gpu-check-site"
  shopt -s nullglob
  wheels=("$carried"/wheels/*.whl)
  if [ "${#wheels[@]}" -gt 0 ]; then
    "$PYTHON" -m pip install -q --disable-pip-version-check --no-index --no-deps --no-compile --no-cache-dir \
      --upgrade --target "$site" "${wheels[@]}"
    export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
  fi
  TC_DATA_MIRROR="$(cd "$carried/multi30k" && pwd)"
  export TC_DATA_MIRROR
  echo "carried: ${#wheels[@]} wheels installed into $site; Multi30k from $TC_DATA_MIRROR (${SECONDS} s)"
fi
left=$((LIMIT_S - SECONDS))
if [ "${GPU_CHECK_TINY:-0}" != "0" ]; then
  exec timeout "$left" "$PYTHON" benchmarks/gpu_check.py --tiny "${args[@]}"
fi
exec timeout "$left" "$PYTHON" benchmarks/gpu_check.py "${args[@]}"

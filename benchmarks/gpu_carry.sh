#!/usr/bin/env bash
# Packs what benchmarks/gpu_check.sh needs on an offline GPU machine, into .gpu/ (git ignores it), and prints the
# call that runs the check there. That machine reaches no network, and its image (Python 3.12, its own torch;
# benchmarks/gpu_image.txt) lacks spaCy and the Jupyter kernel that runs notebook 11; only the working tree and
# .gpu/ travel to it.
#   bash benchmarks/gpu_carry.sh [MULTI30K_FOLDER]   # default: $TC_DATA_MIRROR, else ../shared/data/multi30k
# .gpu/wheels: benchmarks/gpu_wheels.txt's pins for CPython 3.12 on manylinux x86_64 (what the image lacks,
#              found by resolving in a copy of the image's packages: docs/results.md, "The GPU plan");
# .gpu/multi30k: the six Multi30k files, checked against the course's checksums.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || command -v python3 || command -v python)}"
"$PYTHON" -c "import transformer_course" 2>/dev/null \
  || { echo "gpu_carry: $PYTHON cannot import the course: run make install, or set PYTHON to one that can"; exit 2; }
source="${1:-${TC_DATA_MIRROR:-../shared/data/multi30k}}"
limit=$((64 * 1024 * 1024))  # what travels: the working tree, carried paths included

# The six files, each checked against the course's own checksums (data/download.py), before .gpu/ is touched.
"$PYTHON" - "$source" <<'PY' || exit 2
import sys
from pathlib import Path

sys.path.insert(0, ".")
from transformer_course.data.corpus import sha256_file
from transformer_course.data.download import MULTI30K_SHA256

folder = Path(sys.argv[1])
missing = [name for name in MULTI30K_SHA256 if not (folder / name).is_file()]
if missing:
    sys.exit(f"gpu_carry: {folder / missing[0]} is missing: pass the folder that holds Multi30k's six .gz files")
bad = [name for name, digest in MULTI30K_SHA256.items() if sha256_file(folder / name) != digest]
if bad:
    sys.exit(f"gpu_carry: {', '.join(bad)} in {folder} do not match the course's checksums: use an intact copy")
PY
rm -rf .gpu
mkdir -p .gpu/wheels .gpu/multi30k
cp "$source"/{train,val,test_2016_flickr}.{de,en}.gz .gpu/multi30k/

platforms=()  # pip matches each tag exactly; up to glibc 2.34, which the image's Python 3.12.3 (Ubuntu 24.04's) exceeds
for n in 5 17 24 26 27 28 31 34; do platforms+=(--platform "manylinux_2_${n}_x86_64"); done
platforms+=(--platform manylinux2014_x86_64 --platform manylinux1_x86_64)
"$PYTHON" -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: --python-version 3.12 \
  --implementation cp "${platforms[@]}" -d .gpu/wheels -r benchmarks/gpu_wheels.txt
wanted=$(grep -c '==' benchmarks/gpu_wheels.txt)
got=$(find .gpu/wheels -name '*.whl' | wc -l)
[ "$got" -eq "$wanted" ] || { echo "gpu_carry: $got wheels for $wanted pins in benchmarks/gpu_wheels.txt"; exit 1; }

# Each wheel rewritten with LZMA (zipfile reads it, so pip installs it): the same files byte for byte, so RECORD's
# hashes hold, in about three quarters of the space (spaCy's 35 MB wheel to 28 MB); deflate does not fit in 64 MiB.
"$PYTHON" - .gpu/wheels <<'PY'
import sys
import zipfile
from pathlib import Path

for wheel in sorted(Path(sys.argv[1]).glob("*.whl")):
    packed = wheel.with_suffix(".lzma")
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(packed, "w", zipfile.ZIP_LZMA) as dst:
        for info in src.infolist():
            data = src.read(info)  # zipfile checks each member's CRC as it reads
            info.compress_type = zipfile.ZIP_LZMA
            dst.writestr(info, data)
    packed.replace(wheel)
PY

tree=$(git ls-files -z --cached --others --exclude-standard | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1)
carried=$(du -sb .gpu | cut -f1)
echo "packed .gpu/: $got wheels and Multi30k, $((carried / 1024)) KiB; with the working tree $(((tree + carried) / 1024)) KiB of the 65536 KiB that travel"
[ $((tree + carried)) -le "$limit" ] || { echo "gpu_carry: over the device tool's 64 MiB: carry less"; exit 1; }
cat <<'EOF'
device tool call (one run; the check stops itself after 9 minutes):
  run(carry=[".gpu"], timeout_s=600,
      command="set -o pipefail; PYTHONUNBUFFERED=1 bash benchmarks/gpu_check.sh --carried .gpu --out /tmp/gpu-check 2>&1 | tee $OUT/gpu_check.log; rc=$?; cp /tmp/gpu-check/gpu_check.json $OUT/ 2>/dev/null; exit $rc")
EOF

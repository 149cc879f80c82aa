#!/usr/bin/env bash
# Issue 14 on the H200 in one run: FlexAttention windows and documents, split-KV decoding at
# every split count, paged KV at page sizes 1-256, cascade vs split-KV; each point checked
# against a float64 reference, timed, then counted under ncu (benchmarks/variants_h200.py).
#
#   bash benchmarks/variants_h200.sh OUTDIR [--quick] [--budget-s S]
#
# On the lent H200 it ran from a copy of the repository (the `run` tool sends /work/main; the
# branch's files were copied to .device/gpu14) with `PYTHONPATH=$PWD` and the machine's python3;
# OUTDIR/variants-h200.json is committed as tests/data/h200-variants.json.
set -uo pipefail
out=${1:-variants-h200}
shift || true
mkdir -p "$out"
py=${PYTHON:-python3}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw,temperature.gpu \
    --format=csv > "$out/nvidia-smi.csv" 2>&1
PYTHONUNBUFFERED=1 $py benchmarks/variants_h200.py "$out" "$@"
echo "variants_h200: exit $?"

#!/usr/bin/env bash
# The backward on the H200 (issue 10), in one run: every point checked against torch autograd,
# timed beside SDPA's flash backward (and eager PyTorch's), then counted under ncu.
#
#   bash benchmarks/backward_h200.sh OUTDIR [--quick] [--tune]
#
# On the lent H200 it ran from a copy of the repository with `PYTHONPATH=$PWD` and the machine's
# python3 (torch 2.11, Triton 3.6, ncu 2025.3.1); OUTDIR/backward-h200.json came back and is
# committed as tests/data/backward-h200.json (the --quick --tune run as backward-h200-tune.json).
set -uo pipefail
out=${1:-backward-h200}
shift || true
mkdir -p "$out"
py=${PYTHON:-python3}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw,temperature.gpu \
    --format=csv > "$out/nvidia-smi.csv" 2>&1
PYTHONUNBUFFERED=1 $py benchmarks/backward_h200.py "$out" "$@" 2>&1 | tee "$out/run.log"
echo "backward_h200: exit ${PIPESTATUS[0]}"

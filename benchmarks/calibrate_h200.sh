#!/usr/bin/env bash
# The H200 calibration of issue 6, in one run: every kernel checked and timed, ncu's counters,
# the fit, the measured YAML and the report; then the quick mode, timed (must stay under 3 min).
#
#   bash benchmarks/calibrate_h200.sh OUTDIR
#
# On the lent H200 it ran from a copy of the repository with `PYTHONPATH=$PWD` and the machine's
# python3 (torch 2.11, Triton 3.6); OUTDIR then came back as one archive. Locally the report is
# re-made from the recorded file with the same fit (README "Calibration"):
#   iosim calibrate --gpu h200 --from tests/data/h200-calibration.json --out configs/gpus/h200.yaml \
#       --force --report reports/calibration-h200
set -uo pipefail
out=${1:-calibration-h200}
mkdir -p "$out"
py=${PYTHON:-python3}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw,temperature.gpu \
    --format=csv > "$out/nvidia-smi.csv" 2>&1
$py -m pytest -q -m gpu tests/test_calibrate_kernels.py -p no:cacheprovider 2>&1 | tail -3
$py -m iosim calibrate --gpu h200 --counters --force --out "$out/h200.yaml" \
    --record "$out/h200-calibration.json" --report "$out/report"
echo "full calibration: exit $?"
start=$(date +%s)
$py -m iosim calibrate --gpu h200 --quick --force --out "$out/quick.yaml" \
    --record "$out/quick-calibration.json" > "$out/quick.txt" 2>&1
echo "quick calibration: exit $?, $(( $(date +%s) - start )) s wall" | tee -a "$out/quick.txt"

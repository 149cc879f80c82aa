#!/bin/bash
# Issue 11, round 10 (the lead) on the H200: one call on main at 6d7ab46, VALIDATION10 committed
# before it (benchmarks/impl_validation_h200.py). From the repo root:
#   OUT=/some/dir BUDGET=230 NCU_LIMIT=100 bash benchmarks/validation10_h200.sh
# validation10 (fresh): all six implementations timed (flex last, at VALIDATION10_FLEX), then
# ncu's DRAM bytes of every sdpa-flash and iosim-triton call (calibrate/ncu.py's protocol).
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | tail -1)
export PATH=$PATH:$(dirname "$NCU")
stamp() { echo "$(date +%s) $*" >> $OUT/steps.log; }
stamp start validation10
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $OUT/gpu.txt 2>&1
python3 benchmarks/impl_validation_h200.py $OUT/h200-impl-validation10.json ${BUDGET:-230} validation10 > $OUT/validation10.log 2>&1
stamp end validation10
timeout ${NCU_LIMIT:-100} $NCU --csv --page raw --clock-control none --cache-control none \
  --metrics dram__bytes_read.sum,dram__bytes_write.sum \
  python3 benchmarks/impl_dram_h200.py validation10 > $OUT/h200-impl-dram10.csv 2> $OUT/ncu10.log
stamp end dram
ls -la $OUT

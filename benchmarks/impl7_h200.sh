#!/bin/bash
# Issue 11, round 7 (helper impl7) on the H200, one call after tag impl7-frozen. From the repo root:
#   OUT=/some/dir bash benchmarks/impl7_h200.sh
# validation6 (fresh): sdpa-flash, iosim-triton, sdpa-efficient, sdpa-cudnn and torch-naive timed
# (flex is helper flex8's), then ncu's DRAM bytes of every sdpa-flash and iosim-triton call.
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | tail -1)
export PATH=$PATH:$(dirname "$NCU")
stamp() { echo "$(date +%s) $*" >> $OUT/steps.log; }
stamp start validation6
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $OUT/gpu.txt 2>&1
python3 benchmarks/impl_validation_h200.py $OUT/h200-impl-validation6.json ${BUDGET:-150} validation6 > $OUT/validation6.log 2>&1
stamp end validation6
timeout ${NCU_LIMIT:-80} $NCU --csv --page raw --clock-control none --cache-control none \
  --metrics dram__bytes_read.sum,dram__bytes_write.sum \
  python3 benchmarks/impl_dram_h200.py validation6 > $OUT/h200-impl-dram7.csv 2> $OUT/ncu7.log
stamp end dram
ls -la $OUT

#!/bin/bash
# Issue 11, round 10 (the lead) on the H200: one call per blind set, the set committed before it
# (benchmarks/impl_validation_h200.py). From the repo root:
#   OUT=/some/dir BUDGET=230 NCU_LIMIT=100 bash benchmarks/validation10_h200.sh            # VALIDATION10
#   OUT=/some/dir SET=validation11 IMPLS=sdpa-flash,iosim-triton,sdpa-efficient,sdpa-cudnn,torch-naive \
#     BUDGET=120 NCU_LIMIT=90 bash benchmarks/validation10_h200.sh                          # VALIDATION11
# The set's implementations timed (flex last where it runs), then ncu's DRAM bytes of every
# sdpa-flash and iosim-triton call (calibrate/ncu.py's protocol).
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
SET=${SET:-validation10}
N=${SET#validation}
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | tail -1)
export PATH=$PATH:$(dirname "$NCU")
stamp() { echo "$(date +%s) $*" >> $OUT/steps.log; }
stamp start $SET
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $OUT/gpu.txt 2>&1
python3 benchmarks/impl_validation_h200.py $OUT/h200-impl-$SET.json ${BUDGET:-230} $SET ${IMPLS:-} > $OUT/$SET.log 2>&1
stamp end $SET
timeout ${NCU_LIMIT:-100} $NCU --csv --page raw --clock-control none --cache-control none \
  --metrics dram__bytes_read.sum,dram__bytes_write.sum \
  python3 benchmarks/impl_dram_h200.py $SET > $OUT/h200-impl-dram$N.csv 2> $OUT/ncu$N.log
stamp end dram
ls -la $OUT

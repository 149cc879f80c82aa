#!/bin/bash
# Issue 11, round 9 (helper eager9): torch-naive over EAGERFRESH9 (benchmarks/impl_validation_h200.py),
# timed (the record tests/data/h200-impl-eagerfresh9.json), then ncu's DRAM bytes of the same calls
# (written as $OUT/h200-impl-dram9.csv; committed as tests/data/h200-impl-eagerdram9.csv, renamed on merge because
# impl9's sdpa-flash round holds h200-impl-dram9.csv): the fresh judgement of the rules frozen at tag eager9-frozen.
# From the repo root:  OUT=/some/dir bash benchmarks/eager9_h200.sh
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
NCU=${NCU:-$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | tail -1)}
stamp() { echo "$(date +%s) $*" >> $OUT/steps.log; }
stamp start
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,memory.used \
  --format=csv > $OUT/gpu.txt 2>&1
timeout ${TIME_LIMIT:-55} python3 benchmarks/impl_validation_h200.py $OUT/h200-impl-eagerfresh9.json \
  ${BUDGET:-35} eagerfresh9 torch-naive > $OUT/eagerfresh9.log 2>&1
stamp end timing rc=$?
timeout ${NCU_LIMIT:-45} $NCU --csv --page raw --clock-control none --cache-control none \
  --metrics dram__bytes_read.sum,dram__bytes_write.sum \
  python3 benchmarks/impl_dram_h200.py eagerfresh9 torch-naive > $OUT/h200-impl-dram9.csv 2> $OUT/ncu9.log
stamp end dram rc=$?
ls -la $OUT

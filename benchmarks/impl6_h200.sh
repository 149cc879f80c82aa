#!/bin/bash
# Issue 11, round 6 (helper impl6) on the H200, one call after tag impl6-frozen. From the repo root:
#   OUT=/some/dir bash benchmarks/impl6_h200.sh
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | tail -1)
export PATH=$PATH:$(dirname "$NCU")
stamp() { echo "$(date +%s) $*" >> $OUT/steps.log; }
stamp start validation5
# all six implementations timed on the fresh set (flex compiled per shape alone, statically)
python3 benchmarks/impl_validation_h200.py $OUT/h200-impl-validation5.json ${BUDGET:-130} validation5 > $OUT/validation5.log 2>&1
stamp end validation5
# ncu DRAM bytes for sdpa-flash and iosim-triton
timeout ${NCU_LIMIT:-70} $NCU --csv --page raw --clock-control none --cache-control none \
  --metrics dram__bytes_read.sum,dram__bytes_write.sum \
  python3 benchmarks/impl_dram_h200.py validation5 > $OUT/h200-impl-dram6.csv 2> $OUT/ncu6.log
stamp end dram
# `iosim measure --impl flex --counters` wall clock on one shape (issue 11: under 30 s)
timeout ${MEASURE_LIMIT:-60} /usr/bin/time -f "measure wall %e s" python3 -c "import sys; sys.argv[0] = 'iosim'; from iosim.cli import main; main()" \
  measure --impl flex --n 4096 --heads 16 --d 128 --gpu h200 --counters > $OUT/measure-flex.log 2>&1
stamp end measure
ls -la $OUT

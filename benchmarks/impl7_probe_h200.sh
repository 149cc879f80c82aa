#!/bin/bash
# Issue 11, round 7 (helper impl7), second call: ncu's DRAM bytes of long causal sdpa-flash and
# iosim-triton calls over N and heads (CAUSALPROBE7, benchmarks/impl_validation_h200.py), the
# seen data for a model of FA2's causal K/V re-reads. From the repo root:
#   OUT=/some/dir bash benchmarks/impl7_probe_h200.sh
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | tail -1)
stamp() { echo "$(date +%s) $*" >> $OUT/steps.log; }
stamp start causalprobe7
timeout ${NCU_LIMIT:-90} $NCU --csv --page raw --clock-control none --cache-control none \
  --metrics dram__bytes_read.sum,dram__bytes_write.sum \
  python3 benchmarks/impl_dram_h200.py causalprobe7 > $OUT/h200-impl-causalprobe7.csv 2> $OUT/ncu-probe7.log
stamp end dram
ls -la $OUT

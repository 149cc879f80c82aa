#!/bin/bash
# Issue 11, round 4 (helper impl4) on the H200. Run from the repo root:
#   OUT=/some/dir bash benchmarks/impl4_h200.sh calibrate    # call 1: fit data
#   OUT=/some/dir bash benchmarks/impl4_h200.sh validation3  # call 2: after tag impl4-frozen
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | tail -1)
export PATH=$PATH:$(dirname "$NCU")
stamp() { echo "$(date +%s) $*" >> $OUT/steps.log; }
if [ "$1" = calibrate ]; then
  cp configs/gpus/h200.yaml $OUT/h200-gpu.yaml
  stamp start calibrate
  # the implementation calibration for real: every shipped implementation over FIT_GRID,
  # then ncu's DRAM bytes of every timed point (--counters), fitted into a copy of the YAML
  /usr/bin/time -f "calibrate wall %e s" python3 -c "import sys; sys.argv[0] = 'iosim'; from iosim.cli import main; main()" \
    calibrate --gpu $OUT/h200-gpu.yaml --impl all --counters --budget ${BUDGET:-150} \
    --out $OUT/h200-calibrated.yaml --record $OUT/h200-impl-calibrate.json > $OUT/calibrate.log 2>&1
  stamp end calibrate
  timeout 40 $NCU --csv --page raw --clock-control none --cache-control none \
    --metrics dram__bytes_read.sum,dram__bytes_write.sum \
    python3 benchmarks/l2_writeback_probe.py > $OUT/h200-writeback-probe.csv 2> $OUT/probe.log
  stamp end probe
else
  python3 benchmarks/impl_validation_h200.py $OUT/h200-impl-validation3.json ${BUDGET:-150} validation3 > $OUT/validation3.log 2>&1
  stamp end validation3
  timeout ${NCU_LIMIT:-70} $NCU --csv --page raw --clock-control none --cache-control none \
    --metrics dram__bytes_read.sum,dram__bytes_write.sum \
    python3 benchmarks/impl_dram_h200.py validation3 > $OUT/h200-impl-dram4.csv 2> $OUT/ncu4.log
  stamp end dram
  # is FA2's kernel spilling registers (local memory through L2)? three fit points
  timeout ${SPILL_LIMIT:-25} $NCU --csv --page raw --clock-control none --cache-control none --metrics \
    launch__registers_per_thread,l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum,dram__bytes_read.sum,dram__bytes_write.sum \
    python3 benchmarks/impl_dram_h200.py spill > $OUT/h200-spill.csv 2> $OUT/spill.log
  stamp end spill
fi
ls -la $OUT

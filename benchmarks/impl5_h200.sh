#!/bin/bash
# Issue 11, round 5 (helper impl5) on the H200. Run from the repo root:
#   OUT=/some/dir bash benchmarks/impl5_h200.sh probe        # call 1: seen points only
#   OUT=/some/dir bash benchmarks/impl5_h200.sh validation4  # call 2: after tag impl5-frozen
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | tail -1)
export PATH=$PATH:$(dirname "$NCU")
stamp() { echo "$(date +%s) $*" >> $OUT/steps.log; }
stamp start $1
if [ "$1" = probe ]; then
  # 1. the host floor measured directly: tiny calls of every implementation, path by path
  timeout 70 python3 benchmarks/host_floor_h200.py $OUT/h200-host-floor.json ${HOST_BUDGET:-45} > $OUT/host.log 2>&1
  stamp end host
  # 2. FA2's spills: local-memory sectors (L1 requests, and the part that misses L1 for the
  #    L2), L2 sectors from the SMs and registers, on 16 seen points of every kernel variant
  LOCAL=l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum
  EXTRA=""
  $NCU --query-metrics > $OUT/ncu-metrics.txt 2>&1
  for m in l1tex__t_sectors_pipe_lsu_mem_local_op_ld_lookup_hit l1tex__t_sectors_pipe_lsu_mem_local_op_st_lookup_hit \
           lts__t_sectors_srcunit_tex_op_read lts__t_sectors_srcunit_tex_op_write; do
    grep -q "^$m " $OUT/ncu-metrics.txt && EXTRA="$EXTRA,$m.sum"
  done
  echo "extra metrics: $EXTRA" >> $OUT/steps.log
  timeout ${SPILL_LIMIT:-80} $NCU --csv --page raw --clock-control none --cache-control none --metrics \
    launch__registers_per_thread,$LOCAL,dram__bytes_read.sum,dram__bytes_write.sum$EXTRA \
    python3 benchmarks/impl_dram_h200.py spill5 sdpa-flash > $OUT/h200-spill5.csv 2> $OUT/spill.log
  stamp end spill
  # 3. FlexAttention on nine seen points (it compiles per shape)
  timeout 90 python3 benchmarks/impl_validation_h200.py $OUT/h200-impl-flex5.json ${FLEX_BUDGET:-60} flex5 flex > $OUT/flex.log 2>&1
  stamp end flex
else
  python3 benchmarks/impl_validation_h200.py $OUT/h200-impl-validation4.json ${BUDGET:-150} validation4 > $OUT/validation4.log 2>&1
  stamp end validation4
  timeout ${NCU_LIMIT:-70} $NCU --csv --page raw --clock-control none --cache-control none \
    --metrics dram__bytes_read.sum,dram__bytes_write.sum \
    python3 benchmarks/impl_dram_h200.py validation4 > $OUT/h200-impl-dram5.csv 2> $OUT/ncu5.log
  stamp end dram
  # the spill rows' L2 stores judged on fresh points (local-memory sectors of flash_fwd_kernel)
  timeout ${SPILL_LIMIT:-40} $NCU --csv --page raw --clock-control none --cache-control none --metrics \
    launch__registers_per_thread,l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum,l1tex__t_sectors_pipe_lsu_mem_local_op_ld_lookup_hit.sum,l1tex__t_sectors_pipe_lsu_mem_local_op_st_lookup_hit.sum,dram__bytes_read.sum,dram__bytes_write.sum \
    python3 benchmarks/impl_dram_h200.py spill6 sdpa-flash > $OUT/h200-spill6.csv 2> $OUT/spill6.log
  stamp end spill6
  # `iosim measure` on one shape, wall clock (issue 11: under 30 s on the H200)
  /usr/bin/time -f "measure wall %e s" python3 -c "import sys; sys.argv[0] = 'iosim'; from iosim.cli import main; main()" \
    measure --impl sdpa-flash --n 4096 --heads 16 --d 128 --gpu h200 > $OUT/measure.log 2>&1
  stamp end measure
fi
ls -la $OUT

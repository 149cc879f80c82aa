#!/bin/bash
# Issue 11, round 12 (helper impl12): after tag impl12-frozen, ncu's DRAM bytes of sdpa-flash over
# IMPL12FRESH (the judgement: tests/data/h200-impl-dram12.csv), then the same calls' local-memory
# store sectors and their L1 hits (the spill mechanism's own count on the fresh calls, a check
# and no fit: tests/data/h200-impl-dram12-probe.csv). From the repo root:
#   OUT=/some/dir NCU_LIMIT=150 bash benchmarks/impl12_h200.sh
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
OUT=$OUT NCU_LIMIT=${NCU_LIMIT:-150} SET=impl12fresh NAME=impl12 RECORD=h200-impl-dram12 \
  bash benchmarks/impl8_h200.sh
NCU=${NCU:-$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | tail -1)}
DIR=$OUT/impl12-probe
mkdir -p $DIR
date +%s > $DIR/start.txt
timeout ${PROBE_LIMIT:-150} $NCU --csv --page raw --clock-control none --cache-control none \
  --metrics launch__registers_per_thread,l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum,l1tex__t_sectors_pipe_lsu_mem_local_op_st_lookup_hit.sum,l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_local_op_ld_lookup_hit.sum,dram__bytes_read.sum,dram__bytes_write.sum \
  python3 benchmarks/impl_dram_h200.py impl12fresh sdpa-flash > $DIR/h200-impl-dram12-probe.csv 2> $DIR/probe.log
echo "rc=$? $(date +%s)" >> $DIR/start.txt
tar -C $OUT -czf $OUT/impl12-probe.tar.gz impl12-probe && rm -rf $DIR
ls -la $OUT

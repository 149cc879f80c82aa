#!/bin/bash
# Issue 11 round 3 on the H200, call 1 (the fit data): run from the repo root as
#   OUT=/some/dir bash benchmarks/impl_gpu_h200.sh fit
# and call 2 (the fresh validation set, after the model is frozen) as
#   OUT=/some/dir bash benchmarks/impl_gpu_h200.sh validation
set -u
START=$SECONDS
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | tail -1)
if [ "$1" = fit ]; then
  python3 benchmarks/sm_bandwidth_h200.py $OUT/h200-sm-bandwidth.json > $OUT/sm-bandwidth.log 2>&1
  for shape in "--n 4096 --d 128 --heads 32 --batch 2" "--n 1 --n-kv 65536 --d 128 --heads 32 --kv-heads 8"; do
    /usr/bin/time -f "measure wall %e s" python3 -c "import sys; sys.argv[0] = 'iosim'; from iosim.cli import main; main()" measure --gpu h200 --impl sdpa-flash \
      $shape --record $OUT/h200-measure.jsonl >> $OUT/measure.log 2>&1
  done
  timeout 70 $NCU --csv --page raw --clock-control none --cache-control none --metrics \
    launch__grid_size,launch__block_size,launch__registers_per_thread,launch__shared_mem_per_block_dynamic,launch__shared_mem_per_block_static,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum \
    python3 benchmarks/impl_launches.py --evict > $OUT/h200-impl-launches-rw.csv 2> $OUT/ncu.log
  python3 benchmarks/impl_validation_h200.py $OUT/h200-impl-fit2.json $((${LIMIT:-215} - (SECONDS - START))) fit2 > $OUT/fit2.log 2>&1
else
  python3 benchmarks/impl_validation_h200.py $OUT/h200-impl-validation2.json ${BUDGET:-170} validation2 > $OUT/validation2.log 2>&1
  timeout ${NCU_LIMIT:-75} $NCU --csv --page raw --clock-control none --cache-control none --metrics \
    dram__bytes_read.sum,dram__bytes_write.sum \
    python3 benchmarks/impl_dram_h200.py validation2 > $OUT/h200-impl-dram2.csv 2> $OUT/ncu2.log
fi
ls -la $OUT
